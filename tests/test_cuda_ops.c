/* The greedy choice on the GPU (wk_cuda_argmax) against a scan from the first value
 * (the CPU backend's and the sampler's definition: the first strictly larger value wins):
 * ties at several places, NaNs (first or elsewhere), infinities, lengths from 1 to more
 * than the kernel's threads times 64, the largest value at the first, last and random
 * places; the answer's slot poisoned before each run. Skips (exit 0) without a device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WICK_HAVE_CUDA
#include "check.h"
#include "cuda_check.h"
#include "cuda/kernels.h"

static int32_t scan_argmax(const float *x, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return (int32_t)best;
}

/* The values on 16-byte boundaries (the kernel's wide loads) and one float past them. */
static void check_one(wk_cuda_ctx *c, const float *x, int64_t n, const char *what)
{
    float *shifted = malloc(sizeof(float) * (size_t)(n + 1));
    shifted[0] = 0.f;
    memcpy(shifted + 1, x, sizeof(float) * (size_t)n);
    for (int off = 0; off < 2; off++) {
        float *dx = off ? dev_copy(shifted, sizeof(float) * (size_t)(n + 1)) : dev_copy(x, sizeof(float) * (size_t)n);
        int32_t poison = -7, got = -7;
        void *dout = dev_copy(&poison, sizeof poison);
        CHECK_OK(wk_cuda_argmax(c, wk_dp(off ? dx + 1 : dx), n, wk_dp(dout), NULL));
        CHECK_OK(wk_cuda_ctx_sync(c));
        CHECK_OK(wk_cuda_copy_sync(&got, dout, sizeof got, false));
        int32_t want = scan_argmax(x, n);
        CHECK_MSG(got == want, "argmax %s, n = %lld%s: %d, want %d", what, (long long)n,
                  off ? ", not on 16 bytes" : "", (int)got, (int)want);
        wk_cuda_free(dx);
        wk_cuda_free(dout);
    }
    free(shifted);
}

int main(void)
{
    if (!wk_cuda_device_present()) {
        printf("SKIP: no CUDA device here (test_cuda_ops needs a GPU; nothing was checked)\n");
        return 0;
    }
    wk_cuda_ctx *c = NULL;
    CHECK_OK(wk_cuda_ctx_create(&c));
    if (!c) return 1;
    const int64_t ns[] = {1, 2, 31, 1023, 1024, 1025, 4097, 16385, 49152, 70001};
    float *x = malloc(sizeof(float) * 70001);
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
        const int64_t n = ns[ni];
        for (int64_t i = 0; i < n; i++) x[i] = (float)urand();
        check_one(c, x, n, "random");
        /* Ties of the largest value: the first wins. */
        int64_t a = n / 3, b = n / 2, d = n - 1;
        for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 5);
        x[d] = x[b] = x[a] = 9.0f;
        check_one(c, x, n, "ties");
        for (int64_t i = 0; i < n; i++) x[i] = 1.0f; /* all equal: 0 */
        check_one(c, x, n, "all equal");
        for (int64_t i = 0; i < n; i++) x[i] = -INFINITY;
        check_one(c, x, n, "all -inf");
        x[d] = 0.0f;
        check_one(c, x, n, "the last");
        for (int64_t i = 0; i < n; i++) x[i] = (float)urand();
        x[0] = NAN; /* a NaN first: nothing is larger than it in the scan */
        check_one(c, x, n, "NaN first");
        x[0] = -5.0f;
        for (int64_t i = 1; i < n; i += 3) x[i] = NAN; /* NaNs elsewhere are passed over */
        check_one(c, x, n, "NaNs inside");
        x[b] = INFINITY;
        check_one(c, x, n, "+inf");
    }
    free(x);
    /* Rejected: no values. */
    CHECK_FAILS(wk_cuda_argmax(c, wk_dp(NULL), 0, wk_dp(NULL), NULL), WK_ERR_INVALID, "argmax of 0 values");
    wk_cuda_ctx_free(c);
    TEST_MAIN_END();
}
#else
int main(void)
{
    printf("SKIP: this build has no CUDA support (test_cuda_ops checks the CUDA operations)\n");
    return 0;
}
#endif
