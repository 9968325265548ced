/* alloc.h — the one allocation wrapper. Every heap allocation in fjord goes through these so that
 * tests can make the Nth allocation fail (fj_alloc_fail_after) and check that request paths
 * answer 503 instead of aborting. Thread-safe. */
#ifndef FJ_ALLOC_H
#define FJ_ALLOC_H

#include <stddef.h>

void *fj_malloc(size_t n);
void *fj_calloc(size_t n, size_t sz);
void *fj_realloc(void *p, size_t n);
char *fj_strdup(const char *s);
void fj_free(void *p);

/* Test hook: after `n` more successful allocations, every allocation fails until reset with a
 * negative n. */
void fj_alloc_fail_after(long n);

#endif
