/* storage/sqlite/chimbuko.h — the SQLite backend's Chimbuko storage (storage/sqlite/chimbuko.c): the write of one FJ_KIND_CHIMBUKO envelope, called inside the group-commit
 * transaction of storage/sqlite/write.c (its queries are written once: storage/chimbuko/query.c). Not a
 * public header. */
#ifndef FJ_SQLITE_CHIMBUKO_H
#define FJ_SQLITE_CHIMBUKO_H

#include "storage/sqlite/int.h"

/* Writes e (kind FJ_KIND_CHIMBUKO) and its notes; counts rows of its records in cnt (a function
 * profile or counter equal to its previous point counts as a duplicate). */
fj_status fj_sq_write_chimbuko(fj_store *s, const fj_envelope *e, int64_t cluster_id, fj_write_count *cnt,
                               fj_err *err);

#endif
