#!/usr/bin/env bash
# Prepare what a GPU machine needs, as folders of REPO/.devcarry/ (ignored by git), so that
# the machine spends its time running, not compiling: the CUDA binaries are built here
# (sm_90 code alone, which the H200 runs, without the PTX a CI build adds for later GPUs, so
# that the binaries stay small; the same nvcc 13 as there; no OpenBLAS, so that only cuBLAS is
# needed there) and packed with the first part of the default model; the rest of the model
# is the second.
#   a/  bins.tar.xz (wick, the GPU tests, the CPU kernel tests, the two GPU benchmarks) and the model's first part
#   b/  the model's rest                       (each folder, with the tree, under 64 MiB)
# Then, back to back while the machine is warm (it is given back after 30 s idle):
#   call 1, carry [".devcarry/a"]:
#     scripts/device-unpack.sh a && SKIP_BUILD=1 scripts/device-run.sh none $OUT tests,bench[,variants]
#   call 2, carry [".devcarry/b"]:
#     scripts/device-unpack.sh b && SKIP_BUILD=1 TESTS=test_cuda_model scripts/device-run.sh /root/model.gguf $OUT tests,gen
# Usage: [BINS_ONLY=1] scripts/device-carry.sh REPO [MODEL]
set -euo pipefail
repo=$1
model=${2:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
dest=$repo/.devcarry
bins="wick test_cuda_matmul test_cuda_qmv test_cuda_model test_cuda_attention test_cuda_ops cuda_matmul_bench cuda_chain_bench test_kernels test_qmatmul"
cmake -S "$repo" -B "$repo/build-carry" -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON -DWICK_BLAS=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="90-real" >/dev/null
cmake --build "$repo/build-carry" -j"$(nproc)" --target wick_cli test_cuda_matmul test_cuda_qmv test_cuda_model test_cuda_attention test_cuda_ops test_kernels test_qmatmul \
  cuda_matmul_bench cuda_chain_bench >/dev/null
# BINS_ONLY=1: the binaries alone, as $dest/bins.tar.xz (scripts/device-carry-ab.sh); a/ and
# b/ stay as they were and no model is needed.
if [ -n "${BINS_ONLY:-}" ]; then
  mkdir -p "$dest"
  tar -C "$repo/build-carry" -cf - $bins | xz -9 -T1 -c >"$dest/bins.tar.xz"
  exit 0
fi
rm -rf "$dest/a" "$dest/b"
mkdir -p "$dest/a" "$dest/b"
tar -C "$repo/build-carry" -cf - $bins | xz -9 -T1 -c >"$dest/a/bins.tar.xz"
# The model split so that both folders are about the same size.
bins_bytes=$(stat -c %s "$dest/a/bins.tar.xz")
model_bytes=$(stat -c %s "$model")
cut=$(((model_bytes - bins_bytes) / 2))
head -c $cut "$model" >"$dest/a/model.part1"
tail -c +$((cut + 1)) "$model" >"$dest/b/model.part2"
sha256sum "$model" | cut -d' ' -f1 >"$dest/b/model.sha256"
du -sh "$dest"/*
