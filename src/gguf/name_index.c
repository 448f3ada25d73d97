/* An open-addressing hash table from names to indices, so that lookups and the
 * uniqueness checks of keys and tensor names stay linear in the file. */
#include <stdlib.h>
#include <string.h>

#include "core/fnv.h"
#include "gguf/gguf_internal.h"

static uint64_t wk_name_hash(const char *s) { return wk_fnv1a(WK_FNV1A_SEED, s, strlen(s)); }

bool wk_name_index_init(wk_name_index *ix, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n) {
        if (cap > SIZE_MAX / 4 / sizeof(int64_t)) return false;
        cap *= 2;
    }
    ix->slots = calloc(cap, sizeof(int64_t));
    ix->cap = ix->slots ? cap : 0;
    return ix->slots != NULL;
}

void wk_name_index_free(wk_name_index *ix)
{
    free(ix->slots);
    ix->slots = NULL;
    ix->cap = 0;
}

int64_t wk_name_index_insert(wk_name_index *ix, wk_name_of_fn name_of, const void *owner,
                             int64_t i)
{
    const char *name = name_of(owner, i);
    size_t mask = ix->cap - 1;
    for (size_t s = wk_name_hash(name) & mask;; s = (s + 1) & mask) {
        if (ix->slots[s] == 0) {
            ix->slots[s] = i + 1;
            return -1;
        }
        if (strcmp(name_of(owner, ix->slots[s] - 1), name) == 0) return ix->slots[s] - 1;
    }
}

int64_t wk_name_index_find(const wk_name_index *ix, wk_name_of_fn name_of, const void *owner,
                           const char *name)
{
    if (!ix->slots || !name) return -1;
    size_t mask = ix->cap - 1;
    for (size_t s = wk_name_hash(name) & mask;; s = (s + 1) & mask) {
        if (ix->slots[s] == 0) return -1;
        if (strcmp(name_of(owner, ix->slots[s] - 1), name) == 0) return ix->slots[s] - 1;
    }
}
