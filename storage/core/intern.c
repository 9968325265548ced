/* storage/core/intern.c — the writers' (namespace, bytes) -> id map (storage/core/intern.h). */
#include "storage/core/intern.h"

#include "alloc.h"

#include <string.h>

/* Eight bytes at a time (a multiply-xorshift mix per word): names are hashed for every process
 * record, so byte-wise FNV showed up in profiles. */
static uint64_t intern_hash(int64_t ns, const unsigned char *key, size_t len)
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

static const char *key_of(const fj_intern_ent *e)
{
    return e->len <= FJ_INTERN_INLINE ? e->key.in : e->key.out;
}

/* The slot holding (ns, key), or the empty slot where it would go. The map has an empty slot. */
static fj_intern_ent *intern_slot(const fj_intern *m, uint64_t h, int64_t ns, const void *key, size_t len)
{
    for (size_t i = (size_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        fj_intern_ent *e = &m->slots[i];
        if (!e->hash || (e->hash == h && e->ns == ns && e->len == len && memcmp(key_of(e), key, len) == 0))
            return e;
    }
}

int64_t fj_intern_get(const fj_intern *m, int64_t ns, const void *key, size_t len)
{
    if (!m->cap)
        return 0;
    const fj_intern_ent *e = intern_slot(m, intern_hash(ns, key, len), ns, key, len);
    return e->hash ? e->id : 0;
}

void fj_intern_clear(fj_intern *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].hash && m->slots[i].len > FJ_INTERN_INLINE)
            fj_free(m->slots[i].key.out);
    fj_free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

static fj_status intern_grow(fj_intern *m)
{
    size_t cap = m->cap ? m->cap * 2 : 256;
    fj_intern_ent *slots = fj_calloc(cap, sizeof *slots);
    if (!slots)
        return FJ_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        const fj_intern_ent *e = &m->slots[i];
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

bool fj_intern_replace(fj_intern *m, int64_t ns, const void *key, size_t len, int64_t id)
{
    if (!m->cap)
        return false;
    fj_intern_ent *e = intern_slot(m, intern_hash(ns, key, len), ns, key, len);
    if (!e->hash)
        return false;
    e->id = id;
    return true;
}

fj_status fj_intern_put(fj_intern *m, int64_t ns, const void *key, size_t len, int64_t id)
{
    if ((m->n + 1) * 2 > m->cap && intern_grow(m) != FJ_OK)
        return FJ_ENOMEM;
    uint64_t h = intern_hash(ns, key, len);
    fj_intern_ent *e = intern_slot(m, h, ns, key, len);
    if (e->hash) {
        e->id = id;
        return FJ_OK;
    }
    *e = (fj_intern_ent){.hash = h, .ns = ns, .id = id, .len = len};
    if (len <= FJ_INTERN_INLINE) {
        if (len)
            memcpy(e->key.in, key, len);
    } else {
        if (!(e->key.out = fj_malloc(len + 1))) {
            e->hash = 0;
            return FJ_ENOMEM;
        }
        memcpy(e->key.out, key, len);
        e->key.out[len] = '\0';
    }
    m->n++;
    return FJ_OK;
}
