/* The error API: a failing public call returns a status and leaves a message, read
 * with wk_last_error(), that names the file, key, type or argument and the numbers.
 * Representative failures of the GGUF reader, the metadata getters, the type table
 * and the device names; the message is per thread, bounded, and never overflows. */
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "hostile_gguf.h"
#include "wick.h"

static void test_status_names(void)
{
    const char *names[] = {"ok", "io", "format", "invalid", "nomem", "unsupported", "device"};
    for (int s = WK_OK; s <= WK_ERR_DEVICE; s++)
        CHECK_MSG(strcmp(wk_status_name((wk_status)s), names[s]) == 0, "status %d is '%s'", s,
                  wk_status_name((wk_status)s));
    CHECK(strcmp(wk_status_name((wk_status)99), "unknown") == 0);
}

/* A scratch directory under the build tree (or /tmp). */
static const char *scratch(char *buf, size_t cap, const char *name)
{
    const char *dir = getenv("WICK_BINARY_DIR");
    snprintf(buf, cap, "%s/error_api_%ld_%s", dir ? dir : "/tmp", (long)getpid(), name);
    return buf;
}

static void test_open_files(void)
{
    wk_gguf *g = (wk_gguf *)1;
    CHECK_FAILS(wk_gguf_open("/nonexistent/dir/model.gguf", &g), WK_ERR_IO,
                "/nonexistent/dir/model.gguf: cannot open: No such file or directory");
    CHECK(g == NULL);

    char dir[512];
    scratch(dir, sizeof dir, "dir");
    CHECK(mkdir(dir, 0700) == 0);
    CHECK_FAILS(wk_gguf_open(dir, &g), WK_ERR_IO, "not a regular file");
    CHECK(strstr(wk_last_error(), dir) != NULL);
    rmdir(dir);

    char path[512];
    scratch(path, sizeof path, "empty.gguf");
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) fclose(f);
    CHECK_FAILS(wk_gguf_open(path, &g), WK_ERR_FORMAT,
                "0 bytes is too small for a GGUF header (24 bytes)");
    CHECK(strstr(wk_last_error(), path) != NULL);

    /* a text file */
    f = fopen(path, "wb");
    if (f) {
        fputs("this is not a model, it is a text file of some length\n", f);
        fclose(f);
    }
    CHECK_FAILS(wk_gguf_open(path, &g), WK_ERR_FORMAT,
                "not a GGUF file (magic bytes 74 68 69 73, expected 'GGUF')");
    unlink(path);

    CHECK_FAILS(wk_gguf_open(NULL, &g), WK_ERR_INVALID, "wk_gguf_open: NULL argument");
    CHECK_FAILS(wk_gguf_open_memory(NULL, 10, "m", &g), WK_ERR_INVALID, "NULL argument");
    wk_gguf_close(NULL); /* a no-op */
}

/* A small file with one key of each kind the getters must refuse. */
static wk_gguf *open_getter_file(hg_buf *b)
{
    hg_header(b, 3, 0, 6);
    hg_str(b, "neg");
    hg_u32(b, 5); /* int32 */
    hg_u32(b, (uint32_t)-5);
    hg_str(b, "big");
    hg_u32(b, 10); /* uint64 */
    hg_u64(b, (uint64_t)1 << 40);
    hg_kv_str(b, "name", "tiny");
    hg_kv_arr(b, "ints", 5, 2);
    hg_u32(b, 1);
    hg_u32(b, 2);
    hg_kv_arr(b, "strs", 8, 2);
    hg_str(b, "x");
    hg_str(b, "y");
    hg_str(b, "half");
    hg_u32(b, 6); /* float32 */
    hg_u32(b, 0x3f000000u);
    wk_gguf *g = NULL;
    CHECK_OK(wk_gguf_open_memory(b->p, b->len, "getters.gguf", &g));
    return g;
}

static void test_getters(void)
{
    hg_buf b = {0};
    wk_gguf *g = open_getter_file(&b);
    if (!g) return;
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    float f;
    bool bl;
    const char *s;
    const void *data;
    CHECK_FAILS(wk_gguf_get_u32(g, "neg", &u32), WK_ERR_FORMAT,
                "getters.gguf: key 'neg': value -5 does not fit a uint32");
    CHECK_FAILS(wk_gguf_get_u64(g, "neg", &u64), WK_ERR_FORMAT, "value -5 does not fit a uint64");
    CHECK_OK(wk_gguf_get_i32(g, "neg", &i32));
    CHECK_EQ_INT(i32, -5);
    CHECK_FAILS(wk_gguf_get_u32(g, "big", &u32), WK_ERR_FORMAT,
                "key 'big': value 1099511627776 does not fit a uint32");
    CHECK_FAILS(wk_gguf_get_i32(g, "big", &i32), WK_ERR_FORMAT,
                "value 1099511627776 does not fit a int32");
    CHECK_FAILS(wk_gguf_get_u32(g, "name", &u32), WK_ERR_FORMAT,
                "key 'name' is a string, not an integer");
    CHECK_FAILS(wk_gguf_get_f32(g, "name", &f), WK_ERR_FORMAT, "key 'name' is a string, not a float");
    CHECK_FAILS(wk_gguf_get_bool(g, "half", &bl), WK_ERR_FORMAT,
                "key 'half' is a float32, not a bool");
    CHECK_FAILS(wk_gguf_get_str(g, "ints", &s, NULL), WK_ERR_FORMAT,
                "key 'ints' is a array, not a string");
    CHECK_FAILS(wk_gguf_get_arr(g, "name", NULL, NULL), WK_ERR_FORMAT,
                "key 'name' is a string, not an array");
    CHECK_FAILS(wk_gguf_get_arr_str(g, "ints", 0, &s, NULL), WK_ERR_FORMAT,
                "key 'ints' is an array of int32, not of strings");
    CHECK_FAILS(wk_gguf_get_arr_str(g, "strs", 2, &s, NULL), WK_ERR_INVALID,
                "key 'strs': index 2 is out of range (2 strings)");
    CHECK_FAILS(wk_gguf_get_arr_data(g, "strs", &data), WK_ERR_FORMAT,
                "key 'strs' is an array of string, not of numbers");
    CHECK_FAILS(wk_gguf_get_u32(g, "llama.block_count", &u32), WK_ERR_FORMAT,
                "getters.gguf: key 'llama.block_count' not found");
    CHECK_FAILS(wk_gguf_get_u32(g, NULL, &u32), WK_ERR_FORMAT, "not found");
    wk_gguf_close(g);
    hg_free(&b);
}

static void test_types(void)
{
    wk_type t;
    size_t bytes = 0;
    CHECK_FAILS(wk_type_from_name("q9_9", &t), WK_ERR_INVALID, "unknown type 'q9_9'");
    CHECK_FAILS(wk_type_from_name(NULL, &t), WK_ERR_INVALID, "unknown type ''");
    CHECK_FAILS(wk_type_row_bytes(WK_TYPE_Q4_0, 33, &bytes), WK_ERR_INVALID,
                "row of 33 elements is not a multiple of q4_0's block size 32");
    CHECK_FAILS(wk_type_row_bytes(WK_TYPE_Q4_K, -256, &bytes), WK_ERR_INVALID,
                "row of -256 elements");
    CHECK_FAILS(wk_type_row_bytes((wk_type)4, 32, &bytes), WK_ERR_INVALID, "unknown type id 4");
    CHECK_FAILS(wk_type_row_bytes((wk_type)-1, 32, &bytes), WK_ERR_INVALID, "unknown type id -1");
    CHECK_FAILS(wk_type_row_bytes((wk_type)1000, 32, &bytes), WK_ERR_INVALID,
                "unknown type id 1000");
    /* A row whose bytes do not fit size_t must be refused, not wrapped. */
    bytes = 12345;
    wk_status st = wk_type_row_bytes(WK_TYPE_F32, (int64_t)1 << 62, &bytes);
    CHECK_MSG(st == WK_ERR_INVALID,
              "wk_type_row_bytes(f32, 2^62) returned %s with %zu bytes (2^64 wraps)",
              wk_status_name(st), bytes);
    float x[32] = {0};
    unsigned char y[64];
    CHECK_FAILS(wk_quantize_row(WK_TYPE_Q8_0, x, y, 31), WK_ERR_INVALID,
                "row of 31 elements is not a multiple of q8_0's block size 32");
    CHECK_FAILS(wk_dequantize_row((wk_type)24, y, x, 32), WK_ERR_INVALID, "unknown type id 24");
    float dot;
    CHECK_FAILS(wk_vec_dot(WK_TYPE_Q2_K, 32, y, y, &dot), WK_ERR_INVALID,
                "row of 32 elements is not a multiple of q2_k's block size 256");
    CHECK(strcmp(wk_type_name((wk_type)5), "?") == 0);
    CHECK_EQ_INT(wk_type_block_size((wk_type)99), 0);
}

static void test_devices(void)
{
    wk_device d;
    CHECK_FAILS(wk_device_from_name("tpu", &d), WK_ERR_INVALID,
                "unknown device 'tpu' (expected cpu or cuda)");
    CHECK_FAILS(wk_device_from_name("", &d), WK_ERR_INVALID, "unknown device ''");
    CHECK_FAILS(wk_device_from_name(NULL, &d), WK_ERR_INVALID, "unknown device ''");
    CHECK(strcmp(wk_device_name((wk_device)7), "?") == 0);
}

/* The message is per thread: a failure on another thread leaves this one's alone. */
static void *fail_elsewhere(void *arg)
{
    wk_device d;
    (void)arg;
    wk_device_from_name("elsewhere", &d);
    return strstr(wk_last_error(), "elsewhere") ? (void *)1 : NULL;
}

static void test_thread_local(void)
{
    wk_device d;
    wk_device_from_name("here", &d);
    pthread_t th;
    void *ok = NULL;
    CHECK(pthread_create(&th, NULL, fail_elsewhere, NULL) == 0);
    pthread_join(th, &ok);
    CHECK(ok != NULL);
    CHECK_MSG(strstr(wk_last_error(), "'here'") != NULL, "message became \"%s\"", wk_last_error());
}

/* A path far longer than the message buffer: cut, terminated, never overflowing. */
static void test_long_message(void)
{
    static char path[8192];
    memset(path, 'p', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = '\0';
    wk_gguf *g = NULL;
    CHECK(wk_gguf_open(path, &g) == WK_ERR_IO);
    size_t n = strlen(wk_last_error());
    CHECK_MSG(n > 100 && n < 4096, "message length %zu", n);

    /* the same through a memory file whose name is long, with a key name of 4000 bytes */
    static char key[4001];
    memset(key, 'k', 4000);
    hg_buf b = {0};
    hg_header(&b, 3, 0, 1);
    hg_str(&b, key);
    hg_u32(&b, 99);
    CHECK(wk_gguf_open_memory(b.p, b.len, path, &g) == WK_ERR_FORMAT);
    n = strlen(wk_last_error());
    CHECK_MSG(n > 100 && n < 4096, "message length %zu", n);
    hg_free(&b);
}

int main(void)
{
    test_status_names();
    test_open_files();
    test_getters();
    test_types();
    test_devices();
    test_thread_local();
    test_long_message();
    TEST_MAIN_END();
}
