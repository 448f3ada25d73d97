/* Internal: the bits of Unicode the tokenizers need: UTF-8 decoding that
 * matches llama.cpp's (one U+FFFD per invalid byte), general-category classes,
 * the whitespace set, and GPT-2's byte-to-character mapping. */
#ifndef WICK_MODEL_UNICODE_H
#define WICK_MODEL_UNICODE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* Major general category of a code point (Cn, unassigned, is its own class). */
typedef enum wk_ucat {
    WK_UCAT_UNASSIGNED = 0,
    WK_UCAT_LETTER = 1,
    WK_UCAT_NUMBER = 2,
    WK_UCAT_MARK = 3,
    WK_UCAT_PUNCT = 4,
    WK_UCAT_SYMBOL = 5,
    WK_UCAT_SEPARATOR = 6,
    WK_UCAT_OTHER = 7, /* Cc, Cf, Co, Cs */
} wk_ucat;

/* Generated table (unicode_tables.c): entries (first << 3) | class, ascending. */
extern const uint32_t wk_ucat_ranges[];
extern const size_t wk_ucat_n_ranges;

#define WK_UNICODE_REPLACEMENT 0xFFFDu

wk_ucat wk_unicode_cat(uint32_t cp);
/* Unicode White_Space: \t..\r, space, U+0085, U+00A0, U+1680, U+2000..U+200A,
 * U+2028, U+2029, U+202F, U+205F, U+3000 (the set llama.cpp uses for \s). */
bool wk_unicode_is_space(uint32_t cp);

/* Decode one code point at s[0..n) (n >= 1). A lead byte followed by the right
 * number of continuation bytes gives its value (overlong forms and surrogates
 * are not rejected, as in llama.cpp); anything else, and a value above
 * U+10FFFF, gives U+FFFD and consumes one byte. *adv is the bytes consumed. */
uint32_t wk_utf8_decode(const unsigned char *s, size_t n, size_t *adv);
/* Encode cp (<= U+10FFFF) into buf (4 bytes); returns the length. */
size_t wk_utf8_encode(uint32_t cp, char *buf);
/* Length of the sequence a lead byte announces (1 for continuation bytes),
 * the way llama.cpp splits text into symbols. */
static inline size_t wk_utf8_lead_len(unsigned char c) {
    static const unsigned char len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[c >> 4];
}

/* GPT-2 byte-level mapping: every byte to a printable code point and back
 * (-1 when cp is not the image of a byte). */
uint32_t wk_byte_to_cp(unsigned char b);
int wk_cp_to_byte(uint32_t cp);

#endif
