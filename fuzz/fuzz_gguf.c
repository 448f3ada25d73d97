/* Fuzz target: the GGUF reader on arbitrary bytes.
 *
 * wk_gguf_open_memory must refuse a malformed file with a message, or accept it;
 * an accepted file is then walked completely (every key through every getter,
 * every array element, every tensor's name lookup and data bytes, the first row
 * of every tensor dequantized), so that anything the reader accepted but did not
 * validate shows up as an out-of-bounds access under AddressSanitizer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wick.h"

/* Keeps reads from being optimized away. */
static volatile unsigned wk_fuzz_sink;

static void fuzz_key(const wk_gguf *g, int64_t i)
{
    const char *key = wk_gguf_key(g, i);
    if (!key || wk_gguf_find_key(g, key) != i) abort(); /* names are unique and indexed */
    wk_gguf_vtype vt = wk_gguf_kv_type(g, i);
    (void)wk_gguf_vtype_name(vt);

    char text[160];
    wk_gguf_format_value(g, i, text, sizeof text);
    if (strlen(text) >= sizeof text) abort();
    char tiny[5];
    wk_gguf_format_value(g, i, tiny, sizeof tiny);

    /* Every getter on every key: a wrong type must be a clean error. */
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
    float f32;
    double f64;
    bool b;
    const char *s = NULL;
    size_t len = 0;
    (void)wk_gguf_get_u32(g, key, &u32);
    (void)wk_gguf_get_i32(g, key, &i32);
    (void)wk_gguf_get_u64(g, key, &u64);
    (void)wk_gguf_get_i64(g, key, &i64);
    (void)wk_gguf_get_f32(g, key, &f32);
    (void)wk_gguf_get_f64(g, key, &f64);
    (void)wk_gguf_get_bool(g, key, &b);
    if (wk_gguf_get_str(g, key, &s, &len) == WK_OK) {
        if (strlen(s) > len) abort();
        if (len) wk_fuzz_sink += (unsigned char)s[len - 1];
    }

    wk_gguf_vtype et;
    uint64_t n = 0;
    if (wk_gguf_get_arr(g, key, &et, &n) != WK_OK) return;
    const void *data = NULL;
    if (wk_gguf_get_arr_data(g, key, &data) == WK_OK) {
        size_t es = 0;
        switch (et) {
        case WK_GGUF_UINT8: case WK_GGUF_INT8: case WK_GGUF_BOOL: es = 1; break;
        case WK_GGUF_UINT16: case WK_GGUF_INT16: es = 2; break;
        case WK_GGUF_UINT32: case WK_GGUF_INT32: case WK_GGUF_FLOAT32: es = 4; break;
        default: es = 8; break;
        }
        const unsigned char *p = data;
        for (uint64_t e = 0; e < n * es; e++) wk_fuzz_sink += p[e];
    }
    for (uint64_t e = 0; et == WK_GGUF_STRING && e < n; e++) {
        if (wk_gguf_get_arr_str(g, key, e, &s, &len) != WK_OK) abort();
        if (strlen(s) > len) abort();
        if (len) wk_fuzz_sink += (unsigned char)s[len - 1];
    }
    /* One past the end must be refused. */
    if (et == WK_GGUF_STRING && wk_gguf_get_arr_str(g, key, n, &s, &len) == WK_OK) abort();
}

static void fuzz_tensor(const wk_gguf *g, int64_t i)
{
    const wk_gguf_tensor *t = wk_gguf_tensor_at(g, i);
    if (!t || wk_gguf_find_tensor(g, t->name) != t) abort();
    if (!wk_type_known((int)t->type) || t->n_dims < 1 || t->n_dims > 4) abort();
    if (t->offset % wk_gguf_alignment(g) != 0) abort();
    /* The byte size agrees with the shape, computed without any wrap-around. */
    unsigned __int128 elems = 1;
    for (int d = 0; d < 4; d++) {
        if (t->ne[d] < 1) abort();
        elems *= (unsigned __int128)t->ne[d];
    }
    int64_t bs = wk_type_block_size(t->type);
    if (elems % (unsigned __int128)bs != 0) abort();
    if (elems / (unsigned __int128)bs * wk_type_block_bytes(t->type) != t->nbytes) abort();
    if (t->offset + t->nbytes > wk_gguf_file_size(g) - wk_gguf_data_offset(g)) abort();
    if (t->nbytes) {
        const unsigned char *p = t->data;
        wk_fuzz_sink += p[0] + p[t->nbytes - 1];
    }
    /* The first row through the reference dequantizers (arbitrary bits: NaN and
     * infinite scales included). Rows are bounded by the file's size. */
    int64_t n = t->ne[0];
    size_t row_bytes = 0;
    if (wk_type_row_bytes(t->type, n, &row_bytes) != WK_OK) abort();
    if (row_bytes > t->nbytes || n > (1 << 22)) return;
    /* A file may declare general.alignment 1, 2 or 4 (allowed by the reader, as
     * by llama.cpp): its tensor data may then sit at any address, and whoever
     * reads blocks in place must copy first. Do what such a reader must do. */
    const void *src = t->data;
    void *copy = NULL;
    if ((uintptr_t)src % 8 != 0) {
        if (wk_gguf_alignment(g) >= 8) abort(); /* aligned files give aligned data */
        copy = malloc(row_bytes ? row_bytes : 1);
        if (!copy) return;
        memcpy(copy, src, row_bytes);
        src = copy;
    }
    float *row = malloc((size_t)n * sizeof *row);
    uint16_t *half = malloc((size_t)n * sizeof *half);
    if (row && half) {
        if (wk_dequantize_row(t->type, src, row, n) != WK_OK) abort();
        if (wk_dequantize_row_f16(t->type, src, half, n) != WK_OK) abort();
        wk_fuzz_sink += (unsigned)half[n - 1];
    }
    free(row);
    free(half);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wk_gguf *g = NULL;
    wk_status st = wk_gguf_open_memory(data, size, "fuzz.gguf", &g);
    if (st != WK_OK) {
        /* A refusal always says why, naming the file. */
        if (g || !strstr(wk_last_error(), "fuzz.gguf")) abort();
        return 0;
    }
    if (wk_gguf_data_offset(g) % wk_gguf_alignment(g) != 0) abort();
    for (int64_t i = 0; i < wk_gguf_n_kv(g); i++) fuzz_key(g, i);
    for (int64_t i = 0; i < wk_gguf_n_tensors(g); i++) fuzz_tensor(g, i);
    if (wk_gguf_key(g, wk_gguf_n_kv(g)) || wk_gguf_tensor_at(g, -1)) abort();
    (void)wk_gguf_find_key(g, "general.architecture");
    wk_gguf_close(g);
    return 0;
}
