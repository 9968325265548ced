/* storage/sqlite/measure.c — aicr snapshots in the SQLite backend: the write of one snapshot envelope,
 * called inside the group-commit transaction of storage/sqlite/write.c (the read of a node's latest
 * snapshot is storage/query/measure.c). Snapshots are rare (fjord-push sends its NetworkTopology when it changes), so the
 * statements are prepared per call instead of being cached on the handle. */
#include "storage/sqlite/int.h"

#include <string.h>

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/* Prepares sql, a statement of one node's snapshots, with the node bound (?1 cluster, ?2 node): it
 * stays bound across resets. */
static fj_status prep_node(fj_store *s, const char *sql, int64_t cluster_id, int64_t node_id, sqlite3_stmt **st,
                           fj_err *err)
{
    int rc = sqlite3_prepare_v2(s->db, sql, -1, st, NULL);
    if (rc != SQLITE_OK)
        return fj_sq_fail(s, rc, "prepare", err);
    sqlite3_bind_int64(*st, 1, cluster_id);
    sqlite3_bind_int64(*st, 2, node_id);
    return FJ_OK;
}

static const char *meta(const char *s)
{
    return s && *s ? s : NULL;
}

/* The snapshot, its subtypes and the envelope meta. Counted rows: the snapshot (1) and each
 * subtype. A snapshot without its own time is a duplicate when it equals the node's latest one;
 * otherwise it is stored at its arrival time or, when the node already has a snapshot at or after
 * that second, one second after the newest (it is the newest thing the node said). */
fj_status fj_sq_write_measurements(fj_store *s, const fj_envelope *e, int64_t cluster_id, int64_t node_id,
                                   fj_write_count *cnt, fj_err *err)
{
    const fj_measurements *m = &e->u.measurements;
    const uint64_t rows = 1 + (uint64_t)m->n_rows;
    const int64_t hash = (int64_t)fnv1a(m->json);
    sqlite3_stmt *latest = NULL, *snap = NULL, *sub = NULL;
    fj_status st = FJ_OK;
    bool added = false;
    fj_time t = e->time;

    if (m->arrival_time) {
        if ((st = prep_node(s,
                            "SELECT time, hash, snapshot FROM measurement_snapshots WHERE cluster_id=?1 AND "
                            "node_id=?2 ORDER BY time DESC LIMIT 1",
                            cluster_id, node_id, &latest, err)) != FJ_OK)
            goto out;
        int rc = sqlite3_step(latest);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            st = fj_sq_fail(s, rc, "find latest snapshot", err);
            goto out;
        }
        fj_time newest = rc == SQLITE_ROW ? sqlite3_column_int64(latest, 0) : 0;
        bool same = rc == SQLITE_ROW && sqlite3_column_int64(latest, 1) == hash &&
                    strcmp((const char *)sqlite3_column_text(latest, 2), m->json) == 0;
        sqlite3_reset(latest);
        if (same) {
            cnt->duplicates += rows;
            if (m->stored_time)
                *m->stored_time = newest;
            goto out;
        }
        if (rc == SQLITE_ROW && newest >= t)
            t = newest + 1;
    }
    if (m->stored_time)
        *m->stored_time = t;

    if ((st = prep_node(s,
                        "INSERT OR IGNORE INTO measurement_snapshots(cluster_id,node_id,time,hash,n_measurements,"
                        "n_subtypes,snapshot) VALUES(?,?,?,?,?,?,?)",
                        cluster_id, node_id, &snap, err)) != FJ_OK)
        goto out;
    sqlite3_bind_int64(snap, 3, t);
    sqlite3_bind_int64(snap, 4, hash);
    sqlite3_bind_int64(snap, 5, (int64_t)m->n_measurements);
    sqlite3_bind_int64(snap, 6, (int64_t)m->n_rows);
    sqlite3_bind_text(snap, 7, m->json, -1, SQLITE_STATIC);
    if ((st = fj_sq_insert(s, snap, "insert snapshot", &added, err)) != FJ_OK)
        goto out;
    if (!added) { /* this node's snapshot of that time is stored: nothing of this one is written */
        cnt->duplicates += rows;
        goto out;
    }
    cnt->inserted++;

    if ((st = prep_node(s,
                        "INSERT OR IGNORE INTO measurements(cluster_id,node_id,time,type,instance,subtype,data) "
                        "VALUES(?,?,?,?,?,?,?)",
                        cluster_id, node_id, &sub, err)) != FJ_OK)
        goto out;
    for (size_t i = 0; i < m->n_rows; i++) {
        const fj_measure_row *r = &m->rows[i];
        sqlite3_bind_int64(sub, 3, t);
        sqlite3_bind_text(sub, 4, r->type, -1, SQLITE_STATIC);
        sqlite3_bind_int64(sub, 5, r->instance);
        sqlite3_bind_text(sub, 6, r->subtype, -1, SQLITE_STATIC);
        sqlite3_bind_text(sub, 7, r->json, -1, SQLITE_STATIC);
        if ((st = fj_sq_insert(s, sub, "insert measurement", &added, err)) != FJ_OK)
            goto out;
        if (added)
            cnt->inserted++;
        else
            cnt->duplicates++;
    }

    /* Envelope meta, as every other kind has (bookkeeping, not counted). */
    sqlite3_stmt *env = fj_sq_stmt(s, FJ_SQ_ENVELOPE_INS, err);
    if (!env) {
        st = FJ_EIO;
        goto out;
    }
    sqlite3_bind_int64(env, 1, cluster_id);
    sqlite3_bind_int64(env, 2, node_id);
    sqlite3_bind_text(env, 3, fj_kind_name(e->kind), -1, SQLITE_STATIC);
    sqlite3_bind_int64(env, 4, t);
    if (meta(e->producer))
        sqlite3_bind_text(env, 5, e->producer, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(env, 5);
    if (meta(e->version))
        sqlite3_bind_text(env, 6, e->version, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(env, 6);
    sqlite3_bind_null(env, 7);
    sqlite3_bind_int64(env, 8, (int64_t)e->unknown_fields);
    st = fj_sq_insert(s, env, "insert envelope", &added, err);
out:
    sqlite3_finalize(latest);
    sqlite3_finalize(snap);
    sqlite3_finalize(sub);
    return st;
}
