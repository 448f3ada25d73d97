/* A counting malloc for the limits tests: interposes malloc and friends (outside
 * sanitizer builds, which own malloc) to record the bytes live, their peak, and the
 * largest single request, so a test can show that a hostile file's claims never
 * size an allocation. Include in exactly one file of a test program. */
#ifndef WICK_TESTS_ALLOC_COUNT_H
#define WICK_TESTS_ALLOC_COUNT_H

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WK_COUNT_ALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                       \
    __has_feature(memory_sanitizer)
#define WK_COUNT_ALLOC 0
#endif
#endif
#ifndef WK_COUNT_ALLOC
#define WK_COUNT_ALLOC 1
#endif

static long long alloc_live, alloc_peak;
static unsigned long long alloc_biggest; /* the largest single request */

#if WK_COUNT_ALLOC
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static void *counted(void *p, size_t request)
{
    /* atomics: the library's worker threads may allocate too */
    if (request > __atomic_load_n(&alloc_biggest, __ATOMIC_RELAXED))
        __atomic_store_n(&alloc_biggest, request, __ATOMIC_RELAXED);
    if (p) {
        long long live = __atomic_add_fetch(&alloc_live, (long long)malloc_usable_size(p),
                                            __ATOMIC_RELAXED);
        if (live > __atomic_load_n(&alloc_peak, __ATOMIC_RELAXED))
            __atomic_store_n(&alloc_peak, live, __ATOMIC_RELAXED);
    }
    return p;
}

void *malloc(size_t n) { return counted(__libc_malloc(n), n); }

void *calloc(size_t n, size_t size)
{
    return counted(__libc_calloc(n, size), size && n > SIZE_MAX / size ? SIZE_MAX : n * size);
}

void free(void *p)
{
    if (p) __atomic_sub_fetch(&alloc_live, (long long)malloc_usable_size(p), __ATOMIC_RELAXED);
    __libc_free(p);
}

void *realloc(void *p, size_t n)
{
    long long old = p ? (long long)malloc_usable_size(p) : 0;
    void *q = __libc_realloc(p, n);
    if (q || n == 0) __atomic_sub_fetch(&alloc_live, old, __ATOMIC_RELAXED);
    return counted(q, n);
}

void *aligned_alloc(size_t a, size_t n) { return counted(__libc_memalign(a, n), n); }
void *memalign(size_t a, size_t n) { return counted(__libc_memalign(a, n), n); }

int posix_memalign(void **out, size_t a, size_t n)
{
    void *p = counted(__libc_memalign(a, n), n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}
#endif


/* Start measuring: the peak and the largest request from here on. */
static inline long long alloc_mark(void)
{
    alloc_peak = alloc_live;
    alloc_biggest = 0;
    return alloc_live;
}

#endif
