/* storage/core/grow.c — room in a heap array (storage/core/grow.h). */
#include "storage/core/grow.h"

#include "alloc.h"

#include <string.h>

bool fj_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : first;
    while (nc < need)
        nc *= 2;
    void *old, *v;
    memcpy(&old, arr, sizeof old); /* arr points to a T *: copied as bytes, whatever T is */
    if (!(v = fj_realloc(old, nc * elem)))
        return false;
    memcpy(arr, &v, sizeof v);
    *cap = nc;
    return true;
}

bool fj_grow_cols(size_t *cap, size_t need, size_t first, size_t n, void *const arrs[], const size_t elems[])
{
    size_t grown = *cap;
    for (size_t i = 0; i < n; i++) {
        grown = *cap;
        if (!fj_grow(arrs[i], &grown, need, elems[i], first))
            return false;
    }
    *cap = grown;
    return true;
}
