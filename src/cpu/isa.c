/* Choosing kernels at run time from what the processor reports. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "cpu/kernels.h"

#if defined(WICK_HAVE_X86)
void wk_avx2_f16_to_f32(const uint16_t *x, float *y, int64_t n);
void wk_avx2_f32_to_f16(const float *x, uint16_t *y, int64_t n);
#endif

static wk_isa wk_detect_isa(void)
{
#if defined(WICK_HAVE_X86) && defined(__GNUC__)
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2");
    bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vnni");
    if (avx512) return WK_ISA_AVX512;
    if (avx2) return WK_ISA_AVX2;
#endif
    return WK_ISA_SCALAR;
}

wk_isa wk_cpu_isa(void)
{
    /* Every thread computes the same value; atomic so that the race is well defined. */
    static _Atomic int cached = -1;
    int isa_now = atomic_load_explicit(&cached, memory_order_relaxed);
    if (isa_now < 0) {
        wk_isa isa = wk_detect_isa();
        const char *env = getenv("WICK_CPU_ISA");
        if (env && strcmp(env, "scalar") == 0) isa = WK_ISA_SCALAR;
        else if (env && strcmp(env, "avx2") == 0 && isa > WK_ISA_AVX2) isa = WK_ISA_AVX2;
        isa_now = (int)isa;
        atomic_store_explicit(&cached, isa_now, memory_order_relaxed);
    }
    return (wk_isa)isa_now;
}

/* Weight groups read side by side: a memory stream per pair of groups in the 32-element
 * formats, per group in the K formats (repack.h). The Xeon test host needs 8 groups side by
 * side to reach its bandwidth from 2 cores (src/cpu/bandwidth.c; cpu-streams-s21.txt, where
 * 4 took 0.93-1.06 of 8's time). The Zen 5 machine reads best with one stream a core: 2
 * groups (one pair, one stream) took 0.89-1.01 of 4's time at one row from memory for the
 * 32-element formats in rounds that met the same bandwidth state, and the K formats were
 * about as fast with 2 as with 4 (session 27, bench/results/cpu-pairs-s27-zen5.txt). */
static bool wk_cpu_is_amd(void)
{
#if defined(WICK_HAVE_X86) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_is("amd");
#else
    return false;
#endif
}

static int wk_detect_streams_log2(void) { return wk_cpu_is_amd() ? 1 : 3; }

static _Atomic int streams_log2 = -1;

int wk_cpu_streams_log2(void)
{
    int l = atomic_load_explicit(&streams_log2, memory_order_relaxed);
    if (l < 0) {
        l = wk_detect_streams_log2();
        const char *env = getenv("WICK_CPU_STREAMS");
        const int v = env ? atoi(env) : 0;
        if (v == 1 || v == 2 || v == 4 || v == 8) l = v == 8 ? 3 : v / 2; /* log2 of 1, 2, 4, 8 */
        atomic_store_explicit(&streams_log2, l, memory_order_relaxed);
    }
    return l;
}

/* Whether the one-row tiles of the 32-element formats prefetch their weights (2 KiB ahead into
 * L1). On the Xeon test host a core then kept enough reads in flight (m = 1 from about 60% to
 * 80-99% of the read bandwidth); on the AMD machines the hardware prefetch alone reads more:
 * a plain stream read faster than a prefetched one (bandwidth.c), and on the Zen 4 (session 32,
 * 2 threads, [8192, 4096] from memory) Q4_0, Q5_0, Q4_1 and Q8_0 at m = 1 read the same without
 * it in the slow memory state and up to 96% of the bandwidth instead of 79-83% in the fast one. */
static _Atomic int one_row_prefetch = -1;

bool wk_cpu_one_row_prefetch(void)
{
    int v = atomic_load_explicit(&one_row_prefetch, memory_order_relaxed);
    if (v < 0) {
        v = !wk_cpu_is_amd();
        const char *env = getenv("WICK_CPU_PREFETCH");
        if (env && (env[0] == '0' || env[0] == '1') && env[1] == 0) v = env[0] - '0';
        atomic_store_explicit(&one_row_prefetch, v, memory_order_relaxed);
    }
    return v != 0;
}

void wk_cpu_set_streams_log2(int l)
{
    atomic_store_explicit(&streams_log2, l < 0 ? 0 : l > 3 ? 3 : l, memory_order_relaxed);
}

const char *wk_isa_name(wk_isa isa)
{
    switch (isa) {
    case WK_ISA_AVX512: return "avx512";
    case WK_ISA_AVX2: return "avx2";
    default: return "scalar";
    }
}

/* Each type's kernels for each instruction set, every entry from the highest set that
 * provides it (the AVX-512 tables of the block types hold only the precise form's kernel),
 * built once. */
static wk_cpu_kernels merged[WK_ISA_AVX512 + 1][WK_TYPE_COUNT];
static pthread_once_t merged_once = PTHREAD_ONCE_INIT;

static void wk_merge_into(wk_cpu_kernels *m, const wk_cpu_kernels *k)
{
    if (!k) return;
    m->isa = k->isa;
    if (k->quantize) m->quantize = k->quantize;
    if (k->gemm_q) m->gemm_q = k->gemm_q;
    if (k->gemm_f32) m->gemm_f32 = k->gemm_f32;
    if (k->precise_octets) m->precise_octets = k->precise_octets;
}

static void wk_merge_tables(void)
{
    for (int t = 0; t < WK_TYPE_COUNT; t++) {
        const wk_cpu_kernels *scalar = wk_cpu_kernels_scalar((wk_type)t);
        if (!scalar) continue;
        for (int isa = WK_ISA_SCALAR; isa <= WK_ISA_AVX512; isa++) {
            wk_cpu_kernels *m = &merged[isa][t];
            *m = *scalar;
#if defined(WICK_HAVE_X86)
            if (isa >= WK_ISA_AVX2) wk_merge_into(m, wk_cpu_kernels_avx2((wk_type)t));
            if (isa >= WK_ISA_AVX512) wk_merge_into(m, wk_cpu_kernels_avx512((wk_type)t));
#endif
        }
    }
}

const wk_cpu_kernels *wk_cpu_kernels_for(wk_type t, wk_isa isa)
{
    pthread_once(&merged_once, wk_merge_tables);
    if ((int)t < 0 || (int)t >= WK_TYPE_COUNT || !wk_cpu_kernels_scalar(t)) return NULL;
    if (isa > WK_ISA_AVX512) isa = WK_ISA_AVX512;
    if (isa < WK_ISA_SCALAR) isa = WK_ISA_SCALAR;
    return &merged[isa][t];
}

void wk_cpu_f16_to_f32(const uint16_t *x, float *y, int64_t n)
{
#if defined(WICK_HAVE_X86)
    if (wk_cpu_isa() >= WK_ISA_AVX2) {
        wk_avx2_f16_to_f32(x, y, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = wk_half_to_float(x[i]);
}

void wk_cpu_f32_to_f16(const float *x, uint16_t *y, int64_t n)
{
#if defined(WICK_HAVE_X86)
    if (wk_cpu_isa() >= WK_ISA_AVX2) {
        wk_avx2_f32_to_f16(x, y, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = wk_float_to_half(x[i]);
}

void wk_cpu_round_f16(const float *x, float *y, int64_t n)
{
    /* Through a small stack buffer: no allocation. */
    uint16_t h[256];
    for (int64_t i = 0; i < n; i += 256) {
        int64_t len = n - i < 256 ? n - i : 256;
        wk_cpu_f32_to_f16(x + i, h, len);
        wk_cpu_f16_to_f32(h, y + i, len);
    }
}
