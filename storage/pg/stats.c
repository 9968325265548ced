/* storage/pg/stats.c — the monitoring figures (fj_store_stats) of a PostgreSQL database, for all
 * instances sharing it: one statement of counting subqueries, in its own read-only snapshot. */
#include "storage/pg/int.h"

#include <stdlib.h>

static const char STATS_SQL[] =
    "SELECT pg_database_size(current_database()),"
    " (SELECT count(*) FROM ts_series), (SELECT count(*) FROM ts_chunk),"
    " (SELECT count(*) FROM request_log), (SELECT coalesce(sum(octet_length(body)), 0) FROM request_log),"
    " (SELECT count(*) FROM request_log l JOIN ts_instances i ON i.id = l.instance_id"
    "   WHERE l.lsn > i.durable_lsn)";

fj_status fj_pg_stats(fj_store *s, fj_store_stats *out, fj_err *err)
{
    fj_status st = fj_pg_begin(s, true, err);
    if (st != FJ_OK)
        return st;
    PGresult *r = PQexec(s->conn, STATS_SQL);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        st = fj_pg_fail(s, r, "stats", err);
        PQclear(r);
        fj_pg_rollback(s);
        return st;
    }
    int64_t v[6];
    for (int i = 0; i < 6; i++)
        v[i] = strtoll(PQgetvalue(r, 0, i), NULL, 10);
    PQclear(r);
    fj_pg_rollback(s);
    *out = (fj_store_stats){.db_bytes = v[0], .series = v[1], .chunks = v[2], .request_log_rows = v[3],
                            .request_log_bytes = v[4], .replay_pending = v[5]};
    return FJ_OK;
}
