/* wick inspect MODEL: a GGUF file's header, metadata and tensor table, and a
 * summary of its tensor types. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "wick.h"

static void inspect_usage(FILE *f)
{
    fputs("usage: wick inspect MODEL\n"
          "\n"
          "Prints a GGUF file's version and alignment, every metadata key with its type and\n"
          "value (long strings and arrays abbreviated), the tensor table (name, type, shape,\n"
          "bytes) and the number and bytes of tensors of each type.\n"
          "\n"
          "options:\n"
          "  -h, --help   this text\n",
          f);
}

static void upper(const char *s, char *out, size_t cap)
{
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++) out[i] = (char)toupper((unsigned char)s[i]);
    out[i] = '\0';
}

static double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

static void print_metadata(const wk_gguf *g)
{
    int64_t n = wk_gguf_n_kv(g);
    printf("metadata: %lld keys\n", (long long)n);
    char value[512], type[32];
    for (int64_t i = 0; i < n; i++) {
        wk_gguf_vtype t = wk_gguf_kv_type(g, i);
        const char *key = wk_gguf_key(g, i);
        if (t == WK_GGUF_ARRAY) {
            wk_gguf_vtype et = WK_GGUF_UINT8;
            wk_gguf_get_arr(g, key, &et, NULL);
            snprintf(type, sizeof type, "array[%s]", wk_gguf_vtype_name(et));
        } else {
            snprintf(type, sizeof type, "%s", wk_gguf_vtype_name(t));
        }
        wk_gguf_format_value(g, i, value, sizeof value);
        printf("  %-40s %-14s %s\n", key, type, value);
    }
}

typedef struct type_total {
    int64_t count;
    uint64_t bytes;
} type_total;

static void print_tensors(const wk_gguf *g, type_total *totals)
{
    int64_t n = wk_gguf_n_tensors(g);
    printf("\ntensors: %lld (shape in GGUF order: ne[0], the row length, first)\n",
           (long long)n);
    printf("  %5s  %-32s %-6s %-24s %12s %12s\n", "#", "name", "type", "shape", "bytes",
           "offset");
    for (int64_t i = 0; i < n; i++) {
        const wk_gguf_tensor *t = wk_gguf_tensor_at(g, i);
        char shape[96], type[16];
        int len = snprintf(shape, sizeof shape, "[");
        for (int d = 0; d < t->n_dims; d++)
            len += snprintf(shape + len, sizeof shape - (size_t)len, "%s%lld", d ? ", " : "",
                            (long long)t->ne[d]);
        snprintf(shape + len, sizeof shape - (size_t)len, "]");
        upper(wk_type_name(t->type), type, sizeof type);
        printf("  %5lld  %-32s %-6s %-24s %12zu %12llu\n", (long long)i, t->name, type, shape,
               t->nbytes, (unsigned long long)t->offset);
        totals[t->type].count++;
        totals[t->type].bytes += t->nbytes;
    }
}

static void print_summary(const wk_gguf *g, type_total *totals)
{
    /* types by count, most first (ties by type id) */
    int order[WK_TYPE_COUNT], n = 0;
    for (int t = 0; t < WK_TYPE_COUNT; t++)
        if (totals[t].count) order[n++] = t;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && totals[order[j]].count > totals[order[j - 1]].count; j--) {
            int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    char name[16];
    printf("\nsummary: ");
    for (int i = 0; i < n; i++) {
        upper(wk_type_name((wk_type)order[i]), name, sizeof name);
        printf("%s%s: %lld", i ? ", " : "", name, (long long)totals[order[i]].count);
    }
    printf("\n");
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        const type_total *tt = &totals[order[i]];
        upper(wk_type_name((wk_type)order[i]), name, sizeof name);
        printf("  %-6s %5lld tensors %14llu bytes (%9.2f MiB)\n", name, (long long)tt->count,
               (unsigned long long)tt->bytes, mib((double)tt->bytes));
        total += tt->bytes;
    }
    printf("  %-6s %5lld tensors %14llu bytes (%9.2f MiB)\n", "total",
           (long long)wk_gguf_n_tensors(g), (unsigned long long)total, mib((double)total));
}

int cmd_inspect(int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            inspect_usage(stdout);
            return 0;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0')
            return cli_usage_error("inspect: unknown option '%s'", argv[i]);
        if (path) return cli_usage_error("inspect: one MODEL only ('%s' and '%s')", path, argv[i]);
        path = argv[i];
    }
    if (!path) return cli_usage_error("inspect: MODEL is missing (wick inspect MODEL)");

    wk_gguf *g = NULL;
    if (wk_gguf_open(path, &g) != WK_OK) return cli_error("%s", wk_last_error());
    printf("file: %s (%zu bytes)\n", path, wk_gguf_file_size(g));
    printf("GGUF version %u, alignment %zu, data section at offset %zu\n", wk_gguf_version(g),
           wk_gguf_alignment(g), wk_gguf_data_offset(g));
    print_metadata(g);
    type_total totals[WK_TYPE_COUNT];
    memset(totals, 0, sizeof totals);
    print_tensors(g, totals);
    print_summary(g, totals);
    wk_gguf_close(g);
    if (fflush(stdout) != 0) return cli_error("writing the output failed");
    return 0;
}
