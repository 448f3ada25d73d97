/* The Llama model on small GGUF files written here:
 * - a random tiny model (F32 weights, grouped-query attention, partial RoPE) against a
 *   float64 forward written in this file, over a prompt longer than one batch, in prefill
 *   and in decode steps, with logits of every token and of the last;
 * - every rejection of a hostile file (unknown architecture, zero or non-dividing head
 *   counts, missing key or tensor, mis-shaped tensor, vocabulary mismatch, a KV cache
 *   larger than memory) and of a bad forward (position, token id, context), each with
 *   its message;
 * - generation that reaches the end of the context stops and says so.
 * The tokenizer keys come from the default model (the tiny models use its vocabulary). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "wick.h"

enum { DIM = 32, HEADS = 4, KV_HEADS = 2, HD = DIM / HEADS, FF = 48, LAYERS = 2, ROT = 6 };
static const float ROPE_BASE = 10000.0f, EPS = 1e-5f;
static int64_t n_vocab;

typedef enum {
    HOSTILE_NONE,
    HOSTILE_ARCH,
    HOSTILE_ZERO_HEADS,
    HOSTILE_HEADS_NOT_DIVIDING,
    HOSTILE_KV_NOT_DIVIDING,
    HOSTILE_NO_BLOCK_COUNT,
    HOSTILE_MISSING_TENSOR,
    HOSTILE_MISSHAPED_TENSOR,
    HOSTILE_VOCAB_KEY,
    HOSTILE_SMALL_EMBEDDING,
    HOSTILE_UNTIED,
} hostile;

/* ---- a small random model -------------------------------------------------------- */

static uint64_t rng = 0x1234567;
static float frand(void) /* uniform in [-1, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

typedef struct {
    float *embd, *out;  /* [n_vocab][DIM] */
    float *norm_out;    /* [DIM] */
    struct {
        float *an, *fn;                 /* [DIM] */
        float *wq, *wk, *wv, *wo;       /* [out][in] */
        float *gate, *up, *down;
    } l[LAYERS];
} weights;

static float *rand_array(size_t n, float scale, float offset)
{
    float *a = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) a[i] = offset + scale * frand();
    return a;
}

static void make_weights(weights *w)
{
    w->embd = rand_array((size_t)n_vocab * DIM, 1.0f, 0.0f);
    w->out = rand_array((size_t)n_vocab * DIM, 0.3f, 0.0f);
    w->norm_out = rand_array(DIM, 0.2f, 1.0f);
    for (int i = 0; i < LAYERS; i++) {
        w->l[i].an = rand_array(DIM, 0.2f, 1.0f);
        w->l[i].fn = rand_array(DIM, 0.2f, 1.0f);
        w->l[i].wq = rand_array(DIM * DIM, 0.4f, 0.0f);
        w->l[i].wk = rand_array(KV_HEADS * HD * DIM, 0.4f, 0.0f);
        w->l[i].wv = rand_array(KV_HEADS * HD * DIM, 0.4f, 0.0f);
        w->l[i].wo = rand_array(DIM * DIM, 0.2f, 0.0f);
        w->l[i].gate = rand_array(FF * DIM, 0.3f, 0.0f);
        w->l[i].up = rand_array(FF * DIM, 0.3f, 0.0f);
        w->l[i].down = rand_array(DIM * FF, 0.2f, 0.0f);
    }
}

static void free_weights(weights *w)
{
    free(w->embd);
    free(w->out);
    free(w->norm_out);
    for (int i = 0; i < LAYERS; i++) {
        float *a[] = {w->l[i].an, w->l[i].fn, w->l[i].wq, w->l[i].wk, w->l[i].wv,
                      w->l[i].wo, w->l[i].gate, w->l[i].up, w->l[i].down};
        for (size_t j = 0; j < sizeof a / sizeof a[0]; j++) free(a[j]);
    }
}

static void add_f32(wk_gguf_writer *wr, const char *name, const float *data, int64_t ne0, int64_t ne1)
{
    int64_t ne[2] = {ne0, ne1};
    int nd = ne1 > 0 ? 2 : 1;
    size_t n = (size_t)ne0 * (size_t)(ne1 > 0 ? ne1 : 1);
    if (wk_gguf_writer_add_tensor(wr, name, WK_TYPE_F32, nd, ne, data, n * sizeof(float)) != WK_OK)
        fprintf(stderr, "add %s: %s\n", name, wk_last_error());
}

/* Write the tiny model (with one hostile change) to path. */
static int write_model(const wk_gguf *src, const weights *w, hostile h, const char *path)
{
    wk_gguf_writer *wr;
    if (wk_gguf_writer_create(&wr) != WK_OK) return 1;
    for (int64_t i = 0; i < wk_gguf_n_kv(src); i++)
        if (strncmp(wk_gguf_key(src, i), "tokenizer.", 10) == 0) wk_gguf_writer_copy_kv(wr, src, i);
    wk_gguf_writer_set_str(wr, "general.architecture", h == HOSTILE_ARCH ? "gpt2" : "llama");
    if (h != HOSTILE_NO_BLOCK_COUNT) wk_gguf_writer_set_u32(wr, "llama.block_count", LAYERS);
    wk_gguf_writer_set_u32(wr, "llama.context_length", 512);
    wk_gguf_writer_set_u32(wr, "llama.embedding_length", DIM);
    wk_gguf_writer_set_u32(wr, "llama.feed_forward_length", FF);
    wk_gguf_writer_set_u32(wr, "llama.attention.head_count",
                           h == HOSTILE_ZERO_HEADS ? 0 : h == HOSTILE_HEADS_NOT_DIVIDING ? 5 : HEADS);
    wk_gguf_writer_set_u32(wr, "llama.attention.head_count_kv", h == HOSTILE_KV_NOT_DIVIDING ? 3 : KV_HEADS);
    wk_gguf_writer_set_f32(wr, "llama.rope.freq_base", ROPE_BASE);
    wk_gguf_writer_set_u32(wr, "llama.rope.dimension_count", ROT);
    wk_gguf_writer_set_f32(wr, "llama.attention.layer_norm_rms_epsilon", EPS);
    if (h != HOSTILE_SMALL_EMBEDDING)
        wk_gguf_writer_set_u32(wr, "llama.vocab_size", h == HOSTILE_VOCAB_KEY ? 1000 : (uint32_t)n_vocab);

    add_f32(wr, "token_embd.weight", w->embd, DIM, h == HOSTILE_SMALL_EMBEDDING ? 1000 : n_vocab);
    if (h == HOSTILE_UNTIED) add_f32(wr, "output.weight", w->out, DIM, n_vocab);
    add_f32(wr, "output_norm.weight", w->norm_out, DIM, 0);
    for (int i = 0; i < LAYERS; i++) {
        char name[64];
#define ADD(suffix, data, ne0, ne1)                                                                \
    do {                                                                                           \
        snprintf(name, sizeof name, "blk.%d.%s", i, suffix);                                      \
        add_f32(wr, name, data, ne0, ne1);                                                         \
    } while (0)
        ADD("attn_norm.weight", w->l[i].an, DIM, 0);
        ADD("ffn_norm.weight", w->l[i].fn, DIM, 0);
        ADD("attn_q.weight", w->l[i].wq, DIM, DIM);
        if (h == HOSTILE_MISSHAPED_TENSOR && i == 0)
            ADD("attn_k.weight", w->l[i].wq, DIM, DIM);
        else
            ADD("attn_k.weight", w->l[i].wk, DIM, KV_HEADS * HD);
        ADD("attn_v.weight", w->l[i].wv, DIM, KV_HEADS * HD);
        ADD("attn_output.weight", w->l[i].wo, DIM, DIM);
        ADD("ffn_gate.weight", w->l[i].gate, DIM, FF);
        if (!(h == HOSTILE_MISSING_TENSOR && i == 1)) ADD("ffn_up.weight", w->l[i].up, DIM, FF);
        ADD("ffn_down.weight", w->l[i].down, FF, DIM);
#undef ADD
    }
    wk_status st = wk_gguf_writer_write(wr, path);
    if (st != WK_OK) fprintf(stderr, "write %s: %s\n", path, wk_last_error());
    wk_gguf_writer_free(wr);
    return st != WK_OK;
}

/* ---- the float64 reference forward ----------------------------------------------- */

static void ref_rmsnorm(double *y, const double *x, const float *w)
{
    double ss = 0;
    for (int i = 0; i < DIM; i++) ss += x[i] * x[i];
    double s = 1.0 / sqrt(ss / DIM + EPS);
    for (int i = 0; i < DIM; i++) y[i] = x[i] * s * w[i];
}

static void ref_matvec(double *y, const float *w, const double *x, int out, int in)
{
    for (int o = 0; o < out; o++) {
        double s = 0;
        for (int i = 0; i < in; i++) s += (double)w[o * in + i] * x[i];
        y[o] = s;
    }
}

static void ref_rope(double *v, int heads, int pos)
{
    for (int h = 0; h < heads; h++)
        for (int i = 0; i < ROT / 2; i++) {
            double th = pos * pow(ROPE_BASE, -2.0 * i / ROT);
            double *p = v + h * HD + 2 * i, a = p[0], b = p[1];
            p[0] = a * cos(th) - b * sin(th);
            p[1] = a * sin(th) + b * cos(th);
        }
}

/* Logits (n_vocab per token) of tokens[0..n) from position 0, every token. */
static void ref_forward(const weights *w, const int32_t *tokens, int n, double *logits)
{
    int kvd = KV_HEADS * HD;
    double *K = calloc((size_t)LAYERS * n * kvd, sizeof(double));
    double *V = calloc((size_t)LAYERS * n * kvd, sizeof(double));
    double *att = malloc((size_t)n * sizeof(double));
    for (int t = 0; t < n; t++) {
        double x[DIM], xb[DIM], q[DIM], o[DIM], tmp[DIM], g[FF], u[FF];
        for (int i = 0; i < DIM; i++) x[i] = w->embd[(size_t)tokens[t] * DIM + i];
        for (int l = 0; l < LAYERS; l++) {
            double *k = K + ((size_t)l * n + t) * kvd, *v = V + ((size_t)l * n + t) * kvd;
            ref_rmsnorm(xb, x, w->l[l].an);
            ref_matvec(q, w->l[l].wq, xb, DIM, DIM);
            ref_matvec(k, w->l[l].wk, xb, kvd, DIM);
            ref_matvec(v, w->l[l].wv, xb, kvd, DIM);
            ref_rope(q, HEADS, t);
            ref_rope(k, KV_HEADS, t);
            for (int h = 0; h < HEADS; h++) {
                int kh = h / (HEADS / KV_HEADS);
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j <= t; j++) {
                    const double *kj = K + ((size_t)l * n + j) * kvd + kh * HD;
                    double s = 0;
                    for (int d = 0; d < HD; d++) s += q[h * HD + d] * kj[d];
                    att[j] = s / sqrt((double)HD);
                    if (att[j] > mx) mx = att[j];
                }
                for (int j = 0; j <= t; j++) sum += att[j] = exp(att[j] - mx);
                for (int d = 0; d < HD; d++) {
                    double acc = 0;
                    for (int j = 0; j <= t; j++) acc += att[j] * V[((size_t)l * n + j) * kvd + kh * HD + d];
                    o[h * HD + d] = acc / sum;
                }
            }
            ref_matvec(tmp, w->l[l].wo, o, DIM, DIM);
            for (int i = 0; i < DIM; i++) x[i] += tmp[i];
            ref_rmsnorm(xb, x, w->l[l].fn);
            ref_matvec(g, w->l[l].gate, xb, FF, DIM);
            ref_matvec(u, w->l[l].up, xb, FF, DIM);
            for (int i = 0; i < FF; i++) g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
            ref_matvec(tmp, w->l[l].down, g, DIM, FF);
            for (int i = 0; i < DIM; i++) x[i] += tmp[i];
        }
        ref_rmsnorm(xb, x, w->norm_out);
        for (int64_t r = 0; r < n_vocab; r++) {
            double s = 0;
            for (int i = 0; i < DIM; i++) s += (double)w->embd[r * DIM + i] * xb[i];
            logits[(size_t)t * n_vocab + r] = s;
        }
    }
    free(K);
    free(V);
    free(att);
}

static double max_diff(const float *a, const double *b, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

/* ---- the tests --------------------------------------------------------------------- */

static void test_forward_matches_float64(const char *path, const weights *w)
{
    enum { N = 300 }; /* more than one batch of 256, and many attention chunks of 64 */
    int32_t tokens[N];
    for (int i = 0; i < N; i++) tokens[i] = (int32_t)((i * 7919 + 13) % n_vocab);
    double *ref = malloc((size_t)N * n_vocab * sizeof(double));
    ref_forward(w, tokens, N, ref);

    wk_model_options opt;
    wk_model_options_init(&opt);
    opt.form = WK_FORM_F32;
    opt.n_threads = 2;
    wk_model *m;
    CHECK_OK(wk_model_load(path, &opt, &m));
    if (!m) return;
    const wk_model_info *info = wk_model_get_info(m);
    CHECK_EQ_INT(info->n_vocab, n_vocab);
    CHECK_EQ_INT(info->n_kv_heads, KV_HEADS);
    CHECK_EQ_INT(info->n_rot, ROT);
    float *logits = malloc((size_t)N * n_vocab * sizeof(float));
    /* Prefill of N tokens, last logits only. */
    CHECK_OK(wk_model_forward(m, tokens, N, 0, false, logits));
    double d = max_diff(logits, ref + (size_t)(N - 1) * n_vocab, n_vocab);
    CHECK_MSG(d < 1e-3, "prefill of %d tokens: max abs diff %g from float64", N, d);
    /* Every token's logits, in two calls (prefill then the rest at a position). */
    CHECK_OK(wk_model_forward(m, tokens, 10, 0, true, logits));
    CHECK_OK(wk_model_forward(m, tokens + 10, N - 10, 10, true, logits + 10 * n_vocab));
    d = max_diff(logits, ref, (int64_t)N * n_vocab);
    CHECK_MSG(d < 1e-3, "all logits: max abs diff %g from float64", d);
    /* Decode steps: one token at a time, after rewinding to position 5; the greedy forward
     * of the same step gives the id of the largest of those logits (the first of equal). */
    for (int p = 5; p < 12; p++) {
        CHECK_OK(wk_model_forward(m, tokens + p, 1, p, false, logits));
        d = max_diff(logits, ref + (size_t)p * n_vocab, n_vocab);
        CHECK_MSG(d < 1e-3, "decode at %d: max abs diff %g", p, d);
        int32_t best = 0, got = -1;
        for (int i = 1; i < n_vocab; i++)
            if (logits[i] > logits[best]) best = i;
        CHECK_OK(wk_model_forward_greedy(m, tokens + p, 1, p, &got));
        CHECK_EQ_INT(got, best);
    }
    free(logits);
    free(ref);
    wk_model_free(m);
}

static void test_bad_forward_and_context(const char *path)
{
    wk_model_options opt;
    wk_model_options_init(&opt);
    opt.n_ctx = 16;
    wk_model *m;
    CHECK_OK(wk_model_load(path, &opt, &m));
    if (!m) return;
    float *logits = malloc((size_t)n_vocab * sizeof(float));
    int32_t toks[20] = {1, 2, 3};
    int32_t bad[2] = {5, (int32_t)n_vocab};
    CHECK_FAILS(wk_model_forward(m, bad, 2, 0, false, logits), WK_ERR_INVALID, "outside the vocabulary");
    CHECK_FAILS(wk_model_forward(m, toks, 17, 0, false, logits), WK_ERR_INVALID,
                "17 tokens at position 0 do not fit the context of 16");
    CHECK_FAILS(wk_model_forward(m, toks, 1, 3, false, logits), WK_ERR_INVALID,
                "position 3 is not within the 0 tokens");
    CHECK_FAILS(wk_model_forward(m, toks, 0, 0, false, logits), WK_ERR_INVALID, "forward of 0 tokens");
    CHECK_FAILS(wk_model_generate(m, toks, 17, NULL, NULL, NULL, NULL), WK_ERR_INVALID,
                "more than the context of 16");
    /* Generation that reaches the end of the context stops there and says so. */
    wk_generate_options g;
    wk_generate_options_init(&g);
    g.max_tokens = 100;
    g.stop_at_eos = false;
    wk_generate_stats s;
    CHECK_OK(wk_model_generate(m, toks, 3, &g, NULL, NULL, &s));
    CHECK(s.hit_context);
    CHECK_EQ_INT(s.n_decode, 13);
    CHECK_EQ_INT(s.n_generated, 14);
    free(logits);
    wk_model_free(m);
}

/* Greedy decoding one step ahead (the GPU's loop; WICK_DECODE_AHEAD=1 takes it on the CPU)
 * gives the same tokens, stops and statistics as the plain loop: at max_tokens 1, 2 and
 * 20, at the end of the context, when the callback stops, and in a second generation
 * after one that stopped with a step queued past its end. */
typedef struct {
    int32_t ids[128];
    int n, stop_after;
} token_log;

static int log_token(void *user, int32_t token, const char *text, size_t len)
{
    (void)text, (void)len;
    token_log *t = user;
    if (token >= 0 && t->n < 128) t->ids[t->n++] = token;
    return t->stop_after && t->n >= t->stop_after;
}

static void test_decode_ahead(const char *path)
{
    const struct { int64_t max_tokens, n_ctx; int stop_after; } cases[] = {
        {20, 64, 0}, {1, 64, 0}, {2, 64, 0}, {100, 16, 0}, {20, 64, 5}, {3, 6, 0}, {4, 6, 0},
    };
    int32_t prompt[3] = {1, 2, 3};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        wk_model_options mo;
        wk_model_options_init(&mo);
        mo.n_ctx = cases[c].n_ctx;
        wk_model *m;
        CHECK_OK(wk_model_load(path, &mo, &m));
        if (!m) return;
        wk_generate_options g;
        wk_generate_options_init(&g);
        g.max_tokens = cases[c].max_tokens;
        g.stop_at_eos = false;
        token_log runs[2][2];
        wk_generate_stats st[2][2];
        memset(runs, 0, sizeof runs);
        for (int ahead = 0; ahead < 2; ahead++) {
            if (ahead)
                setenv("WICK_DECODE_AHEAD", "1", 1);
            else
                unsetenv("WICK_DECODE_AHEAD");
            for (int rep = 0; rep < 2; rep++) { /* the second after the first's stop */
                runs[ahead][rep].stop_after = cases[c].stop_after;
                CHECK_OK(wk_model_generate(m, prompt, 3, &g, log_token, &runs[ahead][rep], &st[ahead][rep]));
            }
        }
        unsetenv("WICK_DECODE_AHEAD");
        for (int rep = 0; rep < 2; rep++) {
            const token_log *a = &runs[0][rep], *b = &runs[1][rep];
            const wk_generate_stats *sa = &st[0][rep], *sb = &st[1][rep];
            CHECK_MSG(a->n == b->n && memcmp(a->ids, b->ids, sizeof(int32_t) * (size_t)a->n) == 0,
                      "case %zu run %d: %d tokens one step ahead, %d in the plain loop, or different ids", c, rep,
                      b->n, a->n);
            CHECK_MSG(sa->n_generated == sb->n_generated && sa->n_decode == sb->n_decode &&
                          sa->hit_context == sb->hit_context && sa->hit_eos == sb->hit_eos,
                      "case %zu run %d: stats differ (generated %lld/%lld, decode %lld/%lld, context %d/%d)", c,
                      rep, (long long)sa->n_generated, (long long)sb->n_generated, (long long)sa->n_decode,
                      (long long)sb->n_decode, sa->hit_context, sb->hit_context);
        }
        wk_model_free(m);
    }
}

static void test_hostile(const wk_gguf *src, const weights *w, const char *dir)
{
    static const struct {
        hostile h;
        wk_status st;
        const char *msg;
    } cases[] = {
        {HOSTILE_ARCH, WK_ERR_UNSUPPORTED, "architecture 'gpt2' is not supported"},
        {HOSTILE_ZERO_HEADS, WK_ERR_FORMAT, "'llama.attention.head_count' is 0"},
        {HOSTILE_HEADS_NOT_DIVIDING, WK_ERR_FORMAT, "embedding_length 32 is not divisible by head_count 5"},
        {HOSTILE_KV_NOT_DIVIDING, WK_ERR_FORMAT, "head_count 4 is not divisible by head_count_kv 3"},
        {HOSTILE_NO_BLOCK_COUNT, WK_ERR_FORMAT, "missing metadata key 'llama.block_count'"},
        {HOSTILE_MISSING_TENSOR, WK_ERR_FORMAT, "missing tensor 'blk.1.ffn_up.weight'"},
        {HOSTILE_MISSHAPED_TENSOR, WK_ERR_FORMAT,
         "tensor 'blk.0.attn_k.weight' has shape [32, 32, 1, 1], expected [32, 16]"},
        {HOSTILE_VOCAB_KEY, WK_ERR_FORMAT, "'llama.vocab_size' is 1000 but token_embd.weight has"},
        {HOSTILE_SMALL_EMBEDDING, WK_ERR_FORMAT, "token_embd.weight only 1000 rows"},
    };
    char path[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, "%s/hostile-%zu.gguf", dir, i);
        if (write_model(src, w, cases[i].h, path)) {
            CHECK(0);
            continue;
        }
        wk_model *m = (wk_model *)1;
        CHECK_FAILS(wk_model_load(path, NULL, &m), cases[i].st, cases[i].msg);
        CHECK(m == NULL);
        unlink(path);
    }
    /* A KV cache that cannot fit is refused before anything is allocated. */
    snprintf(path, sizeof path, "%s/kv.gguf", dir);
    if (write_model(src, w, HOSTILE_NONE, path) == 0) {
        wk_model_options opt;
        wk_model_options_init(&opt);
        opt.n_ctx = (int64_t)1 << 30;
        wk_model *m;
        CHECK_FAILS(wk_model_load(path, &opt, &m), WK_ERR_NOMEM, "a KV cache of 1073741824 tokens needs");
        opt.n_ctx = -1;
        CHECK_FAILS(wk_model_load(path, &opt, &m), WK_ERR_INVALID, "context length -1 is negative");
        unlink(path);
    }
    wk_model *m;
    CHECK_FAILS(wk_model_load("/nonexistent/model.gguf", NULL, &m), WK_ERR_IO, "/nonexistent/model.gguf");
}

int main(void)
{
    const char *model_path = test_model_path();
    if (!model_path) return 0;
    wk_gguf *src;
    CHECK_OK(wk_gguf_open(model_path, &src));
    if (!src) TEST_MAIN_END();
    uint64_t nv;
    wk_gguf_vtype et;
    CHECK_OK(wk_gguf_get_arr(src, "tokenizer.ggml.tokens", &et, &nv));
    n_vocab = (int64_t)nv;

    char dir[] = "/tmp/wick-test-model-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    weights w;
    make_weights(&w);
    char path[512];
    snprintf(path, sizeof path, "%s/tiny.gguf", dir);
    CHECK(write_model(src, &w, HOSTILE_NONE, path) == 0);
    test_forward_matches_float64(path, &w);
    test_bad_forward_and_context(path);
    test_decode_ahead(path);
    unlink(path);
    /* An untied output projection is used instead of the embedding table. */
    snprintf(path, sizeof path, "%s/untied.gguf", dir);
    if (write_model(src, &w, HOSTILE_UNTIED, path) == 0) {
        wk_model *m;
        CHECK_OK(wk_model_load(path, NULL, &m));
        wk_model_free(m);
        unlink(path);
    }
    test_hostile(src, &w, dir);
    rmdir(dir);
    free_weights(&w);
    wk_gguf_close(src);
    TEST_MAIN_END();
}
