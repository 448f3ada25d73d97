/* Opening a GGUF file: map it, parse the header, metadata and tensor infos, and
 * validate every count, length, type, dimension and offset against the file size
 * before anything is allocated or used. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "gguf/gguf_internal.h"
#include "wick/quant.h"

typedef unsigned long long ull;

/* A bounds-checked read position in the file. */
typedef struct wk_cursor {
    const wk_gguf *g;
    size_t pos;
    const char *what; /* "header", "key 'x'", "tensor 'y'": the subject of messages */
} wk_cursor;

static size_t wk_left(const wk_cursor *c) { return c->g->size - c->pos; }

static wk_status wk_need(wk_cursor *c, size_t n, const char *part)
{
    if (n <= wk_left(c)) return WK_OK;
    return wk_fail(WK_ERR_FORMAT,
                   "%s: %s: truncated: %s needs %llu bytes at offset %llu, the file is %llu bytes",
                   c->g->path, c->what, part, (ull)n, (ull)c->pos, (ull)c->g->size);
}

static uint32_t wk_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t wk_le64(const uint8_t *p) { return wk_le32(p) | (uint64_t)wk_le32(p + 4) << 32; }

static wk_status wk_read_u32(wk_cursor *c, const char *part, uint32_t *out)
{
    wk_status st = wk_need(c, 4, part);
    if (st) return st;
    *out = wk_le32(c->g->base + c->pos);
    c->pos += 4;
    return WK_OK;
}

static wk_status wk_read_u64(wk_cursor *c, const char *part, uint64_t *out)
{
    wk_status st = wk_need(c, 8, part);
    if (st) return st;
    *out = wk_le64(c->g->base + c->pos);
    c->pos += 8;
    return WK_OK;
}

/* A length-prefixed string: checks the length against the bytes left, and returns
 * a pointer into the file (not NUL-terminated). */
static wk_status wk_read_str_raw(wk_cursor *c, const char *part, const uint8_t **s, uint64_t *len)
{
    wk_status st = wk_read_u64(c, part, len);
    if (st) return st;
    if (*len > WK_GGUF_MAX_STRING)
        return wk_fail(WK_ERR_FORMAT,
                       "%s: %s: %s length %llu at offset %llu exceeds wick's limit of %llu bytes",
                       c->g->path, c->what, part, (ull)*len, (ull)(c->pos - 8),
                       (ull)WK_GGUF_MAX_STRING);
    if (*len > wk_left(c))
        return wk_fail(WK_ERR_FORMAT,
                       "%s: %s: %s length %llu at offset %llu exceeds the %llu bytes left in the "
                       "file",
                       c->g->path, c->what, part, (ull)*len, (ull)(c->pos - 8), (ull)wk_left(c));
    *s = c->g->base + c->pos;
    c->pos += (size_t)*len;
    return WK_OK;
}

static wk_status wk_nomem(const wk_gguf *g, const char *what)
{
    return wk_fail(WK_ERR_NOMEM, "%s: out of memory for %s", g->path, what);
}

static char *wk_copy_str(wk_gguf *g, const uint8_t *s, size_t len)
{
    char *p = wk_arena_alloc(&g->arena, len + 1);
    if (!p) return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

/* A name (key or tensor): non-empty, without NUL bytes. */
static wk_status wk_read_name(wk_cursor *c, wk_gguf *g, const char **out)
{
    const uint8_t *s = NULL;
    uint64_t len = 0;
    wk_status st = wk_read_str_raw(c, "name", &s, &len);
    if (st) return st;
    if (len == 0) return wk_fail(WK_ERR_FORMAT, "%s: %s: empty name", g->path, c->what);
    if (memchr(s, 0, (size_t)len))
        return wk_fail(WK_ERR_FORMAT, "%s: %s: name contains a NUL byte", g->path, c->what);
    char *p = wk_copy_str(g, s, (size_t)len);
    if (!p) return wk_nomem(g, "names");
    *out = p;
    return WK_OK;
}

size_t wk_gguf_vtype_size(uint32_t t)
{
    switch (t) {
    case WK_GGUF_UINT8:
    case WK_GGUF_INT8:
    case WK_GGUF_BOOL: return 1;
    case WK_GGUF_UINT16:
    case WK_GGUF_INT16: return 2;
    case WK_GGUF_UINT32:
    case WK_GGUF_INT32:
    case WK_GGUF_FLOAT32: return 4;
    case WK_GGUF_UINT64:
    case WK_GGUF_INT64:
    case WK_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

bool wk_gguf_vtype_valid(uint32_t t) { return t <= WK_GGUF_FLOAT64; }

/* The least bytes one element of type t occupies in the file. */
static size_t wk_min_elem_bytes(uint32_t t)
{
    if (t == WK_GGUF_STRING) return 8;
    if (t == WK_GGUF_ARRAY) return 12;
    return wk_gguf_vtype_size(t);
}

static wk_status wk_check_bools(const wk_cursor *c, const uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i] > 1)
            return wk_fail(WK_ERR_FORMAT, "%s: %s: bool value %u at offset %llu is not 0 or 1",
                           c->g->path, c->what, p[i], (ull)(p + i - c->g->base));
    return WK_OK;
}

static wk_status wk_read_vtype(wk_cursor *c, const char *part, uint32_t *t)
{
    wk_status st = wk_read_u32(c, part, t);
    if (st) return st;
    if (!wk_gguf_vtype_valid(*t))
        return wk_fail(WK_ERR_FORMAT, "%s: %s: unknown value type %u at offset %llu", c->g->path,
                       c->what, *t, (ull)(c->pos - 4));
    return WK_OK;
}

/* An array's element count, checked against the bytes left. */
static wk_status wk_read_count(wk_cursor *c, uint32_t elem_type, uint64_t *n)
{
    wk_status st = wk_read_u64(c, "array length", n);
    if (st) return st;
    if (*n > WK_GGUF_MAX_ARRAY)
        return wk_fail(WK_ERR_FORMAT,
                       "%s: %s: array length %llu at offset %llu exceeds wick's limit of %llu "
                       "elements",
                       c->g->path, c->what, (ull)*n, (ull)(c->pos - 8), (ull)WK_GGUF_MAX_ARRAY);
    size_t min = wk_min_elem_bytes(elem_type);
    if (*n > wk_left(c) / min)
        return wk_fail(WK_ERR_FORMAT,
                       "%s: %s: array length %llu at offset %llu: %llu elements of %llu bytes or "
                       "more exceed the %llu bytes left in the file",
                       c->g->path, c->what, (ull)*n, (ull)(c->pos - 8), (ull)*n, (ull)min,
                       (ull)wk_left(c));
    return WK_OK;
}

/* The elements of an array of arrays: walked with an explicit stack, so that a
 * hostile nesting depth cannot overflow the C stack; deeper than
 * WK_GGUF_MAX_NESTING levels is refused. */
static wk_status wk_skip_nested(wk_cursor *c, uint64_t n)
{
    /* up to WK_GGUF_MAX_NESTING frames of arrays, and one of strings on top */
    struct {
        uint32_t elem_type;
        uint64_t left;
    } stack[WK_GGUF_MAX_NESTING + 1];
    int depth = 1;
    stack[0].elem_type = WK_GGUF_ARRAY;
    stack[0].left = n;
    while (depth > 0) {
        if (stack[depth - 1].left == 0) {
            depth--;
            continue;
        }
        stack[depth - 1].left--;
        wk_status st;
        if (stack[depth - 1].elem_type == WK_GGUF_STRING) {
            const uint8_t *s = NULL;
            uint64_t len = 0;
            if ((st = wk_read_str_raw(c, "string", &s, &len))) return st;
            continue;
        }
        /* an inner array: its element type, count and elements */
        uint32_t t;
        uint64_t count;
        if ((st = wk_read_vtype(c, "array element type", &t))) return st;
        if ((st = wk_read_count(c, t, &count))) return st;
        size_t size = wk_gguf_vtype_size(t);
        if (size) {
            if (t == WK_GGUF_BOOL && (st = wk_check_bools(c, c->g->base + c->pos, count)))
                return st;
            c->pos += (size_t)count * size;
            continue;
        }
        if (t == WK_GGUF_ARRAY && depth + 1 > WK_GGUF_MAX_NESTING)
            return wk_fail(WK_ERR_FORMAT,
                           "%s: %s: arrays nested deeper than %d levels at offset %llu",
                           c->g->path, c->what, WK_GGUF_MAX_NESTING, (ull)c->pos);
        stack[depth].elem_type = t;
        stack[depth].left = count;
        depth++;
    }
    return WK_OK;
}

static wk_status wk_read_array(wk_cursor *c, wk_gguf *g, wk_gguf_kv *kv)
{
    uint32_t t;
    wk_status st;
    if ((st = wk_read_vtype(c, "array element type", &t))) return st;
    kv->elem_type = (wk_gguf_vtype)t;
    if ((st = wk_read_count(c, t, &kv->n))) return st;
    size_t size = wk_gguf_vtype_size(t);
    if (size) {
        /* counts were checked against the bytes left, so n * size fits */
        size_t bytes = (size_t)kv->n * size;
        const uint8_t *p = g->base + c->pos;
        if (t == WK_GGUF_BOOL && (st = wk_check_bools(c, p, kv->n))) return st;
        void *copy = wk_arena_alloc(&g->arena, bytes ? bytes : 1);
        if (!copy) return wk_nomem(g, "an array");
        memcpy(copy, p, bytes);
        kv->elems = copy;
        c->pos += bytes;
        return WK_OK;
    }
    if (t == WK_GGUF_STRING) {
        size_t n = (size_t)kv->n;
        kv->strs = wk_arena_alloc(&g->arena, n ? n * sizeof(char *) : 1);
        kv->str_lens = wk_arena_alloc(&g->arena, n ? n * sizeof(size_t) : 1);
        if (!kv->strs || !kv->str_lens) return wk_nomem(g, "a string array");
        for (size_t i = 0; i < n; i++) {
            const uint8_t *s = NULL;
            uint64_t len = 0;
            if ((st = wk_read_str_raw(c, "string", &s, &len))) return st;
            if (!(kv->strs[i] = wk_copy_str(g, s, (size_t)len))) return wk_nomem(g, "strings");
            kv->str_lens[i] = (size_t)len;
        }
        return WK_OK;
    }
    return wk_skip_nested(c, kv->n);
}

static wk_status wk_read_value(wk_cursor *c, wk_gguf *g, wk_gguf_kv *kv)
{
    const uint8_t *start = g->base + c->pos;
    size_t size = wk_gguf_vtype_size(kv->type);
    wk_status st = WK_OK;
    if (size) {
        if ((st = wk_need(c, size, "value"))) return st;
        const uint8_t *p = g->base + c->pos;
        uint64_t u = size == 1 ? p[0]
                   : size == 2 ? (uint64_t)(p[0] | p[1] << 8)
                   : size == 4 ? wk_le32(p)
                               : wk_le64(p);
        switch (kv->type) {
        case WK_GGUF_INT8: kv->num.i = (int8_t)u; break;
        case WK_GGUF_INT16: kv->num.i = (int16_t)u; break;
        case WK_GGUF_INT32: kv->num.i = (int32_t)u; break;
        case WK_GGUF_INT64: kv->num.i = (int64_t)u; break;
        case WK_GGUF_FLOAT32: {
            float f;
            uint32_t b = (uint32_t)u;
            memcpy(&f, &b, 4);
            kv->num.f = f;
            break;
        }
        case WK_GGUF_FLOAT64: memcpy(&kv->num.f, &u, 8); break;
        case WK_GGUF_BOOL:
            if ((st = wk_check_bools(c, p, 1))) return st;
            kv->num.u = u;
            break;
        default: kv->num.u = u; break;
        }
        c->pos += size;
    } else if (kv->type == WK_GGUF_STRING) {
        const uint8_t *s = NULL;
        uint64_t len = 0;
        if ((st = wk_read_str_raw(c, "string", &s, &len))) return st;
        if (!(kv->str = wk_copy_str(g, s, (size_t)len))) return wk_nomem(g, "strings");
        kv->str_len = (size_t)len;
    } else {
        if ((st = wk_read_array(c, g, kv))) return st;
    }
    kv->raw = start;
    kv->raw_len = (size_t)(g->base + c->pos - start);
    return WK_OK;
}

static wk_status wk_read_header(wk_cursor *c, wk_gguf *g, uint64_t *n_tensors, uint64_t *n_kv)
{
    wk_status st;
    if (g->size < 4 || memcmp(g->base, "GGUF", 4) != 0) {
        unsigned char m[4] = {0, 0, 0, 0};
        memcpy(m, g->base, g->size < 4 ? g->size : 4);
        return wk_fail(WK_ERR_FORMAT,
                       "%s: not a GGUF file (magic bytes %02x %02x %02x %02x, expected 'GGUF')",
                       g->path, m[0], m[1], m[2], m[3]);
    }
    c->pos = 4;
    if ((st = wk_read_u32(c, "version", &g->version))) return st;
    uint32_t v = g->version;
    uint32_t swapped = (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
    if (v != 2 && v != 3) {
        if ((v & 0xffff) == 0 && swapped >= 1 && swapped <= 0xffff)
            return wk_fail(WK_ERR_UNSUPPORTED,
                           "%s: big-endian GGUF file (version field 0x%08x is version %u "
                           "byte-swapped); wick reads little-endian GGUF only",
                           g->path, v, swapped);
        return wk_fail(WK_ERR_UNSUPPORTED,
                       "%s: GGUF version %u is not supported (wick reads versions 2 and 3)",
                       g->path, v);
    }
    if ((st = wk_read_u64(c, "tensor count", n_tensors))) return st;
    if ((st = wk_read_u64(c, "metadata count", n_kv))) return st;
    if (*n_kv > WK_GGUF_MAX_KV)
        return wk_fail(WK_ERR_FORMAT, "%s: header: n_kv %llu exceeds wick's limit of %llu",
                       g->path, (ull)*n_kv, (ull)WK_GGUF_MAX_KV);
    if (*n_tensors > WK_GGUF_MAX_TENSORS)
        return wk_fail(WK_ERR_FORMAT, "%s: header: n_tensors %llu exceeds wick's limit of %llu",
                       g->path, (ull)*n_tensors, (ull)WK_GGUF_MAX_TENSORS);
    size_t rest = wk_left(c);
    if (*n_kv > rest / WK_GGUF_MIN_KV_BYTES)
        return wk_fail(WK_ERR_FORMAT,
                       "%s: header: n_kv %llu is more than the %llu bytes after the header can "
                       "hold (%d bytes or more each)",
                       g->path, (ull)*n_kv, (ull)rest, WK_GGUF_MIN_KV_BYTES);
    if (*n_tensors > rest / WK_GGUF_MIN_TENSOR_BYTES)
        return wk_fail(WK_ERR_FORMAT,
                       "%s: header: n_tensors %llu is more than the %llu bytes after the header "
                       "can hold (%d bytes or more each)",
                       g->path, (ull)*n_tensors, (ull)rest, WK_GGUF_MIN_TENSOR_BYTES);
    return WK_OK;
}

static wk_status wk_read_kvs(wk_cursor *c, wk_gguf *g, uint64_t n_kv)
{
    char what[320];
    g->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->kv);
    if (!g->kv || !wk_name_index_init(&g->key_index, (size_t)n_kv))
        return wk_nomem(g, "the metadata table");
    for (uint64_t i = 0; i < n_kv; i++) {
        wk_gguf_kv *kv = &g->kv[i];
        wk_status st;
        snprintf(what, sizeof what, "key #%llu", (ull)i);
        c->what = what;
        if ((st = wk_read_name(c, g, &kv->key))) return st;
        snprintf(what, sizeof what, "key '%s'", kv->key);
        uint32_t t;
        if ((st = wk_read_vtype(c, "value type", &t))) return st;
        kv->type = (wk_gguf_vtype)t;
        if ((st = wk_read_value(c, g, kv))) return st;
        g->n_kv = (int64_t)i + 1;
        int64_t prev = wk_name_index_insert(&g->key_index, wk_kv_name_of, g, (int64_t)i);
        if (prev >= 0)
            return wk_fail(WK_ERR_FORMAT, "%s: duplicate key '%s' (entries %lld and %llu)",
                           g->path, kv->key, (long long)prev, (ull)i);
    }
    return WK_OK;
}

static wk_status wk_read_alignment(wk_gguf *g)
{
    g->alignment = WK_GGUF_DEFAULT_ALIGNMENT;
    int64_t i = wk_gguf_find_key(g, "general.alignment");
    if (i < 0) return WK_OK;
    const wk_gguf_kv *kv = &g->kv[i];
    uint64_t a;
    switch (kv->type) {
    case WK_GGUF_UINT8:
    case WK_GGUF_UINT16:
    case WK_GGUF_UINT32:
    case WK_GGUF_UINT64: a = kv->num.u; break;
    case WK_GGUF_INT8:
    case WK_GGUF_INT16:
    case WK_GGUF_INT32:
    case WK_GGUF_INT64:
        if (kv->num.i < 0)
            return wk_fail(WK_ERR_FORMAT, "%s: general.alignment %lld is negative", g->path,
                           (long long)kv->num.i);
        a = (uint64_t)kv->num.i;
        break;
    default:
        return wk_fail(WK_ERR_FORMAT, "%s: general.alignment is a %s, not an integer", g->path,
                       wk_gguf_vtype_name(kv->type));
    }
    if (a == 0 || (a & (a - 1)) != 0)
        return wk_fail(WK_ERR_FORMAT, "%s: general.alignment %llu is not a power of two", g->path,
                       (ull)a);
    if (a > WK_GGUF_MAX_ALIGNMENT)
        return wk_fail(WK_ERR_FORMAT, "%s: general.alignment %llu is larger than the limit %llu",
                       g->path, (ull)a, (ull)WK_GGUF_MAX_ALIGNMENT);
    g->alignment = (size_t)a;
    return WK_OK;
}

/* One tensor info: name, dims, type, offset; everything but the data range. */
static wk_status wk_read_tensor_info(wk_cursor *c, wk_gguf *g, wk_gguf_tensor *t, char *what,
                                     size_t cap)
{
    wk_status st;
    uint32_t n_dims, type;
    if ((st = wk_read_name(c, g, &t->name))) return st;
    snprintf(what, cap, "tensor '%s'", t->name);
    if ((st = wk_read_u32(c, "n_dims", &n_dims))) return st;
    if (n_dims < 1 || n_dims > WK_GGUF_MAX_DIMS)
        return wk_fail(WK_ERR_FORMAT, "%s: tensor '%s': n_dims %u is not between 1 and %d",
                       g->path, t->name, n_dims, WK_GGUF_MAX_DIMS);
    t->n_dims = (int)n_dims;
    for (int d = 0; d < WK_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        uint64_t ne;
        if ((st = wk_read_u64(c, "dimension", &ne))) return st;
        if (ne == 0 || ne > INT64_MAX)
            return wk_fail(WK_ERR_FORMAT,
                           "%s: tensor '%s': ne[%u] = %llu (each dimension must be between 1 "
                           "and 2^63-1)",
                           g->path, t->name, d, (ull)ne);
        t->ne[d] = (int64_t)ne;
    }
    if ((st = wk_read_u32(c, "type", &type))) return st;
    if ((st = wk_read_u64(c, "offset", &t->offset))) return st;

    if (type > INT32_MAX || !wk_type_known((int)type))
        return wk_fail(WK_ERR_FORMAT, "%s: tensor '%s': unknown or removed type id %u", g->path,
                       t->name, type);
    t->type = (wk_type)type;
    int64_t rows = 1;
    for (int d = 1; d < t->n_dims; d++) {
        if (rows > INT64_MAX / t->ne[d] || (rows * t->ne[d]) > INT64_MAX / t->ne[0])
            return wk_fail(WK_ERR_FORMAT,
                           "%s: tensor '%s': element count overflows (ne = %lld x %lld x %lld x "
                           "%lld)",
                           g->path, t->name, (long long)t->ne[0], (long long)t->ne[1],
                           (long long)t->ne[2], (long long)t->ne[3]);
        rows *= t->ne[d];
    }
    int64_t bs = wk_type_block_size(t->type);
    if (t->ne[0] % bs != 0)
        return wk_fail(WK_ERR_FORMAT,
                       "%s: tensor '%s': row length ne[0] = %lld is not a multiple of %s's block "
                       "size %lld",
                       g->path, t->name, (long long)t->ne[0], wk_type_name(t->type),
                       (long long)bs);
    /* bytes = (ne[0] / block size) * block bytes * rows, each step checked */
    size_t block_bytes = wk_type_block_bytes(t->type);
    size_t row_bytes;
    if ((uint64_t)(t->ne[0] / bs) > SIZE_MAX / block_bytes ||
        wk_type_row_bytes(t->type, t->ne[0], &row_bytes) != WK_OK)
        return wk_fail(WK_ERR_FORMAT,
                       "%s: tensor '%s': a row of ne[0] = %lld %s elements overflows its byte size",
                       g->path, t->name, (long long)t->ne[0], wk_type_name(t->type));
    if ((uint64_t)rows > SIZE_MAX / row_bytes)
        return wk_fail(WK_ERR_FORMAT,
                       "%s: tensor '%s': byte size overflows (%lld rows of %llu bytes, ne = %lld x "
                       "%lld x %lld x %lld of %s)",
                       g->path, t->name, (long long)rows, (ull)row_bytes, (long long)t->ne[0],
                       (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                       wk_type_name(t->type));
    t->nbytes = row_bytes * (size_t)rows;
    if (t->offset % g->alignment != 0)
        return wk_fail(WK_ERR_FORMAT,
                       "%s: tensor '%s': offset %llu is not a multiple of the alignment %llu",
                       g->path, t->name, (ull)t->offset, (ull)g->alignment);
    return WK_OK;
}

static int wk_by_offset(const void *a, const void *b)
{
    const wk_gguf_tensor *x = *(const wk_gguf_tensor *const *)a;
    const wk_gguf_tensor *y = *(const wk_gguf_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x < y ? -1 : x > y; /* ties in table order, for a stable message */
}

/* No two tensors share bytes: callers may rewrite one in place without touching
 * another. */
static wk_status wk_check_overlaps(wk_gguf *g)
{
    if (g->n_tensors < 2) return WK_OK;
    wk_gguf_tensor **order = malloc((size_t)g->n_tensors * sizeof *order);
    if (!order) return wk_nomem(g, "the tensor table");
    for (int64_t i = 0; i < g->n_tensors; i++) order[i] = &g->tensors[i];
    qsort(order, (size_t)g->n_tensors, sizeof *order, wk_by_offset);
    wk_status st = WK_OK;
    for (int64_t i = 1; i < g->n_tensors && !st; i++) {
        const wk_gguf_tensor *a = order[i - 1], *b = order[i];
        if (a->offset + a->nbytes > b->offset)
            st = wk_fail(WK_ERR_FORMAT,
                         "%s: tensors '%s' (offset %llu, %llu bytes) and '%s' (offset %llu) "
                         "overlap",
                         g->path, a->name, (ull)a->offset, (ull)a->nbytes, b->name,
                         (ull)b->offset);
    }
    free(order);
    return st;
}

static wk_status wk_read_tensors(wk_cursor *c, wk_gguf *g, uint64_t n_tensors)
{
    char what[320];
    if (n_tensors > wk_left(c) / WK_GGUF_MIN_TENSOR_BYTES)
        return wk_fail(WK_ERR_FORMAT,
                       "%s: header: n_tensors %llu is more than the %llu bytes after the "
                       "metadata can hold (%d bytes or more each)",
                       g->path, (ull)n_tensors, (ull)wk_left(c), WK_GGUF_MIN_TENSOR_BYTES);
    g->tensors = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *g->tensors);
    if (!g->tensors || !wk_name_index_init(&g->tensor_index, (size_t)n_tensors))
        return wk_nomem(g, "the tensor table");
    for (uint64_t i = 0; i < n_tensors; i++) {
        wk_gguf_tensor *t = &g->tensors[i];
        snprintf(what, sizeof what, "tensor #%llu", (ull)i);
        c->what = what;
        wk_status st = wk_read_tensor_info(c, g, t, what, sizeof what);
        if (st) return st;
        g->n_tensors = (int64_t)i + 1;
        int64_t prev = wk_name_index_insert(&g->tensor_index, wk_tensor_name_of, g, (int64_t)i);
        if (prev >= 0)
            return wk_fail(WK_ERR_FORMAT, "%s: duplicate tensor name '%s' (tensors %lld and %llu)",
                           g->path, t->name, (long long)prev, (ull)i);
    }

    /* The data section starts at the next multiple of the alignment. */
    size_t a = g->alignment;
    size_t start = c->pos + (a - c->pos % a) % a;
    g->data_offset = start;
    if (n_tensors == 0) return WK_OK;
    if (start > g->size)
        return wk_fail(WK_ERR_FORMAT,
                       "%s: the data section would start at offset %llu, past the end of the "
                       "file (%llu bytes)",
                       g->path, (ull)start, (ull)g->size);
    size_t data_size = g->size - start;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        wk_gguf_tensor *t = &g->tensors[i];
        if (t->offset > data_size || t->nbytes > data_size - t->offset)
            return wk_fail(WK_ERR_FORMAT,
                           "%s: tensor '%s': data at offset %llu, %llu bytes, lies outside the "
                           "data section (%llu bytes from offset %llu of the file)",
                           g->path, t->name, (ull)t->offset, (ull)t->nbytes, (ull)data_size,
                           (ull)start);
        t->data = g->base + start + t->offset;
    }
    return wk_check_overlaps(g);
}

static wk_status wk_parse(wk_gguf *g)
{
    wk_cursor c = {g, 0, "header"};
    uint64_t n_tensors, n_kv;
    wk_status st;
    if ((st = wk_read_header(&c, g, &n_tensors, &n_kv))) return st;
    if ((st = wk_read_kvs(&c, g, n_kv))) return st;
    if ((st = wk_read_alignment(g))) return st;
    return wk_read_tensors(&c, g, n_tensors);
}

static wk_status wk_new_handle(const char *name, wk_gguf **out)
{
    wk_gguf *g = calloc(1, sizeof *g);
    char *path = strdup(name ? name : "<memory>");
    if (!g || !path) {
        free(g);
        free(path);
        return wk_fail(WK_ERR_NOMEM, "%s: out of memory", name ? name : "<memory>");
    }
    g->path = path;
    *out = g;
    return WK_OK;
}

wk_status wk_gguf_open_memory(const void *data, size_t size, const char *name, wk_gguf **out)
{
    if (!out || (!data && size))
        return wk_fail(WK_ERR_INVALID, "wk_gguf_open_memory: NULL argument");
    *out = NULL;
    wk_gguf *g = NULL;
    wk_status st = wk_new_handle(name, &g);
    if (st) return st;
    static const uint8_t empty[1];
    g->base = data ? data : empty;
    g->size = size;
    if ((st = wk_parse(g))) {
        wk_gguf_close(g);
        return st;
    }
    *out = g;
    return WK_OK;
}

wk_status wk_gguf_open(const char *path, wk_gguf **out)
{
    if (!path || !out) return wk_fail(WK_ERR_INVALID, "wk_gguf_open: NULL argument");
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return wk_fail(WK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return wk_fail(WK_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return wk_fail(WK_ERR_IO, "%s: not a regular file", path);
    }
    if (sb.st_size < WK_GGUF_HEADER_BYTES) {
        close(fd);
        return wk_fail(WK_ERR_FORMAT, "%s: %lld bytes is too small for a GGUF header (%d bytes)",
                       path, (long long)sb.st_size, WK_GGUF_HEADER_BYTES);
    }
    if ((unsigned long long)sb.st_size > SIZE_MAX) {
        close(fd);
        return wk_fail(WK_ERR_UNSUPPORTED, "%s: %lld bytes cannot be mapped", path,
                       (long long)sb.st_size);
    }
    size_t size = (size_t)sb.st_size;
    /* Private and writable: callers may rearrange tensor bytes in place; the file
     * itself is never written. */
    void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED) return wk_fail(WK_ERR_IO, "%s: cannot map: %s", path, strerror(e));

    wk_gguf *g = NULL;
    wk_status st = wk_new_handle(path, &g);
    if (st) {
        munmap(map, size);
        return st;
    }
    g->map = map;
    g->base = map;
    g->size = size;
    if ((st = wk_parse(g))) {
        wk_gguf_close(g);
        return st;
    }
    *out = g;
    return WK_OK;
}

void wk_gguf_close(wk_gguf *g)
{
    if (!g) return;
    if (g->map) munmap(g->map, g->size);
    wk_name_index_free(&g->key_index);
    wk_name_index_free(&g->tensor_index);
    wk_arena_free(&g->arena);
    free(g->kv);
    free(g->tensors);
    free(g->path);
    free(g);
}
