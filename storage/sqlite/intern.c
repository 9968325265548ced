/* storage/sqlite/intern.c — interning of cluster, node and string names for the SQLite writers: a
 * cache of name -> id (an open-addressing map over the writer's handle) in front of the lookup
 * and insert statements. */
#include "storage/sqlite/int.h"

#include "alloc.h"

#include <string.h>

/* --- name map ----------------------------------------------------------------------------- */

#define MAP_MAX_ENTRIES (1u << 20) /* a cache: past this it starts over */

/* Eight bytes at a time (a multiply-xorshift mix per word): names are hashed for every process
 * record, so byte-wise FNV showed up in profiles. */
static uint64_t map_hash(int64_t ns, const char *key, size_t len)
{
    uint64_t h = ((uint64_t)ns * 0x9E3779B97F4A7C15ull) ^ (uint64_t)len;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, key, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        key += 8;
        len -= 8;
    }
    if (len) {
        uint64_t w = 0;
        memcpy(&w, key, len);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 32;
    }
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    return h ? h : 1;
}

int64_t fj_sq_map_get(const fj_sq_map *m, int64_t ns, const char *key, size_t len)
{
    if (!m->cap)
        return 0;
    uint64_t h = map_hash(ns, key, len);
    for (size_t i = (size_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const fj_sq_map_ent *e = &m->slots[i];
        if (!e->hash)
            return 0;
        if (e->hash == h && e->ns == ns && e->len == len && memcmp(e->key, key, len) == 0)
            return e->id;
    }
}

void fj_sq_map_clear(fj_sq_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        fj_free(m->slots[i].key);
    fj_free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

static void map_insert_slot(fj_sq_map_ent *slots, size_t cap, const fj_sq_map_ent *e)
{
    size_t i = (size_t)e->hash & (cap - 1);
    while (slots[i].hash)
        i = (i + 1) & (cap - 1);
    slots[i] = *e;
}

fj_status fj_sq_map_put(fj_sq_map *m, int64_t ns, const char *key, size_t len, int64_t id)
{
    if (m->n >= MAP_MAX_ENTRIES)
        fj_sq_map_clear(m);
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        fj_sq_map_ent *slots = fj_calloc(cap, sizeof *slots);
        if (!slots)
            return FJ_ENOMEM;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].hash)
                map_insert_slot(slots, cap, &m->slots[i]);
        fj_free(m->slots);
        m->slots = slots;
        m->cap = cap;
    }
    char *k = fj_malloc(len + 1);
    if (!k)
        return FJ_ENOMEM;
    memcpy(k, key, len);
    k[len] = '\0';
    fj_sq_map_ent e = {map_hash(ns, key, len), ns, id, k, len};
    map_insert_slot(m->slots, m->cap, &e);
    m->n++;
    return FJ_OK;
}

/* --- interning ---------------------------------------------------------------------------- */

/* Looks up (ns, name) in the cache, then with get (bound by bind), else inserts with ins. */
static fj_status intern(fj_store *s, int64_t ns, const char *name, fj_sq_stmt_id get, fj_sq_stmt_id ins,
                        int64_t *id, fj_err *err)
{
    size_t len = strlen(name);
    if ((*id = fj_sq_map_get(&s->names, ns, name, len)) != 0)
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

