/* arena.h — region allocation with one lifetime: everything allocated from an arena is freed
 * together by fj_arena_destroy. Used per HTTP request and per decoded batch, so records never need
 * individual frees. Not thread-safe: an arena belongs to one thread at a time. */
#ifndef FJ_ARENA_H
#define FJ_ARENA_H

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

#endif
