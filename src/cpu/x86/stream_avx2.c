/* A streaming read for measuring bandwidth: 256 bytes per iteration into 8 independent
 * accumulators, so that the loads, not the adds, set the pace. With `prefetch`, each
 * iteration also prefetches the lines 2 KiB ahead, as the matmul kernels do (with few
 * threads a core's own hardware prefetch may keep too few lines in flight). */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

uint64_t wk_avx2_stream_sum(const void *p, size_t bytes, int prefetch);

uint64_t wk_avx2_stream_sum(const void *p, size_t bytes, int prefetch)
{
    const __m256i *v = p;
    size_t n = bytes / 256;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
            a7 = a0;
    for (size_t i = 0; i < n; i++, v += 8) {
        if (prefetch) {
            const char *c = (const char *)v + 2048;
            _mm_prefetch(c, _MM_HINT_T0);
            _mm_prefetch(c + 64, _MM_HINT_T0);
            _mm_prefetch(c + 128, _MM_HINT_T0);
            _mm_prefetch(c + 192, _MM_HINT_T0);
        }
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

/* The same over `streams` (at most 8) equal slices of p read side by side, 64 bytes of
 * each in turn, with prefetch: how a matmul reading several weight rows at once sees the
 * memory (a core's hardware prefetchers follow each stream). */
uint64_t wk_avx2_stream_sum_multi(const void *p, size_t bytes, int streams);

uint64_t wk_avx2_stream_sum_multi(const void *p, size_t bytes, int streams)
{
    size_t per = bytes / (size_t)streams / 64 * 64;
    const char *base = p;
    __m256i acc[8];
    for (int s = 0; s < 8; s++) acc[s] = _mm256_setzero_si256();
    for (size_t i = 0; i < per; i += 64) {
        for (int s = 0; s < streams; s++) {
            const char *q = base + (size_t)s * per + i;
            _mm_prefetch(q + 2048, _MM_HINT_T0);
            acc[s] = _mm256_add_epi64(acc[s], _mm256_add_epi64(_mm256_load_si256((const __m256i *)q),
                                                                _mm256_load_si256((const __m256i *)(q + 32))));
        }
    }
    __m256i t = acc[0];
    for (int s = 1; s < 8; s++) t = _mm256_add_epi64(t, acc[s]);
    uint64_t out[4];
    _mm256_storeu_si256((__m256i *)out, t);
    return out[0] + out[1] + out[2] + out[3];
}
