/* storage/pg/intern.c — the PostgreSQL writers' cache of interned names (name -> id, open
 * addressing; see FJ_PG_NS_*). */
#include "storage/pg/int.h"

#include "alloc.h"

#include <string.h>

/* --- name map ----------------------------------------------------------------------------- */

static uint64_t map_hash(int64_t ns, const char *key, size_t len)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)ns;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)key[i];
        h *= 1099511628211ull;
    }
    h ^= h >> 29;
    return h ? h : 1;
}

int64_t fj_pg_map_get(const fj_pg_map *m, int64_t ns, const char *key, size_t len)
{
    if (!m->cap)
        return 0;
    uint64_t h = map_hash(ns, key, len);
    for (size_t i = (size_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const fj_pg_map_ent *e = &m->slots[i];
        if (!e->hash)
            return 0;
        if (e->hash == h && e->ns == ns && e->len == len && memcmp(e->key, key, len) == 0)
            return e->id;
    }
}

static fj_status map_grow(fj_pg_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    fj_pg_map_ent *slots = fj_calloc(cap, sizeof *slots);
    if (!slots)
        return FJ_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        fj_pg_map_ent *e = &m->slots[i];
        if (!e->hash)
            continue;
        size_t j = (size_t)e->hash & (cap - 1);
        while (slots[j].hash)
            j = (j + 1) & (cap - 1);
        slots[j] = *e;
    }
    fj_free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return FJ_OK;
}

fj_status fj_pg_map_put(fj_pg_map *m, int64_t ns, const char *key, size_t len, int64_t id)
{
    if ((m->n + 1) * 4 > m->cap * 3 && map_grow(m) != FJ_OK)
        return FJ_ENOMEM;
    uint64_t h = map_hash(ns, key, len);
    size_t i = (size_t)h & (m->cap - 1);
    for (; m->slots[i].hash; i = (i + 1) & (m->cap - 1))
        if (m->slots[i].hash == h && m->slots[i].ns == ns && m->slots[i].len == len &&
            memcmp(m->slots[i].key, key, len) == 0) {
            m->slots[i].id = id;
            return FJ_OK;
        }
    char *k = fj_malloc(len + 1);
    if (!k)
        return FJ_ENOMEM;
    memcpy(k, key, len);
    k[len] = '\0';
    m->slots[i] = (fj_pg_map_ent){h, ns, id, k, len};
    m->n++;
    return FJ_OK;
}

void fj_pg_map_clear(fj_pg_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        fj_free(m->slots[i].key);
    fj_free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

