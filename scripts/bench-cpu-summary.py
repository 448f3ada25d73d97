#!/usr/bin/env python3
"""Medians and ratios of scripts/bench-cpu.sh's rounds: per type and m, the ms of each form,
quantized over the f32 form, quantized per weight byte over Q8_0's, f16 input over f32
input (the median of each round's ratio where one invocation timed both, column x), and at
m = 1 the quantized form's GB/s and share of the read bandwidth: the bandwidth read beside
that timing where the invocation printed it ("... beside it: quantized 92% of 47.1 GB/s"),
else the probe at the invocation's start. Also writes OUTDIR/medians.csv: the median ms and GB/s of every (type, m, form,
input dtype) in the command's CSV columns. Older rounds kept the f16 input in files of
their own (-xf16.csv)."""
import csv
import glob
import os
import re
import statistics
import sys

out = sys.argv[1]
ms = {}      # (type, m, form, x) -> [ms per round]
gbps = {}    # (type, m, form, x) -> [GB/s per round]
pair = {}    # (type, m, form) -> [f16 input ms / f32 input ms, per invocation that timed both]
bytes_ = {}  # type -> weight bytes of the quantized form
share = {}   # type -> [m=1 quantized GB/s over the invocation's probe]
for path in sorted(glob.glob(os.path.join(out, "r*-*.csv"))):
    seen = {}  # this invocation's ms
    with open(path) as f:
        for row in csv.DictReader(f):
            # the input dtype: column x, or (older rounds) the file's name
            x = row.get("x") or ("f16" if path.endswith("-xf16.csv") else "f32")
            key = (row["type"], int(row["m"]), row["form"], x)
            seen[key] = float(row["ms"])
            ms.setdefault(key, []).append(float(row["ms"]))
            gbps.setdefault(key, []).append(float(row["gbps"]))
            # F16 weights run one dense kernel for the quantized and precise requests (the
            # table names it precise): it stands in for the quantized form.
            if row["form"] == "precise" and row["type"] == "f16":
                ms.setdefault((row["type"], int(row["m"]), "quantized", x), []).append(float(row["ms"]))
            if row["form"] in ("quantized", "precise") and x == "f32" and row["m"] == "1":
                if row["form"] == "quantized" or row["type"] == "f16":
                    bytes_[row["type"]] = float(row["gbps"]) * float(row["ms"]) * 1e6
    for (t, m, form, x), v in seen.items():
        if x == "f16" and (t, m, form, "f32") in seen:
            pair.setdefault((t, m, form), []).append(v / seen[(t, m, form, "f32")])
with open(os.path.join(out, "medians.csv"), "w") as f:
    f.write("type,m,form,device,threads,ms,gbps,x\n")
    for (t, m, form, x) in sorted(gbps):
        if (t, m, form, x) in ms and not (t == "f16" and form == "quantized"):
            f.write(f"{t},{m},{form},cpu,2,{statistics.median(ms[(t, m, form, x)]):.4f},"
                    f"{statistics.median(gbps[(t, m, form, x)]):.2f},{x}\n")
# The probe of each invocation, in order, and the m = 1 line that follows it.
for path in sorted(glob.glob(os.path.join(out, "r*.txt"))):
    bw = None
    for line in open(path):
        m = re.search(r"x f32, .*read bandwidth ([0-9.]+) GB/s", line)
        if m:
            bw = float(m.group(1))
        m = re.match(r"(\S+)\s+m=1\s+(quantized|precise) ([0-9.]+) ms", line)
        if m and bw:
            t = m.group(1).lower()
            beside = re.search(m.group(2) + r" [0-9]+% of ([0-9.]+) GB/s", line)
            if t in bytes_:
                share.setdefault(t, []).append(bytes_[t] / (float(m.group(3)) * 1e6) /
                                               (float(beside.group(1)) if beside else bw))
            bw = None

med = lambda v: statistics.median(v) if v else float("nan")
order = ["q8_0", "q4_k", "q4_0", "q5_0", "q6_k", "q4_1", "q2_k", "f16"]
found = {k[0] for k in ms}
types = [t for t in order if t in found] + sorted(found - set(order))
forms = ["quantized", "f32", "f16", "precise"]
rounds = max(len(v) for v in ms.values())
print(f"# medians of {rounds} rounds, ms per call (F16 weights: the dense kernel in the quantized column)")
print("type     m   quantized       f32       f16   precise   q/f32  q/Q8_0 per byte  x f16 / x f32 (q, f32, f16, precise)")


def xratio(t, m, form):
    """f16 input over f32 input: side by side where one invocation timed both, else the medians' quotient."""
    if t == "f16" and form == "quantized":
        form = "precise"  # F16 weights' one dense kernel
    if pair.get((t, m, form)):
        return med(pair[(t, m, form)])
    return med(ms.get((t, m, form, "f16"), [])) / med(ms.get((t, m, form, "f32"), []))


for t in types:
    for m in sorted({k[1] for k in ms if k[0] == t}):
        v = {f: med(ms.get((t, m, f, "f32"), [])) for f in forms}
        q8 = med(ms.get(("q8_0", m, "quantized", "f32"), []))
        pb = (v["quantized"] / bytes_[t]) / (q8 / bytes_["q8_0"]) if t in bytes_ and "q8_0" in bytes_ else float("nan")
        xr = " ".join(f"{xratio(t, m, f):5.2f}" for f in forms)
        print(f"{t:6} {m:3} {v['quantized']:11.3f} {v['f32']:9.3f} {v['f16']:9.3f} {v['precise']:9.3f}"
              f" {v['quantized'] / v['f32']:7.2f} {pb:8.2f}        {xr}")
print("m=1 quantized: GB/s (median) and share of the read bandwidth read beside it (median, range)")
for t in types:
    s = share.get(t, [])
    if s and t in bytes_:
        gb = bytes_[t] / (med(ms[(t, 1, "quantized", "f32")]) * 1e6)
        print(f"{t:6} {gb:6.1f} GB/s  {100 * med(s):4.0f}%  ({100 * min(s):.0f}-{100 * max(s):.0f}%)")
