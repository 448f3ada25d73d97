/* Hand-assembling GGUF bytes in tests: a growable little-endian byte buffer. */
#ifndef WICK_TESTS_GGUF_BYTES_H
#define WICK_TESTS_GGUF_BYTES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct tb_buf {
    uint8_t *p;
    size_t len, cap;
} tb_buf;

static inline void tb_put(tb_buf *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) abort();
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static inline void tb_u8(tb_buf *b, uint8_t v) { tb_put(b, &v, 1); }
static inline void tb_u32(tb_buf *b, uint32_t v) { tb_put(b, &v, 4); }
static inline void tb_u64(tb_buf *b, uint64_t v) { tb_put(b, &v, 8); }
static inline void tb_str(tb_buf *b, const char *s)
{
    tb_u64(b, strlen(s));
    tb_put(b, s, strlen(s));
}
/* Header: magic, version, tensor count, kv count. */
static inline void tb_header(tb_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    tb_put(b, "GGUF", 4);
    tb_u32(b, version);
    tb_u64(b, n_tensors);
    tb_u64(b, n_kv);
}
static inline void tb_pad(tb_buf *b, size_t align)
{
    while (b->len % align) tb_u8(b, 0);
}
static inline void tb_free(tb_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

#endif
