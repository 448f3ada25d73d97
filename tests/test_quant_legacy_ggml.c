/* The 32-element formats against ggml's reference code, through the committed fixture
 * tests/fixtures/quant/legacy_ggml.dat (scripts/gen-legacy-fixtures.py writes it from
 * llama-cpp-python's libggml-base.so): wick's quantizer must write ggml's bytes
 * (quantize_row_<t>_ref; for Q8_1 the only reference there is) and wick's dequantizer must
 * give ggml's floats (dequantize_row_<t>) bit for bit.
 *
 * One divergence is expected and checked to be exactly that: for Q4_0 and Q5_0 a block of
 * zeros whose first element is -0.0 gets d = +0 from wick (as from the gguf package, whose
 * signed maximum is that first element) and d = -0 from ggml (whose maximum starts at +0).
 * Both decode to zeros.
 *
 * The fixture includes rows where a fused multiply-add in quantization would change codes
 * (see legacy.c), so a build that contracts them fails here without the Python tests. */
#include <stdint.h>

#include "check.h"
#include "core/half.h"
#include "wick.h"

static void *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc((size_t)len);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)len;
    return buf;
}

static uint32_t read_u32(const uint8_t **p)
{
    uint32_t v = (uint32_t)(*p)[0] | (uint32_t)(*p)[1] << 8 | (uint32_t)(*p)[2] << 16 |
                 (uint32_t)(*p)[3] << 24;
    *p += 4;
    return v;
}

/* True when block b of the row is the documented Q4_0/Q5_0 divergence. */
static bool zero_block_sign_case(wk_type t, const float *x, const uint8_t *got,
                                 const uint8_t *want, size_t bb)
{
    if (t != WK_TYPE_Q4_0 && t != WK_TYPE_Q5_0) return false;
    for (int j = 0; j < 32; j++)
        if (x[j] != 0.0f) return false;
    if (!signbit(x[0])) return false;
    return got[0] == 0x00 && got[1] == 0x00 && want[0] == 0x00 && want[1] == 0x80 &&
           memcmp(got + 2, want + 2, bb - 2) == 0;
}

int main(void)
{
    char path[4096];
    size_t size = 0;
    uint8_t *file = read_all(test_source_path("tests/fixtures/quant/legacy_ggml.dat", path,
                                              sizeof path), &size);
    CHECK_MSG(file != NULL, "cannot read %s", path);
    if (!file) TEST_MAIN_END();
    CHECK(size > 20 && memcmp(file, "WKLEGFX1", 8) == 0);
    const uint8_t *p = file + 8;
    uint32_t rows = read_u32(&p), n = read_u32(&p), ntypes = read_u32(&p);
    const float *x = (const float *)p; /* the file keeps floats 4-aligned */
    p += (size_t)rows * n * 4;

    uint8_t *q = malloc((size_t)n / 32 * 36);
    float *y = malloc((size_t)n * sizeof(float));
    for (uint32_t k = 0; k < ntypes; k++) {
        wk_type t = (wk_type)read_u32(&p);
        uint32_t row_bytes = read_u32(&p), has_floats = read_u32(&p);
        const uint8_t *want_q = p;
        p += (size_t)rows * row_bytes;
        const float *want_y = has_floats ? (const float *)p : NULL;
        if (has_floats) p += (size_t)rows * n * 4;
        CHECK_MSG((size_t)(p - file) <= size, "fixture truncated at type %d", (int)t);
        size_t bb = wk_type_block_bytes(t);
        int same_blocks = 0, sign_cases = 0, bad_blocks = 0, bad_floats = 0;
        for (uint32_t r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * n;
            const uint8_t *wq = want_q + (size_t)r * row_bytes;
            CHECK_OK(wk_quantize_row(t, xr, q, n));
            for (uint32_t b = 0; b < n / 32; b++) {
                if (memcmp(q + b * bb, wq + b * bb, bb) == 0) {
                    same_blocks++;
                } else if (zero_block_sign_case(t, xr + b * 32, q + b * bb, wq + b * bb, bb)) {
                    sign_cases++;
                } else {
                    bad_blocks++;
                    if (bad_blocks <= 3)
                        fprintf(stderr, "%s row %u block %u: wick bytes differ from ggml's "
                                        "(first bytes %02x%02x vs %02x%02x)\n",
                                wk_type_name(t), r, b, q[b * bb], q[b * bb + 1], wq[b * bb],
                                wq[b * bb + 1]);
                }
            }
            if (want_y) {
                CHECK_OK(wk_dequantize_row(t, wq, y, n));
                const float *wy = want_y + (size_t)r * n;
                for (uint32_t i = 0; i < n; i++)
                    if (memcmp(&y[i], &wy[i], 4) != 0 && bad_floats++ < 3)
                        fprintf(stderr, "%s row %u element %u: wick %.9g ggml %.9g\n",
                                wk_type_name(t), r, i, y[i], wy[i]);
            }
        }
        CHECK_MSG(bad_blocks == 0, "%s: %d blocks differ from ggml", wk_type_name(t), bad_blocks);
        CHECK_MSG(bad_floats == 0, "%s: %d dequantized floats differ from ggml", wk_type_name(t),
                  bad_floats);
        fprintf(stderr, "%s: %d blocks identical to ggml, %d zero blocks differing only in the "
                        "sign of d (expected), dequantize %s\n",
                wk_type_name(t), same_blocks, sign_cases,
                want_y ? (bad_floats ? "DIFFERS" : "identical") : "not in ggml");
    }
    CHECK_EQ_INT(ntypes, 6);
    free(q);
    free(y);
    free(file);
    TEST_MAIN_END();
}
