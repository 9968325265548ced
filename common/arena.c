/* arena.c — chunked bump allocator. Large requests get a chunk of their own so a 500 KB topo_svg
 * does not waste a standard chunk. Chunks are numbered in the order they were made, which is
 * what a mark remembers; a budget is charged per chunk, not per allocation. */
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
    unsigned long seq;
    _Alignas(16) unsigned char data[];
};

struct fj_arena {
    struct chunk *head;
    size_t total;
    unsigned long next_seq;
    size_t held;          /* bytes of all chunks, headers included: what the budget is charged */
    fj_mem_budget *budget; /* NULL: none */
};

fj_arena *fj_arena_create(void)
{
    fj_arena *a = fj_calloc(1, sizeof *a);
    return a;
}

static void free_chunk(fj_arena *a, struct chunk *c)
{
    size_t bytes = sizeof *c + c->size;
    a->held -= bytes;
    fj_mem_uncharge(a->budget, bytes);
    fj_free(c);
}

void fj_arena_destroy(fj_arena *a)
{
    if (!a)
        return;
    struct chunk *c = a->head;
    while (c) {
        struct chunk *next = c->next;
        free_chunk(a, c);
        c = next;
    }
    fj_free(a);
}

static struct chunk *new_chunk(fj_arena *a, size_t size)
{
    size_t bytes = sizeof(struct chunk) + size;
    if (!fj_mem_charge(a->budget, bytes))
        return NULL;
    struct chunk *fresh = fj_malloc(bytes);
    if (!fresh) {
        fj_mem_uncharge(a->budget, bytes);
        return NULL;
    }
    fresh->size = size;
    fresh->used = 0;
    fresh->seq = a->next_seq++;
    a->held += bytes;
    return fresh;
}

void *fj_arena_alloc(fj_arena *a, size_t n)
{
    if (n == 0)
        n = 1;
    if (n > SIZE_MAX - ARENA_ALIGN - sizeof(struct chunk))
        return NULL;
    size_t need = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    struct chunk *c = a->head;
    if (!c || c->size - c->used < need) {
        size_t size = need > ARENA_CHUNK / 4 ? need : ARENA_CHUNK;
        struct chunk *fresh = new_chunk(a, size);
        if (!fresh)
            return NULL;
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

void fj_arena_set_budget(fj_arena *a, fj_mem_budget *b)
{
    fj_mem_uncharge(a->budget, a->held);
    a->budget = b;
    fj_mem_charge_held(b, a->held);
}

fj_arena_mark fj_arena_save(const fj_arena *a)
{
    return (fj_arena_mark){a->next_seq, a->head ? a->head->used : 0, a->total};
}

/* Chunks made after the mark are either at the head or right behind it (one-off blocks), so
 * freeing them leaves the mark's head chunk first again; its later allocations are undone by
 * resetting its fill. */
void fj_arena_release(fj_arena *a, fj_arena_mark m)
{
    struct chunk **link = &a->head;
    while (*link) {
        struct chunk *c = *link;
        if (c->seq >= m.seq) {
            *link = c->next;
            free_chunk(a, c);
        } else {
            link = &c->next;
        }
    }
    if (a->head)
        a->head->used = m.head_used;
    a->total = m.total;
}
