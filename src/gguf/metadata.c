/* Reading an open GGUF file: metadata by key with typed getters, the tensor
 * table, and a short rendering of values for `wick inspect`. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gguf/gguf_internal.h"

const char *wk_gguf_path(const wk_gguf *g) { return g->path; }
uint32_t wk_gguf_version(const wk_gguf *g) { return g->version; }
size_t wk_gguf_alignment(const wk_gguf *g) { return g->alignment; }
size_t wk_gguf_file_size(const wk_gguf *g) { return g->size; }
size_t wk_gguf_data_offset(const wk_gguf *g) { return g->data_offset; }
int64_t wk_gguf_n_kv(const wk_gguf *g) { return g->n_kv; }
int64_t wk_gguf_n_tensors(const wk_gguf *g) { return g->n_tensors; }

const char *wk_gguf_vtype_name(wk_gguf_vtype t)
{
    static const char *const names[] = {
        [WK_GGUF_UINT8] = "uint8",     [WK_GGUF_INT8] = "int8",     [WK_GGUF_UINT16] = "uint16",
        [WK_GGUF_INT16] = "int16",     [WK_GGUF_UINT32] = "uint32", [WK_GGUF_INT32] = "int32",
        [WK_GGUF_FLOAT32] = "float32", [WK_GGUF_BOOL] = "bool",     [WK_GGUF_STRING] = "string",
        [WK_GGUF_ARRAY] = "array",     [WK_GGUF_UINT64] = "uint64", [WK_GGUF_INT64] = "int64",
        [WK_GGUF_FLOAT64] = "float64",
    };
    return wk_gguf_vtype_valid((uint32_t)t) ? names[t] : "?";
}

int64_t wk_gguf_find_key(const wk_gguf *g, const char *key)
{
    return wk_name_index_find(&g->key_index, wk_kv_name_of, g, key);
}

const char *wk_gguf_key(const wk_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_kv ? g->kv[i].key : NULL;
}

wk_gguf_vtype wk_gguf_kv_type(const wk_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_kv ? g->kv[i].type : (wk_gguf_vtype)-1;
}

const wk_gguf_tensor *wk_gguf_tensor_at(const wk_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

const wk_gguf_tensor *wk_gguf_find_tensor(const wk_gguf *g, const char *name)
{
    int64_t i = wk_name_index_find(&g->tensor_index, wk_tensor_name_of, g, name);
    return i >= 0 ? &g->tensors[i] : NULL;
}

/* ---- typed getters ---- */

static wk_status wk_lookup(const wk_gguf *g, const char *key, const wk_gguf_kv **out)
{
    int64_t i = wk_gguf_find_key(g, key);
    if (i < 0) return wk_fail(WK_ERR_FORMAT, "%s: key '%s' not found", g->path, key ? key : "");
    *out = &g->kv[i];
    return WK_OK;
}

static wk_status wk_wrong_type(const wk_gguf *g, const wk_gguf_kv *kv, const char *want)
{
    return wk_fail(WK_ERR_FORMAT, "%s: key '%s' is a %s, not %s", g->path, kv->key,
                   wk_gguf_vtype_name(kv->type), want);
}

static bool wk_is_signed(wk_gguf_vtype t)
{
    return t == WK_GGUF_INT8 || t == WK_GGUF_INT16 || t == WK_GGUF_INT32 || t == WK_GGUF_INT64;
}

static bool wk_is_unsigned(wk_gguf_vtype t)
{
    return t == WK_GGUF_UINT8 || t == WK_GGUF_UINT16 || t == WK_GGUF_UINT32 ||
           t == WK_GGUF_UINT64;
}

/* Any integer value, checked against [lo, hi]. */
static wk_status wk_get_int(const wk_gguf *g, const char *key, int64_t lo, uint64_t hi,
                            const char *want, const wk_gguf_kv **out)
{
    const wk_gguf_kv *kv = NULL;
    wk_status st = wk_lookup(g, key, &kv);
    if (st) return st;
    if (wk_is_unsigned(kv->type)) {
        if (kv->num.u > hi)
            return wk_fail(WK_ERR_FORMAT, "%s: key '%s': value %" PRIu64 " does not fit a %s",
                           g->path, key, kv->num.u, want);
    } else if (wk_is_signed(kv->type)) {
        if (kv->num.i < lo || (kv->num.i > 0 && (uint64_t)kv->num.i > hi))
            return wk_fail(WK_ERR_FORMAT, "%s: key '%s': value %" PRId64 " does not fit a %s",
                           g->path, key, kv->num.i, want);
    } else {
        return wk_wrong_type(g, kv, "an integer");
    }
    *out = kv;
    return WK_OK;
}

wk_status wk_gguf_get_u32(const wk_gguf *g, const char *key, uint32_t *out)
{
    const wk_gguf_kv *kv = NULL;
    wk_status st = wk_get_int(g, key, 0, UINT32_MAX, "uint32", &kv);
    if (!st) *out = (uint32_t)kv->num.u;
    return st;
}

wk_status wk_gguf_get_i32(const wk_gguf *g, const char *key, int32_t *out)
{
    const wk_gguf_kv *kv = NULL;
    wk_status st = wk_get_int(g, key, INT32_MIN, INT32_MAX, "int32", &kv);
    if (!st) *out = (int32_t)kv->num.i;
    return st;
}

wk_status wk_gguf_get_u64(const wk_gguf *g, const char *key, uint64_t *out)
{
    const wk_gguf_kv *kv = NULL;
    wk_status st = wk_get_int(g, key, 0, UINT64_MAX, "uint64", &kv);
    if (!st) *out = kv->num.u;
    return st;
}

wk_status wk_gguf_get_i64(const wk_gguf *g, const char *key, int64_t *out)
{
    const wk_gguf_kv *kv = NULL;
    wk_status st = wk_get_int(g, key, INT64_MIN, INT64_MAX, "int64", &kv);
    if (!st) *out = kv->num.i;
    return st;
}

wk_status wk_gguf_get_f64(const wk_gguf *g, const char *key, double *out)
{
    const wk_gguf_kv *kv = NULL;
    wk_status st = wk_lookup(g, key, &kv);
    if (st) return st;
    if (kv->type != WK_GGUF_FLOAT32 && kv->type != WK_GGUF_FLOAT64)
        return wk_wrong_type(g, kv, "a float");
    *out = kv->num.f;
    return WK_OK;
}

wk_status wk_gguf_get_f32(const wk_gguf *g, const char *key, float *out)
{
    double d;
    wk_status st = wk_gguf_get_f64(g, key, &d);
    if (!st) *out = (float)d;
    return st;
}

wk_status wk_gguf_get_bool(const wk_gguf *g, const char *key, bool *out)
{
    const wk_gguf_kv *kv = NULL;
    wk_status st = wk_lookup(g, key, &kv);
    if (st) return st;
    if (kv->type != WK_GGUF_BOOL) return wk_wrong_type(g, kv, "a bool");
    *out = kv->num.u != 0;
    return WK_OK;
}

wk_status wk_gguf_get_str(const wk_gguf *g, const char *key, const char **out, size_t *len)
{
    const wk_gguf_kv *kv = NULL;
    wk_status st = wk_lookup(g, key, &kv);
    if (st) return st;
    if (kv->type != WK_GGUF_STRING) return wk_wrong_type(g, kv, "a string");
    *out = kv->str;
    if (len) *len = kv->str_len;
    return WK_OK;
}

static wk_status wk_lookup_array(const wk_gguf *g, const char *key, const wk_gguf_kv **out)
{
    wk_status st = wk_lookup(g, key, out);
    if (st) return st;
    if ((*out)->type != WK_GGUF_ARRAY) return wk_wrong_type(g, *out, "an array");
    return WK_OK;
}

wk_status wk_gguf_get_arr(const wk_gguf *g, const char *key, wk_gguf_vtype *elem_type,
                          uint64_t *n)
{
    const wk_gguf_kv *kv = NULL;
    wk_status st = wk_lookup_array(g, key, &kv);
    if (st) return st;
    if (elem_type) *elem_type = kv->elem_type;
    if (n) *n = kv->n;
    return WK_OK;
}

wk_status wk_gguf_get_arr_str(const wk_gguf *g, const char *key, uint64_t i, const char **out,
                              size_t *len)
{
    const wk_gguf_kv *kv = NULL;
    wk_status st = wk_lookup_array(g, key, &kv);
    if (st) return st;
    if (kv->elem_type != WK_GGUF_STRING)
        return wk_fail(WK_ERR_FORMAT, "%s: key '%s' is an array of %s, not of strings", g->path,
                       key, wk_gguf_vtype_name(kv->elem_type));
    if (i >= kv->n)
        return wk_fail(WK_ERR_INVALID, "%s: key '%s': index %" PRIu64 " is out of range (%" PRIu64
                       " strings)",
                       g->path, key, i, kv->n);
    *out = kv->strs[i];
    if (len) *len = kv->str_lens[i];
    return WK_OK;
}

wk_status wk_gguf_get_arr_data(const wk_gguf *g, const char *key, const void **out)
{
    const wk_gguf_kv *kv = NULL;
    wk_status st = wk_lookup_array(g, key, &kv);
    if (st) return st;
    if (!kv->elems)
        return wk_fail(WK_ERR_FORMAT, "%s: key '%s' is an array of %s, not of numbers", g->path,
                       key, wk_gguf_vtype_name(kv->elem_type));
    *out = kv->elems;
    return WK_OK;
}

/* ---- rendering values ---- */

typedef struct wk_text {
    char *buf;
    size_t cap, len; /* len may pass cap: the text was cut */
} wk_text;

static void wk_put(wk_text *t, const char *fmt, ...) WK_PRINTF(2, 3);
static void wk_put(wk_text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = t->len < t->cap ? t->cap - t->len : 0;
    int n = vsnprintf(room ? t->buf + t->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) t->len += (size_t)n;
}

enum { WK_SHOW_STRING_BYTES = 64, WK_SHOW_ELEMS = 6 };

static void wk_put_string(wk_text *t, const char *s, size_t len)
{
    wk_put(t, "\"");
    size_t shown = len < WK_SHOW_STRING_BYTES ? len : WK_SHOW_STRING_BYTES;
    for (size_t i = 0; i < shown; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') wk_put(t, "\\%c", ch);
        else if (ch == '\n') wk_put(t, "\\n");
        else if (ch == '\t') wk_put(t, "\\t");
        else if (ch < 0x20 || ch == 0x7f) wk_put(t, "\\x%02x", ch);
        else wk_put(t, "%c", ch);
    }
    wk_put(t, "\"");
    if (shown < len) wk_put(t, "... (%zu bytes)", len);
}

/* The shortest decimal that reads back as the same float32 or float64. */
static void wk_put_float(wk_text *t, double v, bool single)
{
    char tmp[40];
    for (int prec = single ? 6 : 15;; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        bool same = single ? strtof(tmp, NULL) == (float)v : strtod(tmp, NULL) == v;
        if (same || prec >= (single ? 9 : 17)) break;
    }
    wk_put(t, "%s", tmp);
}

/* One number of type vt from packed little-endian bytes. */
static void wk_put_number(wk_text *t, wk_gguf_vtype vt, const void *p)
{
    switch (vt) {
    case WK_GGUF_UINT8: wk_put(t, "%u", *(const uint8_t *)p); break;
    case WK_GGUF_INT8: wk_put(t, "%d", *(const int8_t *)p); break;
    case WK_GGUF_BOOL: wk_put(t, "%s", *(const uint8_t *)p ? "true" : "false"); break;
    case WK_GGUF_UINT16: wk_put(t, "%u", *(const uint16_t *)p); break;
    case WK_GGUF_INT16: wk_put(t, "%d", *(const int16_t *)p); break;
    case WK_GGUF_UINT32: wk_put(t, "%" PRIu32, *(const uint32_t *)p); break;
    case WK_GGUF_INT32: wk_put(t, "%" PRId32, *(const int32_t *)p); break;
    case WK_GGUF_UINT64: wk_put(t, "%" PRIu64, *(const uint64_t *)p); break;
    case WK_GGUF_INT64: wk_put(t, "%" PRId64, *(const int64_t *)p); break;
    case WK_GGUF_FLOAT32: wk_put_float(t, *(const float *)p, true); break;
    case WK_GGUF_FLOAT64: wk_put_float(t, *(const double *)p, false); break;
    default: wk_put(t, "?"); break;
    }
}

void wk_gguf_format_value(const wk_gguf *g, int64_t i, char *buf, size_t cap)
{
    if (!buf || cap == 0) return;
    buf[0] = '\0';
    if (i < 0 || i >= g->n_kv) return;
    const wk_gguf_kv *kv = &g->kv[i];
    wk_text t = {buf, cap, 0};
    switch (kv->type) {
    case WK_GGUF_STRING: wk_put_string(&t, kv->str, kv->str_len); break;
    case WK_GGUF_ARRAY: {
        uint64_t shown = kv->n < WK_SHOW_ELEMS ? kv->n : WK_SHOW_ELEMS;
        wk_put(&t, "[");
        if (kv->elem_type == WK_GGUF_ARRAY) {
            wk_put(&t, "%s", kv->n ? "..." : "");
        } else {
            size_t size = wk_gguf_vtype_size(kv->elem_type);
            for (uint64_t e = 0; e < shown; e++) {
                if (e) wk_put(&t, ", ");
                if (kv->elem_type == WK_GGUF_STRING)
                    wk_put_string(&t, kv->strs[e], kv->str_lens[e]);
                else
                    wk_put_number(&t, kv->elem_type, (const char *)kv->elems + e * size);
            }
            if (shown < kv->n) wk_put(&t, ", ...");
        }
        wk_put(&t, "] (%" PRIu64 " element%s)", kv->n, kv->n == 1 ? "" : "s");
        break;
    }
    case WK_GGUF_BOOL: wk_put(&t, "%s", kv->num.u ? "true" : "false"); break;
    case WK_GGUF_FLOAT32:
    case WK_GGUF_FLOAT64: wk_put_float(&t, kv->num.f, kv->type == WK_GGUF_FLOAT32); break;
    default:
        if (wk_is_signed(kv->type)) wk_put(&t, "%" PRId64, kv->num.i);
        else wk_put(&t, "%" PRIu64, kv->num.u);
        break;
    }
    /* Mark a cut with "..." at the end of the buffer. */
    if (t.len >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);
}
