/* Tokenizer: ids equal llama.cpp's (fixtures made by scripts/gen-token-fixtures.py)
 * for the default model, its vocabulary under other pre-tokenizers and a small
 * SentencePiece vocabulary; decoding equals llama_detokenize; round trips;
 * streaming emits valid UTF-8 only; pre-tokenizer splits and merges on tiny
 * hand-built vocabularies; rejections. */
#include <time.h>

#include "check.h"
#include "model/bpe_pretok.h"
#include "model/tokenizer_internal.h"
#include "model/unicode.h"
#include "wick.h"

/* ---- helpers ---- */

static size_t unhex(const char *h, unsigned char *out) {
    if (strcmp(h, "-") == 0) return 0;
    size_t n = strlen(h) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (unsigned char)v;
    }
    return n;
}

static size_t parse_ids(char *s, int32_t *out) {
    if (strcmp(s, "-") == 0) return 0;
    size_t n = 0;
    for (char *p = strtok(s, ","); p; p = strtok(NULL, ","))
        out[n++] = (int32_t)atoi(p);
    return n;
}

static bool valid_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t k = c < 0x80                   ? 1
                   : (c >= 0xC2 && c <= 0xDF) ? 2
                   : (c >= 0xE0 && c <= 0xEF) ? 3
                   : (c >= 0xF0 && c <= 0xF4) ? 4
                                              : 0;
        if (!k || i + k > n) return false;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xC0) != 0x80) return false;
        if (c == 0xE0 && s[i + 1] < 0xA0) return false;
        if (c == 0xED && s[i + 1] > 0x9F) return false;
        if (c == 0xF0 && s[i + 1] < 0x90) return false;
        if (c == 0xF4 && s[i + 1] > 0x8F) return false;
        i += k;
    }
    return true;
}

static void print_text(const unsigned char *s, size_t n) {
    fputc('"', stderr);
    for (size_t i = 0; i < n && i < 80; i++) {
        if (s[i] >= 0x20 && s[i] < 0x7F && s[i] != '"')
            fputc(s[i], stderr);
        else
            fprintf(stderr, "\\x%02x", s[i]);
    }
    fputc('"', stderr);
}

/* Whether text holds an ASCII byte the vocabulary has no token for: such bytes
 * vanish, in llama.cpp too (SmolLM2 lacks 0x04, 0x06, 0x13, 0x14, 0x16, 0x1d). */
static bool has_dropped_byte(const wk_tokenizer *tok, const unsigned char *text, size_t n) {
    for (size_t i = 0; i < n; i++) {
        size_t k;
        int32_t one[8];
        if (text[i] >= 0x80) continue;
        if (wk_tokenizer_encode(tok, (const char *)text + i, 1, false, false, one, 8, &k) ==
                WK_OK &&
            k == 0)
            return true;
    }
    return false;
}

/* Stream ids through the detokenizer: output must be valid UTF-8 and, when the
 * whole decoding is valid UTF-8, equal to it. */
static void check_stream(const wk_tokenizer *tok, const int32_t *ids, size_t n,
                         const unsigned char *whole, size_t whole_len) {
    size_t cap = wk_detok_out_cap(tok);
    char *chunk = malloc(cap);
    unsigned char *all = malloc(3 * whole_len + 64);
    size_t total = 0;
    wk_detok_stream s;
    wk_detok_init(&s, tok, true);
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        CHECK_OK(wk_detok_push(&s, ids[i], chunk, cap, &len));
        if (!valid_utf8((unsigned char *)chunk, len)) ok = false;
        memcpy(all + total, chunk, len);
        total += len;
    }
    total += wk_detok_flush(&s, (char *)all + total);
    CHECK_MSG(ok, "streamed chunks are not all valid UTF-8");
    CHECK(valid_utf8(all, total));
    /* The stream keeps the space SentencePiece put before the text; decode drops it. */
    const unsigned char *a = all;
    if (tok->add_space_prefix && total == whole_len + 1 && all[0] == ' ') a++, total--;
    /* Space tidying applies to whole texts only. */
    if (valid_utf8(whole, whole_len) && !tok->clean_spaces)
        CHECK_MSG(total == whole_len && memcmp(a, whole, total) == 0,
                  "stream gives %zu bytes, decode %zu", total, whole_len);
    free(chunk);
    free(all);
}

typedef struct fixture_stats {
    int cases, matched, detok_matched, round_trips;
} fixture_stats;

/* Every line of a fixture: ids, detokenization, round trip, streaming. */
static void check_fixture(const wk_tokenizer *tok, const char *rel, bool round_trip,
                          fixture_stats *stats) {
    char path[4096];
    FILE *f = fopen(test_source_path(rel, path, sizeof path), "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) return;
    size_t line_cap = 1 << 20;
    char *line = malloc(line_cap);
    unsigned char *text = malloc(line_cap), *want_det = malloc(line_cap);
    int32_t *want = malloc(line_cap * sizeof *want), *got = malloc(line_cap * sizeof *got);
    char *dec = malloc(line_cap);
    int lineno = 0;
    while (fgets(line, (int)line_cap, f)) {
        lineno++;
        char f_add[8], f_parse[8];
        char *hex = malloc(strlen(line) + 1), *ids = malloc(strlen(line) + 1),
             *det = malloc(strlen(line) + 1);
        if (sscanf(line, "%7s %7s %s %s %s", f_add, f_parse, hex, ids, det) != 5) {
            free(hex), free(ids), free(det);
            continue;
        }
        bool add = atoi(f_add), parse = atoi(f_parse);
        size_t tl = unhex(hex, text);
        size_t nw = parse_ids(ids, want);
        size_t dl = unhex(det, want_det);
        size_t ng;
        stats->cases++;
        wk_status st = wk_tokenizer_encode(tok, (char *)text, tl, add, parse, got, line_cap, &ng);
        CHECK_OK(st);
        size_t first = 0;
        while (first < nw && first < ng && want[first] == got[first])
            first++;
        if (st == WK_OK && first == nw && ng == nw) {
            stats->matched++;
        } else {
            check_failures++;
            fprintf(stderr, "%s:%d: ", rel, lineno);
            print_text(text, tl);
            fprintf(stderr,
                    " add=%d parse=%d: %zu ids vs llama.cpp's %zu, first difference at %zu:"
                    " wick %d, llama.cpp %d\n",
                    add, parse, ng, nw, first, first < ng ? got[first] : -1,
                    first < nw ? want[first] : -1);
        }
        check_count++;
        /* Decoding llama.cpp's ids gives llama_detokenize's bytes. */
        size_t got_dl;
        CHECK_OK(wk_tokenizer_decode(tok, want, nw, true, dec, line_cap, &got_dl));
        if (got_dl == dl && memcmp(dec, want_det, dl) == 0) {
            stats->detok_matched++;
        } else {
            check_failures++;
            fprintf(stderr, "%s:%d: decode gives ", rel, lineno);
            print_text((unsigned char *)dec, got_dl);
            fprintf(stderr, ", llama.cpp ");
            print_text(want_det, dl);
            fputc('\n', stderr);
        }
        check_count++;
        /* decode(encode(s)) == s for valid text without special tokens (SentencePiece
         * puts a space after each, and reads a literal U+2581 as a space). */
        bool plain = !add && valid_utf8(text, tl) && !has_dropped_byte(tok, text, tl);
        for (size_t i = 0; i < ng && plain; i++)
            if (tok->kind == WK_TOK_SPM && wk_tokenizer_is_special(tok, got[i])) plain = false;
        if (tok->kind == WK_TOK_SPM && memmem(text, tl, "\xe2\x96\x81", 3)) plain = false;
        if (round_trip && plain) {
            CHECK_OK(wk_tokenizer_decode(tok, got, ng, true, dec, line_cap, &got_dl));
            bool same = got_dl == tl && memcmp(dec, text, tl) == 0;
            CHECK_MSG(same, "%s:%d: round trip changed the text", rel, lineno);
            stats->round_trips += same;
        }
        /* Streaming the same ids: valid UTF-8 only, the whole text when it is valid. */
        CHECK_OK(wk_tokenizer_decode(tok, want, nw, true, dec, line_cap, &got_dl));
        check_stream(tok, want, nw, (unsigned char *)dec, got_dl);
        free(hex), free(ids), free(det);
    }
    fclose(f);
    free(line), free(text), free(want_det), free(want), free(got), free(dec);
}

/* bos, eos, eot, add_bos, add_eos, the end-of-generation and control token
 * sets equal llama.cpp's (a "KEY VALUE" file). */
static void check_vocab_facts(const wk_tokenizer *tok, const char *rel) {
    char path[4096];
    FILE *f = fopen(test_source_path(rel, path, sizeof path), "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) return;
    static char line[1 << 20];
    int32_t n = wk_tokenizer_n_vocab(tok);
    while (fgets(line, sizeof line, f)) {
        char key[32];
        static char val[1 << 20];
        if (sscanf(line, "%31s %s", key, val) != 2) continue;
        long v = atol(val);
        if (strcmp(key, "n_vocab") == 0)
            CHECK_EQ_INT(n, v);
        else if (strcmp(key, "bos") == 0)
            CHECK_EQ_INT(wk_tokenizer_bos(tok), v);
        else if (strcmp(key, "eos") == 0)
            CHECK_EQ_INT(wk_tokenizer_eos(tok), v);
        else if (strcmp(key, "eot") == 0)
            CHECK_EQ_INT(wk_tokenizer_eot(tok), v);
        else if (strcmp(key, "add_bos") == 0)
            CHECK_EQ_INT(wk_tokenizer_adds_bos(tok), v);
        else if (strcmp(key, "add_eos") == 0)
            CHECK_EQ_INT(wk_tokenizer_adds_eos(tok), v);
        else if (strcmp(key, "eog") == 0 || strcmp(key, "control") == 0) {
            bool eog = key[0] == 'e';
            bool *want = calloc((size_t)n, 1);
            for (char *p = strtok(val, ","); p; p = strtok(NULL, ","))
                want[atoi(p)] = true;
            int wrong = 0;
            for (int32_t i = 0; i < n; i++) {
                bool got = eog ? wk_tokenizer_is_eog(tok, i) : wk_tokenizer_is_control(tok, i);
                if (got != want[i] && wrong++ < 5)
                    fprintf(stderr, "%s: token %d (%s): %s %d, llama.cpp %d\n", rel, (int)i,
                            wk_tokenizer_token_text(tok, i), key, got, want[i]);
            }
            CHECK_MSG(wrong == 0, "%s: %d tokens differ in %s", rel, wrong, key);
            free(want);
        }
    }
    fclose(f);
}

/* ---- pre-tokenizer splits ---- */

static void check_split(wk_pretok kind, const char *text, const char *const *want) {
    uint32_t cps[256];
    size_t n = 0;
    for (size_t i = 0, len = strlen(text); i < len;) {
        size_t adv;
        cps[n++] = wk_utf8_decode((const unsigned char *)text + i, len - i, &adv);
        i += adv;
    }
    wk_lenvec words = {0}, scratch = {0};
    CHECK_OK(wk_pretok_split(kind, cps, n, &words, &scratch));
    size_t at = 0, k = 0;
    bool ok = true;
    char got[1024] = "";
    for (size_t w = 0; w < words.n; w++) {
        char word[256];
        size_t wl = 0;
        for (size_t i = at; i < at + words.v[w]; i++)
            wl += wk_utf8_encode(cps[i], word + wl);
        word[wl] = 0;
        at += words.v[w];
        if (!want[k] || strcmp(want[k], word) != 0) ok = false;
        if (want[k]) k++;
        snprintf(got + strlen(got), sizeof got - strlen(got), "[%s]", word);
    }
    if (want[k]) ok = false;
    CHECK_MSG(ok, "split of \"%s\" (kind %d) gives %s", text, (int)kind, got);
    wk_lenvec_free(&words);
    wk_lenvec_free(&scratch);
}

/* GPT-2's byte mapping: a bijection onto printable characters, in byte order. */
static void test_byte_map(void) {
    uint32_t next = 256;
    int bad = 0;
    for (int b = 0; b < 256; b++) {
        uint32_t cp = wk_byte_to_cp((unsigned char)b);
        bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        if (printable ? cp != (uint32_t)b : cp != next++) bad++;
        if (wk_cp_to_byte(cp) != b) bad++;
    }
    CHECK_EQ_INT(next, 256 + 68);
    CHECK_EQ_INT(bad, 0);
    CHECK(wk_cp_to_byte(0xAD) == -1 && wk_cp_to_byte(256 + 68) == -1 && wk_cp_to_byte(0x20) == -1);
    CHECK(wk_byte_to_cp(' ') == 0x120 && wk_byte_to_cp('\n') == 0x10A); /* Ġ and Ċ */
}

static void test_pretok(void) {
    check_split(WK_PRETOK_GPT2, "I'm  here 123 ok!?",
                (const char *[]){"I", "'m", " ", " here", " 123", " ok", "!?", NULL});
    check_split(WK_PRETOK_GPT2, "a   \n", (const char *[]){"a", "   \n", NULL});
    check_split(WK_PRETOK_GPT2, "x  y", (const char *[]){"x", " ", " y", NULL});
    check_split(WK_PRETOK_SMOLLM, "ab 2024x",
                (const char *[]){"ab", " ", "2", "0", "2", "4", "x", NULL});
    check_split(WK_PRETOK_LLAMA3, "12345 DON'T\n\n x",
                (const char *[]){"123", "45", " DON", "'T", "\n\n", " x", NULL});
    check_split(WK_PRETOK_QWEN2, "ab12", (const char *[]){"ab", "1", "2", NULL});
    check_split(WK_PRETOK_DEFAULT, "a+b 1234567",
                (const char *[]){"a", "+", "b", " ", "123", "456", "7", NULL});
    check_split(WK_PRETOK_GPT2, "", (const char *[]){NULL});
    /* Letters and numbers beyond ASCII. */
    check_split(WK_PRETOK_GPT2, "日本 ½x", (const char *[]){"日本", " ½", "x", NULL});
    wk_pretok k;
    bool clean;
    CHECK_FAILS(wk_pretok_from_name("nonesuch", &k, &clean), WK_ERR_UNSUPPORTED,
                "tokenizer.ggml.pre 'nonesuch'");
}

/* ---- tiny hand-built vocabularies ---- */

static void test_tiny_bpe(void) {
    /* The 256 byte-level characters, then merged tokens. */
    const char *tokens[300];
    char chars[256][4];
    size_t n = 0;
    for (int b = 0; b < 256; b++) {
        size_t l = wk_utf8_encode(wk_byte_to_cp((unsigned char)b), chars[b]);
        chars[b][l] = 0;
        tokens[n++] = chars[b];
    }
    const char *extra[] = {"he",         "ll",      "hell", "hello",      "\xc4\xa0w",
                           "\xc4\xa0wo", "<|eot|>", "or",   "\xc4\xa0wor"};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        tokens[n++] = extra[i];
    /* Rank order: "l l" before "h e" shows rank, not position, decides. */
    const char *merges[] = {"l l",        "h e", "he ll",       "hell o",
                            "\xc4\xa0 w", "o r", "\xc4\xa0w o", "\xc4\xa0wo r"};
    int32_t types[300];
    for (size_t i = 0; i < n; i++)
        types[i] = 1;
    types[262] = 3; /* <|eot|> is a control token */
    wk_tokenizer_spec spec;
    wk_tokenizer_spec_init(&spec);
    spec.model = "gpt2";
    spec.pre = "gpt-2";
    spec.n_tokens = n;
    spec.tokens = tokens;
    spec.types = types;
    spec.n_merges = sizeof merges / sizeof merges[0];
    spec.merges = merges;
    spec.eos = 262;
    wk_tokenizer *tok;
    CHECK_OK(wk_tokenizer_build(&spec, &tok));
    if (!tok) return;
    int32_t ids[64];
    size_t k;
    CHECK_OK(wk_tokenizer_encode(tok, "hello world<|eot|>", 18, false, true, ids, 64, &k));
    /* hello | Ġw or l d | eot: "Ġ w" (rank 4) merges first, then "o r" (5) takes the o
     * before "Ġw o" (6) can, so "Ġwo" and "Ġwor" never form. */
    int32_t want[] = {259, 260, 263, 'l', 'd', 262};
    CHECK_EQ_INT(k, 6);
    for (size_t i = 0; i < 6 && i < k; i++)
        CHECK_EQ_INT(ids[i], want[i]);
    /* Without parse_special the control token's text is plain text. */
    CHECK_OK(wk_tokenizer_encode(tok, "<|eot|>", 7, false, false, ids, 64, &k));
    CHECK(k == 7 && ids[0] == '<' && ids[1] == '|');
    CHECK(wk_tokenizer_is_eog(tok, 262) && wk_tokenizer_is_control(tok, 262));
    CHECK(!wk_tokenizer_is_eog(tok, 259));
    /* Capacity too small: the count needed comes back. */
    CHECK_FAILS(wk_tokenizer_encode(tok, "hello world", 11, false, true, ids, 1, &k),
                WK_ERR_INVALID, "5 tokens do not fit in 1");
    CHECK_EQ_INT(k, 5);
    /* Decoding: byte-level characters back to bytes; control text only on request. */
    char out[64];
    size_t len;
    int32_t seq[] = {259, 264, 'l', 'd', 262};
    CHECK_OK(wk_tokenizer_decode(tok, seq, 5, true, out, sizeof out, &len));
    CHECK(len == 18 && memcmp(out, "hello world<|eot|>", 18) == 0);
    CHECK_OK(wk_tokenizer_decode(tok, seq, 5, false, out, sizeof out, &len));
    CHECK(len == 11 && memcmp(out, "hello world", 11) == 0);
    CHECK_FAILS(wk_tokenizer_decode(tok, seq, 5, true, out, 4, &len), WK_ERR_INVALID,
                "18 bytes of text do not fit in 4");
    int32_t bad[] = {259, 300};
    CHECK_FAILS(wk_tokenizer_decode(tok, bad, 2, true, out, sizeof out, &len), WK_ERR_INVALID,
                "token id 300 is outside the vocabulary [0, 265)");
    const char *p;
    CHECK_FAILS(wk_tokenizer_piece(tok, -1, true, &p, &len), WK_ERR_INVALID, "token id -1");
    /* Every byte string round-trips, invalid UTF-8 included (as U+FFFD). */
    CHECK_OK(wk_tokenizer_encode(tok, "\xff", 1, false, true, ids, 64, &k));
    CHECK_OK(wk_tokenizer_decode(tok, ids, k, true, out, sizeof out, &len));
    CHECK(len == 3 && memcmp(out, "\xef\xbf\xbd", 3) == 0);
    /* Empty text, and NULL with length 0. */
    CHECK_OK(wk_tokenizer_encode(tok, "", 0, true, true, ids, 64, &k));
    CHECK_EQ_INT(k, 0);
    CHECK_OK(wk_tokenizer_encode(tok, NULL, 0, false, true, ids, 0, &k));
    CHECK_FAILS(wk_tokenizer_encode(tok, NULL, 3, false, true, ids, 64, &k), WK_ERR_INVALID,
                "NULL text of 3 bytes");
    CHECK_FAILS(wk_tokenizer_encode(tok, "x", WK_TOKENIZER_MAX_TEXT + 1, false, true, ids, 64, &k),
                WK_ERR_INVALID, "text of 1073741825 bytes exceeds the limit of 1073741824");

    /* Streaming: "é" split across two byte tokens comes out whole, once. */
    wk_detok_stream s;
    wk_detok_init(&s, tok, true);
    char chunk[256];
    CHECK(wk_detok_out_cap(tok) <= sizeof chunk);
    CHECK_OK(wk_detok_push(&s, 0xC3, chunk, sizeof chunk, &len));
    CHECK_EQ_INT(len, 0);
    CHECK_OK(wk_detok_push(&s, 0xA9, chunk, sizeof chunk, &len));
    CHECK(len == 2 && memcmp(chunk, "\xc3\xa9", 2) == 0);
    /* A lone lead byte followed by ASCII becomes U+FFFD, then the ASCII. */
    CHECK_OK(wk_detok_push(&s, 0xE6, chunk, sizeof chunk, &len));
    CHECK_EQ_INT(len, 0);
    CHECK_OK(wk_detok_push(&s, 'a', chunk, sizeof chunk, &len));
    CHECK(len == 4 && memcmp(chunk,
                             "\xef\xbf\xbd"
                             "a",
                             4) == 0);
    CHECK_OK(wk_detok_push(&s, 0xF0, chunk, sizeof chunk, &len));
    CHECK_EQ_INT(wk_detok_flush(&s, chunk), 3);
    CHECK_FAILS(wk_detok_push(&s, 259, chunk, 2, &len), WK_ERR_INVALID, "too small");
    wk_tokenizer_free(tok);

    /* Rejections. */
    spec.model = "bert";
    CHECK_FAILS(wk_tokenizer_build(&spec, &tok), WK_ERR_UNSUPPORTED,
                "tokenizer.ggml.model 'bert' is not supported");
    spec.model = "gpt2";
    spec.pre = "mystery";
    CHECK_FAILS(wk_tokenizer_build(&spec, &tok), WK_ERR_UNSUPPORTED,
                "tokenizer.ggml.pre 'mystery'");
    spec.pre = NULL;
    spec.n_tokens = 0;
    CHECK_FAILS(wk_tokenizer_build(&spec, &tok), WK_ERR_FORMAT, "0 tokens");
}

static void test_tiny_spm(void) {
    /* Scores decide: "bc" (-2) merges before "▁a" (-3), so "▁ab" (-1) never forms. */
    const char *tokens[] = {"<unk>",
                            "<s>",
                            "</s>",
                            "\xe2\x96\x81",
                            "a",
                            "b",
                            "c",
                            "bc",
                            "\xe2\x96\x81"
                            "a",
                            "\xe2\x96\x81"
                            "ab",
                            "<0x21>"};
    float scores[] = {0, 0, 0, -10, -10, -10, -10, -2, -3, -1, 0};
    int32_t types[] = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 6};
    wk_tokenizer_spec spec;
    wk_tokenizer_spec_init(&spec);
    spec.model = "llama";
    spec.n_tokens = sizeof tokens / sizeof tokens[0];
    spec.tokens = tokens;
    spec.scores = scores;
    spec.types = types;
    wk_tokenizer *tok;
    CHECK_OK(wk_tokenizer_build(&spec, &tok));
    if (!tok) return;
    CHECK(wk_tokenizer_adds_bos(tok) && wk_tokenizer_bos(tok) == 1 && wk_tokenizer_eos(tok) == 2);
    int32_t ids[32];
    size_t k;
    CHECK_OK(wk_tokenizer_encode(tok, "abc!?", 5, true, false, ids, 32, &k));
    /* BOS, ▁a, bc, <0x21> for '!', '?' has no byte token: unknown. */
    int32_t want[] = {1, 8, 7, 10, 0};
    CHECK_EQ_INT(k, 5);
    for (size_t i = 0; i < 5 && i < k; i++)
        CHECK_EQ_INT(ids[i], want[i]);
    char out[64];
    size_t len;
    CHECK_OK(wk_tokenizer_decode(tok, ids + 1, 3, true, out, sizeof out, &len));
    CHECK(len == 4 && memcmp(out, "abc!", 4) == 0); /* the prefix space is dropped */
    wk_tokenizer_free(tok);
}

/* ---- the default model and the committed fixtures ---- */

static void test_huge(const wk_tokenizer *tok) {
    /* Long runs of one class: no quadratic blow-up (a few MB in well under a second). */
    size_t n = 1 << 20;
    char *text = malloc(n);
    int32_t *ids = NULL;
    size_t k;
    const char fills[] = {'a', ' ', '7', '\n'};
    for (size_t f = 0; f < sizeof fills; f++) {
        memset(text, fills[f], n);
        clock_t t0 = clock();
        CHECK_OK(wk_tokenizer_encode_alloc(tok, text, n, false, true, &ids, &k));
        double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
        CHECK_MSG(secs < 20, "1 MiB of '%c' took %.1f s", fills[f], secs);
        fprintf(stderr, "1 MiB of 0x%02x: %zu tokens in %.2f s\n", fills[f], k, secs);
        char *back = malloc(n + 1);
        size_t bl;
        CHECK_OK(wk_tokenizer_decode(tok, ids, k, true, back, n + 1, &bl));
        CHECK(bl == n && memcmp(back, text, n) == 0);
        free(back);
        free(ids);
    }
    free(text);
}

/* Random bytes (mostly invalid UTF-8, sequences past U+10FFFF, stray special
 * token pieces): encoding never fails, decoding gives back valid UTF-8 input
 * exactly (BPE without space tidying), streaming emits only valid UTF-8. */
static void test_random_bytes(const wk_tokenizer *tok, unsigned seed, int rounds) {
    static const char *const bits[] = {"<|im_start|>",
                                       "<|im_",
                                       "\xf5\x80\x80\x80",
                                       "\xed\xa0\x80",
                                       "\xc0\x80",
                                       "\xe2\x96\x81",
                                       " ",
                                       "\n",
                                       "a",
                                       "1",
                                       "\xc3\xa9"};
    unsigned char text[512];
    char out[4096];
    int32_t ids[1024];
    srand(seed);
    int failures_before = check_failures, round_trips = 0;
    for (int r = 0; r < rounds && check_failures == failures_before; r++) {
        size_t n = 0, want = (size_t)(rand() % 200);
        while (n < want) {
            bool ascii = r % 2 == 0; /* even rounds: valid text, to check round trips */
            if (rand() % 3 == 0) {
                const char *b = bits[rand() % (int)(sizeof bits / sizeof bits[0])];
                if (ascii && (b[0] & 0x80) && strcmp(b, "\xc3\xa9") != 0 &&
                    strcmp(b, "\xe2\x96\x81") != 0)
                    continue;
                size_t l = strlen(b);
                if (n + l > sizeof text) break;
                memcpy(text + n, b, l);
                n += l;
            } else {
                text[n++] = (unsigned char)(rand() % (ascii ? 128 : 256));
            }
        }
        size_t k, len;
        bool add = rand() % 2, parse = rand() % 2;
        CHECK_OK(wk_tokenizer_encode(tok, (char *)text, n, add, parse, ids, 1024, &k));
        CHECK_OK(wk_tokenizer_decode(tok, ids, k, true, out, sizeof out, &len));
        /* Round trips hold for valid text with every byte encodable, unless spaces are
         * tidied (BPE "default", "gpt-2") or SentencePiece adds BOS, spaces after special
         * tokens or reads a literal U+2581. */
        bool rt = valid_utf8(text, n) && !has_dropped_byte(tok, text, n) && !tok->clean_spaces;
        if (tok->kind == WK_TOK_SPM) {
            rt = rt && !add && !memmem(text, n, "\xe2\x96\x81", 3);
            for (size_t i = 0; i < k && rt; i++)
                if (wk_tokenizer_is_special(tok, ids[i])) rt = false;
        }
        if (rt)
            CHECK_MSG(len == n && memcmp(out, text, n) == 0 && ++round_trips,
                      "round %d: round trip differs", r);
        check_stream(tok, ids, k, (unsigned char *)out, len);
    }
    fprintf(stderr, "random bytes: %d rounds, %d round trips checked\n", rounds, round_trips);
}

int main(void) {
    test_byte_map();
    test_pretok();
    test_tiny_bpe();
    test_tiny_spm();

    fixture_stats stats = {0};
    const char *model = test_model_path();
    if (model) {
        wk_gguf *g;
        CHECK_OK(wk_gguf_open(model, &g));
        wk_tokenizer *tok = NULL;
        CHECK_OK(wk_tokenizer_create(g, &tok));
        if (tok) {
            CHECK_EQ_INT(wk_tokenizer_n_vocab(tok), 49152);
            CHECK_EQ_INT(wk_tokenizer_bos(tok), 1);
            CHECK_EQ_INT(wk_tokenizer_eos(tok), 2);
            CHECK(!wk_tokenizer_adds_bos(tok));
            CHECK(wk_tokenizer_is_eog(tok, 2) && wk_tokenizer_is_eog(tok, 0));
            CHECK(wk_tokenizer_is_special(tok, 1) && !wk_tokenizer_is_special(tok, 100));
            CHECK(strcmp(wk_tokenizer_pre_name(tok), "smollm") == 0);
            CHECK(wk_tokenizer_chat_template(tok) != NULL);
            check_fixture(tok, "tests/fixtures/tokenizer/smollm2.txt", true, &stats);
            fprintf(stderr,
                    "smollm2: %d of %d cases match llama.cpp's ids, %d detokenizations "
                    "match, %d round trips\n",
                    stats.matched, stats.cases, stats.detok_matched, stats.round_trips);
            fixture_stats r = {0};
            check_fixture(tok, "tests/fixtures/tokenizer/smollm2-random.txt", true, &r);
            fprintf(stderr,
                    "smollm2 random: %d of %d cases match, %d detokenizations match, "
                    "%d round trips\n",
                    r.matched, r.cases, r.detok_matched, r.round_trips);
            check_vocab_facts(tok, "tests/fixtures/tokenizer/smollm2-vocab.txt");
            test_huge(tok);
            test_random_bytes(tok, 7, 2000);
            wk_tokenizer_free(tok);
        }
        static const char *pres[] = {"llama-bpe", "qwen2", "gpt-2", "default", "starcoder"};
        for (size_t i = 0; i < sizeof pres / sizeof pres[0]; i++) {
            tok = NULL;
            CHECK_OK(wk_tokenizer_create_pre(g, pres[i], &tok));
            if (!tok) continue;
            char rel[256];
            snprintf(rel, sizeof rel, "tests/fixtures/tokenizer/smollm2-pre-%s.txt", pres[i]);
            fixture_stats s = {0};
            check_fixture(tok, rel, false, &s);
            fprintf(stderr, "pre %s: %d of %d cases match, %d detokenizations match\n", pres[i],
                    s.matched, s.cases, s.detok_matched);
            wk_tokenizer_free(tok);
        }
        wk_gguf_close(g);
    }

    char path[4096];
    wk_gguf *g = NULL;
    CHECK_OK(wk_gguf_open(
        test_source_path("tests/fixtures/tokenizer/spm-tiny.gguf", path, sizeof path), &g));
    if (g) {
        wk_tokenizer *tok = NULL;
        CHECK_OK(wk_tokenizer_create(g, &tok));
        if (tok) {
            fixture_stats s = {0};
            check_fixture(tok, "tests/fixtures/tokenizer/spm-tiny.txt", true, &s);
            fprintf(stderr,
                    "spm-tiny: %d of %d cases match, %d detokenizations match, "
                    "%d round trips\n",
                    s.matched, s.cases, s.detok_matched, s.round_trips);
            fixture_stats r = {0};
            check_fixture(tok, "tests/fixtures/tokenizer/spm-tiny-random.txt", true, &r);
            fprintf(stderr, "spm-tiny random: %d of %d cases match, %d detokenizations match\n",
                    r.matched, r.cases, r.detok_matched);
            check_vocab_facts(tok, "tests/fixtures/tokenizer/spm-tiny-vocab.txt");
            test_random_bytes(tok, 11, 2000);
            wk_tokenizer_free(tok);
        }
        wk_gguf_close(g);
    }
    TEST_MAIN_END();
}
