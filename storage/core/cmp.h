/* storage/core/cmp.h — three-way comparison of integers, for qsort and bsearch comparators that
 * order records by several fields: `int c = fj_cmp_i64(x->a, y->a); if (!c) c = ...; return c;`.
 * Not a public header. */
#ifndef FJ_STORE_CMP_H
#define FJ_STORE_CMP_H

#include <stddef.h>
#include <stdint.h>

/* -1, 0 or 1 as a is below, equal to or above b. */
static inline int fj_cmp_i64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

static inline int fj_cmp_u64(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

/* A record's key of up to four integer fields, most significant first (unused ones 0), and its
 * place among the records (their arrival): sorted with fj_sort_key_cmp, records of one key come
 * together, first-arrived first. */
typedef struct fj_sort_key {
    int64_t k[4];
    size_t at;
} fj_sort_key;

/* The order of the first n fields of x and y. */
static inline int fj_sort_key_fields(const fj_sort_key *x, const fj_sort_key *y, int n)
{
    for (int i = 0; i < n; i++)
        if (x->k[i] != y->k[i])
            return x->k[i] < y->k[i] ? -1 : 1;
    return 0;
}

static inline int fj_sort_key_cmp(const void *a, const void *b)
{
    const fj_sort_key *x = a, *y = b;
    int c = fj_sort_key_fields(x, y, 4);
    return c ? c : fj_cmp_u64(x->at, y->at);
}

/* In v[0 .. n) sorted by fj_sort_key_cmp: the first whose fields are not below want's. */
static inline size_t fj_sort_key_lower(const fj_sort_key *v, size_t n, const fj_sort_key *want)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fj_sort_key_fields(&v[mid], want, 4) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A qsort comparator of int64_t elements. */
static inline int fj_cmp_i64_elems(const void *a, const void *b)
{
    return fj_cmp_i64(*(const int64_t *)a, *(const int64_t *)b);
}

#endif
