/* A small test framework: each tests/test_*.c is one program; CHECK* print the
 * values on failure and count it; TEST_MAIN returns non-zero if anything failed. */
#ifndef WICK_TESTS_CHECK_H
#define WICK_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures = 0;
static int check_count = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) {                                                                             \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) {                                                                             \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                      \
        CHECK_MSG(va_ == vb_, "%s = %lld, %s = %lld", #a, va_, #b, vb_);                           \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double va_ = (double)(a), vb_ = (double)(b), t_ = (double)(tol);                           \
        CHECK_MSG(fabs(va_ - vb_) <= t_, "%s = %.9g, %s = %.9g, |diff| %.3g > %.3g", #a, va_, #b,  \
                  vb_, fabs(va_ - vb_), t_);                                                       \
    } while (0)

/* A call that must succeed: prints wk_last_error() otherwise. */
#define CHECK_OK(call)                                                                             \
    do {                                                                                           \
        check_count++;                                                                             \
        int st_ = (int)(call);                                                                     \
        if (st_ != 0) {                                                                            \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: %s failed (%d): %s\n", __FILE__, __LINE__, #call, st_,         \
                    wk_last_error());                                                              \
        }                                                                                          \
    } while (0)

/* A call that must fail with status st and a message containing substr. */
#define CHECK_FAILS(call, st, substr)                                                              \
    do {                                                                                           \
        check_count++;                                                                             \
        int st_ = (int)(call);                                                                     \
        const char *msg_ = wk_last_error();                                                        \
        if (st_ != (int)(st) || !strstr(msg_, (substr))) {                                         \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: %s: expected status %d with \"%s\", got %d: \"%s\"\n",         \
                    __FILE__, __LINE__, #call, (int)(st), (substr), st_, msg_);                    \
        }                                                                                          \
    } while (0)

/* Path of the default model, or NULL (and a message) when it is absent. */
static inline const char *test_model_path(void)
{
    const char *p = getenv("WICK_TEST_MODEL");
    FILE *f = p ? fopen(p, "rb") : NULL;
    if (!f) {
        fprintf(stderr, "model not found (WICK_TEST_MODEL=%s); run scripts/fetch-model.sh\n",
                p ? p : "(unset)");
        return NULL;
    }
    fclose(f);
    return p;
}

/* Path of a file under the source tree (tests/fixtures/...). */
static inline const char *test_source_path(const char *rel, char *buf, size_t cap)
{
    const char *root = getenv("WICK_SOURCE_DIR");
    snprintf(buf, cap, "%s/%s", root ? root : ".", rel);
    return buf;
}

#define TEST_MAIN_END()                                                                            \
    do {                                                                                           \
        fprintf(stderr, "%s: %d checks, %d failed\n", __FILE__, check_count, check_failures);      \
        return check_failures ? 1 : 0;                                                             \
    } while (0)

#endif
