/* The model's operation table on CUDA, with decode steps replayed as CUDA graphs.
 *
 * Operations are not launched at once: each call is recorded, and the list runs when
 * the host needs a result (download, sync, upload, alloc, free). A list that repeats the
 * previous one (same operations, sizes and weights; positions shifted together; each
 * address either fixed or moving by a fixed stride per position, as the new KV-cache
 * rows do) is a decode step: the second time it is seen it is captured as a graph whose
 * kernels read the position from device memory, and from then on one graph launch runs
 * the whole step. Any other list (a prompt, a changed buffer) runs kernel by kernel. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cuda/cuda_engine.h"
#include "model/backend.h"

enum { OP_EMBED, OP_RMSNORM, OP_ROPE, OP_ATTENTION, OP_SILU_MUL, OP_ADD, OP_COPY, OP_MATMUL, OP_ARGMAX };
enum { REC_PTRS = 4, REC_INTS = 6, MAX_RECS = 8192 };

typedef struct rec {
    int op;
    const void *obj;           /* the matmul or the embedding table */
    char *p[REC_PTRS];         /* addresses as given */
    int64_t stride[REC_PTRS];  /* bytes per position (learned), 0 = fixed */
    int64_t i[REC_INTS];       /* sizes */
    float f;                   /* eps or rope base */
    int64_t pos;               /* position argument (rope, attention), else 0 */
    bool has_pos;
} rec;

typedef struct cuda_be {
    rec *list; /* recorded, not yet run */
    int n;
    rec *tmpl; /* the previous list, the graph's template */
    int tn;
    int64_t tpos;     /* its step position */
    bool learned;     /* strides known (the template was seen twice) */
    void *graph;      /* the instantiated graph of the template, once captured */
    int64_t *dpos;    /* device position */
    bool graphs_off;  /* WICK_CUDA_GRAPHS=0 */
    bool attn_o_off;  /* WICK_CUDA_ATTN_O=0: no attention + output projection launches */
    bool attn_qkv_off; /* WICK_CUDA_ATTN_QKV=0: the q/k/v projections not in the attention launch */
    float *o_sum; /* the residual plus the output projection, written by the attention launch (plan_lazy_o) */
    int64_t o_sum_floats;
    long replays, captures, eager_lists;
    wk_cuda_later *later[2]; /* download_later's copies, oldest at later_head */
    void *later_dst[2];
    size_t later_bytes[2];
    int later_head, later_n;
    wk_cuda_timer *timer; /* WICK_CUDA_STEP_TIMES=1: each replay timed on the GPU */
    double replay_ms;
    long timed;
} cuda_be;

static void be_free_state(void *p)
{
    cuda_be *b = p;
    if (!b) return;
    wk_cuda_timer_free(b->timer);
    for (int i = 0; i < 2; i++) wk_cuda_later_free(b->later[i]);
    wk_cuda_graph_free(b->graph);
    wk_cuda_free(b->dpos);
    wk_cuda_free(b->o_sum);
    free(b->list);
    free(b->tmpl);
    free(b);
}

static wk_status be_get(wk_engine *e, cuda_be **out)
{
    wk_cuda_ctx *c = wk_cuda_engine_ctx(e);
    void **slot = wk_cuda_ctx_user(c, be_free_state);
    if (!*slot) {
        cuda_be *b = calloc(1, sizeof *b);
        if (!b) return wk_fail(WK_ERR_NOMEM, "CUDA backend: out of host memory");
        b->list = calloc(MAX_RECS, sizeof(rec));
        b->tmpl = calloc(MAX_RECS, sizeof(rec));
        wk_status st = (!b->list || !b->tmpl) ? wk_fail(WK_ERR_NOMEM, "CUDA backend: out of host memory")
                                              : wk_cuda_malloc(sizeof(int64_t), (void **)&b->dpos);
        if (st) {
            be_free_state(b);
            return st;
        }
        const char *g = getenv("WICK_CUDA_GRAPHS");
        b->graphs_off = g && strcmp(g, "0") == 0;
        const char *ao = getenv("WICK_CUDA_ATTN_O");
        b->attn_o_off = ao && strcmp(ao, "0") == 0;
        const char *aq = getenv("WICK_CUDA_ATTN_QKV");
        b->attn_qkv_off = aq && strcmp(aq, "0") == 0;
        const char *tm = getenv("WICK_CUDA_STEP_TIMES");
        if (tm && strcmp(tm, "1") == 0 && wk_cuda_timer_create(&b->timer) != WK_OK) {
            b->timer = NULL;
            wk_clear_error();
        }
        *slot = b;
    }
    *out = *slot;
    return WK_OK;
}

/* The step position of a list: the first position argument (0 when none). */
static int64_t list_pos(const rec *l, int n)
{
    for (int i = 0; i < n; i++)
        if (l[i].has_pos) return l[i].pos;
    return 0;
}

/* Run one record. With dpos, addresses are base + stride * (*dpos) and positions are
 * relative to the list's position; without, everything is as recorded. */
static void rec_addrs(const rec *r, int64_t P, const int64_t *dpos, wk_dptr a[REC_PTRS])
{
    for (int k = 0; k < REC_PTRS; k++) {
        a[k].base = r->p[k];
        a[k].stride = 0;
        if (dpos && r->stride[k]) {
            a[k].base = r->p[k] - r->stride[k] * P;
            a[k].stride = r->stride[k];
        }
    }
}

static wk_status run_rec(wk_engine *e, const rec *r, int64_t P, const int64_t *dpos)
{
    wk_cuda_ctx *c = wk_cuda_engine_ctx(e);
    wk_dptr a[REC_PTRS];
    rec_addrs(r, P, dpos, a);
    int64_t pos = dpos ? r->pos - P : r->pos;
    const int64_t *dp = dpos;
    switch (r->op) {
    case OP_EMBED: {
        const wk_qtensor *t = r->obj;
        return wk_cuda_embed_rows(c, wk_qtensor_type(t), r->p[2], r->i[1], a[0], r->i[0], a[1], dp);
    }
    case OP_RMSNORM:
        return wk_cuda_rmsnorm(c, a[0], a[1], (const float *)r->p[2], r->i[0], r->i[1], r->f, dp);
    case OP_ROPE:
        return wk_cuda_rope(c, a[0], r->i[0], r->i[1], r->i[2], r->i[3], pos, r->f, dp);
    case OP_ATTENTION:
        return wk_cuda_attention(c, a[0], a[1], (const float *)r->p[2], (const float *)r->p[3],
                                 r->i[0], pos, r->i[1], r->i[2], r->i[3], dp);
    case OP_SILU_MUL: return wk_cuda_silu_mul(c, a[0], a[1], r->i[0], dp);
    case OP_ADD: return wk_cuda_add(c, a[0], a[1], r->i[0], dp);
    case OP_COPY: return wk_cuda_copy_f32(c, a[0], a[1], r->i[0], dp);
    case OP_ARGMAX: return wk_cuda_argmax(c, a[0], r->i[0], a[1], dp);
    case OP_MATMUL:
        return wk_cuda_mm_forward_dyn(e, (wk_qmatmul *)r->obj, a[0], r->i[0], a[1], dp);
    }
    return wk_fail(WK_ERR_INVALID, "CUDA backend: unknown recorded operation %d", r->op);
}

/* Do records a and b (consecutive) multiply the same prepared input (q, k, v; gate, up)? */
static bool same_input(const rec *a, const rec *b)
{
    return a->op == OP_MATMUL && b->op == OP_MATMUL && a->p[0] == b->p[0] &&
           a->stride[0] == b->stride[0] && a->i[0] == b->i[0] && a->i[2] == b->i[2] &&
           wk_cuda_mm_graphable(a->obj) && wk_cuda_mm_graphable(b->obj);
}

/* Does matmul record m take its input from the address that record r writes as slot k? */
static bool feeds_matmul(const rec *r, int k, const rec *m, const int64_t *dpos)
{
    return m->op == OP_MATMUL && m->p[0] == r->p[k] && m->stride[0] == r->stride[k] &&
           m->i[0] > WK_CUDA_QMV_ROWS && wk_cuda_mm_graphable(m->obj) &&
           (dpos || m->i[0] < wk_cuda_qmm_gemm_rows());
}

/* Is the address read by a record after `from` before a matmul overwrites it? A list that
 * ends without overwriting it counts as read (a later list might). */
static bool read_later(const rec *l, int n, int from, const char *addr)
{
    for (int i = from; i < n; i++) {
        const rec *r = &l[i];
        if (r->op == OP_MATMUL) {
            if (r->p[0] == addr) return true;
            if (r->p[1] == addr) return false;
        } else {
            for (int k = 0; k < REC_PTRS; k++)
                if (r->p[k] == addr) return true;
        }
    }
    return true;
}

/* A matrix-vector matmul record (at most WK_CUDA_QMV_ROWS rows, the weight in its format). */
static bool qmv_rec(const rec *r, wk_type *t, const void **w)
{
    return r->op == OP_MATMUL && r->i[0] <= WK_CUDA_QMV_ROWS && r->i[2] % 16 == 0 &&
           wk_cuda_mm_quant_weight(r->obj, t, w);
}

/* Decode-sized work as one matrix-vector job: an optional RMSNorm or silu_mul that makes
 * the input, up to three matmuls of that input with one weight type, then the RoPE of
 * their outputs or the residual add of the last one's result. Returns the records it
 * covers (0: no match). */
static int build_qmv(const rec *l, int n, int i, int64_t P, const int64_t *dpos, wk_cuda_qmv_job *job)
{
    wk_cuda_qmv_job j = {0};
    wk_dptr a[REC_PTRS];
    const rec *r = &l[i];
    int first = i;
    rec_addrs(r, P, dpos, a);
    if (r->op == OP_RMSNORM && i + 1 < n && r->p[0] != r->p[1]) {
        const rec *mm = &l[i + 1];
        if (mm->op != OP_MATMUL || mm->p[0] != r->p[0] || mm->stride[0] != r->stride[0] ||
            mm->i[0] != r->i[0] || mm->i[2] != r->i[1])
            return 0;
        j.src = WK_QMV_RMSNORM;
        j.x = a[1];
        j.norm_out = a[0];
        j.norm_w = (const float *)r->p[2];
        j.eps = r->f;
        first = i + 1;
    } else if (r->op == OP_SILU_MUL && i + 1 < n) {
        const rec *mm = &l[i + 1];
        if (mm->op != OP_MATMUL || mm->p[0] != r->p[0] || mm->stride[0] != r->stride[0] ||
            mm->i[0] * mm->i[2] != r->i[0] || read_later(l, n, i + 2, r->p[0]))
            return 0;
        j.src = WK_QMV_SILU_MUL;
        j.x = a[0];
        j.x2 = a[1];
        first = i + 1;
    } else if (r->op == OP_MATMUL) {
        j.src = WK_QMV_INPUT;
        j.x = a[0];
        j.xtype = WK_TYPE_F32;
    } else {
        return 0;
    }
    const rec *m0 = &l[first];
    if (!qmv_rec(m0, &j.wtype, &j.out[0].w)) return 0;
    j.k = m0->i[2];
    j.m = m0->i[0];
    j.dpos = dpos;
    int end = first;
    while (end < n && j.nout < 3) {
        const rec *mm = &l[end];
        wk_type t = j.wtype;
        const void *w = j.out[0].w;
        if (end > first && !(qmv_rec(mm, &t, &w) && t == j.wtype && mm->p[0] == m0->p[0] &&
                             mm->stride[0] == m0->stride[0] && mm->i[0] == j.m && mm->i[2] == j.k))
            break;
        wk_dptr ma[REC_PTRS];
        rec_addrs(mm, P, dpos, ma);
        j.out[j.nout].w = w;
        j.out[j.nout].n = mm->i[1];
        j.out[j.nout].y = ma[1];
        j.nout++;
        end++;
    }
    /* RoPE of outputs (q, k) right after the group: in the epilogue. */
    while (end < n && l[end].op == OP_ROPE) {
        const rec *ro = &l[end];
        int o = -1;
        for (int q = 0; q < j.nout; q++)
            if (ro->p[0] == l[first + q].p[1] && ro->stride[0] == l[first + q].stride[1] &&
                j.out[q].rope_head_dim == 0)
                o = q;
        if (o < 0 || ro->i[0] != j.m || ro->i[1] * ro->i[2] != j.out[o].n || ro->i[2] % 2 ||
            ro->i[3] % 2 || ro->i[3] > ro->i[2])
            break;
        j.out[o].rope_head_dim = ro->i[2];
        j.out[o].rope_n_rot = ro->i[3];
        j.out[o].rope_pos = dpos ? ro->pos - P : ro->pos;
        j.out[o].rope_base = ro->f;
        end++;
    }
    const rec *last = &l[end - 1];
    if (last->op == OP_MATMUL && end < n && l[end].op == OP_ADD && l[end].p[1] == last->p[1] &&
        l[end].stride[1] == last->stride[1] && l[end].i[0] == last->i[0] * last->i[1]) {
        wk_dptr aa[REC_PTRS];
        rec_addrs(&l[end], P, dpos, aa);
        j.out[j.nout - 1].add = aa[0];
        end++;
    }
    *job = j;
    return end - i;
}

static int try_qmv(wk_engine *e, const rec *l, int n, int i, int64_t P, const int64_t *dpos, wk_status *st)
{
    wk_cuda_qmv_job j;
    const int used = build_qmv(l, n, i, P, dpos, &j);
    if (used) *st = wk_cuda_qmv(wk_cuda_engine_ctx(e), &j);
    return used;
}

/* The backend state (made by be_get before any list runs). */
static cuda_be *b_of(wk_engine *e) { return *wk_cuda_ctx_user(wk_cuda_engine_ctx(e), be_free_state); }

/* A decode step's attention, output projection and residual add, then the MLP's RMSNorm
 * (+ gate, up) of that residual and, after the SiLU-gated product, the down projection
 * added to it: the attention launch also computes each head's share of the output
 * projection and writes residual + shares to a sum buffer (wk_cuda_attention_o, its
 * blocks one cluster), the RMSNorm launch reads that sum, and the down projection's
 * launch adds its result to it into the residual. One launch fewer per layer, and the residual is written
 * once. Matched only in exactly that shape (records a .. a+2 and two matrix-vector jobs
 * after them, nothing else touching the residual or the projection's output). */
typedef struct lazy_o {
    int end;                    /* the record after the two jobs */
    wk_cuda_qmv_job norm, down; /* the jobs, reading the sum */
    wk_cuda_o_sum sum;          /* the attention launch's sum of the residual and the parts */
    wk_type wtype;              /* the output projection */
    const void *w;
    int64_t n_out;
} lazy_o;

static bool plan_lazy_o(const rec *l, int n, int a, int64_t P, const int64_t *dpos, float *sum,
                        int64_t sum_floats, lazy_o *z)
{
    const rec *at = &l[a];
    if (at->op != OP_ATTENTION || at->i[0] != 1 || a + 3 >= n) return false;
    const rec *mo = &l[a + 1], *ad = &l[a + 2];
    wk_type t;
    const void *w;
    if (!qmv_rec(mo, &t, &w) || mo->i[0] != 1 || mo->p[0] != at->p[0] || mo->stride[0] != at->stride[0] ||
        mo->i[2] != at->i[1] * at->i[3])
        return false;
    /* A packed weight: the matrix-vector launch reads it faster than the attention launch
     * reads rows (H200, default model, 255 steps: all packed 139.5 ms, the q/k/v and
     * output projections in rows in the attention launch 152 ms). */
    if (wk_cuda_is_packed(t)) return false;
    if (ad->op != OP_ADD || ad->p[1] != mo->p[1] || ad->stride[1] != mo->stride[1] || ad->i[0] != mo->i[1])
        return false;
    const int64_t n_out = mo->i[1];
    if (!sum || sum_floats < n_out || n_out % 4) return false;
    z->wtype = t;
    z->w = w;
    z->n_out = n_out;
    wk_dptr aa[REC_PTRS];
    rec_addrs(at, P, dpos, aa);
    if (!wk_cuda_attention_o_fits(t, w, n_out, at->i[1], aa[1], (const float *)at->p[2], (const float *)at->p[3],
                                  at->i[2], at->i[3]))
        return false;
    const char *X = ad->p[0], *O = mo->p[1];
    /* The RMSNorm job (from record a + 3): reads the residual, writes something else. */
    const rec *nr = &l[a + 3];
    const int u1 = build_qmv(l, n, a + 3, P, dpos, &z->norm);
    if (!u1 || z->norm.src != WK_QMV_RMSNORM || nr->p[1] != X || nr->stride[1] != ad->stride[0] ||
        nr->p[0] == X || z->norm.m != 1 || nr->i[1] != n_out)
        return false;
    /* The down job: its last output added to the residual, ending right there. */
    const int down_at = a + 3 + u1;
    const int u2 = down_at < n ? build_qmv(l, n, down_at, P, dpos, &z->down) : 0;
    z->end = down_at + u2;
    if (!u2 || z->down.m != 1 || l[z->end - 1].op != OP_ADD || l[z->end - 1].p[0] != X ||
        l[z->end - 1].stride[0] != ad->stride[0] || l[z->end - 1].i[0] != n_out)
        return false;
    /* Nothing between reads or writes the residual but those two, nor reads the
     * projection's output (which is no longer written) before it is overwritten. */
    for (int i = a + 4; i < z->end - 1; i++)
        for (int k = 0; k < REC_PTRS; k++)
            if (l[i].p[k] == X) return false;
    if (O == X || (nr->p[0] != O && read_later(l, n, a + 3, O))) return false;
    if (z->norm.out[z->norm.nout - 1].add.base) return false;
    /* The attention launch leaves residual + projection in the sum; the RMSNorm reads it
     * there and the down projection adds its result to it into the residual. */
    z->sum.resid = z->norm.x;
    z->sum.out = sum;
    z->norm.x = (wk_dptr){sum, 0};
    z->down.add_from = sum;
    return true;
}

/* Is there room for the sum of residual and output projection after attention record a
 * (one row of the projection's n_out)? Grown only outside capture (may_grow): a captured
 * graph keeps the address it saw. */
static bool o_sum_for(wk_engine *e, cuda_be *b, const rec *l, int n, int a, bool may_grow)
{
    if (b->attn_o_off || a + 1 >= n || l[a + 1].op != OP_MATMUL) return false;
    const int64_t need = l[a + 1].i[1];
    if (need <= b->o_sum_floats) return true;
    if (!may_grow) return false;
    wk_cuda_ctx_sync(wk_cuda_engine_ctx(e));
    wk_cuda_free(b->o_sum);
    b->o_sum = NULL;
    b->o_sum_floats = 0;
    if (wk_cuda_malloc((size_t)need * sizeof(float), (void **)&b->o_sum) != WK_OK) {
        wk_clear_error();
        return false;
    }
    b->o_sum_floats = need;
    return true;
}

/* A decode step's RMSNorm, q/k/v projections and RoPE in the attention launch as well
 * (wk_cuda_attention_qkv_o): matched when the job at record i is exactly that (one row,
 * three matmuls of one weight type, q and k rotated alike, no add), the next record is
 * the attention of that q, the attention takes the output projection (plan_lazy_o) in the
 * same weight type, and the kernel fits. One launch fewer per layer, and q stays in the
 * heads' shared memory. */
static bool plan_qkv(wk_engine *e, const rec *l, int n, int i, int64_t P, const int64_t *dpos, lazy_o *z,
                     wk_cuda_att_qkv *qkv, int *att)
{
    cuda_be *b = b_of(e);
    wk_cuda_qmv_job j;
    if (b->attn_qkv_off || l[i].op != OP_RMSNORM) return false;
    const int used = build_qmv(l, n, i, P, dpos, &j);
    const int a = i + used;
    if (!used || a >= n || j.src != WK_QMV_RMSNORM || j.m != 1 || j.nout != 3) return false;
    const wk_cuda_qmv_out *oq = &j.out[0], *ok = &j.out[1], *ov = &j.out[2];
    const rec *at = &l[a], *rq = &l[i + 1];
    if (!oq->rope_head_dim || ok->rope_head_dim != oq->rope_head_dim || ov->rope_head_dim ||
        ok->rope_n_rot != oq->rope_n_rot || ok->rope_pos != oq->rope_pos || ok->rope_base != oq->rope_base ||
        oq->add.base || ok->add.base || ov->add.base)
        return false;
    if (at->op != OP_ATTENTION || at->i[0] != 1 || at->p[1] != rq->p[1] || at->stride[1] != rq->stride[1] ||
        at->i[3] != oq->rope_head_dim || oq->n != at->i[1] * at->i[3] || ok->n != at->i[2] * at->i[3] ||
        ov->n != ok->n)
        return false;
    if (!o_sum_for(e, b, l, n, a, !dpos) || !plan_lazy_o(l, n, a, P, dpos, b->o_sum, b->o_sum_floats, z))
        return false;
    if (z->wtype != j.wtype || z->n_out != j.k) return false; /* packed weights never get here */
    *qkv = (wk_cuda_att_qkv){.wq = oq->w, .wk = ok->w, .wv = ov->w, .x = j.x, .norm_out = j.norm_out,
                             .k_new = ok->y, .v_new = ov->y, .norm_w = j.norm_w, .eps = j.eps,
                             .n_rot = oq->rope_n_rot, .rope_pos = oq->rope_pos, .rope_base = oq->rope_base};
    wk_dptr aa[REC_PTRS];
    rec_addrs(at, P, dpos, aa);
    *att = a;
    return wk_cuda_attention_qkv_o_fits(z->wtype, z->w, z->n_out, at->i[1], aa[1], (const float *)at->p[2],
                                        (const float *)at->p[3], at->i[2], at->i[3], qkv);
}

/* Run a list, fusing where the next operation allows it:
 * - rmsnorm, or silu_mul, whose output is the next quantized matmul's input: one kernel
 *   computes it and prepares it as that matmul's input;
 * - a quantized matmul whose output is then added to the residual: the add happens in
 *   the matmul's kernel;
 * - consecutive matmuls of one input (q, k, v; gate, up) prepare it once;
 * - with at most WK_CUDA_QMV_ROWS rows (decode), all of that is one matrix-vector launch
 *   (try_qmv), the RoPE of q and k included;
 * - a decode step's attention also computes the output projection (plan_lazy_o), and
 *   the RMSNorm, q/k/v projections and RoPE before it (plan_qkv). */
static wk_status run_list(wk_engine *e, const rec *l, int n, int64_t P, const int64_t *dpos)
{
    wk_cuda_ctx *c = wk_cuda_engine_ctx(e);
    cuda_be *b = b_of(e);
    for (int i = 0; i < n; i++) {
        const rec *r = &l[i], *next = i + 1 < n ? &l[i + 1] : NULL;
        wk_dptr a[REC_PTRS];
        rec_addrs(r, P, dpos, a);
        wk_status st = WK_OK;
        lazy_o z;
        wk_cuda_att_qkv qkv;
        int at = i; /* the attention record */
        const bool with_qkv = r->op == OP_RMSNORM && plan_qkv(e, l, n, i, P, dpos, &z, &qkv, &at);
        if (with_qkv || (r->op == OP_ATTENTION && r->i[0] == 1 && o_sum_for(e, b, l, n, i, !dpos) &&
                         plan_lazy_o(l, n, i, P, dpos, b->o_sum, b->o_sum_floats, &z))) {
            const rec *ar = &l[at];
            wk_dptr aa[REC_PTRS];
            rec_addrs(ar, P, dpos, aa);
            const int64_t pos = dpos ? ar->pos - P : ar->pos;
            const float *kc = (const float *)ar->p[2], *vc = (const float *)ar->p[3];
            st = with_qkv ? wk_cuda_attention_qkv_o(c, aa[0], aa[1], kc, vc, pos, ar->i[1], ar->i[2], ar->i[3], dpos,
                                                    z.wtype, z.w, z.n_out, z.sum, &qkv)
                          : wk_cuda_attention_o(c, aa[0], aa[1], kc, vc, pos, ar->i[1], ar->i[2], ar->i[3], dpos,
                                                z.wtype, z.w, z.n_out, NULL, z.sum);
            if (!st) st = wk_cuda_qmv(c, &z.norm);
            if (!st) st = wk_cuda_qmv(c, &z.down);
            if (st) return st;
            i = z.end - 1;
            continue;
        }
        int used = try_qmv(e, l, n, i, P, dpos, &st);
        if (used) {
            if (st) return st;
            i += used - 1;
            continue;
        }
        if (r->op == OP_RMSNORM && next && feeds_matmul(r, 0, next, dpos) &&
            next->i[0] == r->i[0] && next->i[2] == r->i[1]) {
            st = wk_cuda_qmm_prepare_rmsnorm(c, a[0], a[1], (const float *)r->p[2], r->i[0], r->i[1],
                                             r->f, dpos);
        } else if (r->op == OP_SILU_MUL && next && feeds_matmul(r, 0, next, dpos) &&
                   next->i[0] * next->i[2] == r->i[0]) {
            st = wk_cuda_qmm_prepare_silu_mul(c, a[0], a[1], next->i[0], next->i[2], dpos);
        } else if (r->op == OP_MATMUL && next && next->op == OP_ADD && next->p[1] == r->p[1] &&
                   next->stride[1] == r->stride[1] && next->i[0] == r->i[0] * r->i[1] &&
                   wk_cuda_mm_graphable(r->obj)) {
            if (i > 0 && same_input(&l[i - 1], r)) wk_cuda_qmm_reuse_input(c);
            wk_dptr acc[REC_PTRS];
            rec_addrs(next, P, dpos, acc);
            wk_cuda_qmm_add_to(c, acc[0]);
            st = run_rec(e, r, P, dpos);
            i++; /* the add is done */
        } else {
            if (i > 0 && same_input(&l[i - 1], r)) wk_cuda_qmm_reuse_input(c);
            st = run_rec(e, r, P, dpos);
        }
        if (st) return st;
    }
    return WK_OK;
}

static wk_status run_eager(wk_engine *e, const rec *l, int n) { return run_list(e, l, n, 0, NULL); }

/* Does list l (at position P) repeat the template? Learns the strides the first time. */
static bool list_matches(cuda_be *b, const rec *l, int n, int64_t P)
{
    if (n != b->tn || n == 0) return false;
    int64_t dP = P - b->tpos;
    for (int i = 0; i < n; i++) {
        const rec *x = &l[i], *t = &b->tmpl[i];
        if (x->op != t->op || x->obj != t->obj || x->f != t->f || x->has_pos != t->has_pos)
            return false;
        if (memcmp(x->i, t->i, sizeof x->i) != 0) return false;
        if (x->has_pos && x->pos - P != t->pos - b->tpos) return false;
        if (x->op == OP_MATMUL && !wk_cuda_mm_graphable(x->obj)) return false;
        for (int k = 0; k < REC_PTRS; k++) {
            int64_t diff = (int64_t)(x->p[k] - t->p[k]);
            /* Tables, norm weights and the KV-cache bases are read at fixed addresses. */
            bool fixed_slot = k >= 2 && (x->op == OP_EMBED || x->op == OP_RMSNORM ||
                                         x->op == OP_ATTENTION);
            if (fixed_slot && diff != 0) return false;
            if (b->learned) {
                if (diff != t->stride[k] * dP) return false;
            } else if (diff != 0 && (dP == 0 || diff % dP != 0)) {
                return false;
            }
        }
    }
    return true;
}

static wk_status flush(wk_engine *e)
{
    cuda_be *b = NULL;
    wk_status st = be_get(e, &b);
    if (st || b->n == 0) return st;
    wk_cuda_ctx *c = wk_cuda_engine_ctx(e);
    int n = b->n;
    b->n = 0;
    int64_t P = list_pos(b->list, n);
    if (!b->graphs_off && list_matches(b, b->list, n, P)) {
        if (!b->learned) {
            int64_t dP = P - b->tpos;
            for (int i = 0; i < n; i++)
                for (int k = 0; k < REC_PTRS; k++) {
                    int64_t diff = (int64_t)(b->list[i].p[k] - b->tmpl[i].p[k]);
                    b->tmpl[i].stride[k] = dP ? diff / dP : 0;
                }
            b->learned = true;
        }
        if (!b->graph) {
            /* Capture the template (addresses as base + stride * position). */
            st = wk_cuda_capture_begin(c);
            if (!st) st = run_list(e, b->tmpl, n, b->tpos, b->dpos);
            if (st) {
                wk_cuda_capture_abort(c);
                b->graphs_off = true; /* this model cannot be captured: run eagerly */
                wk_clear_error();
            } else {
                st = wk_cuda_capture_end(c, &b->graph);
                if (st) {
                    b->graphs_off = true;
                    wk_clear_error();
                } else {
                    b->captures++;
                }
            }
        }
        if (b->graph) {
            if (b->timer) st = wk_cuda_timer_start(c, b->timer);
            if (!st) st = wk_cuda_set_pos(c, b->dpos, P);
            if (!st) st = wk_cuda_graph_launch(c, b->graph);
            if (!st && b->timer) { /* waits for the step: for measuring only */
                float ms = 0.f;
                st = wk_cuda_timer_stop(c, b->timer, &ms);
                b->replay_ms += ms;
                b->timed++;
            }
            b->replays++;
            return st;
        }
    }
    /* A new kind of list: run it and keep it as the template. */
    b->eager_lists++;
    st = run_eager(e, b->list, n);
    if (!b->graphs_off) {
        wk_cuda_graph_free(b->graph);
        b->graph = NULL;
        b->learned = false;
        memcpy(b->tmpl, b->list, (size_t)n * sizeof(rec));
        for (int i = 0; i < n; i++) memset(b->tmpl[i].stride, 0, sizeof b->tmpl[i].stride);
        b->tn = n;
        b->tpos = P;
    }
    return st;
}

static wk_status push(wk_engine *e, const rec *r)
{
    cuda_be *b = NULL;
    wk_status st = be_get(e, &b);
    if (st) return st;
    if (b->n == MAX_RECS) {
        /* Too long for one step: run what is there; no graph for such lists. */
        int n = b->n;
        b->n = 0;
        b->tn = 0;
        st = run_eager(e, b->list, n);
        if (st) return st;
    }
    b->list[b->n++] = *r;
    return WK_OK;
}

/* ---- the table ------------------------------------------------------------------- */
static wk_status be_alloc(wk_engine *e, size_t nbytes, void **out)
{
    wk_status st = flush(e);
    if (st) return st;
    return wk_cuda_malloc(nbytes, out);
}

static void be_free(wk_engine *e, void *p)
{
    flush(e);
    wk_cuda_ctx_sync(wk_cuda_engine_ctx(e));
    wk_cuda_free(p);
}

static wk_status be_upload(wk_engine *e, void *dst, const void *src, size_t nbytes)
{
    wk_status st = flush(e);
    if (st) return st;
    return wk_cuda_copy_h2d(wk_cuda_engine_ctx(e), dst, src, nbytes);
}

static wk_status be_download(wk_engine *e, void *dst, const void *src, size_t nbytes)
{
    wk_status st = flush(e);
    if (st) return st;
    return wk_cuda_copy_d2h(wk_cuda_engine_ctx(e), dst, src, nbytes);
}

static wk_status be_download_later(wk_engine *e, void *dst, const void *src, size_t nbytes)
{
    cuda_be *b = NULL;
    wk_status st = be_get(e, &b);
    if (st) return st;
    if (b->later_n == 2) return wk_fail(WK_ERR_INVALID, "CUDA: two copies back are queued already");
    const int slot = (b->later_head + b->later_n) % 2;
    if (!b->later[slot] && (st = wk_cuda_later_create(64, &b->later[slot]))) return st;
    if ((st = flush(e))) return st;
    if ((st = wk_cuda_later_start(wk_cuda_engine_ctx(e), b->later[slot], src, nbytes))) return st;
    b->later_dst[slot] = dst;
    b->later_bytes[slot] = nbytes;
    b->later_n++;
    return WK_OK;
}

static wk_status be_collect(wk_engine *e)
{
    cuda_be *b = NULL;
    wk_status st = be_get(e, &b);
    if (st) return st;
    if (b->later_n == 0) return wk_fail(WK_ERR_INVALID, "CUDA: no copy back is queued");
    const int slot = b->later_head;
    b->later_head = (slot + 1) % 2;
    b->later_n--;
    return wk_cuda_later_finish(b->later[slot], b->later_dst[slot], b->later_bytes[slot]);
}

static wk_status be_sync(wk_engine *e)
{
    wk_status st = flush(e);
    if (st) return st;
    return wk_cuda_ctx_sync(wk_cuda_engine_ctx(e));
}

static wk_status be_embed_rows(wk_engine *e, const wk_qtensor *table, const int32_t *ids,
                               int64_t rows, float *x)
{
    if (wk_qtensor_device(table) != WK_DEVICE_CUDA)
        return wk_fail(WK_ERR_INVALID, "CUDA embedding: the table is not on the GPU");
    rec r = {.op = OP_EMBED, .obj = table};
    r.p[0] = (char *)ids;
    r.p[1] = (char *)x;
    r.p[2] = (char *)((const struct wk_qtensor *)table)->data;
    r.i[0] = rows;
    r.i[1] = wk_qtensor_dim(table, 1);
    return push(e, &r);
}

static wk_status be_rmsnorm(wk_engine *e, float *y, const float *x, const float *w, int64_t rows,
                            int64_t dim, float eps)
{
    rec r = {.op = OP_RMSNORM, .f = eps};
    r.p[0] = (char *)y;
    r.p[1] = (char *)x;
    r.p[2] = (char *)w;
    r.i[0] = rows;
    r.i[1] = dim;
    return push(e, &r);
}

static wk_status be_rope(wk_engine *e, float *x, int64_t rows, int64_t n_heads, int64_t head_dim,
                         int64_t n_rot, int64_t pos0, float freq_base)
{
    rec r = {.op = OP_ROPE, .f = freq_base, .pos = pos0, .has_pos = true};
    r.p[0] = (char *)x;
    r.i[0] = rows;
    r.i[1] = n_heads;
    r.i[2] = head_dim;
    r.i[3] = n_rot;
    return push(e, &r);
}

static wk_status be_attention(wk_engine *e, float *out, const float *q, const float *k_cache,
                              const float *v_cache, int64_t rows, int64_t pos0, int64_t n_heads,
                              int64_t n_kv_heads, int64_t head_dim)
{
    rec r = {.op = OP_ATTENTION, .pos = pos0, .has_pos = true};
    r.p[0] = (char *)out;
    r.p[1] = (char *)q;
    r.p[2] = (char *)k_cache;
    r.p[3] = (char *)v_cache;
    r.i[0] = rows;
    r.i[1] = n_heads;
    r.i[2] = n_kv_heads;
    r.i[3] = head_dim;
    return push(e, &r);
}

static wk_status be_silu_mul(wk_engine *e, float *gate, const float *up, int64_t n)
{
    rec r = {.op = OP_SILU_MUL};
    r.p[0] = (char *)gate;
    r.p[1] = (char *)up;
    r.i[0] = n;
    return push(e, &r);
}

static wk_status be_add(wk_engine *e, float *y, const float *x, int64_t n)
{
    rec r = {.op = OP_ADD};
    r.p[0] = (char *)y;
    r.p[1] = (char *)x;
    r.i[0] = n;
    return push(e, &r);
}

static wk_status be_copy(wk_engine *e, float *dst, const float *src, int64_t n)
{
    rec r = {.op = OP_COPY};
    r.p[0] = (char *)dst;
    r.p[1] = (char *)src;
    r.i[0] = n;
    return push(e, &r);
}

static wk_status be_argmax(wk_engine *e, const float *x, int64_t n, int32_t *out)
{
    rec r = {.op = OP_ARGMAX};
    r.p[0] = (char *)x;
    r.p[1] = (char *)out;
    r.i[0] = n;
    return push(e, &r);
}

static wk_status be_matmul(wk_engine *e, wk_qmatmul *mm, const float *x, int64_t m, float *y)
{
    if (wk_engine_device(e) != WK_DEVICE_CUDA || !mm)
        return wk_fail(WK_ERR_INVALID, "CUDA matmul: not a CUDA engine's matmul");
    rec r = {.op = OP_MATMUL, .obj = mm};
    r.p[0] = (char *)x;
    r.p[1] = (char *)y;
    r.i[0] = m;
    r.i[1] = wk_qmatmul_n(mm);
    r.i[2] = wk_qmatmul_k(mm);
    return push(e, &r);
}

const wk_backend wk_cuda_backend = {
    .device = WK_DEVICE_CUDA,
    .alloc = be_alloc,
    .free = be_free,
    .upload = be_upload,
    .download = be_download,
    .sync = be_sync,
    .embed_rows = be_embed_rows,
    .rmsnorm = be_rmsnorm,
    .rope = be_rope,
    .attention = be_attention,
    .silu_mul = be_silu_mul,
    .add = be_add,
    .copy = be_copy,
    .argmax = be_argmax,
    .matmul = be_matmul,
    .download_later = be_download_later,
    .collect = be_collect,
};

/* Counters for tests and the benchmark: lists replayed as graphs, captured, run eagerly,
 * and with WICK_CUDA_STEP_TIMES=1 the mean GPU time of a replayed step (else 0). */
void wk_cuda_backend_stats(wk_engine *e, long *replays, long *captures, long *eager, double *step_us)
{
    cuda_be *b = NULL;
    if (be_get(e, &b)) {
        *replays = *captures = *eager = 0;
        *step_us = 0.0;
        return;
    }
    *replays = b->replays;
    *captures = b->captures;
    *eager = b->eager_lists;
    *step_us = b->timed ? 1000.0 * b->replay_ms / (double)b->timed : 0.0;
}
