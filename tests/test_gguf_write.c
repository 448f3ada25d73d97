/* The GGUF writer: every value type, arrays of each, nested arrays through
 * copy_kv and several tensors survive a write and a read; a copy of the default
 * model made with the writer is the original file byte for byte; and the
 * writer's rejections name what was wrong. */
#include <math.h>

#include "check.h"
#include "test_gguf_bytes.h"
#include "wick.h"

/* A small file with one nested-array key: [[1, 2, 3] (uint8), ["ab"], []]. */
static tb_buf nested_file(void)
{
    tb_buf b = {0};
    tb_header(&b, 3, 0, 1);
    tb_str(&b, "test.nested");
    tb_u32(&b, WK_GGUF_ARRAY);
    tb_u32(&b, WK_GGUF_ARRAY);
    tb_u64(&b, 3);
    tb_u32(&b, WK_GGUF_UINT8);
    tb_u64(&b, 3);
    tb_u8(&b, 1), tb_u8(&b, 2), tb_u8(&b, 3);
    tb_u32(&b, WK_GGUF_STRING);
    tb_u64(&b, 1);
    tb_str(&b, "ab");
    tb_u32(&b, WK_GGUF_ARRAY); /* an empty array of arrays */
    tb_u64(&b, 0);
    return b;
}

typedef struct {
    const char *name;
    wk_type type;
    int n_dims;
    int64_t ne[4];
} tensor_case;

static const tensor_case tensors[] = {
    {"a.f32", WK_TYPE_F32, 1, {7, 1, 1, 1}},
    {"b.f16", WK_TYPE_F16, 2, {5, 3, 1, 1}},
    {"c.q4_0", WK_TYPE_Q4_0, 2, {64, 3, 1, 1}},
    {"d.q4_k", WK_TYPE_Q4_K, 3, {256, 2, 2, 1}},
    {"e.bf16", WK_TYPE_BF16, 4, {3, 1, 2, 2}},
    {"f.q8_0", WK_TYPE_Q8_0, 1, {32, 1, 1, 1}},
};
enum { N_TENSORS = sizeof tensors / sizeof tensors[0] };

/* Deterministic bytes for tensor i (any bytes are a valid payload for the file). */
static uint8_t *tensor_bytes(int i, size_t *nbytes)
{
    const tensor_case *t = &tensors[i];
    int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
    size_t row;
    if (wk_type_row_bytes(t->type, t->ne[0], &row) != WK_OK) return NULL;
    *nbytes = row * (size_t)rows;
    uint8_t *p = malloc(*nbytes);
    for (size_t k = 0; k < *nbytes; k++) p[k] = (uint8_t)(k * 31 + (size_t)i * 7 + 1);
    return p;
}

static void fill_writer(wk_gguf_writer *w, const wk_gguf *nested)
{
    uint8_t u8 = 200;
    int8_t i8 = -100;
    uint16_t u16 = 60000;
    int16_t i16 = -30000;
    double f64 = -1.0 / 3.0;
    int64_t i64 = -5000000000ll;
    CHECK_OK(wk_gguf_writer_set_value(w, "t.u8", WK_GGUF_UINT8, &u8));
    CHECK_OK(wk_gguf_writer_set_value(w, "t.i8", WK_GGUF_INT8, &i8));
    CHECK_OK(wk_gguf_writer_set_value(w, "t.u16", WK_GGUF_UINT16, &u16));
    CHECK_OK(wk_gguf_writer_set_value(w, "t.i16", WK_GGUF_INT16, &i16));
    CHECK_OK(wk_gguf_writer_set_u32(w, "t.u32", 4000000000u));
    CHECK_OK(wk_gguf_writer_set_i32(w, "t.i32", -2000000000));
    CHECK_OK(wk_gguf_writer_set_f32(w, "t.f32", 1.5f));
    CHECK_OK(wk_gguf_writer_set_bool(w, "t.bool", true));
    CHECK_OK(wk_gguf_writer_set_str(w, "t.str", "hello, wick"));
    CHECK_OK(wk_gguf_writer_set_u64(w, "t.u64", 18000000000000000000ull));
    CHECK_OK(wk_gguf_writer_set_value(w, "t.i64", WK_GGUF_INT64, &i64));
    CHECK_OK(wk_gguf_writer_set_value(w, "t.f64", WK_GGUF_FLOAT64, &f64));
    CHECK_OK(wk_gguf_writer_set_str(w, "t.empty_str", ""));
    CHECK_OK(wk_gguf_writer_set_str(w, "t.long", "line one\nline \"two\"\t\x01 and a long tail of text "
                                                 "that goes on and on past the cut"));
    /* replacing a key keeps one entry, with the new value and type */
    CHECK_OK(wk_gguf_writer_set_u32(w, "t.replaced", 1));
    CHECK_OK(wk_gguf_writer_set_str(w, "t.replaced", "second"));

    /* arrays of every scalar type */
    uint8_t a_u8[] = {0, 1, 255};
    int8_t a_i8[] = {-128, 0, 127};
    uint16_t a_u16[] = {1, 65535};
    int16_t a_i16[] = {-32768, 32767};
    uint32_t a_u32[] = {1, 2, 3, 4, 5, 6, 7, 8};
    int32_t a_i32[] = {-1, 0, 1};
    float a_f32[] = {0.25f, -2.0f, 1e30f};
    uint8_t a_bool[] = {1, 0, 1, 1};
    uint64_t a_u64[] = {1ull << 63, 0};
    int64_t a_i64[] = {INT64_MIN, INT64_MAX};
    double a_f64[] = {1e300, -0.0};
    CHECK_OK(wk_gguf_writer_set_arr(w, "a.u8", WK_GGUF_UINT8, a_u8, 3));
    CHECK_OK(wk_gguf_writer_set_arr(w, "a.i8", WK_GGUF_INT8, a_i8, 3));
    CHECK_OK(wk_gguf_writer_set_arr(w, "a.u16", WK_GGUF_UINT16, a_u16, 2));
    CHECK_OK(wk_gguf_writer_set_arr(w, "a.i16", WK_GGUF_INT16, a_i16, 2));
    CHECK_OK(wk_gguf_writer_set_arr(w, "a.u32", WK_GGUF_UINT32, a_u32, 8));
    CHECK_OK(wk_gguf_writer_set_arr(w, "a.i32", WK_GGUF_INT32, a_i32, 3));
    CHECK_OK(wk_gguf_writer_set_arr(w, "a.f32", WK_GGUF_FLOAT32, a_f32, 3));
    CHECK_OK(wk_gguf_writer_set_arr(w, "a.bool", WK_GGUF_BOOL, a_bool, 4));
    CHECK_OK(wk_gguf_writer_set_arr(w, "a.u64", WK_GGUF_UINT64, a_u64, 2));
    CHECK_OK(wk_gguf_writer_set_arr(w, "a.i64", WK_GGUF_INT64, a_i64, 2));
    CHECK_OK(wk_gguf_writer_set_arr(w, "a.f64", WK_GGUF_FLOAT64, a_f64, 2));
    CHECK_OK(wk_gguf_writer_set_arr(w, "a.empty", WK_GGUF_INT32, NULL, 0));
    const char *strs[] = {"one", "", "three \xe2\x9c\x93"};
    CHECK_OK(wk_gguf_writer_set_arr_str(w, "a.str", strs, 3));
    CHECK_OK(wk_gguf_writer_copy_kv(w, nested, 0));

    for (int i = 0; i < N_TENSORS; i++) {
        size_t nbytes;
        uint8_t *data = tensor_bytes(i, &nbytes);
        CHECK_OK(wk_gguf_writer_add_tensor(w, tensors[i].name, tensors[i].type, tensors[i].n_dims,
                                           tensors[i].ne, data, nbytes));
        free(data);
    }
}

static void check_read_back(const wk_gguf *g, const tb_buf *nested, size_t alignment)
{
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
    float f32;
    double f64;
    bool b;
    const char *s;
    size_t len;
    CHECK_EQ_INT(wk_gguf_version(g), 3);
    CHECK_EQ_INT(wk_gguf_alignment(g), alignment);
    CHECK_EQ_INT(wk_gguf_n_kv(g), 29 + (alignment != 32));
    CHECK_OK(wk_gguf_get_u32(g, "t.u8", &u32));
    CHECK_EQ_INT(u32, 200);
    CHECK_EQ_INT(wk_gguf_kv_type(g, wk_gguf_find_key(g, "t.u8")), WK_GGUF_UINT8);
    CHECK_OK(wk_gguf_get_i32(g, "t.i8", &i32));
    CHECK_EQ_INT(i32, -100);
    CHECK_EQ_INT(wk_gguf_kv_type(g, wk_gguf_find_key(g, "t.i8")), WK_GGUF_INT8);
    CHECK_OK(wk_gguf_get_u32(g, "t.u16", &u32));
    CHECK_EQ_INT(u32, 60000);
    CHECK_OK(wk_gguf_get_i32(g, "t.i16", &i32));
    CHECK_EQ_INT(i32, -30000);
    CHECK_OK(wk_gguf_get_u32(g, "t.u32", &u32));
    CHECK_EQ_INT(u32, 4000000000u);
    CHECK_OK(wk_gguf_get_i32(g, "t.i32", &i32));
    CHECK_EQ_INT(i32, -2000000000);
    CHECK_OK(wk_gguf_get_f32(g, "t.f32", &f32));
    CHECK(f32 == 1.5f);
    CHECK_OK(wk_gguf_get_bool(g, "t.bool", &b));
    CHECK(b);
    CHECK_OK(wk_gguf_get_str(g, "t.str", &s, &len));
    CHECK(strcmp(s, "hello, wick") == 0 && len == 11);
    CHECK_OK(wk_gguf_get_u64(g, "t.u64", &u64));
    CHECK(u64 == 18000000000000000000ull);
    CHECK_OK(wk_gguf_get_i64(g, "t.i64", &i64));
    CHECK(i64 == -5000000000ll);
    CHECK_OK(wk_gguf_get_f64(g, "t.f64", &f64));
    CHECK(f64 == -1.0 / 3.0);
    CHECK_OK(wk_gguf_get_str(g, "t.empty_str", &s, &len));
    CHECK(len == 0 && s[0] == '\0');
    CHECK_OK(wk_gguf_get_str(g, "t.replaced", &s, &len));
    CHECK(strcmp(s, "second") == 0);

    /* conversions between integer widths, and values that do not fit */
    CHECK_OK(wk_gguf_get_u64(g, "t.u8", &u64));
    CHECK_EQ_INT(u64, 200);
    CHECK_OK(wk_gguf_get_i64(g, "t.u32", &i64));
    CHECK_EQ_INT(i64, 4000000000ll);
    CHECK_FAILS(wk_gguf_get_i32(g, "t.u32", &i32), WK_ERR_FORMAT,
                "key 't.u32': value 4000000000 does not fit a int32");
    CHECK_FAILS(wk_gguf_get_u32(g, "t.i8", &u32), WK_ERR_FORMAT,
                "key 't.i8': value -100 does not fit a uint32");
    CHECK_FAILS(wk_gguf_get_u32(g, "t.u64", &u32), WK_ERR_FORMAT, "does not fit a uint32");
    CHECK_FAILS(wk_gguf_get_i64(g, "t.u64", &i64), WK_ERR_FORMAT, "does not fit a int64");
    CHECK_FAILS(wk_gguf_get_bool(g, "t.u8", &b), WK_ERR_FORMAT,
                "key 't.u8' is a uint8, not a bool");
    CHECK_FAILS(wk_gguf_get_str(g, "t.f32", &s, &len), WK_ERR_FORMAT,
                "key 't.f32' is a float32, not a string");
    CHECK_FAILS(wk_gguf_get_f32(g, "t.str", &f32), WK_ERR_FORMAT,
                "key 't.str' is a string, not a float");
    CHECK_FAILS(wk_gguf_get_arr(g, "t.str", NULL, NULL), WK_ERR_FORMAT,
                "key 't.str' is a string, not an array");

    /* arrays */
    static const struct {
        const char *key;
        wk_gguf_vtype t;
        uint64_t n;
        size_t size;
    } arrs[] = {
        {"a.u8", WK_GGUF_UINT8, 3, 1},    {"a.i8", WK_GGUF_INT8, 3, 1},
        {"a.u16", WK_GGUF_UINT16, 2, 2},  {"a.i16", WK_GGUF_INT16, 2, 2},
        {"a.u32", WK_GGUF_UINT32, 8, 4},  {"a.i32", WK_GGUF_INT32, 3, 4},
        {"a.f32", WK_GGUF_FLOAT32, 3, 4}, {"a.bool", WK_GGUF_BOOL, 4, 1},
        {"a.u64", WK_GGUF_UINT64, 2, 8},  {"a.i64", WK_GGUF_INT64, 2, 8},
        {"a.f64", WK_GGUF_FLOAT64, 2, 8}, {"a.empty", WK_GGUF_INT32, 0, 4},
    };
    static const uint8_t expect_u8[] = {0, 1, 255};
    static const int64_t expect_i64[] = {INT64_MIN, INT64_MAX};
    static const double expect_f64[] = {1e300, -0.0};
    static const float expect_f32[] = {0.25f, -2.0f, 1e30f};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) {
        wk_gguf_vtype t;
        uint64_t n;
        const void *data = NULL;
        CHECK_OK(wk_gguf_get_arr(g, arrs[i].key, &t, &n));
        CHECK_EQ_INT(t, arrs[i].t);
        CHECK_EQ_INT(n, arrs[i].n);
        CHECK_OK(wk_gguf_get_arr_data(g, arrs[i].key, &data));
        CHECK(data != NULL && ((uintptr_t)data % arrs[i].size) == 0);
    }
    const void *data = NULL;
    CHECK_OK(wk_gguf_get_arr_data(g, "a.u8", &data));
    CHECK(data && memcmp(data, expect_u8, 3) == 0);
    CHECK_OK(wk_gguf_get_arr_data(g, "a.i64", &data));
    CHECK(data && memcmp(data, expect_i64, 16) == 0);
    CHECK_OK(wk_gguf_get_arr_data(g, "a.f64", &data));
    CHECK(data && memcmp(data, expect_f64, 16) == 0);
    CHECK_OK(wk_gguf_get_arr_data(g, "a.f32", &data));
    CHECK(data && memcmp(data, expect_f32, 12) == 0);
    wk_gguf_vtype t;
    uint64_t n;
    CHECK_OK(wk_gguf_get_arr(g, "a.str", &t, &n));
    CHECK_EQ_INT(t, WK_GGUF_STRING);
    CHECK_EQ_INT(n, 3);
    CHECK_OK(wk_gguf_get_arr_str(g, "a.str", 2, &s, &len));
    CHECK(strcmp(s, "three \xe2\x9c\x93") == 0 && len == 9);
    CHECK_OK(wk_gguf_get_arr_str(g, "a.str", 1, &s, &len));
    CHECK(len == 0);
    CHECK_FAILS(wk_gguf_get_arr_str(g, "a.str", 3, &s, &len), WK_ERR_INVALID,
                "key 'a.str': index 3 is out of range (3 strings)");
    CHECK_FAILS(wk_gguf_get_arr_str(g, "a.u8", 0, &s, &len), WK_ERR_FORMAT,
                "key 'a.u8' is an array of uint8, not of strings");
    CHECK_FAILS(wk_gguf_get_arr_data(g, "a.str", &data), WK_ERR_FORMAT,
                "key 'a.str' is an array of string, not of numbers");

    /* the nested array came through copy_kv byte for byte */
    CHECK_OK(wk_gguf_get_arr(g, "test.nested", &t, &n));
    CHECK_EQ_INT(t, WK_GGUF_ARRAY);
    CHECK_EQ_INT(n, 3);
    CHECK_FAILS(wk_gguf_get_arr_data(g, "test.nested", &data), WK_ERR_FORMAT,
                "is an array of array, not of numbers");
    char text[256];
    wk_gguf_format_value(g, wk_gguf_find_key(g, "test.nested"), text, sizeof text);
    CHECK_MSG(strcmp(text, "[...] (3 elements)") == 0, "%s", text);
    (void)nested;

    /* rendering for `wick inspect` */
    static const struct {
        const char *key, *text;
    } shown[] = {
        {"t.u8", "200"},
        {"t.i8", "-100"},
        {"t.u64", "18000000000000000000"},
        {"t.i64", "-5000000000"},
        {"t.f32", "1.5"},
        {"t.f64", "-0.3333333333333333"},
        {"t.bool", "true"},
        {"t.str", "\"hello, wick\""},
        {"t.empty_str", "\"\""},
        {"t.long", "\"line one\\nline \\\"two\\\"\\t\\x01 and a long tail of text that goes on and "
                   "o\"... (78 bytes)"},
        {"a.u32", "[1, 2, 3, 4, 5, 6, ...] (8 elements)"},
        {"a.f32", "[0.25, -2, 1e+30] (3 elements)"},
        {"a.f64", "[1e+300, -0] (2 elements)"},
        {"a.bool", "[true, false, true, true] (4 elements)"},
        {"a.i64", "[-9223372036854775808, 9223372036854775807] (2 elements)"},
        {"a.empty", "[] (0 elements)"},
        {"a.str", "[\"one\", \"\", \"three \xe2\x9c\x93\"] (3 elements)"},
    };
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        wk_gguf_format_value(g, wk_gguf_find_key(g, shown[i].key), text, sizeof text);
        CHECK_MSG(strcmp(text, shown[i].text) == 0, "%s: got '%s', want '%s'", shown[i].key, text,
                  shown[i].text);
    }
    /* a small buffer is cut and marked */
    char small[12];
    wk_gguf_format_value(g, wk_gguf_find_key(g, "a.u32"), small, sizeof small);
    CHECK_MSG(strcmp(small, "[1, 2, 3...") == 0, "%s", small);

    /* tensors: table, offsets aligned, bytes */
    CHECK_EQ_INT(wk_gguf_n_tensors(g), N_TENSORS);
    for (int i = 0; i < N_TENSORS && i < wk_gguf_n_tensors(g); i++) {
        const wk_gguf_tensor *gt = wk_gguf_tensor_at(g, i);
        CHECK(strcmp(gt->name, tensors[i].name) == 0);
        CHECK_EQ_INT(gt->type, tensors[i].type);
        CHECK_EQ_INT(gt->n_dims, tensors[i].n_dims);
        for (int d = 0; d < 4; d++) CHECK_EQ_INT(gt->ne[d], tensors[i].ne[d]);
        CHECK_EQ_INT(gt->offset % alignment, 0);
        CHECK_EQ_INT((wk_gguf_data_offset(g) + gt->offset) % alignment, 0);
        size_t nbytes;
        uint8_t *expect = tensor_bytes(i, &nbytes);
        CHECK_EQ_INT(gt->nbytes, nbytes);
        CHECK(memcmp(gt->data, expect, nbytes) == 0);
        CHECK(wk_gguf_find_tensor(g, tensors[i].name) == gt);
        free(expect);
    }
}

static void test_round_trip(size_t alignment)
{
    tb_buf nb = nested_file();
    wk_gguf *nested = NULL;
    CHECK_OK(wk_gguf_open_memory(nb.p, nb.len, "nested.gguf", &nested));
    if (!nested) return;

    wk_gguf_writer *w = NULL;
    CHECK_OK(wk_gguf_writer_create(&w));
    if (alignment != 32) CHECK_OK(wk_gguf_writer_set_alignment(w, alignment));
    fill_writer(w, nested);
    void *mem = NULL;
    size_t size = 0;
    CHECK_OK(wk_gguf_writer_write_memory(w, &mem, &size));
    CHECK_EQ_INT(size % alignment, 0);

    wk_gguf *g = NULL;
    CHECK_OK(wk_gguf_open_memory(mem, size, "round-trip.gguf", &g));
    if (g) {
        check_read_back(g, &nb, alignment);
        /* the copied nested value is byte-identical: copy it again and compare files */
        wk_gguf_writer *w2 = NULL;
        CHECK_OK(wk_gguf_writer_create(&w2));
        for (int64_t i = 0; i < wk_gguf_n_kv(g); i++) CHECK_OK(wk_gguf_writer_copy_kv(w2, g, i));
        for (int64_t i = 0; i < wk_gguf_n_tensors(g); i++) {
            const wk_gguf_tensor *t = wk_gguf_tensor_at(g, i);
            CHECK_OK(wk_gguf_writer_add_tensor_ref(w2, t->name, t->type, t->n_dims, t->ne, t->data,
                                                   t->nbytes));
        }
        void *mem2 = NULL;
        size_t size2 = 0;
        CHECK_OK(wk_gguf_writer_write_memory(w2, &mem2, &size2));
        CHECK(size2 == size && mem2 && memcmp(mem, mem2, size) == 0);
        free(mem2);
        wk_gguf_writer_free(w2);
        wk_gguf_close(g);
    }

    /* the file written to disk is the same bytes, and opens through mmap */
    char path[512];
    snprintf(path, sizeof path, "%s/test_gguf_write_%zu.gguf",
             getenv("WICK_BINARY_DIR") ? getenv("WICK_BINARY_DIR") : ".", alignment);
    CHECK_OK(wk_gguf_writer_write(w, path));
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (f) {
        uint8_t *disk = malloc(size + 1);
        size_t got = fread(disk, 1, size + 1, f);
        fclose(f);
        CHECK_EQ_INT(got, size);
        CHECK(got == size && memcmp(disk, mem, size) == 0);
        free(disk);
    }
    g = NULL;
    CHECK_OK(wk_gguf_open(path, &g));
    if (g) {
        check_read_back(g, &nb, alignment);
        /* the mapping is private and writable: writing tensor bytes leaves the file alone */
        uint8_t *p = (uint8_t *)wk_gguf_tensor_at(g, 0)->data;
        p[0] ^= 0xff;
        wk_gguf_close(g);
        CHECK_OK(wk_gguf_open(path, &g));
        if (g) {
            const wk_gguf_tensor *t0 = wk_gguf_tensor_at(g, 0);
            CHECK(((const uint8_t *)t0->data)[0] ==
                  ((uint8_t *)mem)[wk_gguf_data_offset(g) + t0->offset]);
        }
        wk_gguf_close(g);
    }
    remove(path);
    free(mem);
    wk_gguf_writer_free(w);
    wk_gguf_close(nested);
    tb_free(&nb);
}

/* Every key and tensor of the default model through the writer gives back the
 * original file, byte for byte. */
static void test_copy_model(const char *path)
{
    wk_gguf *g = NULL;
    CHECK_OK(wk_gguf_open(path, &g));
    if (!g) return;
    wk_gguf_writer *w = NULL;
    CHECK_OK(wk_gguf_writer_create(&w));
    for (int64_t i = 0; i < wk_gguf_n_kv(g); i++) CHECK_OK(wk_gguf_writer_copy_kv(w, g, i));
    for (int64_t i = 0; i < wk_gguf_n_tensors(g); i++) {
        const wk_gguf_tensor *t = wk_gguf_tensor_at(g, i);
        CHECK_OK(wk_gguf_writer_add_tensor_ref(w, t->name, t->type, t->n_dims, t->ne, t->data,
                                               t->nbytes));
    }
    void *mem = NULL;
    size_t size = 0;
    CHECK_OK(wk_gguf_writer_write_memory(w, &mem, &size));
    FILE *f = fopen(path, "rb");
    uint8_t *orig = malloc(size + 1);
    size_t got = f ? fread(orig, 1, size + 1, f) : 0;
    if (f) fclose(f);
    CHECK_EQ_INT(got, size);
    CHECK(mem && got == size && memcmp(orig, mem, size) == 0);
    free(orig);
    free(mem);
    wk_gguf_writer_free(w);
    wk_gguf_close(g);
}

static void test_writer_rejections(void)
{
    wk_gguf_writer *w = NULL;
    CHECK_OK(wk_gguf_writer_create(&w));
    float x[64] = {0};
    int64_t ne[2] = {33, 2};
    CHECK_FAILS(wk_gguf_writer_add_tensor(w, "bad.row", WK_TYPE_Q4_0, 2, ne, x, 36), WK_ERR_INVALID,
                "33 elements is not a multiple of q4_0's block size 32");
    ne[0] = 32;
    CHECK_FAILS(wk_gguf_writer_add_tensor(w, "bad.size", WK_TYPE_Q4_0, 2, ne, x, 35),
                WK_ERR_INVALID, "tensor 'bad.size': 35 bytes given, a q4_0 tensor of 2 rows of 32 needs 36");
    CHECK_FAILS(wk_gguf_writer_add_tensor(w, "bad.dims", WK_TYPE_F32, 5, ne, x, 4), WK_ERR_INVALID,
                "tensor 'bad.dims': n_dims 5 is not between 1 and 4");
    ne[1] = 0;
    CHECK_FAILS(wk_gguf_writer_add_tensor(w, "bad.dim0", WK_TYPE_F32, 2, ne, x, 0), WK_ERR_INVALID,
                "tensor 'bad.dim0': ne[1] = 0 is not positive");
    ne[1] = 2;
    CHECK_FAILS(wk_gguf_writer_add_tensor(w, "bad.type", (wk_type)4, 2, ne, x, 36), WK_ERR_INVALID,
                "tensor 'bad.type': unknown type id 4");
    CHECK_OK(wk_gguf_writer_add_tensor(w, "ok", WK_TYPE_Q4_0, 2, ne, x, 36));
    CHECK_FAILS(wk_gguf_writer_add_tensor(w, "ok", WK_TYPE_Q4_0, 2, ne, x, 36), WK_ERR_INVALID,
                "duplicate tensor name 'ok'");
    CHECK_FAILS(wk_gguf_writer_set_alignment(w, 48), WK_ERR_INVALID,
                "alignment 48 is not a power of two");
    CHECK_FAILS(wk_gguf_writer_set_arr(w, "k", WK_GGUF_STRING, x, 1), WK_ERR_INVALID,
                "key 'k': arrays of string are written with wk_gguf_writer_set_arr_str");
    CHECK_FAILS(wk_gguf_writer_set_value(w, "k", WK_GGUF_ARRAY, x), WK_ERR_INVALID,
                "key 'k': type array is not a scalar");
    CHECK_FAILS(wk_gguf_writer_set_u32(w, "", 1), WK_ERR_INVALID, "a key must be a non-empty string");
    /* an alignment set as a plain key is checked when the file is written */
    CHECK_OK(wk_gguf_writer_set_u32(w, "general.alignment", 24));
    void *mem = NULL;
    size_t size;
    CHECK_FAILS(wk_gguf_writer_write_memory(w, &mem, &size), WK_ERR_INVALID,
                "general.alignment 24 is not a power of two");
    CHECK_FAILS(wk_gguf_writer_write(w, "/nonexistent-dir/x.gguf"), WK_ERR_INVALID,
                "general.alignment 24");
    CHECK_OK(wk_gguf_writer_set_u32(w, "general.alignment", 16));
    CHECK_FAILS(wk_gguf_writer_write(w, "/nonexistent-dir/x.gguf"), WK_ERR_IO,
                "/nonexistent-dir/x.gguf: cannot create");
    wk_gguf_writer_free(w);
}

int main(void)
{
    test_round_trip(32);
    test_round_trip(64);
    test_round_trip(1);
    test_writer_rejections();
    const char *model = test_model_path();
    if (model) test_copy_model(model);
    else CHECK(model != NULL);
    TEST_MAIN_END();
}
