/* Choosing the next token from logits: greedy, or temperature with top-k and top-p,
 * drawn with wick's own generator (xoshiro256**) so a seed gives the same text anywhere. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/argmax.h"
#include "core/error.h"
#include "wick/model.h"

typedef struct {
    float logit;
    int32_t id;
} candidate;

struct wk_sampler {
    wk_sampler_options opt;
    int64_t n_vocab;
    uint64_t rng[4];
    candidate *cand; /* n_vocab entries of scratch */
};

void wk_sampler_options_init(wk_sampler_options *opt)
{
    opt->temperature = 0.8f;
    opt->top_k = 40;
    opt->top_p = 0.95f;
    opt->seed = 42;
}

/* ---- the generator ------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(uint64_t s[4])
{
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1) with 53 bits. */
static double uniform(uint64_t s[4]) { return (double)(xoshiro_next(s) >> 11) * 0x1.0p-53; }

/* ---- the sampler ----------------------------------------------------------------------- */

wk_status wk_sampler_create(const wk_sampler_options *opt, int64_t n_vocab, wk_sampler **out)
{
    *out = NULL;
    if (n_vocab <= 0 || n_vocab > INT32_MAX)
        return wk_fail(WK_ERR_INVALID, "sampler for a vocabulary of %lld tokens", (long long)n_vocab);
    if (!(opt->temperature >= 0.0f) || !isfinite(opt->temperature))
        return wk_fail(WK_ERR_INVALID, "temperature %g must be 0 (greedy) or positive",
                       (double)opt->temperature);
    if (opt->top_k < 0)
        return wk_fail(WK_ERR_INVALID, "top-k %d must be 0 (all) or positive", opt->top_k);
    if (!(opt->top_p > 0.0f && opt->top_p <= 1.0f))
        return wk_fail(WK_ERR_INVALID, "top-p %g must be in (0, 1]", (double)opt->top_p);
    wk_sampler *s = calloc(1, sizeof *s);
    if (!s || !(s->cand = malloc((size_t)n_vocab * sizeof *s->cand))) {
        free(s);
        return wk_fail(WK_ERR_NOMEM, "cannot allocate a sampler of %lld tokens", (long long)n_vocab);
    }
    s->opt = *opt;
    s->n_vocab = n_vocab;
    uint64_t x = opt->seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
    *out = s;
    return WK_OK;
}

void wk_sampler_free(wk_sampler *s)
{
    if (!s) return;
    free(s->cand);
    free(s);
}

/* Larger logit first; equal logits by smaller id, so the order is total and stable. */
static int by_logit_desc(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The k best candidates, sorted, in cand[0..k): insertion into a sorted prefix, which is
 * one comparison per token for most tokens when k is small. */
static int64_t top_k_sorted(candidate *cand, const float *logits, int64_t n, int64_t k)
{
    int64_t len = 0;
    for (int64_t i = 0; i < n; i++) {
        candidate c = {logits[i], (int32_t)i};
        if (len == k && !(by_logit_desc(&c, &cand[len - 1]) < 0)) continue;
        int64_t j = len < k ? len++ : k - 1;
        while (j > 0 && by_logit_desc(&c, &cand[j - 1]) < 0) {
            cand[j] = cand[j - 1];
            j--;
        }
        cand[j] = c;
    }
    return len;
}

int32_t wk_sampler_sample(wk_sampler *s, const float *logits)
{
    int64_t n = s->n_vocab;
    if (s->opt.temperature == 0.0f) return wk_argmax_f32(logits, n);

    /* Candidates: the top k (sorted), or every token (sorted only when top-p needs it). */
    candidate *cand = s->cand;
    int64_t len;
    if (s->opt.top_k > 0 && s->opt.top_k < n) {
        len = top_k_sorted(cand, logits, n, s->opt.top_k);
    } else {
        len = n;
        for (int64_t i = 0; i < n; i++) cand[i] = (candidate){logits[i], (int32_t)i};
        if (s->opt.top_p < 1.0f) qsort(cand, (size_t)n, sizeof *cand, by_logit_desc);
    }

    /* Softmax of logit / temperature (stored in place of the logits). */
    float maxl = -INFINITY;
    for (int64_t i = 0; i < len; i++)
        if (cand[i].logit > maxl) maxl = cand[i].logit;
    double sum = 0.0;
    for (int64_t i = 0; i < len; i++) {
        float p = expf((cand[i].logit - maxl) / s->opt.temperature);
        cand[i].logit = p;
        sum += p;
    }

    /* Top-p: the smallest prefix whose probability reaches p. */
    if (s->opt.top_p < 1.0f) {
        double acc = 0.0, want = s->opt.top_p * sum;
        int64_t keep = len;
        for (int64_t i = 0; i < len; i++) {
            acc += cand[i].logit;
            if (acc >= want) {
                keep = i + 1;
                break;
            }
        }
        len = keep;
        sum = acc < sum ? acc : sum;
    }

    /* Draw. */
    double r = uniform(s->rng) * sum, acc = 0.0;
    for (int64_t i = 0; i < len; i++) {
        acc += cand[i].logit;
        if (r < acc) return cand[i].id;
    }
    return cand[len - 1].id;
}
