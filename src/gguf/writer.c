/* Writing GGUF version 3: metadata values are kept serialized (little-endian, as
 * in the file) from the moment they are set, so that copying a value out of an
 * open file, nested arrays included, is copying its bytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "gguf/gguf_internal.h"
#include "wick/quant.h"

typedef unsigned long long ull;

typedef struct wk_wkv {
    char *key;
    uint32_t type;
    uint8_t *value; /* serialized value bytes */
    size_t len;
} wk_wkv;

typedef struct wk_wtensor {
    char *name;
    wk_type type;
    int n_dims;
    int64_t ne[4];
    const void *data; /* owned when owned is set */
    void *owned;
    size_t nbytes;
    uint64_t offset; /* assigned at write time */
} wk_wtensor;

struct wk_gguf_writer {
    wk_wkv *kv;
    size_t n_kv, cap_kv;
    wk_wtensor *tensors;
    size_t n_tensors, cap_tensors;
};

/* A growable byte buffer for the header, metadata and tensor infos. */
typedef struct wk_bytes {
    uint8_t *p;
    size_t len, cap;
    bool failed;
} wk_bytes;

static void wk_bytes_put(wk_bytes *b, const void *src, size_t n)
{
    if (b->failed) return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) {
                b->failed = true;
                return;
            }
            cap *= 2;
        }
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void wk_bytes_u32(wk_bytes *b, uint32_t v)
{
    uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    wk_bytes_put(b, le, 4);
}

static void wk_bytes_u64(wk_bytes *b, uint64_t v)
{
    wk_bytes_u32(b, (uint32_t)v);
    wk_bytes_u32(b, (uint32_t)(v >> 32));
}

static void wk_bytes_str(wk_bytes *b, const char *s, size_t len)
{
    wk_bytes_u64(b, len);
    wk_bytes_put(b, s, len);
}

wk_status wk_gguf_writer_create(wk_gguf_writer **out)
{
    if (!out) return wk_fail(WK_ERR_INVALID, "wk_gguf_writer_create: NULL argument");
    *out = calloc(1, sizeof **out);
    return *out ? WK_OK : wk_fail(WK_ERR_NOMEM, "out of memory for a GGUF writer");
}

void wk_gguf_writer_free(wk_gguf_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].value);
    }
    for (size_t i = 0; i < w->n_tensors; i++) {
        free(w->tensors[i].name);
        free(w->tensors[i].owned);
    }
    free(w->kv);
    free(w->tensors);
    free(w);
}

/* Set key to a serialized value of type t (taking ownership of value). */
static wk_status wk_set_raw(wk_gguf_writer *w, const char *key, uint32_t t, uint8_t *value,
                            size_t len)
{
    if (!w || !key || !*key) {
        free(value);
        return wk_fail(WK_ERR_INVALID, "GGUF writer: a key must be a non-empty string");
    }
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, key) == 0) {
            free(w->kv[i].value);
            w->kv[i].type = t;
            w->kv[i].value = value;
            w->kv[i].len = len;
            return WK_OK;
        }
    }
    if (w->n_kv == w->cap_kv) {
        size_t cap = w->cap_kv ? 2 * w->cap_kv : 16;
        wk_wkv *kv = realloc(w->kv, cap * sizeof *kv);
        if (!kv) {
            free(value);
            return wk_fail(WK_ERR_NOMEM, "GGUF writer: out of memory for key '%s'", key);
        }
        w->kv = kv;
        w->cap_kv = cap;
    }
    char *k = strdup(key);
    if (!k) {
        free(value);
        return wk_fail(WK_ERR_NOMEM, "GGUF writer: out of memory for key '%s'", key);
    }
    w->kv[w->n_kv++] = (wk_wkv){k, t, value, len};
    return WK_OK;
}

/* Serialize a value from a byte buffer and set it. */
static wk_status wk_set_bytes(wk_gguf_writer *w, const char *key, uint32_t t, wk_bytes *b)
{
    if (b->failed) {
        free(b->p);
        return wk_fail(WK_ERR_NOMEM, "GGUF writer: out of memory for key '%s'", key ? key : "");
    }
    return wk_set_raw(w, key, t, b->p, b->len);
}

wk_status wk_gguf_writer_set_value(wk_gguf_writer *w, const char *key, wk_gguf_vtype type,
                                   const void *value)
{
    size_t size = wk_gguf_vtype_size((uint32_t)type);
    if (!size || !value)
        return wk_fail(WK_ERR_INVALID, "GGUF writer: key '%s': type %s is not a scalar",
                       key ? key : "", wk_gguf_vtype_name(type));
    if (type == WK_GGUF_BOOL && *(const uint8_t *)value > 1)
        return wk_fail(WK_ERR_INVALID, "GGUF writer: key '%s': bool value %u is not 0 or 1",
                       key ? key : "", *(const uint8_t *)value);
    wk_bytes b = {0};
    wk_bytes_put(&b, value, size); /* wick runs on little-endian hosts only */
    return wk_set_bytes(w, key, (uint32_t)type, &b);
}

wk_status wk_gguf_writer_set_u32(wk_gguf_writer *w, const char *key, uint32_t v)
{
    return wk_gguf_writer_set_value(w, key, WK_GGUF_UINT32, &v);
}

wk_status wk_gguf_writer_set_i32(wk_gguf_writer *w, const char *key, int32_t v)
{
    return wk_gguf_writer_set_value(w, key, WK_GGUF_INT32, &v);
}

wk_status wk_gguf_writer_set_u64(wk_gguf_writer *w, const char *key, uint64_t v)
{
    return wk_gguf_writer_set_value(w, key, WK_GGUF_UINT64, &v);
}

wk_status wk_gguf_writer_set_f32(wk_gguf_writer *w, const char *key, float v)
{
    return wk_gguf_writer_set_value(w, key, WK_GGUF_FLOAT32, &v);
}

wk_status wk_gguf_writer_set_bool(wk_gguf_writer *w, const char *key, bool v)
{
    uint8_t b = v ? 1 : 0;
    return wk_gguf_writer_set_value(w, key, WK_GGUF_BOOL, &b);
}

wk_status wk_gguf_writer_set_str(wk_gguf_writer *w, const char *key, const char *v)
{
    if (!v) return wk_fail(WK_ERR_INVALID, "GGUF writer: key '%s': NULL string", key ? key : "");
    wk_bytes b = {0};
    wk_bytes_str(&b, v, strlen(v));
    return wk_set_bytes(w, key, WK_GGUF_STRING, &b);
}

wk_status wk_gguf_writer_set_arr(wk_gguf_writer *w, const char *key, wk_gguf_vtype elem_type,
                                 const void *data, uint64_t n)
{
    size_t size = wk_gguf_vtype_size((uint32_t)elem_type);
    if (!size)
        return wk_fail(WK_ERR_INVALID,
                       "GGUF writer: key '%s': arrays of %s are written with "
                       "wk_gguf_writer_set_arr_str or wk_gguf_writer_copy_kv",
                       key ? key : "", wk_gguf_vtype_name(elem_type));
    if (n > SIZE_MAX / size || (n && !data))
        return wk_fail(WK_ERR_INVALID, "GGUF writer: key '%s': bad array of %llu elements",
                       key ? key : "", (ull)n);
    if (elem_type == WK_GGUF_BOOL)
        for (uint64_t i = 0; i < n; i++)
            if (((const uint8_t *)data)[i] > 1)
                return wk_fail(WK_ERR_INVALID,
                               "GGUF writer: key '%s': bool element %llu is %u, not 0 or 1",
                               key ? key : "", (ull)i, ((const uint8_t *)data)[i]);
    wk_bytes b = {0};
    wk_bytes_u32(&b, (uint32_t)elem_type);
    wk_bytes_u64(&b, n);
    if (n) wk_bytes_put(&b, data, (size_t)n * size);
    return wk_set_bytes(w, key, WK_GGUF_ARRAY, &b);
}

wk_status wk_gguf_writer_set_arr_str(wk_gguf_writer *w, const char *key,
                                     const char *const *strs, uint64_t n)
{
    if (n && !strs)
        return wk_fail(WK_ERR_INVALID, "GGUF writer: key '%s': NULL strings", key ? key : "");
    wk_bytes b = {0};
    wk_bytes_u32(&b, WK_GGUF_STRING);
    wk_bytes_u64(&b, n);
    for (uint64_t i = 0; i < n; i++) {
        if (!strs[i]) {
            free(b.p);
            return wk_fail(WK_ERR_INVALID, "GGUF writer: key '%s': string %llu is NULL",
                           key ? key : "", (ull)i);
        }
        wk_bytes_str(&b, strs[i], strlen(strs[i]));
    }
    return wk_set_bytes(w, key, WK_GGUF_ARRAY, &b);
}

wk_status wk_gguf_writer_copy_kv(wk_gguf_writer *w, const wk_gguf *g, int64_t i)
{
    if (!g || i < 0 || i >= g->n_kv)
        return wk_fail(WK_ERR_INVALID, "GGUF writer: no metadata entry %lld to copy",
                       (long long)i);
    const wk_gguf_kv *kv = &g->kv[i];
    wk_bytes b = {0};
    wk_bytes_put(&b, kv->raw, kv->raw_len);
    return wk_set_bytes(w, kv->key, kv->type, &b);
}

/* The alignment a file will be written with: general.alignment if set, else 32. */
static wk_status wk_writer_alignment(const wk_gguf_writer *w, size_t *out)
{
    *out = WK_GGUF_DEFAULT_ALIGNMENT;
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, "general.alignment") != 0) continue;
        size_t size = wk_gguf_vtype_size(w->kv[i].type);
        bool is_int = size && w->kv[i].type != WK_GGUF_BOOL && w->kv[i].type != WK_GGUF_FLOAT32 &&
                      w->kv[i].type != WK_GGUF_FLOAT64;
        if (!is_int)
            return wk_fail(WK_ERR_INVALID, "GGUF writer: general.alignment is a %s, not an integer",
                           wk_gguf_vtype_name(w->kv[i].type));
        uint64_t a = 0;
        for (size_t k = 0; k < size; k++) a |= (uint64_t)w->kv[i].value[k] << (8 * k);
        if (a == 0 || (a & (a - 1)) || a > WK_GGUF_MAX_ALIGNMENT)
            return wk_fail(WK_ERR_INVALID,
                           "GGUF writer: general.alignment %llu is not a power of two up to %llu",
                           (ull)a, (ull)WK_GGUF_MAX_ALIGNMENT);
        *out = (size_t)a;
    }
    return WK_OK;
}

wk_status wk_gguf_writer_set_alignment(wk_gguf_writer *w, size_t alignment)
{
    if (alignment == 0 || (alignment & (alignment - 1)) || alignment > WK_GGUF_MAX_ALIGNMENT)
        return wk_fail(WK_ERR_INVALID, "GGUF writer: alignment %llu is not a power of two up to %llu",
                       (ull)alignment, (ull)WK_GGUF_MAX_ALIGNMENT);
    return wk_gguf_writer_set_u32(w, "general.alignment", (uint32_t)alignment);
}

static wk_status wk_add_tensor(wk_gguf_writer *w, const char *name, wk_type type, int n_dims,
                               const int64_t *ne, const void *data, size_t nbytes, bool copy)
{
    if (!w || !name || !*name)
        return wk_fail(WK_ERR_INVALID, "GGUF writer: a tensor name must be a non-empty string");
    if (!wk_type_known((int)type))
        return wk_fail(WK_ERR_INVALID, "GGUF writer: tensor '%s': unknown type id %d", name,
                       (int)type);
    if (n_dims < 1 || n_dims > WK_GGUF_MAX_DIMS || !ne)
        return wk_fail(WK_ERR_INVALID, "GGUF writer: tensor '%s': n_dims %d is not between 1 and %d",
                       name, n_dims, WK_GGUF_MAX_DIMS);
    int64_t rows = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] < 1)
            return wk_fail(WK_ERR_INVALID, "GGUF writer: tensor '%s': ne[%d] = %lld is not positive",
                           name, d, (long long)ne[d]);
        if (d > 0) {
            if (rows > INT64_MAX / ne[d] || rows * ne[d] > INT64_MAX / ne[0])
                return wk_fail(WK_ERR_INVALID, "GGUF writer: tensor '%s': element count overflows",
                               name);
            rows *= ne[d];
        }
    }
    size_t row_bytes;
    wk_status st = wk_type_row_bytes(type, ne[0], &row_bytes);
    if (st) return wk_fail_context(st, "GGUF writer: tensor '%s'", name);
    if ((uint64_t)(ne[0] / wk_type_block_size(type)) > SIZE_MAX / wk_type_block_bytes(type))
        return wk_fail(WK_ERR_INVALID, "GGUF writer: tensor '%s': byte size overflows", name);
    if ((uint64_t)rows > SIZE_MAX / row_bytes || nbytes != row_bytes * (size_t)rows || !data)
        return wk_fail(WK_ERR_INVALID,
                       "GGUF writer: tensor '%s': %llu bytes given, a %s tensor of %lld rows of "
                       "%lld needs %llu",
                       name, (ull)nbytes, wk_type_name(type), (long long)rows, (long long)ne[0],
                       (ull)((uint64_t)rows * row_bytes));
    for (size_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return wk_fail(WK_ERR_INVALID, "GGUF writer: duplicate tensor name '%s'", name);
    if (w->n_tensors == w->cap_tensors) {
        size_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
        wk_wtensor *t = realloc(w->tensors, cap * sizeof *t);
        if (!t) return wk_fail(WK_ERR_NOMEM, "GGUF writer: out of memory for tensor '%s'", name);
        w->tensors = t;
        w->cap_tensors = cap;
    }
    wk_wtensor t = {.type = type, .n_dims = n_dims, .nbytes = nbytes};
    for (int d = 0; d < WK_GGUF_MAX_DIMS; d++) t.ne[d] = d < n_dims ? ne[d] : 1;
    t.name = strdup(name);
    if (copy) {
        t.owned = malloc(nbytes);
        if (t.owned) memcpy(t.owned, data, nbytes);
        t.data = t.owned;
    } else {
        t.data = data;
    }
    if (!t.name || !t.data) {
        free(t.name);
        free(t.owned);
        return wk_fail(WK_ERR_NOMEM, "GGUF writer: out of memory for tensor '%s' (%llu bytes)",
                       name, (ull)nbytes);
    }
    w->tensors[w->n_tensors++] = t;
    return WK_OK;
}

wk_status wk_gguf_writer_add_tensor(wk_gguf_writer *w, const char *name, wk_type type, int n_dims,
                                    const int64_t *ne, const void *data, size_t nbytes)
{
    return wk_add_tensor(w, name, type, n_dims, ne, data, nbytes, true);
}

wk_status wk_gguf_writer_add_tensor_ref(wk_gguf_writer *w, const char *name, wk_type type,
                                        int n_dims, const int64_t *ne, const void *data,
                                        size_t nbytes)
{
    return wk_add_tensor(w, name, type, n_dims, ne, data, nbytes, false);
}

static size_t wk_pad(size_t n, size_t a) { return (a - n % a) % a; }

/* Header, metadata and tensor infos (with offsets assigned), padded to the
 * alignment; *data_bytes receives the size of the data section. */
static wk_status wk_layout(wk_gguf_writer *w, wk_bytes *b, size_t *data_bytes)
{
    size_t a;
    wk_status st = wk_writer_alignment(w, &a);
    if (st) return st;
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        w->tensors[i].offset = off;
        size_t n = w->tensors[i].nbytes;
        if (off > SIZE_MAX - n - a)
            return wk_fail(WK_ERR_INVALID, "GGUF writer: tensor data exceeds the address space");
        off += n + wk_pad(n, a);
    }
    *data_bytes = (size_t)off;

    wk_bytes_put(b, "GGUF", 4);
    wk_bytes_u32(b, 3);
    wk_bytes_u64(b, w->n_tensors);
    wk_bytes_u64(b, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        wk_bytes_str(b, w->kv[i].key, strlen(w->kv[i].key));
        wk_bytes_u32(b, w->kv[i].type);
        wk_bytes_put(b, w->kv[i].value, w->kv[i].len);
    }
    for (size_t i = 0; i < w->n_tensors; i++) {
        const wk_wtensor *t = &w->tensors[i];
        wk_bytes_str(b, t->name, strlen(t->name));
        wk_bytes_u32(b, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++) wk_bytes_u64(b, (uint64_t)t->ne[d]);
        wk_bytes_u32(b, (uint32_t)t->type);
        wk_bytes_u64(b, t->offset);
    }
    static const uint8_t zeros[WK_GGUF_DEFAULT_ALIGNMENT];
    for (size_t pad = wk_pad(b->len, a); pad > 0;) {
        size_t n = pad < sizeof zeros ? pad : sizeof zeros;
        wk_bytes_put(b, zeros, n);
        pad -= n;
    }
    if (b->failed) return wk_fail(WK_ERR_NOMEM, "GGUF writer: out of memory for the header");
    return WK_OK;
}

wk_status wk_gguf_writer_write_memory(wk_gguf_writer *w, void **data, size_t *size)
{
    if (!w || !data || !size)
        return wk_fail(WK_ERR_INVALID, "wk_gguf_writer_write_memory: NULL argument");
    wk_bytes b = {0};
    size_t data_bytes;
    wk_status st = wk_layout(w, &b, &data_bytes);
    if (st || data_bytes > SIZE_MAX - b.len) {
        free(b.p);
        return st ? st : wk_fail(WK_ERR_NOMEM, "GGUF writer: file too large for memory");
    }
    uint8_t *out = calloc(1, b.len + data_bytes ? b.len + data_bytes : 1);
    if (!out) {
        free(b.p);
        return wk_fail(WK_ERR_NOMEM, "GGUF writer: out of memory for a %llu-byte file",
                       (ull)(b.len + data_bytes));
    }
    memcpy(out, b.p, b.len);
    for (size_t i = 0; i < w->n_tensors; i++)
        memcpy(out + b.len + w->tensors[i].offset, w->tensors[i].data, w->tensors[i].nbytes);
    *data = out;
    *size = b.len + data_bytes;
    free(b.p);
    return WK_OK;
}

/* write(2) until all n bytes are out; false (errno set) on failure. */
static bool wk_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *q = p;
    while (n > 0) {
        ssize_t k = write(fd, q, n < ((size_t)1 << 30) ? n : ((size_t)1 << 30));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (k == 0) errno = EIO;
            return false;
        }
        q += k;
        n -= (size_t)k;
    }
    return true;
}

static bool wk_write_zeros(int fd, size_t n)
{
    static const uint8_t zeros[256];
    while (n > 0) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        if (!wk_write_all(fd, zeros, k)) return false;
        n -= k;
    }
    return true;
}

wk_status wk_gguf_writer_write(wk_gguf_writer *w, const char *path)
{
    if (!w || !path) return wk_fail(WK_ERR_INVALID, "wk_gguf_writer_write: NULL argument");
    wk_bytes b = {0};
    size_t data_bytes, a;
    wk_status st = wk_layout(w, &b, &data_bytes);
    if (!st) st = wk_writer_alignment(w, &a);
    if (st) {
        free(b.p);
        return st;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        free(b.p);
        return wk_fail(WK_ERR_IO, "%s: cannot create: %s", path, strerror(e));
    }
    bool ok = wk_write_all(fd, b.p, b.len);
    for (size_t i = 0; ok && i < w->n_tensors; i++) {
        const wk_wtensor *t = &w->tensors[i];
        ok = wk_write_all(fd, t->data, t->nbytes) && wk_write_zeros(fd, wk_pad(t->nbytes, a));
    }
    int e = ok ? 0 : errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    free(b.p);
    if (!ok) {
        unlink(path);
        return wk_fail(WK_ERR_IO, "%s: write failed: %s", path, strerror(e));
    }
    return WK_OK;
}
