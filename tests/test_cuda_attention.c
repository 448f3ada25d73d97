/* CUDA attention over the KV cache (wk_cuda_attention) against a float64 reference on
 * fresh random inputs, the output poisoned first: head sizes of the tiled decode kernel
 * (32, 64, 128; one row) and of the general one (80, and any size for several rows),
 * grouped-query heads, key counts around the tile sizes (one key; 31, 32, 33; 511, 512,
 * 513 and more than a round of every warp), several rows (a prompt) and a position read
 * from the device (a graph's decode step, addresses moving with it); and the decode
 * attention fused with the output projection for every weight type, and also with the
 * RMSNorm, q/k/v projections and RoPE before it, each with its rejections.
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

/* A random matrix [rows, cols] of type t: its bytes on the device and the exact values it
 * holds (dequantized) in wf. */
static void *rand_weight(const wk_type_traits *tr, int64_t rows, int64_t cols, float *wf)
{
    const size_t bytes = (size_t)(rows * cols / tr->block_size) * tr->block_bytes;
    void *wq = malloc(bytes);
    for (int64_t i = 0; i < rows * cols; i++) wf[i] = (float)(urand() * (1.0 + (i % 7 == 0)));
    tr->from_f32(wf, wq, rows * cols);
    tr->to_f32(wq, wf, rows * cols);
    void *dw = dev_copy(wq, bytes);
    free(wq);
    return dw;
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
    const int64_t kv_dim = n_kv * hd, qdim = n_heads * hd;
    const int64_t step = use_dpos ? n_keys - 1 : 0, pos_off = use_dpos ? 0 : n_keys - 1;
    const int64_t slots = use_dpos ? step + 1 : 1;
    float *q = malloc(sizeof(float) * (size_t)(slots * qdim));
    float *kc = malloc(sizeof(float) * (size_t)(n_keys * kv_dim));
    float *vc = malloc(sizeof(float) * (size_t)(n_keys * kv_dim));
    float *wf = malloc(sizeof(float) * (size_t)(n_out * qdim));
    for (int64_t i = 0; i < slots * qdim; i++) q[i] = 2.f * (float)urand();
    for (int64_t i = 0; i < n_keys * kv_dim; i++) kc[i] = (float)urand(), vc[i] = (float)urand();
    float *poison = malloc(sizeof(float) * (size_t)((n_heads + 1) * n_out + slots * qdim));
    for (int64_t i = 0; i < (n_heads + 1) * n_out + slots * qdim; i++) poison[i] = NAN;
    float *dq = dev_copy(q, sizeof(float) * (size_t)(slots * qdim));
    float *dk = dev_copy(kc, sizeof(float) * (size_t)(n_keys * kv_dim));
    float *dv = dev_copy(vc, sizeof(float) * (size_t)(n_keys * kv_dim));
    void *dw = rand_weight(tr, n_out, qdim, wf);
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
    free(q), free(kc), free(vc), free(wf);
    wk_cuda_free(dq), wk_cuda_free(dk), wk_cuda_free(dv), wk_cuda_free(dw), wk_cuda_free(dout);
    wk_cuda_free(dparts), wk_cuda_free(dpos), wk_cuda_free(dresid), wk_cuda_free(dsum);
    free(resid), free(sum_got), free(sum_first);
}

/* y[i] = W[i, :] · x in float64, and mag[i] = sum |W[i, j] x[j]| (the scale of its rounding). */
static void ref_matvec(const float *w, int64_t rows, int64_t cols, const double *x, double *y, double *mag)
{
    for (int64_t i = 0; i < rows; i++) {
        double s = 0.0, m = 0.0;
        for (int64_t j = 0; j < cols; j++) s += w[i * cols + j] * x[j], m += fabs(w[i * cols + j] * x[j]);
        y[i] = s, mag[i] = m;
    }
}

/* The worst |got - want| / (mag + 1e-3) over n values (NaN: infinite). */
static double worst_rel(const float *got, const double *want, const double *mag, int64_t n)
{
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double err = isnan(got[i]) ? INFINITY : fabs(got[i] - want[i]) / (mag[i] + 1e-3);
        if (err > worst) worst = err;
    }
    return worst;
}

/* The decode step's RMSNorm, q/k/v projections, RoPE, attention and output projection in
 * one launch (wk_cuda_attention_qkv_o) against float64: x random, the three projections
 * and Wo of type t (dequantized for the reference), the cache rows before the position
 * random and the position's row poisoned (the launch writes it), q, the attention output,
 * the normalized row and the sum poisoned; checks q, the new k and v rows, the normalized
 * row, the attention output and x + Wo · att, and that three launches give the same sum. */
static void run_qkv_o(wk_cuda_ctx *c, wk_type t, int64_t hd, int64_t n_heads, int64_t n_kv, int64_t dim,
                      int64_t n_keys, int64_t n_rot, bool use_dpos)
{
    const wk_type_traits *tr = wk_traits(t);
    const int64_t kv_dim = n_kv * hd, qdim = n_heads * hd, pos = n_keys - 1;
    const int64_t step = use_dpos ? pos : 0, pos_off = use_dpos ? 0 : pos;
    const int64_t slots = use_dpos ? step + 1 : 1;
    const float eps = 1e-5f, base = 10000.f;
    float *wqf = malloc(sizeof(float) * (size_t)(qdim * dim)), *wkf = malloc(sizeof(float) * (size_t)(kv_dim * dim));
    float *wvf = malloc(sizeof(float) * (size_t)(kv_dim * dim)), *wof = malloc(sizeof(float) * (size_t)(dim * qdim));
    void *dwq = rand_weight(tr, qdim, dim, wqf), *dwk = rand_weight(tr, kv_dim, dim, wkf);
    void *dwv = rand_weight(tr, kv_dim, dim, wvf), *dwo = rand_weight(tr, dim, qdim, wof);
    float *x = malloc(sizeof(float) * (size_t)(slots * dim)), *nw = malloc(sizeof(float) * (size_t)dim);
    for (int64_t i = 0; i < slots * dim; i++) x[i] = 3.f * (float)urand();
    for (int64_t i = 0; i < dim; i++) nw[i] = 1.f + 0.5f * (float)urand();
    float *kc = malloc(sizeof(float) * (size_t)(n_keys * kv_dim)), *vc = malloc(sizeof(float) * (size_t)(n_keys * kv_dim));
    for (int64_t i = 0; i < n_keys * kv_dim; i++)
        kc[i] = i < pos * kv_dim ? (float)urand() : NAN, vc[i] = i < pos * kv_dim ? (float)urand() : NAN;
    const int64_t np = slots * (qdim > dim ? qdim : dim);
    float *poison = malloc(sizeof(float) * (size_t)np);
    for (int64_t i = 0; i < np; i++) poison[i] = NAN;
    float *dx = dev_copy(x, sizeof(float) * (size_t)(slots * dim)), *dnw = dev_copy(nw, sizeof(float) * (size_t)dim);
    float *dk = dev_copy(kc, sizeof(float) * (size_t)(n_keys * kv_dim));
    float *dv = dev_copy(vc, sizeof(float) * (size_t)(n_keys * kv_dim));
    float *dq = dev_copy(poison, sizeof(float) * (size_t)(slots * qdim));
    float *dout = dev_copy(poison, sizeof(float) * (size_t)(slots * qdim));
    float *dnorm = dev_copy(poison, sizeof(float) * (size_t)(slots * dim));
    float *dsum = dev_copy(poison, sizeof(float) * (size_t)dim);
    int64_t *dpos = NULL;
    if (use_dpos) {
        CHECK_OK(wk_cuda_malloc(sizeof(int64_t), (void **)&dpos));
        CHECK_OK(wk_cuda_set_pos(c, dpos, step));
    }
    const int64_t sq = use_dpos ? (int64_t)sizeof(float) * qdim : 0, sx = use_dpos ? (int64_t)sizeof(float) * dim : 0;
    const int64_t skv = use_dpos ? (int64_t)sizeof(float) * kv_dim : 0;
    wk_dptr qd = {dq, sq}, od = {dout, sq};
    const wk_cuda_att_qkv qkv = {.wq = dwq, .wk = dwk, .wv = dwv, .x = {dx, sx}, .norm_out = {dnorm, sx},
                                 .k_new = {dk + (use_dpos ? 0 : pos * kv_dim), skv},
                                 .v_new = {dv + (use_dpos ? 0 : pos * kv_dim), skv}, .norm_w = dnw, .eps = eps,
                                 .n_rot = n_rot, .rope_pos = pos_off, .rope_base = base};
    const wk_cuda_o_sum sum = {{dx, sx}, dsum};
    CHECK(wk_cuda_attention_qkv_o_fits(t, dwo, dim, n_heads, qd, dk, dv, n_kv, hd, &qkv));
    float *sum_got = malloc(sizeof(float) * (size_t)dim), *sum_first = malloc(sizeof(float) * (size_t)dim);
    for (int rep = 0; rep < 3; rep++) {
        CHECK_OK(wk_cuda_copy_h2d(c, dsum, poison, sizeof(float) * (size_t)dim));
        CHECK_OK(wk_cuda_attention_qkv_o(c, od, qd, dk, dv, pos_off, n_heads, n_kv, hd, dpos, t, dwo, dim, sum, &qkv));
        CHECK_OK(wk_cuda_ctx_sync(c));
        CHECK_OK(wk_cuda_copy_sync(rep ? sum_got : sum_first, dsum, sizeof(float) * (size_t)dim, false));
        if (rep)
            CHECK_MSG(memcmp(sum_got, sum_first, sizeof(float) * (size_t)dim) == 0,
                      "%s q/k/v + attention + output projection: launch %d's sum differs from the first", tr->name,
                      rep + 1);
    }
    /* The reference: the normalized row, the projections, the rotation, the attention. */
    const float *xr = x + step * dim;
    double ss = 0.0;
    for (int64_t i = 0; i < dim; i++) ss += (double)xr[i] * xr[i];
    const double inv = 1.0 / sqrt(ss / (double)dim + eps);
    double *xn = malloc(sizeof(double) * (size_t)dim), *one = malloc(sizeof(double) * (size_t)dim);
    for (int64_t i = 0; i < dim; i++) xn[i] = xr[i] * inv * nw[i], one[i] = 0.0;
    double *qr = malloc(sizeof(double) * (size_t)qdim), *qm = malloc(sizeof(double) * (size_t)qdim);
    double *kr = malloc(sizeof(double) * (size_t)kv_dim), *km = malloc(sizeof(double) * (size_t)kv_dim);
    double *vr = malloc(sizeof(double) * (size_t)kv_dim), *vm = malloc(sizeof(double) * (size_t)kv_dim);
    ref_matvec(wqf, qdim, dim, xn, qr, qm);
    ref_matvec(wkf, kv_dim, dim, xn, kr, km);
    ref_matvec(wvf, kv_dim, dim, xn, vr, vm);
    for (int pass = 0; pass < 2; pass++) {
        double *y = pass ? kr : qr, *m = pass ? km : qm;
        for (int64_t hh = 0; hh < (pass ? n_kv : n_heads); hh++)
            for (int64_t p = 0; p < n_rot / 2; p++) {
                const double th = (double)pos * exp(-2.0 * (double)p * log((double)base) / (double)n_rot);
                double *e = y + hh * hd + 2 * p;
                const double a = e[0], b = e[1];
                e[0] = a * cos(th) - b * sin(th), e[1] = a * sin(th) + b * cos(th);
                const double mm = m[hh * hd + 2 * p] + m[hh * hd + 2 * p + 1];
                m[hh * hd + 2 * p] = m[hh * hd + 2 * p + 1] = mm;
            }
    }
    float *got = malloc(sizeof(float) * (size_t)(qdim > dim ? qdim : dim));
    CHECK_OK(wk_cuda_copy_sync(got, (char *)dq + step * sq, sizeof(float) * (size_t)qdim, false));
    const double e_q = worst_rel(got, qr, qm, qdim);
    CHECK_OK(wk_cuda_copy_sync(got, dk + pos * kv_dim, sizeof(float) * (size_t)kv_dim, false));
    const double e_k = worst_rel(got, kr, km, kv_dim);
    CHECK_OK(wk_cuda_copy_sync(got, dv + pos * kv_dim, sizeof(float) * (size_t)kv_dim, false));
    const double e_v = worst_rel(got, vr, vm, kv_dim);
    CHECK_OK(wk_cuda_copy_sync(got, (char *)dnorm + step * sx, sizeof(float) * (size_t)dim, false));
    for (int64_t i = 0; i < dim; i++) one[i] = fabs(xn[i]);
    const double e_n = worst_rel(got, xn, one, dim);
    /* The attention over the cache with the reference's new rows, then x + Wo · att. */
    for (int64_t i = 0; i < kv_dim; i++) kc[pos * kv_dim + i] = (float)kr[i], vc[pos * kv_dim + i] = (float)vr[i];
    float *qf = malloc(sizeof(float) * (size_t)qdim);
    for (int64_t i = 0; i < qdim; i++) qf[i] = (float)qr[i];
    double *s = malloc(sizeof(double) * (size_t)n_keys), *att = malloc(sizeof(double) * (size_t)qdim);
    for (int64_t h = 0; h < n_heads; h++)
        ref_head(qf + h * hd, kc, vc, n_keys, kv_dim, h / (n_heads / n_kv), hd, s, att + h * hd);
    double *attm = malloc(sizeof(double) * (size_t)qdim);
    for (int64_t i = 0; i < qdim; i++) attm[i] = 1.0;
    CHECK_OK(wk_cuda_copy_sync(got, (char *)dout + step * sq, sizeof(float) * (size_t)qdim, false));
    const double e_a = worst_rel(got, att, attm, qdim);
    double *want = malloc(sizeof(double) * (size_t)dim), *wm = malloc(sizeof(double) * (size_t)dim);
    ref_matvec(wof, dim, qdim, att, want, wm);
    for (int64_t i = 0; i < dim; i++) want[i] += xr[i], wm[i] += fabs(xr[i]);
    const double e_s = worst_rel(sum_first, want, wm, dim);
    CHECK_MSG(e_q <= 1e-4 && e_k <= 1e-4 && e_v <= 1e-4 && e_n <= 1e-5 && e_a <= 1e-3 && e_s <= 1e-3,
              "%s q/k/v + attention + output projection, head size %lld, %lld/%lld heads, %lld inputs, %lld keys, "
              "%lld rotated%s: relative errors q %.3g k %.3g v %.3g norm %.3g attention %.3g sum %.3g",
              tr->name, (long long)hd, (long long)n_heads, (long long)n_kv, (long long)dim, (long long)n_keys,
              (long long)n_rot, use_dpos ? ", position on the device" : "", e_q, e_k, e_v, e_n, e_a, e_s);
    free(wqf), free(wkf), free(wvf), free(wof), free(x), free(nw), free(kc), free(vc), free(poison);
    free(sum_got), free(sum_first), free(xn), free(one), free(qr), free(qm), free(kr), free(km), free(vr), free(vm);
    free(got), free(qf), free(s), free(att), free(attm), free(want), free(wm);
    wk_cuda_free(dwq), wk_cuda_free(dwk), wk_cuda_free(dwv), wk_cuda_free(dwo), wk_cuda_free(dx), wk_cuda_free(dnw);
    wk_cuda_free(dk), wk_cuda_free(dv), wk_cuda_free(dq), wk_cuda_free(dout), wk_cuda_free(dnorm), wk_cuda_free(dsum);
    wk_cuda_free(dpos);
}

/* What the launch with the q/k/v projections does not take: fits says no, the launch fails clearly. */
static void test_qkv_rejections(wk_cuda_ctx *c)
{
    float *buf = NULL;
    CHECK_OK(wk_cuda_malloc(1 << 20, (void **)&buf));
    wk_dptr q = wk_dp(buf);
    const wk_cuda_o_sum sum = {q, buf}, nosum = {q, NULL};
    const wk_cuda_att_qkv ok = {.wq = buf, .wk = buf, .wv = buf, .x = q, .k_new = q, .v_new = q, .norm_w = buf,
                                .eps = 1e-5f, .n_rot = 64, .rope_base = 1e4f};
    wk_cuda_att_qkv bad = ok;
    CHECK(wk_cuda_attention_qkv_o_fits(WK_TYPE_Q4_1, buf, 576, 9, q, buf, buf, 3, 64, &ok));
    CHECK(!wk_cuda_attention_qkv_o_fits(WK_TYPE_Q4_1, buf, 576, 9, q, buf, buf, 3, 64, NULL));
    CHECK(!wk_cuda_attention_qkv_o_fits(WK_TYPE_Q4_1, buf, 576, 12, q, buf, buf, 3, 64, &ok)); /* 18 blocks */
    CHECK_FAILS(wk_cuda_attention_qkv_o(c, q, q, buf, buf, 0, 12, 3, 64, NULL, WK_TYPE_Q4_1, buf, 576, sum, &ok),
                WK_ERR_UNSUPPORTED, "12 + 2 x 3 heads");
    CHECK_FAILS(wk_cuda_attention_qkv_o(c, q, q, buf, buf, 0, 9, 3, 64, NULL, WK_TYPE_Q4_1, buf, 576, nosum, &ok),
                WK_ERR_UNSUPPORTED, "no sum");
    bad.wk = (char *)buf + 4; /* rows copied 16 bytes at a time */
    CHECK(!wk_cuda_attention_qkv_o_fits(WK_TYPE_Q4_1, buf, 576, 9, q, buf, buf, 3, 64, &bad));
    CHECK_FAILS(wk_cuda_attention_qkv_o(c, q, q, buf, buf, 0, 9, 3, 64, NULL, WK_TYPE_Q4_1, buf, 576, sum, &bad),
                WK_ERR_UNSUPPORTED, "weights' alignment");
    bad = ok, bad.n_rot = 63;
    CHECK(!wk_cuda_attention_qkv_o_fits(WK_TYPE_Q4_1, buf, 576, 9, q, buf, buf, 3, 64, &bad));
    bad = ok, bad.n_rot = 66;
    CHECK(!wk_cuda_attention_qkv_o_fits(WK_TYPE_Q4_1, buf, 576, 9, q, buf, buf, 3, 64, &bad));
    bad = ok, bad.norm_w = NULL;
    CHECK(!wk_cuda_attention_qkv_o_fits(WK_TYPE_Q4_1, buf, 576, 9, q, buf, buf, 3, 64, &bad));
    CHECK(!wk_cuda_attention_qkv_o_fits(WK_TYPE_Q4_1, buf, 8192, 9, q, buf, buf, 3, 64, &ok)); /* shared memory */
    CHECK(!wk_cuda_attention_qkv_o_fits(WK_TYPE_Q4_1, buf, 592, 9, q, buf, buf, 3, 64, &ok)); /* not whole blocks */
    wk_cuda_free(buf);
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
    /* With the q/k/v projections in the launch: the default model's shape (15 blocks) for
     * the 32-element types, at the first position, across a tile, a position on the
     * device, part of the dims rotated; the K types at 256 or 512 inputs; head sizes 32
     * (16 blocks, the largest cluster) and 128; more inputs than q dims. */
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const bool kq = wk_traits(types[t])->block_size == 256;
        if (!kq) {
            run_qkv_o(c, types[t], 64, 9, 3, 576, 1, 64, false);
            run_qkv_o(c, types[t], 64, 9, 3, 576, 300, 64, t % 2 == 0);
        }
        /* (The K types' larger blocks take more shared memory: 256 inputs there.) */
        run_qkv_o(c, types[t], 64, 4, 2, kq ? 256 : 512, 37, 32, true);
        run_qkv_o(c, types[t], 32, 8, 4, 256, 65, 32, false);
        run_qkv_o(c, types[t], 128, 2, 1, 256, 129, 128, t % 2 == 1);
    }
    test_qkv_rejections(c);
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
