/* Resource limits and argument checks of the model, on the default model:
 * - a KV cache that would not fit in memory is refused before it is allocated,
 *   with the numbers (the largest allocation made stays small);
 * - bad load options (negative context or threads, far too many threads, a CUDA
 *   device without CUDA) are refused with a message;
 * - the forward refuses positions and batches past the context, ids outside the
 *   vocabulary and empty batches; generation refuses prompts longer than the
 *   context, empty prompts and negative token limits;
 * - the sampler refuses temperatures, top-k and top-p out of range, and always
 *   returns an id of the vocabulary, even from logits of NaN or infinity. */
#include <math.h>
#include <stdint.h>

#include "alloc_count.h"
#include "check.h"
#include "wick.h"

static void test_kv_cache_refused(const char *path)
{
    wk_model_options opt;
    wk_model_options_init(&opt);
    opt.n_ctx = (int64_t)1 << 30;
    opt.n_threads = 1;
    wk_model *m = (wk_model *)1;
    long long base = alloc_mark();
    CHECK_FAILS(wk_model_load(path, &opt, &m), WK_ERR_NOMEM,
                "KV cache of 1073741824 tokens needs");
    CHECK(strstr(wk_last_error(), "MiB") != NULL);
    CHECK(m == NULL);
    if (WK_COUNT_ALLOC) {
        /* 30 layers x 2^30 tokens x 192 x 2 x 4 bytes would be 45 TiB: nothing near it */
        CHECK_MSG(alloc_biggest < ((unsigned long long)64 << 20),
                  "largest allocation before the refusal: %llu bytes", alloc_biggest);
        CHECK_MSG(alloc_live == base, "%lld bytes leaked by the refusal", alloc_live - base);
    }
}

static void test_load_options(const char *path)
{
    wk_model_options opt;
    wk_model *m = NULL;
    wk_model_options_init(&opt);
    opt.n_ctx = -1;
    CHECK_FAILS(wk_model_load(path, &opt, &m), WK_ERR_INVALID, "context length -1 is negative");
    wk_model_options_init(&opt);
    opt.n_threads = -3;
    CHECK_FAILS(wk_model_load(path, &opt, &m), WK_ERR_INVALID, "thread count -3 is negative");
    wk_model_options_init(&opt);
    opt.n_threads = 5000;
    opt.n_ctx = 64;
    CHECK_FAILS(wk_model_load(path, &opt, &m), WK_ERR_INVALID, "5000 threads is too many");
    if (!wk_cuda_available()) {
        wk_model_options_init(&opt);
        opt.device = WK_DEVICE_CUDA;
        opt.n_ctx = 64;
        wk_status st = wk_model_load(path, &opt, &m);
        CHECK_MSG(st == WK_ERR_DEVICE && *wk_last_error(),
                  "CUDA without a GPU: status %s, message \"%s\"", wk_status_name(st),
                  wk_last_error());
    }
    CHECK_FAILS(wk_model_load("/nonexistent/model.gguf", NULL, &m), WK_ERR_IO,
                "/nonexistent/model.gguf: cannot open");
    CHECK(m == NULL);
}

static void test_forward_and_generate(const char *path)
{
    wk_model_options opt;
    wk_model_options_init(&opt);
    opt.n_ctx = 16;
    opt.n_threads = 2;
    wk_model *m = NULL;
    CHECK_OK(wk_model_load(path, &opt, &m));
    if (!m) return;
    const wk_model_info *info = wk_model_get_info(m);
    CHECK_EQ_INT(info->n_ctx, 16);
    float *logits = malloc((size_t)info->n_vocab * sizeof *logits);
    int32_t ids[20] = {0};
    for (int i = 0; i < 20; i++) ids[i] = 100 + i;

    CHECK_FAILS(wk_model_forward(m, ids, 0, 0, false, logits), WK_ERR_INVALID,
                "forward of 0 tokens");
    CHECK_FAILS(wk_model_forward(m, ids, 17, 0, false, logits), WK_ERR_INVALID,
                "17 tokens at position 0 do not fit the context of 16 tokens");
    CHECK_FAILS(wk_model_forward(m, ids, 1, 5, false, logits), WK_ERR_INVALID,
                "position 5 is not within the 0 tokens in the cache");
    int32_t bad[2] = {1, (int32_t)info->n_vocab};
    CHECK_FAILS(wk_model_forward(m, bad, 2, 0, false, logits), WK_ERR_INVALID,
                "outside the vocabulary of 49152");
    bad[1] = -7;
    CHECK_FAILS(wk_model_forward(m, bad, 2, 0, false, logits), WK_ERR_INVALID, "id -7");
    CHECK_OK(wk_model_forward(m, ids, 10, 0, false, logits));
    CHECK_FAILS(wk_model_forward(m, ids, 7, 10, false, logits), WK_ERR_INVALID,
                "7 tokens at position 10 do not fit the context of 16 tokens");
    CHECK_OK(wk_model_forward(m, ids, 6, 10, false, logits));

    wk_generate_options g;
    wk_generate_options_init(&g);
    g.max_tokens = 4;
    wk_generate_stats stats;
    CHECK_FAILS(wk_model_generate(m, ids, 0, &g, NULL, NULL, &stats), WK_ERR_INVALID,
                "the prompt has no tokens");
    CHECK_FAILS(wk_model_generate(m, ids, 17, &g, NULL, NULL, &stats), WK_ERR_INVALID,
                "the prompt has 17 tokens, more than the context of 16");
    g.max_tokens = -1;
    CHECK_FAILS(wk_model_generate(m, ids, 3, &g, NULL, NULL, &stats), WK_ERR_INVALID,
                "max_tokens -1 is negative");
    /* a token limit beyond the context stops at the context, and says so */
    g.max_tokens = 1000;
    g.stop_at_eos = false;
    CHECK_OK(wk_model_generate(m, ids, 10, &g, NULL, NULL, &stats));
    CHECK(stats.hit_context);
    CHECK_MSG(stats.n_prompt + stats.n_decode <= 16, "%lld prompt + %lld decode tokens",
              (long long)stats.n_prompt, (long long)stats.n_decode);
    free(logits);
    wk_model_free(m);
}

static void test_sampler(void)
{
    wk_sampler_options o;
    wk_sampler *s = NULL;
    wk_sampler_options_init(&o);
    CHECK_FAILS(wk_sampler_create(&o, 0, &s), WK_ERR_INVALID, "vocabulary of 0 tokens");
    CHECK_FAILS(wk_sampler_create(&o, (int64_t)1 << 40, &s), WK_ERR_INVALID,
                "vocabulary of 1099511627776 tokens");
    float bad_temps[] = {-1.0f, NAN, INFINITY};
    for (int i = 0; i < 3; i++) {
        wk_sampler_options_init(&o);
        o.temperature = bad_temps[i];
        CHECK_FAILS(wk_sampler_create(&o, 10, &s), WK_ERR_INVALID, "temperature");
    }
    wk_sampler_options_init(&o);
    o.top_k = -2;
    CHECK_FAILS(wk_sampler_create(&o, 10, &s), WK_ERR_INVALID, "top-k -2");
    float bad_p[] = {0.0f, 1.5f, NAN, -0.5f};
    for (int i = 0; i < 4; i++) {
        wk_sampler_options_init(&o);
        o.top_p = bad_p[i];
        CHECK_FAILS(wk_sampler_create(&o, 10, &s), WK_ERR_INVALID, "top-p");
    }

    /* Hostile logits: every draw is still an id of the vocabulary. */
    enum { N = 1000 };
    static float logits[N];
    float fills[] = {NAN, INFINITY, -INFINITY, 3.0e38f};
    float temps[] = {0.0f, 1e-30f, 0.8f, 50.0f};
    for (int f = 0; f < 4; f++)
        for (int t = 0; t < 4; t++)
            for (int variant = 0; variant < 3; variant++) {
                wk_sampler_options_init(&o);
                o.temperature = temps[t];
                o.top_k = variant == 0 ? 0 : 5;
                o.top_p = variant == 2 ? 0.5f : 1.0f;
                o.seed = (uint64_t)(f * 16 + t);
                if (wk_sampler_create(&o, N, &s) != WK_OK) {
                    CHECK_OK(WK_ERR_INVALID);
                    continue;
                }
                for (int i = 0; i < N; i++) logits[i] = (i % 3 == 0) ? fills[f] : (float)i;
                for (int k = 0; k < 4; k++) {
                    int32_t id = wk_sampler_sample(s, logits);
                    CHECK_MSG(id >= 0 && id < N, "fill %g temperature %g: id %d", (double)fills[f],
                              (double)temps[t], id);
                }
                for (int i = 0; i < N; i++) logits[i] = fills[f];
                int32_t id = wk_sampler_sample(s, logits);
                CHECK_MSG(id >= 0 && id < N, "all %g, temperature %g: id %d", (double)fills[f],
                          (double)temps[t], id);
                wk_sampler_free(s);
            }
}

int main(void)
{
    const char *model = test_model_path();
    test_sampler();
    if (model) {
        test_kv_cache_refused(model);
        test_load_options(model);
        test_forward_and_generate(model);
    } else {
        CHECK(model != NULL);
    }
    TEST_MAIN_END();
}
