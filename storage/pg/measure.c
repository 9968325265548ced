/* storage/pg/measure.c — the read of a node's latest aicr snapshot in the PostgreSQL backend, in one
 * REPEATABLE READ, READ ONLY transaction (the write of a snapshot envelope is in storage/pg/write.c). */
#include "storage/pg/int.h"

fj_status fj_pg_measurement_latest(fj_store *s, const char *cluster, const char *node, fj_time *time, fj_buf *out,
                                   fj_err *err)
{
    if (!cluster || !node)
        return fj_err_set(err, FJ_EINVAL, cluster ? "node" : "cluster", "a cluster and a node are required");
    fj_status st = fj_pg_begin(s, true, err);
    if (st != FJ_OK)
        return st;
    const char *v[] = {cluster, node};
    PGresult *r;
    if ((st = fj_pg_run(s, FJ_PG_Q_MEASURE_LATEST, 2, v, &r, "query measurements", err)) == FJ_OK) {
        if (PQntuples(r) == 1) {
            *time = fj_pg_int(r, 0, 0);
            st = fj_buf_append(out, PQgetvalue(r, 0, 1), (size_t)PQgetlength(r, 0, 1));
            if (st != FJ_OK)
                fj_err_set(err, st, NULL, "snapshot does not fit the response buffer");
        } else {
            st = fj_err_set(err, FJ_ENOTFOUND, "node", "no measurements of node '%s' in cluster '%s'", node, cluster);
        }
        PQclear(r);
    }
    fj_status end = fj_pg_exec(s, "COMMIT", "end read", err);
    if (end != FJ_OK)
        fj_pg_rollback(s);
    return st != FJ_OK ? st : end;
}
