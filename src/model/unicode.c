/* wick: UTF-8, general categories, whitespace and GPT-2's byte mapping for the tokenizers. */
#include "model/unicode.h"

wk_ucat wk_unicode_cat(uint32_t cp) {
    if (cp > 0x10FFFF) return WK_UCAT_UNASSIGNED;
    /* Largest entry whose first code point is <= cp. */
    size_t lo = 0, hi = wk_ucat_n_ranges;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((wk_ucat_ranges[mid] >> 3) <= cp)
            lo = mid;
        else
            hi = mid;
    }
    return (wk_ucat)(wk_ucat_ranges[lo] & 7);
}

bool wk_unicode_is_space(uint32_t cp) {
    if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
    switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

uint32_t wk_utf8_decode(const unsigned char *s, size_t n, size_t *adv) {
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
        *adv = 1;
        return c;
    }
    if ((c & 0xE0) == 0xC0) {
        len = 2;
        cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3;
        cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4;
        cp = c & 0x07;
    } else {
        *adv = 1; /* a stray continuation byte or 0xF8..0xFF */
        return WK_UNICODE_REPLACEMENT;
    }
    if (len > n) {
        *adv = 1;
        return WK_UNICODE_REPLACEMENT;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *adv = 1;
            return WK_UNICODE_REPLACEMENT;
        }
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp > 0x10FFFF) {
        *adv = 1;
        return WK_UNICODE_REPLACEMENT;
    }
    *adv = len;
    return cp;
}

size_t wk_utf8_encode(uint32_t cp, char *buf) {
    unsigned char *b = (unsigned char *)buf;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | (cp >> 6));
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (cp >> 12));
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    b[0] = (unsigned char)(0xF0 | (cp >> 18));
    b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    b[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Bytes that are printable Latin-1 map to themselves; the other 68 take
 * U+0100, U+0101, ... in byte order. */
static bool byte_is_printable(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

/* The 68 others, in byte order: 0x00-0x20 (33), 0x7F-0xA0 (34), 0xAD. */
uint32_t wk_byte_to_cp(unsigned char b) {
    if (byte_is_printable(b)) return b;
    if (b <= 0x20) return 256u + b;
    if (b <= 0xA0) return 256u + 33 + (b - 0x7Fu);
    return 256u + 67; /* 0xAD */
}

int wk_cp_to_byte(uint32_t cp) {
    if (cp < 256) return byte_is_printable(cp) ? (int)cp : -1;
    if (cp < 256 + 33) return (int)(cp - 256);
    if (cp < 256 + 67) return (int)(0x7F + cp - 256 - 33);
    return cp == 256 + 67 ? 0xAD : -1;
}
