/* Tests of storage/sqlite*.c: batches built by hand go through fj_store_write, and the rows are
 * checked with plain sqlite3 queries on the file. */
#include "alloc.h"
#include "storage/core/rectify.h"
#include "storage/sqlite/migrations.h"
#include "sqlite_test_db.h"
#include "storage/core/store.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dbpath[256];

/* The schema version this binary ships (migrations are numbered 1..n). */
#define LATEST ((int)fj_sqlite_n_migrations)

/* A fresh database path; a test that asks for a second one has the first removed, since the
 * suite's teardown only knows the current path. */
static void next_db(void)
{
    if (dbpath[0])
        fj_test_rm_db(dbpath);
    fj_test_db_path(dbpath, sizeof dbpath, "sqlite", ".db");
}

static void setup(void)
{
    next_db();
}

static void teardown(void)
{
    fj_test_rm_db(dbpath);
}

TestSuite(sqlite, .init = setup, .fini = teardown);

static fj_store *open_store(const char *path, fj_store_mode mode, bool create)
{
    fj_store_opts o = {.mode = mode, .create = create, .job_gap_s = 3600};
    fj_store *s = NULL;
    fj_err err = {0};
    fj_status st = fj_store_open(path, &o, &s, &err);
    cr_assert_eq(st, FJ_OK, "open %s: %s", path, err.message);
    return s;
}

static fj_store *open_w(void)
{
    return open_store(dbpath, FJ_STORE_WRITE, true);
}

static sqlite3 *raw(const char *path)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    return db;
}

static int64_t q1(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    int rc = sqlite3_step(st);
    cr_assert(rc == SQLITE_ROW || rc == SQLITE_DONE, "%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

/* Every row of a query as text, rows separated by '\n' (caller frees). */
static char *dump(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    out[0] = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const char *v = (const char *)sqlite3_column_text(st, i);
            size_t need = len + (v ? strlen(v) : 4) + 4;
            if (need >= cap) {
                cap = need * 2;
                out = realloc(out, cap);
            }
            len += (size_t)sprintf(out + len, "%s|", v ? v : "NULL");
        }
        if (len + 2 >= cap)
            out = realloc(out, cap *= 2);
        out[len++] = '\n';
        out[len] = 0;
    }
    sqlite3_finalize(st);
    return out;
}

static void write_ok(fj_store *s, fj_batch **b, size_t n, fj_write_count *counts)
{
    fj_err err = {0};
    fj_status st = fj_store_write(s, b, n, counts, &err);
    cr_assert_eq(st, FJ_OK, "write: %s", err.message);
}

/* --- batch builders --------------------------------------------------------------------------- */

#define T0 1769588568 /* 2026-01-28T08:22:48Z */
#define EPOCH 190553940

static fj_envelope *env(fj_batch *b, fj_kind kind, const char *cluster, const char *node, fj_time t)
{
    fj_envelope *e = fj_batch_add(b);
    cr_assert_not_null(e);
    e->kind = kind;
    e->cluster = cluster;
    e->node = node;
    e->time = t;
    e->producer = "sonar";
    e->version = "0.18.0";
    return e;
}

static void *zalloc(fj_batch *b, size_t n, size_t sz)
{
    void *p = fj_arena_calloc(b->arena, n ? n : 1, sz);
    cr_assert_not_null(p);
    return p;
}

static fj_sample_job *add_jobs(fj_batch *b, fj_envelope *e, size_t n)
{
    e->u.sample.jobs = zalloc(b, n, sizeof(fj_sample_job));
    e->u.sample.n_jobs = n;
    return e->u.sample.jobs;
}

static fj_sample_proc *add_procs(fj_batch *b, fj_sample_job *j, size_t n)
{
    j->procs = zalloc(b, n, sizeof(fj_sample_proc));
    j->n_procs = n;
    return j->procs;
}

/* job 2940904 (Slurm, epoch 0) with nproc processes, the first using GPU 0. */
static void slurm_job_procs(fj_batch *b, fj_sample_job *j, uint64_t job, size_t nproc, double cpu, uint64_t mem)
{
    j->job = job;
    j->epoch = 0;
    j->user = "ec-imfjohan";
    fj_sample_proc *p = add_procs(b, j, nproc);
    for (size_t i = 0; i < nproc; i++) {
        p[i].pid = 1482226 + i;
        p[i].ppid = 1481960;
        p[i].cmd = i % 2 ? "gambit" : "mpirun";
        p[i].resident_kb = mem + i;
        p[i].virtual_kb = 2 * mem;
        p[i].num_threads = 11;
        p[i].cpu_avg = 380.2;
        p[i].cpu_util = cpu + (double)i;
        p[i].cpu_time = 6284;
    }
    p[0].n_gpus = 1;
    p[0].gpus = zalloc(b, 1, sizeof(fj_proc_gpu));
    p[0].gpus[0].index = 0;
    p[0].gpus[0].uuid = "GPU-aaaa";
    p[0].gpus[0].gpu_util = 87.5;
    p[0].gpus[0].gpu_memory_kb = 4096;
    p[0].gpus[0].gpu_memory_util = 12.5;
}


/* The backend-neutral contract (migrations, writing, duplicates, rectification, tokens) is tested
 * against every backend in test_store_contract.c; this file keeps what is SQLite's own. */

/* --- group commit: buffered rows and summaries written once per transaction ------------------ */

/* Envelopes that exercise what the writer keeps in memory within a transaction: a local job
 * whose samples arrive out of order (one bridges two instances), a Slurm job on two nodes whose
 * user is first unknown, job 0 processes, a job with more processes than one multi-row INSERT
 * takes, a repeated process GPU, and a sample sent twice. */
static size_t group_batches(fj_batch **out)
{
    static const int offsets[] = {9601, 0, 3000, 9001, 1500, 6001, 20000};
    size_t n = 0;
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        for (int node = 0; node < 2; node++) {
            fj_batch *b = fj_batch_new();
            fj_envelope *e = env(b, FJ_KIND_SAMPLE, "fox", node ? "n2" : "n1", T0 + offsets[i]);
            fj_sample_job *j = add_jobs(b, e, 3);
            j[0].job = 4242;
            j[0].epoch = EPOCH;
            j[0].user = "bob";
            size_t np = i == 2 ? 70 : 2; /* 70: past two multi-row statements */
            fj_sample_proc *p = add_procs(b, &j[0], np);
            for (size_t k = 0; k < np; k++) {
                p[k].pid = 4242 + k;
                p[k].ppid = 1;
                p[k].cmd = k % 3 ? "make" : "cc1";
                p[k].resident_kb = (uint64_t)(offsets[i] + (int)k);
                p[k].cpu_util = (double)k / 4;
            }
            p[1].n_gpus = 2;
            p[1].gpus = zalloc(b, 2, sizeof(fj_proc_gpu));
            p[1].gpus[0].index = 1;
            p[1].gpus[0].gpu_util = 50;
            p[1].gpus[1] = p[1].gpus[0]; /* same index: one row */
            p[1].gpus[1].gpu_util = 60;
            slurm_job_procs(b, &j[1], 777, 3, 100.0 + offsets[i], 1000);
            j[1].user = offsets[i] < 3000 ? NULL : "alice";
            j[2].job = 0;
            j[2].epoch = EPOCH;
            p = add_procs(b, &j[2], 2);
            p[0].pid = 99;
            p[0].cmd = "sshd";
            p[0].resident_kb = 7;
            p[1].pid = 0; /* a rolled-up group: its own job keyed with ppid and command */
            p[1].ppid = 99;
            p[1].cmd = "sshd";
            p[1].rolledup = 3;
            p[1].synthetic_pid = true;
            out[n++] = b;
        }
    }
    out[n] = out[3]; /* the same sample again */
    return n + 1;
}

static char *all_rows(void)
{
    static const char *const queries[] = {
        "SELECT * FROM jobs ORDER BY id",
        "SELECT * FROM job_samples ORDER BY rjob_id, sample_id",
        "SELECT * FROM job_hosts ORDER BY rjob_id, node_id",
        "SELECT * FROM job_cmds ORDER BY rjob_id, cmd_id",
        "SELECT * FROM sample_jobs ORDER BY sample_id, job, epoch",
        "SELECT * FROM v_processes ORDER BY proc_id",
        "SELECT * FROM sample_proc_gpus ORDER BY proc_id, idx",
        "SELECT * FROM sample_gpus ORDER BY sample_id, idx",
    };
    sqlite3 *db = raw(dbpath);
    size_t cap = 1, len = 0;
    char *all = calloc(1, 1);
    for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++) {
        char *d = dump(db, queries[i]);
        cap = len + strlen(queries[i]) + strlen(d) + 3;
        all = realloc(all, cap);
        len += (size_t)sprintf(all + len, "%s\n%s\n", queries[i], d);
        free(d);
    }
    sqlite3_close(db);
    return all;
}

Test(sqlite, one_group_equals_one_transaction_per_envelope)
{
    fj_batch *b[32];
    size_t n = group_batches(b);
    fj_write_count one[32], group[32];
    fj_store *s = open_w();
    for (size_t i = 0; i < n; i++)
        write_ok(s, &b[i], 1, &one[i]);
    fj_store_close(s);
    char *a = all_rows();

    next_db();
    s = open_w();
    write_ok(s, b, n, group);
    fj_store_close(s);
    char *g = all_rows();
    cr_assert_str_eq(g, a);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(group[i].inserted, one[i].inserted, "envelope %zu", i);
        cr_assert_eq(group[i].duplicates, one[i].duplicates, "envelope %zu", i);
    }
    cr_assert_eq(one[n - 1].inserted, 0, "the repeated sample adds nothing");
    cr_assert_eq(one[n - 1].duplicates, one[3].inserted + one[3].duplicates);
    /* sample, 3 sample jobs, 2 + 3 + 2 processes, 2 process GPUs; the GPU given twice is a duplicate */
    cr_assert_eq(one[0].inserted, 1 + 3 + 7 + 2);
    cr_assert_eq(one[0].duplicates, 1);

    sqlite3 *db = raw(dbpath);
    /* job 4242 on n1: one instance 0..9601 (bridged by 6001) and one at 20000 */
    char *d = dump(db, "SELECT first_seen - 1769588568, last_seen - 1769588568, n_samples, user_id IS NOT NULL "
                       "FROM jobs WHERE job=4242 AND node_id=(SELECT id FROM nodes WHERE name='n1') "
                       "ORDER BY first_seen");
    cr_assert_str_eq(d, "0|9601|6|1|\n20000|20000|1|1|\n");
    free(d);
    /* the Slurm job: one across both nodes and all times; its user was learnt from a later sample */
    d = dump(db, "SELECT n_samples, (SELECT s FROM strings WHERE id=user_id), "
                 "(SELECT count(*) FROM job_hosts WHERE rjob_id=jobs.id) FROM jobs WHERE job=777");
    cr_assert_str_eq(d, "14|alice|2|\n");
    free(d);
    cr_assert_eq(q1(db, "SELECT count(*) FROM v_processes WHERE job=4242"), 2 * (6 * 2 + 70));
    sqlite3_close(db);
    free(a);
    free(g);
    for (size_t i = 0; i + 1 < n; i++)
        fj_batch_free(b[i]);
}

Test(sqlite, job_listed_twice_in_a_sample_counts_once)
{
    fj_store *s = open_w();
    fj_batch *b = fj_batch_new();
    fj_envelope *e = env(b, FJ_KIND_SAMPLE, "fox", "n1", T0);
    fj_sample_job *j = add_jobs(b, e, 2);
    j[0].job = 5;
    j[0].epoch = EPOCH;
    fj_sample_proc *p = add_procs(b, &j[0], 1);
    p->pid = 10;
    p->cmd = "a";
    p->resident_kb = 100;
    j[1] = j[0]; /* the same (job, epoch) again, with other processes: the first one wins */
    p = add_procs(b, &j[1], 2);
    p[0].pid = 11;
    p[0].resident_kb = 5;
    p[1].pid = 12;
    fj_write_count c;
    write_ok(s, &b, 1, &c);
    cr_assert_eq(c.inserted, 1 + 1 + 1, "sample, job, process");
    cr_assert_eq(c.duplicates, 1 + 2, "the job again and its processes");
    write_ok(s, &b, 1, &c);
    cr_assert_eq(c.inserted, 0);
    cr_assert_eq(c.duplicates, 6);
    fj_store_close(s);
    sqlite3 *db = raw(dbpath);
    char *d = dump(db, "SELECT pid, resident_kb FROM v_processes");
    cr_assert_str_eq(d, "10|100|\n");
    free(d);
    cr_assert_eq(q1(db, "SELECT mem_sum_kb FROM jobs"), 100);
    sqlite3_close(db);
    fj_batch_free(b);
}

/* A sample of node with nproc processes of job 7 (about 60 bytes each). */
static fj_batch *big_sample(const char *node, fj_time t, size_t nproc)
{
    fj_batch *b = fj_batch_new();
    fj_envelope *e = env(b, FJ_KIND_SAMPLE, "fox", node, t);
    fj_sample_job *j = add_jobs(b, e, 1);
    j->job = 7;
    j->epoch = EPOCH;
    fj_sample_proc *p = add_procs(b, j, nproc);
    for (size_t k = 0; k < nproc; k++) {
        p[k].pid = 1000 + k;
        p[k].ppid = 1;
        p[k].cmd = "python";
        p[k].resident_kb = 1000000 + k * 7919;
        p[k].virtual_kb = 3000000 + k * 104729;
        p[k].cpu_time = t + k;
        p[k].cpu_util = (double)k;
    }
    return b;
}

Test(sqlite, rollback_after_page_splits_leaves_a_sound_database)
{
    /* Page splits renumber pages through one past the end of the file, and a rolled-back group
     * that grew the file must drop its pages from the cache: both go through the page cache
     * wrapper in storage/sqlite/backend.c. */
    fj_store *s = open_w();
    fj_write_count c[4];
    for (int i = 0; i < 20; i++) {
        fj_batch *b = big_sample(i % 2 ? "a" : "b", T0 + i * 30, 400);
        write_ok(s, &b, 1, c);
        fj_batch_free(b);
    }
    fj_batch *grow[2] = {big_sample("c", T0, 3000), fj_batch_new()};
    env(grow[1], FJ_KIND_SAMPLE, "fox", "c", T0)->kind = FJ_KIND__COUNT; /* refused mid-transaction */
    fj_err err = {0};
    cr_assert_neq(fj_store_write(s, grow, 2, c, &err), FJ_OK);
    fj_batch *b = big_sample("c", T0 + 60, 500);
    write_ok(s, &b, 1, c);
    cr_assert_eq(c[0].inserted, 1 + 1 + 500);
    fj_batch_free(b);
    fj_store_close(s);
    sqlite3 *db = raw(dbpath);
    char *d = dump(db, "PRAGMA integrity_check");
    cr_assert_str_eq(d, "ok|\n");
    free(d);
    cr_assert_eq(q1(db, "SELECT count(*) FROM v_processes"), 20 * 400 + 500);
    cr_assert_eq(q1(db, "SELECT count(*) FROM samples"), 21);
    sqlite3_close(db);
    fj_batch_free(grow[0]);
    fj_batch_free(grow[1]);
}

Test(sqlite, checkpoints_keep_the_wal_bounded)
{
    /* About 40 MB of process rows, one group per sample: without checkpoints the WAL would grow
     * past 32 MB. The checkpoint thread copies it beside the writer, the writer rewinds it, and
     * nothing is lost on the way. */
    fj_store *s = open_w();
    fj_write_count c;
    char wal[300];
    snprintf(wal, sizeof wal, "%s-wal", dbpath);
    for (int i = 0; i < 160; i++) {
        fj_batch *b = big_sample(i % 4 ? "a" : "b", T0 + i * 30, 4000);
        write_ok(s, &b, 1, &c);
        fj_batch_free(b);
        FILE *f = fopen(wal, "rb");
        cr_assert_not_null(f);
        fseek(f, 0, SEEK_END);
        cr_assert_lt(ftell(f), 32L << 20, "the WAL rewinds (sample %d)", i);
        fclose(f);
    }
    fj_store_close(s);
    sqlite3 *db = raw(dbpath);
    char *d = dump(db, "PRAGMA integrity_check");
    cr_assert_str_eq(d, "ok|\n");
    free(d);
    cr_assert_eq(q1(db, "SELECT count(*) FROM sample_procs"), 160 * 4000);
    cr_assert_eq(q1(db, "SELECT sum(n_samples) FROM jobs"), 160);
    sqlite3_close(db);
}

/* --- reading ------------------------------------------------------------------------------------ */

/* --- tokens ------------------------------------------------------------------------------------- */
