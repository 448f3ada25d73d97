/* wick diff: compare two logits files written by `wick logits`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

/* Read a whole file of float32 values; prints the error and returns 1 on failure. */
static int read_floats(const char *path, float **out, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return cli_error("cannot open %s", path);
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return cli_error("cannot read %s", path);
    }
    long size = ftell(f);
    rewind(f);
    if (size <= 0 || size % 4 != 0) {
        fclose(f);
        return cli_error("%s: %ld bytes is not a whole number of float32 values", path, size);
    }
    *n = (size_t)size / 4;
    *out = malloc((size_t)size);
    if (!*out || fread(*out, 4, *n, f) != *n) {
        fclose(f);
        free(*out);
        return cli_error("cannot read %s", path);
    }
    fclose(f);
    return 0;
}

static size_t top_index(const float *x, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

int cmd_diff(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs("usage: wick diff A B\n\n"
              "Compare two logits files (float32, from `wick logits`): prints\n"
              "  max abs diff X\n"
              "and whether the top token agrees.\n",
              stdout);
        return 0;
    }
    if (argc != 3) return cli_usage_error("diff needs two files");
    float *a, *b;
    size_t na, nb;
    if (read_floats(argv[1], &a, &na)) return 1;
    if (read_floats(argv[2], &b, &nb)) {
        free(a);
        return 1;
    }
    if (na != nb) {
        free(a);
        free(b);
        return cli_error("%s has %zu values but %s has %zu", argv[1], na, argv[2], nb);
    }
    double max_diff = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < na; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > max_diff || isnan(d)) {
            max_diff = d;
            at = i;
        }
    }
    size_t ta = top_index(a, na), tb = top_index(b, nb);
    printf("max abs diff %.5f\n", max_diff);
    if (ta == tb)
        printf("top token agrees: %zu (largest difference at token %zu)\n", ta, at);
    else
        printf("top token differs: %zu vs %zu (largest difference at token %zu)\n", ta, tb, at);
    free(a);
    free(b);
    return 0;
}
