/* storage/ts/engine.c — series catalog, append buffers, sealing and merged reads (see storage/ts/engine.h).
 *
 * Memory: a series is one 64-byte struct in an array indexed by id, its key bytes in one shared
 * store, and its open buffer compressed as it fills (storage/ts/obuf.h: about what a sealed chunk
 * takes, 1 to 2 bytes a point for what collectors send), freed on seal. Only a buffer that got a
 * point earlier than its newest becomes plain 16-byte (t, v) pairs, sorted at the seal. The
 * catalog index is open addressing over (id, 32-bit hash) slots, so growing it never touches the
 * keys. */
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np */
#include "storage/ts/engine.h"

#include "storage/ts/obuf.h"
#include "storage/core/grow.h"

#include "alloc.h"
#include "buf.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SEAL_POINTS 720
#define DEFAULT_SEAL_AGE_NS (INT64_C(12) * 3600 * 1000000000)
#define LOCK_SLICE 4096   /* points appended per hold of the exclusive lock */
#define PRESSURE_STEPS 64 /* series visited per point when over max_buffered_points */
#define N_KEY_FIELDS 7

typedef struct pt {
    int64_t t;
    double v;
} pt;

/* A checkpoint of an open buffer as stored (a chunk row); seq 0: none. */
typedef struct checkpoint {
    uint64_t seq;
    int64_t t_last;
} checkpoint;

/* A shared buffer's stored pieces (fj_ts_engine_share): the first is its checkpoint (ck), the others
 * hold the points written after it, up to seq_hi; pieces 0: no share has stored it (a checkpoint
 * taken otherwise, or none). */
typedef struct shared {
    uint64_t seq_hi;    /* the newest piece's seq */
    int64_t t_lo, t_hi; /* the smallest and largest t_last of the pieces */
    uint32_t from;      /* the buffer's points [0, from) are stored with the values they have now */
    uint32_t pieces;
} shared;

/* One handed in a transaction not committed yet, with what the buffer's stored state becomes. */
typedef struct ckpt_new {
    uint32_t id;
    checkpoint c;
    shared sh;
} ckpt_new;

#define LSN_NONE UINT64_MAX /* a buffer without points that only the request log holds */

/* A sealed chunk not yet committed by the caller. Linked in seal order twice: globally (for emit
 * and commit) and per series (for reads). */
typedef struct pending {
    struct pending *next;        /* global FIFO */
    struct pending *next_series; /* this series' chunks, oldest first */
    fj_ts_chunk c;               /* c.blob points at data */
    uint64_t lsn_min;
    checkpoint drop;             /* the checkpoint of the sealed buffer, deleted with this chunk */
    shared drop_sh;              /* and its other shared pieces */
    unsigned char data[];
} pending;

typedef struct series {
    /* The open buffer: while sorted, a compressed fj_ts_obuf (NULL when empty); after a point
     * earlier than the newest, plain pairs of capacity cap. */
    union {
        fj_ts_obuf *ob;
        pt *raw;
    } buf;
    uint32_t n, cap;  /* points buffered; cap: of raw only */
    uint32_t target;  /* seal when n reaches it */
    uint32_t tag;     /* high half of the key hash */
    uint64_t key_off; /* into the key store; key_len 0 means no series has this id */
    uint16_t key_len;
    uint8_t sorted;   /* the buffer is an fj_ts_obuf (strictly increasing time) */
    uint8_t ftype;    /* the field's type (fj_ts_ftype), fixed when the series is made */
    uint32_t next;    /* the series appended right after this one last time (a guess) */
    int64_t t_open;   /* data time when the buffer got its first point */
    uint64_t lsn_min; /* lsn of the first buffered write not in a committed checkpoint; LSN_NONE */
    pending *pend;    /* unsealed chunks, oldest first */
} series;

_Static_assert(sizeof(series) == 64, "a series is one cache line");

typedef struct slot {
    uint32_t id; /* 0: empty */
    uint32_t tag;
} slot;

struct fj_ts_engine {
    pthread_rwlock_t lock;
    fj_ts_opts o;

    series *s; /* indexed by id; s[0] unused */
    size_t s_cap;
    uint32_t next_id;
    size_t n_series;
    fj_ts_catalog cat; /* the caller's, when series are learnt on first use */
    size_t n_loaded;   /* series the catalog handed */
    uint64_t refused;  /* points whose new series admit refused */
    uint64_t conflicts; /* points whose type was not their series' */

    slot *tab;
    size_t tab_mask;

    char *keys;
    size_t keys_len, keys_cap;

    int64_t t_newest; /* data time */
    bool have_time;
    uint64_t lsn;
    /* The smallest lsn_min of the buffers and pending chunks, kept up to date cheaply: appends
     * only lower it (lsn never decreases, so only a first point into an empty engine can), seals
     * carry lsn_min from buffer to chunk, and only a commit that frees chunks can raise it — that
     * marks it stale and the next fj_ts_engine_durable_lsn recomputes it. */
    uint64_t durable_min;
    bool durable_stale;
    uint64_t next_seq;
    size_t buffered;
    size_t buffer_bytes; /* memory of the open buffers */
    uint32_t sweep;    /* age check cursor */
    uint32_t pressure; /* round-robin seal cursor */

    /* waiting for emit / commit */
    uint32_t *newids;
    size_t n_new, new_cap, new_emitted;
    pending *p_head, *p_tail, *p_emit; /* p_emit: first chunk not handed to the sink yet */
    size_t n_pending, pending_bytes;

    uint64_t sealed_chunks, sealed_points, sealed_bytes;

    /* checkpoints: the stored one of each series (indexed by id, ck_cap entries; NULL until the
     * first), those handed in the open transaction, and writes since the last commit of one */
    checkpoint *ck;
    size_t ck_cap;
    ckpt_new *ck_new;
    size_t n_ck_new, ck_new_cap;
    size_t unckpt;
    /* shares: each series' stored pieces (indexed by id, sh_cap entries; NULL until the first share) */
    shared *sh;
    size_t sh_cap;
    fj_ts_drop_range drop_range; /* the last share's, for the seals of shared buffers */

    /* writer scratch */
    fj_ts_codec *codec;
    fj_buf blob;
    int64_t *st;
    double *sv;
    pt *sort_tmp;
    size_t scratch_cap;
};

/* ---- keys ------------------------------------------------------------------------------- */

static inline uint64_t mix(uint64_t a, uint64_t b)
{
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* 16 bytes per multiply, the tail read with overlapping loads (the wyhash construction). */
static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
    const uint64_t s0 = 0xa0761d6478bd642full, s1 = 0xe7037ed1a0b428dbull;
    uint64_t h = mix(n ^ s0, 0x8ebc6af09c88c6e3ull), a, b;
    size_t m = n;
    while (m > 16) {
        h = mix(rd64(p) ^ s0, rd64(p + 8) ^ h);
        p += 16;
        m -= 16;
    }
    if (m >= 8) {
        a = rd64(p);
        b = rd64(p + m - 8);
    } else if (m >= 4) {
        a = rd32(p);
        b = rd32(p + m - 4);
    } else {
        a = m ? (uint64_t)p[0] << 16 | (uint64_t)p[m >> 1] << 8 | p[m - 1] : 0;
        b = 0;
    }
    return mix(mix(a ^ s0, b ^ s1 ^ h), n ^ s1);
}

/* A key as stored: each field as a 2-byte length and its bytes. Returns the length, or 0 when the
 * key is longer than FJ_TS_KEY_MAX. */
#define ENC_KEY_MAX (FJ_TS_KEY_MAX + 2 * N_KEY_FIELDS)

static size_t encode_key(const fj_ts_key *k, unsigned char *out)
{
    const fj_ts_str *f[N_KEY_FIELDS] = {&k->cluster, &k->host,  &k->metric,  &k->type,
                                        &k->type_id, &k->stype, &k->stype_id};
    size_t total = 0, len = 0;
    for (int i = 0; i < N_KEY_FIELDS; i++) {
        total += f[i]->n;
        if (total > FJ_TS_KEY_MAX)
            return 0;
    }
    for (int i = 0; i < N_KEY_FIELDS; i++) {
        out[len++] = (unsigned char)(f[i]->n & 0xff);
        out[len++] = (unsigned char)(f[i]->n >> 8);
        if (f[i]->n)
            memcpy(out + len, f[i]->p, f[i]->n);
        len += f[i]->n;
    }
    return len;
}

static void decode_key(const char *p, fj_ts_key *k)
{
    k->ftype = FJ_TS_FLOAT; /* the caller sets the series' own */
    fj_ts_str *f[N_KEY_FIELDS] = {&k->cluster, &k->host,  &k->metric,  &k->type,
                                  &k->type_id, &k->stype, &k->stype_id};
    const unsigned char *q = (const unsigned char *)p;
    for (int i = 0; i < N_KEY_FIELDS; i++) {
        f[i]->n = (size_t)q[0] | (size_t)q[1] << 8;
        f[i]->p = (const char *)q + 2;
        q += 2 + f[i]->n;
    }
}

/* The id of the encoded key, or 0; *pos is the slot where it would go. */
static uint32_t tab_find(const fj_ts_engine *e, const unsigned char *k, size_t len, uint32_t tag,
                         size_t *pos)
{
    size_t i = tag & e->tab_mask;
    for (;; i = (i + 1) & e->tab_mask) {
        const slot *sl = &e->tab[i];
        if (!sl->id) {
            *pos = i;
            return 0;
        }
        if (sl->tag == tag) {
            const series *s = &e->s[sl->id];
            if (s->key_len == len && !memcmp(e->keys + s->key_off, k, len)) {
                *pos = i;
                return sl->id;
            }
        }
    }
}

static bool tab_grow(fj_ts_engine *e)
{
    size_t ncap = (e->tab_mask + 1) * 2;
    slot *nt = fj_calloc(ncap, sizeof *nt);
    if (!nt)
        return false;
    for (size_t i = 0; i <= e->tab_mask; i++) {
        slot sl = e->tab[i];
        if (!sl.id)
            continue;
        size_t j = sl.tag & (ncap - 1);
        while (nt[j].id)
            j = (j + 1) & (ncap - 1);
        nt[j] = sl;
    }
    fj_free(e->tab);
    e->tab = nt;
    e->tab_mask = ncap - 1;
    return true;
}

/* The initial seal target: between half and all of seal_points, by hash, so that series created
 * at the same time spread their seals. */
static uint32_t first_target(const fj_ts_engine *e, uint32_t tag)
{
    uint32_t sp = e->o.seal_points, half = sp / 2;
    return sp - (uint32_t)((uint64_t)tag * (half + 1) >> 32);
}

/* Adds series id with the encoded key at table position pos (from tab_find). Exclusive lock held. */
static fj_status add_series(fj_ts_engine *e, uint32_t id, const unsigned char *k, size_t len,
                            uint32_t tag, size_t pos, uint8_t ftype)
{
    size_t s_cap = e->s_cap;
    if (!fj_grow(&e->s, &e->s_cap, (size_t)id + 1, sizeof *e->s, 1024))
        return FJ_ENOMEM;
    memset(e->s + s_cap, 0, (e->s_cap - s_cap) * sizeof *e->s);
    if (!fj_grow(&e->keys, &e->keys_cap, e->keys_len + len, 1, 65536))
        return FJ_ENOMEM;
    if ((e->n_series + 1) * 2 > e->tab_mask + 1) {
        if (!tab_grow(e))
            return FJ_ENOMEM;
        size_t i = tag & e->tab_mask;
        while (e->tab[i].id)
            i = (i + 1) & e->tab_mask;
        pos = i;
    }
    series *s = &e->s[id];
    memset(s, 0, sizeof *s);
    memcpy(e->keys + e->keys_len, k, len);
    s->key_off = e->keys_len;
    s->key_len = (uint16_t)len;
    s->tag = tag;
    s->ftype = ftype;
    s->target = first_target(e, tag);
    s->lsn_min = LSN_NONE;
    e->keys_len += len;
    e->tab[pos].id = id;
    e->tab[pos].tag = tag;
    e->n_series++;
    return FJ_OK;
}

/* ---- the caller's catalog (lazy loading) --------------------------------------------------- */

/* The catalog's functions run with the lock released: they read the database, and readers should
 * not wait for that. Only the writer thread changes the engine, so what it found before (a table
 * position) still holds after. */
static fj_status catalog_find(fj_ts_engine *e, const fj_ts_key *key, const unsigned char *k, size_t len,
                              uint32_t tag, size_t pos, uint32_t *id)
{
    uint32_t found = 0;
    uint8_t ftype = key->ftype;
    pthread_rwlock_unlock(&e->lock);
    fj_status st = e->cat.find(e->cat.ud, key, &found, &ftype);
    pthread_rwlock_wrlock(&e->lock);
    if (st != FJ_OK)
        return st;
    if (found == 0 || found == UINT32_MAX || (found < e->s_cap && e->s[found].key_len))
        return FJ_EIO; /* the catalog disagrees with itself: an id of another key */
    if ((st = add_series(e, found, k, len, tag, pos, ftype)) != FJ_OK)
        return st;
    if (found >= e->next_id)
        e->next_id = found + 1;
    e->n_loaded++;
    *id = found;
    return FJ_OK;
}

static bool catalog_admit(fj_ts_engine *e, const fj_ts_key *key)
{
    pthread_rwlock_unlock(&e->lock);
    bool ok = e->cat.admit(e->cat.ud, key);
    pthread_rwlock_wrlock(&e->lock);
    return ok;
}

/* Series id, which the engine does not hold, from the catalog's key. Exclusive lock held. */
static fj_status catalog_load_id(fj_ts_engine *e, uint32_t id)
{
    if (!e->cat.key || id == 0 || id == UINT32_MAX)
        return FJ_ENOTFOUND;
    fj_ts_key key;
    pthread_rwlock_unlock(&e->lock);
    fj_status st = e->cat.key(e->cat.ud, id, &key);
    pthread_rwlock_wrlock(&e->lock);
    if (st != FJ_OK)
        return st;
    unsigned char k[ENC_KEY_MAX];
    size_t len = encode_key(&key, k);
    if (!len)
        return FJ_ENOTFOUND;
    uint32_t tag = (uint32_t)(hash_bytes(k, len) >> 32);
    size_t pos;
    if (tab_find(e, k, len, tag, &pos))
        return FJ_ENOTFOUND; /* the key is held under another id */
    if ((st = add_series(e, id, k, len, tag, pos, key.ftype)) != FJ_OK)
        return st;
    if (id >= e->next_id)
        e->next_id = id + 1;
    e->n_loaded++;
    return FJ_OK;
}

/* Lookup or create under the exclusive lock. hint: a likely id (0: none), checked first:
 * collectors send a host's metrics in the same order every interval, so the series that followed
 * the previous one last time is usually right, and checking it costs no hash and no random
 * access into the index. */
static fj_status get_locked(fj_ts_engine *e, const fj_ts_key *key, bool create, uint32_t hint,
                            uint32_t *id)
{
    unsigned char k[ENC_KEY_MAX];
    size_t len = encode_key(key, k);
    if (!len)
        return FJ_EINVAL;
    if (hint && hint < e->s_cap && e->s[hint].key_len == len &&
        !memcmp(e->keys + e->s[hint].key_off, k, len)) {
        *id = hint;
        return FJ_OK;
    }
    uint64_t h = hash_bytes(k, len);
    uint32_t tag = (uint32_t)(h >> 32);
    size_t pos;
    uint32_t found = tab_find(e, k, len, tag, &pos);
    if (found) {
        *id = found;
        return FJ_OK;
    }
    if (!create)
        return FJ_ENOTFOUND;
    if (e->cat.find) {
        fj_status fs = catalog_find(e, key, k, len, tag, pos, id);
        if (fs != FJ_ENOTFOUND)
            return fs;
    }
    if (e->cat.admit && !catalog_admit(e, key)) {
        *id = 0;
        return FJ_ELIMITED;
    }
    if (e->next_id == 0) /* wrapped: 4 billion series */
        return FJ_ENOMEM;
    if (!fj_grow(&e->newids, &e->new_cap, e->n_new + 1, sizeof *e->newids, 256))
        return FJ_ENOMEM;
    uint32_t nid = e->next_id;
    fj_status st = add_series(e, nid, k, len, tag, pos, key->ftype);
    if (st != FJ_OK)
        return st;
    e->next_id++;
    e->newids[e->n_new++] = nid;
    *id = nid;
    return FJ_OK;
}

/* ---- open / close ----------------------------------------------------------------------- */

fj_status fj_ts_engine_open(const fj_ts_opts *opts, fj_ts_engine **out)
{
    *out = NULL;
    fj_ts_opts o = opts ? *opts : (fj_ts_opts){0};
    if (!o.seal_points)
        o.seal_points = DEFAULT_SEAL_POINTS;
    if (!o.seal_age_ns)
        o.seal_age_ns = DEFAULT_SEAL_AGE_NS;
    if (!o.seq_start)
        o.seq_start = 1;
    if (o.seal_age_ns < 0)
        o.seal_age_ns = -1; /* never */
    if (o.seal_points > FJ_TS_CHUNK_MAX_POINTS || o.seq_start >= UINT64_C(1) << 62)
        return FJ_EINVAL;
    fj_ts_engine *e = fj_calloc(1, sizeof *e);
    if (!e)
        return FJ_ENOMEM;
    e->o = o;
    e->next_id = 1;
    e->next_seq = o.seq_start;
    e->durable_min = UINT64_MAX; /* nothing buffered yet */
    e->tab_mask = 1023;
    e->tab = fj_calloc(e->tab_mask + 1, sizeof *e->tab);
    e->codec = fj_ts_codec_create();
    fj_buf_init(&e->blob, SIZE_MAX);
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    int rc = pthread_rwlock_init(&e->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    if (rc != 0 || !e->tab || !e->codec) {
        if (rc == 0)
            pthread_rwlock_destroy(&e->lock);
        fj_free(e->tab);
        fj_ts_codec_destroy(e->codec);
        fj_free(e);
        return FJ_ENOMEM;
    }
    *out = e;
    return FJ_OK;
}

void fj_ts_engine_close(fj_ts_engine *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->s_cap; i++)
        fj_free(e->s[i].buf.raw); /* either kind of buffer: one allocation */
    for (pending *p = e->p_head, *nx; p; p = nx) {
        nx = p->next;
        fj_free(p);
    }
    fj_free(e->s);
    fj_free(e->tab);
    fj_free(e->keys);
    fj_free(e->newids);
    fj_free(e->ck);
    fj_free(e->ck_new);
    fj_free(e->sh);
    fj_free(e->st);
    fj_free(e->sv);
    fj_free(e->sort_tmp);
    fj_buf_free(&e->blob);
    fj_ts_codec_destroy(e->codec);
    pthread_rwlock_destroy(&e->lock);
    fj_free(e);
}

/* ---- catalog ---------------------------------------------------------------------------- */

fj_status fj_ts_engine_load_series(fj_ts_engine *e, uint32_t id, const fj_ts_key *key)
{
    if (id == 0 || id == UINT32_MAX)
        return FJ_EINVAL;
    unsigned char k[ENC_KEY_MAX];
    size_t len = encode_key(key, k);
    if (!len)
        return FJ_EINVAL;
    uint32_t tag = (uint32_t)(hash_bytes(k, len) >> 32);
    pthread_rwlock_wrlock(&e->lock);
    size_t pos;
    fj_status st;
    if (tab_find(e, k, len, tag, &pos) || (id < e->s_cap && e->s[id].key_len)) {
        st = FJ_ECONFLICT;
    } else {
        st = add_series(e, id, k, len, tag, pos, key->ftype);
        if (st == FJ_OK && id >= e->next_id)
            e->next_id = id + 1;
    }
    pthread_rwlock_unlock(&e->lock);
    return st;
}

void fj_ts_engine_set_catalog(fj_ts_engine *e, const fj_ts_catalog *cat, uint32_t next_id)
{
    pthread_rwlock_wrlock(&e->lock);
    e->cat = cat ? *cat : (fj_ts_catalog){0};
    if (next_id > e->next_id)
        e->next_id = next_id;
    pthread_rwlock_unlock(&e->lock);
}

bool fj_ts_ftype_fits(uint8_t stored, uint8_t sent)
{
    return stored == sent || (stored == FJ_TS_UNTYPED && sent != FJ_TS_STRING);
}

fj_status fj_ts_series_get(fj_ts_engine *e, const fj_ts_key *key, bool create, uint32_t *id)
{
    pthread_rwlock_wrlock(&e->lock);
    fj_status st = get_locked(e, key, create, 0, id);
    if (st == FJ_OK && !fj_ts_ftype_fits(e->s[*id].ftype, key->ftype))
        st = FJ_ECONFLICT;
    pthread_rwlock_unlock(&e->lock);
    return st;
}

int fj_ts_series_ftype(fj_ts_engine *e, const fj_ts_key *key)
{
    unsigned char k[ENC_KEY_MAX];
    size_t len = encode_key(key, k);
    if (!len)
        return -1;
    uint32_t tag = (uint32_t)(hash_bytes(k, len) >> 32);
    size_t pos;
    pthread_rwlock_rdlock(&e->lock);
    uint32_t found = tab_find(e, k, len, tag, &pos);
    int ft = found ? e->s[found].ftype : -1;
    pthread_rwlock_unlock(&e->lock);
    return ft;
}

fj_status fj_ts_series_find(fj_ts_engine *e, const fj_ts_key *key, uint32_t *id)
{
    unsigned char k[ENC_KEY_MAX];
    size_t len = encode_key(key, k);
    if (!len)
        return FJ_ENOTFOUND;
    uint32_t tag = (uint32_t)(hash_bytes(k, len) >> 32);
    size_t pos;
    pthread_rwlock_rdlock(&e->lock);
    uint32_t found = tab_find(e, k, len, tag, &pos);
    bool fits = found && fj_ts_ftype_fits(e->s[found].ftype, key->ftype);
    pthread_rwlock_unlock(&e->lock);
    if (!found)
        return FJ_ENOTFOUND;
    *id = found;
    return fits ? FJ_OK : FJ_ECONFLICT;
}

fj_status fj_ts_series_key(fj_ts_engine *e, uint32_t id, char *buf, size_t cap, fj_ts_key *out)
{
    fj_status st = FJ_OK;
    pthread_rwlock_rdlock(&e->lock);
    if (id == 0 || id >= e->s_cap || !e->s[id].key_len) {
        st = FJ_ENOTFOUND;
        goto out;
    }
    fj_ts_key k;
    decode_key(e->keys + e->s[id].key_off, &k);
    fj_ts_str *src[N_KEY_FIELDS] = {&k.cluster, &k.host,  &k.metric,  &k.type,
                                    &k.type_id, &k.stype, &k.stype_id};
    fj_ts_str *dst[N_KEY_FIELDS] = {&out->cluster, &out->host,  &out->metric,  &out->type,
                                    &out->type_id, &out->stype, &out->stype_id};
    size_t need = 0;
    for (int i = 0; i < N_KEY_FIELDS; i++)
        need += src[i]->n + 1;
    if (need > cap) {
        st = FJ_ETOOBIG;
        goto out;
    }
    out->ftype = e->s[id].ftype;
    for (int i = 0; i < N_KEY_FIELDS; i++) {
        memcpy(buf, src[i]->p, src[i]->n);
        buf[src[i]->n] = '\0';
        dst[i]->p = buf;
        dst[i]->n = src[i]->n;
        buf += src[i]->n + 1;
    }
out:
    pthread_rwlock_unlock(&e->lock);
    return st;
}

/* ---- sealing ---------------------------------------------------------------------------- */

static bool scratch(fj_ts_engine *e, size_t n)
{
    return fj_grow_cols(&e->scratch_cap, n, 1024, 3, (void *[]){&e->st, &e->sv, &e->sort_tmp},
                        (size_t[]){sizeof *e->st, sizeof *e->sv, sizeof *e->sort_tmp});
}

/* Stable sort by time (bottom-up merge sort), then keep the last of equal times. Returns the new
 * length. tmp has room for n. */
static size_t sort_dedup(pt *a, size_t n, pt *tmp)
{
    pt *src = a, *dst = tmp;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = src[j].t < src[i].t ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        pt *x = src;
        src = dst;
        dst = x;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && a[m - 1].t == a[i].t)
            a[m - 1] = a[i];
        else
            a[m++] = a[i];
    }
    return m;
}

/* Encodes t[0..n), v[0..n) of series id as one pending chunk. Exclusive lock held. */
static fj_status seal_run(fj_ts_engine *e, uint32_t id, const int64_t *t, const double *v, size_t n)
{
    fj_buf_reset(&e->blob);
    fj_status st = fj_ts_chunk_encode(e->codec, t, v, n, &e->blob);
    if (st != FJ_OK)
        return st;
    pending *p = fj_malloc(sizeof *p + e->blob.len);
    if (!p)
        return FJ_ENOMEM;
    series *s = &e->s[id];
    memcpy(p->data, e->blob.data, e->blob.len);
    p->next = p->next_series = NULL;
    p->c = (fj_ts_chunk){.series_id = id, .count = (uint32_t)n, .t_first = t[0],
                         .t_last = t[n - 1], .seq = e->next_seq++, .blob = p->data,
                         .len = e->blob.len};
    p->lsn_min = s->lsn_min;
    p->drop = (checkpoint){0};
    p->drop_sh = (shared){0};
    if (id < e->ck_cap && e->ck[id].seq) { /* the first chunk of the seal takes the checkpoint away */
        p->drop = e->ck[id];
        e->ck[id] = (checkpoint){0};
        if (id < e->sh_cap) { /* with the pieces shared after it */
            p->drop_sh = e->sh[id];
            e->sh[id] = (shared){0};
        }
    }
    if (e->p_tail)
        e->p_tail->next = p;
    else
        e->p_head = p;
    e->p_tail = p;
    if (!e->p_emit)
        e->p_emit = p;
    pending **tail = &s->pend; /* short: chunks leave at the next commit */
    while (*tail)
        tail = &(*tail)->next_series;
    *tail = p;
    e->n_pending++;
    e->pending_bytes += e->blob.len;
    e->sealed_chunks++;
    e->sealed_points += n;
    e->sealed_bytes += e->blob.len;
    return FJ_OK;
}

/* A seal failed after some of its chunks: they go again (the last ones of both lists, not emitted
 * yet, since emit never runs inside an append), so the buffer stays whole. */
static void unseal(fj_ts_engine *e, series *s, pending *tail_before, pending *emit_before)
{
    pending *p = tail_before ? tail_before->next : e->p_head;
    pending **sp = &s->pend;
    while (*sp && *sp != p)
        sp = &(*sp)->next_series;
    *sp = NULL;
    for (pending *nx; p; p = nx) {
        nx = p->next;
        if (p->drop.seq)
            e->ck[p->c.series_id] = p->drop;
        if (p->drop_sh.pieces)
            e->sh[p->c.series_id] = p->drop_sh;
        e->n_pending--;
        e->pending_bytes -= p->c.len;
        e->sealed_chunks--;
        e->sealed_points -= p->c.count;
        e->sealed_bytes -= p->c.len;
        fj_free(p);
    }
    if (tail_before)
        tail_before->next = NULL;
    else
        e->p_head = NULL;
    e->p_tail = tail_before;
    e->p_emit = emit_before;
}

static size_t buf_bytes(const series *s)
{
    return s->sorted ? fj_ts_obuf_bytes(s->buf.ob) : (size_t)s->cap * sizeof(pt);
}

/* The points of s's buffer in time order, one per timestamp, into the scratch arrays e->st and
 * e->sv (room made by scratch()); an unsorted buffer is sorted and deduplicated in place first.
 * Returns how many. Exclusive lock held. Sealing and checkpointing both start here. */
static size_t buffer_points(fj_ts_engine *e, series *s)
{
    size_t n = s->n;
    if (s->sorted) {
        fj_ts_obuf_decode(s->buf.ob, e->st, e->sv);
        return n;
    }
    n = sort_dedup(s->buf.raw, n, e->sort_tmp);
    e->buffered -= s->n - n;
    s->n = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        e->st[i] = s->buf.raw[i].t;
        e->sv[i] = s->buf.raw[i].v;
    }
    return n;
}

/* The longest gap between two points of one chunk, in ns (none: no limit). */
static uint64_t seal_gap(const fj_ts_engine *e)
{
    return e->o.seal_age_ns > 0 ? (uint64_t)e->o.seal_age_ns : UINT64_MAX;
}

/* Seals the buffer of series id into one chunk per stretch without a gap over seal_age_ns.
 * Exclusive lock held. On failure the points stay buffered. */
static fj_status seal(fj_ts_engine *e, uint32_t id)
{
    series *s = &e->s[id];
    if (s->n == 0)
        return FJ_OK;
    if (!scratch(e, s->n))
        return FJ_ENOMEM;
    size_t n = buffer_points(e, s);
    pending *tail_before = e->p_tail, *emit_before = e->p_emit;
    uint64_t gap = seal_gap(e);
    size_t start = 0;
    for (size_t i = 1; i <= n; i++) {
        if (i < n && (uint64_t)e->st[i] - (uint64_t)e->st[i - 1] <= gap)
            continue;
        fj_status st = seal_run(e, id, e->st + start, e->sv + start, i - start);
        if (st != FJ_OK) {
            unseal(e, s, tail_before, emit_before);
            return st;
        }
        start = i;
    }
    e->buffered -= n;
    e->buffer_bytes -= buf_bytes(s);
    fj_free(s->buf.raw); /* either kind: one allocation */
    s->buf.ob = NULL;
    s->n = s->cap = 0;
    s->sorted = 1;
    s->target = e->o.seal_points;
    s->lsn_min = LSN_NONE;
    return FJ_OK;
}

/* ---- appends ---------------------------------------------------------------------------- */

/* Lets waiting readers in during a long write: without the yield the writer would usually take
 * the lock back before a woken reader runs. */
static void relock(fj_ts_engine *e)
{
    pthread_rwlock_unlock(&e->lock);
    sched_yield();
    pthread_rwlock_wrlock(&e->lock);
}

static inline bool aged(const fj_ts_engine *e, const series *s)
{
    return e->o.seal_age_ns > 0 && (uint64_t)e->t_newest - (uint64_t)s->t_open >= (uint64_t)e->o.seal_age_ns;
}

static inline bool over_budget(const fj_ts_engine *e)
{
    return (e->o.max_buffered_points && e->buffered > e->o.max_buffered_points) ||
           (e->o.max_buffered_bytes && e->buffer_bytes > e->o.max_buffered_bytes);
}

/* The per-point share of the background work: one series checked for age, and round-robin seals
 * while over the memory limit. A failed seal here is left for later. */
static void housekeeping(fj_ts_engine *e)
{
    if (e->next_id > 1) {
        uint32_t i = e->sweep + 1 < e->next_id ? e->sweep + 1 : 1;
        e->sweep = i;
        if (i < e->s_cap && e->s[i].n && aged(e, &e->s[i]))
            (void)seal(e, i);
    }
    for (int k = 0; k < PRESSURE_STEPS && over_budget(e); k++) {
        uint32_t i = e->pressure + 1 < e->next_id ? e->pressure + 1 : 1;
        e->pressure = i;
        if (i < e->s_cap && e->s[i].n)
            (void)seal(e, i);
    }
}

/* A point earlier than the buffer's newest: the compressed buffer becomes plain pairs, sorted at
 * the seal. Rare (late or re-sent data), so the memory it costs is not a concern. */
static fj_status to_raw(fj_ts_engine *e, series *s)
{
    uint32_t cap = s->n * 2 > 8 ? s->n * 2 : 8;
    if (!scratch(e, s->n))
        return FJ_ENOMEM;
    pt *raw = fj_malloc((size_t)cap * sizeof *raw);
    if (!raw)
        return FJ_ENOMEM;
    fj_ts_obuf_decode(s->buf.ob, e->st, e->sv);
    for (uint32_t i = 0; i < s->n; i++)
        raw[i] = (pt){e->st[i], e->sv[i]};
    e->buffer_bytes += (size_t)cap * sizeof *raw;
    e->buffer_bytes -= fj_ts_obuf_bytes(s->buf.ob);
    fj_ts_obuf_free(s->buf.ob);
    s->buf.raw = raw;
    s->cap = cap;
    s->sorted = 0;
    return FJ_OK;
}

/* Adds (t, v) to the buffer; *added false when it replaced the newest point's value, *same when
 * that value was already the newest point's (a re-sent point: nothing changes). */
static fj_status buffer_point(fj_ts_engine *e, series *s, int64_t t, double v, bool *added, bool *same)
{
    *added = true;
    *same = false;
    if (s->n == 0) {
        fj_ts_obuf *b = fj_ts_obuf_new(t, v);
        if (!b)
            return FJ_ENOMEM;
        s->buf.ob = b;
        s->sorted = 1;
        s->n = 1;
        e->buffer_bytes += fj_ts_obuf_bytes(b);
        return FJ_OK;
    }
    if (s->sorted) {
        int64_t last = fj_ts_obuf_last_t(s->buf.ob);
        if (t == last) { /* the common duplicate: replace in place */
            double old = fj_ts_obuf_last_v(s->buf.ob);
            *same = memcmp(&old, &v, sizeof v) == 0;
            fj_ts_obuf_replace_last(s->buf.ob, v);
            *added = false;
            return FJ_OK;
        }
        if (t > last) {
            size_t before = fj_ts_obuf_bytes(s->buf.ob);
            if (fj_ts_obuf_append(&s->buf.ob, t, v) != FJ_OK)
                return FJ_ENOMEM;
            e->buffer_bytes += fj_ts_obuf_bytes(s->buf.ob) - before;
            s->n++;
            return FJ_OK;
        }
        fj_status st = to_raw(e, s);
        if (st != FJ_OK)
            return st;
    } else if (t == s->buf.raw[s->n - 1].t) {
        *same = memcmp(&s->buf.raw[s->n - 1].v, &v, sizeof v) == 0;
        s->buf.raw[s->n - 1].v = v;
        *added = false;
        return FJ_OK;
    }
    if (s->n == s->cap) {
        uint32_t nc = s->cap * 2;
        if (s->cap < s->target && nc > s->target)
            nc = s->target;
        if (nc <= s->cap) /* target below the size, or overflowing it after failed seals */
            nc = s->cap + 8;
        pt *nb = fj_realloc(s->buf.raw, (size_t)nc * sizeof *nb);
        if (!nb)
            return FJ_ENOMEM;
        e->buffer_bytes += (size_t)(nc - s->cap) * sizeof *nb;
        s->buf.raw = nb;
        s->cap = nc;
    }
    s->buf.raw[s->n++] = (pt){t, v};
    return FJ_OK;
}

static fj_status append_one(fj_ts_engine *e, uint32_t id, int64_t t, double v)
{
    series *s = &e->s[id];
    if (!e->have_time || t > e->t_newest) {
        e->t_newest = t;
        e->have_time = true;
    }
    bool first = s->n == 0, added, same;
    fj_status st = buffer_point(e, s, t, v, &added, &same);
    if (st != FJ_OK)
        return st;
    if (same) /* a re-sent point: the buffer holds it as it was, nothing more to store or share */
        return FJ_OK;
    /* a replaced value is a write too: until checkpointed, only the request log holds it */
    if (s->lsn_min == LSN_NONE) {
        s->lsn_min = e->lsn;
        if (e->lsn < e->durable_min)
            e->durable_min = e->lsn;
    }
    e->unckpt++;
    if (!added) {
        /* the newest point got a new value: a share hands it again */
        if (id < e->sh_cap && e->sh[id].from >= s->n)
            e->sh[id].from = s->n - 1;
        return FJ_OK;
    }
    if (first)
        s->t_open = e->t_newest;
    e->buffered++;
    /* a seal that fails keeps the points and is retried by the next append here; if memory
     * stays short, the buffer's own growth reports it */
    if (s->n >= s->target || aged(e, s))
        (void)seal(e, id);
    return FJ_OK;
}

/* Points resolved to series before any of them is appended. Consecutive points almost always go
 * to different series, and the newest point of each buffer is read by append_one: resolving a
 * batch first lets those cache misses overlap (prefetch) instead of stalling one by one, which
 * was most of the writer's time at a few tens of thousands of series. */
enum { RESOLVE_BATCH = 32 }; /* divides LOCK_SLICE */
enum { TAIL_AHEAD = 8 };     /* points between a buffer's tail prefetch and its append */

fj_status fj_ts_append(fj_ts_engine *e, const fj_ts_point *pts, size_t n, uint32_t *ids_out, size_t *n_done,
                       fj_err *err)
{
    fj_status st = FJ_OK;
    size_t i = 0;
    uint32_t prev = 0;
    pthread_rwlock_wrlock(&e->lock);
    while (i < n && st == FJ_OK) {
        if (i && i % LOCK_SLICE == 0) {
            relock(e);
        }
        size_t m = n - i < RESOLVE_BATCH ? n - i : RESOLVE_BATCH, got = 0;
        uint32_t ids[RESOLVE_BATCH];
        bool clash[RESOLVE_BATCH];
        for (; got < m; got++) {
            clash[got] = false;
            st = get_locked(e, &pts[i + got].key, true, prev ? e->s[prev].next : 0, &ids[got]);
            if (st == FJ_ELIMITED) { /* refused by admit: the point is dropped, the rest goes on */
                st = FJ_OK;
                continue;
            }
            if (st != FJ_OK)
                break;
            if (!fj_ts_ftype_fits(e->s[ids[got]].ftype, pts[i + got].key.ftype)) { /* dropped too */
                clash[got] = true;
                ids[got] = 0;
                continue;
            }
            if (prev)
                e->s[prev].next = ids[got];
            prev = ids[got];
            const series *s = &e->s[prev];
            if (s->n) /* the newest point: an obuf's header, a raw buffer's end */
                __builtin_prefetch(s->sorted ? (const void *)s->buf.ob : (const void *)&s->buf.raw[s->n - 1], 1);
        }
        size_t done = 0;
        for (; done < got; done++) {
            /* The header prefetched above has arrived by now: fetch the byte the append of a
             * point a few ahead will write, a second cache miss per point otherwise. */
            if (done + TAIL_AHEAD < got) {
                const series *a = &e->s[ids[done + TAIL_AHEAD]];
                if (a->n > 1 && a->sorted)
                    __builtin_prefetch(fj_ts_obuf_tail(a->buf.ob), 1);
            }
            const fj_ts_point *p = &pts[i + done];
            if (!ids[done]) {
                if (clash[done])
                    e->conflicts++;
                else
                    e->refused++;
                if (ids_out)
                    ids_out[i + done] = 0;
                continue;
            }
            fj_status as = append_one(e, ids[done], p->t, p->v);
            if (as != FJ_OK) {
                st = as;
                break;
            }
            if (ids_out)
                ids_out[i + done] = ids[done];
            housekeeping(e);
        }
        i += done;
    }
    if (st != FJ_OK)
        fj_err_set(err, st, NULL, "point %zu: %s", i,
                   st == FJ_EINVAL   ? "series key longer than 1024 bytes"
                   : st == FJ_ENOMEM ? "out of memory"
                                     : "looking a series up in the catalog failed");
    pthread_rwlock_unlock(&e->lock);
    if (n_done)
        *n_done = i;
    return st;
}

fj_status fj_ts_append_ids(fj_ts_engine *e, const uint32_t *ids, const int64_t *t,
                           const double *v, size_t n, size_t *n_done)
{
    fj_status st = FJ_OK;
    size_t i = 0;
    pthread_rwlock_wrlock(&e->lock);
    for (; i < n; i++) {
        if (i && i % LOCK_SLICE == 0) {
            relock(e);
        }
        uint32_t id = ids[i];
        if ((id == 0 || id >= e->s_cap || !e->s[id].key_len) && (st = catalog_load_id(e, id)) != FJ_OK)
            break;
        st = append_one(e, id, t[i], v[i]);
        if (st != FJ_OK)
            break;
        housekeeping(e);
    }
    pthread_rwlock_unlock(&e->lock);
    if (n_done)
        *n_done = i;
    return st;
}

fj_status fj_ts_engine_flush(fj_ts_engine *e)
{
    fj_status st = FJ_OK;
    pthread_rwlock_wrlock(&e->lock);
    for (uint32_t i = 1; i < e->next_id && i < e->s_cap; i++) {
        if (i % LOCK_SLICE == 0) {
            relock(e);
        }
        if (e->s[i].n) {
            fj_status r = seal(e, i);
            if (r != FJ_OK)
                st = r;
        }
    }
    pthread_rwlock_unlock(&e->lock);
    return st;
}

/* ---- emit / commit ---------------------------------------------------------------------- */

void fj_ts_engine_set_lsn(fj_ts_engine *e, uint64_t lsn)
{
    e->lsn = lsn;
}

uint64_t fj_ts_engine_durable_lsn(fj_ts_engine *e)
{
    if (!e->durable_stale)
        return e->durable_min;
    uint64_t m = UINT64_MAX;
    for (size_t i = 1; i < e->s_cap && i < e->next_id; i++)
        if (e->s[i].n && e->s[i].lsn_min < m) /* LSN_NONE never is */
            m = e->s[i].lsn_min;
    for (const pending *p = e->p_head; p; p = p->next)
        if (p->lsn_min < m)
            m = p->lsn_min;
    e->durable_min = m;
    e->durable_stale = false;
    return m;
}

fj_status fj_ts_engine_emit(fj_ts_engine *e, const fj_ts_sink *sink)
{
    /* only the writer changes these lists, so no lock is needed to walk them */
    while (e->new_emitted < e->n_new) {
        uint32_t id = e->newids[e->new_emitted];
        fj_ts_key k;
        decode_key(e->keys + e->s[id].key_off, &k);
        k.ftype = e->s[id].ftype;
        fj_status st = sink->series ? sink->series(sink->ud, id, &k) : FJ_OK;
        if (st != FJ_OK)
            return st;
        e->new_emitted++;
    }
    while (e->p_emit) {
        const checkpoint *d = &e->p_emit->drop;
        const shared *h = &e->p_emit->drop_sh;
        if (d->seq && h->pieces > 1 && e->drop_range) {
            fj_status st = e->drop_range(sink->ud, e->p_emit->c.series_id, h->t_lo, h->t_hi, d->seq, h->seq_hi);
            if (st != FJ_OK)
                return st;
        } else if (d->seq && sink->drop) {
            fj_status st = sink->drop(sink->ud, e->p_emit->c.series_id, d->t_last, d->seq);
            if (st != FJ_OK)
                return st;
        }
        fj_status st = sink->chunk ? sink->chunk(sink->ud, &e->p_emit->c) : FJ_OK;
        if (st != FJ_OK)
            return st;
        e->p_emit = e->p_emit->next;
    }
    return FJ_OK;
}

void fj_ts_engine_committed(fj_ts_engine *e)
{
    pthread_rwlock_wrlock(&e->lock);
    if (e->new_emitted) /* newids is NULL until the first series is created */
        memmove(e->newids, e->newids + e->new_emitted, (e->n_new - e->new_emitted) * sizeof *e->newids);
    e->n_new -= e->new_emitted;
    e->new_emitted = 0;
    while (e->p_head && e->p_head != e->p_emit) {
        pending *p = e->p_head;
        series *s = &e->s[p->c.series_id];
        /* chunks are committed in seal order, so p is the oldest of its series */
        s->pend = p->next_series;
        e->p_head = p->next;
        e->n_pending--;
        e->pending_bytes -= p->c.len;
        fj_free(p);
        e->durable_stale = true;
    }
    if (!e->p_head)
        e->p_tail = NULL;
    for (size_t i = 0; i < e->n_ck_new; i++) { /* no write came between the checkpoint and here */
        const ckpt_new *c = &e->ck_new[i];
        e->ck[c->id] = c->c;
        if (c->id < e->sh_cap)
            e->sh[c->id] = c->sh;
        e->s[c->id].lsn_min = LSN_NONE;
        e->durable_stale = true;
    }
    if (e->n_ck_new)
        e->unckpt = 0;
    e->n_ck_new = 0;
    pthread_rwlock_unlock(&e->lock);
}

void fj_ts_engine_rolled_back(fj_ts_engine *e)
{
    e->new_emitted = 0;
    e->p_emit = e->p_head;
    e->n_ck_new = 0;
}

/* Room for the checkpoints of every series and one more new one. Exclusive lock held. */
static bool ck_room(fj_ts_engine *e)
{
    if (e->ck_cap < e->s_cap) {
        checkpoint *nc = fj_realloc(e->ck, e->s_cap * sizeof *nc);
        if (!nc)
            return false;
        memset(nc + e->ck_cap, 0, (e->s_cap - e->ck_cap) * sizeof *nc);
        e->ck = nc;
        e->ck_cap = e->s_cap;
    }
    return fj_grow(&e->ck_new, &e->ck_new_cap, e->n_ck_new + 1, sizeof *e->ck_new, 1024);
}

/* Room for the shared state of every series. Exclusive lock held. */
static bool sh_room(fj_ts_engine *e)
{
    if (e->sh_cap < e->s_cap) {
        shared *nh = fj_realloc(e->sh, e->s_cap * sizeof *nh);
        if (!nh)
            return false;
        memset(nh + e->sh_cap, 0, (e->s_cap - e->sh_cap) * sizeof *nh);
        e->sh = nh;
        e->sh_cap = e->s_cap;
    }
    return true;
}

/* Hands the sink the deletion of what is stored of series id's buffer: its checkpoint, and the
 * pieces shared after it. */
static fj_status drop_stored(fj_ts_engine *e, uint32_t id, const fj_ts_sink *sink)
{
    const checkpoint *c = &e->ck[id];
    if (!c->seq)
        return FJ_OK;
    const shared *h = id < e->sh_cap ? &e->sh[id] : NULL;
    if (h && h->pieces > 1)
        return e->drop_range(sink->ud, id, h->t_lo, h->t_hi, c->seq, h->seq_hi);
    return sink->drop(sink->ud, id, c->t_last, c->seq);
}

/* The checkpoint of series id's buffer, handed to the sink; a buffer with a gap longer than the
 * seal age is sealed instead (a chunk never spans one). Exclusive lock held. */
static fj_status checkpoint_one(fj_ts_engine *e, uint32_t id, const fj_ts_sink *sink)
{
    series *s = &e->s[id];
    if (!scratch(e, s->n) || !ck_room(e))
        return FJ_ENOMEM;
    size_t n = buffer_points(e, s);
    uint64_t gap = seal_gap(e);
    for (size_t i = 1; i < n; i++)
        if ((uint64_t)e->st[i] - (uint64_t)e->st[i - 1] > gap)
            return seal(e, id); /* emitted with the next transaction */
    fj_buf_reset(&e->blob);
    fj_status st = fj_ts_chunk_encode(e->codec, e->st, e->sv, n, &e->blob);
    if (st != FJ_OK)
        return st;
    fj_ts_chunk c = {.series_id = id, .count = (uint32_t)n, .t_first = e->st[0], .t_last = e->st[n - 1],
                     .seq = e->next_seq++, .blob = e->blob.data, .len = e->blob.len};
    if ((st = drop_stored(e, id, sink)) != FJ_OK)
        return st;
    if ((st = sink->chunk(sink->ud, &c)) != FJ_OK)
        return st;
    e->ck_new[e->n_ck_new++] = (ckpt_new){id, {c.seq, c.t_last}, {c.seq, c.t_last, c.t_last, (uint32_t)n, 1}};
    return FJ_OK;
}

/* The share of series id's buffer: a piece of the points written since its last share when there
 * is one to add to, else (a first share, too many pieces, a buffer of plain pairs) a checkpoint
 * that replaces them all. Exclusive lock held. */
static fj_status share_one(fj_ts_engine *e, uint32_t id, const fj_ts_sink *sink)
{
    series *s = &e->s[id];
    if (!scratch(e, s->n) || !ck_room(e) || !sh_room(e))
        return FJ_ENOMEM;
    const shared *h = &e->sh[id];
    if (!s->sorted || !e->ck[id].seq || !h->pieces || h->pieces >= FJ_TS_SHARE_PIECES || h->from >= s->n)
        return checkpoint_one(e, id, sink);
    size_t n = s->n;
    fj_ts_obuf_decode(s->buf.ob, e->st, e->sv);
    uint64_t gap = seal_gap(e);
    for (size_t i = 1; i < n; i++)
        if ((uint64_t)e->st[i] - (uint64_t)e->st[i - 1] > gap)
            return seal(e, id); /* emitted with the next transaction */
    size_t from = h->from;
    fj_buf_reset(&e->blob);
    fj_status st = fj_ts_chunk_encode(e->codec, e->st + from, e->sv + from, n - from, &e->blob);
    if (st != FJ_OK)
        return st;
    fj_ts_chunk c = {.series_id = id, .count = (uint32_t)(n - from), .t_first = e->st[from],
                     .t_last = e->st[n - 1], .seq = e->next_seq++, .blob = e->blob.data, .len = e->blob.len};
    if ((st = sink->chunk(sink->ud, &c)) != FJ_OK)
        return st;
    shared nh = {c.seq, c.t_last < h->t_lo ? c.t_last : h->t_lo, c.t_last > h->t_hi ? c.t_last : h->t_hi,
                 (uint32_t)n, h->pieces + 1};
    e->ck_new[e->n_ck_new++] = (ckpt_new){id, e->ck[id], nh};
    return FJ_OK;
}

fj_status fj_ts_engine_share(fj_ts_engine *e, const fj_ts_sink *sink, fj_ts_drop_range drop_range)
{
    if (!sink->chunk || !sink->drop || !drop_range)
        return FJ_EINVAL;
    e->drop_range = drop_range;
    fj_status st = FJ_OK;
    e->n_ck_new = 0; /* a share handed before and not committed is handed again */
    pthread_rwlock_wrlock(&e->lock);
    for (uint32_t i = 1; i < e->next_id && i < e->s_cap && st == FJ_OK; i++) {
        if (i % LOCK_SLICE == 0)
            relock(e);
        if (e->s[i].n && e->s[i].lsn_min != LSN_NONE)
            st = share_one(e, i, sink);
    }
    pthread_rwlock_unlock(&e->lock);
    return st;
}

fj_status fj_ts_engine_checkpoint(fj_ts_engine *e, const fj_ts_sink *sink)
{
    if (!sink->chunk || !sink->drop)
        return FJ_EINVAL;
    fj_status st = FJ_OK;
    e->n_ck_new = 0; /* a checkpoint handed before and not committed is handed again */
    pthread_rwlock_wrlock(&e->lock);
    for (uint32_t i = 1; i < e->next_id && i < e->s_cap && st == FJ_OK; i++) {
        if (i % LOCK_SLICE == 0)
            relock(e);
        if (e->s[i].n && e->s[i].lsn_min != LSN_NONE)
            st = checkpoint_one(e, i, sink);
    }
    pthread_rwlock_unlock(&e->lock);
    return st;
}

void fj_ts_engine_stats(const fj_ts_engine *e, fj_ts_stats *st)
{
    *st = (fj_ts_stats){.series = e->n_series, .buffered_points = e->buffered,
                        .pending_chunks = e->n_pending,
                        .pending_bytes = e->pending_bytes, .sealed_chunks = e->sealed_chunks,
                        .sealed_points = e->sealed_points, .sealed_bytes = e->sealed_bytes,
                        .open_bytes = e->buffer_bytes, .unckpt_writes = e->unckpt,
                        .loaded = e->n_loaded, .refused = e->refused,
                        .conflicts = e->conflicts};
    st->buffer_bytes = e->buffer_bytes + e->s_cap * sizeof(series) +
                       (e->tab_mask + 1) * sizeof(slot) + e->keys_cap;
}

void fj_ts_engine_series_held(fj_ts_engine *e, size_t *held, size_t *loaded)
{
    pthread_rwlock_rdlock(&e->lock);
    *held = e->n_series;
    *loaded = e->n_loaded;
    pthread_rwlock_unlock(&e->lock);
}

/* ---- reads ------------------------------------------------------------------------------ */

/* One time-ordered run of points of the read, with its precedence: a chunk's is 2 seq + 1; the
 * buffer copy's is 2 next_seq at the time of the copy, so it beats every chunk sealed before
 * the copy and loses to any sealed after it (which holds writes at least as new). */
typedef struct run {
    uint64_t prio;
    size_t off, n;
} run;

typedef struct rctx {
    fj_ts_codec *c;
    int64_t *t; /* pool of all runs' points */
    double *v;
    size_t n, cap;
    run *runs;
    size_t n_runs, runs_cap;
    int64_t *dt; /* chunk decode scratch */
    double *dv;
    size_t dcap;
} rctx;

static bool pool_room(rctx *r, size_t more)
{
    return fj_grow_cols(&r->cap, r->n + more, 1024, 2, (void *[]){&r->t, &r->v},
                        (size_t[]){sizeof *r->t, sizeof *r->v});
}

static bool add_run(rctx *r, uint64_t prio, size_t off, size_t n)
{
    if (n == 0)
        return true;
    if (!fj_grow(&r->runs, &r->runs_cap, r->n_runs + 1, sizeof *r->runs, 16))
        return false;
    r->runs[r->n_runs++] = (run){prio, off, n};
    return true;
}

/* Decodes a chunk and adds its points within [from, to] as a run. */
static fj_status add_chunk(rctx *r, const fj_ts_chunk *ch, int64_t from, int64_t to)
{
    fj_ts_chunk_hdr h;
    if (fj_ts_chunk_header(ch->blob, ch->len, &h) != FJ_OK)
        return FJ_EIO;
    if (h.n == 0 || h.t_last < from || h.t_first > to)
        return FJ_OK;
    if (!fj_grow_cols(&r->dcap, h.n, h.n, 2, (void *[]){&r->dt, &r->dv},
                      (size_t[]){sizeof *r->dt, sizeof *r->dv}))
        return FJ_ENOMEM;
    size_t n;
    fj_status st = fj_ts_chunk_decode(r->c, ch->blob, ch->len, r->dt, r->dv, r->dcap, &n);
    if (st == FJ_ENOMEM)
        return st;
    if (st != FJ_OK)
        return FJ_EIO;
    size_t i0 = 0, i1 = n;
    while (i0 < n && r->dt[i0] < from)
        i0++;
    while (i1 > i0 && r->dt[i1 - 1] > to)
        i1--;
    if (!pool_room(r, i1 - i0))
        return FJ_ENOMEM;
    memcpy(r->t + r->n, r->dt + i0, (i1 - i0) * sizeof *r->t);
    memcpy(r->v + r->n, r->dv + i0, (i1 - i0) * sizeof *r->v);
    if (!add_run(r, 2 * ch->seq + 1, r->n, i1 - i0))
        return FJ_ENOMEM;
    r->n += i1 - i0;
    return FJ_OK;
}

/* Copies the engine's part of the series under the shared lock. *seqs gets the seqs of the
 * unsealed chunks copied, so the same chunks from the database are skipped. */
static fj_status copy_memory(fj_ts_engine *e, rctx *r, uint32_t id, int64_t from, int64_t to,
                             uint64_t **seqs, size_t *n_seqs, uint64_t skip[2])
{
    fj_status st = FJ_OK;
    bool unsorted = false;
    pthread_rwlock_rdlock(&e->lock);
    if (id == 0 || id >= e->s_cap || !e->s[id].key_len)
        goto out; /* unknown here: perhaps another process's series, stored chunks only */
    const series *s = &e->s[id];
    size_t np = 0;
    for (const pending *p = s->pend; p; p = p->next_series)
        np++;
    /* the buffer holds every point of its stored checkpoint and shared pieces (or newer values):
     * skip those chunks, the pieces by their range of seqs (only this buffer's own are in it) */
    uint64_t ck_seq = s->n && id < e->ck_cap ? e->ck[id].seq : 0;
    if (ck_seq) {
        skip[0] = ck_seq;
        skip[1] = id < e->sh_cap && e->sh[id].pieces > 1 ? e->sh[id].seq_hi : ck_seq;
    }
    if (np || ck_seq) {
        *seqs = fj_malloc((np + 1) * sizeof **seqs);
        if (!*seqs) {
            st = FJ_ENOMEM;
            goto out;
        }
        if (ck_seq)
            (*seqs)[(*n_seqs)++] = ck_seq;
        for (const pending *p = s->pend; p; p = p->next_series) {
            (*seqs)[(*n_seqs)++] = p->c.seq;
            if ((st = add_chunk(r, &p->c, from, to)) != FJ_OK)
                goto out;
        }
    }
    if (s->n) {
        if (!pool_room(r, s->n)) {
            st = FJ_ENOMEM;
            goto out;
        }
        size_t off = r->n, k = 0;
        if (s->sorted) { /* decoded into place, then the range kept */
            fj_ts_obuf_decode(s->buf.ob, r->t + off, r->v + off);
            for (uint32_t i = 0; i < s->n; i++) {
                if (r->t[off + i] >= from && r->t[off + i] <= to) {
                    r->t[off + k] = r->t[off + i];
                    r->v[off + k] = r->v[off + i];
                    k++;
                }
            }
        } else {
            for (uint32_t i = 0; i < s->n; i++) {
                if (s->buf.raw[i].t >= from && s->buf.raw[i].t <= to) {
                    r->t[off + k] = s->buf.raw[i].t;
                    r->v[off + k] = s->buf.raw[i].v;
                    k++;
                }
            }
        }
        if (!add_run(r, 2 * e->next_seq, off, k)) {
            st = FJ_ENOMEM;
            goto out;
        }
        r->n += k;
        unsorted = k && !s->sorted;
    }
out:
    pthread_rwlock_unlock(&e->lock);
    if (st == FJ_OK && unsorted) {
        /* the buffer's run is the last one added: stable sort, keep the last of equal times */
        run *b = &r->runs[r->n_runs - 1];
        pt *a = fj_malloc(2 * b->n * sizeof *a);
        if (!a)
            return FJ_ENOMEM;
        for (size_t i = 0; i < b->n; i++)
            a[i] = (pt){r->t[b->off + i], r->v[b->off + i]};
        b->n = sort_dedup(a, b->n, a + b->n);
        for (size_t i = 0; i < b->n; i++) {
            r->t[b->off + i] = a[i].t;
            r->v[b->off + i] = a[i].v;
        }
        fj_free(a);
    }
    return st;
}

static int run_cmp(const void *a, const void *b)
{
    const run *x = a, *y = b;
    return x->prio < y->prio ? -1 : x->prio > y->prio;
}

/* Merges the runs into out: runs by increasing precedence, each merged over the result so far
 * with the newer one winning equal times. */
static fj_status merge_runs(rctx *r, fj_ts_points *out)
{
    out->n = 0;
    if (r->n_runs == 0)
        return FJ_OK;
    qsort(r->runs, r->n_runs, sizeof *r->runs, run_cmp);
    size_t total = 0;
    for (size_t i = 0; i < r->n_runs; i++)
        total += r->runs[i].n;
    /* out holds the result so far; tt/tv take the next merge */
    if (!fj_grow_cols(&out->cap, total, total, 2, (void *[]){&out->t, &out->v},
                      (size_t[]){sizeof *out->t, sizeof *out->v}))
        return FJ_ENOMEM;
    int64_t *tt = NULL;
    double *tv = NULL;
    if (r->n_runs > 1) {
        tt = fj_malloc(total * sizeof *tt);
        tv = fj_malloc(total * sizeof *tv);
        if (!tt || !tv) {
            fj_free(tt);
            fj_free(tv);
            return FJ_ENOMEM;
        }
    }
    memcpy(out->t, r->t + r->runs[0].off, r->runs[0].n * sizeof *out->t);
    memcpy(out->v, r->v + r->runs[0].off, r->runs[0].n * sizeof *out->v);
    out->n = r->runs[0].n;
    for (size_t k = 1; k < r->n_runs; k++) {
        const int64_t *bt = r->t + r->runs[k].off;
        const double *bv = r->v + r->runs[k].off;
        size_t bn = r->runs[k].n, i = 0, j = 0, m = 0;
        if (out->t[out->n - 1] < bt[0]) { /* the common case: the newer run is later */
            memcpy(out->t + out->n, bt, bn * sizeof *bt);
            memcpy(out->v + out->n, bv, bn * sizeof *bv);
            out->n += bn;
            continue;
        }
        while (i < out->n && j < bn) {
            if (out->t[i] < bt[j]) {
                tt[m] = out->t[i];
                tv[m++] = out->v[i++];
            } else {
                if (out->t[i] == bt[j])
                    i++; /* the newer run wins */
                tt[m] = bt[j];
                tv[m++] = bv[j++];
            }
        }
        for (; i < out->n; i++, m++) {
            tt[m] = out->t[i];
            tv[m] = out->v[i];
        }
        for (; j < bn; j++, m++) {
            tt[m] = bt[j];
            tv[m] = bv[j];
        }
        memcpy(out->t, tt, m * sizeof *tt);
        memcpy(out->v, tv, m * sizeof *tv);
        out->n = m;
    }
    fj_free(tt);
    fj_free(tv);
    return FJ_OK;
}

/* A read between its two steps: the engine's part copied, the stored chunks still to come. */
struct fj_ts_read_part {
    rctx r;
    fj_ts_codec *own; /* the codec when the caller gave none */
    uint32_t id;
    int64_t from, to;
    uint64_t *seqs; /* the unsealed chunks copied, skipped when the database yields them too */
    size_t n_seqs;
    uint64_t skip[2]; /* and the range of the buffer's shared pieces (none: 1, 0) */
};

static void part_free(fj_ts_read_part *p)
{
    fj_free(p->seqs);
    fj_free(p->r.t);
    fj_free(p->r.v);
    fj_free(p->r.runs);
    fj_free(p->r.dt);
    fj_free(p->r.dv);
    fj_ts_codec_destroy(p->own);
}

static fj_status part_copy(fj_ts_read_part *p, fj_ts_engine *e, fj_ts_codec *c, uint32_t series_id, int64_t from,
                           int64_t to, fj_err *err)
{
    *p = (fj_ts_read_part){.id = series_id, .from = from, .to = to, .skip = {1, 0}};
    if (from > to)
        return fj_err_set(err, FJ_EINVAL, NULL, "time range ends before it starts");
    if (!c && !(c = p->own = fj_ts_codec_create()))
        return FJ_ENOMEM;
    p->r.c = c;
    return e ? copy_memory(e, &p->r, series_id, from, to, &p->seqs, &p->n_seqs, p->skip) : FJ_OK;
}

/* Adds the stored chunks next yields (those already copied from the engine skipped) and merges. */
static fj_status part_merge(fj_ts_read_part *p, fj_ts_chunk_iter next, void *ud, fj_ts_points *out, fj_err *err)
{
    while (next) {
        fj_ts_chunk ch;
        fj_status st = next(ud, &ch);
        if (st == FJ_ENOTFOUND)
            break;
        if (st != FJ_OK)
            return st;
        if (ch.series_id != p->id)
            return fj_err_set(err, FJ_EIO, NULL, "chunk seq %llu belongs to series %u, not %u",
                              (unsigned long long)ch.seq, ch.series_id, p->id);
        bool dup = ch.seq >= p->skip[0] && ch.seq <= p->skip[1];
        for (size_t i = 0; i < p->n_seqs && !dup; i++)
            dup = p->seqs[i] == ch.seq;
        if (dup)
            continue;
        if ((st = add_chunk(&p->r, &ch, p->from, p->to)) != FJ_OK) {
            if (st == FJ_EIO)
                fj_err_set(err, st, NULL, "chunk seq %llu of series %u is corrupt", (unsigned long long)ch.seq,
                           p->id);
            return st;
        }
    }
    return merge_runs(&p->r, out);
}

fj_status fj_ts_read(fj_ts_engine *e, fj_ts_codec *c, uint32_t series_id, int64_t from, int64_t to,
                     fj_ts_chunk_iter next, void *ud, fj_ts_points *out, fj_err *err)
{
    out->n = 0;
    fj_ts_read_part p;
    fj_status st = part_copy(&p, e, c, series_id, from, to, err);
    if (st == FJ_OK)
        st = part_merge(&p, next, ud, out, err);
    if (st != FJ_OK)
        out->n = 0;
    part_free(&p);
    return st;
}

fj_status fj_ts_read_begin(fj_ts_engine *e, fj_ts_codec *c, uint32_t series_id, int64_t from, int64_t to,
                           fj_ts_read_part **out, fj_err *err)
{
    *out = NULL;
    fj_ts_read_part *p = fj_malloc(sizeof *p);
    if (!p)
        return FJ_ENOMEM;
    fj_status st = part_copy(p, e, c, series_id, from, to, err);
    if (st != FJ_OK) {
        part_free(p);
        fj_free(p);
        return st;
    }
    *out = p;
    return FJ_OK;
}

fj_status fj_ts_read_end(fj_ts_read_part *p, fj_ts_chunk_iter next, void *ud, fj_ts_points *out, fj_err *err)
{
    out->n = 0;
    fj_status st = part_merge(p, next, ud, out, err);
    if (st != FJ_OK)
        out->n = 0;
    fj_ts_read_discard(p);
    return st;
}

void fj_ts_read_part_skip(const fj_ts_read_part *p, uint64_t *lo, uint64_t *hi)
{
    *lo = p ? p->skip[0] : 1;
    *hi = p ? p->skip[1] : 0;
}

void fj_ts_read_discard(fj_ts_read_part *p)
{
    if (!p)
        return;
    part_free(p);
    fj_free(p);
}

void fj_ts_points_free(fj_ts_points *p)
{
    fj_free(p->t);
    fj_free(p->v);
    p->t = NULL;
    p->v = NULL;
    p->n = p->cap = 0;
}
