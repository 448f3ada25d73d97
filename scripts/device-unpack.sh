#!/usr/bin/env bash
# On the GPU machine: unpack what scripts/device-carry.sh prepared (part a: the binaries
# into build-dev/ and the model's first part; part b: the rest, joined into /root/model.gguf),
# or scripts/device-carry-ab.sh (ab: the binaries and the base commit's matmul benchmark).
set -euo pipefail
mkdir -p /root/m build-dev
case $1 in
a) tar -C build-dev -xJf .devcarry/a/bins.tar.xz && cp .devcarry/a/model.part1 /root/m/ ;;
b) cat /root/m/model.part1 .devcarry/b/model.part2 >/root/model.gguf
   echo "$(cat .devcarry/b/model.sha256)  /root/model.gguf" | sha256sum -c - ;;
ab) tar -C build-dev -xJf .devcarry/ab/bins.tar.xz
    xz -dc .devcarry/ab/cuda_matmul_bench-base.xz >build-dev/cuda_matmul_bench-base
    chmod +x build-dev/cuda_matmul_bench-base ;;
*) echo "usage: $0 a|b|ab" >&2; exit 2 ;;
esac
