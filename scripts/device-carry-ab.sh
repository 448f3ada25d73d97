#!/usr/bin/env bash
# Prepare a GPU machine's A/B of the matmul kernels (device-run.sh's variants part): this tree's
# binaries (scripts/device-carry.sh's build, no model) and BASE's cuda_matmul_bench (built in
# a worktree of BASE under REPO/build-carry-base, kept between sessions), packed as
# REPO/.devcarry/ab/ (about 35 MB, one carry folder):
#   bins.tar.xz             what device-carry.sh packs
#   cuda_matmul_bench-base.xz
# Then, carry [".devcarry/ab"]:
#   scripts/device-unpack.sh ab && VARIANT_TYPES=... VARIANT_MS=... [QMV_VARIANTS=...] \
#     SKIP_BUILD=1 scripts/device-run.sh none $OUT variants
# Usage: scripts/device-carry-ab.sh REPO BASE
set -euo pipefail
repo=$(cd "$1" && pwd)
base=$2
wt=$repo/build-carry-base/src
if [ ! -d "$wt" ]; then
  mkdir -p "$repo/build-carry-base"
  git -C "$repo" worktree add -q --detach "$wt" "$base"
else
  git -C "$wt" checkout -q --detach "$base"
fi
cmake -S "$wt" -B "$repo/build-carry-base/build" -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON -DWICK_BLAS=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="90-real" >/dev/null
cmake --build "$repo/build-carry-base/build" -j"$(nproc)" --target cuda_matmul_bench >/dev/null
BINS_ONLY=1 bash "$repo/scripts/device-carry.sh" "$repo" >/dev/null
rm -rf "$repo/.devcarry/ab"
mkdir -p "$repo/.devcarry/ab"
mv "$repo/.devcarry/bins.tar.xz" "$repo/.devcarry/ab/"
xz -6 -T"$(nproc)" -c "$repo/build-carry-base/build/cuda_matmul_bench" >"$repo/.devcarry/ab/cuda_matmul_bench-base.xz"
echo "$(git -C "$wt" rev-parse --short HEAD) against $(git -C "$repo" rev-parse --short HEAD)" >"$repo/.devcarry/ab/what"
du -sh "$repo/.devcarry/ab"
