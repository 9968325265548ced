/* Tests of storage/ts/writer.c: the metrics writer's schedule (pure functions), the maintenance
 * pass and its clean-up callbacks, point records, and the replay of request-log rows. */
#include "storage/ts/writer.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define S FJ_TSW_NS

/* A writer as fj_tsw_open leaves it at monotonic time 0, with the given settings. */
static fj_ts_writer sched(int64_t retention_s, int64_t flush_s, int64_t keep_s)
{
    fj_ts_writer w = {.retention_ns = retention_s * S, .flush_ns = flush_s * S, .keep_ns = keep_s * S};
    return w;
}

Test(ts_writer, retention_every_is_a_quarter_between_1s_and_10min)
{
    cr_assert_eq(fj_tsw_retention_every(0), S);
    cr_assert_eq(fj_tsw_retention_every(2 * S), S);
    cr_assert_eq(fj_tsw_retention_every(8 * S), 2 * S);
    cr_assert_eq(fj_tsw_retention_every(3600 * S), 600 * S);
    cr_assert_eq(fj_tsw_retention_every(30 * 86400 * S), 600 * S);
}

Test(ts_writer, first_lsn)
{
    cr_assert_eq(fj_tsw_first_lsn(0, 0), 1);  /* empty database */
    cr_assert_eq(fj_tsw_first_lsn(7, 0), 7);  /* log trimmed: the saved next lsn */
    cr_assert_eq(fj_tsw_first_lsn(7, 6), 7);
    cr_assert_eq(fj_tsw_first_lsn(7, 9), 10); /* rows written after the last save */
    cr_assert_eq(fj_tsw_first_lsn(0, 41), 42);
}

Test(ts_writer, durable_of)
{
    fj_ts_writer w = {.next_lsn = 12};
    cr_assert_eq(fj_tsw_durable_of(&w, UINT64_MAX), 12); /* nothing buffered: all given so far */
    cr_assert_eq(fj_tsw_durable_of(&w, 5), 5);
}

Test(ts_writer, flush_due)
{
    fj_ts_writer w = sched(0, 60, 0);
    w.last_flush = 100 * S;
    cr_assert_not(fj_tsw_flush_due(&w, 159 * S));
    cr_assert(fj_tsw_flush_due(&w, 160 * S));
}

Test(ts_writer, retention_due)
{
    fj_ts_writer off = sched(0, 60, 0);
    cr_assert_not(fj_tsw_retention_due(&off, INT64_MAX / 2));
    fj_ts_writer w = sched(40, 60, 0); /* every 10 s */
    w.last_retention = 5 * S;
    cr_assert_not(fj_tsw_retention_due(&w, 14 * S));
    cr_assert(fj_tsw_retention_due(&w, 15 * S));
}

Test(ts_writer, trim_due_without_keep_follows_the_durable_lsn)
{
    fj_ts_writer w = sched(0, 60, 0);
    w.durable_saved = 10;
    w.trimmed_below = 10;
    cr_assert_not(fj_tsw_trim_due(&w, 0));
    w.durable_saved = 11;
    cr_assert(fj_tsw_trim_due(&w, 0)); /* at once, however recent the last trim */
}

Test(ts_writer, trim_due_with_keep_once_a_minute)
{
    fj_ts_writer w = sched(0, 60, 3600);
    w.durable_saved = 11;
    w.last_trim = 100 * S;
    cr_assert_not(fj_tsw_trim_due(&w, 159 * S));
    cr_assert(fj_tsw_trim_due(&w, 160 * S));
    w.trimmed_below = 11; /* nothing durable beyond it */
    cr_assert_not(fj_tsw_trim_due(&w, 160 * S));
}

Test(ts_writer, txn_due)
{
    fj_ts_writer w = sched(0, 60, 0);
    w.durable_saved = w.trimmed_below = 7;
    cr_assert_not(fj_tsw_txn_due(&w, 7, 0, false)); /* idle: no transaction */
    cr_assert(fj_tsw_txn_due(&w, 7, 0, true));      /* the backend's own work */
    cr_assert(fj_tsw_txn_due(&w, 8, 0, false));     /* a durable lsn to save */
    w.dirty = true;
    cr_assert(fj_tsw_txn_due(&w, 7, 0, false));
    w.dirty = false;
    w.durable_saved = 9; /* saved, not trimmed yet */
    cr_assert(fj_tsw_txn_due(&w, 9, 0, false));

    fj_ts_writer r = sched(40, 60, 0);
    cr_assert_not(fj_tsw_txn_due(&r, 0, 9 * S, false));
    cr_assert(fj_tsw_txn_due(&r, 0, 10 * S, false)); /* retention due */

    fj_ts_writer k = sched(0, 60, 3600);
    k.durable_saved = 9; /* with keep, untrimmed rows wait for the minute */
    cr_assert_not(fj_tsw_txn_due(&k, 9, 59 * S, false));
    cr_assert(fj_tsw_txn_due(&k, 9, 60 * S, false));
}

static fj_ts_writer opened(const fj_store_opts *o, int64_t now)
{
    fj_ts_writer w = {0};
    fj_err err = {0};
    cr_assert_eq(fj_tsw_open(&w, o, 1, 3, 5, 4, now, &err), FJ_OK, "%s", err.message);
    return w;
}

Test(ts_writer, open_takes_settings_and_lsns)
{
    fj_store_opts o = {.ts_retention_s = 86400, .ts_flush_interval_s = 30, .ts_log_keep_s = 600};
    fj_ts_writer w = opened(&o, 77);
    cr_assert_not_null(w.eng);
    cr_assert_eq(w.retention_ns, 86400 * S);
    cr_assert_eq(w.flush_ns, 30 * S);
    cr_assert_eq(w.keep_ns, 600 * S);
    cr_assert_eq(w.next_lsn, 5);
    cr_assert_eq(w.durable_saved, 3);
    cr_assert_eq(w.next_saved, 5);
    cr_assert_eq(w.last_maint, 77);
    cr_assert_eq(w.last_flush, 77);
    cr_assert_eq(w.last_retention, 77);
    cr_assert_not(w.started);
    fj_tsw_free(&w);

    fj_ts_writer d = opened(NULL, 0); /* defaults: flush every 12 h, no retention, no keep */
    cr_assert_eq(d.flush_ns, 12 * 3600 * S);
    cr_assert_eq(d.retention_ns, 0);
    cr_assert_eq(d.keep_ns, 0);
    fj_tsw_free(&d);
}

Test(ts_writer, maintain_at_most_once_a_second_and_flushes_when_due)
{
    fj_store_opts o = {.ts_flush_interval_s = 10};
    fj_ts_writer w = opened(&o, 0);
    cr_assert_not(fj_tsw_maintain(&w, 100 * S, false)); /* not started */
    w.started = true;
    w.durable_saved = w.trimmed_below = w.next_lsn; /* all saved and trimmed, nothing buffered */
    cr_assert_not(fj_tsw_maintain(&w, S / 2, true));    /* less than a second */
    cr_assert_not(fj_tsw_maintain(&w, 2 * S, false));   /* idle */
    cr_assert_eq(w.last_maint, 2 * S);
    cr_assert(fj_tsw_maintain(&w, 3 * S, true));        /* the backend's work */
    cr_assert_not(w.dirty);
    cr_assert(fj_tsw_maintain(&w, 10 * S, false)); /* the flush interval: flushed, to emit */
    cr_assert(w.dirty);
    cr_assert_eq(w.last_flush, 10 * S);
    fj_tsw_end(&w, true);
    cr_assert_not(w.dirty);
    fj_tsw_free(&w);
}

/* A checkpoint costs what the open buffers weigh: it is due once the log written since the last
 * one (5 bytes a point) weighs as much when writes paused, or four times as much while they go on;
 * at most one every 10 s, none with nothing new, none with request-log-keep (the log is kept
 * anyway). */
Test(ts_writer, checkpoint_due_when_the_log_outweighs_the_open_buffers)
{
    fj_ts_writer w = sched(0, 3600, 0);
    w.last_ckpt = 0;
    cr_assert_not(fj_tsw_checkpoint_due(&w, 9 * S, 1000000, 1000, false));   /* under 10 s */
    cr_assert(fj_tsw_checkpoint_due(&w, 10 * S, 800, 1000, false));           /* 4000 bytes of log */
    cr_assert_not(fj_tsw_checkpoint_due(&w, 10 * S, 799, 1000, false));
    cr_assert(fj_tsw_checkpoint_due(&w, 10 * S, 200, 1000, true));            /* as much, idle */
    cr_assert_not(fj_tsw_checkpoint_due(&w, 10 * S, 199, 1000, true));
    cr_assert_not(fj_tsw_checkpoint_due(&w, 100 * S, 0, 0, true));            /* nothing new */

    fj_store_opts keep = {.ts_log_keep_s = 600};
    fj_ts_writer k = opened(&keep, 0);
    cr_assert_not(k.checkpoints);
    fj_tsw_free(&k);

    /* maintain: writes pause for 2 s, then the checkpoint is asked for; taking it resets the clock */
    fj_ts_writer m = opened(NULL, 0);
    cr_assert(m.checkpoints);
    m.started = true;
    m.durable_saved = m.trimmed_below = m.next_lsn;
    fj_ts_key key = {.cluster = {"c", 1}, .host = {"h", 1}, .metric = {"m", 1}};
    for (int i = 1; i <= 30; i++) {
        fj_ts_point p = {key, i * S, 1.5};
        cr_assert_eq(fj_ts_append(m.eng, &p, 1, NULL, NULL, NULL), FJ_OK);
    }
    fj_ts_stats st;
    fj_ts_engine_stats(m.eng, &st);
    cr_assert_eq(st.unckpt_writes, 30);
    cr_assert(st.open_bytes > 30 * 5 / 4 && st.open_bytes <= 30 * 5, "%zu", st.open_bytes); /* due idle only */
    (void)fj_tsw_maintain(&m, 10 * S, false); /* sees the writes */
    cr_assert_not(m.ckpt_now);
    (void)fj_tsw_maintain(&m, 11 * S, false);
    cr_assert_not(m.ckpt_now);
    cr_assert(fj_tsw_maintain(&m, 12 * S, false)); /* writes paused for 2 s */
    cr_assert(m.ckpt_now);
    fj_tsw_free(&m);
}

Test(ts_writer, share_due_every_interval_while_there_are_new_writes)
{
    fj_ts_writer w = sched(0, 3600, 0);
    cr_assert_not(fj_tsw_share_due(&w, 100 * S, 10)); /* off: share_ns 0 */
    w.share_ns = 2 * S;
    w.last_share = 10 * S;
    cr_assert_not(fj_tsw_share_due(&w, 12 * S, 10)); /* no other server reads the database */
    w.share_peers = true;
    cr_assert_not(fj_tsw_share_due(&w, 11 * S, 10));
    cr_assert(fj_tsw_share_due(&w, 12 * S, 10));
    cr_assert_not(fj_tsw_share_due(&w, 12 * S, 0)); /* nothing new since the last checkpoint */

    /* maintain: with the log kept (no checkpoints of their own) a share still asks for one, timed
     * from the pass that asked, and not again within the interval */
    fj_store_opts keep = {.ts_log_keep_s = 600};
    fj_ts_writer m = opened(&keep, 0);
    cr_assert_not(m.checkpoints);
    m.share_ns = S;
    m.share_peers = true;
    m.started = true;
    m.durable_saved = m.trimmed_below = m.next_lsn;
    fj_ts_key key = {.cluster = {"c", 1}, .host = {"h", 1}, .metric = {"m", 1}};
    fj_ts_point p = {key, S, 1.5};
    cr_assert_eq(fj_ts_append(m.eng, &p, 1, NULL, NULL, NULL), FJ_OK);
    cr_assert(fj_tsw_maintain(&m, S, false));
    cr_assert(m.ckpt_now);
    cr_assert_eq(m.last_share, S);
    m.ckpt_now = false;
    cr_assert_not(fj_tsw_share_due(&m, S + S / 2, 1));
    cr_assert(fj_tsw_maintain(&m, 2 * S, false)); /* the write is still not in a committed checkpoint */
    cr_assert(m.ckpt_now);
    /* the other server gone: no share asked for, a checkpoint only when one is due as without */
    m.ckpt_now = false;
    m.share_peers = false;
    cr_assert_not(fj_tsw_sharing(&m));
    fj_tsw_maintain(&m, 3 * S, false);
    cr_assert_not(m.ckpt_now);
    fj_tsw_free(&m);
}

typedef struct calls {
    int retention, trim;
    int64_t before, received_before;
    uint64_t below;
    fj_status fail;
} calls;

static fj_status on_retention(void *ud, int64_t before_ns, fj_err *err)
{
    (void)err;
    calls *c = ud;
    c->retention++;
    c->before = before_ns;
    return c->fail;
}

static fj_status on_trim(void *ud, uint64_t below_lsn, int64_t received_before, fj_err *err)
{
    (void)err;
    calls *c = ud;
    c->trim++;
    c->below = below_lsn;
    c->received_before = received_before;
    return FJ_OK;
}

static const fj_tsw_cleanup_ops ops = {on_retention, on_trim};

Test(ts_writer, cleanup_runs_what_is_due)
{
    fj_ts_writer w = sched(40, 60, 0);
    w.durable_saved = 9;
    calls c = {0};
    fj_err err = {0};
    int64_t wall = 1700000000 * S;
    cr_assert_eq(fj_tsw_cleanup(&w, &ops, &c, wall, 10 * S, &err), FJ_OK);
    cr_assert_eq(c.retention, 1);
    cr_assert_eq(c.before, wall - 40 * S);
    cr_assert_eq(w.last_retention, 10 * S);
    cr_assert_eq(c.trim, 1);
    cr_assert_eq(c.below, 9);
    cr_assert_eq(c.received_before, INT64_MAX); /* without keep: by lsn only */
    cr_assert_eq(w.trimmed_below, 9);
    /* Again at once: retention not due, nothing new to trim. */
    cr_assert_eq(fj_tsw_cleanup(&w, &ops, &c, wall, 11 * S, &err), FJ_OK);
    cr_assert_eq(c.retention, 1);
    cr_assert_eq(c.trim, 1);
}

Test(ts_writer, cleanup_with_keep_trims_by_age_and_keeps_trimming)
{
    fj_ts_writer w = sched(0, 60, 600);
    w.durable_saved = 9;
    calls c = {0};
    fj_err err = {0};
    int64_t wall = 1700000000 * S;
    cr_assert_eq(fj_tsw_cleanup(&w, &ops, &c, wall, 60 * S, &err), FJ_OK);
    cr_assert_eq(c.retention, 0);
    cr_assert_eq(c.trim, 1);
    cr_assert_eq(c.received_before, wall - 600 * S);
    cr_assert_eq(w.trimmed_below, 0); /* rows younger than keep remain: trimmed again later */
    cr_assert_eq(w.last_trim, 60 * S);
    cr_assert_eq(fj_tsw_cleanup(&w, &ops, &c, wall, 61 * S, &err), FJ_OK);
    cr_assert_eq(c.trim, 1);
    cr_assert_eq(fj_tsw_cleanup(&w, &ops, &c, wall, 120 * S, &err), FJ_OK);
    cr_assert_eq(c.trim, 2);
}

Test(ts_writer, cleanup_stops_at_a_failure)
{
    fj_ts_writer w = sched(40, 60, 0);
    w.durable_saved = 9;
    calls c = {.fail = FJ_EIO};
    fj_err err = {0};
    cr_assert_eq(fj_tsw_cleanup(&w, &ops, &c, 0, 10 * S, &err), FJ_EIO);
    cr_assert_eq(c.trim, 0);
    cr_assert_eq(w.trimmed_below, 0);
}

static const fj_ts_key key_a = {{"c", 1}, {"h", 1}, {"cpu", 3}, {"", 0}, {"", 0}, {"", 0}, {"", 0}, FJ_TS_FLOAT};

/* Points in the engine: buffered, or sealed into chunks. */
static size_t in_engine(const fj_ts_writer *w)
{
    fj_ts_stats st;
    fj_ts_engine_stats(w->eng, &st);
    return st.buffered_points + st.sealed_points;
}

Test(ts_writer, point_record_replays_into_the_engine)
{
    fj_ts_writer w = opened(NULL, 0);
    fj_err err = {0};
    enum { N = 2500 }; /* more than a slice */
    static fj_metric_point p[N];
    static uint32_t ids[N];
    for (size_t i = 0; i < N; i++) {
        p[i] = (fj_metric_point){.t = 1700000000 * S + (int64_t)i * S, .v = (double)i / 10};
        ids[i] = 4;
    }
    cr_assert_eq(fj_tsw_record_begin(&w, &err), FJ_OK);
    cr_assert_eq(fj_tsw_record_add(&w, ids, p, N, &err), FJ_OK);
    const void *rec;
    size_t len;
    cr_assert_eq(fj_tsw_record_finish(&w, &rec, &len, &err), FJ_OK);
    void *copy = malloc(len);
    memcpy(copy, rec, len);

    cr_assert_eq(fj_ts_engine_load_series(w.eng, 4, &key_a), FJ_OK);
    fj_tsw_replay r = {0};
    fj_tsw_logrow row = {.lsn = 40, .unit_ns = FJ_TSW_POINT_RECORD, .size = N, .body = copy, .body_len = len};
    bool skipped = true;
    cr_assert_eq(fj_tsw_replay_row(&w, &r, &row, "", NULL, NULL, &skipped, &err), FJ_OK, "%s", err.message);
    cr_assert_not(skipped);
    cr_assert_eq(r.n_pts, N);
    cr_assert_eq(w.next_lsn, 41);
    cr_assert_eq(in_engine(&w), N);
    cr_assert_eq(fj_ts_engine_durable_lsn(w.eng), 40);
    fj_tsw_replay_done(&r);
    free(copy);
    fj_tsw_free(&w);
}

Test(ts_writer, corrupt_point_record_is_warned_about_not_fatal)
{
    fj_ts_writer w = opened(NULL, 0);
    fj_err err = {0};
    fj_tsw_replay r = {0};
    fj_tsw_logrow row = {.lsn = 3, .unit_ns = FJ_TSW_POINT_RECORD, .body = "nope", .body_len = 4};
    cr_assert_eq(fj_tsw_replay_row(&w, &r, &row, " of instance 'x'", NULL, NULL, NULL, &err), FJ_OK);
    cr_assert_eq(r.n_pts, 0);
    cr_assert_eq(w.next_lsn, 5); /* opened with next 5: an older row does not move it back */
    fj_tsw_replay_done(&r);
    fj_tsw_free(&w);
}

typedef struct appended {
    size_t calls, points;
    int64_t t0;
    double v0;
} appended;

static fj_status append_cb(void *ud, const fj_metrics *m, fj_err *err)
{
    (void)err;
    appended *a = ud;
    a->calls++;
    a->points += m->n_points;
    if (m->n_points) {
        a->t0 = m->points[0].t;
        a->v0 = m->points[0].v;
    }
    return FJ_OK;
}

Test(ts_writer, archived_body_round_trips_and_corrupt_one_is_skipped)
{
    fj_ts_writer w = opened(NULL, 0);
    fj_err err = {0};
    const char *body = "cpu_load,cluster=c,hostname=h,type=node value=1.5 1700000040\n"
                       "cpu_load,cluster=c,hostname=g,type=node value=2.5 1700000040\n";
    fj_metrics m = {.raw = body, .raw_len = strlen(body)};
    const void *z;
    size_t zn;
    cr_assert_eq(fj_tsw_compress(&w, &m, &z, &zn, &err), FJ_OK);
    void *copy = malloc(zn);
    memcpy(copy, z, zn);

    fj_tsw_replay r = {0};
    appended a = {0};
    fj_tsw_logrow row = {.lsn = 9, .received = 1700000050 * S, .unit_ns = S, .max_future_ns = 3600 * S,
                         .size = strlen(body), .body = copy, .body_len = zn};
    bool skipped = true;
    cr_assert_eq(fj_tsw_replay_row(&w, &r, &row, "", append_cb, &a, &skipped, &err), FJ_OK, "%s", err.message);
    cr_assert_not(skipped);
    cr_assert_eq(a.calls, 1);
    cr_assert_eq(a.points, 2);
    cr_assert_eq(a.t0, 1700000040 * S);
    cr_assert_eq(a.v0, 1.5);
    cr_assert_eq(r.n_pts, 2);
    cr_assert_eq(w.next_lsn, 10);

    row.lsn = 10;
    row.size = strlen(body) + 1; /* does not match what it decompresses to */
    cr_assert_eq(fj_tsw_replay_row(&w, &r, &row, "", append_cb, &a, &skipped, &err), FJ_OK);
    cr_assert(skipped);
    cr_assert_eq(a.calls, 1);
    cr_assert_eq(w.next_lsn, 11); /* skipped rows are still past */
    fj_tsw_replay_done(&r);
    free(copy);
    fj_tsw_free(&w);
}

Test(ts_writer, append_ids_tags_points_with_the_lsn)
{
    fj_ts_writer w = opened(NULL, 0);
    fj_err err = {0};
    cr_assert_eq(fj_ts_engine_load_series(w.eng, 2, &key_a), FJ_OK);
    fj_metric_point p[3] = {{.t = 10 * S, .v = 1}, {.t = 11 * S, .v = 2}, {.t = 12 * S, .v = 3}};
    uint32_t ids[3] = {2, 2, 2};
    fj_ts_engine_set_lsn(w.eng, w.next_lsn++);
    cr_assert_eq(fj_tsw_append_ids(&w, p, ids, 3, &err), FJ_OK);
    cr_assert_eq(in_engine(&w), 3);
    cr_assert_eq(fj_tsw_durable_of(&w, fj_ts_engine_durable_lsn(w.eng)), 5);
    uint32_t bad = 99;
    cr_assert_neq(fj_tsw_append_ids(&w, p, &bad, 1, &err), FJ_OK); /* unknown series */
    fj_tsw_free(&w);
}

Test(ts_writer, end_after_rollback_forgets_what_was_saved)
{
    fj_ts_writer w = opened(NULL, 0);
    w.dirty = true;
    fj_tsw_end(&w, false);
    cr_assert_eq(w.durable_saved, 0);
    cr_assert_eq(w.next_saved, 0);
    cr_assert(w.dirty); /* still to emit with the next transaction */
    fj_tsw_free(&w);
}
