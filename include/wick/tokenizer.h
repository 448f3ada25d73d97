/* wick: tokenizers from GGUF metadata (byte-level BPE and SentencePiece) and chat templates.
 *
 * A tokenizer is built from the tokenizer.* keys of a GGUF file and gives the
 * same token ids as llama.cpp for the same text:
 *
 *   - tokenizer.ggml.model "gpt2": byte-level BPE. Text is split into words by
 *     the pre-tokenizer named in tokenizer.ggml.pre ("smollm", "llama-bpe",
 *     "qwen2", "gpt-2", "default", ...; missing means "default"), every byte
 *     is mapped to a printable character, and merges apply by their rank in
 *     tokenizer.ggml.merges.
 *   - tokenizer.ggml.model "llama": SentencePiece-style. Spaces become U+2581,
 *     a space is put in front of the text (tokenizer.ggml.add_space_prefix,
 *     default true), pieces merge by tokenizer.ggml.scores, and characters
 *     that no token covers fall back to byte tokens <0xNN>.
 *
 * Text is UTF-8. Invalid UTF-8 never fails: for BPE each byte that does not
 * start a well-formed sequence is read as U+FFFD (as llama.cpp does); for
 * SentencePiece the bytes go through byte fallback. Overlong forms and lone
 * surrogates are read by value, as llama.cpp reads them. A byte the
 * vocabulary has no token for is dropped, as in llama.cpp (SmolLM2 has none
 * for 0x04, 0x06, 0x13, 0x14, 0x16 and 0x1D).
 *
 * Where wick differs from llama.cpp: four-byte sequences above U+10FFFF
 * (F4 90.. to F7) give U+FFFD per byte where llama.cpp aborts; a
 * SentencePiece byte without a <0xNN> token gives the unknown token where
 * llama.cpp throws; special tokens of equal length are tried in id order
 * (llama.cpp's order among them is unspecified; it matters only when two
 * overlap in the text); the end-of-turn token found by name is the lowest id
 * (llama.cpp takes the first in its hash map's order); Unicode classes come
 * from Unicode 14 (characters assigned later count as unassigned); the
 * lstrip/rstrip token attributes llama.cpp sets for a few models by name
 * (Phi-3, Jina) are not applied.
 *
 * Special tokens: control (token type 3), user-defined (4) and unknown (2)
 * tokens are recognised by their text when parse_special is set, longest
 * first (user-defined ones always, as in llama.cpp); otherwise their text is
 * tokenized like any other text. BOS/EOS are added when add_special is set and
 * the model asks for them (tokenizer.ggml.add_bos_token / add_eos_token, with
 * llama.cpp's defaults: SentencePiece adds BOS, llama3-style BPE adds BOS).
 *
 * A tokenizer is immutable after creation: every call below may run from
 * several threads at once.
 *
 * A chat prompt, as llama.cpp would feed it to the model:
 *
 *     wk_chat_msg msg = {"user", "What is Rust?"};
 *     char *text;
 *     int32_t *ids;
 *     size_t n;
 *     wk_tokenizer_chat_apply(tok, &msg, 1, true, &text);            // template + default system
 *     wk_tokenizer_encode_alloc(tok, text, strlen(text), true, true, &ids, &n); // BOS if asked,
 *     free(text);                                                   // <|im_start|> as one token
 *
 * and the reply, streamed: wk_detok_init once, then wk_detok_push for each
 * generated id until wk_tokenizer_is_eog, then wk_detok_flush.
 */
#ifndef WICK_TOKENIZER_H
#define WICK_TOKENIZER_H

#include "common.h"
#include "gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_tokenizer wk_tokenizer;

/* Token types, numbered as in tokenizer.ggml.token_type. */
typedef enum wk_token_type {
    WK_TOKEN_NORMAL = 1,
    WK_TOKEN_UNKNOWN = 2,
    WK_TOKEN_CONTROL = 3,
    WK_TOKEN_USER_DEFINED = 4,
    WK_TOKEN_UNUSED = 5,
    WK_TOKEN_BYTE = 6,
} wk_token_type;

/* Build the tokenizer of a GGUF file (the handle may be closed afterwards:
 * everything needed is copied). Errors name the key that is missing or wrong:
 * an unknown tokenizer.ggml.model or tokenizer.ggml.pre is WK_ERR_UNSUPPORTED. */
wk_status wk_tokenizer_create(const wk_gguf *g, wk_tokenizer **out);
void wk_tokenizer_free(wk_tokenizer *tok);

/* Vocabulary facts. Ids that a file does not define are -1. */
int64_t wk_tokenizer_n_vocab(const wk_tokenizer *tok);
int32_t wk_tokenizer_bos(const wk_tokenizer *tok);
int32_t wk_tokenizer_eos(const wk_tokenizer *tok);
/* End of turn: tokenizer.ggml.eot_token_id, else the first of <|eot_id|>,
 * <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, ... in the vocabulary. */
int32_t wk_tokenizer_eot(const wk_tokenizer *tok);
bool wk_tokenizer_adds_bos(const wk_tokenizer *tok);
bool wk_tokenizer_adds_eos(const wk_tokenizer *tok);
/* "gpt2" or "llama"; the pre-tokenizer name as the file gives it ("" if none). */
const char *wk_tokenizer_model_name(const wk_tokenizer *tok);
const char *wk_tokenizer_pre_name(const wk_tokenizer *tok);

/* Per-token queries; false / 0 / NULL for ids out of range. */
wk_token_type wk_tokenizer_token_type(const wk_tokenizer *tok, int32_t id);
/* Control tokens (type 3, and end-of-generation tokens found by name). */
bool wk_tokenizer_is_control(const wk_tokenizer *tok, int32_t id);
/* Control, user-defined or unknown: the tokens parse_special recognises. */
bool wk_tokenizer_is_special(const wk_tokenizer *tok, int32_t id);
/* End of generation: EOS, EOT, EOM and tokens such as <|im_end|>, <|eot_id|>,
 * <|endoftext|>, <end_of_turn> (the list llama.cpp uses). */
bool wk_tokenizer_is_eog(const wk_tokenizer *tok, int32_t id);
/* The vocabulary string of a token (NUL-terminated, owned by the tokenizer). */
const char *wk_tokenizer_token_text(const wk_tokenizer *tok, int32_t id);
/* tokenizer.chat_template, or NULL when the file has none. */
const char *wk_tokenizer_chat_template(const wk_tokenizer *tok);

/* The longest text encode takes, in bytes (1 GiB). */
#define WK_TOKENIZER_MAX_TEXT ((size_t)1 << 30)

/* Tokenize text[0..len). Writes at most cap ids to out and the count to *n.
 * When cap is too small, returns WK_ERR_INVALID with *n set to the count
 * needed (out then holds the first cap ids). add_special: BOS/EOS as the model
 * asks; parse_special: recognise special tokens' text. Empty text gives no
 * tokens (or just BOS). */
wk_status wk_tokenizer_encode(const wk_tokenizer *tok, const char *text, size_t len,
                              bool add_special, bool parse_special, int32_t *out, size_t cap,
                              size_t *n);
/* The same, into a malloc'd array the caller frees with free(). */
wk_status wk_tokenizer_encode_alloc(const wk_tokenizer *tok, const char *text, size_t len,
                                    bool add_special, bool parse_special, int32_t **out, size_t *n);

/* The bytes of one token, as llama.cpp's token_to_piece gives them: byte-level
 * characters mapped back to bytes (BPE), U+2581 turned into spaces and <0xNN>
 * into its byte (SentencePiece). Control and unknown tokens give their text
 * when render_special, else nothing; user-defined tokens always give their
 * text. The bytes need not be valid UTF-8 (a character may span tokens).
 * *bytes stays valid while the tokenizer lives. Ids out of range are
 * WK_ERR_INVALID. */
wk_status wk_tokenizer_piece(const wk_tokenizer *tok, int32_t id, bool render_special,
                             const char **bytes, size_t *len);
/* The piece as generated text shows it: wk_tokenizer_piece without rendering
 * control and unknown tokens (they give nothing). */
wk_status wk_tokenizer_token_to_piece(const wk_tokenizer *tok, int32_t id, const char **piece,
                                      size_t *len);
/* The longest piece, in bytes. */
size_t wk_tokenizer_max_piece(const wk_tokenizer *tok);

/* Detokenize ids[0..n) into out (cap bytes), as llama.cpp's llama_detokenize
 * with remove_special false: pieces concatenated; SentencePiece drops the
 * space that the prefix put before the first piece; BPE pre-tokenizers that
 * ask for it ("default", "gpt-2", "llama-bpe") remove spaces before . , ! ?
 * and some apostrophes. *len is the length; out is NUL-terminated when cap >
 * *len. cap too small: WK_ERR_INVALID with *len the size needed. */
wk_status wk_tokenizer_decode(const wk_tokenizer *tok, const int32_t *ids, size_t n,
                              bool render_special, char *out, size_t cap, size_t *len);

/* Streaming detokenization: push tokens as they are generated and get back
 * only whole UTF-8 characters; the bytes of a character split across tokens
 * are held until it is complete. Bytes that can never form a character are
 * replaced by U+FFFD (EF BF BD), so the output is always valid UTF-8. No
 * space is stripped and no clean-up applies (these are continuations). */
typedef struct wk_detok_stream {
    const wk_tokenizer *tok;
    bool render_special;
    unsigned char held[4]; /* the start of an incomplete character */
    size_t n_held;
} wk_detok_stream;

void wk_detok_init(wk_detok_stream *s, const wk_tokenizer *tok, bool render_special);
/* Bytes out must hold for any token. */
size_t wk_detok_out_cap(const wk_tokenizer *tok);
/* Push one token; writes the completed characters to out (cap >=
 * wk_detok_out_cap) and their length to *len. */
wk_status wk_detok_push(wk_detok_stream *s, int32_t id, char *out, size_t cap, size_t *len);
/* End of stream: an incomplete character left over becomes U+FFFD (0 or 3
 * bytes written to out, which needs 3). Returns the length. */
size_t wk_detok_flush(wk_detok_stream *s, char *out);

/* ---- chat templates ---- */

/* One message; role is "system", "user" or "assistant" (others are passed
 * through where the style allows). */
typedef struct wk_chat_msg {
    const char *role;
    const char *content;
} wk_chat_msg;

typedef enum wk_chat_style {
    WK_CHAT_CHATML = 1, /* <|im_start|>role\n...<|im_end|>\n (SmolLM2, Qwen) */
    WK_CHAT_LLAMA2 = 2, /* <s>[INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] */
    WK_CHAT_LLAMA3 = 3, /* <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
    WK_CHAT_ZEPHYR = 4, /* <|user|>\n...</s>\n */
} wk_chat_style;

/* Recognise the style of a tokenizer.chat_template text; WK_ERR_UNSUPPORTED
 * naming the template's start for one wick does not know, and for families
 * that look alike but render differently (Phi-3, Phi-4, SmolVLM, Mistral's
 * [INST] without <<SYS>>). Llama 3.1's templates render as Llama 3 (without
 * the "Cutting Knowledge Date" system block they add), as llama.cpp's built-in
 * llama3 template does. */
wk_status wk_chat_detect(const char *tmpl, wk_chat_style *out);
const char *wk_chat_style_name(wk_chat_style style);

/* Render messages as the template would (Jinja semantics of the template
 * families above), into a malloc'd NUL-terminated string (*out; free()).
 * The leading BOS is not written: the tokenizer adds it (add_special). BOS/EOS
 * inside the text are written as bos_token/eos_token (NULL: "<s>"/"</s>").
 * ChatML templates that insert a default system prompt when the first message
 * is not a system one (SmolLM2's, Qwen2's) have it inserted, word for word.
 * Llama 2 requires user/assistant alternation after an optional system
 * message, as its template does (WK_ERR_INVALID otherwise). */
wk_status wk_chat_apply(const char *tmpl, const char *bos_token, const char *eos_token,
                        const wk_chat_msg *msgs, size_t n_msgs, bool add_generation_prompt,
                        char **out);
/* The same with the model's template and its BOS/EOS texts; WK_ERR_UNSUPPORTED
 * when the file has no tokenizer.chat_template. */
wk_status wk_tokenizer_chat_apply(const wk_tokenizer *tok, const wk_chat_msg *msgs, size_t n_msgs,
                                  bool add_generation_prompt, char **out);

#ifdef __cplusplus
}
#endif
#endif
