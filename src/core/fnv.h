/* Internal: the 64-bit FNV-1a hash of bytes, continued from h (start from WK_FNV1A_SEED), for
 * the hash tables of names and tokens and for the tests' digests of output bits. */
#ifndef WICK_CORE_FNV_H
#define WICK_CORE_FNV_H

#include <stddef.h>
#include <stdint.h>

#define WK_FNV1A_SEED 0xcbf29ce484222325ull
#define WK_FNV1A_PRIME 0x100000001b3ull

static inline uint64_t wk_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * WK_FNV1A_PRIME;
    return h;
}

#endif
