/* Tests of storage/sqlite/measure.c: aicr snapshots through fj_store_write (the group-commit path)
 * and back through fj_store_measure_latest, checked with plain sqlite3 queries on the file. */
#include "ingest/aicr.h"
#include "sqlite_test_db.h"
#include "storage/core/store.h"
#include "storage/core/store_measure.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char dbpath[256];

static void setup(void)
{
    fj_test_db_path(dbpath, sizeof dbpath, "measure", ".db");
}

static void teardown(void)
{
    fj_test_rm_db(dbpath);
}

TestSuite(measure, .init = setup, .fini = teardown);

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

static int64_t all_rows(void)
{
    return q1("SELECT (SELECT count(*) FROM measurement_snapshots) + (SELECT count(*) FROM measurements) + "
              "(SELECT count(*) FROM envelopes) + (SELECT count(*) FROM nodes) + (SELECT count(*) FROM clusters)");
}

/* Adds one snapshot envelope to b, decoded from YAML as the ingest route does. */
static fj_envelope *add(fj_batch *b, const char *cluster, const char *node, fj_time t, bool arrival, const char *yaml,
                        fj_time *stored)
{
    fj_aicr_snapshot *snap;
    fj_err err = {0};
    cr_assert_eq(fj_aicr_decode(b->arena, yaml, strlen(yaml), FJ_AICR_YAML, &snap, &err), FJ_OK, "%s", err.message);
    fj_envelope *e = fj_batch_add(b);
    cr_assert(e);
    e->kind = FJ_KIND_MEASUREMENTS;
    e->cluster = cluster;
    e->node = node;
    e->time = t;
    e->producer = "test";
    cr_assert_eq(fj_aicr_record(snap, b->arena, &e->u.measurements, &err), FJ_OK);
    e->u.measurements.arrival_time = arrival;
    e->u.measurements.stored_time = stored;
    return e;
}

static fj_status write1(fj_store *s, fj_batch *b, fj_write_count *c)
{
    fj_err err = {0};
    fj_status st = fj_store_write(s, &b, 1, c, &err);
    fj_batch_free(b);
    return st;
}

static const char *const SNAP_A = "measurements:\n"
                                  "- type: NetworkTopology\n"
                                  "  subtypes:\n"
                                  "  - subtype: capabilities\n"
                                  "    data: {rdma: true}\n"
                                  "  - subtype: pfs\n"
                                  "    items: [{context: {pciAddress: '0000:03:00.0'}, data: {rail: 0}}]\n";
static const char *const SNAP_B = "measurements:\n"
                                  "- type: NetworkTopology\n"
                                  "  subtypes:\n"
                                  "  - subtype: capabilities\n"
                                  "    data: {rdma: false}\n";

#define T0 1700000000

static char *latest(fj_store *s, const char *cluster, const char *node, fj_time *t, fj_status *st)
{
    static char text[4096];
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    fj_err err = {0};
    *st = fj_store_measure_latest(s, cluster, node, t, &b, &err);
    snprintf(text, sizeof text, "%s", b.data ? b.data : "");
    fj_buf_free(&b);
    return text;
}

Test(measure, write_count_and_read_back)
{
    fj_store *s = open_store(FJ_STORE_WRITE);
    fj_batch *b = fj_batch_new();
    fj_time stored = 0;
    add(b, "fox", "c1", T0, false, SNAP_A, &stored);
    fj_write_count c = {0};
    cr_assert_eq(write1(s, b, &c), FJ_OK);
    cr_expect_eq(c.inserted, 3, "the snapshot and its two subtypes");
    cr_expect_eq(c.duplicates, 0);
    cr_expect_eq(stored, T0);
    cr_expect_eq(q1("SELECT count(*) FROM measurement_snapshots WHERE time=1700000000 AND n_measurements=1 AND "
                    "n_subtypes=2"),
                 1);
    cr_expect_eq(q1("SELECT count(*) FROM measurements WHERE type='NetworkTopology' AND instance=0 AND "
                    "subtype='pfs' AND data LIKE '{\"subtype\":\"pfs\",%'"),
                 1);
    cr_expect_eq(q1("SELECT count(*) FROM envelopes WHERE kind='measurements' AND producer='test'"), 1);

    /* the same snapshot again adds nothing */
    int64_t before = all_rows();
    b = fj_batch_new();
    add(b, "fox", "c1", T0, false, SNAP_A, NULL);
    c = (fj_write_count){0};
    cr_assert_eq(write1(s, b, &c), FJ_OK);
    cr_expect_eq(c.inserted, 0);
    cr_expect_eq(c.duplicates, 3);
    cr_expect_eq(all_rows(), before);

    fj_store_close(s);
    /* a read handle gets it back */
    s = open_store(FJ_STORE_READ);
    fj_time t = 0;
    fj_status st;
    char *j = latest(s, "fox", "c1", &t, &st);
    cr_expect_eq(st, FJ_OK);
    cr_expect_eq(t, T0);
    cr_expect(strstr(j, "\"rdma\":true") && strncmp(j, "{\"kind\":\"Snapshot\"", 18) == 0, "%s", j);
    latest(s, "fox", "c2", &t, &st);
    cr_expect_eq(st, FJ_ENOTFOUND);
    latest(s, "other", "c1", &t, &st);
    cr_expect_eq(st, FJ_ENOTFOUND);
    fj_store_close(s);
}

Test(measure, latest_is_by_time)
{
    fj_store *s = open_store(FJ_STORE_WRITE);
    fj_batch *b = fj_batch_new();
    add(b, "fox", "c1", T0 + 100, false, SNAP_B, NULL);
    add(b, "fox", "c1", T0, false, SNAP_A, NULL); /* older, arriving late (from a spool) */
    add(b, "fox", "c9", T0 + 500, false, SNAP_A, NULL);
    fj_write_count c[3] = {{0}};
    cr_assert_eq(write1(s, b, c), FJ_OK);
    cr_expect_eq(c[0].inserted, 2);
    cr_expect_eq(c[1].inserted, 3);
    fj_time t;
    fj_status st;
    char *j = latest(s, "fox", "c1", &t, &st);
    cr_expect_eq(st, FJ_OK);
    cr_expect_eq(t, T0 + 100);
    cr_expect(strstr(j, "\"rdma\":false"), "%s", j);
    fj_store_close(s);
}

Test(measure, arrival_time_snapshots)
{
    fj_store *s = open_store(FJ_STORE_WRITE);
    fj_time stored = 0;
    fj_batch *b = fj_batch_new();
    add(b, "fox", "c1", T0, true, SNAP_A, &stored);
    fj_write_count c = {0};
    cr_assert_eq(write1(s, b, &c), FJ_OK);
    cr_expect_eq(stored, T0);
    cr_expect_eq(c.inserted, 3);

    /* a different one in the same second goes after it and becomes the latest */
    b = fj_batch_new();
    add(b, "fox", "c1", T0, true, SNAP_B, &stored);
    c = (fj_write_count){0};
    cr_assert_eq(write1(s, b, &c), FJ_OK);
    cr_expect_eq(c.inserted, 2);
    cr_expect_eq(stored, T0 + 1);
    fj_time t;
    fj_status st;
    char *j = latest(s, "fox", "c1", &t, &st);
    cr_expect_eq(t, T0 + 1);
    cr_expect(strstr(j, "\"rdma\":false"), "%s", j);

    /* the latest again, later: a duplicate, reported at the time it is stored under */
    int64_t before = all_rows();
    b = fj_batch_new();
    add(b, "fox", "c1", T0 + 50, true, SNAP_B, &stored);
    c = (fj_write_count){0};
    cr_assert_eq(write1(s, b, &c), FJ_OK);
    cr_expect_eq(c.inserted, 0);
    cr_expect_eq(c.duplicates, 2);
    cr_expect_eq(stored, T0 + 1);
    cr_expect_eq(all_rows(), before);

    /* back to the first content: the node's state changed back, a new row */
    b = fj_batch_new();
    add(b, "fox", "c1", T0 + 60, true, SNAP_A, &stored);
    c = (fj_write_count){0};
    cr_assert_eq(write1(s, b, &c), FJ_OK);
    cr_expect_eq(c.inserted, 3);
    cr_expect_eq(stored, T0 + 60);
    fj_store_close(s);
}

Test(measure, a_failed_group_leaves_nothing)
{
    fj_store *s = open_store(FJ_STORE_WRITE);
    fj_batch *b = fj_batch_new();
    add(b, "fox", "c1", T0, false, SNAP_A, NULL);
    fj_envelope *e = fj_batch_add(b);
    e->kind = FJ_KIND__COUNT; /* not a kind: the backend refuses it mid-transaction */
    e->cluster = "fox";
    e->node = "c2";
    e->time = T0;
    fj_write_count c[2] = {{0}};
    cr_expect_neq(write1(s, b, c), FJ_OK);
    cr_expect_eq(c[0].inserted, 0, "counts are zeroed on rollback");
    cr_expect_eq(q1("SELECT count(*) FROM measurement_snapshots"), 0);
    cr_expect_eq(q1("SELECT count(*) FROM measurements"), 0);
    /* and the handle still works */
    b = fj_batch_new();
    add(b, "fox", "c1", T0, false, SNAP_A, NULL);
    cr_expect_eq(write1(s, b, c), FJ_OK);
    cr_expect_eq(c[0].inserted, 3);
    fj_store_close(s);
}
