/* Internal: the tokenizer's tables, how one is built from plain arrays (the
 * GGUF reader and the tests both use that), and the merge algorithms. */
#ifndef WICK_MODEL_TOKENIZER_INTERNAL_H
#define WICK_MODEL_TOKENIZER_INTERNAL_H

#include "wick/tokenizer.h"
#include "model/bpe_pretok.h"

/* Attribute bits (llama.cpp's token attributes, from the token type). */
enum {
    WK_ATTR_UNDEFINED = 0,
    WK_ATTR_UNKNOWN = 1 << 0,
    WK_ATTR_UNUSED = 1 << 1,
    WK_ATTR_NORMAL = 1 << 2,
    WK_ATTR_CONTROL = 1 << 3,
    WK_ATTR_USER_DEFINED = 1 << 4,
    WK_ATTR_BYTE = 1 << 5,
    WK_ATTR_EOG = 1 << 6, /* wick's own: ends generation */
};

typedef enum wk_tok_kind { WK_TOK_BPE, WK_TOK_SPM } wk_tok_kind;

/* A string in the tokenizer's arena. */
typedef struct wk_str {
    uint32_t off, len;
} wk_str;

/* Open-addressing hash table of string keys to int32 values. */
typedef struct wk_strmap {
    uint32_t *slots; /* entry index + 1; 0 is empty */
    size_t mask;
} wk_strmap;

/* Everything a tokenizer is made from; strings need not be NUL-terminated.
 * Optional arrays may be NULL; ids are -1 when absent; tri-state flags are -1
 * for "the model type's default". */
typedef struct wk_tokenizer_spec {
    const char *model; /* "gpt2" or "llama" */
    const char *pre;   /* tokenizer.ggml.pre, NULL if absent */
    size_t n_tokens;
    const char *const *tokens;
    const size_t *token_lens;
    const float *scores;
    const int32_t *types;
    size_t n_merges;
    const char *const *merges;
    const size_t *merge_lens;
    int64_t bos, eos, eot, eom, unk, pad, fim_pad, fim_rep, fim_sep;
    int add_bos, add_eos, add_space_prefix;
    const char *chat_template;
} wk_tokenizer_spec;

/* The spec with every id absent and every flag defaulted. */
void wk_tokenizer_spec_init(wk_tokenizer_spec *spec);
wk_status wk_tokenizer_build(const wk_tokenizer_spec *spec, wk_tokenizer **out);
/* wk_tokenizer_create with tokenizer.ggml.pre replaced (NULL: the file's). */
wk_status wk_tokenizer_create_pre(const wk_gguf *g, const char *pre_override, wk_tokenizer **out);

struct wk_tokenizer {
    wk_tok_kind kind;
    wk_pretok pretok;
    char model_name[16];
    char *pre_name;
    bool add_bos, add_eos, add_space_prefix, ignore_merges, clean_spaces;
    int32_t bos, eos, eot, eom, unk, pad;

    int32_t n_vocab;
    char *arena; /* token texts, merge texts and pieces, each NUL-terminated */
    size_t arena_len, arena_cap;
    wk_str *text;  /* per token */
    wk_str *piece; /* per token: bytes for decoding */
    float *score;  /* per token */
    uint8_t *attr; /* per token: WK_ATTR_* bits */
    int32_t *type; /* per token: the GGUF token type */
    size_t max_piece;
    wk_strmap vocab; /* text -> id */

    /* Merges, "left right" split at the first space after the first byte. */
    size_t n_merges;
    wk_str *merge_left, *merge_right;
    wk_strmap merges_map; /* hash of (left, right) -> rank */

    /* Special tokens for splitting, longest text first. */
    int32_t *special;
    size_t n_special;

    /* BPE: the byte-level character of each byte (UTF-8, 1-2 bytes). */
    char byte_char[256][3];
    uint8_t byte_char_len[256];

    char *chat_template;
};

static inline const char *wk_tok_str(const wk_tokenizer *t, wk_str s) {
    return t->arena + s.off;
}

/* Look a string up in the vocabulary: its id or -1. */
int32_t wk_tokenizer_find(const wk_tokenizer *t, const char *s, size_t n);
/* The rank of merging left with right, or -1. */
int32_t wk_tokenizer_merge_rank(const wk_tokenizer *t, const char *l, size_t ln, const char *r,
                                size_t rn);

/* A growable array of token ids. */
typedef struct wk_idvec {
    int32_t *v;
    size_t n, cap;
} wk_idvec;
wk_status wk_idvec_push(wk_idvec *a, int32_t id);

/* Scratch buffers reused across the words of one encode call. */
typedef struct wk_merge_scratch {
    void *symbols;
    size_t symbols_cap;
    void *heap;
    size_t heap_cap;
} wk_merge_scratch;
void wk_merge_scratch_free(wk_merge_scratch *s);

/* Byte-level BPE of one word (already mapped to byte-level characters). */
wk_status wk_bpe_word(const wk_tokenizer *t, const char *word, size_t len, wk_merge_scratch *s,
                      wk_idvec *out);
/* SentencePiece merges of one fragment (spaces already escaped to U+2581). */
wk_status wk_spm_fragment(const wk_tokenizer *t, const char *text, size_t len, wk_merge_scratch *s,
                          wk_idvec *out);

#endif
