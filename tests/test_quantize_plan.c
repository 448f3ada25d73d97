/* The quantize plan: which tensor gets which type, for single types and the mixes,
 * on a model shaped like the default one (576-wide rows, 30 layers, tied embedding)
 * and on one with 256-multiple rows and its own output.weight. */
#include "check.h"
#include "quant/quantize_plan.h"
#include "wick.h"

enum { N_LAYER = 30, MAX_T = 300 };

typedef struct {
    wk_quant_tensor t[MAX_T];
    char names[MAX_T][48];
    int n;
} model;

static void add(model *m, const char *name, int n_dims, int64_t ne0, int64_t ne1, wk_type type)
{
    wk_quant_tensor *t = &m->t[m->n];
    snprintf(m->names[m->n], sizeof m->names[0], "%s", name);
    memset(t, 0, sizeof *t);
    t->name = m->names[m->n];
    t->n_dims = n_dims;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->ne[2] = t->ne[3] = 1;
    t->type = type;
    m->n++;
}

/* Shaped like a Llama: embd wide rows, ff the feed-forward width. */
static void make_llama(model *m, int64_t embd, int64_t ff, bool with_output)
{
    char name[48];
    m->n = 0;
    add(m, "token_embd.weight", 2, embd, 49152, WK_TYPE_Q8_0);
    /* layers listed out of order: the mixes must count in llama.cpp's order */
    for (int l = N_LAYER - 1; l >= 0; l--) {
        static const struct { const char *s; int out_ff, in_ff; } w[] = {
            {"attn_q", 0, 0}, {"attn_k", 0, 0}, {"attn_v", 0, 0}, {"attn_output", 0, 0},
            {"ffn_gate", 1, 0}, {"ffn_up", 1, 0}, {"ffn_down", 0, 1},
        };
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, w[i].s);
            add(m, name, 2, w[i].in_ff ? ff : embd, w[i].out_ff ? ff : embd, WK_TYPE_Q4_1);
        }
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", l);
        add(m, name, 1, embd, 1, WK_TYPE_F32);
    }
    add(m, "output_norm.weight", 1, embd, 1, WK_TYPE_F32);
    add(m, "rope_freqs.weight", 1, 32, 1, WK_TYPE_F32);
    if (with_output) add(m, "output.weight", 2, embd, 49152, WK_TYPE_Q4_1);
}

static const wk_quant_tensor *find(const model *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->t[i].name, name) == 0) return &m->t[i];
    return NULL;
}

static wk_type target_of(const model *m, const char *fmt, int layer)
{
    char name[48];
    snprintf(name, sizeof name, fmt, layer);
    const wk_quant_tensor *t = find(m, name);
    return t ? t->target : (wk_type)-1;
}

static void plan(model *m, const char *req_name)
{
    wk_quant_request req;
    CHECK_OK(wk_quant_request_parse(req_name, &req));
    CHECK_OK(wk_quant_plan(&req, m->t, m->n, N_LAYER));
}

int main(void)
{
    static model m;
    /* layers with more bits for 30 layers: 0-2, 26-29 and every third from 5 */
    const int more[] = {0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 26, 27, 28, 29};
    bool is_more[N_LAYER] = {false};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) is_more[more[i]] = true;
    for (int l = 0; l < N_LAYER; l++)
        CHECK_MSG(wk_quant_use_more_bits(l, N_LAYER) == is_more[l], "layer %d", l);

    /* fallback table */
    CHECK_EQ_INT(wk_quant_fallback(WK_TYPE_Q4_K, 576), WK_TYPE_Q5_0);
    CHECK_EQ_INT(wk_quant_fallback(WK_TYPE_Q5_K, 576), WK_TYPE_Q5_1);
    CHECK_EQ_INT(wk_quant_fallback(WK_TYPE_Q6_K, 576), WK_TYPE_Q8_0);
    CHECK_EQ_INT(wk_quant_fallback(WK_TYPE_Q2_K, 576), WK_TYPE_Q4_0);
    CHECK_EQ_INT(wk_quant_fallback(WK_TYPE_Q3_K, 576), WK_TYPE_Q4_0);
    CHECK_EQ_INT(wk_quant_fallback(WK_TYPE_Q8_K, 576), WK_TYPE_Q8_0);
    CHECK_EQ_INT(wk_quant_fallback(WK_TYPE_Q4_K, 1536), WK_TYPE_Q4_K);
    CHECK_EQ_INT(wk_quant_fallback(WK_TYPE_Q4_K, 100), WK_TYPE_F16);
    CHECK_EQ_INT(wk_quant_fallback(WK_TYPE_Q4_0, 100), WK_TYPE_F16);

    /* the default model's shape, q4_k_m */
    make_llama(&m, 576, 1536, false);
    plan(&m, "q4_k_m");
    CHECK_EQ_INT(find(&m, "token_embd.weight")->target, WK_TYPE_Q8_0); /* tied, 576 % 256 */
    for (int l = 0; l < N_LAYER; l++) {
        CHECK_EQ_INT(target_of(&m, "blk.%d.attn_q.weight", l), WK_TYPE_Q5_0);
        CHECK_EQ_INT(target_of(&m, "blk.%d.ffn_up.weight", l), WK_TYPE_Q5_0);
        CHECK_EQ_INT(target_of(&m, "blk.%d.attn_v.weight", l), is_more[l] ? WK_TYPE_Q8_0 : WK_TYPE_Q5_0);
        CHECK_EQ_INT(target_of(&m, "blk.%d.ffn_down.weight", l), is_more[l] ? WK_TYPE_Q6_K : WK_TYPE_Q4_K);
        CHECK_EQ_INT(target_of(&m, "blk.%d.attn_norm.weight", l), WK_TYPE_F32);
    }
    CHECK(!find(&m, "output_norm.weight")->is_weight);
    CHECK(!find(&m, "rope_freqs.weight")->is_weight);
    CHECK_EQ_INT(find(&m, "blk.3.attn_v.weight")->preferred, WK_TYPE_Q4_K);
    CHECK_EQ_INT(find(&m, "blk.5.attn_v.weight")->preferred, WK_TYPE_Q6_K);

    /* q5_k_m: Q5_K falls back to Q5_1 on 576-wide rows */
    plan(&m, "q5_k_m");
    CHECK_EQ_INT(target_of(&m, "blk.%d.attn_q.weight", 4), WK_TYPE_Q5_1);
    CHECK_EQ_INT(target_of(&m, "blk.%d.ffn_down.weight", 4), WK_TYPE_Q5_K);
    CHECK_EQ_INT(target_of(&m, "blk.%d.ffn_down.weight", 5), WK_TYPE_Q6_K);

    /* single types: every weight matrix, the embedding too, no layer rules */
    plan(&m, "q4_k");
    CHECK_EQ_INT(find(&m, "token_embd.weight")->target, WK_TYPE_Q5_0);
    CHECK_EQ_INT(target_of(&m, "blk.%d.ffn_down.weight", 5), WK_TYPE_Q4_K);
    CHECK_EQ_INT(target_of(&m, "blk.%d.attn_v.weight", 5), WK_TYPE_Q5_0);
    plan(&m, "Q8_0");
    CHECK_EQ_INT(find(&m, "token_embd.weight")->target, WK_TYPE_Q8_0);
    CHECK_EQ_INT(target_of(&m, "blk.%d.ffn_down.weight", 5), WK_TYPE_Q8_0);
    plan(&m, "f16");
    CHECK_EQ_INT(target_of(&m, "blk.%d.attn_k.weight", 7), WK_TYPE_F16);
    CHECK_EQ_INT(target_of(&m, "blk.%d.attn_norm.weight", 7), WK_TYPE_F32);

    /* 4096-wide rows with an untied output: output Q6_K, embedding stays Q4_K */
    make_llama(&m, 4096, 11008, true);
    plan(&m, "q4_k_m");
    CHECK_EQ_INT(find(&m, "output.weight")->target, WK_TYPE_Q6_K);
    CHECK_EQ_INT(find(&m, "token_embd.weight")->target, WK_TYPE_Q4_K);
    CHECK_EQ_INT(target_of(&m, "blk.%d.attn_v.weight", 0), WK_TYPE_Q6_K);
    CHECK_EQ_INT(target_of(&m, "blk.%d.attn_v.weight", 3), WK_TYPE_Q4_K);
    CHECK_EQ_INT(target_of(&m, "blk.%d.attn_q.weight", 0), WK_TYPE_Q4_K);
    /* 11008 = 43 * 256 */
    CHECK_EQ_INT(target_of(&m, "blk.%d.ffn_down.weight", 29), WK_TYPE_Q6_K);

    /* requests: names and llama.cpp's file types */
    wk_quant_request r;
    CHECK_OK(wk_quant_request_parse("Q4_K_M", &r));
    CHECK_EQ_INT(r.file_type, 15);
    CHECK_OK(wk_quant_request_parse("q8_0", &r));
    CHECK_EQ_INT(r.file_type, 7);
    CHECK_OK(wk_quant_request_parse("q8_k", &r));
    CHECK_EQ_INT(r.file_type, -1);
    CHECK_FAILS(wk_quant_request_parse("q4_k_x", &r), WK_ERR_INVALID,
                "unknown quantization type 'q4_k_x'");
    TEST_MAIN_END();
}
