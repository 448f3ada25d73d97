/* Fuzz target: the tokenizers on arbitrary bytes and arbitrary token ids.
 *
 * Tokenizers under test, built once: the default model's (byte-level BPE, 49152
 * tokens; from WICK_FUZZ_MODEL, WICK_TEST_MODEL or models/, when present), and two
 * built here from hand-made metadata: a SentencePiece one with byte fallback and a
 * user-defined token, and a byte-level BPE one with a llama3 pre-tokenizer.
 *
 * The first input byte picks the tokenizer, the flags and the mode; the rest is the
 * text, or token ids (little-endian int32, any value). Checked: ids from encode are
 * in the vocabulary; a too-small output reports the size needed; decode refuses ids
 * out of range and reports lengths exactly; streaming detokenization always gives
 * valid UTF-8; on the default model, decode(encode(text)) == text for valid UTF-8. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/hostile_gguf.h"
#include "wick.h"

typedef struct fuzz_tok {
    wk_tokenizer *tok;
    bool round_trips;       /* byte-level BPE without space clean-up */
    bool has_byte[256];     /* the vocabulary has byte b's character (some lack a few) */
} fuzz_tok;

static fuzz_tok toks[3];
static int n_toks;

/* GPT-2's byte-level alphabet: byte b as the code point byte-level BPE uses. */
static uint32_t byte_cp(int b)
{
    if ((b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff))
        return (uint32_t)b;
    int n = 0;
    for (int x = 0; x < b; x++)
        if (!((x >= '!' && x <= '~') || (x >= 0xa1 && x <= 0xac) || (x >= 0xae && x <= 0xff)))
            n++;
    return 256u + (uint32_t)n;
}

static size_t put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
}

static void kv_str_arr(hg_buf *b, const char *key, const char *const *s, size_t n)
{
    hg_kv_arr(b, key, 8, n);
    for (size_t i = 0; i < n; i++) hg_str(b, s[i]);
}

static wk_tokenizer *build(const hg_buf *b)
{
    wk_gguf *g = NULL;
    wk_tokenizer *t = NULL;
    if (wk_gguf_open_memory(b->p, b->len, "fuzz-vocab", &g) != WK_OK ||
        wk_tokenizer_create(g, &t) != WK_OK) {
        fprintf(stderr, "fuzz_tokenizer: cannot build a tokenizer: %s\n", wk_last_error());
        abort();
    }
    wk_gguf_close(g);
    return t;
}

/* SentencePiece: <unk> <s> </s>, 256 byte tokens, a user-defined token, pieces. */
static wk_tokenizer *build_spm(void)
{
    static const char *const pieces[] = {"\xe2\x96\x81", "\xe2\x96\x81the", "\xe2\x96\x81" "a",
                                         "e", "t", "h", "he", "th", "\xe2\x96\x81t", "<|user|>",
                                         "\xe6\x97\xa5", "ab", "a", "b"};
    enum { n_pieces = sizeof pieces / sizeof *pieces, n = 3 + 256 + n_pieces };
    static char names[256][8];
    const char *tokens[n];
    int32_t types[n];
    float scores[n];
    tokens[0] = "<unk>", tokens[1] = "<s>", tokens[2] = "</s>";
    types[0] = 2, types[1] = 3, types[2] = 3;
    for (int i = 0; i < 256; i++) {
        snprintf(names[i], sizeof names[i], "<0x%02X>", i);
        tokens[3 + i] = names[i];
        types[3 + i] = 6;
    }
    for (int i = 0; i < n_pieces; i++) {
        tokens[259 + i] = pieces[i];
        types[259 + i] = strcmp(pieces[i], "<|user|>") == 0 ? 4 : 1;
    }
    for (int i = 0; i < n; i++) scores[i] = -(float)(i % 17);
    hg_buf b = {0};
    hg_header(&b, 3, 0, 6);
    hg_kv_str(&b, "tokenizer.ggml.model", "llama");
    kv_str_arr(&b, "tokenizer.ggml.tokens", tokens, n);
    hg_kv_arr(&b, "tokenizer.ggml.token_type", 5, n);
    for (int i = 0; i < n; i++) hg_u32(&b, (uint32_t)types[i]);
    hg_kv_arr(&b, "tokenizer.ggml.scores", 6, n);
    for (int i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &scores[i], 4);
        hg_u32(&b, u);
    }
    hg_kv_u32(&b, "tokenizer.ggml.bos_token_id", 1);
    hg_kv_u32(&b, "tokenizer.ggml.eos_token_id", 2);
    wk_tokenizer *t = build(&b);
    hg_free(&b);
    return t;
}

/* Byte-level BPE: specials, the 256 byte characters, merged pairs and their merges. */
static wk_tokenizer *build_bpe(const char *pre)
{
    static char bytes[256][4], merged[4][8], merges[4][12];
    const char *tokens[3 + 256 + 4];
    tokens[0] = "<|begin_of_text|>", tokens[1] = "<|eot_id|>", tokens[2] = "<|im_end|>";
    for (int i = 0; i < 256; i++) {
        bytes[i][put_utf8(bytes[i], byte_cp(i))] = '\0';
        tokens[3 + i] = bytes[i];
    }
    const char pairs[4][2] = {{'t', 'h'}, {'h', 'e'}, {' ', 't'}, {'a', 'b'}};
    const char *merge_list[4];
    for (int i = 0; i < 4; i++) {
        const char *l = bytes[(unsigned char)pairs[i][0]], *r = bytes[(unsigned char)pairs[i][1]];
        snprintf(merged[i], sizeof merged[i], "%s%s", l, r);
        snprintf(merges[i], sizeof merges[i], "%s %s", l, r);
        tokens[259 + i] = merged[i];
        merge_list[i] = merges[i];
    }
    int n = 263;
    hg_buf b = {0};
    hg_header(&b, 3, 0, 6);
    hg_kv_str(&b, "tokenizer.ggml.model", "gpt2");
    hg_kv_str(&b, "tokenizer.ggml.pre", pre);
    kv_str_arr(&b, "tokenizer.ggml.tokens", tokens, (size_t)n);
    hg_kv_arr(&b, "tokenizer.ggml.token_type", 5, (uint64_t)n);
    for (int i = 0; i < n; i++) hg_u32(&b, i < 3 ? 3 : 1);
    kv_str_arr(&b, "tokenizer.ggml.merges", merge_list, 4);
    hg_kv_u32(&b, "tokenizer.ggml.bos_token_id", 0);
    wk_tokenizer *t = build(&b);
    hg_free(&b);
    return t;
}

static void setup(void)
{
    const char *paths[] = {getenv("WICK_FUZZ_MODEL"), getenv("WICK_TEST_MODEL"),
                           "models/SmolLM2-135M-Instruct.Q4_1.gguf"};
    for (int i = 0; i < 3; i++) {
        wk_gguf *g = NULL;
        if (!paths[i] || wk_gguf_open(paths[i], &g) != WK_OK) continue;
        if (wk_tokenizer_create(g, &toks[n_toks].tok) == WK_OK) {
            /* Bytes whose character is not in the vocabulary are dropped by
             * encoding (as llama.cpp does), so only texts without them round-trip. */
            fuzz_tok *ft = &toks[n_toks++];
            ft->round_trips = true;
            for (int b = 0; b < 256; b++) {
                char ch[4];
                size_t k = put_utf8(ch, byte_cp(b));
                for (int32_t id = 0; id < wk_tokenizer_n_vocab(ft->tok) && !ft->has_byte[b]; id++) {
                    const char *text = wk_tokenizer_token_text(ft->tok, id);
                    ft->has_byte[b] = text && strlen(text) == k && memcmp(text, ch, k) == 0;
                }
            }
            wk_gguf_close(g);
            break;
        }
        wk_gguf_close(g);
    }
    if (n_toks == 0) fprintf(stderr, "fuzz_tokenizer: default model not found, synthetic vocabularies only\n");
    toks[n_toks++].tok = build_spm();
    toks[n_toks++].tok = build_bpe("llama3");
}

static bool valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!k || i + k > n) return false;
        uint32_t cp = k == 1 ? c : k == 2 ? c & 0x1f : k == 3 ? c & 0x0f : c & 0x07;
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return false;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += k;
    }
    return true;
}

/* Decode ids into buffers of need + 1, need and need - 1 bytes. */
static void check_decode(const wk_tokenizer *t, const int32_t *ids, size_t n, bool special)
{
    size_t need = 0;
    char probe[1];
    wk_status st = wk_tokenizer_decode(t, ids, n, special, probe, 0, &need);
    bool in_range = true;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= wk_tokenizer_n_vocab(t)) in_range = false;
    if (!in_range) {
        if (st == WK_OK || !*wk_last_error()) abort(); /* ids out of range are refused */
        return;
    }
    if (st != WK_OK && need == 0 && n > 0 && st != WK_ERR_INVALID) abort();
    char *out = malloc(need + 1);
    if (!out) return;
    size_t len = 0;
    if (wk_tokenizer_decode(t, ids, n, special, out, need + 1, &len) != WK_OK) abort();
    if (len != need || out[len] != '\0') abort();
    /* exactly need bytes fit (without the NUL); one fewer is refused with the size */
    size_t len2 = 0;
    if (wk_tokenizer_decode(t, ids, n, special, out, need, &len2) != WK_OK || len2 != need) abort();
    if (need > 0) {
        if (wk_tokenizer_decode(t, ids, n, special, out, need - 1, &len2) != WK_ERR_INVALID)
            abort();
        if (len2 != need) abort();
    }
    free(out);

    /* streaming: whole characters only, always valid UTF-8 */
    wk_detok_stream s;
    wk_detok_init(&s, t, special);
    size_t cap = wk_detok_out_cap(t);
    char *piece = malloc(cap + 3);
    if (!piece) return;
    for (size_t i = 0; i < n; i++) {
        size_t plen = 0;
        if (wk_detok_push(&s, ids[i], piece, cap, &plen) != WK_OK) abort();
        if (plen > cap || !valid_utf8((const unsigned char *)piece, plen)) abort();
    }
    size_t tail = wk_detok_flush(&s, piece);
    if (tail != 0 && tail != 3) abort();
    free(piece);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!n_toks) setup();
    if (size < 1) return 0;
    uint8_t flags = data[0];
    const fuzz_tok *ft = &toks[(flags & 3) % n_toks];
    const wk_tokenizer *t = ft->tok;
    bool add_special = flags & 4, parse_special = flags & 8, render = flags & 16;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    if ((flags >> 5) & 1) {
        /* arbitrary ids: the rest as little-endian int32 */
        size_t n = len / 4;
        int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
        if (!ids) return 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)data[1 + 4 * i] | (uint32_t)data[2 + 4 * i] << 8 |
                         (uint32_t)data[3 + 4 * i] << 16 | (uint32_t)data[4 + 4 * i] << 24;
            /* mostly ids near the vocabulary, sometimes anything */
            ids[i] = (flags & 64) ? (int32_t)u
                                  : (int32_t)(u % (uint32_t)(wk_tokenizer_n_vocab(t) + 8)) - 4;
        }
        check_decode(t, ids, n, render);
        for (size_t i = 0; i < n && i < 64; i++) {
            const char *bytes;
            size_t plen;
            wk_status st = wk_tokenizer_piece(t, ids[i], render, &bytes, &plen);
            if (st == WK_OK && plen > wk_tokenizer_max_piece(t)) abort();
            (void)wk_tokenizer_is_eog(t, ids[i]);
            (void)wk_tokenizer_token_text(t, ids[i]);
        }
        free(ids);
        return 0;
    }

    int32_t *ids = NULL;
    size_t n = 0;
    wk_status st = wk_tokenizer_encode_alloc(t, text, len, add_special, parse_special, &ids, &n);
    if (st != WK_OK) {
        if (!*wk_last_error()) abort();
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= wk_tokenizer_n_vocab(t)) abort();
    /* the fixed-capacity call agrees, and reports the count needed when short */
    if (n > 0) {
        size_t n2 = 0;
        int32_t *few = malloc(n * sizeof *few);
        if (few) {
            if (wk_tokenizer_encode(t, text, len, add_special, parse_special, few, n - 1, &n2) !=
                    WK_ERR_INVALID ||
                n2 != n)
                abort();
            if (memcmp(few, ids, (n - 1) * sizeof *few) != 0) abort();
            free(few);
        }
    }
    check_decode(t, ids, n, render);
    /* byte-level BPE is lossless: decoding gives the text back */
    bool all_bytes = true;
    for (size_t i = 0; i < len && ft->round_trips; i++)
        all_bytes = all_bytes && ft->has_byte[(unsigned char)text[i]];
    if (ft->round_trips && all_bytes && !add_special && !parse_special &&
        valid_utf8((const unsigned char *)text, len)) {
        size_t need = 0;
        char probe[1];
        wk_tokenizer_decode(t, ids, n, false, probe, 0, &need);
        char *back = malloc(need + 1);
        size_t blen = 0;
        if (back && wk_tokenizer_decode(t, ids, n, false, back, need + 1, &blen) == WK_OK &&
            (blen != len || memcmp(back, text, len) != 0)) {
            fprintf(stderr, "round trip: %zu bytes in, %zu bytes out\n", len, blen);
            abort();
        }
        free(back);
    }
    free(ids);
    return 0;
}
