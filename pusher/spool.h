/* spool.h — the queue of unsent documents, oldest first, with a size cap. Kept in a directory (one
 * file per document, written to a temporary name and renamed, so a crash never leaves half a
 * document) or, without a directory, in memory. Past the cap the oldest documents are dropped, with
 * a warning: within the cap a server outage loses nothing, and a node never fills its disk.
 * Bodies are stored as they are sent (zstd-compressed JSON). Not thread-safe. */
#ifndef FJ_PUSH_SPOOL_H
#define FJ_PUSH_SPOOL_H

#include "fj_status.h"

#include <stddef.h>
#include <stdint.h>

typedef enum { FJ_ITEM_SONAR = 0, FJ_ITEM_MEASUREMENT = 1 } fj_item_kind;

typedef struct fj_spool fj_spool;

/* dir NULL or "": in memory. A directory is created if missing (mode 0700) and its existing
 * documents are queued again. FJ_EIO with a message when the directory is unusable. */
fj_status fj_spool_open(const char *dir, uint64_t cap, fj_spool **out, fj_err *err);
void fj_spool_close(fj_spool *s);

/* Queues a copy of data. A document larger than the cap is refused (FJ_ETOOBIG). */
fj_status fj_spool_put(fj_spool *s, fj_item_kind kind, const void *data, size_t len);

/* The oldest document: *data is the caller's (fj_free). FJ_ENOTFOUND when empty. */
fj_status fj_spool_peek(fj_spool *s, uint64_t *id, fj_item_kind *kind, char **data, size_t *len);

/* Removes a document by id (after it was delivered or refused for good). */
void fj_spool_remove(fj_spool *s, uint64_t id);

size_t fj_spool_count(const fj_spool *s);
uint64_t fj_spool_bytes(const fj_spool *s);
/* Documents dropped for the cap since open. */
uint64_t fj_spool_dropped(const fj_spool *s);

#endif
