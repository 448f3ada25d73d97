#!/usr/bin/env python3
"""Summarize a launch timeline from a measuring build (-DWICK_CUDA_TRACE=ON, see
src/cuda/trace.cuh), written by `wick bench gen` or cuda_matmul_bench to the file that
WICK_CUDA_TRACE_OUT names.

    scripts/trace-summary.py TRACE.csv [launches]

Takes the last `launches` matrix-vector launches (default 91: one decode step of the
default model, 3 a layer and the output head) and the attention launches among them, in
start order, and prints per kind of launch (ring, kind, grid size) the medians, in us, of:
  lead  how long before the previous launch's end it started (programmatic dependent launch)
  hand  previous launch's last block done -> this launch's dependency wait returned
  prep  wait -> mark 2 (matrix-vector: input prepared; attention: attention done)
  loop  mark 2 -> mark 3 (products done; attention: the weight slices' wait)
  epi   mark 3 -> block 0 done (reduction and stores; attention: the projection)
  tail  block 0 done -> last block done
  span  previous launch's end -> this launch's end (its share of the step)
"""
import csv
import statistics
import sys


def main():
    path = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 91
    rows = list(csv.DictReader(open(path)))
    for r in rows:
        for k in r:
            r[k] = int(r[k])
    qmv = sorted((r for r in rows if r["ring"] == 0), key=lambda r: r["t0"])[-count:]
    if not qmv:
        sys.exit("trace-summary: no matrix-vector launches in " + path)
    lo, hi = qmv[0]["t0"] - 30000, qmv[-1]["end_max"]
    att = [r for r in rows if r["ring"] == 1 and lo <= r["t0"] <= hi]
    win = sorted(qmv + att, key=lambda r: r["t0"])
    keys = ["lead", "hand", "prep", "loop", "epi", "tail", "span"]
    kinds = {}
    prev = None
    for r in win:
        name = ("attention+o" if r["ring"] == 1 else "qmv") + " %d blocks" % r["blocks"]
        d = kinds.setdefault(name, {k: [] for k in keys})
        us = lambda a, b: (a - b) / 1e3
        if prev:
            d["lead"].append(us(prev["end_max"], r["t0"]))
            d["hand"].append(us(r["t1"], prev["end_max"]))
            d["span"].append(us(r["end_max"], prev["end_max"]))
        d["prep"].append(us(r["t2"], r["t1"]))
        d["loop"].append(us(r["t3"], r["t2"]))
        d["epi"].append(us(r["t4"], r["t3"]))
        d["tail"].append(us(r["end_max"], r["t4"]))
        prev = r
    print("%d launches, %.1f us from the first start to the last end" %
          (len(win), (win[-1]["end_max"] - win[0]["t0"]) / 1e3))
    print("%-24s %4s | %s | %s" % ("launch", "n", " ".join("%6s" % k for k in keys), "sum of spans"))
    for name, d in kinds.items():
        med = [statistics.median(d[k]) if d[k] else float("nan") for k in keys]
        print("%-24s %4d | %s | %8.1f" % (name, len(d["prep"]), " ".join("%6.2f" % v for v in med), sum(d["span"])))


if __name__ == "__main__":
    main()
