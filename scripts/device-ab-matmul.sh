#!/usr/bin/env bash
# On the GPU machine: the matmul benchmark of a base commit against this tree's, alternated
# (base, new, each variant; ROUNDS times), so that the machine's drift affects all alike.
#   scripts/device-ab-matmul.sh OUTDIR TYPES MS
# TYPES and MS as cuda_matmul_bench's --types and --m. AB_VARIANTS="VAR=v;VAR=w VAR2=x": the
# new binary again under each setting, a column of its own. ROUNDS (default 2).
# Needs build-dev/cuda_matmul_bench and build-dev/cuda_matmul_bench-base
# (scripts/device-carry-ab.sh, scripts/device-unpack.sh ab). Writes OUTDIR/ab.txt and prints
# the table of scripts/ab-table.py.
set -u
O=$1
types=$2
ms=$3
mkdir -p "$O"
IFS=';' read -r -a VARIANTS <<<"${AB_VARIANTS:-}"
for r in $(seq "${ROUNDS:-2}"); do
  echo "== round $r base"
  build-dev/cuda_matmul_bench-base --types "$types" --m "$ms" 2>&1 | grep -E "^[a-z0-9_]+ +[0-9]+ \||bandwidth"
  echo "== round $r new"
  build-dev/cuda_matmul_bench --types "$types" --m "$ms" 2>&1 | grep -E "^[a-z0-9_]+ +[0-9]+ \||bandwidth"
  for v in "${VARIANTS[@]}"; do
    echo "== round $r $v"
    env $v build-dev/cuda_matmul_bench --types "$types" --m "$ms" 2>&1 | grep -E "^[a-z0-9_]+ +[0-9]+ \|"
  done
done >"$O/ab.txt"
python3 "$(dirname "$0")/ab-table.py" "$O/ab.txt"
