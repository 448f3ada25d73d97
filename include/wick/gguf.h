/* wick: reading and writing GGUF files (versions 2 and 3, little-endian). */
#ifndef WICK_GGUF_H
#define WICK_GGUF_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Metadata value types, numbered as in GGUF. */
typedef enum wk_gguf_vtype {
    WK_GGUF_UINT8 = 0,
    WK_GGUF_INT8 = 1,
    WK_GGUF_UINT16 = 2,
    WK_GGUF_INT16 = 3,
    WK_GGUF_UINT32 = 4,
    WK_GGUF_INT32 = 5,
    WK_GGUF_FLOAT32 = 6,
    WK_GGUF_BOOL = 7,
    WK_GGUF_STRING = 8,
    WK_GGUF_ARRAY = 9,
    WK_GGUF_UINT64 = 10,
    WK_GGUF_INT64 = 11,
    WK_GGUF_FLOAT64 = 12,
} wk_gguf_vtype;

/* One tensor of an open file. ne[] is innermost first, as GGUF stores it:
 * ne[0] is the row length; unused dims are 1. */
typedef struct wk_gguf_tensor {
    const char *name;
    wk_type type;
    int n_dims;
    int64_t ne[4];
    uint64_t offset; /* from the start of the data section */
    size_t nbytes;
    const void *data; /* inside the mapping; aligned to the file's alignment when
                       * opened with wk_gguf_open (the mapping starts on a page) */
} wk_gguf_tensor;

typedef struct wk_gguf wk_gguf;

/* Map and validate a file. The mapping is private and writable, so callers may
 * rearrange tensor bytes in place without touching the file (cast away the
 * const of wk_gguf_tensor.data; no two tensors share bytes).
 * Validation, before anything is used: magic; version 2 or 3 (big-endian files
 * are named as such); counts, string and array lengths against wick's limits
 * (2^20 keys, 2^20 tensors, 2^24 array elements, 64 MiB strings) and against
 * the bytes left;
 * known value types; bools 0 or 1; arrays nested at most 64 deep; unique,
 * non-empty keys and tensor names; general.alignment an integer power of two
 * up to 2^20; n_dims 1..4, each dim >= 1, no overflow of the element or byte
 * count; a known tensor type; ne[0] a multiple of its block size; offsets
 * aligned; data inside the file and not overlapping. Each failure is
 * WK_ERR_FORMAT (WK_ERR_UNSUPPORTED for versions, WK_ERR_IO for the file
 * itself) with a message naming the file, the key or tensor and the numbers. */
wk_status wk_gguf_open(const char *path, wk_gguf **out);
/* Parse and validate bytes already in memory (borrowed; must outlive the handle).
 * name is used in messages. */
wk_status wk_gguf_open_memory(const void *data, size_t size, const char *name, wk_gguf **out);
void wk_gguf_close(wk_gguf *g);

const char *wk_gguf_path(const wk_gguf *g);
uint32_t wk_gguf_version(const wk_gguf *g);
size_t wk_gguf_alignment(const wk_gguf *g);
/* The file's size, and where its data section starts (tensor offsets count from there). */
size_t wk_gguf_file_size(const wk_gguf *g);
size_t wk_gguf_data_offset(const wk_gguf *g);
/* "uint32", "string", "array", ...; "?" for an unknown type. */
const char *wk_gguf_vtype_name(wk_gguf_vtype t);

/* Metadata: keys by index, or looked up by name (-1 when absent). */
int64_t wk_gguf_n_kv(const wk_gguf *g);
int64_t wk_gguf_find_key(const wk_gguf *g, const char *key);
/* NULL, and (wk_gguf_vtype)-1, for an index out of range. */
const char *wk_gguf_key(const wk_gguf *g, int64_t i);
wk_gguf_vtype wk_gguf_kv_type(const wk_gguf *g, int64_t i);

/* Typed getters. Integers convert between widths when the value fits; a missing
 * key, a wrong type or an out-of-range value is an error naming the key. */
wk_status wk_gguf_get_u32(const wk_gguf *g, const char *key, uint32_t *out);
wk_status wk_gguf_get_i32(const wk_gguf *g, const char *key, int32_t *out);
wk_status wk_gguf_get_u64(const wk_gguf *g, const char *key, uint64_t *out);
wk_status wk_gguf_get_i64(const wk_gguf *g, const char *key, int64_t *out);
/* Floats accept float32 and float64 values. */
wk_status wk_gguf_get_f32(const wk_gguf *g, const char *key, float *out);
wk_status wk_gguf_get_f64(const wk_gguf *g, const char *key, double *out);
wk_status wk_gguf_get_bool(const wk_gguf *g, const char *key, bool *out);
/* NUL-terminated copy owned by the handle; *len (optional) is its length. */
wk_status wk_gguf_get_str(const wk_gguf *g, const char *key, const char **out, size_t *len);

/* Arrays: element type and count; then strings by index or the raw elements of
 * a numeric array (little-endian, packed). Nested arrays report WK_GGUF_ARRAY. */
wk_status wk_gguf_get_arr(const wk_gguf *g, const char *key, wk_gguf_vtype *elem_type,
                          uint64_t *n);
wk_status wk_gguf_get_arr_str(const wk_gguf *g, const char *key, uint64_t i, const char **out,
                              size_t *len);
wk_status wk_gguf_get_arr_data(const wk_gguf *g, const char *key, const void **out);

/* Tensors. */
int64_t wk_gguf_n_tensors(const wk_gguf *g);
const wk_gguf_tensor *wk_gguf_tensor_at(const wk_gguf *g, int64_t i);
const wk_gguf_tensor *wk_gguf_find_tensor(const wk_gguf *g, const char *name);

/* A short, human-readable rendering of a metadata value (strings quoted and
 * cut after a few dozen bytes, arrays abbreviated to their first elements and
 * their count), written into buf; for `wick inspect`. */
void wk_gguf_format_value(const wk_gguf *g, int64_t i, char *buf, size_t cap);

/* ---- writing ---- */
typedef struct wk_gguf_writer wk_gguf_writer;

wk_status wk_gguf_writer_create(wk_gguf_writer **out);
void wk_gguf_writer_free(wk_gguf_writer *w);
/* Setting a key that exists replaces its value. */
wk_status wk_gguf_writer_set_u32(wk_gguf_writer *w, const char *key, uint32_t v);
wk_status wk_gguf_writer_set_i32(wk_gguf_writer *w, const char *key, int32_t v);
wk_status wk_gguf_writer_set_u64(wk_gguf_writer *w, const char *key, uint64_t v);
wk_status wk_gguf_writer_set_f32(wk_gguf_writer *w, const char *key, float v);
wk_status wk_gguf_writer_set_bool(wk_gguf_writer *w, const char *key, bool v);
wk_status wk_gguf_writer_set_str(wk_gguf_writer *w, const char *key, const char *v);
/* Any scalar type: value points to one element of that type (host order,
 * which is little-endian on every machine wick runs on). */
wk_status wk_gguf_writer_set_value(wk_gguf_writer *w, const char *key, wk_gguf_vtype type,
                                   const void *value);
/* Arrays of scalars: data holds n packed elements of elem_type. */
wk_status wk_gguf_writer_set_arr(wk_gguf_writer *w, const char *key, wk_gguf_vtype elem_type,
                                 const void *data, uint64_t n);
wk_status wk_gguf_writer_set_arr_str(wk_gguf_writer *w, const char *key,
                                     const char *const *strs, uint64_t n);
/* Copy key i of an open file, whatever its type (nested arrays too). */
wk_status wk_gguf_writer_copy_kv(wk_gguf_writer *w, const wk_gguf *g, int64_t i);
/* Sets general.alignment (a power of two up to 2^20); the file is written with
 * it. Without it (set here, by set_u32 or by copy_kv) the alignment is 32 and
 * no general.alignment key is written. */
wk_status wk_gguf_writer_set_alignment(wk_gguf_writer *w, size_t alignment);
/* Add a tensor; data (nbytes, checked against type and shape) is copied.
 * ne[] is innermost first, as in wk_gguf_tensor. Tensor names must be unique. */
wk_status wk_gguf_writer_add_tensor(wk_gguf_writer *w, const char *name, wk_type type, int n_dims,
                                    const int64_t *ne, const void *data, size_t nbytes);
/* The same without the copy: data must stay valid until the file is written. */
wk_status wk_gguf_writer_add_tensor_ref(wk_gguf_writer *w, const char *name, wk_type type,
                                        int n_dims, const int64_t *ne, const void *data,
                                        size_t nbytes);
/* Write version 3: header, metadata in the order first set, tensor infos in the
 * order added, then each tensor's data padded to the alignment. On failure the
 * partial file is removed. */
wk_status wk_gguf_writer_write(wk_gguf_writer *w, const char *path);
/* The same file into memory: *data (free() it) of *size bytes. */
wk_status wk_gguf_writer_write_memory(wk_gguf_writer *w, void **data, size_t *size);

#ifdef __cplusplus
}
#endif
#endif
