/* Repacking weight rows into the interleaved layouts described in repack.h. */
#include "cpu/repack.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/error.h"
#include "quant/blocks.h"
#include "quant/kquants_internal.h"
#include "quant/traits.h"

#if defined(WICK_HAVE_X86)
wk_gemm_fn wk_avx2_repacked_gemm(wk_type t);
wk_gemm_fn wk_avx512_repacked_gemm(wk_type t);
wk_gemm_fn wk_avx512_repacked_gemm_streamed(wk_type t);
#endif

wk_gemm_fn wk_cpu_repacked_gemm(wk_type t, wk_isa isa)
{
#if defined(WICK_HAVE_X86)
    wk_gemm_fn g = isa >= WK_ISA_AVX512 ? wk_avx512_repacked_gemm(t) : NULL;
    if (g) return g;
    if (isa >= WK_ISA_AVX2) return wk_avx2_repacked_gemm(t);
#else
    (void)t, (void)isa;
#endif
    return NULL;
}

wk_gemm_fn wk_cpu_repacked_gemm_streamed(wk_type t, wk_isa isa)
{
#if defined(WICK_HAVE_X86)
    if (isa >= WK_ISA_AVX512) return wk_avx512_repacked_gemm_streamed(t);
#else
    (void)t, (void)isa;
#endif
    return NULL;
}

/* Column c's 4 bytes of step s go to 32*s + 4*c: the same for every format. */
static void wk_interleave_qs(uint8_t *dst, const uint8_t *const src[8], int steps)
{
    for (int s = 0; s < steps; s++)
        for (int c = 0; c < 8; c++) memcpy(dst + 32 * s + 4 * c, src[c] + 4 * s, 4);
}

/* Scales and mins of Q4_K (64 values each, index j*8 + c) in 48 bytes:
 * A[t] = low 4 bits of v[t] | low 4 bits of v[t+32] << 4 (t < 32);
 * B[t] = high 2 bits of v[t], v[t+16], v[t+32], v[t+48] at bits 0, 2, 4, 6 (t < 16). */
static void wk_k4x8_encode(const uint8_t v[64], uint8_t *out)
{
    for (int t = 0; t < 32; t++) out[t] = (uint8_t)((v[t] & 15) | ((v[t + 32] & 15) << 4));
    for (int t = 0; t < 16; t++)
        out[32 + t] = (uint8_t)((v[t] >> 4) | ((v[t + 16] >> 4) << 2) | ((v[t + 32] >> 4) << 4) |
                                ((v[t + 48] >> 4) << 6));
}

/* x with the bits selected by mask and the bits delta above them exchanged. */
static inline uint32_t wk_delta_swap(uint32_t x, uint32_t mask, int delta)
{
    const uint32_t t = ((x >> delta) ^ x) & mask;
    return x ^ t ^ (t << delta);
}

/* Q5_0/Q5_1: the fifth bits as a 32-byte plane in the layout of a step's bytes: byte
 * 4*c + i holds at bit 2*s + h the fifth bit of column c's element 16*h + 4*s + i, so that
 * one shift and one mask put a step's fifth bits at bit 4 of its bytes. In column c's word
 * that moves bit 16h + 4s + i to bit 8i + 2s + h, a permutation of the bit index's 5 bits
 * made as 4 exchanges of two of them (h with i0, i1 with s0, s0 with s1, s1 with h). */
static void wk_q5x8_plane(uint8_t *out, const uint8_t *const qh[8])
{
    for (int c = 0; c < 8; c++) {
        uint32_t x;
        memcpy(&x, qh[c], 4);
        x = wk_delta_swap(x, 0x0000aaaau, 15);
        x = wk_delta_swap(x, 0x0c0c0c0cu, 2);
        x = wk_delta_swap(x, 0x00f000f0u, 4);
        x = wk_delta_swap(x, 0x0000ff00u, 8);
        memcpy(out + 4 * c, &x, 4);
    }
}

/* The 6-bit codes (+32, 0..63) of a Q6_K block, 4 elements a word: q[e / 4] holds elements
 * e .. e + 3. In the file element e = 128 n + 32 a + l has its low 4 bits in a nibble of
 * ql[64 n + 32 (a % 2) + l] (the high nibble for a >= 2) and its high 2 bits at bits 2a of
 * qh[32 n + l]: 4 adjacent bytes for 4 adjacent elements. */
static void wk_q6_K_codes(const wk_block_q6_K *x, uint32_t q[WK_QK_K / 4])
{
    for (int n = 0; n < 2; n++)
        for (int a = 0; a < 4; a++)
            for (int w = 0; w < 8; w++) {
                uint32_t lo, hi;
                memcpy(&lo, x->ql + 64 * n + 32 * (a % 2) + 4 * w, 4);
                memcpy(&hi, x->qh + 32 * n + 4 * w, 4);
                q[32 * n + 8 * a + w] = ((lo >> (4 * (a / 2))) & 0x0f0f0f0fu) | ((hi >> (2 * a)) & 0x03030303u) << 4;
            }
}

/* Q6_Kx8: the 6-bit codes (+32, 0..63) of a 16-element group (4 steps) in three 32-byte
 * planes: plane j holds the codes of step j in bits 0-5 and two bits of step 3's codes in
 * bits 6-7 (bits 4-5 in plane 0, 2-3 in plane 1, 0-1 in plane 2), so that a group
 * decodes in 11 vector operations (see repack.h). A step's 4 codes move as one word. */
static void wk_pack_q6_K(uint8_t *out, const uint8_t *const blk[8])
{
    uint8_t *codes = out + 144;
    for (int c = 0; c < 8; c++) {
        const wk_block_q6_K *x = (const wk_block_q6_K *)blk[c];
        uint32_t q[WK_QK_K / 4];
        wk_q6_K_codes(x, q);
        memcpy(out + 2 * c, &x->d, 2);
        for (int g = 0; g < 16; g++) {
            out[16 + 8 * g + c] = (uint8_t)x->scales[g];
            for (int j = 0; j < 3; j++) {
                const uint32_t word = q[4 * g + j] | ((q[4 * g + 3] >> (4 - 2 * j)) & 0x03030303u) << 6;
                memcpy(codes + 96 * g + 32 * j + 4 * c, &word, 4);
            }
        }
    }
}

/* Q2_Kx8: the 2-bit codes of 4 groups (a quad, 64 elements of 8 columns) in 128 bytes, so
 * that the kernels decode them with one 16-bit shift per 64 bytes and masks (repack.h):
 * element 16G + 4t + i of column c goes to byte 160 + 128 (G / 4) + 64 (t % 2) + 32 (G % 2)
 * + 4c + i, at bits 2 (2 (t / 2) + (G / 2) % 2).
 * In the file, element e is in qs[32 (e / 128) + e % 32] at bits 2 ((e % 128) / 32), and
 * i runs over 4 adjacent bytes on both sides, so the codes move 4 at a time in 32-bit
 * words: a shift and a mask of 0x03030303 pick one 2-bit field of each byte. Below, group
 * G = 4 quad + 2 gh + gl and step t = 2 th + tl. */
/* Column c's 2-bit codes qs (the Q2_K and Q3_K order) as the quads of repack.h's Q2_Kx8, at
 * out + 128 * quad + 64 * tl + 32 * gl + 4 * c. */
static void wk_pack_quads(uint8_t *out, const uint8_t *qs, int c)
{
    for (int quad = 0; quad < 4; quad++)
        for (int tl = 0; tl < 2; tl++)
            for (int gl = 0; gl < 2; gl++) {
                uint32_t word = 0;
                for (int th = 0; th < 2; th++) {
                    uint32_t src;
                    memcpy(&src, qs + 32 * (quad / 2) + 16 * gl + 4 * (2 * th + tl), 4);
                    for (int gh = 0; gh < 2; gh++) {
                        int from = 2 * (2 * (quad % 2) + gh), to = 2 * (2 * th + gh);
                        word |= ((src >> from) & 0x03030303u) << to;
                    }
                }
                memcpy(out + 128 * quad + 64 * tl + 32 * gl + 4 * c, &word, 4);
            }
}

static void wk_pack_q2_K(uint8_t *out, const uint8_t *const blk[8])
{
    for (int c = 0; c < 8; c++) {
        const wk_block_q2_K *x = (const wk_block_q2_K *)blk[c];
        memcpy(out + 2 * c, &x->d, 2);
        memcpy(out + 16 + 2 * c, &x->dmin, 2);
        for (int g = 0; g < 16; g++) out[32 + 8 * g + c] = x->scales[g];
        wk_pack_quads(out + 160, x->qs, c);
    }
}

/* Q3_Kx8 (repack.h). In the file element 128 n + 32 j + l has its third bit at bit 4 n + j of
 * hmask[l]; in the plane of quad q and group half gl, byte 4 c + i holds at bit t (group
 * 4 q + gl) or 4 + t (group 4 q + 2 + gl) the bit of step t's element i. */
static void wk_pack_q3_K(uint8_t *out, const uint8_t *const blk[8])
{
    uint8_t sc[128];
    for (int c = 0; c < 8; c++) {
        const wk_block_q3_K *x = (const wk_block_q3_K *)blk[c];
        memcpy(out + 2 * c, &x->d, 2);
        for (int g = 0; g < 16; g++) sc[g * 8 + c] = (uint8_t)wk_q3_scale(x->scales, g); /* stored: the value + 32 */
        wk_pack_quads(out + 112, x->qs, c);
        for (int quad = 0; quad < 4; quad++)
            for (int gl = 0; gl < 2; gl++) {
                const int bit = 4 * (quad / 2) + 2 * (quad % 2); /* of the quad's first group */
                uint32_t word = 0; /* 4 elements (i) a word, one bit of each byte at a time */
                for (int t = 0; t < 4; t++) {
                    uint32_t w;
                    memcpy(&w, x->hmask + 16 * gl + 4 * t, 4);
                    for (int gh = 0; gh < 2; gh++) word |= ((w >> (bit + gh)) & 0x01010101u) << (4 * gh + t);
                }
                memcpy(out + 624 + 32 * (2 * quad + gl) + 4 * c, &word, 4);
            }
    }
    wk_k4x8_encode(sc, out + 16);
    wk_k4x8_encode(sc + 64, out + 64);
}

/* Q4_Kx8 and Q5_Kx8 (repack.h): a super-block of 8 columns. Q4_K and Q5_K share the header
 * (d, dmin, 6-bit scales and mins) and the nibbles; Q5_K's fifth bits follow as planes. */
static void wk_pack_k4(uint8_t *out, const uint8_t *const blk[8], bool q5)
{
    uint8_t sc[64], mn[64];
    const uint8_t *qs[8];
    for (int c = 0; c < 8; c++) {
        /* d, dmin and the scales sit at the same offsets in both block types */
        const wk_block_q4_K *x = (const wk_block_q4_K *)blk[c];
        memcpy(out + 2 * c, &x->d, 2);
        memcpy(out + 16 + 2 * c, &x->dmin, 2);
        for (int j = 0; j < 8; j++) wk_k4_scale_min(x->scales, j, &sc[j * 8 + c], &mn[j * 8 + c]);
    }
    wk_k4x8_encode(sc, out + 32);
    wk_k4x8_encode(mn, out + 80);
    for (int p = 0; p < 4; p++) {
        for (int c = 0; c < 8; c++)
            qs[c] = q5 ? ((const wk_block_q5_K *)blk[c])->qs + 32 * p : ((const wk_block_q4_K *)blk[c])->qs + 32 * p;
        wk_interleave_qs(out + 128 + 256 * p, qs, 8);
    }
    if (!q5) return;
    /* In the file, element 64 p + 32 h + l has its fifth bit at bit 2 p + h of qh[l]. In the
     * plane of steps 4 u .. 4 u + 3 of chunk p, byte 4 c + i holds at bit 2 s + h that bit of
     * column c's element 64 p + 32 h + 4 (4 u + s) + i: one shift and one mask put a step's
     * fifth bits at bit 4 of its bytes, as in Q5_0x8. */
    for (int c = 0; c < 8; c++) {
        const uint8_t *qh = ((const wk_block_q5_K *)blk[c])->qh;
        for (int p = 0; p < 4; p++)
            for (int u = 0; u < 2; u++) {
                uint32_t word = 0; /* 4 elements (i) a word, one bit of each byte at a time */
                for (int s = 0; s < 4; s++) {
                    uint32_t w;
                    memcpy(&w, qh + 4 * (4 * u + s), 4);
                    for (int h = 0; h < 2; h++) word |= ((w >> (2 * p + h)) & 0x01010101u) << (2 * s + h);
                }
                memcpy(out + 1152 + 64 * p + 32 * u + 4 * c, &word, 4);
            }
    }
}

/* Repack one group of 8 rows (src: 8 rows of row_bytes, file layout) into dst, its blocks
 * (8 format blocks each) `stride` bytes apart. */
static void wk_cpu_repack_group(wk_type t, const void *src, void *dst, int64_t k, size_t stride)
{
    const wk_type_traits *tr = wk_traits(t);
    size_t row_bytes = (size_t)(k / tr->block_size) * tr->block_bytes;
    int64_t nb = k / tr->block_size;
    uint8_t *out = dst;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk[8];
        for (int c = 0; c < 8; c++)
            blk[c] = (const uint8_t *)src + (size_t)c * row_bytes + (size_t)b * tr->block_bytes;
        const uint8_t *qs[8], *qh[8];
        switch (t) {
        case WK_TYPE_Q8_0:
        case WK_TYPE_Q4_0:
            for (int c = 0; c < 8; c++) {
                memcpy(out + 2 * c, blk[c], 2); /* d */
                qs[c] = blk[c] + 2;
            }
            wk_interleave_qs(out + 16, qs, t == WK_TYPE_Q8_0 ? 8 : 4);
            break;
        case WK_TYPE_Q8_K:
            for (int c = 0; c < 8; c++) {
                const wk_block_q8_K *x = (const wk_block_q8_K *)blk[c];
                memcpy(out + 4 * c, &x->d, 4);
                memcpy(out + 2080 + 32 * c, x->bsums, 32);
                qs[c] = (const uint8_t *)x->qs;
            }
            wk_interleave_qs(out + 32, qs, 64);
            break;
        case WK_TYPE_Q8_1:
        case WK_TYPE_Q4_1:
            for (int c = 0; c < 8; c++) {
                memcpy(out + 2 * c, blk[c], 2);          /* d */
                memcpy(out + 16 + 2 * c, blk[c] + 2, 2); /* Q8_1's s, Q4_1's m */
                qs[c] = blk[c] + 4;
            }
            wk_interleave_qs(out + 32, qs, t == WK_TYPE_Q8_1 ? 8 : 4);
            break;
        case WK_TYPE_Q5_0:
            for (int c = 0; c < 8; c++) {
                memcpy(out + 2 * c, blk[c], 2);
                qh[c] = blk[c] + 2;
                qs[c] = blk[c] + 6;
            }
            wk_q5x8_plane(out + 16, qh);
            wk_interleave_qs(out + 48, qs, 4);
            break;
        case WK_TYPE_Q5_1:
            for (int c = 0; c < 8; c++) {
                memcpy(out + 2 * c, blk[c], 2);
                memcpy(out + 16 + 2 * c, blk[c] + 2, 2);
                qh[c] = blk[c] + 4;
                qs[c] = blk[c] + 8;
            }
            wk_q5x8_plane(out + 32, qh);
            wk_interleave_qs(out + 64, qs, 4);
            break;
        case WK_TYPE_Q4_K: wk_pack_k4(out, blk, false); break;
        case WK_TYPE_Q5_K: wk_pack_k4(out, blk, true); break;
        case WK_TYPE_Q6_K: wk_pack_q6_K(out, blk); break;
        case WK_TYPE_Q2_K: wk_pack_q2_K(out, blk); break;
        case WK_TYPE_Q3_K: wk_pack_q3_K(out, blk); break;
        default: break;
        }
        out += stride;
    }
}

/* The pages of [p, p + n) made private and writable in one call, before the repacking
 * reads and writes them: a weight borrowed from the file's private mapping otherwise
 * takes a read fault and then a copy-on-write fault (with a TLB flush on every core of
 * the process) per 4 KiB page. Best effort: where the kernel lacks it, the faults do it. */
static void wk_prefault_writable(void *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
    const uintptr_t page = 4096;
    uintptr_t a = (uintptr_t)p & ~(page - 1), e = ((uintptr_t)p + n + page - 1) & ~(page - 1);
    (void)madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#else
    (void)p, (void)n;
#endif
}

/* The unit of groups (wk_repack_unit_rows) at src into dst (distinct), in the layout of
 * wk_repacked_at. */
static void wk_cpu_repack_unit(wk_type t, const uint8_t *src, uint8_t *dst, int64_t k)
{
    const wk_type_traits *tr = wk_traits(t);
    const size_t gs = (size_t)(k / tr->block_size) * tr->block_bytes * WK_REPACK_COLS;
    const size_t bb = tr->block_bytes * WK_REPACK_COLS;
    const int64_t groups = wk_repack_unit_rows(t) / WK_REPACK_COLS;
    for (int64_t h = 0; h < groups; h++)
        wk_cpu_repack_group(t, src + h * gs, dst + wk_repacked_at(h, 0, gs, bb), k, wk_repacked_step(bb));
}

void wk_cpu_repack_rows(wk_type t, const void *src, void *dst, int64_t n, int64_t k)
{
    const wk_type_traits *tr = wk_traits(t);
    const int64_t unit = wk_repack_unit_rows(t);
    const size_t us = (size_t)(k / tr->block_size) * tr->block_bytes * (size_t)unit;
    for (int64_t u = 0; u < n / unit; u++)
        wk_cpu_repack_unit(t, (const uint8_t *)src + (size_t)u * us, (uint8_t *)dst + (size_t)u * us, k);
}

/* Units are rearranged in chunks of at least WK_REARRANGE_CHUNK bytes, claimed by the engine's
 * threads; each chunk's pages are made writable first, in one call. */
enum { WK_REARRANGE_CHUNK = 256 * 1024 };
typedef struct {
    wk_type type;
    wk_unit_fn fn;
    int64_t k, units, chunk_units;
    size_t unit_bytes;
    uint8_t *base, *tmp; /* tmp: one unit for each thread */
    atomic_llong next;
} wk_rearrange_job;

static void wk_rearrange_task(void *arg, int ith, int nth)
{
    wk_rearrange_job *j = arg;
    (void)nth;
    uint8_t *rows = j->tmp + (size_t)ith * j->unit_bytes;
    for (;;) {
        int64_t u0 = atomic_fetch_add(&j->next, 1) * j->chunk_units;
        if (u0 >= j->units) break;
        int64_t u1 = u0 + j->chunk_units < j->units ? u0 + j->chunk_units : j->units;
        wk_prefault_writable(j->base + (size_t)u0 * j->unit_bytes, (size_t)(u1 - u0) * j->unit_bytes);
        for (int64_t ui = u0; ui < u1; ui++) {
            memcpy(rows, j->base + (size_t)ui * j->unit_bytes, j->unit_bytes);
            j->fn(j->type, rows, j->base + (size_t)ui * j->unit_bytes, j->k);
        }
    }
}

bool wk_cpu_rearrange_off(void)
{
    const char *off = getenv("WICK_NO_REPACK");
    return off && off[0] && strcmp(off, "0") != 0;
}

wk_status wk_cpu_rearrange_rows(wk_qtensor *w, wk_pool *pool, int64_t unit_rows, wk_unit_fn fn)
{
    const int64_t n = w->dims[0], k = w->dims[1], units = n / unit_rows;
    const wk_type_traits *tr = wk_traits(w->type);
    size_t row_bytes = (size_t)(k / tr->block_size) * tr->block_bytes;
    wk_rearrange_job j = {.type = w->type, .fn = fn, .k = k, .units = units,
                          .unit_bytes = row_bytes * (size_t)unit_rows, .base = w->data};
    j.chunk_units = (int64_t)((WK_REARRANGE_CHUNK + j.unit_bytes - 1) / j.unit_bytes);
    atomic_init(&j.next, 0);
    /* Every unit is rewritten in place through one unit of temporary memory per thread,
     * whatever the size of the weight; taken before any is touched. */
    const int nth = pool && units > j.chunk_units ? wk_pool_threads(pool) : 1;
    const size_t tmp_bytes = (size_t)nth * j.unit_bytes;
    if (!(j.tmp = wk_host_alloc(tmp_bytes)))
        return wk_fail(WK_ERR_NOMEM, "qmatmul: cannot allocate %zu bytes to rearrange the weight", tmp_bytes);
    if (nth > 1) wk_pool_run_flexible(pool, wk_rearrange_task, &j);
    else wk_rearrange_task(&j, 0, 1);
    wk_host_free(j.tmp, tmp_bytes);
    return WK_OK;
}

wk_status wk_cpu_repack(wk_qtensor *w, wk_isa isa, wk_pool *pool, wk_gemm_fn *gemm, int64_t *n_packed)
{
    *gemm = NULL;
    *n_packed = 0;
    if (wk_cpu_rearrange_off()) return WK_OK;
    wk_gemm_fn g = wk_cpu_repacked_gemm(w->type, isa);
    const int64_t unit = wk_repack_unit_rows(w->type), units = w->dims[0] / unit;
    if (!g || units == 0 || w->device != WK_DEVICE_CPU) return WK_OK;
    wk_status st = wk_cpu_rearrange_rows(w, pool, unit, wk_cpu_repack_unit);
    if (st) return st;
    w->layout = WK_LAYOUT_REPACKED;
    *gemm = g;
    *n_packed = units * unit;
    return WK_OK;
}
