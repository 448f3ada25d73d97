#!/usr/bin/env python3
"""Kernel durations and the gaps between kernels from an Nsight Systems GPU trace (CSV of
`nsys stats --report cuda_gpu_trace`): per kernel name the median duration and the median
idle time before it, over the last half of the trace (decode steps replayed as graphs)."""
import csv
import statistics
import sys


def main(path):
    rows = list(csv.DictReader(open(path)))
    if not rows:
        print("trace-gaps: empty trace")
        return
    key = lambda name: next(k for k in rows[0] if k.startswith(name))
    ks, kd, kn = key("Start"), key("Duration"), key("Name")
    ev = sorted((int(r[ks]), int(r[kd]), r[kn]) for r in rows)
    kern = [e for e in ev if "memcpy" not in e[2].lower() and "memset" not in e[2].lower()]
    half = kern[len(kern) // 2:]
    per = {}
    for prev, cur in zip(half, half[1:]):
        gap = cur[0] - (prev[0] + prev[1])
        name = cur[2].split("(")[0][:60]
        per.setdefault(name, ([], []))
        per[name][0].append(cur[1])
        per[name][1].append(gap)
    span = half[-1][0] + half[-1][1] - half[0][0]
    busy = sum(e[1] for e in half)
    print(f"{len(half)} kernels over {span / 1e3:.1f} us: busy {busy / 1e3:.1f} us, idle {(span - busy) / 1e3:.1f} us")
    print(f"{'kernel':60s} {'count':>6s} {'med us':>8s} {'gap us':>8s}")
    for name, (d, g) in sorted(per.items(), key=lambda kv: -sum(kv[1][0])):
        print(f"{name:60s} {len(d):6d} {statistics.median(d) / 1e3:8.2f} {statistics.median(g) / 1e3:8.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
