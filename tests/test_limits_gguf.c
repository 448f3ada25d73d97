/* Resource limits of the GGUF reader against hostile files built byte by byte.
 *
 * 1. Every count and length a file claims (metadata count, tensor count, string
 *    lengths, array lengths, nesting depth, dimensions, offsets) is checked against
 *    the file's size, and against wick's sane upper bounds, before anything is
 *    allocated from it: each hostile file is refused with a message that names the
 *    file, the key or tensor, and the numbers.
 * 2. While it does so, the reader's memory stays proportional to the file: malloc is
 *    interposed (outside sanitizer builds, which own malloc) and the peak of live
 *    bytes is checked against a small multiple of the file's size.
 * 3. Every prefix of a valid file is refused cleanly (never a crash).
 */
#include <stdint.h>

#include "alloc_count.h"
#include "check.h"
#include "hostile_gguf.h"
#include "wick.h"

/* The reader's own tables have a fixed floor (an arena block of 64 KiB, hash tables
 * of 16 slots) and then grow with the file: the metadata table, for one, holds about
 * 130 bytes per 13-byte entry. A bounded multiple of the file, never its claims. */
static const long long floor_bytes = 256 * 1024;
static const long long per_file_byte = 16;

/* Open bytes that must be refused with status st and a message containing want;
 * checks the peak memory while doing so. */
static void refuses(const hg_buf *b, wk_status st, const char *want, const char *what)
{
    wk_gguf *g = (wk_gguf *)1;
    long long base = alloc_mark();
    wk_status got = wk_gguf_open_memory(b->p, b->len, "hostile.gguf", &g);
    const char *msg = wk_last_error();
    CHECK_MSG(got == st && strstr(msg, want) && strstr(msg, "hostile.gguf"),
              "%s: expected status %s with \"%s\", got %s: \"%s\"", what, wk_status_name(st),
              want, wk_status_name(got), msg);
    CHECK_MSG(g == NULL, "%s: the handle is not NULL after a failure", what);
    if (got == WK_OK && g) wk_gguf_close(g);
    if (WK_COUNT_ALLOC) {
        long long bound = floor_bytes + per_file_byte * (long long)b->len;
        CHECK_MSG(alloc_peak - base <= bound,
                  "%s: a %zu-byte file made the reader hold %lld bytes (bound %lld)", what,
                  b->len, alloc_peak - base, bound);
        CHECK_MSG(alloc_biggest <= (unsigned long long)bound,
                  "%s: a %zu-byte file made the reader ask for %llu bytes at once", what, b->len,
                  alloc_biggest);
        CHECK_MSG(alloc_live == base, "%s: %lld bytes leaked", what, alloc_live - base);
    }
}

/* ---- counts in the header -------------------------------------------------- */

static void test_header_counts(void)
{
    hg_buf b = {0};
    hg_header(&b, 3, 0, (uint64_t)1 << 62);
    hg_zeros(&b, 100);
    refuses(&b, WK_ERR_FORMAT, "n_kv 4611686018427387904", "n_kv 2^62");
    hg_free(&b);

    hg_header(&b, 3, UINT64_MAX, 0);
    hg_zeros(&b, 100);
    refuses(&b, WK_ERR_FORMAT, "n_tensors 18446744073709551615", "n_tensors 2^64-1");
    hg_free(&b);

    /* More metadata entries than the bytes after the header can hold (13 each). */
    hg_header(&b, 3, 0, 9);
    hg_zeros(&b, 9 * 13 - 1);
    refuses(&b, WK_ERR_FORMAT, "n_kv 9 is more than the 116 bytes", "n_kv just too many");
    hg_free(&b);

    /* Counts beyond wick's limits, in a file that is big enough for their minimum
     * sizes: refused by the limit, not by running out of file. */
    hg_header(&b, 3, ((uint64_t)1 << 20) + 1, 0);
    hg_zeros(&b, (((size_t)1 << 20) + 1) * 32);
    refuses(&b, WK_ERR_FORMAT, "n_tensors 1048577 exceeds wick's limit of 1048576",
            "n_tensors above the limit");
    hg_free(&b);

    hg_header(&b, 3, 0, ((uint64_t)1 << 20) + 1);
    hg_zeros(&b, (((size_t)1 << 20) + 1) * 13);
    refuses(&b, WK_ERR_FORMAT, "n_kv 1048577 exceeds wick's limit of 1048576",
            "n_kv above the limit");
    hg_free(&b);
}

/* ---- strings and arrays ---------------------------------------------------- */

static void test_strings(void)
{
    hg_buf b = {0};
    /* a key whose length is 2^63 */
    hg_header(&b, 3, 0, 1);
    hg_u64(&b, (uint64_t)1 << 63);
    hg_zeros(&b, 64);
    refuses(&b, WK_ERR_FORMAT, "name length 9223372036854775808", "key length 2^63");
    hg_free(&b);

    /* a string value one byte longer than the file */
    hg_header(&b, 3, 0, 1);
    hg_str(&b, "general.name");
    hg_u32(&b, 8);
    hg_u64(&b, 11);
    hg_bytes(&b, "0123456789", 10);
    refuses(&b, WK_ERR_FORMAT, "key 'general.name': string length 11", "string past the end");
    hg_free(&b);

    /* a string longer than wick's limit (64 MiB), with the bytes present */
    hg_header(&b, 3, 0, 1);
    hg_str(&b, "general.name");
    hg_u32(&b, 8);
    hg_u64(&b, ((uint64_t)64 << 20) + 1);
    hg_zeros(&b, ((size_t)64 << 20) + 1);
    refuses(&b, WK_ERR_FORMAT, "string length 67108865 at offset 48 exceeds wick's limit of 67108864 bytes",
            "string above the limit");
    hg_free(&b);

    /* empty key, key with a NUL byte */
    hg_header(&b, 3, 0, 1);
    hg_str(&b, "");
    hg_u32(&b, 4);
    hg_u32(&b, 1);
    refuses(&b, WK_ERR_FORMAT, "empty name", "empty key");
    hg_free(&b);
    hg_header(&b, 3, 0, 1);
    hg_u64(&b, 3);
    hg_bytes(&b, "a\0b", 3);
    hg_u32(&b, 4);
    hg_u32(&b, 1);
    refuses(&b, WK_ERR_FORMAT, "NUL byte", "key with NUL");
    hg_free(&b);
}

static void test_arrays(void)
{
    hg_buf b = {0};
    /* 2^60 uint64 elements claimed in a small file */
    hg_header(&b, 3, 0, 1);
    hg_kv_arr(&b, "a", 10, (uint64_t)1 << 60);
    hg_zeros(&b, 64);
    refuses(&b, WK_ERR_FORMAT, "array length 1152921504606846976", "array length 2^60");
    hg_free(&b);

    /* strings: 8 bytes each at least */
    hg_header(&b, 3, 0, 1);
    hg_kv_arr(&b, "tokenizer.ggml.tokens", 8, 1000);
    for (int i = 0; i < 999; i++) hg_u64(&b, 0);
    refuses(&b, WK_ERR_FORMAT, "key 'tokenizer.ggml.tokens': array length 1000", "string array");
    hg_free(&b);

    /* more elements than wick's limit (2^24), the bytes present */
    uint64_t n = ((uint64_t)1 << 24) + 1;
    hg_header(&b, 3, 0, 1);
    hg_kv_arr(&b, "big", 0, n);
    hg_zeros(&b, (size_t)n);
    refuses(&b, WK_ERR_FORMAT, "array length 16777217 at offset 43 exceeds wick's limit of 16777216 elements",
            "array above the limit");
    hg_free(&b);

    /* an element type that does not exist, and one nested array with a bad one */
    hg_header(&b, 3, 0, 1);
    hg_kv_arr(&b, "a", 13, 1);
    hg_zeros(&b, 16);
    refuses(&b, WK_ERR_FORMAT, "unknown value type 13", "unknown element type");
    hg_free(&b);

    /* bool elements must be 0 or 1 */
    hg_header(&b, 3, 0, 1);
    hg_kv_arr(&b, "flags", 7, 3);
    hg_u8(&b, 1);
    hg_u8(&b, 0);
    hg_u8(&b, 7);
    refuses(&b, WK_ERR_FORMAT, "bool value 7", "bool array");
    hg_free(&b);

    /* arrays nested 65 deep: refused without recursion */
    hg_header(&b, 3, 0, 1);
    hg_kv_arr(&b, "deep", 9, 1);
    for (int d = 0; d < 64; d++) {
        hg_u32(&b, 9);
        hg_u64(&b, 1);
    }
    hg_u32(&b, 4);
    hg_u64(&b, 0);
    refuses(&b, WK_ERR_FORMAT, "nested deeper than 64", "nesting 65");
    hg_free(&b);

    /* 100000 levels claimed: the same clean refusal */
    hg_header(&b, 3, 0, 1);
    hg_kv_arr(&b, "deeper", 9, 1);
    for (int d = 0; d < 100000; d++) {
        hg_u32(&b, 9);
        hg_u64(&b, 1);
    }
    refuses(&b, WK_ERR_FORMAT, "nested deeper than 64", "nesting 100000");
    hg_free(&b);

    /* Wide nesting: many small inner arrays are fine and cost no memory beyond the
     * file (they are skipped, not copied); the file is then refused for its tensor. */
    hg_header(&b, 3, 1, 1);
    hg_kv_arr(&b, "wide", 9, 20000);
    for (int i = 0; i < 20000; i++) {
        hg_u32(&b, 5);
        hg_u64(&b, 1);
        hg_u32(&b, (uint32_t)i);
    }
    uint64_t ne[1] = {32};
    hg_tensor(&b, "t", 1, ne, 0, 64);
    hg_pad(&b, 32);
    refuses(&b, WK_ERR_FORMAT, "tensor 't': data at offset 64, 128 bytes, lies outside",
            "wide nested arrays");
    hg_free(&b);

    /* Many empty strings: the string table costs memory per element, bounded by
     * the file's size; then refused for a duplicate key. */
    hg_header(&b, 3, 0, 2);
    hg_kv_arr(&b, "k", 8, 100000);
    for (int i = 0; i < 100000; i++) hg_u64(&b, 0);
    hg_kv_u32(&b, "k", 1);
    refuses(&b, WK_ERR_FORMAT, "duplicate key 'k' (entries 0 and 1)", "empty strings");
    hg_free(&b);
}

/* ---- tensors ---------------------------------------------------------------- */

/* A file with one tensor info and data space; ne innermost first. */
static void one_tensor(hg_buf *b, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                       uint64_t offset, size_t data_bytes)
{
    hg_header(b, 3, 1, 0);
    hg_tensor(b, "blk.0.attn_q.weight", n_dims, ne, type, offset);
    hg_pad(b, 32);
    hg_zeros(b, data_bytes);
}

static void test_tensors(void)
{
    hg_buf b = {0};
    uint64_t ne[5] = {32, 4, 1, 1, 1};

    one_tensor(&b, 5, ne, 0, 0, 512);
    refuses(&b, WK_ERR_FORMAT, "n_dims 5 is not between 1 and 4", "5 dims");
    hg_free(&b);
    one_tensor(&b, 0, ne, 0, 0, 512);
    refuses(&b, WK_ERR_FORMAT, "n_dims 0", "0 dims");
    hg_free(&b);

    uint64_t zero[2] = {32, 0};
    one_tensor(&b, 2, zero, 0, 0, 512);
    refuses(&b, WK_ERR_FORMAT, "ne[1] = 0", "zero dimension");
    hg_free(&b);

    uint64_t huge[4] = {(uint64_t)1 << 32, (uint64_t)1 << 32, 2, 1};
    one_tensor(&b, 4, huge, 0, 0, 512);
    refuses(&b, WK_ERR_FORMAT, "element count overflows", "dims product overflow");
    hg_free(&b);

    /* no overflow, but 2^40 f32 elements in a 600-byte file */
    uint64_t big[2] = {(uint64_t)1 << 20, (uint64_t)1 << 20};
    one_tensor(&b, 2, big, 0, 0, 512);
    refuses(&b, WK_ERR_FORMAT, "4398046511104 bytes, lies outside the data section",
            "data larger than the file");
    hg_free(&b);

    /* 2^62 q8_0 bytes: row bytes times rows overflows size_t */
    uint64_t ov[2] = {(uint64_t)1 << 40, (uint64_t)1 << 22};
    one_tensor(&b, 2, ov, 8, 0, 512);
    refuses(&b, WK_ERR_FORMAT, "tensor 'blk.0.attn_q.weight'", "byte size overflow");
    hg_free(&b);

    /* one row of 2^62 f32 elements is 2^64 bytes: wraps to 0 in size_t; 2^62 + 8
     * elements would wrap to 32 bytes and pass every later check */
    uint64_t wrap0[1] = {(uint64_t)1 << 62}, wrap32[1] = {((uint64_t)1 << 62) + 8};
    one_tensor(&b, 1, wrap0, 0, 0, 512);
    refuses(&b, WK_ERR_FORMAT,
            "4611686018427387904 f32 elements overflows",
            "row bytes wrap to 0");
    hg_free(&b);
    one_tensor(&b, 1, wrap32, 0, 0, 512);
    refuses(&b, WK_ERR_FORMAT,
            "4611686018427387912 f32 elements overflows",
            "row bytes wrap to 32");
    hg_free(&b);
    uint64_t wrapq[1] = {(uint64_t)1 << 62};
    one_tensor(&b, 1, wrapq, 14, 0, 512);
    refuses(&b, WK_ERR_FORMAT, "3783023686991216640 bytes, lies outside", "q6_k row of 2^62");
    hg_free(&b);

    one_tensor(&b, 2, ne, 4, 0, 512);
    refuses(&b, WK_ERR_FORMAT, "unknown or removed type id 4", "type 4");
    hg_free(&b);
    one_tensor(&b, 2, ne, 0xffffffffu, 0, 512);
    refuses(&b, WK_ERR_FORMAT, "unknown or removed type id 4294967295", "type 2^32-1");
    hg_free(&b);

    uint64_t odd[2] = {48, 2};
    one_tensor(&b, 2, odd, 12, 0, 4096);
    refuses(&b, WK_ERR_FORMAT, "row length ne[0] = 48 is not a multiple of q4_k's block size 256",
            "row not a multiple of the block");
    hg_free(&b);

    one_tensor(&b, 2, ne, 0, 16, 1024);
    refuses(&b, WK_ERR_FORMAT, "offset 16 is not a multiple of the alignment 32",
            "unaligned offset");
    hg_free(&b);

    one_tensor(&b, 2, ne, 0, UINT64_MAX - 31, 1024);
    refuses(&b, WK_ERR_FORMAT, "lies outside the data section", "offset near 2^64");
    hg_free(&b);

    /* 32 x 4 f32 = 512 bytes, but only 511 present */
    one_tensor(&b, 2, ne, 0, 0, 511);
    refuses(&b, WK_ERR_FORMAT, "data at offset 0, 512 bytes, lies outside the data section",
            "data one byte short");
    hg_free(&b);

    /* duplicate tensor names */
    hg_header(&b, 3, 2, 0);
    hg_tensor(&b, "w", 1, ne, 0, 0);
    hg_tensor(&b, "w", 1, ne, 0, 128);
    hg_pad(&b, 32);
    hg_zeros(&b, 256);
    refuses(&b, WK_ERR_FORMAT, "duplicate tensor name 'w' (tensors 0 and 1)", "duplicate tensor");
    hg_free(&b);
}

/* ---- header and alignment ------------------------------------------------------ */

static void test_header(void)
{
    hg_buf b = {0};
    hg_bytes(&b, "GGUG", 4);
    hg_zeros(&b, 20);
    refuses(&b, WK_ERR_FORMAT, "not a GGUF file (magic bytes 47 47 55 47", "bad magic");
    hg_free(&b);

    hg_bytes(&b, "GG", 2);
    refuses(&b, WK_ERR_FORMAT, "not a GGUF file", "2 bytes");
    hg_free(&b);

    refuses(&b, WK_ERR_FORMAT, "not a GGUF file", "0 bytes");

    uint32_t versions[] = {0, 1, 4, 0xffffffffu};
    for (size_t i = 0; i < 4; i++) {
        char want[64];
        snprintf(want, sizeof want, "GGUF version %u is not supported", versions[i]);
        hg_header(&b, versions[i], 0, 0);
        refuses(&b, WK_ERR_UNSUPPORTED, want, "version");
        hg_free(&b);
    }
    hg_header(&b, 0x03000000u, 0, 0);
    refuses(&b, WK_ERR_UNSUPPORTED, "big-endian GGUF file", "big-endian");
    hg_free(&b);

    /* a header cut inside the tensor count */
    hg_bytes(&b, "GGUF", 4);
    hg_u32(&b, 3);
    hg_u32(&b, 0);
    refuses(&b, WK_ERR_FORMAT, "tensor count needs 8 bytes at offset 8, the file is 12 bytes",
            "cut header");
    hg_free(&b);

    struct {
        uint32_t value;
        const char *want;
    } aligns[] = {{0, "general.alignment 0 is not a power of two"},
                  {24, "general.alignment 24 is not a power of two"},
                  {1u << 21, "general.alignment 2097152 is larger than the limit 1048576"}};
    for (size_t i = 0; i < 3; i++) {
        hg_header(&b, 3, 0, 1);
        hg_kv_u32(&b, "general.alignment", aligns[i].value);
        refuses(&b, WK_ERR_FORMAT, aligns[i].want, "alignment");
        hg_free(&b);
    }
    hg_header(&b, 3, 0, 1);
    hg_kv_str(&b, "general.alignment", "32");
    refuses(&b, WK_ERR_FORMAT, "general.alignment is a string, not an integer", "string alignment");
    hg_free(&b);

    /* a scalar bool of 2 */
    hg_header(&b, 3, 0, 1);
    hg_str(&b, "b");
    hg_u32(&b, 7);
    hg_u8(&b, 2);
    refuses(&b, WK_ERR_FORMAT, "bool value 2", "scalar bool");
    hg_free(&b);
}

/* ---- every prefix of a valid file ------------------------------------------------ */

static void test_prefixes(void)
{
    hg_buf b = {0};
    hg_header(&b, 3, 2, 4);
    hg_kv_str(&b, "general.architecture", "llama");
    hg_kv_u32(&b, "general.alignment", 64);
    hg_kv_arr(&b, "tokenizer.ggml.tokens", 8, 3);
    hg_str(&b, "a");
    hg_str(&b, "bc");
    hg_str(&b, "");
    hg_kv_arr(&b, "nested", 9, 2);
    hg_u32(&b, 4);
    hg_u64(&b, 1);
    hg_u32(&b, 7);
    hg_u32(&b, 8);
    hg_u64(&b, 1);
    hg_str(&b, "x");
    uint64_t ne1[2] = {32, 2}, ne2[1] = {256};
    hg_tensor(&b, "a", 2, ne1, 8, 0);   /* q8_0: 2 rows of 34 bytes */
    hg_tensor(&b, "b", 1, ne2, 12, 128); /* q4_k: 144 bytes */
    hg_pad(&b, 64);
    hg_zeros(&b, 128 + 144);

    wk_gguf *g = NULL;
    CHECK_OK(wk_gguf_open_memory(b.p, b.len, "whole.gguf", &g));
    if (g) {
        CHECK_EQ_INT(wk_gguf_n_kv(g), 4);
        CHECK_EQ_INT(wk_gguf_n_tensors(g), 2);
        CHECK_EQ_INT(wk_gguf_alignment(g), 64);
        wk_gguf_close(g);
    }
    int refused = 0;
    for (size_t n = 0; n < b.len; n++) {
        g = NULL;
        wk_status st = wk_gguf_open_memory(b.p, n, "prefix.gguf", &g);
        if (st != WK_OK) refused++;
        CHECK_MSG(st == WK_ERR_FORMAT && g == NULL && strstr(wk_last_error(), "prefix.gguf"),
                  "prefix of %zu of %zu bytes: status %s, message \"%s\"", n, b.len,
                  wk_status_name(st), wk_last_error());
        if (g) wk_gguf_close(g);
    }
    CHECK_EQ_INT(refused, (long long)b.len);
    hg_free(&b);
}

int main(void)
{
    fprintf(stderr, "allocation counting: %s\n", WK_COUNT_ALLOC ? "on" : "off (sanitizer build)");
    test_header_counts();
    test_strings();
    test_arrays();
    test_tensors();
    test_header();
    test_prefixes();
    TEST_MAIN_END();
}
