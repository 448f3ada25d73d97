#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: decode and prefill timings of two wick binaries,
# interleaved (A B A B ...) in one call, so that the machine's drift affects both alike.
#   scripts/device-ab.sh WICK_A WICK_B MODEL [pairs]       (default 3 pairs)
# Prints each run's decode mean (256 tokens after "What is Rust?") and its 139-token prefill.
set -u
A=$1
B=$2
M=$3
pairs=${4:-3}
long="Rust is a systems programming language that runs blazingly fast, prevents segfaults, and guarantees thread safety."
long="$long $long $long $long $long $long"
for i in $(seq "$pairs"); do
  for w in A B; do
    bin=$A
    [ $w = B ] && bin=$B
    d=$($bin bench gen -m "$M" -p "What is Rust?" -n 256 --rounds 2 --device cuda 2>&1 | grep -o "255 decode steps [0-9.]* ms (mean [0-9.]* ms" | tail -1)
    p=$($bin bench gen -m "$M" -p "$long" --raw -n 4 --rounds 2 --device cuda 2>&1 | grep -o "prefill (139 tokens) [0-9.]* ms" | tail -1)
    echo "$w round $i: decode $d, $p"
  done
done
