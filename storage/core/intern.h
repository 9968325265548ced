/* storage/core/intern.h — a map (namespace, bytes) -> id: the writers' caches of interned names
 * (cluster, node and string ids) and their other small lookups by key (a job key's index in a
 * group, the (job, host) pairs already stored). One implementation for both backends.
 *
 * Open addressing with linear probing, at most half full; keys are copied, so the caller's bytes
 * need not outlive the call. Ids are never 0: 0 is "absent". Nothing is ever evicted: a caller
 * that uses the map as a cache bounds it itself (check n, then fj_intern_clear). Not thread-safe:
 * one map belongs to one store handle or one write. */
#ifndef FJ_STORAGE_INTERN_H
#define FJ_STORAGE_INTERN_H

#include "fj_status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Keys of up to this many bytes are kept in the slot itself: a look-up that finds its key then
 * reads one cache line, not a second one elsewhere (job keys, (job, host) pairs, most names). */
#define FJ_INTERN_INLINE 16

typedef struct fj_intern_ent {
    uint64_t hash; /* 0 = empty slot */
    int64_t ns;
    int64_t id;
    size_t len;
    union {
        char in[FJ_INTERN_INLINE]; /* len <= FJ_INTERN_INLINE */
        char *out;                 /* longer: a copy, NUL-terminated */
    } key;
} fj_intern_ent;

typedef struct fj_intern {
    fj_intern_ent *slots;
    size_t cap, n; /* cap: 0 or a power of two */
} fj_intern;       /* zero-initialised: empty */

/* The id stored for (ns, key[0..len)), or 0 when absent. */
int64_t fj_intern_get(const fj_intern *m, int64_t ns, const void *key, size_t len);
/* Stores id (not 0) for (ns, key[0..len)), replacing an id stored before. FJ_OK or FJ_ENOMEM (the
 * map is unchanged then). */
fj_status fj_intern_put(fj_intern *m, int64_t ns, const void *key, size_t len, int64_t id);
/* Changes the id stored for (ns, key[0..len)) to id (not 0), allocating nothing: false when the
 * key is absent. */
bool fj_intern_replace(fj_intern *m, int64_t ns, const void *key, size_t len, int64_t id);
/* Empties the map and frees its memory; it can be used again. */
void fj_intern_clear(fj_intern *m);

#endif
