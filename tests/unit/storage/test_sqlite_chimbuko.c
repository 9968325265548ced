/* Tests of storage/sqlite_chimbuko.c: Chimbuko envelopes through fj_store_write (the group-commit
 * path): row counts, re-sending, points only on change, all-or-nothing with other envelopes; and
 * the query ops read back through a row sink. */
#include "../fj_test.h"
#include "chimbuko.h"
#include "store.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define V2 FJ_SHARED_DIR "/data/chimbuko/synthetic-v2/"

static char dbpath[256];
static int db_counter;

static void rm_db(const char *p)
{
    char b[300];
    unlink(p);
    snprintf(b, sizeof b, "%s-wal", p);
    unlink(b);
    snprintf(b, sizeof b, "%s-shm", p);
    unlink(b);
}

static void setup(void)
{
    snprintf(dbpath, sizeof dbpath, "/tmp/fj_test_chimbuko_%d_%d.db", (int)getpid(), db_counter++);
    rm_db(dbpath);
}

static void teardown(void)
{
    rm_db(dbpath);
}

TestSuite(sqlite_chimbuko, .init = setup, .fini = teardown);

static fj_store *open_store(fj_store_mode mode)
{
    fj_store_opts o = {.mode = mode, .create = mode == FJ_STORE_WRITE};
    fj_store *s = NULL;
    fj_err err = {0};
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_OK, "%s", err.message);
    return s;
}

static int64_t q1(const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* A batch of one envelope decoded from text (a packet when c is FJ_CB_PACKET). */
static fj_batch *decode(const char *text, fj_cb_collection c, const char *run)
{
    fj_batch *b = fj_batch_new();
    fj_err err = {0};
    fj_status st = c == FJ_CB_PACKET ? fj_chimbuko_decode_packet(text, strlen(text), b, &err)
                                     : fj_chimbuko_decode_records(text, strlen(text), c, b, &err);
    cr_assert_eq(st, FJ_OK, "%s at %s", err.message, err.path);
    b->envs[0].cluster = "hpc1";
    b->envs[0].u.chimbuko.run = run;
    return b;
}

static fj_batch *decode_file(const char *name, fj_cb_collection c, const char *run)
{
    char path[512];
    size_t len;
    snprintf(path, sizeof path, V2 "%s", name);
    char *text = fj_test_read_file(path, &len);
    cr_assert(text, "%s", path);
    fj_batch *b = decode(text, c, run);
    free(text);
    return b;
}

static fj_write_count write1(fj_store *s, fj_batch *b)
{
    fj_write_count c = {0};
    fj_err err = {0};
    cr_assert_eq(fj_store_write(s, &b, 1, &c, &err), FJ_OK, "%s", err.message);
    fj_batch_free(b);
    return c;
}

Test(sqlite_chimbuko, packets_counts_and_resending)
{
    fj_store *s = open_store(FJ_STORE_WRITE);
    fj_write_count c = write1(s, decode_file("pserver-packet-full.json", FJ_CB_PACKET, "r1"));
    /* packet, rank stats, 2 steps, 2 functions, 1 counter, 1 metrics row */
    cr_expect_eq(c.inserted, 8);
    cr_expect_eq(c.duplicates, 0);
    c = write1(s, decode_file("pserver-packet-full.json", FJ_CB_PACKET, "r1"));
    cr_expect_eq(c.inserted, 0);
    cr_expect_eq(c.duplicates, 8);
    /* The idle packet repeats the counter unchanged: only the packet row is new. */
    c = write1(s, decode_file("pserver-packet-idle.json", FJ_CB_PACKET, "r1"));
    cr_expect_eq(c.inserted, 1);
    cr_expect_eq(c.duplicates, 1);
    c = write1(s, decode_file("pserver-packet-minimal.json", FJ_CB_PACKET, "r1"));
    cr_expect_eq(c.inserted, 1);
    /* The same packet in another run is new. */
    c = write1(s, decode_file("pserver-packet-full.json", FJ_CB_PACKET, "r2"));
    cr_expect_eq(c.inserted, 8);
    cr_expect_eq(q1("SELECT count(*) FROM chimbuko_packets"), 4);
    cr_expect_eq(q1("SELECT count(*) FROM chimbuko_counter_stats"), 2);
    cr_expect_eq(q1("SELECT count(*) FROM chimbuko_rank_steps WHERE n_anomalies = 3 AND score_max = 7.3125"), 2);
    fj_store_close(s);
}

Test(sqlite_chimbuko, function_points_only_on_change)
{
    fj_store *s = open_store(FJ_STORE_WRITE);
    const char *p1 = "{\"created_at\":1000,\"version\":2,\"anomaly_stats\":{\"created_at\":1000,\"func\":[{\"app\":0,"
                     "\"fid\":5,\"name\":\"f\",\"stats\":{\"accumulate\":1,\"count\":1,\"kurtosis\":0,\"maximum\":1,"
                     "\"mean\":1,\"minimum\":1,\"skewness\":0,\"stddev\":0},\"inclusive\":{\"accumulate\":10,\"count\":"
                     "COUNT,\"kurtosis\":0,\"maximum\":10,\"mean\":10,\"minimum\":10,\"skewness\":0,\"stddev\":0},"
                     "\"exclusive\":{\"accumulate\":10,\"count\":1,\"kurtosis\":0,\"maximum\":10,\"mean\":10,"
                     "\"minimum\":10,\"skewness\":0,\"stddev\":0}}]}}";
    char buf[2048];
    /* t=1000 calls 1; t=2000 calls 1 (same: no point); t=3000 calls 2 (point); t=1500 late, calls 1
     * (same as the point before it: no point) */
    const struct {
        int t, calls;
        uint64_t inserted;
    } seq[] = {{1000, 1, 2}, {2000, 1, 1}, {3000, 2, 2}, {1500, 1, 1}};
    for (size_t i = 0; i < 4; i++) {
        char t[16], calls[8];
        snprintf(t, sizeof t, "%d", seq[i].t);
        snprintf(calls, sizeof calls, "%d", seq[i].calls);
        /* substitute the created_at (twice) and the count */
        const char *src = p1;
        size_t o = 0;
        while (*src) {
            if (!strncmp(src, "1000", 4)) {
                o += (size_t)snprintf(buf + o, sizeof buf - o, "%s", t);
                src += 4;
            } else if (!strncmp(src, "COUNT", 5)) {
                o += (size_t)snprintf(buf + o, sizeof buf - o, "%s", calls);
                src += 5;
            } else {
                buf[o++] = *src++;
            }
        }
        buf[o] = '\0';
        fj_write_count c = write1(s, decode(buf, FJ_CB_PACKET, "r"));
        cr_expect_eq(c.inserted, seq[i].inserted, "packet at %d: %llu inserted", seq[i].t,
                     (unsigned long long)c.inserted);
    }
    cr_expect_eq(q1("SELECT count(*) FROM chimbuko_func_stats"), 2);
    fj_store_close(s);
}

Test(sqlite_chimbuko, all_or_nothing_with_a_failing_envelope)
{
    fj_store *s = open_store(FJ_STORE_WRITE);
    fj_batch *b = decode_file("pserver-packet-full.json", FJ_CB_PACKET, "r1");
    fj_envelope *e = fj_batch_add(b);
    e->kind = FJ_KIND__COUNT; /* not a kind: the backend refuses it mid-transaction */
    e->cluster = "hpc1";
    fj_write_count c[2];
    fj_err err = {0};
    cr_expect_neq(fj_store_write(s, &b, 1, c, &err), FJ_OK);
    fj_batch_free(b);
    cr_expect_eq(q1("SELECT count(*) FROM chimbuko_packets"), 0);
    cr_expect_eq(q1("SELECT count(*) FROM chimbuko_rank_steps"), 0);
    fj_store_close(s);
}

/* A sink that keeps the text of one column of each row. */
typedef struct capture {
    fj_sink sink;
    const fj_qtable *t;
    int col;
    const char *want_col;
    char rows[64][96];
    size_t n, tables;
} capture;

static fj_status cap_table(fj_sink *k, const fj_qtable *t)
{
    capture *c = (capture *)k;
    c->t = t;
    c->col = fj_qtable_col(t, c->want_col);
    c->tables++;
    return FJ_OK;
}

static fj_status cap_row(fj_sink *k, const fj_value *v)
{
    capture *c = (capture *)k;
    if (c->n < 64 && c->col >= 0) {
        const fj_value *x = &v[c->col];
        if (x->t == FJ_VT_TEXT || x->t == FJ_VT_JSON)
            snprintf(c->rows[c->n], sizeof c->rows[c->n], "%s", x->s);
        else if (x->t == FJ_VT_INT)
            snprintf(c->rows[c->n], sizeof c->rows[c->n], "%lld", (long long)x->i);
        else
            snprintf(c->rows[c->n], sizeof c->rows[c->n], "null");
    }
    c->n++;
    return FJ_OK;
}

static capture cap(const char *col)
{
    capture c = {.sink = {cap_table, cap_row}, .want_col = col};
    return c;
}

Test(sqlite_chimbuko, queries)
{
    fj_store *w = open_store(FJ_STORE_WRITE);
    write1(w, decode_file("pserver-packet-full.json", FJ_CB_PACKET, "r1"));
    write1(w, decode_file("anomalies-record-cpu-hbos.json", FJ_CB_ANOMALIES, "r1"));
    write1(w, decode_file("anomalies-record-gpu-sstd.json", FJ_CB_ANOMALIES, "r1"));
    write1(w, decode_file("anomalies-record-cpu-hbos.json", FJ_CB_NORMALEXECS, "r1"));
    write1(w, decode_file("metadata-records.json", FJ_CB_METADATA, "r1"));
    fj_store *s = open_store(FJ_STORE_READ);
    const fj_store_ops *ops = fj_store_ops_of(s);
    fj_err err = {0};
    fj_cb_query q;

    fj_cb_query_init(&q);
    q.cluster = "hpc1";
    capture c = cap("run");
    cr_assert_eq(ops->cb_runs(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.n, 1);
    cr_expect_str_eq(c.rows[0], "r1");

    c = cap("step");
    q.series = FJ_CBS_RANKS;
    cr_assert_eq(ops->cb_series(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.t, &fj_qt_cb_ranks);
    cr_expect_eq(c.n, 2);
    cr_expect_str_eq(c.rows[0], "11");
    cr_expect_str_eq(c.rows[1], "12");

    c = cap("anomalies");
    cr_assert_eq(ops->cb_top(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.tables, 2);
    cr_expect_eq(c.n, 2); /* one rank, one function */
    cr_expect_str_eq(c.rows[0], "4");
    cr_expect_str_eq(c.rows[1], "2");

    c = cap("event");
    q.collection = FJ_CB_PACKET; /* both event collections */
    cr_assert_eq(ops->cb_records(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.n, 3);
    q.collection = FJ_CB_ANOMALIES;
    q.limit = 1;
    c = cap("event");
    cr_assert_eq(ops->cb_records(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.n, 1);
    cr_expect_str_eq(c.rows[0], "1:12:4711");
    cr_expect(q.next.set, "a second page exists");
    q.after = q.next;
    c = cap("event");
    cr_assert_eq(ops->cb_records(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.n, 1);
    cr_expect_str_eq(c.rows[0], "1:12:9001");
    cr_expect(!q.next.set, "the last page");

    fj_cb_query_init(&q);
    q.cluster = "hpc1";
    q.collection = FJ_CB_METADATA;
    q.rank = 1;
    c = cap("value");
    cr_assert_eq(ops->cb_records(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.n, 5);

    q.cluster = "nowhere";
    c = cap("run");
    cr_expect_eq(ops->cb_runs(s, &q, &c.sink, &err), FJ_ENOTFOUND);
    q.cluster = NULL;
    cr_expect_eq(ops->cb_runs(s, &q, &c.sink, &err), FJ_EINVAL);
    fj_store_close(s);
    fj_store_close(w);
}
