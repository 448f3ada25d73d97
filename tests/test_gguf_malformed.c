/* Malformed GGUF files: each case assembles a small file in memory from a valid
 * description with one thing broken, and checks the status and the message
 * (which names the file, the key or tensor, and the numbers). Then every
 * truncation of a valid file and of the default model's metadata, and random
 * byte corruptions, must fail cleanly or parse (never crash; run it under
 * AddressSanitizer). */
#include <stdint.h>

#include "check.h"
#include "test_gguf_bytes.h"
#include "wick.h"

#define NAME "bad.gguf"

/* The description a file is assembled from. The defaults give a valid file:
 *   kv0 general.architecture = "llama"
 *   kv1 general.alignment    = 32 (uint32)
 *   kv2 test.arr             = [1, 2, 3] (int32)
 *   t0  q8_0 [32, 2] at 0 (68 bytes), t1 f32 [8] at 96 (32 bytes)            */
typedef struct spec {
    const char *magic;
    uint32_t version;
    int64_t n_tensors, n_kv;   /* as written in the header; -1: the real counts */
    const char *key0, *key2;   /* key names (key2 "" is an empty name) */
    size_t key0_len;           /* 0: strlen */
    uint32_t value0_type;      /* type id written for kv0 (8, a string) */
    uint64_t str_len;          /* length written for kv0's string; 0: the real one */
    bool has_alignment;
    uint32_t align_type;       /* 4 (uint32), 10 (uint64), 5 (int32), 8 (string) */
    uint64_t align_value;
    uint32_t arr_type;         /* element type of kv2 */
    uint64_t arr_len;          /* 0: the real 3 */
    int nest_depth;            /* > 0: kv2 is arrays nested this deep instead */
    bool nest_strings;         /* the innermost nested array holds strings */
    uint8_t bool_value;        /* the element when kv2 is a bool array */
    struct {
        const char *name;
        uint32_t n_dims;
        uint64_t ne[5];
        uint32_t type;
        uint64_t offset;
    } t[2];
    size_t data_bytes;         /* bytes of data section */
} spec;

/* Where things landed in the assembled file. */
typedef struct marks {
    size_t kv0_key, kv0_value, kv2_value, tensor0, tensor1, data, end;
} marks;

static spec valid_spec(void)
{
    spec s = {
        .magic = "GGUF",
        .version = 3,
        .n_tensors = -1,
        .n_kv = -1,
        .key0 = "general.architecture",
        .key2 = "test.arr",
        .value0_type = WK_GGUF_STRING,
        .has_alignment = true,
        .align_type = WK_GGUF_UINT32,
        .align_value = 32,
        .arr_type = WK_GGUF_INT32,
        .t = {{"t0", 2, {32, 2, 1, 1, 1}, WK_TYPE_Q8_0, 0},
              {"t1", 1, {8, 1, 1, 1, 1}, WK_TYPE_F32, 96}},
        .data_bytes = 128,
    };
    return s;
}

static tb_buf assemble(const spec *s, marks *m)
{
    tb_buf b = {0};
    uint64_t n_kv = s->has_alignment ? 3 : 2;
    tb_put(&b, s->magic, 4);
    tb_u32(&b, s->version);
    tb_u64(&b, s->n_tensors >= 0 ? (uint64_t)s->n_tensors : 2);
    tb_u64(&b, s->n_kv >= 0 ? (uint64_t)s->n_kv : n_kv);

    m->kv0_key = b.len;
    size_t klen = s->key0_len ? s->key0_len : strlen(s->key0);
    tb_u64(&b, klen);
    tb_put(&b, s->key0, klen > 200 ? strlen(s->key0) : klen); /* a huge length is a lie */
    tb_u32(&b, s->value0_type);
    m->kv0_value = b.len;
    tb_u64(&b, s->str_len ? s->str_len : 5);
    tb_put(&b, "llama", 5);

    if (s->has_alignment) {
        tb_str(&b, "general.alignment");
        tb_u32(&b, s->align_type);
        if (s->align_type == WK_GGUF_UINT64) tb_u64(&b, s->align_value);
        else if (s->align_type == WK_GGUF_STRING) tb_str(&b, "32");
        else tb_u32(&b, (uint32_t)s->align_value);
    }

    tb_str(&b, s->key2);
    tb_u32(&b, WK_GGUF_ARRAY);
    m->kv2_value = b.len;
    if (s->nest_depth > 0) {
        for (int d = 0; d < s->nest_depth; d++) {
            tb_u32(&b, WK_GGUF_ARRAY);
            tb_u64(&b, 1);
        }
        if (s->nest_strings) {
            tb_u32(&b, WK_GGUF_STRING);
            tb_u64(&b, 2);
            tb_str(&b, "deep");
            tb_str(&b, "er");
        } else {
            tb_u32(&b, WK_GGUF_UINT8);
            tb_u64(&b, 1);
            tb_u8(&b, 7);
        }
    } else if (s->arr_type == WK_GGUF_BOOL) {
        tb_u32(&b, WK_GGUF_BOOL);
        tb_u64(&b, s->arr_len ? s->arr_len : 1);
        tb_u8(&b, s->bool_value);
    } else {
        tb_u32(&b, s->arr_type);
        tb_u64(&b, s->arr_len ? s->arr_len : 3);
        for (uint32_t v = 1; v <= 3; v++) tb_u32(&b, v);
    }

    for (int i = 0; i < 2; i++) {
        *(i == 0 ? &m->tensor0 : &m->tensor1) = b.len;
        tb_str(&b, s->t[i].name);
        tb_u32(&b, s->t[i].n_dims);
        for (uint32_t d = 0; d < s->t[i].n_dims && d < 5; d++) tb_u64(&b, s->t[i].ne[d]);
        tb_u32(&b, s->t[i].type);
        tb_u64(&b, s->t[i].offset);
    }
    size_t align = s->has_alignment && s->align_type == WK_GGUF_UINT32 && s->align_value &&
                           s->align_value <= 4096
                       ? (size_t)s->align_value
                       : 32;
    tb_pad(&b, align);
    m->data = b.len;
    for (size_t i = 0; i < s->data_bytes; i++) tb_u8(&b, (uint8_t)i);
    m->end = b.len;
    return b;
}

/* Open a copy of exactly size bytes, so that AddressSanitizer sees any overread. */
static wk_status open_bytes(const uint8_t *p, size_t size, wk_gguf **g)
{
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, p, size);
    wk_status st = wk_gguf_open_memory(copy, size, NAME, g);
    if (*g) wk_gguf_close(*g);
    *g = NULL;
    free(copy);
    return st;
}

enum cut { NO_CUT, CUT_HEADER, CUT_KEY, CUT_VALUE, CUT_STRING, CUT_ARRAY, CUT_TENSOR, CUT_DATA };

typedef struct bad_case {
    const char *what;
    void (*mutate)(spec *s);
    enum cut cut;
    wk_status status;
    const char *message; /* after "bad.gguf: " */
} bad_case;

/* ---- the mutations ---- */
static void m_none(spec *s) { (void)s; }
/* Truncation cases declare fewer entries, so that the header's counts still fit
 * in what is left and the cut itself is what gets reported. */
static void m_one_kv(spec *s) { s->n_kv = 1, s->n_tensors = 0; }
static void m_one_tensor(spec *s) { s->n_tensors = 1; }
static void m_long_key(spec *s)
{
    m_one_kv(s);
    s->key0 = "general.a.key.of.exactly.one.hundred.bytes.......................................................end";
}
static void m_magic(spec *s) { s->magic = "GGML"; }
static void m_v1(spec *s) { s->version = 1; }
static void m_v4(spec *s) { s->version = 4; }
static void m_big_endian(spec *s) { s->version = 0x03000000; }
static void m_big_endian_v2(spec *s) { s->version = 0x02000000; }
static void m_n_kv(spec *s) { s->n_kv = 1ll << 40; }
static void m_n_kv_1000(spec *s) { s->n_kv = 1000; }
static void m_n_tensors_1000(spec *s) { s->n_tensors = 1000; }
static void m_key_len_100000(spec *s) { s->key0_len = 100000; }
static void m_n_kv_one_more(spec *s) { s->n_kv = 4; }
static void m_n_tensors(spec *s) { s->n_tensors = 1ll << 40; }
static void m_n_tensors_few_bytes(spec *s) { s->n_tensors = 10; }
static void m_key_len(spec *s) { s->key0_len = 1u << 30; }
static void m_str_len(spec *s) { s->str_len = 1ull << 62; }
static void m_str_len_by_one(spec *s) { s->str_len = 1000000; }
static void m_arr_len(spec *s) { s->arr_len = 1ull << 62; }
static void m_arr_len_by_one(spec *s) { s->arr_len = 1u << 20; }
static void m_value_type(spec *s) { s->value0_type = 13; }
static void m_elem_type(spec *s) { s->arr_type = 99; }
static void m_bool(spec *s) { s->arr_type = WK_GGUF_BOOL, s->bool_value = 2; }
static void m_empty_key(spec *s) { s->key2 = ""; }
static void m_nul_key(spec *s) { s->key0 = "general\0arch", s->key0_len = 12; }
static void m_dup_key(spec *s) { s->key2 = "general.architecture"; }
static void m_dup_tensor(spec *s) { s->t[1].name = "t0"; }
static void m_empty_tensor_name(spec *s) { s->t[1].name = ""; }
static void m_nested(spec *s) { s->nest_depth = 100000; }
static void m_nested_65(spec *s) { s->nest_depth = 65; }
static void m_nested_64(spec *s) { s->nest_depth = 64; }
static void m_nested_64_strings(spec *s) { s->nest_depth = 64, s->nest_strings = true; }
static void m_align0(spec *s) { s->align_value = 0; }
static void m_align3(spec *s) { s->align_value = 3; }
static void m_align_huge(spec *s) { s->align_type = WK_GGUF_UINT64, s->align_value = 1ull << 40; }
static void m_align_str(spec *s) { s->align_type = WK_GGUF_STRING; }
static void m_align_neg(spec *s) { s->align_type = WK_GGUF_INT32, s->align_value = (uint32_t)-32; }
static void m_align_absent(spec *s) { s->has_alignment = false; }
static void m_ndims0(spec *s) { s->t[0].n_dims = 0; }
static void m_ndims5(spec *s) { s->t[0].n_dims = 5; }
static void m_dim0(spec *s) { s->t[0].ne[1] = 0; }
static void m_dim_huge(spec *s) { s->t[0].ne[1] = 1ull << 63; }
static void m_product(spec *s)
{
    s->t[0].n_dims = 3;
    s->t[0].ne[1] = 1ull << 40;
    s->t[0].ne[2] = 1ull << 40;
}
static void m_product_row(spec *s)
{
    s->t[0].ne[0] = 1ull << 50;
    s->t[0].ne[1] = 1ull << 20;
}
static void m_bytes_overflow(spec *s)
{
    s->t[1].ne[0] = 1ull << 62; /* 2^64 bytes of f32 */
}
static void m_bytes_overflow_rows(spec *s)
{
    s->t[1].n_dims = 2; /* 2^62 elements fit, their 2^64 bytes do not */
    s->t[1].ne[0] = 1ull << 31;
    s->t[1].ne[1] = 1ull << 31;
}
static void m_type4(spec *s) { s->t[0].type = 4; }
static void m_type5(spec *s) { s->t[0].type = 5; }
static void m_type31(spec *s) { s->t[0].type = 31; }
static void m_type1000(spec *s) { s->t[0].type = 1000; }
static void m_type_max(spec *s) { s->t[0].type = UINT32_MAX; }
static void m_row33(spec *s) { s->t[0].ne[0] = 33; }
static void m_row_k(spec *s) { s->t[0].type = WK_TYPE_Q4_K, s->t[0].ne[0] = 576; }
static void m_misaligned(spec *s) { s->t[1].offset = 100; }
static void m_offset_outside(spec *s) { s->t[1].offset = 1u << 20; }
static void m_offset_end(spec *s) { s->t[1].offset = 128; }
static void m_offset_wrap(spec *s) { s->t[1].offset = UINT64_MAX - 31; }
static void m_no_data(spec *s) { s->data_bytes = 0; }
static void m_overlap(spec *s) { s->t[1].offset = 64; }
static void m_same_offset(spec *s) { s->t[0].offset = 32, s->t[1].offset = 32; }

static const bad_case cases[] = {
    /* header */
    {"wrong magic", m_magic, NO_CUT, WK_ERR_FORMAT,
     "not a GGUF file (magic bytes 47 47 4d 4c, expected 'GGUF')"},
    {"version 1", m_v1, NO_CUT, WK_ERR_UNSUPPORTED,
     "GGUF version 1 is not supported (wick reads versions 2 and 3)"},
    {"version 4", m_v4, NO_CUT, WK_ERR_UNSUPPORTED, "GGUF version 4 is not supported"},
    {"big-endian v3", m_big_endian, NO_CUT, WK_ERR_UNSUPPORTED,
     "big-endian GGUF file (version field 0x03000000 is version 3 byte-swapped)"},
    {"big-endian v2", m_big_endian_v2, NO_CUT, WK_ERR_UNSUPPORTED,
     "big-endian GGUF file (version field 0x02000000 is version 2 byte-swapped)"},
    {"truncated header", m_none, CUT_HEADER, WK_ERR_FORMAT,
     "header: truncated: tensor count needs 8 bytes at offset 8, the file is 12 bytes"},
    /* counts */
    {"n_kv beyond wick's limit", m_n_kv, NO_CUT, WK_ERR_FORMAT,
     "header: n_kv 1099511627776 exceeds wick's limit of 1048576"},
    {"n_kv beyond the file", m_n_kv_1000, NO_CUT, WK_ERR_FORMAT,
     "header: n_kv 1000 is more than the 328 bytes after the header can hold (13 bytes or more "
     "each)"},
    {"n_kv one more", m_n_kv_one_more, NO_CUT, WK_ERR_FORMAT,
     /* the tensor infos are read as a fourth key, "t0", a uint16; then the
      * bytes left of ne[0] and ne[1] make a name length of 2^49 */
     "tensor #0: name length 562949953421312 at offset 162 exceeds wick's limit of 67108864 "
     "bytes"},
    {"n_tensors beyond wick's limit", m_n_tensors, NO_CUT, WK_ERR_FORMAT,
     "header: n_tensors 1099511627776 exceeds wick's limit of 1048576"},
    {"n_tensors beyond the file", m_n_tensors_1000, NO_CUT, WK_ERR_FORMAT,
     "header: n_tensors 1000 is more than the 328 bytes after the header can hold (32 bytes or "
     "more each)"},
    {"n_tensors beyond the metadata", m_n_tensors_few_bytes, NO_CUT, WK_ERR_FORMAT,
     "header: n_tensors 10 is more than the"},
    /* keys and values */
    {"truncated key", m_long_key, CUT_KEY, WK_ERR_FORMAT,
     "key #0: name length 100 at offset 24 exceeds the 50 bytes left in the file"},
    {"key length beyond wick's limit", m_key_len, NO_CUT, WK_ERR_FORMAT,
     "key #0: name length 1073741824 at offset 24 exceeds wick's limit of 67108864 bytes"},
    {"key length beyond the file", m_key_len_100000, NO_CUT, WK_ERR_FORMAT,
     "key #0: name length 100000 at offset 24 exceeds the 320 bytes left in the file"},
    {"truncated value", m_one_kv, CUT_VALUE, WK_ERR_FORMAT,
     "key 'general.architecture': truncated: string needs 8 bytes at offset 56, the file is 60 "
     "bytes"},
    {"truncated string", m_one_kv, CUT_STRING, WK_ERR_FORMAT,
     "key 'general.architecture': string length 5 at offset 56 exceeds the 2 bytes left"},
    {"string length beyond wick's limit", m_str_len, NO_CUT, WK_ERR_FORMAT,
     "key 'general.architecture': string length 4611686018427387904 at offset 56 exceeds wick's "
     "limit of 67108864 bytes"},
    {"string length beyond the file", m_str_len_by_one, NO_CUT, WK_ERR_FORMAT,
     "key 'general.architecture': string length 1000000 at offset 56 exceeds the 288 bytes left"},
    {"truncated array", m_none, CUT_ARRAY, WK_ERR_FORMAT,
     "key 'test.arr': array length 3 at offset"},
    {"array length beyond wick's limit", m_arr_len, NO_CUT, WK_ERR_FORMAT,
     "key 'test.arr': array length 4611686018427387904 at offset 126 exceeds wick's limit of "
     "16777216 elements"},
    {"array length beyond the file", m_arr_len_by_one, NO_CUT, WK_ERR_FORMAT,
     "key 'test.arr': array length 1048576 at offset"},
    {"unknown value type", m_value_type, NO_CUT, WK_ERR_FORMAT,
     "key 'general.architecture': unknown value type 13 at offset 52"},
    {"unknown array element type", m_elem_type, NO_CUT, WK_ERR_FORMAT,
     "key 'test.arr': unknown value type 99"},
    {"bool not 0 or 1", m_bool, NO_CUT, WK_ERR_FORMAT, "key 'test.arr': bool value 2 at offset"},
    {"empty key", m_empty_key, NO_CUT, WK_ERR_FORMAT, "key #2: empty name"},
    {"NUL in a key", m_nul_key, NO_CUT, WK_ERR_FORMAT, "key #0: name contains a NUL byte"},
    {"duplicate key", m_dup_key, NO_CUT, WK_ERR_FORMAT,
     "duplicate key 'general.architecture' (entries 0 and 2)"},
    {"arrays nested 100000 deep", m_nested, NO_CUT, WK_ERR_FORMAT,
     "key 'test.arr': arrays nested deeper than 64 levels"},
    {"arrays nested 65 deep", m_nested_65, NO_CUT, WK_ERR_FORMAT,
     "key 'test.arr': arrays nested deeper than 64 levels"},
    /* alignment */
    {"alignment 0", m_align0, NO_CUT, WK_ERR_FORMAT, "general.alignment 0 is not a power of two"},
    {"alignment 3", m_align3, NO_CUT, WK_ERR_FORMAT, "general.alignment 3 is not a power of two"},
    {"alignment 2^40", m_align_huge, NO_CUT, WK_ERR_FORMAT,
     "general.alignment 1099511627776 is larger than the limit 1048576"},
    {"alignment a string", m_align_str, NO_CUT, WK_ERR_FORMAT,
     "general.alignment is a string, not an integer"},
    {"alignment negative", m_align_neg, NO_CUT, WK_ERR_FORMAT, "general.alignment -32 is negative"},
    /* tensor infos */
    {"truncated tensor info", m_one_tensor, CUT_TENSOR, WK_ERR_FORMAT,
     "tensor 't0': truncated: offset needs 8 bytes at offset"},
    {"n_dims 0", m_ndims0, NO_CUT, WK_ERR_FORMAT, "tensor 't0': n_dims 0 is not between 1 and 4"},
    {"n_dims 5", m_ndims5, NO_CUT, WK_ERR_FORMAT, "tensor 't0': n_dims 5 is not between 1 and 4"},
    {"dim 0", m_dim0, NO_CUT, WK_ERR_FORMAT,
     "tensor 't0': ne[1] = 0 (each dimension must be between 1 and 2^63-1)"},
    {"dim 2^63", m_dim_huge, NO_CUT, WK_ERR_FORMAT, "tensor 't0': ne[1] = 9223372036854775808"},
    {"element count overflow", m_product, NO_CUT, WK_ERR_FORMAT,
     "tensor 't0': element count overflows (ne = 32 x 1099511627776 x 1099511627776 x 1)"},
    {"element count overflow (row)", m_product_row, NO_CUT, WK_ERR_FORMAT,
     "tensor 't0': element count overflows (ne = 1125899906842624 x 1048576 x 1 x 1)"},
    {"row byte size overflow", m_bytes_overflow, NO_CUT, WK_ERR_FORMAT,
     "tensor 't1': a row of ne[0] = 4611686018427387904 f32 elements overflows its byte size"},
    {"byte size overflow", m_bytes_overflow_rows, NO_CUT, WK_ERR_FORMAT,
     "tensor 't1': byte size overflows (2147483648 rows of 8589934592 bytes, ne = 2147483648 x "
     "2147483648 x 1 x 1 of f32)"},
    {"type 4", m_type4, NO_CUT, WK_ERR_FORMAT, "tensor 't0': unknown or removed type id 4"},
    {"type 5", m_type5, NO_CUT, WK_ERR_FORMAT, "tensor 't0': unknown or removed type id 5"},
    {"type 31", m_type31, NO_CUT, WK_ERR_FORMAT, "tensor 't0': unknown or removed type id 31"},
    {"type 1000", m_type1000, NO_CUT, WK_ERR_FORMAT, "tensor 't0': unknown or removed type id 1000"},
    {"type 2^32-1", m_type_max, NO_CUT, WK_ERR_FORMAT,
     "tensor 't0': unknown or removed type id 4294967295"},
    {"row length 33 of q8_0", m_row33, NO_CUT, WK_ERR_FORMAT,
     "tensor 't0': row length ne[0] = 33 is not a multiple of q8_0's block size 32"},
    {"row length 576 of q4_k", m_row_k, NO_CUT, WK_ERR_FORMAT,
     "tensor 't0': row length ne[0] = 576 is not a multiple of q4_k's block size 256"},
    {"duplicate tensor name", m_dup_tensor, NO_CUT, WK_ERR_FORMAT,
     "duplicate tensor name 't0' (tensors 0 and 1)"},
    {"empty tensor name", m_empty_tensor_name, NO_CUT, WK_ERR_FORMAT, "tensor #1: empty name"},
    /* data */
    {"misaligned offset", m_misaligned, NO_CUT, WK_ERR_FORMAT,
     "tensor 't1': offset 100 is not a multiple of the alignment 32"},
    {"offset outside the file", m_offset_outside, NO_CUT, WK_ERR_FORMAT,
     "tensor 't1': data at offset 1048576, 32 bytes, lies outside the data section (128 bytes"},
    {"data past the end", m_offset_end, NO_CUT, WK_ERR_FORMAT,
     "tensor 't1': data at offset 128, 32 bytes, lies outside the data section (128 bytes"},
    {"offset + size wraps", m_offset_wrap, NO_CUT, WK_ERR_FORMAT,
     "tensor 't1': data at offset 18446744073709551584, 32 bytes, lies outside"},
    {"truncated data", m_none, CUT_DATA, WK_ERR_FORMAT,
     "tensor 't1': data at offset 96, 32 bytes, lies outside the data section (118 bytes"},
    {"overlapping tensors", m_overlap, NO_CUT, WK_ERR_FORMAT,
     "tensors 't0' (offset 0, 68 bytes) and 't1' (offset 64) overlap"},
    {"tensors at one offset", m_same_offset, NO_CUT, WK_ERR_FORMAT, "tensors 't0' (offset 32, 68 bytes) and 't1' (offset 32) overlap"},
    {"no data section", m_no_data, NO_CUT, WK_ERR_FORMAT,
     "tensor 't0': data at offset 0, 68 bytes, lies outside the data section (0 bytes"},
};

static size_t cut_at(enum cut c, const marks *m)
{
    switch (c) {
    case NO_CUT: return m->end;
    case CUT_HEADER: return 12;
    case CUT_KEY: return m->kv0_key + 8 + 50; /* inside the key's name */
    case CUT_VALUE: return m->kv0_value + 4; /* inside the string's length */
    case CUT_STRING: return m->kv0_value + 10; /* inside the string's bytes */
    case CUT_ARRAY: return m->kv2_value + 12 + 5; /* inside the elements */
    case CUT_TENSOR: return m->tensor0 + 8 + 2 + 4 + 16 + 4 + 4; /* inside the offset */
    case CUT_DATA: return m->end - 10;
    }
    return m->end;
}

static void test_cases(void)
{
    char expect[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_case *c = &cases[i];
        spec s = valid_spec();
        c->mutate(&s);
        marks m;
        tb_buf b = assemble(&s, &m);
        wk_gguf *g = NULL;
        wk_status st = open_bytes(b.p, cut_at(c->cut, &m), &g);
        snprintf(expect, sizeof expect, NAME ": %s", c->message);
        if (getenv("WICK_TEST_VERBOSE"))
            fprintf(stderr, "%-32s %-11s %s\n", c->what, wk_status_name(st), wk_last_error());
        check_count++;
        if (st != c->status || !strstr(wk_last_error(), expect)) {
            check_failures++;
            fprintf(stderr, "case '%s': expected status %s with \"%s\"\n  got %s: \"%s\"\n",
                    c->what, wk_status_name(c->status), expect, wk_status_name(st),
                    wk_last_error());
        }
        tb_free(&b);
    }
}

/* The valid variants the cases start from do parse. */
static void test_valid_variants(void)
{
    void (*ok[])(spec *) = {m_none, m_nested_64, m_nested_64_strings, m_align_absent};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        spec s = valid_spec();
        ok[i](&s);
        marks m;
        tb_buf b = assemble(&s, &m);
        wk_gguf *g = NULL;
        CHECK_OK(wk_gguf_open_memory(b.p, b.len, NAME, &g));
        if (g) {
            CHECK_EQ_INT(wk_gguf_n_tensors(g), 2);
            CHECK_EQ_INT(wk_gguf_alignment(g), 32);
            CHECK_EQ_INT(wk_gguf_data_offset(g), m.data);
            const wk_gguf_tensor *t1 = wk_gguf_find_tensor(g, "t1");
            CHECK(t1 && t1->data == b.p + m.data + 96 && t1->nbytes == 32);
        }
        wk_gguf_close(g);
        tb_free(&b);
    }
    /* version 2 has the same layout */
    spec s = valid_spec();
    s.version = 2;
    marks m;
    tb_buf b = assemble(&s, &m);
    wk_gguf *g = NULL;
    CHECK_OK(wk_gguf_open_memory(b.p, b.len, NAME, &g));
    if (g) CHECK_EQ_INT(wk_gguf_version(g), 2);
    wk_gguf_close(g);
    tb_free(&b);
}

/* Every prefix of a valid file fails with a format error (the last few bytes of
 * the data section excepted: none, since the data ends with a tensor). */
static void test_every_truncation(void)
{
    spec s = valid_spec();
    marks m;
    tb_buf b = assemble(&s, &m);
    int bad = 0;
    for (size_t n = 0; n < b.len; n++) {
        wk_gguf *g = NULL;
        wk_status st = open_bytes(b.p, n, &g);
        if (st != WK_ERR_FORMAT || !strstr(wk_last_error(), NAME ": ")) {
            if (bad++ < 5)
                fprintf(stderr, "prefix of %zu bytes: %s: %s\n", n, wk_status_name(st),
                        wk_last_error());
        }
    }
    CHECK_EQ_INT(bad, 0);
    tb_free(&b);
}

/* Random corruptions of a valid file: each either parses or fails with a message
 * naming the file; AddressSanitizer watches the reads. */
static void test_random_corruption(void)
{
    spec s = valid_spec();
    marks m;
    tb_buf b = assemble(&s, &m);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    int failed = 0, parsed = 0, bad = 0;
    for (int trial = 0; trial < 20000; trial++) {
        uint8_t *copy = malloc(b.len);
        memcpy(copy, b.p, b.len);
        int flips = 1 + trial % 4;
        for (int f = 0; f < flips; f++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            size_t at = (size_t)(rng % m.data); /* corrupt the header and infos */
            copy[at] = (uint8_t)(rng >> 32);
        }
        wk_gguf *g = NULL;
        wk_status st = wk_gguf_open_memory(copy, b.len, NAME, &g);
        if (st == WK_OK) {
            parsed++;
            /* a file that parses has every tensor inside the buffer */
            for (int64_t i = 0; i < wk_gguf_n_tensors(g); i++) {
                const wk_gguf_tensor *t = wk_gguf_tensor_at(g, i);
                const uint8_t *p = t->data;
                if (p < copy || p + t->nbytes > copy + b.len) bad++;
            }
            char text[128];
            for (int64_t i = 0; i < wk_gguf_n_kv(g); i++) wk_gguf_format_value(g, i, text, sizeof text);
            wk_gguf_close(g);
        } else {
            failed++;
            if (strncmp(wk_last_error(), NAME ": ", strlen(NAME) + 2) != 0 && bad++ < 5)
                fprintf(stderr, "corruption: message without the file name: %s\n",
                        wk_last_error());
        }
        free(copy);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(failed > 1000 && parsed > 100);
    fprintf(stderr, "random corruption: %d rejected, %d parsed\n", failed, parsed);
    tb_free(&b);
}

/* Cuts through the default model's metadata and tensor infos are all refused
 * as truncated. */
static void test_model_truncations(const char *path)
{
    wk_gguf *g = NULL;
    CHECK_OK(wk_gguf_open(path, &g));
    if (!g) return;
    size_t header = wk_gguf_data_offset(g);
    wk_gguf_close(g);
    FILE *f = fopen(path, "rb");
    uint8_t *p = malloc(header);
    size_t got = fread(p, 1, header, f);
    fclose(f);
    CHECK_EQ_INT(got, header);
    int bad = 0;
    for (size_t n = 1; n < header; n = n * 9 / 8 + 1) {
        wk_status st = wk_gguf_open_memory(p, n, "model-cut.gguf", &g);
        if (st != WK_ERR_FORMAT) bad++;
        wk_gguf_close(g);
        g = NULL;
    }
    /* the whole metadata without the data: every tensor lies outside */
    CHECK_FAILS(wk_gguf_open_memory(p, header, "model-cut.gguf", &g), WK_ERR_FORMAT,
                "model-cut.gguf: tensor 'token_embd.weight': data at offset 0, 30081024 bytes, "
                "lies outside the data section (0 bytes");
    CHECK_EQ_INT(bad, 0);
    free(p);
}

static void test_files(void)
{
    wk_gguf *g = NULL;
    CHECK_FAILS(wk_gguf_open("/nonexistent/model.gguf", &g), WK_ERR_IO,
                "/nonexistent/model.gguf: cannot open: No such file or directory");
    CHECK_FAILS(wk_gguf_open("/", &g), WK_ERR_IO, "/: not a regular file");
    char path[512];
    snprintf(path, sizeof path, "%s/test_gguf_malformed_small.gguf",
             getenv("WICK_BINARY_DIR") ? getenv("WICK_BINARY_DIR") : ".");
    FILE *f = fopen(path, "wb");
    fwrite("GGUF\3\0\0\0", 1, 8, f);
    fclose(f);
    char expect[600];
    snprintf(expect, sizeof expect, "%s: 8 bytes is too small for a GGUF header (24 bytes)", path);
    CHECK_FAILS(wk_gguf_open(path, &g), WK_ERR_FORMAT, expect);
    /* a malformed file on disk names its path */
    spec s = valid_spec();
    m_misaligned(&s);
    marks m;
    tb_buf b = assemble(&s, &m);
    f = fopen(path, "wb");
    fwrite(b.p, 1, b.len, f);
    fclose(f);
    snprintf(expect, sizeof expect, "%s: tensor 't1': offset 100 is not a multiple of the alignment 32",
             path);
    CHECK_FAILS(wk_gguf_open(path, &g), WK_ERR_FORMAT, expect);
    CHECK(g == NULL);
    remove(path);
    tb_free(&b);
}

int main(void)
{
    test_cases();
    test_valid_variants();
    test_every_truncation();
    test_random_corruption();
    test_files();
    const char *model = test_model_path();
    if (model) test_model_truncations(model);
    else CHECK(model != NULL);
    TEST_MAIN_END();
}
