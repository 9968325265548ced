/* storage/sqlite/stats.c — the monitoring figures (fj_store_stats) of a SQLite database: one
 * statement of counting subqueries. The request log is trimmed as it becomes durable, so its
 * counts stay small; ts_series and ts_chunk are counted on their smallest index. */
#include "storage/sqlite/int.h"

static const char STATS_SQL[] =
    "SELECT (SELECT page_count FROM pragma_page_count()) * (SELECT page_size FROM pragma_page_size()),"
    " (SELECT count(*) FROM ts_series), (SELECT count(*) FROM ts_chunk),"
    " (SELECT count(*) FROM request_log), (SELECT coalesce(sum(length(body)), 0) FROM request_log),"
    " (SELECT count(*) FROM request_log WHERE lsn >"
    "   coalesce((SELECT value FROM ts_state WHERE key = 'durable_lsn'), 0))";

fj_status fj_sq_stats(fj_store *s, fj_store_stats *out, fj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, STATS_SQL, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return fj_sq_fail(s, rc, "stats", err);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *out = (fj_store_stats){
            .db_bytes = sqlite3_column_int64(st, 0),
            .series = sqlite3_column_int64(st, 1),
            .chunks = sqlite3_column_int64(st, 2),
            .request_log_rows = sqlite3_column_int64(st, 3),
            .request_log_bytes = sqlite3_column_int64(st, 4),
            .replay_pending = sqlite3_column_int64(st, 5),
        };
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? FJ_OK : fj_sq_fail(s, rc, "stats", err);
}
