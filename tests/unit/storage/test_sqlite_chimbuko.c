/* Tests of storage/sqlite/chimbuko.c where SQLite differs from the other backends. Counts,
 * re-sending, points only on change, all-or-nothing and the query ops are the contract suite's
 * (tests/unit/storage/test_store_contract.c, chimbuko_*), run on every backend. */
#include "../fj_test.h"
#include "ingest/chimbuko.h"
#include "sqlite_test_db.h"
#include "storage/core/store.h"
#include "storage/core/store_chimbuko.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char dbpath[256];

static void setup(void)
{
    fj_test_db_path(dbpath, sizeof dbpath, "chimbuko", ".db");
}

static void teardown(void)
{
    fj_test_rm_db(dbpath);
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
    return fj_test_q1(dbpath, sql);
}

static fj_batch *decode_records(const char *text, fj_cb_collection c)
{
    fj_batch *b = fj_batch_new();
    fj_err err = {0};
    cr_assert_eq(fj_chimbuko_decode_records(text, strlen(text), c, b, &err), FJ_OK, "%s at %s", err.message,
                 err.path);
    b->envs[0].cluster = "hpc1";
    b->envs[0].u.chimbuko.run = "r";
    return b;
}

/* A sink that keeps the program index (app: the record's pid) of each metadata row. */
typedef struct capture {
    fj_sink sink;
    int col;
    fj_value pid[4];
    size_t n;
} capture;

static fj_status cap_table(fj_sink *k, const fj_qtable *t)
{
    capture *c = (capture *)k;
    c->col = fj_qtable_col(t, "app"); /* the record's pid */
    return FJ_OK;
}

static fj_status cap_row(fj_sink *k, const fj_value *v)
{
    capture *c = (capture *)k;
    if (c->n < 4 && c->col >= 0)
        c->pid[c->n] = v[c->col];
    c->n++;
    return FJ_OK;
}

/* Unsigned values past 2^63-1 cannot be stored as they are (SQLite and PostgreSQL integers are
 * signed 64-bit): the decoder refuses them with the field's path; 2^63-1 is stored and read back
 * as that integer. */
Test(sqlite_chimbuko, unsigned_values_exact_up_to_int64_max)
{
    fj_batch *bad = fj_batch_new();
    fj_err err = {0};
    const char *past = "{\"descr\":\"Hostname\",\"pid\":18446744073709551615,\"rid\":1,\"tid\":0,\"value\":\"n\"}";
    cr_expect_eq(fj_chimbuko_decode_records(past, strlen(past), FJ_CB_METADATA, bad, &err), FJ_EINVAL);
    cr_expect(strstr(err.path, "pid") != NULL && strstr(err.message, "too large") != NULL, "%s: %s", err.path,
              err.message);
    fj_batch_free(bad);

    fj_store *w = open_store(FJ_STORE_WRITE);
    fj_batch *b = decode_records("{\"descr\":\"Hostname\",\"pid\":9223372036854775807,\"rid\":1,\"tid\":0,"
                                 "\"value\":\"node0017\"}",
                                 FJ_CB_METADATA);
    fj_write_count c = {0};
    err = (fj_err){0};
    cr_assert_eq(fj_store_write(w, &b, 1, &c, &err), FJ_OK, "%s", err.message);
    fj_batch_free(b);
    cr_expect_eq(c.inserted, 1);
    cr_expect_eq(q1("SELECT count(*) FROM chimbuko_metadata WHERE pid = 9223372036854775807"), 1);

    fj_store *s = open_store(FJ_STORE_READ);
    fj_cb_query q;
    fj_cb_query_init(&q);
    q.cluster = "hpc1";
    q.collection = FJ_CB_METADATA;
    capture cap = {.sink = {cap_table, cap_row}};
    cr_assert_eq(fj_store_chimbuko_records(s, &q, &cap.sink, &err), FJ_OK, "%s", err.message);
    cr_assert_eq(cap.n, 1);
    cr_expect_eq(cap.pid[0].t, FJ_VT_INT);
    cr_expect_eq(cap.pid[0].i, INT64_MAX);
    fj_store_close(s);
    fj_store_close(w);
}
