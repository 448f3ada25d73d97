#!/bin/sh
# Build wick's libFuzzer targets (fuzz/fuzz_*.c) and run each for a bounded time.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     SECONDS per target (default 20)
#
# The whole library is built with coverage and AddressSanitizer/UBSan (any UB is a
# crash), so the fuzzer sees inside the parsers. Each target starts from its seed
# corpus fuzz/corpus/<target>/ and writes new inputs to a scratch copy
# ($FUZZ_WORK/<target>, default a temporary directory), never to the committed seeds.
# Fails (exit 1) when any target finds a crash, a leak, a timeout or an out-of-memory;
# the reproducer is left in $FUZZ_WORK/artifacts/. Prints executions per target.
#
# Environment: CC (default clang), FUZZ_BUILD (default build-fuzz), FUZZ_WORK,
# FUZZ_RSS_MB (default 2048), FUZZ_JOBS (build jobs, default 2).
set -eu
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-20}
[ $# -gt 0 ] && shift
BUILD=${FUZZ_BUILD:-build-fuzz}
RSS_MB=${FUZZ_RSS_MB:-2048}
CC=${CC:-clang}
case "$CC" in *clang*) ;; *) CC=clang ;; esac
export CC

# clang_compat.h: clang < 16 cannot build src/cpu/isa.c's feature checks.
SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -include $PWD/fuzz/clang_compat.h"
cmake -S . -B "$BUILD" -DWICK_FUZZ=ON -DWICK_CUDA=OFF -DWICK_BLAS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS=$SAN" >/dev/null
TARGETS=${*:-$(for f in fuzz/fuzz_*.c; do basename "$f" .c; done)}
# shellcheck disable=SC2086
cmake --build "$BUILD" -j "${FUZZ_JOBS:-2}" --target $TARGETS >/dev/null

if [ -n "${FUZZ_WORK:-}" ]; then
    WORK=$FUZZ_WORK
    mkdir -p "$WORK"
else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/wick-fuzz.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK/artifacts"

# Longest input per target: big enough for the seeds, small enough to mutate fast.
max_len() {
    case "$1" in
    fuzz_gguf) echo 65536 ;;
    fuzz_model) echo 131072 ;;
    *) echo 4096 ;;
    esac
}

failed=""
for t in $TARGETS; do
    mkdir -p "$WORK/$t"
    seeds=fuzz/corpus/$t
    [ -d "$seeds" ] || seeds=""
    dict=""
    [ -f "fuzz/$t.dict" ] && dict="-dict=fuzz/$t.dict"
    log=$WORK/$t.log
    # shellcheck disable=SC2086
    if "$BUILD/$t" -max_total_time="$SECONDS_EACH" -max_len="$(max_len "$t")" \
        -rss_limit_mb="$RSS_MB" -malloc_limit_mb="$RSS_MB" -timeout=25 -print_final_stats=1 \
        -artifact_prefix="$WORK/artifacts/$t-" $dict "$WORK/$t" $seeds >"$log" 2>&1; then
        status=ok
    else
        status=FAILED
        failed="$failed $t"
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 || true)
    echo "$t: $status, ${execs:-?} executions in ${SECONDS_EACH} s, ${cov:-cov: ?}, corpus $(ls "$WORK/$t" | wc -l) inputs"
    if [ "$status" = FAILED ]; then
        grep -E 'ERROR|SUMMARY|runtime error|==[0-9]+==' "$log" | head -n 20 || true
        ls "$WORK/artifacts" | sed 's/^/  artifact: /'
        # keep the evidence when the scratch directory would be deleted
        if [ -z "${FUZZ_WORK:-}" ]; then
            mkdir -p "$BUILD/fuzz-artifacts"
            cp "$WORK"/artifacts/* "$log" "$BUILD/fuzz-artifacts/" 2>/dev/null || true
            echo "  copied to $BUILD/fuzz-artifacts/"
        fi
    fi
done
[ -z "$failed" ] || { echo "fuzz: crashes in:$failed"; exit 1; }
echo "fuzz: no crashes"
