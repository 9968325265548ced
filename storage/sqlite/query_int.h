/* storage/sqlite/query_int.h — the SQLite backend's own part of the queries: its bulk reader of
 * many nodes' load (storage/sqlite/load.c), the driver's load_bulk; the queries are written once
 * (storage/query/). Not a public header. */
#ifndef FJ_SQLITE_QUERY_INT_H
#define FJ_SQLITE_QUERY_INT_H

#include "arena.h"
#include "storage/query/qx.h"
#include "storage/query/sqlbuf.h"
#include "storage/query/value.h"
#include "storage/sqlite/int.h"

#include <stdbool.h>
#include <stdint.h>

/* A running query (storage/query/qx.h), under the SQLite files' name. */
typedef fj_qx fj_sqq;

/* Sets up x's one-pass reader of many nodes (storage/sqlite/load.c) for the node and cluster load
 * queries: the driver's load_bulk (storage/core/driver.h). */
struct fj_qload_bulk;
fj_status fj_sq_load_bulk(fj_qx *x, struct fj_qload_bulk *b);

#endif
