/* Parsing and applying the options shared by run, bench gen and logits. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "run_options.h"

const char run_options_help[] =
    "  -m MODEL          GGUF file (default: the SmolLM2-135M-Instruct Q4_1 file)\n"
    "  -p PROMPT         the prompt (default: \"What is Rust?\")\n"
    "  -n N              tokens to generate (default 128)\n"
    "  --chat | --raw    wrap the prompt in the model's chat template, or not\n"
    "                    (default: --chat when the file has a template)\n"
    "  --temp T          temperature; 0 is greedy (default 0)\n"
    "  --top-k K         keep the K most likely tokens; 0 keeps all (default 40)\n"
    "  --top-p P         keep the tokens whose probability adds up to P (default 0.95)\n"
    "  --seed S          seed of the sampler (default 42)\n"
    "  -t THREADS        CPU threads (default: WICK_NUM_THREADS, else every core)\n"
    "  --device cpu|cuda where the model runs (default cpu)\n"
    "  --matmul FORM     quantized|precise|f32|f16 (default: WICK_DEQUANTIZE_ALL[_F16],\n"
    "                    else quantized)\n"
    "  --ctx N           context length in tokens (default: the file's)\n";

void run_options_init(run_options *o)
{
    memset(o, 0, sizeof *o);
    o->model = cli_default_model();
    o->prompt = "What is Rust?";
    o->n_predict = 128;
    o->chat = -1;
    wk_sampler_options_init(&o->sampling);
    o->sampling.temperature = 0.0f;
    o->device = WK_DEVICE_CPU;
    o->form = WK_FORM_AUTO;
}

double run_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int parse_i64(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return cli_usage_error("%s expects an integer from %lld to %lld, got '%s'", opt,
                               (long long)lo, (long long)hi, s);
    *out = v;
    return 0;
}

static int parse_f32(const char *opt, const char *s, float lo, float hi, float *out)
{
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return cli_usage_error("%s expects a number from %g to %g, got '%s'", opt, (double)lo,
                               (double)hi, s);
    *out = v;
    return 0;
}

int run_options_parse(run_options *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (strcmp(a, "--chat") == 0 || strcmp(a, "--raw") == 0) {
        o->chat = strcmp(a, "--chat") == 0;
        (*i)++;
        return 1;
    }
    static const char *const with_value[] = {"-m", "-p", "-n", "--temp", "--top-k", "--top-p",
                                             "--seed", "-t", "--device", "--matmul", "--ctx"};
    size_t k = 0, nk = sizeof with_value / sizeof with_value[0];
    while (k < nk && strcmp(a, with_value[k]) != 0) k++;
    if (k == nk) return 0;
    if (*i + 1 >= argc) {
        cli_usage_error("%s needs a value", a);
        return 2;
    }
    const char *v = argv[*i + 1];
    *i += 2;
    int64_t x = 0;
    int bad = 0;
    if (strcmp(a, "-m") == 0) {
        o->model = v;
    } else if (strcmp(a, "-p") == 0) {
        o->prompt = v;
    } else if (strcmp(a, "-n") == 0) {
        if (!(bad = parse_i64(a, v, 0, (int64_t)1 << 30, &x))) o->n_predict = x;
    } else if (strcmp(a, "--temp") == 0) {
        bad = parse_f32(a, v, 0.0f, 100.0f, &o->sampling.temperature);
    } else if (strcmp(a, "--top-k") == 0) {
        if (!(bad = parse_i64(a, v, 0, INT32_MAX, &x))) o->sampling.top_k = (int)x;
    } else if (strcmp(a, "--top-p") == 0) {
        bad = parse_f32(a, v, 1e-6f, 1.0f, &o->sampling.top_p);
    } else if (strcmp(a, "--seed") == 0) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10);
        if (errno || end == v || *end || *v == '-')
            bad = cli_usage_error("--seed expects a non-negative integer, got '%s'", v);
        else
            o->sampling.seed = s;
    } else if (strcmp(a, "-t") == 0) {
        if (!(bad = parse_i64(a, v, 1, 4096, &x))) o->threads = (int)x;
    } else if (strcmp(a, "--device") == 0) {
        if (wk_device_from_name(v, &o->device) != WK_OK)
            bad = cli_usage_error("--device expects cpu or cuda, got '%s'", v);
    } else if (strcmp(a, "--matmul") == 0) {
        if (wk_form_from_name(v, &o->form) != WK_OK || o->form == WK_FORM_AUTO)
            bad = cli_usage_error("--matmul expects quantized, precise, f32 or f16, got '%s'", v);
    } else if (strcmp(a, "--ctx") == 0) {
        if (!(bad = parse_i64(a, v, 1, (int64_t)1 << 30, &x))) o->n_ctx = x;
    }
    return bad ? 2 : 1;
}

int run_options_load(const run_options *o, wk_model **m, double *load_ms)
{
    wk_model_options mo;
    wk_model_options_init(&mo);
    mo.device = o->device;
    mo.form = o->form;
    mo.n_threads = o->threads;
    mo.n_ctx = o->n_ctx;
    double t0 = run_now_ms();
    if (wk_model_load(o->model, &mo, m) != WK_OK) return cli_error("%s", wk_last_error());
    if (load_ms) *load_ms = run_now_ms() - t0;
    return 0;
}

int run_options_tokens(const run_options *o, wk_model *m, int32_t **ids, int64_t *n)
{
    wk_tokenizer *tok = wk_model_tokenizer(m);
    bool chat = o->chat == 1 || (o->chat == -1 && wk_tokenizer_chat_template(tok) != NULL);
    char *text = NULL;
    if (chat) {
        wk_chat_msg msg = {"user", o->prompt};
        if (wk_tokenizer_chat_apply(tok, &msg, 1, true, &text) != WK_OK)
            return cli_error("%s", wk_last_error());
    }
    const char *src = text ? text : o->prompt;
    size_t count = 0;
    /* The template's markers are special tokens; a raw prompt is plain text. */
    wk_status st = wk_tokenizer_encode_alloc(tok, src, strlen(src), true, chat, ids, &count);
    free(text);
    if (st != WK_OK) return cli_error("%s", wk_last_error());
    if (count == 0) {
        free(*ids);
        return cli_error("the prompt has no tokens");
    }
    *n = (int64_t)count;
    return 0;
}

int run_options_generate(const run_options *o, wk_model *m, wk_token_callback cb, void *user,
                         wk_generate_stats *s)
{
    int32_t *ids;
    int64_t n_ids;
    if (run_options_tokens(o, m, &ids, &n_ids)) return 1;
    wk_generate_options g;
    wk_generate_options_init(&g);
    g.max_tokens = o->n_predict;
    g.sampling = o->sampling;
    wk_status st = wk_model_generate(m, ids, n_ids, &g, cb, user, s);
    free(ids);
    return st == WK_OK ? 0 : cli_error("%s", wk_last_error());
}
