/* Deterministic N(0,1) and uniform numbers for the tests (splitmix64), so that every run
 * checks the same inputs. A test defines WK_TEST_RNG_SEED before including this header to
 * draw its own sequence. */
#ifndef WK_TESTS_RNG_H
#define WK_TESTS_RNG_H

#include <math.h>
#include <stdint.h>

#ifndef WK_TEST_RNG_SEED
#define WK_TEST_RNG_SEED 0x9e3779b97f4a7c15ull
#endif

static uint64_t rng_state = WK_TEST_RNG_SEED;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1), never 0 (rng_normal takes its logarithm). */
static double rng_uniform(void) { return ((double)(rng_next() >> 11) + 0.5) * 0x1p-53; }

static double rng_normal(void)
{
    return sqrt(-2.0 * log(rng_uniform())) * cos(6.283185307179586 * rng_uniform());
}

#endif
