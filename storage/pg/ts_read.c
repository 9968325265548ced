/* storage/pg/ts_read.c — line-protocol metrics in the PostgreSQL backend, reader side: the series catalog
 * (every server's series), series' points (stored chunks merged with this server's unsealed
 * points), ClusterCockpit events and jobs. Each is one statement outside any transaction, so its
 * snapshot is taken when it runs: the chunks of up to SERIES_PER_STATEMENT series are read with
 * one statement (a round trip each would dominate a query over many series), run after the
 * engine's part of every one of them was copied, so a chunk sealed and committed in between is
 * never missed. Another server's unsealed points are read from the checkpoints it stores every
 * metrics-share-interval (docs/metrics.md, "Every server sees every point"). */
#include "storage/pg/ts.h"

#include "alloc.h"

#include <stdio.h>
#include <string.h>

#define NS 1000000000LL

static fj_status oom(fj_err *err)
{
    return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
}

static struct fj_pg_ts *reader_state(fj_store *s)
{
    if (!s->ts && (s->ts = fj_calloc(1, sizeof *s->ts)))
        fj_pg_cols_init(&s->ts->cols, 0);
    return s->ts;
}

fj_status fj_pg_ts_series(fj_store *s, const fj_ts_sel *sel,
                          fj_status (*cb)(void *ud, uint32_t id, const fj_ts_key *key), void *ud, fj_err *err)
{
    if (!sel || !sel->cluster)
        return fj_err_set(err, FJ_EINVAL, "cluster", "a cluster is required");
    const char *vals[] = {sel->cluster, sel->host ? sel->host : "", sel->metric ? sel->metric : ""};
    PGresult *r;
    fj_status st = fj_pg_ts_run1(s, FJ_PG_TS_SERIES_LIST, 3, vals, &r, "list series", err);
    /* The rows are all in r: the callback may run other statements on this connection. */
    for (int i = 0; st == FJ_OK && i < PQntuples(r); i++) {
        fj_ts_str f[7];
        for (int k = 0; k < 7; k++)
            f[k] = (fj_ts_str){PQgetvalue(r, i, k + 1), (size_t)PQgetlength(r, i, k + 1)};
        fj_ts_key key = {f[0], f[1], f[2], f[3], f[4], f[5], f[6], (uint8_t)fj_pg_int(r, i, 8)};
        st = cb(ud, (uint32_t)fj_pg_int(r, i, 0), &key);
    }
    PQclear(r);
    return st;
}

/* Bounds the memory of a read: one statement's result holds the chunks of all its series in the
 * range (bytea as hex text, twice their size). */
#define SERIES_PER_STATEMENT 128

/* The rows of one series in a statement's result, [row, end). */
typedef struct chunk_iter {
    fj_store *s;
    const PGresult *r;
    int row, end;
    uint32_t id;
} chunk_iter;

static int hexval(unsigned char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* bytea's text form ("\x0a1b...") into the handle's reusable buffer. */
static fj_status unhex(struct fj_pg_ts *t, const char *v, size_t n, size_t *len)
{
    if (n < 2 || v[0] != '\\' || v[1] != 'x' || n % 2)
        return FJ_EIO;
    size_t out = (n - 2) / 2;
    if (out > t->blob_cap) {
        unsigned char *b = fj_realloc(t->blob, out);
        if (!b)
            return FJ_ENOMEM;
        t->blob = b;
        t->blob_cap = out;
    }
    for (size_t i = 0; i < out; i++) {
        int hi = hexval((unsigned char)v[2 + 2 * i]), lo = hexval((unsigned char)v[3 + 2 * i]);
        if (hi < 0 || lo < 0)
            return FJ_EIO;
        t->blob[i] = (unsigned char)(hi << 4 | lo);
    }
    *len = out;
    return FJ_OK;
}

static fj_status next_chunk(void *ud, fj_ts_chunk *out)
{
    chunk_iter *it = ud;
    if (it->row >= it->end)
        return FJ_ENOTFOUND;
    int i = it->row++;
    size_t len = 0;
    fj_status st = unhex(it->s->ts, PQgetvalue(it->r, i, 5), (size_t)PQgetlength(it->r, i, 5), &len);
    if (st != FJ_OK)
        return st;
    *out = (fj_ts_chunk){.series_id = it->id,
                         .count = (uint32_t)fj_pg_int(it->r, i, 1),
                         .t_first = fj_pg_int(it->r, i, 2),
                         .t_last = fj_pg_int(it->r, i, 3),
                         .seq = (uint64_t)fj_pg_int(it->r, i, 4),
                         .blob = it->s->ts->blob,
                         .len = len};
    return FJ_OK;
}

/* The chunks of ids[0..n) overlapping [from, to], ordered by the series' position in ids (1-based,
 * column 0). Per series an index range scan, as one statement per series was: the subquery's
 * OFFSET 0 keeps the planner from flattening it into a join over the t_last index, which reads
 * every series' chunks of the range when the range covers most of them. */
static fj_status query_chunks(fj_store *s, const uint32_t *ids, fj_ts_read_part *const *parts, size_t n,
                              int64_t from, int64_t to, PGresult **r, fj_err *err)
{
    /* with each series the seqs its engine part skips (this server's own shared pieces: the
     * buffer holds them), left out here rather than fetched */
    char list[SERIES_PER_STATEMENT * 11 + 3], los[SERIES_PER_STATEMENT * 21 + 3], his[SERIES_PER_STATEMENT * 21 + 3];
    char b1[24], b2[24];
    size_t off = 0, lo_off = 0, hi_off = 0;
    list[off++] = los[lo_off++] = his[hi_off++] = '{';
    for (size_t i = 0; i < n; i++) {
        uint64_t lo, hi;
        fj_ts_read_part_skip(parts[i], &lo, &hi);
        if (lo > hi || hi > INT64_MAX)
            lo = 1, hi = 0;
        const char *sep = i ? "," : "";
        off += (size_t)snprintf(list + off, sizeof list - off, "%s%u", sep, ids[i]);
        lo_off += (size_t)snprintf(los + lo_off, sizeof los - lo_off, "%s%llu", sep, (unsigned long long)lo);
        hi_off += (size_t)snprintf(his + hi_off, sizeof his - hi_off, "%s%llu", sep, (unsigned long long)hi);
    }
    snprintf(list + off, sizeof list - off, "}");
    snprintf(los + lo_off, sizeof los - lo_off, "}");
    snprintf(his + hi_off, sizeof his - hi_off, "}");
    snprintf(b1, sizeof b1, "%lld", (long long)from);
    snprintf(b2, sizeof b2, "%lld", (long long)to);
    const char *vals[] = {list, b1, b2, los, his};
    return fj_pg_ts_run1(s, FJ_PG_TS_CHUNKS, 5, vals, r, "read chunks", err);
}

/* Up to SERIES_PER_STATEMENT series with one statement: the engine's part of every one first,
 * then the statement, then each series merged and handed to cb (as number base + i). */
static fj_status read_batch(fj_store *s, fj_ts_engine *live, const uint32_t *ids, size_t n, size_t base,
                            int64_t from, int64_t to, fj_ts_points *pts,
                            fj_status (*cb)(void *ud, size_t i, const fj_ts_points *pts), void *ud, fj_err *err)
{
    fj_ts_read_part *parts[SERIES_PER_STATEMENT] = {0};
    PGresult *r = NULL;
    fj_status st = FJ_OK;
    for (size_t i = 0; st == FJ_OK && i < n; i++)
        st = fj_ts_read_begin(live, s->ts->codec, ids[i], from, to, &parts[i], err);
    if (st == FJ_OK)
        st = query_chunks(s, ids, parts, n, from, to, &r, err);
    for (size_t i = 0, row = 0, rows = r ? (size_t)PQntuples(r) : 0; st == FJ_OK && i < n; i++) {
        chunk_iter it = {.s = s, .r = r, .row = (int)row, .id = ids[i]};
        while (row < rows && fj_pg_int(r, (int)row, 0) == (int64_t)i + 1)
            row++;
        it.end = (int)row;
        st = fj_ts_read_end(parts[i], next_chunk, &it, pts, err);
        parts[i] = NULL;
        if (st == FJ_EIO && err && !err->message[0])
            fj_err_set(err, FJ_EIO, "db", "reading chunks of series %u failed", ids[i]);
        if (st == FJ_OK)
            st = cb(ud, base + i, pts);
    }
    for (size_t i = 0; i < n; i++)
        fj_ts_read_discard(parts[i]);
    PQclear(r);
    return st;
}

fj_status fj_pg_ts_read_many(fj_store *s, fj_ts_engine *live, const uint32_t *ids, size_t n, int64_t from,
                             int64_t to, fj_ts_points *pts,
                             fj_status (*cb)(void *ud, size_t i, const fj_ts_points *pts), void *ud, fj_err *err)
{
    struct fj_pg_ts *t = reader_state(s);
    if (!t)
        return oom(err);
    if (!t->codec && !(t->codec = fj_ts_codec_create()))
        return oom(err);
    fj_status st = FJ_OK;
    for (size_t i = 0; st == FJ_OK && i < n; i += SERIES_PER_STATEMENT) {
        size_t k = n - i < SERIES_PER_STATEMENT ? n - i : SERIES_PER_STATEMENT;
        st = read_batch(s, live, ids + i, k, i, from, to, pts, cb, ud, err);
    }
    return st;
}

static fj_status points_stay(void *ud, size_t i, const fj_ts_points *pts)
{
    (void)ud, (void)i, (void)pts;
    return FJ_OK;
}

fj_status fj_pg_ts_read(fj_store *s, fj_ts_engine *live, uint32_t series_id, int64_t from, int64_t to,
                        fj_ts_points *out, fj_err *err)
{
    out->n = 0;
    return fj_pg_ts_read_many(s, live, &series_id, 1, from, to, out, points_stay, NULL, err);
}
