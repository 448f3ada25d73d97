#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build, run the GPU tests, the edge probe, the matmul
# benchmark, the generation timings and the CPU-GPU comparison of the documents.
#   [SKIP_BUILD=1] scripts/device-run.sh MODEL OUTDIR [parts]     parts: any of tests,gen,compare,bench,variants,genvariants,profile,decprof,inline,qprof,srcprof
#   (default: all but profile, which runs Nsight Compute on the m = 1 Q4_0 kernel)
# Writes OUTDIR/{build.log,tests.txt,gen.txt,compare.txt,bench.txt,bench.csv}.
set -u
M=$1
O=$2
parts=${3:-tests,gen,compare,bench}
mkdir -p "$O"
B=build-dev
# SKIP_BUILD=1: the binaries are already in build-dev/ (scripts/device-carry.sh built them).
[ -n "${SKIP_BUILD:-}" ] || LOG=$O/build.log scripts/device-build.sh 16 || exit 1
export WICK_TEST_MODEL=$M
has() { [[ ",$parts," == *",$1,"* ]]; }
# Kernel settings to check and time against the defaults, ';'-separated, each one or more
# VAR=value (QMV_VARIANTS="WICK_CUDA_QMV_ONE=0;WICK_CUDA_QMV_INLINE=0"): the tests part reruns
# test_cuda_qmv under each, the variants part times them (genvariants: in decode).
IFS=';' read -r -a VARIANTS <<<"${QMV_VARIANTS:-}"
# Run a command with the defaults and under each variant, in two alternated rounds; with
# ALT_BASE set, that binary first in each round, with the command's arguments.
alternated() {
  for r in 1 2; do
    if [ -n "${ALT_BASE:-}" ]; then
      echo "== round $r base"
      "$ALT_BASE" "${@:2}" 2>&1
    fi
    for cfg in "DEFAULTS=1" "${VARIANTS[@]}"; do
      echo "== round $r $cfg"
      env $cfg "$@" 2>&1
    done
  done
}
P="What is Rust?"

if has tests; then
  {
    for t in ${TESTS:-test_cuda_matmul test_cuda_qmv test_cuda_attention test_cuda_ops test_cuda_model test_kernels test_qmatmul}; do
      $B/$t; echo "$t rc=$?"
      if [ "$t" = test_cuda_qmv ]; then
        # Under each variant: the same output digest means the same bits as the defaults.
        for cfg in "${VARIANTS[@]}"; do
          env $cfg $B/$t; echo "$t ($cfg) rc=$?"
        done
      fi
      if [ "$t" = test_cuda_model ]; then
        # The decode step's output projection as a launch of its own (larger models' path).
        WICK_CUDA_ATTN_O=0 $B/$t; echo "$t (WICK_CUDA_ATTN_O=0) rc=$?"
      fi
    done
    $B/wick edges; echo "wick edges rc=$?"
  } >"$O/tests.txt" 2>&1
  digests=$(grep '^output digest' "$O/tests.txt" | sort -u | wc -l)
  [ "$digests" = 0 ] || echo "test_cuda_qmv output digests, distinct among its runs: $digests" >>"$O/tests.txt"
  grep -E "rc=|CHECK failed|checks|logits|decode steps|SKIP|digest" "$O/tests.txt" | head -40
fi

if has gen; then
  long="Rust is a systems programming language that runs blazingly fast, prevents segfaults, and guarantees thread safety."
  long="$long $long $long $long $long $long"
  {
    for dev in ${GEN_DEVICES:-cuda cpu}; do
      $B/wick bench gen -m "$M" -p "$P" -n 256 --rounds ${ROUNDS:-3} --device $dev --label "$dev decode" 2>&1
      $B/wick bench gen -m "$M" -p "$long" --raw -n 16 --rounds ${ROUNDS:-3} --device $dev --label "$dev prefill" 2>&1
    done
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv
  } >"$O/gen.txt" 2>&1
  grep -v "text:" "$O/gen.txt"
fi

if has compare; then
  T=/root/cmp
  mkdir -p $T
  {
    for f in ${COMPARE_FILES:-q4_1 q8_0 q4_k_m}; do
      [ $f = q4_1 ] || { $B/wick quantize "$M" $T/$f.gguf $f >/dev/null && echo "quantized $f"; }
    done
    for f in ${COMPARE_FILES:-q4_1 q8_0 q4_k_m}; do
      file=$T/$f.gguf
      [ $f = q4_1 ] && file=$M
      for cfg in cpu:quantized cpu:precise cpu:f32 cuda:quantized cuda:precise cuda:f32; do
        dev=${cfg%%:*}
        form=${cfg##*:}
        $B/wick logits -m "$file" -p "$P" --device $dev --matmul $form -o $T/$f-$dev-$form.bin 2>&1 | tail -1
        printf '[%s-%s-%s] ' $f $dev $form
        $B/wick run -m "$file" -p "$P" -n 20 --device $dev --matmul $form 2>/dev/null | tr '\n' ' '
        echo
      done
      for pair in cpu-quantized:cuda-quantized cpu-precise:cuda-quantized cpu-f32:cuda-f32 \
                  cuda-quantized:cuda-f32 cpu-precise:cuda-precise cpu-quantized:cpu-f32; do
        a=${pair%%:*}
        b=${pair##*:}
        printf '%s %s vs %s: ' $f $a $b
        $B/wick diff $T/$f-$a.bin $T/$f-$b.bin 2>&1 | tr '\n' ' '
        echo
      done
    done
  } >"$O/compare.txt" 2>&1
  cat "$O/compare.txt"
fi

if has bench; then
  $B/cuda_matmul_bench ${BENCH_ARGS:-} --csv "$O/bench.csv" >"$O/bench.txt" 2>&1
  cat "$O/bench.txt"
fi

if has variants; then
  # The matmul with its defaults and under each variant, alternated; first in each round the
  # base commit's benchmark where scripts/device-carry-ab.sh brought it. The quantized
  # form's times side by side: scripts/ab-table.py.
  base=
  [ -x $B/cuda_matmul_bench-base ] && base=$B/cuda_matmul_bench-base
  ALT_BASE=$base alternated $B/cuda_matmul_bench --types ${VARIANT_TYPES:-q4_0,q8_0,q4_k,q6_k,q5_0} --m ${VARIANT_MS:-1,2,4,8} |
    grep -E "^== |^[a-z0-9_]+ +[0-9]+ \||bandwidth" >"$O/variants.txt"
  python3 scripts/ab-table.py "$O/variants.txt"
fi

if has genvariants; then
  # Decode on the GPU with the defaults and under each variant, alternated.
  alternated $B/wick bench gen -m "$M" -p "$P" -n 256 --rounds 3 --device cuda --label "decode" |
    grep -v "text:" >"$O/genvariants.txt"
  cat "$O/genvariants.txt"
fi

if has inline; then
  # The matrix-vector kernel with its input prepared inside (default up to m * k = 8192)
  # and always by a separate launch.
  for lim in ${INLINE_LIMITS:-8192 0}; do
    echo "WICK_CUDA_QMV_INLINE=$lim"
    WICK_CUDA_QMV_INLINE=$lim $B/cuda_matmul_bench --types ${INLINE_TYPES:-q4_0,q4_k,q8_0} --m 1,2,4,8 2>&1 | grep -E "^[a-z0-9_]+ +[0-9]+ \||bandwidth"
  done >"$O/inline.txt" 2>&1
  cat "$O/inline.txt"
fi

if has decprof; then
  # Kernel durations of decode steps (eager, so that each launch is profiled), per kernel.
  WICK_CUDA_GRAPHS=0 ncu --cache-control none --clock-control none --metrics gpu__time_duration.sum \
      --print-summary per-kernel \
      $B/wick bench gen -m "$M" -p "$P" -n 8 --rounds 1 --device cuda >"$O/decprof.txt" 2>&1
  grep -E "^ +[a-z_]+.*\(|gpu__time_duration|Kernel|void|<unnamed>" "$O/decprof.txt" | head -80
fi

if has qprof; then
  # Nsight Compute on the m = 1 matrix-vector kernel of each type in QPROF_TYPES, and its SASS.
  for ty in ${QPROF_TYPES:-q4_0 q4_k}; do
    ncu --kernel-name regex:qmv_kernel --launch-skip 20 --launch-count 1 --section SpeedOfLight \
        --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis_Tables \
        --section InstructionStats --section Occupancy --section LaunchStats \
        $B/cuda_matmul_bench --types $ty --m 1 >"$O/qprof-$ty.txt" 2>&1
    grep -E "Duration|Throughput|Issued|Eligible|Stall|Executed Ipc|Occupancy|Registers|Block Size|Grid Size|Shared Memory|Warp Cycles|L1/TEX Hit|L2 Hit|Excessive|bank" "$O/qprof-$ty.txt" | head -40
  done
  cuobjdump -sass $B/CMakeFiles/wick_obj.dir/src/cuda/qmv.cu.o >"$O/qmv.sass" 2>&1 || true
fi

if has srcprof; then
  # Where the matrix-vector kernel's warps stall, per SASS instruction (build with
  # CUDAFLAGS=-lineinfo for source lines): one decode launch of each kind (q/k/v, o,
  # gate/up, down) and the m = 1 Q4_0 benchmark kernel.
  WICK_CUDA_GRAPHS=0 ncu --kernel-name regex:qmv_kernel --launch-skip 40 --launch-count 4 \
      --section WarpStateStats --section SourceCounters --section SpeedOfLight --section LaunchStats \
      $B/wick bench gen -m "$M" -p "$P" -n 4 --rounds 1 --device cuda >"$O/srcprof-decode.txt" 2>&1
  WICK_CUDA_GRAPHS=0 ncu --kernel-name regex:qmv_kernel --launch-skip 41 --launch-count 1 \
      --section WarpStateStats --section SourceCounters --page source --print-source sass --csv \
      $B/wick bench gen -m "$M" -p "$P" -n 4 --rounds 1 --device cuda >"$O/srcprof-decode-o.csv" 2>&1
  ncu --kernel-name regex:qmv_kernel --launch-skip 20 --launch-count 1 \
      --section WarpStateStats --section SourceCounters --page source --print-source sass --csv \
      $B/cuda_matmul_bench --types q4_0 --m 1 >"$O/srcprof-q4_0.csv" 2>&1
  grep -E "Duration|Warp Cycles Per Issued|Issued Warp|Block Size|Grid Size|Stall|Elapsed" "$O/srcprof-decode.txt" | head -60
fi

if has profile; then
  ncu --launch-skip 40 --launch-count 2 --section SpeedOfLight --section WarpStateStats \
      --section Occupancy --section MemoryWorkloadAnalysis \
      $B/cuda_matmul_bench --types q4_0 --m 1 >"$O/profile.txt" 2>&1
  grep -E "qmm_kernel|prepare_x|Duration|Throughput|Stall|Occupancy|Warp Cycles|Issued" "$O/profile.txt" | head -60
fi

