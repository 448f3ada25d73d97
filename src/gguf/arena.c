/* A bump allocator for everything an open GGUF file owns: freed in one call. */
#include <stdlib.h>

#include "gguf/gguf_internal.h"

struct wk_arena_block {
    wk_arena_block *next;
    size_t used, cap;
    _Alignas(8) unsigned char bytes[];
};

enum { WK_ARENA_BLOCK = 1 << 16 };

void *wk_arena_alloc(wk_arena *a, size_t n)
{
    size_t need = (n + 7) & ~(size_t)7;
    if (need < n) return NULL;
    wk_arena_block *b = a->head;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > WK_ARENA_BLOCK ? need : WK_ARENA_BLOCK;
        if (cap > SIZE_MAX - sizeof(wk_arena_block)) return NULL;
        b = malloc(sizeof(wk_arena_block) + cap);
        if (!b) return NULL;
        b->used = 0;
        b->cap = cap;
        /* A block made for one big request goes behind the current one, so the
         * current one keeps serving small requests. */
        if (a->head && need > WK_ARENA_BLOCK) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->bytes + b->used;
    b->used += need;
    return p;
}

void wk_arena_free(wk_arena *a)
{
    wk_arena_block *b = a->head;
    while (b) {
        wk_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}
