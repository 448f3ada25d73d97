/* The sampler: greedy picks the top logit (lowest id on ties); with a temperature the
 * draws follow softmax(logits / T) (checked against the exact probabilities over many
 * draws); top-k and top-p keep exactly the tokens they should; a seed reproduces the
 * draws; bad options are refused with a message. */
#include <math.h>

#include "check.h"
#include "wick.h"

enum { V = 8, DRAWS = 200000 };

static void frequencies(const wk_sampler_options *o, const float *logits, double *freq)
{
    wk_sampler *s;
    CHECK_OK(wk_sampler_create(o, V, &s));
    for (int i = 0; i < V; i++) freq[i] = 0;
    for (int i = 0; i < DRAWS; i++) freq[wk_sampler_sample(s, logits)] += 1.0 / DRAWS;
    wk_sampler_free(s);
}

/* softmax(logits / t) restricted to keep[] and renormalized. */
static void expected(const float *logits, float t, const int *keep, double *p)
{
    double sum = 0;
    for (int i = 0; i < V; i++) sum += p[i] = keep[i] ? exp((double)logits[i] / t) : 0.0;
    for (int i = 0; i < V; i++) p[i] /= sum;
}

int main(void)
{
    const float logits[V] = {0.5f, 2.0f, -1.0f, 1.5f, 2.0f, 0.0f, -3.0f, 1.0f};
    wk_sampler_options o;
    wk_sampler_options_init(&o);
    wk_sampler *s;

    /* Greedy: the top logit, the lower id of a tie (ids 1 and 4 both hold 2.0). */
    o.temperature = 0.0f;
    CHECK_OK(wk_sampler_create(&o, V, &s));
    CHECK_EQ_INT(wk_sampler_sample(s, logits), 1);
    wk_sampler_free(s);

    double freq[V], p[V];
    /* Temperature alone (top-k 0, top-p 1): every token, softmax(logits / 0.7). */
    o.temperature = 0.7f;
    o.top_k = 0;
    o.top_p = 1.0f;
    frequencies(&o, logits, freq);
    int all[V] = {1, 1, 1, 1, 1, 1, 1, 1};
    expected(logits, 0.7f, all, p);
    for (int i = 0; i < V; i++) CHECK_NEAR(freq[i], p[i], 0.005);

    /* Top-k 3: ids 1, 4 (2.0) and 3 (1.5) only. */
    o.top_k = 3;
    frequencies(&o, logits, freq);
    int k3[V] = {0, 1, 0, 1, 1, 0, 0, 0};
    expected(logits, 0.7f, k3, p);
    for (int i = 0; i < V; i++) CHECK_NEAR(freq[i], p[i], 0.005);

    /* Top-p: the smallest set of the most likely reaching p. At T = 1 the sorted
     * probabilities are 1: .262, 4: .262, 3: .159, 7: .096, ...; p = 0.6 needs ids 1, 4, 3. */
    o.temperature = 1.0f;
    o.top_k = 0;
    o.top_p = 0.6f;
    frequencies(&o, logits, freq);
    expected(logits, 1.0f, k3, p);
    for (int i = 0; i < V; i++) CHECK_NEAR(freq[i], p[i], 0.005);

    /* The same seed gives the same draws; another seed other draws. */
    o.top_p = 1.0f;
    o.seed = 7;
    wk_sampler *a, *b, *c;
    CHECK_OK(wk_sampler_create(&o, V, &a));
    CHECK_OK(wk_sampler_create(&o, V, &b));
    o.seed = 8;
    CHECK_OK(wk_sampler_create(&o, V, &c));
    int same = 1, differ = 0;
    for (int i = 0; i < 64; i++) {
        int32_t x = wk_sampler_sample(a, logits), y = wk_sampler_sample(b, logits);
        same &= x == y;
        differ |= x != wk_sampler_sample(c, logits);
    }
    CHECK(same);
    CHECK(differ);
    wk_sampler_free(a);
    wk_sampler_free(b);
    wk_sampler_free(c);

    /* Refusals. */
    wk_sampler_options_init(&o);
    o.temperature = -1.0f;
    CHECK_FAILS(wk_sampler_create(&o, V, &s), WK_ERR_INVALID, "temperature -1");
    wk_sampler_options_init(&o);
    o.top_p = 0.0f;
    CHECK_FAILS(wk_sampler_create(&o, V, &s), WK_ERR_INVALID, "top-p 0 must be in (0, 1]");
    wk_sampler_options_init(&o);
    o.top_k = -2;
    CHECK_FAILS(wk_sampler_create(&o, V, &s), WK_ERR_INVALID, "top-k -2");
    CHECK_FAILS(wk_sampler_create(&o, 0, &s), WK_ERR_INVALID, "vocabulary of 0 tokens");
    TEST_MAIN_END();
}
