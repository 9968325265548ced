/* libFuzzer harness: host lists (one name per line; lines that are not host names are dropped)
 * compressed with fj_noderange_compress and expanded back with fj_noderange_expand_list must give
 * the same set of names, and compressing that again the same string. Aborts otherwise. */
#include "arena.h"
#include "ingest/noderange.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    fj_arena *a = fj_arena_create();
    if (!a)
        return 0;
    char *text = fj_arena_strndup(a, (const char *)data, size);
    const char **names = fj_arena_alloc(a, (size + 1) * sizeof *names);
    size_t n = 0;
    for (char *line = text, *next; text && line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (fj_hostname_valid(line))
            names[n++] = line;
    }
    char *c = NULL, *again = NULL, **back = NULL;
    size_t m = 0;
    fj_err err = {0};
    if (fj_noderange_compress(a, names, n, &c, &err) != FJ_OK)
        abort();
    if (fj_noderange_expand_list(a, c, 1u << 20, &back, &m, &err) != FJ_OK)
        abort();
    if (fj_noderange_compress(a, (const char *const *)back, m, &again, &err) != FJ_OK || strcmp(c, again) != 0)
        abort();
    /* the same set: sort both, drop duplicates of the input */
    if (n) /* names and back are NULL for an empty list: qsort wants a real pointer */
        qsort(names, n, sizeof *names, cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || strcmp(names[u - 1], names[i]) != 0)
            names[u++] = names[i];
    if (m)
        qsort(back, m, sizeof *back, cmp);
    if (u != m)
        abort();
    for (size_t i = 0; i < m; i++)
        if (strcmp(names[i], back[i]) != 0)
            abort();
    fj_arena_destroy(a);
    return 0;
}
