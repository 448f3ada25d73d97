#!/bin/sh
# A leak check of the wick CLI: `wick run` on the default model, and the error
# paths that free a half-built model (a missing file, a truncated file, a bad
# option), under AddressSanitizer's LeakSanitizer; any leak or memory error fails.
#
#   scripts/leak-check.sh [MODEL]        (default models/SmolLM2-135M-Instruct.Q4_1.gguf)
#   LEAK_TOOL=valgrind scripts/leak-check.sh   the same with valgrind on build/wick
#
# Builds build-leak (ASan+UBSan, optimized so that generation takes seconds).
# Env: LEAK_BUILD, LEAK_TOKENS (default 16), JOBS.
set -eu
cd "$(dirname "$0")/.."
MODEL=${1:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
TOKENS=${LEAK_TOKENS:-16}
TOOL=${LEAK_TOOL:-lsan}
[ -f "$MODEL" ] || { echo "leak-check: model $MODEL not found (make model)"; exit 1; }

if [ "$TOOL" = valgrind ]; then
    BUILD=${LEAK_BUILD:-build}
    cmake -S . -B "$BUILD" -DWICK_CUDA=OFF >/dev/null
    cmake --build "$BUILD" -j "${JOBS:-2}" --target wick_cli >/dev/null
    RUN="valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 -q"
else
    BUILD=${LEAK_BUILD:-build-leak}
    cmake -S . -B "$BUILD" -DWICK_SANITIZE=ON -DWICK_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$BUILD" -j "${JOBS:-2}" --target wick_cli >/dev/null
    RUN=""
    export ASAN_OPTIONS="detect_leaks=1:exitcode=99:abort_on_error=0:${ASAN_OPTIONS:-}"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
WICK=$BUILD/wick
TMP=$(mktemp -d "${TMPDIR:-/tmp}/wick-leak.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
head -c 2000000 "$MODEL" >"$TMP/truncated.gguf"

failed=0
# check NAME EXPECTED_STATUS ARGS...: runs wick under the tool; a leak or memory
# error (exit 99, or any signal) fails, as does an unexpected status.
check() {
    name=$1
    want=$2
    shift 2
    set +e
    # shellcheck disable=SC2086
    $RUN "$WICK" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    set -e
    if [ "$rc" = "$want" ]; then
        echo "leak-check: $name: ok (exit $rc)"
    else
        echo "leak-check: $name: FAILED (exit $rc, expected $want)"
        tail -n 40 "$TMP/err"
        failed=1
    fi
}

check "run" 0 run -m "$MODEL" -p "What is Rust?" -n "$TOKENS" --temp 0 -t 2
check "run --chat" 0 run -m "$MODEL" --chat -p "Hi" -n "$TOKENS" --temp 0.8 --seed 3 -t 2
check "inspect" 0 inspect "$MODEL"
check "missing model" 1 run -m "$TMP/missing.gguf" -p hi -n 4
check "truncated model" 1 run -m "$TMP/truncated.gguf" -p hi -n 4
check "bad option" 2 run -m "$MODEL" -p hi -n -5
[ "$failed" = 0 ] || { echo "leak-check: FAILED"; exit 1; }
echo "leak-check: no leaks"
