/* storage/sqlite/intern.c — interning of cluster, node and string names for the SQLite writers: a
 * cache of name -> id (an fj_intern, storage/core/intern.h, bounded here) in front of the lookup
 * and insert statements. */
#include "storage/sqlite/int.h"

#include "alloc.h"

#include <string.h>

/* --- name cache -------------------------------------------------------------------------- */

#define MAP_MAX_ENTRIES (1u << 20) /* a cache: past this it starts over */

fj_status fj_sq_map_put(fj_sq_map *m, int64_t ns, const char *key, size_t len, int64_t id)
{
    if (m->n >= MAP_MAX_ENTRIES)
        fj_intern_clear(m);
    return fj_intern_put(m, ns, key, len, id);
}

/* --- interning ---------------------------------------------------------------------------- */

/* Looks up (ns, name) in the cache, then with get (bound by bind), else inserts with ins. */
static fj_status intern(fj_store *s, int64_t ns, const char *name, fj_sq_stmt_id get, fj_sq_stmt_id ins,
                        int64_t *id, fj_err *err)
{
    size_t len = strlen(name);
    if ((*id = fj_intern_get(&s->names, ns, name, len)) != 0)
        return FJ_OK;
    sqlite3_stmt *st = fj_sq_stmt(s, get, err);
    if (!st)
        return FJ_EIO;
    int i = 1;
    if (ns > 0)
        sqlite3_bind_int64(st, i++, ns);
    sqlite3_bind_text(st, i, name, (int)len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fj_sq_fail(s, rc, "intern lookup", err);
    if (rc == SQLITE_DONE) {
        st = fj_sq_stmt(s, ins, err);
        if (!st)
            return FJ_EIO;
        i = 1;
        if (ns > 0)
            sqlite3_bind_int64(st, i++, ns);
        sqlite3_bind_text(st, i, name, (int)len, SQLITE_STATIC);
        fj_status fs = fj_sq_done(s, st, "intern insert", err);
        if (fs != FJ_OK)
            return fs;
        *id = sqlite3_last_insert_rowid(s->db);
    }
    if (fj_sq_map_put(&s->names, ns, name, len, *id) != FJ_OK)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory interning a name");
    return FJ_OK;
}

fj_status fj_sq_cluster_id(fj_store *s, const char *name, int64_t *id, fj_err *err)
{
    return intern(s, FJ_SQ_NS_CLUSTER, name ? name : "", FJ_SQ_CLUSTER_GET, FJ_SQ_CLUSTER_INS, id, err);
}

fj_status fj_sq_node_id(fj_store *s, int64_t cluster_id, const char *name, int64_t *id, fj_err *err)
{
    return intern(s, cluster_id, name ? name : "", FJ_SQ_NODE_GET, FJ_SQ_NODE_INS, id, err);
}

fj_status fj_sq_string_id(fj_store *s, const char *str, bool allow_null, int64_t *id, fj_err *err)
{
    if (!str && allow_null) {
        *id = 0;
        return FJ_OK;
    }
    return intern(s, FJ_SQ_NS_STRING, str ? str : "", FJ_SQ_STRING_GET, FJ_SQ_STRING_INS, id, err);
}

