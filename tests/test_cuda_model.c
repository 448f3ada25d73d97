/* The whole Llama forward on the GPU against the CPU, on the default model:
 * - GPU (quantized form; activations stay in floating point) vs CPU precise form:
 *   first-step logits within 0.03;
 * - GPU f32 form vs CPU f32 form: within 1e-4;
 * - greedy continuations identical between GPU and CPU precise (decode steps replayed
 *   as CUDA graphs on the GPU).
 * Skips (exit 0) without a CUDA device or without the model file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "wick/model.h"
#ifdef WICK_HAVE_CUDA
#include "cuda/cuda_engine.h"
#include "model/llama.h"
#endif

/* Fixed token ids (no tokenizer needed): any ids exercise the forward. */
static const int32_t prompt[] = {1, 9690, 198, 2683, 314, 17630, 47, 2, 198, 1, 520, 9531, 198};
#define N_PROMPT ((int64_t)(sizeof prompt / sizeof prompt[0]))
#define N_GEN 24

static wk_model *load(const char *path, wk_device dev, wk_form form)
{
    wk_model_options opt;
    wk_model_options_init(&opt);
    opt.device = dev;
    opt.form = form;
    opt.n_ctx = 256;
    wk_model *m = NULL;
    wk_status st = wk_model_load(path, &opt, &m);
    if (st) fprintf(stderr, "load %s %s: %s\n", wk_device_name(dev), wk_form_name(form), wk_last_error());
    return m;
}

static float *first_logits(wk_model *m)
{
    int64_t nv = wk_model_get_info(m)->n_vocab;
    float *l = malloc(sizeof(float) * (size_t)nv);
    wk_model_reset(m);
    CHECK_OK(wk_model_forward(m, prompt, N_PROMPT, 0, false, l));
    return l;
}

static double max_diff(const float *a, const float *b, int64_t n)
{
    double d = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = fabs((double)a[i] - (double)b[i]);
        if (!(x <= d)) d = isnan(x) ? INFINITY : x;
    }
    return d;
}

typedef struct {
    int32_t ids[N_GEN + 1];
    int n;
} gen_out;

static int collect(void *user, int32_t token, const char *text, size_t len)
{
    (void)text, (void)len;
    gen_out *g = user;
    if (token >= 0 && g->n < N_GEN + 1) g->ids[g->n++] = token;
    return 0;
}

static void greedy(wk_model *m, gen_out *g)
{
    memset(g, 0, sizeof *g);
    wk_generate_options o;
    wk_generate_options_init(&o);
    o.max_tokens = N_GEN;
    o.stop_at_eos = false;
    wk_generate_stats s;
    CHECK_OK(wk_model_generate(m, prompt, N_PROMPT, &o, collect, g, &s));
    printf("  %s: %lld decode steps in %.2f ms\n", wk_device_name(wk_model_get_info(m)->device),
           (long long)s.n_decode, s.decode_ms);
}

int main(void)
{
    if (!wk_cuda_available()) {
        printf("SKIP: no CUDA device here (test_cuda_model needs a GPU; nothing was checked)\n");
        return 0;
    }
    const char *path = test_model_path();
    if (!path) {
        printf("SKIP: no model file\n");
        return 0;
    }
    wk_model *cpu_p = load(path, WK_DEVICE_CPU, WK_FORM_PRECISE);
    wk_model *gpu_q = load(path, WK_DEVICE_CUDA, WK_FORM_QUANTIZED);
    CHECK(cpu_p && gpu_q);
    if (cpu_p && gpu_q) {
        int64_t nv = wk_model_get_info(cpu_p)->n_vocab;
        float *a = first_logits(cpu_p), *b = first_logits(gpu_q);
        double d = max_diff(a, b, nv);
        printf("first-step logits, CPU precise vs GPU quantized: max abs diff %.5f\n", d);
        CHECK_MSG(d <= 0.03, "max abs diff %.5f > 0.03", d);
        /* The greedy forward's id, chosen on the GPU, is the largest of the GPU's logits. */
        int32_t best = 0, got = -1;
        for (int64_t i = 1; i < nv; i++)
            if (b[i] > b[best]) best = (int32_t)i;
        CHECK_OK(wk_model_forward_greedy(gpu_q, prompt, N_PROMPT, 0, &got));
        CHECK_MSG(got == best, "GPU greedy forward chose %d, the logits' largest is %d", (int)got, (int)best);
        free(a);
        free(b);
        gen_out ga, gb;
        greedy(cpu_p, &ga);
        greedy(gpu_q, &gb);
        CHECK_EQ_INT(ga.n, gb.n);
        int same = ga.n == gb.n && memcmp(ga.ids, gb.ids, sizeof(int32_t) * (size_t)ga.n) == 0;
        CHECK_MSG(same, "greedy ids differ between CPU precise and GPU");
        for (int i = 0; !same && i < ga.n && i < gb.n; i++)
            if (ga.ids[i] != gb.ids[i]) {
                fprintf(stderr, "  first difference at token %d: cpu %d gpu %d\n", i, ga.ids[i],
                        gb.ids[i]);
                break;
            }
        /* The same sequence again: now every decode step is a graph replay. */
        gen_out gc;
        greedy(gpu_q, &gc);
        CHECK_MSG(gc.n == gb.n && memcmp(gc.ids, gb.ids, sizeof(int32_t) * (size_t)gb.n) == 0,
                  "a second GPU run (graph replays) changed the greedy ids");
#ifdef WICK_HAVE_CUDA
        long replays = 0, captures = 0, eager = 0;
        double step_us = 0.0;
        wk_cuda_backend_stats(gpu_q->engine, &replays, &captures, &eager, &step_us);
        printf("  cuda lists: %ld graph replays, %ld captures, %ld run eagerly\n", replays, captures,
               eager);
        if (step_us > 0) printf("  a replayed decode step: %.1f us on the GPU (WICK_CUDA_STEP_TIMES=1)\n", step_us);
        CHECK_MSG(replays >= N_GEN, "decode steps were not replayed as graphs (%ld replays)", replays);
#endif
    }
    wk_model_free(cpu_p);
    wk_model_free(gpu_q);

    wk_model *cpu_f = load(path, WK_DEVICE_CPU, WK_FORM_F32);
    wk_model *gpu_f = load(path, WK_DEVICE_CUDA, WK_FORM_F32);
    CHECK(cpu_f && gpu_f);
    if (cpu_f && gpu_f) {
        int64_t nv = wk_model_get_info(cpu_f)->n_vocab;
        float *a = first_logits(cpu_f), *b = first_logits(gpu_f);
        double d = max_diff(a, b, nv);
        printf("first-step logits, CPU f32 vs GPU f32: max abs diff %.6f\n", d);
        CHECK_MSG(d <= 1e-4, "max abs diff %.6f > 1e-4", d);
        free(a);
        free(b);
    }
    wk_model_free(cpu_f);
    wk_model_free(gpu_f);
    TEST_MAIN_END();
}
