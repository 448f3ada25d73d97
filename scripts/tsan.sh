#!/bin/sh
# ThreadSanitizer over the tests that run threads: the thread pool, the CPU matmul
# (every form over several thread counts), the kernels driven by the pool, and the
# model's threaded forward and generation (test_limits_model).
#
#   scripts/tsan.sh [REGEX]     tests whose names match REGEX (default below)
#
# Builds build-tsan (-DWICK_TSAN=ON, no CUDA, no BLAS: OpenBLAS's own threads are
# not instrumented) and runs the matching ctest programs with halt_on_error, so
# the first data race fails the run with both stacks. Env: TSAN_BUILD, JOBS.
set -eu
cd "$(dirname "$0")/.."
BUILD=${TSAN_BUILD:-build-tsan}
REGEX=${1:-'pool|qmatmul|threads|engine|kernels|limits_model'}

cmake -S . -B "$BUILD" -DWICK_TSAN=ON -DWICK_CUDA=OFF -DWICK_BLAS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=$(for f in tests/test_*.c; do basename "$f" .c; done | grep -E "$REGEX" || true)
if [ -z "$targets" ]; then
    echo "tsan: no test matches '$REGEX'"
    exit 1
fi
# shellcheck disable=SC2086
cmake --build "$BUILD" -j "${JOBS:-2}" --target $targets >/dev/null
echo "tsan: running" $targets
cd "$BUILD"
# Several threads even on a small machine, so that the pool's handoffs really race.
WICK_NUM_THREADS=${WICK_NUM_THREADS:-4} \
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
    ctest --output-on-failure -R "^($(echo $targets | tr ' ' '|'))\$"
