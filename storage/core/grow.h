/* storage/core/grow.h — room in a heap array that grows by doubling, for the lists storage/ code
 * reads rows into (job CPU's rows and processes, the token list) and the metrics engine's, codec's
 * and writers' buffers. The query code's lists live in the query's arena instead (fj_qgrow,
 * storage/query/qx.h). Not a public header. */
#ifndef FJ_STORE_GROW_H
#define FJ_STORE_GROW_H

#include <stdbool.h>
#include <stddef.h>

/* Makes room for need elements of size elem in the heap array *arr (arr is a T **) with room for
 * *cap, keeping what it holds: the room doubles, from first. false when memory ran out, the array
 * and *cap as they were. */
bool fj_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first);

/* The same for n heap arrays that share one capacity *cap (columns of the same rows): arrs[i] is
 * a T_i ** and elems[i] its element size. false when memory ran out: *cap as it was, the arrays
 * that grew keep their larger room (enough for *cap either way). */
bool fj_grow_cols(size_t *cap, size_t need, size_t first, size_t n, void *const arrs[], const size_t elems[]);

#endif
