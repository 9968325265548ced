/* arena.c — chunked bump allocator. Large requests get a chunk of their own so a 500 KB topo_svg
 * does not waste a standard chunk. */
#include "arena.h"

#include "alloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { ARENA_CHUNK = 64 * 1024, ARENA_ALIGN = 16 };

struct chunk {
    struct chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

struct fj_arena {
    struct chunk *head;
    size_t total;
};

fj_arena *fj_arena_create(void)
{
    fj_arena *a = fj_calloc(1, sizeof *a);
    return a;
}

void fj_arena_destroy(fj_arena *a)
{
    if (!a)
        return;
    struct chunk *c = a->head;
    while (c) {
        struct chunk *next = c->next;
        fj_free(c);
        c = next;
    }
    fj_free(a);
}

void *fj_arena_alloc(fj_arena *a, size_t n)
{
    if (n == 0)
        n = 1;
    if (n > SIZE_MAX - ARENA_ALIGN)
        return NULL;
    size_t need = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    struct chunk *c = a->head;
    if (!c || c->size - c->used < need) {
        size_t size = need > ARENA_CHUNK / 4 ? need : ARENA_CHUNK;
        struct chunk *fresh = fj_malloc(sizeof *fresh + size);
        if (!fresh)
            return NULL;
        fresh->size = size;
        fresh->used = 0;
        if (c && size == need && c->size - c->used > ARENA_CHUNK / 8) {
            /* A big one-off block: keep the current chunk at the head, it still has room. */
            fresh->next = c->next;
            c->next = fresh;
            fresh->used = need;
            a->total += need;
            return fresh->data;
        }
        fresh->next = c;
        a->head = fresh;
        c = fresh;
    }
    void *p = c->data + c->used;
    c->used += need;
    a->total += need;
    return p;
}

void *fj_arena_calloc(fj_arena *a, size_t n, size_t sz)
{
    if (sz && n > SIZE_MAX / sz)
        return NULL;
    void *p = fj_arena_alloc(a, n * sz);
    if (p)
        memset(p, 0, n * sz);
    return p;
}

char *fj_arena_strndup(fj_arena *a, const char *s, size_t n)
{
    char *p = fj_arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *fj_arena_strdup(fj_arena *a, const char *s)
{
    return fj_arena_strndup(a, s, strlen(s));
}

char *fj_arena_printf(fj_arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = NULL;
    if (n >= 0 && (p = fj_arena_alloc(a, (size_t)n + 1)))
        vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

size_t fj_arena_used(const fj_arena *a)
{
    return a->total;
}
