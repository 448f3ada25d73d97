#!/usr/bin/env python3
"""The quantized form's us per call from the variants part of scripts/device-run.sh
(variants.txt): one row per type and m, one column per binary or setting (its rounds side by
side), and the f16 form's (from the first column's runs)."""
import collections
import re
import sys

columns = []
times = collections.defaultdict(lambda: collections.defaultdict(list))
current = None
for line in open(sys.argv[1]):
    m = re.match(r"== round \d+ (.+)", line.rstrip("\n"))
    if m:
        current = m.group(1)
        if current not in columns:
            columns.append(current)
        continue
    m = re.match(r"^([a-z0-9_]+) +(\d+) \| +([0-9.]+) [^|]*\| +([0-9.]+)", line)
    if m and current:
        key = (m.group(1), int(m.group(2)))
        times[key][current].append(float(m.group(3)))
        if current == columns[0]:
            times[key]["f16 form"].append(float(m.group(4)))
columns.append("f16 form")
width = max([11] + [len(c) for c in columns])
print("type    m  | " + " | ".join(c.rjust(width) for c in columns))
for key in sorted(times):
    cells = ("/".join(f"{v:.1f}" for v in times[key][c]) if times[key][c] else "-" for c in columns)
    print(f"{key[0]:6} {key[1]:4} | " + " | ".join(c.rjust(width) for c in cells))
