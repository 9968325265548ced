/* alloc.c — malloc wrappers with fault injection for tests. */
#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_long fail_countdown = -1;

static int should_fail(void)
{
    long n = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
    if (n < 0)
        return 0;
    if (n == 0)
        return 1;
    atomic_fetch_sub_explicit(&fail_countdown, 1, memory_order_relaxed);
    return 0;
}

void fj_alloc_fail_after(long n)
{
    atomic_store(&fail_countdown, n);
}

void *fj_malloc(size_t n)
{
    return should_fail() ? NULL : malloc(n ? n : 1);
}

void *fj_calloc(size_t n, size_t sz)
{
    return should_fail() ? NULL : calloc(n ? n : 1, sz ? sz : 1);
}

void *fj_realloc(void *p, size_t n)
{
    return should_fail() ? NULL : realloc(p, n ? n : 1);
}

char *fj_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = fj_malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void fj_free(void *p)
{
    free(p);
}
