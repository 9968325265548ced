/* Tests of storage/sqlite/ts.c: line-protocol batches through fj_store_write (request log, engine,
 * chunks, messages, jobs), reads merging the live engine with stored chunks, a clean close that
 * seals everything, replay of the request log after a "crash" (a copy of the database files taken
 * while the writer is open), retention and request-log trimming. */
#include "ingest/cc.h"
#include "sqlite_test_db.h"
#include "storage/core/store.h"
#include "storage/core/store_ts.h"
#include "storage/ts/engine.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dbpath[256], copypath[256];

static void setup(void)
{
    fj_test_db_path(dbpath, sizeof dbpath, "ts", ".db");
    fj_test_db_path(copypath, sizeof copypath, "ts", "_copy.db");
}

static void teardown(void)
{
    fj_test_rm_db(dbpath);
    fj_test_rm_db(copypath);
}

TestSuite(sqlite_ts, .init = setup, .fini = teardown);

static fj_store *open_at(const char *path, fj_store_mode mode, uint32_t seal_points)
{
    fj_store_opts o = {.mode = mode, .create = mode == FJ_STORE_WRITE, .ts_seal_points = seal_points};
    fj_store *s = NULL;
    fj_err err = {0};
    cr_assert_eq(fj_store_open(path, &o, &s, &err), FJ_OK, "%s", err.message);
    if (mode == FJ_STORE_WRITE)
        cr_assert_eq(fj_store_ts_start(s, &o, &err), FJ_OK, "%s", err.message);
    return s;
}

/* n intervals of host h: cpu_load at t0 + 60 i with value base + i. */
static void write_lp(fj_store *s, const char *body)
{
    fj_batch *b = fj_batch_new();
    fj_cc_opts o = {.default_cluster = "c", .arrival_ns = 1700000000LL * 1000000000, .keep_raw = true};
    cr_assert_eq(fj_cc_decode(body, strlen(body), &o, b, NULL, NULL, NULL, NULL), FJ_OK);
    fj_write_count cnt = {0};
    fj_err err = {0};
    cr_assert_eq(fj_store_write(s, &b, 1, &cnt, &err), FJ_OK, "%s", err.message);
    fj_batch_free(b);
}

static char *series_body(const char *host, int from, int n, double base)
{
    static char buf[1 << 16];
    size_t off = 0;
    for (int i = from; i < from + n; i++)
        off += (size_t)snprintf(buf + off, sizeof buf - off, "cpu_load,hostname=%s value=%g %d\n", host, base + i,
                                1700000000 + 60 * i);
    return buf;
}

typedef struct found {
    uint32_t id;
    int n;
} found;

static fj_status on_series(void *ud, uint32_t id, const fj_ts_key *k)
{
    (void)k;
    ((found *)ud)->id = id;
    ((found *)ud)->n++;
    return FJ_OK;
}

static uint32_t series_id(fj_store *r, const char *host)
{
    found got = {0, 0};
    fj_ts_sel sel = {"c", host, "cpu_load"};
    cr_assert_eq(fj_store_ts_series(r, &sel, on_series, &got, NULL), FJ_OK);
    cr_assert_eq(got.n, 1);
    return got.id;
}

static void expect_points(fj_store *r, fj_ts_engine *live, const char *host, int n, double base)
{
    fj_ts_points p = {0};
    fj_err err = {0};
    uint32_t id = series_id(r, host);
    cr_assert_eq(fj_store_ts_read(r, live, id, 0, INT64_MAX, &p, &err), FJ_OK, "%s", err.message);
    cr_assert_eq(p.n, (size_t)n, "%s: %zu points, want %d", host, p.n, n);
    for (int i = 0; i < n; i++) {
        cr_expect_eq(p.t[i], (1700000000LL + 60 * i) * 1000000000);
        cr_expect_eq(p.v[i], base + i);
    }
    fj_ts_points_free(&p);
}

/* A row sink keeping the payloads of cc_messages' rows. */
typedef struct payloads {
    fj_sink sink;
    const fj_qtable *table;
    size_t n;
    char last[64];
} payloads;

static fj_status payloads_table(fj_sink *k, const fj_qtable *t)
{
    ((payloads *)k)->table = t;
    return FJ_OK;
}

static fj_status payloads_row(fj_sink *k, const fj_value *v)
{
    payloads *p = (payloads *)k;
    p->n++;
    snprintf(p->last, sizeof p->last, "%s", v[fj_qtable_col(&fj_qt_cc_events, "payload")].s);
    return FJ_OK;
}

Test(sqlite_ts, write_read_seal_and_clean_close)
{
    fj_store *w = open_at(dbpath, FJ_STORE_WRITE, 4);
    write_lp(w, series_body("a", 0, 10, 1.5)); /* 10 points: two chunks of 4 sealed, 2 buffered */
    cr_expect_eq(fj_test_q1(dbpath, "SELECT count(*) FROM request_log"), 1);
    cr_expect_eq(fj_test_q1(dbpath, "SELECT count(*) FROM ts_series"), 1);
    cr_expect(fj_test_q1(dbpath, "SELECT count(*) FROM ts_chunk") >= 1);
    fj_store *r = open_at(dbpath, FJ_STORE_READ, 0);
    expect_points(r, fj_store_ts_engine(w), "a", 10, 1.5);
    /* without the live engine only sealed chunks are seen */
    fj_ts_points p = {0};
    cr_assert_eq(fj_store_ts_read(r, NULL, series_id(r, "a"), 0, INT64_MAX, &p, NULL), FJ_OK);
    cr_expect_eq((int64_t)p.n, fj_test_q1(dbpath, "SELECT sum(count) FROM ts_chunk"), "%zu", p.n);
    fj_ts_points_free(&p);
    fj_store_close(w); /* seals and commits the rest, trims the log */
    cr_expect_eq(fj_test_q1(dbpath, "SELECT count(*) FROM request_log"), 0);
    cr_expect_eq(fj_test_q1(dbpath, "SELECT sum(count) FROM ts_chunk"), 10);
    expect_points(r, NULL, "a", 10, 1.5);
    fj_store_close(r);
}

static void copy_file(const char *from, const char *to)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cp %s %s && (test ! -e %s-wal || cp %s-wal %s-wal)", from, to, from, from, to);
    cr_assert_eq(system(cmd), 0);
}

Test(sqlite_ts, replay_after_crash)
{
    fj_store *w = open_at(dbpath, FJ_STORE_WRITE, 4);
    write_lp(w, series_body("a", 0, 6, 10));
    write_lp(w, series_body("b", 0, 3, 20));
    write_lp(w, series_body("a", 6, 3, 10)); /* a's later points, b never sealed */
    /* the state a SIGKILL would leave: committed pages, the engine's memory lost */
    copy_file(dbpath, copypath);
    fj_store_close(w);
    cr_expect(fj_test_q1(copypath, "SELECT count(*) FROM request_log") >= 2);
    fj_store *w2 = open_at(copypath, FJ_STORE_WRITE, 4);
    fj_store *r = open_at(copypath, FJ_STORE_READ, 0);
    fj_ts_engine *live = fj_store_ts_engine(w2);
    expect_points(r, live, "a", 9, 10);
    expect_points(r, live, "b", 3, 20);
    /* a second crash right after the replay replays again, the same */
    fj_test_rm_db(dbpath);
    copy_file(copypath, dbpath);
    fj_store_close(w2);
    fj_store *w3 = open_at(dbpath, FJ_STORE_WRITE, 4);
    fj_store *r3 = open_at(dbpath, FJ_STORE_READ, 0);
    expect_points(r3, fj_store_ts_engine(w3), "a", 9, 10);
    expect_points(r3, fj_store_ts_engine(w3), "b", 3, 20);
    fj_store_close(r3);
    fj_store_close(w3);
    fj_store_close(r);
}

Test(sqlite_ts, messages_jobs_and_duplicates)
{
    fj_store *w = open_at(dbpath, FJ_STORE_WRITE, 0);
    const char *ev = "ccb,hostname=s1,loglevel=info log=\"done\" 1740027951\n"
                     "start_job event=\"{\\\"jobId\\\":1,\\\"cluster\\\":\\\"c\\\",\\\"startTime\\\":100,\\\"user\\\":\\\"u\\\","
                     "\\\"resources\\\":[{\\\"hostname\\\":\\\"n\\\"}]}\" 1740027951\n";
    write_lp(w, ev);
    write_lp(w, ev); /* re-sent: no new rows, the start is a duplicate */
    cr_expect_eq(fj_test_q1(dbpath, "SELECT count(*) FROM cc_messages"), 2);
    cr_expect_eq(fj_test_q1(dbpath, "SELECT count(*) FROM cc_jobs"), 1);
    /* the REST path's outcome record */
    fj_batch *b = fj_batch_new();
    fj_envelope *e = fj_batch_add(b);
    fj_cc_job j;
    fj_cc_job_result res = {0};
    const char *stop = "{\"jobId\":1,\"cluster\":\"c\",\"stopTime\":50}";
    cr_assert_eq(fj_cc_job_parse(b->arena, FJ_CC_JOB_STOP, stop, strlen(stop), NULL, &j, NULL), FJ_OK);
    j.result = &res;
    e->kind = FJ_KIND_METRICS;
    e->u.metrics.jobs = &j;
    e->u.metrics.n_jobs = 1;
    fj_write_count cnt = {0};
    cr_assert_eq(fj_store_write(w, &b, 1, &cnt, NULL), FJ_OK);
    cr_expect_eq(res.status, FJ_EINVAL, "stop before start");
    j.stop_time = 500;
    cr_assert_eq(fj_store_write(w, &b, 1, &cnt, NULL), FJ_OK);
    cr_expect_eq(res.status, FJ_OK);
    cr_expect_eq(res.start_time, 100);
    cr_assert_eq(fj_store_write(w, &b, 1, &cnt, NULL), FJ_OK);
    cr_expect_eq(res.status, FJ_ECONFLICT, "already stopped");
    j.job_id = 2;
    cr_assert_eq(fj_store_write(w, &b, 1, &cnt, NULL), FJ_OK);
    cr_expect_eq(res.status, FJ_ENOTFOUND);
    fj_batch_free(b);
    fj_store *r = open_at(dbpath, FJ_STORE_READ, 0);
    payloads got = {.sink = {payloads_table, payloads_row}};
    fj_cc_msg_query q = {.cluster = "c", .kind = "log"};
    cr_assert_eq(fj_store_ts_cc_messages(r, &q, &got.sink, NULL), FJ_OK);
    cr_expect_eq(got.table, &fj_qt_cc_events);
    cr_assert_eq(got.n, 1);
    cr_expect_str_eq(got.last, "done");
    fj_store_close(r);
    fj_store_close(w);
}

Test(sqlite_ts, retention_drops_old_chunks)
{
    fj_store_opts o = {.mode = FJ_STORE_WRITE, .create = true, .ts_seal_points = 2, .ts_retention_s = 1};
    fj_store *w = NULL;
    cr_assert_eq(fj_store_open(dbpath, &o, &w, NULL), FJ_OK);
    cr_assert_eq(fj_store_ts_start(w, &o, NULL), FJ_OK);
    write_lp(w, series_body("old", 0, 4, 1)); /* 2023: far older than a second */
    cr_expect(fj_test_q1(dbpath, "SELECT count(*) FROM ts_chunk") >= 1);
    sleep(2);
    cr_assert_eq(fj_store_ts_maintain(w, NULL), FJ_OK);
    cr_expect_eq(fj_test_q1(dbpath, "SELECT count(*) FROM ts_chunk"), 0, "chunks past retention are dropped");
    cr_expect_eq(fj_test_q1(dbpath, "SELECT count(*) FROM request_log"), 0, "durable log rows are trimmed");
    fj_store_close(w);
}
