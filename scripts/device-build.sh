#!/usr/bin/env bash
# Build wick with CUDA for the H200 (sm_90 + PTX) into build-dev/, with the GPU tests and
# the GPU matmul benchmark (build-dev/cuda_matmul_bench, a CMake target). Usage: scripts/device-build.sh [jobs]
set -euo pipefail
jobs=${1:-16}
cmake -S . -B build-dev -DWICK_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="90-real;90-virtual" >"${LOG:-build-dev.log}" 2>&1 || { tail -30 "${LOG:-build-dev.log}"; exit 1; }
# Everything that builds; a target broken elsewhere must not stop the GPU ones.
cmake --build build-dev -j"$jobs" -- -k >>"${LOG:-build-dev.log}" 2>&1 || echo "device-build: some targets failed (see build-dev.log)"
echo "device-build: ok"
