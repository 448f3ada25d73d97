/* Building GGUF bytes by hand, field by field, so that tests can write exactly the
 * malformed or hostile file they mean (wrong counts, lengths, types, offsets) —
 * things no well-behaved writer produces. Little-endian, as GGUF is. */
#ifndef WICK_TESTS_HOSTILE_GGUF_H
#define WICK_TESTS_HOSTILE_GGUF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct hg_buf {
    uint8_t *p;
    size_t len, cap;
} hg_buf;

static inline void hg_bytes(hg_buf *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) abort(); /* the test's own memory */
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, src, n);
    b->len += n;
}

static inline void hg_zeros(hg_buf *b, size_t n)
{
    static const uint8_t zero[256];
    while (n) {
        size_t k = n < sizeof zero ? n : sizeof zero;
        hg_bytes(b, zero, k);
        n -= k;
    }
}

static inline void hg_u8(hg_buf *b, uint8_t v) { hg_bytes(b, &v, 1); }

static inline void hg_u32(hg_buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    hg_bytes(b, x, 4);
}

static inline void hg_u64(hg_buf *b, uint64_t v)
{
    hg_u32(b, (uint32_t)v);
    hg_u32(b, (uint32_t)(v >> 32));
}

/* A GGUF string: u64 length, then the bytes. */
static inline void hg_str(hg_buf *b, const char *s)
{
    hg_u64(b, strlen(s));
    hg_bytes(b, s, strlen(s));
}

static inline void hg_header(hg_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    hg_bytes(b, "GGUF", 4);
    hg_u32(b, version);
    hg_u64(b, n_tensors);
    hg_u64(b, n_kv);
}

/* Metadata entries (value types as numbered in GGUF: 4 uint32, 8 string, 9 array, 10 uint64). */
static inline void hg_kv_u32(hg_buf *b, const char *key, uint32_t v)
{
    hg_str(b, key);
    hg_u32(b, 4);
    hg_u32(b, v);
}

static inline void hg_kv_str(hg_buf *b, const char *key, const char *v)
{
    hg_str(b, key);
    hg_u32(b, 8);
    hg_str(b, v);
}

/* The start of an array entry; the caller writes the n elements. */
static inline void hg_kv_arr(hg_buf *b, const char *key, uint32_t elem_type, uint64_t n)
{
    hg_str(b, key);
    hg_u32(b, 9);
    hg_u32(b, elem_type);
    hg_u64(b, n);
}

/* A tensor info; ne is innermost first, as in the file. */
static inline void hg_tensor(hg_buf *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                             uint32_t type, uint64_t offset)
{
    hg_str(b, name);
    hg_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) hg_u64(b, ne[d]);
    hg_u32(b, type);
    hg_u64(b, offset);
}

/* Zero bytes up to the next multiple of a. */
static inline void hg_pad(hg_buf *b, size_t a) { hg_zeros(b, (a - b->len % a) % a); }

static inline void hg_free(hg_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

#endif
