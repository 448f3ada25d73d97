/* CUDA attention over the KV cache (wk_cuda_attention) against a float64 reference on
 * fresh random inputs, the output poisoned first: head sizes of the tiled decode kernel
 * (32, 64, 128; one row) and of the general one (80, and any size for several rows),
 * grouped-query heads, key counts around the tile sizes (one key; 31, 32, 33; 511, 512,
 * 513 and more than a round of every warp), several rows (a prompt) and a position read
 * from the device (a graph's decode step, addresses moving with it); and the decode
 * attention fused with the output projection for every weight type, with its rejections.
 * Skips (exit 0) when no CUDA device is present. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WICK_HAVE_CUDA
#include "check.h"
#include "cuda_check.h"
#include "cuda/kernels.h"
#include "quant/traits.h"

/* One head's attention in float64: o[0 .. hd) for query qr over n_keys keys of kv head
 * kvh (s: n_keys scores of scratch). */
static void ref_head(const float *qr, const float *kc, const float *vc, int64_t n_keys, int64_t kv_dim,
                     int64_t kvh, int64_t hd, double *s, double *o)
{
    double mx = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < n_keys; j++) {
        double d = 0.0;
        for (int64_t e = 0; e < hd; e++) d += (double)qr[e] * kc[j * kv_dim + kvh * hd + e];
        s[j] = d / sqrt((double)hd);
        if (s[j] > mx) mx = s[j];
    }
    for (int64_t j = 0; j < n_keys; j++) sum += (s[j] = exp(s[j] - mx));
    for (int64_t e = 0; e < hd; e++) {
        double a = 0.0;
        for (int64_t j = 0; j < n_keys; j++) a += s[j] * vc[j * kv_dim + kvh * hd + e];
        o[e] = a / sum;
    }
}

/* rows query rows at positions pos_off + step + r over a cache of n_ctx positions; with
 * use_dpos the step (and the q and out rows, stride bytes per position) come from *dpos. */
static void run(wk_cuda_ctx *c, int64_t hd, int64_t n_heads, int64_t n_kv, int64_t rows, int64_t pos_off,
                int64_t step, bool use_dpos)
{
    const int64_t kv_dim = n_kv * hd, qdim = n_heads * hd;
    const int64_t n_ctx = pos_off + step + rows;
    const int64_t slots = use_dpos ? step + 1 : 1; /* positions the q/out buffers hold */
    float *q = malloc(sizeof(float) * (size_t)(slots * rows * qdim));
    float *kc = malloc(sizeof(float) * (size_t)(n_ctx * kv_dim));
    float *vc = malloc(sizeof(float) * (size_t)(n_ctx * kv_dim));
    float *out = malloc(sizeof(float) * (size_t)(slots * rows * qdim));
    for (int64_t i = 0; i < slots * rows * qdim; i++) q[i] = 2.f * (float)urand();
    for (int64_t i = 0; i < n_ctx * kv_dim; i++) kc[i] = (float)urand(), vc[i] = (float)urand();
    for (int64_t i = 0; i < slots * rows * qdim; i++) out[i] = NAN;
    float *dq = dev_copy(q, sizeof(float) * (size_t)(slots * rows * qdim));
    float *dk = dev_copy(kc, sizeof(float) * (size_t)(n_ctx * kv_dim));
    float *dv = dev_copy(vc, sizeof(float) * (size_t)(n_ctx * kv_dim));
    float *dout = dev_copy(out, sizeof(float) * (size_t)(slots * rows * qdim));
    int64_t *dpos = NULL;
    const int64_t stride = (int64_t)sizeof(float) * rows * qdim;
    wk_dptr qd = {dq, use_dpos ? stride : 0}, od = {dout, use_dpos ? stride : 0};
    if (use_dpos) {
        CHECK_OK(wk_cuda_malloc(sizeof(int64_t), (void **)&dpos));
        CHECK_OK(wk_cuda_set_pos(c, dpos, step));
    }
    CHECK_OK(wk_cuda_attention(c, od, qd, dk, dv, rows, use_dpos ? pos_off : pos_off + step, n_heads, n_kv, hd,
                               dpos));
    CHECK_OK(wk_cuda_ctx_sync(c));
    CHECK_OK(wk_cuda_copy_sync(out, dout, sizeof(float) * (size_t)(slots * rows * qdim), false));
    const int64_t base = use_dpos ? step * rows * qdim : 0;
    double worst = 0.0;
    double *s = malloc(sizeof(double) * (size_t)n_ctx), *o = malloc(sizeof(double) * (size_t)hd);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < n_heads; h++) {
            const int64_t kvh = h / (n_heads / n_kv), n_keys = pos_off + step + r + 1;
            ref_head(q + base + (r * n_heads + h) * hd, kc, vc, n_keys, kv_dim, kvh, hd, s, o);
            for (int64_t e = 0; e < hd; e++) {
                const double got = out[base + (r * n_heads + h) * hd + e];
                const double err = isnan(got) ? INFINITY : fabs(got - o[e]);
                if (err > worst) worst = err;
            }
        }
    CHECK_MSG(worst <= 2e-5, "head size %lld, %lld/%lld heads, %lld rows, %lld keys first%s: max |diff| %.3g",
              (long long)hd, (long long)n_heads, (long long)n_kv, (long long)rows,
              (long long)(pos_off + step + 1), use_dpos ? ", position on the device" : "", worst);
    free(s), free(o);
    free(q), free(kc), free(vc), free(out);
    wk_cuda_free(dq), wk_cuda_free(dk), wk_cuda_free(dv), wk_cuda_free(dout), wk_cuda_free(dpos);
}

/* The attention of one row with each head's share of the output projection W [n_out,
 * n_heads hd] of type t (wk_cuda_attention_o): the attention output as above, and parts[h]
 * [i] = W[i, h hd ..) · out_h against float64 (W dequantized, out_h the float64
 * attention), relative to sum |W| |out|; and the sum resid + parts[0] + parts[1] + ...
 * that the launch writes (its blocks are one cluster), exactly in that order, in two
 * launches in a row, and once more without the shares stored. */
static void run_o(wk_cuda_ctx *c, wk_type t, int64_t hd, int64_t n_heads, int64_t n_kv, int64_t n_keys,
                  int64_t n_out, bool use_dpos)
{
    const wk_type_traits *tr = wk_traits(t);
    const int64_t kv_dim = n_kv * hd, qdim = n_heads * hd, qk = tr->block_size;
    const int64_t step = use_dpos ? n_keys - 1 : 0, pos_off = use_dpos ? 0 : n_keys - 1;
    const int64_t slots = use_dpos ? step + 1 : 1;
    float *q = malloc(sizeof(float) * (size_t)(slots * qdim));
    float *kc = malloc(sizeof(float) * (size_t)(n_keys * kv_dim));
    float *vc = malloc(sizeof(float) * (size_t)(n_keys * kv_dim));
    float *wf = malloc(sizeof(float) * (size_t)(n_out * qdim));
    const size_t wbytes = (size_t)(n_out * qdim / qk) * tr->block_bytes;
    void *wq = malloc(wbytes);
    for (int64_t i = 0; i < slots * qdim; i++) q[i] = 2.f * (float)urand();
    for (int64_t i = 0; i < n_keys * kv_dim; i++) kc[i] = (float)urand(), vc[i] = (float)urand();
    for (int64_t i = 0; i < n_out * qdim; i++) wf[i] = (float)(urand() * (1.0 + (i % 7 == 0)));
    tr->from_f32(wf, wq, n_out * qdim);
    tr->to_f32(wq, wf, n_out * qdim);
    float *poison = malloc(sizeof(float) * (size_t)((n_heads + 1) * n_out + slots * qdim));
    for (int64_t i = 0; i < (n_heads + 1) * n_out + slots * qdim; i++) poison[i] = NAN;
    float *dq = dev_copy(q, sizeof(float) * (size_t)(slots * qdim));
    float *dk = dev_copy(kc, sizeof(float) * (size_t)(n_keys * kv_dim));
    float *dv = dev_copy(vc, sizeof(float) * (size_t)(n_keys * kv_dim));
    void *dw = dev_copy(wq, wbytes);
    float *dout = dev_copy(poison, sizeof(float) * (size_t)(slots * qdim));
    float *dparts = dev_copy(poison, sizeof(float) * (size_t)(n_heads * n_out));
    float *resid = malloc(sizeof(float) * (size_t)(slots * n_out));
    for (int64_t i = 0; i < slots * n_out; i++) resid[i] = 3.f * (float)urand();
    float *dresid = dev_copy(resid, sizeof(float) * (size_t)(slots * n_out));
    float *dsum = dev_copy(poison, sizeof(float) * (size_t)n_out);
    int64_t *dpos = NULL;
    const int64_t stride = (int64_t)sizeof(float) * qdim;
    wk_dptr qd = {dq, use_dpos ? stride : 0}, od = {dout, use_dpos ? stride : 0};
    if (use_dpos) {
        CHECK_OK(wk_cuda_malloc(sizeof(int64_t), (void **)&dpos));
        CHECK_OK(wk_cuda_set_pos(c, dpos, step));
    }
    CHECK(wk_cuda_attention_o_fits(t, dw, n_out, n_heads, qd, dk, dv, n_kv, hd));
    const wk_cuda_o_sum sum = {{dresid, use_dpos ? (int64_t)sizeof(float) * n_out : 0}, dsum};
    float *sum_got = malloc(sizeof(float) * (size_t)n_out), *sum_first = malloc(sizeof(float) * (size_t)n_out);
    int sum_bad = 0;
    for (int rep = 0; rep < 3; rep++) {
        CHECK_OK(wk_cuda_copy_h2d(c, dsum, poison, sizeof(float) * (size_t)n_out));
        CHECK_OK(wk_cuda_attention_o(c, od, qd, dk, dv, pos_off, n_heads, n_kv, hd, dpos, t, dw, n_out,
                                     rep < 2 ? dparts : NULL, sum));
        CHECK_OK(wk_cuda_ctx_sync(c));
        CHECK_OK(wk_cuda_copy_sync(rep ? sum_got : sum_first, dsum, sizeof(float) * (size_t)n_out, false));
        if (rep)
            CHECK_MSG(memcmp(sum_got, sum_first, sizeof(float) * (size_t)n_out) == 0,
                      "%s attention + output projection: launch %d's sum differs from the first", tr->name, rep + 1);
    }
    float *out = malloc(sizeof(float) * (size_t)qdim), *parts = malloc(sizeof(float) * (size_t)(n_heads * n_out));
    CHECK_OK(wk_cuda_copy_sync(out, (char *)dout + (use_dpos ? step * stride : 0), sizeof(float) * (size_t)qdim, false));
    CHECK_OK(wk_cuda_copy_sync(parts, dparts, sizeof(float) * (size_t)(n_heads * n_out), false));
    for (int64_t i = 0; i < n_out; i++) {
        float want = resid[(use_dpos ? step * n_out : 0) + i];
        for (int64_t h = 0; h < n_heads; h++) want += parts[h * n_out + i];
        if (!(sum_first[i] == want) && sum_bad++ < 3)
            fprintf(stderr, "  %s sum %lld: %.9g want %.9g\n", tr->name, (long long)i, sum_first[i], want);
    }
    CHECK_MSG(sum_bad == 0, "%s attention + output projection: %d sums differ", tr->name, sum_bad);
    const float *qr0 = q + (use_dpos ? step * qdim : 0);
    double *s = malloc(sizeof(double) * (size_t)n_keys), *o = malloc(sizeof(double) * (size_t)hd);
    double worst_att = 0.0, worst = 0.0;
    for (int64_t h = 0; h < n_heads; h++) {
        ref_head(qr0 + h * hd, kc, vc, n_keys, kv_dim, h / (n_heads / n_kv), hd, s, o);
        for (int64_t e = 0; e < hd; e++) {
            const double err = isnan(out[h * hd + e]) ? INFINITY : fabs(out[h * hd + e] - o[e]);
            if (err > worst_att) worst_att = err;
        }
        for (int64_t i = 0; i < n_out; i++) {
            double ref = 0.0, mag = 0.0;
            for (int64_t e = 0; e < hd; e++) {
                ref += (double)wf[i * qdim + h * hd + e] * o[e];
                mag += fabs((double)wf[i * qdim + h * hd + e] * o[e]);
            }
            const double got = parts[h * n_out + i];
            const double err = isnan(got) ? INFINITY : fabs(got - ref) / (mag > 0 ? mag : 1.0);
            if (err > worst) worst = err;
        }
    }
    CHECK_MSG(worst_att <= 2e-5 && worst <= 2e-5,
              "%s attention + output projection, head size %lld, %lld/%lld heads, %lld keys, %lld outputs%s: "
              "attention max |diff| %.3g, parts worst relative error %.3g",
              tr->name, (long long)hd, (long long)n_heads, (long long)n_kv, (long long)n_keys, (long long)n_out,
              use_dpos ? ", position on the device" : "", worst_att, worst);
    free(s), free(o), free(out), free(parts), free(poison);
    free(q), free(kc), free(vc), free(wf), free(wq);
    wk_cuda_free(dq), wk_cuda_free(dk), wk_cuda_free(dv), wk_cuda_free(dw), wk_cuda_free(dout);
    wk_cuda_free(dparts), wk_cuda_free(dpos), wk_cuda_free(dresid), wk_cuda_free(dsum);
    free(resid), free(sum_got), free(sum_first);
}

/* What the fused kernel does not take: the caller asks first (fits) and gets a clear error. */
static void test_o_rejections(wk_cuda_ctx *c)
{
    float *buf = NULL;
    CHECK_OK(wk_cuda_malloc(1 << 16, (void **)&buf));
    wk_dptr q = wk_dp(buf);
    const wk_cuda_o_sum nosum = {q, NULL};
    CHECK(wk_cuda_attention_o_fits(WK_TYPE_Q4_0, buf, 576, 9, q, buf, buf, 3, 64));
    CHECK(!wk_cuda_attention_o_fits(WK_TYPE_Q4_0, buf, 576, 9, q, buf, buf, 3, 80));
    CHECK(!wk_cuda_attention_o_fits(WK_TYPE_F32, buf, 576, 9, q, buf, buf, 3, 64));
    CHECK(!wk_cuda_attention_o_fits(WK_TYPE_Q4_0, (char *)buf + 2, 576, 9, q, buf, buf, 3, 64));
    CHECK(!wk_cuda_attention_o_fits(WK_TYPE_Q4_0, buf, 100000, 9, q, buf, buf, 3, 64)); /* slices too big */
    CHECK_FAILS(wk_cuda_attention_o(c, q, q, buf, buf, 0, 9, 3, 80, NULL, WK_TYPE_Q4_0, buf, 64, buf, nosum),
                WK_ERR_UNSUPPORTED, "head size 80");
    CHECK_FAILS(wk_cuda_attention_o(c, q, q, buf, buf, 0, 8, 3, 64, NULL, WK_TYPE_Q4_0, buf, 64, buf, nosum),
                WK_ERR_INVALID, "8 heads over 3");
    CHECK_FAILS(wk_cuda_attention_o(c, q, q, buf, buf, 0, 9, 3, 64, NULL, WK_TYPE_Q4_K, buf, 64, buf, nosum),
                WK_ERR_INVALID, "576 inputs do not fill q4_k");
    CHECK(!wk_cuda_attention_o_fits(WK_TYPE_Q4_0, buf, 576, 17, q, buf, buf, 1, 64)); /* one cluster */
    CHECK_FAILS(wk_cuda_attention_o(c, q, q, buf, buf, 0, 32, 4, 64, NULL, WK_TYPE_Q4_0, buf, 64, buf, nosum),
                WK_ERR_UNSUPPORTED, "32 heads");
    wk_cuda_free(buf);
}

int main(void)
{
    if (!wk_cuda_device_present()) {
        printf("SKIP: no CUDA device here (test_cuda_attention needs a GPU; nothing was checked)\n");
        return 0;
    }
    wk_cuda_ctx *c = NULL;
    CHECK_OK(wk_cuda_ctx_create(&c));
    if (!c) return 1;
    const int64_t keys[] = {1, 31, 32, 33, 300, 511, 512, 513, 1100};
    const struct { int64_t hd, heads, kv; } shapes[] = {{64, 9, 3}, {32, 4, 4}, {128, 8, 1}, {80, 6, 2}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            run(c, shapes[s].hd, shapes[s].heads, shapes[s].kv, 1, keys[k] - 1, 0, false);
            if (keys[k] <= 513) run(c, shapes[s].hd, shapes[s].heads, shapes[s].kv, 3, keys[k] - 1, 0, false);
        }
    run(c, 64, 9, 3, 1, 10, 289, true); /* a decode step: position 299 from the device */
    run(c, 128, 8, 2, 1, 0, 40, true);
    /* Every weight type the matmul kernels read, with the default model's shape where its
     * blocks allow (576 inputs), else 8 heads of 64 or 128 or of 32. */
    const wk_type types[] = {WK_TYPE_Q4_0, WK_TYPE_Q4_1, WK_TYPE_Q5_0, WK_TYPE_Q5_1, WK_TYPE_Q8_0,
                             WK_TYPE_Q8_1, WK_TYPE_Q2_K, WK_TYPE_Q3_K, WK_TYPE_Q4_K, WK_TYPE_Q5_K,
                             WK_TYPE_Q6_K, WK_TYPE_Q8_K, WK_TYPE_F16};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const bool kq = wk_traits(types[t])->block_size == 256;
        if (!kq) run_o(c, types[t], 64, 9, 3, 37, 576, false);
        run_o(c, types[t], 64, 8, 2, 300, 72, false);
        run_o(c, types[t], 128, 8, 1, 33, 40, true);
        run_o(c, types[t], 32, 8, 8, 1, 24, false);
        if (t == 0) run_o(c, types[t], 32, 16, 4, 50, 96, true); /* the largest cluster */
    }
    test_o_rejections(c);
    wk_cuda_ctx_free(c);
    TEST_MAIN_END();
}
#else
int main(void)
{
    printf("SKIP: this build has no CUDA support (test_cuda_attention checks the CUDA attention)\n");
    return 0;
}
#endif
