/* A streaming read for measuring bandwidth: 256 bytes per iteration into 8 independent
 * accumulators, so that the loads, not the adds, set the pace. */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

uint64_t wk_avx2_stream_sum(const void *p, size_t bytes);

uint64_t wk_avx2_stream_sum(const void *p, size_t bytes)
{
    const __m256i *v = p;
    size_t n = bytes / 256;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
            a7 = a0;
    for (size_t i = 0; i < n; i++, v += 8) {
        a0 = _mm256_add_epi64(a0, _mm256_load_si256(v + 0));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256(v + 1));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256(v + 2));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256(v + 3));
        a4 = _mm256_add_epi64(a4, _mm256_load_si256(v + 4));
        a5 = _mm256_add_epi64(a5, _mm256_load_si256(v + 5));
        a6 = _mm256_add_epi64(a6, _mm256_load_si256(v + 6));
        a7 = _mm256_add_epi64(a7, _mm256_load_si256(v + 7));
    }
    __m256i s = _mm256_add_epi64(_mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)),
                                 _mm256_add_epi64(_mm256_add_epi64(a4, a5), _mm256_add_epi64(a6, a7)));
    uint64_t out[4];
    _mm256_storeu_si256((__m256i *)out, s);
    return out[0] + out[1] + out[2] + out[3];
}
