#!/usr/bin/env bash
# The CPU matmul table (SPEC section 8): ROUNDS rounds over the types, one `wick bench
# matmul` invocation per type, round-robin (a slow spell of a shared machine then falls on
# one round of each type, not on every round of one), every form with f32 and f16 inputs
# timed in turn (--x f32,f16: their ratio side by side), the load average logged around
# each, then the medians and ratios (scripts/bench-cpu-summary.py).
#   scripts/bench-cpu.sh WICK OUTDIR [ROUNDS] [TYPES]
# Writes OUTDIR/rR-TYPE.csv (both input dtypes, column x), rR.txt (the tables as printed),
# load.txt and summary.txt.
set -euo pipefail
W=$1
O=$2
R=${3:-3}
T=${4:-q8_0 q4_k q4_0 q5_0 q6_k q4_1 q2_k f16}
mkdir -p "$O"
load() { cut -d' ' -f1-3 /proc/loadavg; }
for r in $(seq 1 "$R"); do
  for t in $T; do
    echo "r$r $t start $(date -u +%T) load $(load)" >>"$O/load.txt"
    "$W" bench matmul -t 2 --types "$t" --x f32,f16 --csv "$O/r$r-$t.csv" >>"$O/r$r.txt" 2>&1
    echo "r$r $t end $(date -u +%T) load $(load)" >>"$O/load.txt"
  done
done
python3 "$(dirname "$0")/bench-cpu-summary.py" "$O" >"$O/summary.txt"
cat "$O/summary.txt"
