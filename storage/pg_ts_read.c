/* pg_ts_read.c — line-protocol metrics in the PostgreSQL backend, reader side: the series catalog
 * (every server's series), a series' points (stored chunks merged with this server's unsealed
 * points), ClusterCockpit events and jobs. Each is one statement outside any transaction, so its
 * snapshot is taken when it runs: ts_read's chunk query runs at the first call of the engine's
 * chunk iterator, after the engine's part was copied, so a chunk sealed and committed in between
 * is never missed. Another server's unsealed points are not visible here until it seals them
 * (metrics-flush-interval at the latest). */
#include "pg_ts.h"

#include "alloc.h"
#include "cc_json.h"

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
        fj_ts_key key = {f[0], f[1], f[2], f[3], f[4], f[5], f[6]};
        st = cb(ud, (uint32_t)fj_pg_int(r, i, 0), &key);
    }
    PQclear(r);
    return st;
}

typedef struct chunk_iter {
    fj_store *s;
    fj_err *err;
    PGresult *r;
    int row;
    uint32_t id;
    int64_t from, to;
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
    if (!it->r) { /* the snapshot starts here, after the engine's part was copied */
        char b0[24], b1[24], b2[24];
        snprintf(b0, sizeof b0, "%u", it->id);
        snprintf(b1, sizeof b1, "%lld", (long long)it->from);
        snprintf(b2, sizeof b2, "%lld", (long long)it->to);
        const char *vals[] = {b0, b1, b2};
        fj_status st = fj_pg_ts_run1(it->s, FJ_PG_TS_CHUNKS, 3, vals, &it->r, "read chunks", it->err);
        if (st != FJ_OK)
            return st;
    }
    if (it->row >= PQntuples(it->r))
        return FJ_ENOTFOUND;
    int i = it->row++;
    size_t len = 0;
    fj_status st = unhex(it->s->ts, PQgetvalue(it->r, i, 4), (size_t)PQgetlength(it->r, i, 4), &len);
    if (st != FJ_OK)
        return st;
    *out = (fj_ts_chunk){.series_id = it->id,
                         .count = (uint32_t)fj_pg_int(it->r, i, 0),
                         .t_first = fj_pg_int(it->r, i, 1),
                         .t_last = fj_pg_int(it->r, i, 2),
                         .seq = (uint64_t)fj_pg_int(it->r, i, 3),
                         .blob = it->s->ts->blob,
                         .len = len};
    return FJ_OK;
}

fj_status fj_pg_ts_read(fj_store *s, fj_ts_engine *live, uint32_t series_id, int64_t from, int64_t to,
                        fj_ts_points *out, fj_err *err)
{
    struct fj_pg_ts *t = reader_state(s);
    if (!t)
        return oom(err);
    if (!t->codec && !(t->codec = fj_ts_codec_create()))
        return oom(err);
    chunk_iter it = {.s = s, .err = err, .id = series_id, .from = from, .to = to};
    fj_status st = fj_ts_read(live, t->codec, series_id, from, to, next_chunk, &it, out, err);
    PQclear(it.r);
    if (st == FJ_EIO && err && !err->message[0])
        fj_err_set(err, FJ_EIO, "db", "reading chunks of series %u failed", series_id);
    return st;
}

/* --- ClusterCockpit records ----------------------------------------------------------------- */

static const char *opt(const PGresult *r, int i, int col)
{
    return PQgetisnull(r, i, col) ? NULL : PQgetvalue(r, i, col);
}

fj_status fj_pg_cc_messages(fj_store *s, const fj_cc_msg_query *q, fj_buf *out, fj_err *err)
{
    char b1[24], b2[24], b3[24];
    snprintf(b1, sizeof b1, "%lld", (long long)(q->from_ns ? q->from_ns : INT64_MIN));
    snprintf(b2, sizeof b2, "%lld", (long long)(q->to_ns ? q->to_ns : INT64_MAX));
    snprintf(b3, sizeof b3, "%zu", q->limit);
    const char *vals[] = {q->cluster, b1, b2, q->kind, q->name, q->host, q->limit ? b3 : NULL};
    PGresult *r;
    fj_status st = fj_pg_ts_run1(s, FJ_PG_CC_MSG_LIST, 7, vals, &r, "list events", err);
    if (st != FJ_OK)
        return st;
    fj_buf_puts(out, "{\"events\":[");
    for (int i = 0; i < PQntuples(r); i++) {
        fj_cc_event_row row = {.kind = PQgetvalue(r, i, 0),
                               .name = PQgetvalue(r, i, 1),
                               .host = PQgetvalue(r, i, 2),
                               .time_ns = fj_pg_int(r, i, 3),
                               .tags = PQgetvalue(r, i, 4),
                               .payload = PQgetvalue(r, i, 5)};
        fj_cc_event_json(out, i == 0, &row);
    }
    PQclear(r);
    if (fj_buf_puts(out, "]}\n") != FJ_OK)
        return fj_err_set(err, FJ_ETOOBIG, NULL, "the answer is too large; narrow from/to or set limit");
    return FJ_OK;
}

fj_status fj_pg_cc_jobs(fj_store *s, const fj_cc_msg_query *q, fj_buf *out, fj_err *err)
{
    char b1[24], b2[24], b3[24];
    snprintf(b1, sizeof b1, "%lld", (long long)(q->from_ns / NS));
    snprintf(b2, sizeof b2, "%lld", (long long)(q->to_ns / NS));
    snprintf(b3, sizeof b3, "%zu", q->limit);
    const char *vals[] = {q->cluster, b1, b2, q->limit ? b3 : NULL};
    PGresult *r;
    fj_status st = fj_pg_ts_run1(s, FJ_PG_CC_JOB_LIST, 4, vals, &r, "list cc jobs", err);
    if (st != FJ_OK)
        return st;
    fj_buf_puts(out, "{\"jobs\":[");
    for (int i = 0; i < PQntuples(r); i++) {
        fj_cc_job_row row = {.id = fj_pg_int(r, i, 0),
                             .job_id = fj_pg_int(r, i, 1),
                             .start_time = fj_pg_int(r, i, 2),
                             .stopped = !PQgetisnull(r, i, 3),
                             .stop_time = fj_pg_int(r, i, 3),
                             .state = opt(r, i, 4),
                             .user = opt(r, i, 5),
                             .project = opt(r, i, 6),
                             .partition = opt(r, i, 7),
                             .num_nodes = fj_pg_int(r, i, 8),
                             .hosts = opt(r, i, 9),
                             .sonar_instances = fj_pg_int(r, i, 10),
                             .sonar_first = fj_pg_int(r, i, 11),
                             .sonar_last = fj_pg_int(r, i, 12),
                             .sonar_samples = fj_pg_int(r, i, 13),
                             .has_slurm = PQgetvalue(r, i, 15)[0] == 't',
                             .slurm_state = opt(r, i, 14)};
        fj_cc_job_json(out, i == 0, q->cluster, &row);
    }
    PQclear(r);
    if (fj_buf_puts(out, "]}\n") != FJ_OK)
        return fj_err_set(err, FJ_ETOOBIG, NULL, "the answer is too large; narrow from/to or set limit");
    return FJ_OK;
}
