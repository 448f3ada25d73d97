/* Internal: the parsed form of a GGUF file, shared by the reader, the metadata
 * getters and the writer (which copies raw values out of an open file). */
#ifndef WICK_GGUF_INTERNAL_H
#define WICK_GGUF_INTERNAL_H

#include "wick/gguf.h"

/* Layout limits of the format. */
enum {
    WK_GGUF_HEADER_BYTES = 24,     /* magic, version, n_tensors, n_kv */
    WK_GGUF_MIN_KV_BYTES = 13,     /* key length, value type, one byte of value */
    WK_GGUF_MIN_TENSOR_BYTES = 32, /* name length, n_dims, one dim, type, offset */
    WK_GGUF_MAX_DIMS = 4,
    WK_GGUF_MAX_NESTING = 64,      /* arrays of arrays deeper than this are refused */
    WK_GGUF_DEFAULT_ALIGNMENT = 32,
};
#define WK_GGUF_MAX_ALIGNMENT ((uint64_t)1 << 20)
/* Sane upper bounds on what a file may claim, far above any real model (a few
 * thousand tensors, a few dozen keys, vocabularies of a few hundred thousand
 * tokens, chat templates of some KiB), so that memory stays bounded whatever
 * the file's size. */
#define WK_GGUF_MAX_TENSORS ((uint64_t)1 << 20)
#define WK_GGUF_MAX_KV ((uint64_t)1 << 20)
#define WK_GGUF_MAX_ARRAY ((uint64_t)1 << 24)       /* elements of one array */
#define WK_GGUF_MAX_STRING ((uint64_t)64 << 20)     /* bytes of one string */

/* ---- an arena for the strings and arrays an open file owns ---- */
typedef struct wk_arena_block wk_arena_block;
typedef struct wk_arena {
    wk_arena_block *head;
} wk_arena;

/* 8-byte aligned; NULL when out of memory. */
void *wk_arena_alloc(wk_arena *a, size_t n);
void wk_arena_free(wk_arena *a);

/* ---- a name -> index table (keys, tensor names) ---- */
typedef struct wk_name_index {
    int64_t *slots; /* index + 1, 0 for empty */
    size_t cap;     /* power of two */
} wk_name_index;

/* How the table reads the name of index i out of its owner. */
typedef const char *(*wk_name_of_fn)(const void *owner, int64_t i);

/* Room for n names; false when out of memory. */
bool wk_name_index_init(wk_name_index *ix, size_t n);
void wk_name_index_free(wk_name_index *ix);
/* Insert index i under its name; if the name is already present, returns the
 * index that holds it and inserts nothing; -1 after an insert. */
int64_t wk_name_index_insert(wk_name_index *ix, wk_name_of_fn name_of, const void *owner,
                             int64_t i);
/* The index holding name, or -1. */
int64_t wk_name_index_find(const wk_name_index *ix, wk_name_of_fn name_of, const void *owner,
                           const char *name);

/* ---- one metadata entry ---- */
typedef struct wk_gguf_kv {
    const char *key; /* NUL-terminated copy */
    wk_gguf_vtype type;
    const uint8_t *raw; /* the value's bytes in the file (little-endian) */
    size_t raw_len;
    /* scalars, widened */
    union {
        uint64_t u;
        int64_t i;
        double f;
    } num;
    /* strings */
    const char *str;
    size_t str_len;
    /* arrays */
    wk_gguf_vtype elem_type;
    uint64_t n;
    const char **strs;  /* string arrays: NUL-terminated copies */
    size_t *str_lens;
    const void *elems;  /* numeric arrays: an aligned, packed copy */
} wk_gguf_kv;

struct wk_gguf {
    char *path;
    const uint8_t *base;
    size_t size;
    void *map; /* non-NULL when this handle owns an mmap of size bytes */
    uint32_t version;
    size_t alignment;
    size_t data_offset; /* start of the data section */
    int64_t n_kv;
    wk_gguf_kv *kv;
    int64_t n_tensors;
    wk_gguf_tensor *tensors;
    wk_name_index key_index;
    wk_name_index tensor_index;
    wk_arena arena;
};

/* Name readers for the two name tables. */
static inline const char *wk_kv_name_of(const void *owner, int64_t i)
{
    return ((const wk_gguf *)owner)->kv[i].key;
}

static inline const char *wk_tensor_name_of(const void *owner, int64_t i)
{
    return ((const wk_gguf *)owner)->tensors[i].name;
}

/* Bytes of one element of a fixed-size value type; 0 for string, array or unknown. */
size_t wk_gguf_vtype_size(uint32_t t);
bool wk_gguf_vtype_valid(uint32_t t);

#endif
