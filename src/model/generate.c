/* Generation: prefill the prompt, then choose and feed back one token at a time,
 * streaming the text in whole UTF-8 characters. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "model/llama.h"

void wk_generate_options_init(wk_generate_options *opt)
{
    opt->max_tokens = 128;
    wk_sampler_options_init(&opt->sampling);
    opt->sampling.temperature = 0.0f;
    opt->stop_at_eos = true;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- whole UTF-8 characters ---------------------------------------------------------- */

typedef struct {
    char *buf;
    size_t len, cap;
} utf8_stream;

/* Length of the complete characters at the start of s[0..n): a character cut off at the
 * end waits for more bytes; a malformed byte counts as one character of its own. */
static size_t utf8_complete(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                   : (c & 0xF8) == 0xF0 ? 4 : 1;
        size_t j = 1;
        while (j < len && i + j < n && (s[i + j] & 0xC0) == 0x80) j++;
        if (j < len && i + j == n) break; /* cut off: wait */
        i += j;                           /* whole, or malformed (passed as is) */
    }
    return i;
}

/* Append a token's piece and pass on the whole characters that are ready (one call per
 * token). Returns the callback's answer, or -1 when memory ran out. */
static int utf8_push(utf8_stream *u, const char *piece, size_t n, int32_t token,
                     wk_token_callback cb, void *user)
{
    if (u->len + n + 1 > u->cap) {
        size_t cap = (u->len + n + 1) * 2 + 64;
        char *p = realloc(u->buf, cap);
        if (!p) return -1;
        u->buf = p;
        u->cap = cap;
    }
    memcpy(u->buf + u->len, piece, n);
    u->len += n;
    size_t ready = utf8_complete((const unsigned char *)u->buf, u->len);
    char keep = u->buf[ready];
    u->buf[ready] = '\0'; /* the callback may treat the text as a C string */
    int stop = cb ? cb(user, token, u->buf, ready) : 0;
    u->buf[ready] = keep;
    memmove(u->buf, u->buf + ready, u->len - ready);
    u->len -= ready;
    return stop;
}

/* ---- the loop --------------------------------------------------------------------------- */

/* Greedy decoding one step ahead of the host, where the backend copies back later: the
 * step of a token and the step after it (its input the first one's choice, read on the
 * device) are queued before the host passes the token on, so the device does not wait for
 * the host. n_past counts the queued steps; a step queued past a stop is waited for and
 * dropped (its cache row is then beyond n_past). */
typedef struct queued_steps {
    int32_t out[2]; /* their choices, oldest first from out[oldest] */
    int n, oldest;
} queued_steps;

/* Queue what the token passed on as number `generated` (of max) leads to: its own step
 * (the first time; its input is the last greedy choice, on the device) and the next. */
static wk_status queue_steps(wk_model *m, queued_steps *q, int64_t generated, int64_t max)
{
    const int64_t used = m->n_past - q->n, n_ctx = m->info.n_ctx;
    wk_status st = WK_OK;
    if (generated >= max || used >= n_ctx) return st;
    if (q->n == 0 && (st = wk_model_greedy_queue(m, &q->out[q->oldest])) == WK_OK) q->n++;
    if (st == WK_OK && q->n == 1 && generated + 1 < max && used + 1 < n_ctx &&
        (st = wk_model_greedy_queue(m, &q->out[(q->oldest + 1) % 2])) == WK_OK)
        q->n++;
    return st;
}

/* The oldest queued step's choice; it leaves the queue either way. */
static wk_status take_step(wk_model *m, queued_steps *q, int32_t *token)
{
    const wk_status st = wk_model_greedy_collect(m);
    *token = q->out[q->oldest];
    q->oldest = (q->oldest + 1) % 2;
    q->n--;
    if (st != WK_OK) m->n_past--; /* its position holds nothing usable */
    return st;
}

/* Wait for and drop the steps queued past a stop; the first failure is kept. */
static wk_status drop_steps(wk_model *m, queued_steps *q, wk_status st)
{
    for (; q->n > 0; q->n--, m->n_past--) {
        const wk_status s = wk_model_greedy_collect(m);
        if (st == WK_OK) st = s;
    }
    return st;
}

wk_status wk_model_generate(wk_model *m, const int32_t *prompt, int64_t n_prompt,
                            const wk_generate_options *opt, wk_token_callback cb, void *user,
                            wk_generate_stats *stats)
{
    wk_generate_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    wk_generate_options defaults;
    if (!opt) {
        wk_generate_options_init(&defaults);
        opt = &defaults;
    }
    const wk_model_info *h = &m->info;
    if (n_prompt <= 0)
        return wk_fail(WK_ERR_INVALID, "the prompt has no tokens");
    if (n_prompt > h->n_ctx)
        return wk_fail(WK_ERR_INVALID, "the prompt has %lld tokens, more than the context of %lld",
                       (long long)n_prompt, (long long)h->n_ctx);
    if (opt->max_tokens < 0)
        return wk_fail(WK_ERR_INVALID, "max_tokens %lld is negative", (long long)opt->max_tokens);

    wk_sampler *sampler;
    wk_status st = wk_sampler_create(&opt->sampling, h->n_vocab, &sampler);
    if (st != WK_OK) return st;
    float *logits = malloc((size_t)h->n_vocab * sizeof(float));
    if (!logits) {
        wk_sampler_free(sampler);
        return wk_fail(WK_ERR_NOMEM, "cannot allocate %lld logits", (long long)h->n_vocab);
    }
    utf8_stream text = {NULL, 0, 0};

    /* Prefill: the whole prompt in one forward, then the first choice. */
    stats->n_prompt = n_prompt;
    m->n_past = 0;
    double t0 = now_ms();
    /* Greedy decoding takes the choice from the device (one id copied back, not the logits). */
    const bool greedy = opt->sampling.temperature == 0.0f;
    int32_t token = 0;
    st = greedy ? wk_model_forward_greedy(m, prompt, n_prompt, 0, &token)
                : wk_model_forward(m, prompt, n_prompt, 0, false, logits);
    if (st != WK_OK) goto done;
    if (!greedy) token = wk_sampler_sample(sampler, logits);
    stats->prefill_ms = now_ms() - t0;

    /* Decode: pass the token on, feed it back, choose the next (greedy and where the
     * backend allows it, with the steps queued ahead). */
    t0 = now_ms();
    const bool ahead = greedy && wk_model_greedy_can_queue(m);
    queued_steps q = {{0, 0}, 0, 0};
    for (int64_t generated = 0; generated < opt->max_tokens;) {
        generated++;
        stats->n_generated = generated;
        if (opt->stop_at_eos && wk_tokenizer_is_eog(m->tokenizer, token)) {
            stats->hit_eos = true;
            break;
        }
        if (ahead && (st = queue_steps(m, &q, generated, opt->max_tokens)) != WK_OK) break;
        const char *piece;
        size_t piece_len;
        if ((st = wk_tokenizer_piece(m->tokenizer, token, false, &piece, &piece_len)) != WK_OK) break;
        int stop = utf8_push(&text, piece, piece_len, token, cb, user);
        if (stop < 0) {
            st = wk_fail(WK_ERR_NOMEM, "cannot hold the text of token %d", (int)token);
            break;
        }
        if (stop || generated == opt->max_tokens) break;
        if (m->n_past - q.n >= h->n_ctx) {
            stats->hit_context = true;
            break;
        }
        if (ahead) {
            if ((st = take_step(m, &q, &token)) != WK_OK) break;
        } else {
            int32_t next = 0;
            st = greedy ? wk_model_forward_greedy(m, &token, 1, m->n_past, &next)
                        : wk_model_forward(m, &token, 1, m->n_past, false, logits);
            if (st != WK_OK) break;
            token = greedy ? next : wk_sampler_sample(sampler, logits);
        }
        stats->n_decode++;
    }
    st = drop_steps(m, &q, st);
    if (st != WK_OK) goto done;
    stats->decode_ms = now_ms() - t0;
    /* Bytes of a character the model never finished are passed as they are. */
    if (text.len > 0 && cb) {
        text.buf[text.len] = '\0';
        cb(user, -1, text.buf, text.len);
    }

done:
    free(text.buf);
    free(logits);
    wk_sampler_free(sampler);
    return st;
}
