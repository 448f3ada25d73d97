/* Force-included (-include) into every file of the fuzz build by scripts/fuzz.sh.
 *
 * clang before 16 rejects __builtin_cpu_supports("f16c") and ("bmi2") at compile
 * time, and libFuzzer needs clang. This answers the same questions from cpuid and
 * xgetbv, so that the fuzzed library picks its kernels as the real build does. */
#ifndef WICK_FUZZ_CLANG_COMPAT_H
#define WICK_FUZZ_CLANG_COMPAT_H
#if defined(__clang__) && __clang_major__ < 16 && defined(__x86_64__)
#include <cpuid.h>

/* (no libc header here: this file comes before each file's own _GNU_SOURCE) */
static inline int wk_fuzz_streq(const char *a, const char *b)
{
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

static inline int wk_fuzz_cpu_supports(const char *f)
{
    unsigned a, b, c, d, b7 = 0, c7 = 0, d7;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    unsigned c1 = c;
    if (__get_cpuid_max(0, 0) >= 7) __cpuid_count(7, 0, a, b7, c7, d7);
    (void)d7;
    unsigned long long xcr0 = 0;
    if (c1 & (1u << 27)) { /* OSXSAVE: the OS saves the wide registers it reports */
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = (unsigned long long)hi << 32 | lo;
    }
    int ymm = (xcr0 & 6) == 6, zmm = ymm && (xcr0 & 0xe0) == 0xe0;
    if (wk_fuzz_streq(f, "avx2")) return ymm && (b7 >> 5 & 1);
    if (wk_fuzz_streq(f, "fma")) return ymm && (c1 >> 12 & 1);
    if (wk_fuzz_streq(f, "f16c")) return ymm && (c1 >> 29 & 1);
    if (wk_fuzz_streq(f, "bmi2")) return b7 >> 8 & 1;
    if (wk_fuzz_streq(f, "avx512f")) return zmm && (b7 >> 16 & 1);
    if (wk_fuzz_streq(f, "avx512dq")) return zmm && (b7 >> 17 & 1);
    if (wk_fuzz_streq(f, "avx512bw")) return zmm && (b7 >> 30 & 1);
    if (wk_fuzz_streq(f, "avx512vl")) return zmm && (b7 >> 31 & 1);
    if (wk_fuzz_streq(f, "avx512vnni")) return zmm && (c7 >> 11 & 1);
    return 0;
}
#define __builtin_cpu_supports(feature) wk_fuzz_cpu_supports(feature)
#endif
#endif
