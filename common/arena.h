/* arena.h — region allocation with one lifetime: everything allocated from an arena is freed
 * together by fj_arena_destroy (or back to a mark by fj_arena_release). Used per HTTP request and
 * per decoded batch, so records never need individual frees. A read's arena counts its chunks
 * against a memory budget (membudget.h) and refuses to grow past it. Not thread-safe: an arena
 * belongs to one thread at a time. */
#ifndef FJ_ARENA_H
#define FJ_ARENA_H

#include "membudget.h"

#include <stddef.h>

typedef struct fj_arena fj_arena;

/* A new empty arena, or NULL on out-of-memory. */
fj_arena *fj_arena_create(void);

/* Frees every allocation of the arena and the arena itself. NULL is a no-op. */
void fj_arena_destroy(fj_arena *a);

/* n bytes aligned for any type, or NULL on out-of-memory. Memory is not zeroed. */
void *fj_arena_alloc(fj_arena *a, size_t n);

/* n zeroed elements of size sz, or NULL on out-of-memory or overflow. */
void *fj_arena_calloc(fj_arena *a, size_t n, size_t sz);

/* A NUL-terminated copy of the first n bytes of s (s need not be terminated). */
char *fj_arena_strndup(fj_arena *a, const char *s, size_t n);
char *fj_arena_strdup(fj_arena *a, const char *s);

/* printf into the arena. */
char *fj_arena_printf(fj_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Bytes handed out so far (for memory accounting and limits). */
size_t fj_arena_used(const fj_arena *a);

/* From now on every chunk of the arena is charged to b (chunks held already are charged at
 * once, even past the limit) until it is freed; an allocation that b refuses returns NULL and
 * b says which limit refused it. b (not owned) must outlive the arena or a later call with NULL,
 * which gives the charges back. */
void fj_arena_set_budget(fj_arena *a, fj_mem_budget *b);

/* A point to go back to: fj_arena_release frees everything allocated after it (pointers into
 * that memory become invalid) and keeps what came before. Marks nest like a stack: releasing an
 * earlier mark also releases the later ones. Lets one request run many statements in turn, each
 * in the room the one before gave back. */
typedef struct fj_arena_mark {
    unsigned long seq; /* chunks numbered from here on are the mark's to free */
    size_t head_used, total;
} fj_arena_mark;
fj_arena_mark fj_arena_save(const fj_arena *a);
void fj_arena_release(fj_arena *a, fj_arena_mark m);

#endif
