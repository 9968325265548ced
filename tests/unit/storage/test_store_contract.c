/* The storage contract, run against every backend: batches built by hand go through the engine,
 * and the rows are checked with plain SQL on the database (sqlite3 or libpq). Which backend is
 * chosen by the environment: FJ_TEST_DB_URL=postgres://... (a server the test may create
 * databases on: one per test, dropped afterwards; tests/integration/pgserver.py run starts one),
 * otherwise a temporary SQLite file. CTest runs this file both ways. The few statements whose SQL
 * differs between the two are written twice (D(sqlite, postgres)). */
#include "../fj_test.h"
#include "alloc.h"
#include "ingest/cc.h"
#include "ingest/chimbuko.h"
#include "api/out.h"
#include "storage/core/rectify.h"
#include "storage/sqlite/migrations.h"
#include "sqlite_test_db.h"
#include "storage/core/driver.h"
#include "storage/core/store.h"
#include "storage/core/tokens.h"
#include "storage/ts/engine.h"
#ifdef FJ_HAVE_PG
#include "storage/pg/migrations.h"
#include "storage/core/store_query.h"
#include "storage/core/store_ts.h"
#include "storage/core/store_chimbuko.h"
#include "storage/core/store_energy.h"
#include <libpq-fe.h>
#endif

#include <criterion/criterion.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char dbpath[512]; /* the current test database: a file path or a postgres:// URL */
static int db_counter;
static bool pg;          /* the PostgreSQL backend is under test */
static char pg_admin[512];

#define D(sq, pgsql) (pg ? (pgsql) : (sq))

static int latest_version(void)
{
#ifdef FJ_HAVE_PG
    if (pg)
        return (int)fj_pg_n_migrations;
#endif
    return (int)fj_sqlite_n_migrations;
}
#define LATEST latest_version()

#ifdef FJ_HAVE_PG
static PGconn *pg_connect(const char *url)
{
    PGconn *c = PQconnectdb(url);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "connect %s: %s", url, PQerrorMessage(c));
    PGresult *r = PQexec(c, "SET client_min_messages = 'warning'");
    PQclear(r);
    return c;
}

static void pg_admin_exec(const char *sql)
{
    PGconn *c = pg_connect(pg_admin);
    PGresult *r = PQexec(c, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
}

/* The admin URL with its database replaced by name. */
static void pg_url_of(const char *name, char *out, size_t cap)
{
    const char *q = strchr(pg_admin, '?');
    size_t end = q ? (size_t)(q - pg_admin) : strlen(pg_admin);
    size_t slash = end;
    while (slash > 0 && pg_admin[slash - 1] != '/')
        slash--;
    snprintf(out, cap, "%.*s%s%s", (int)slash, pg_admin, name, q ? q : "");
}
#endif

static void db_name(char *out, size_t cap, int n)
{
    snprintf(out, cap, "fjc_%d_%d", (int)getpid(), n);
}

static void rm_db(const char *p)
{
#ifdef FJ_HAVE_PG
    if (pg) {
        const char *name = strrchr(p, '/') + 1;
        char sql[256];
        snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %.*s WITH (FORCE)", (int)strcspn(name, "?"), name);
        pg_admin_exec(sql);
        return;
    }
#endif
    fj_test_rm_db(p);
}

static void next_db(void)
{
    char name[64];
    db_name(name, sizeof name, db_counter++);
#ifdef FJ_HAVE_PG
    if (pg) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
        pg_admin_exec(sql);
        snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
        pg_admin_exec(sql);
        pg_url_of(name, dbpath, sizeof dbpath);
        return;
    }
#endif
    snprintf(dbpath, sizeof dbpath, "/tmp/%s.db", name);
    rm_db(dbpath);
}

static void setup(void)
{
    const char *url = getenv("FJ_TEST_DB_URL");
    pg = url && (strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0);
#ifndef FJ_HAVE_PG
    cr_assert_not(pg, "FJ_TEST_DB_URL names PostgreSQL but fjord was built without libpq");
#else
    if (pg)
        snprintf(pg_admin, sizeof pg_admin, "%s", url);
#endif
    next_db();
}

static void teardown(void)
{
    rm_db(dbpath);
}

TestSuite(contract, .init = setup, .fini = teardown);

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

/* --- plain SQL on the test database ------------------------------------------------------------ */

typedef struct db_t {
    sqlite3 *sq;
#ifdef FJ_HAVE_PG
    PGconn *pg;
#endif
} db_t;

static db_t *raw(const char *path)
{
    db_t *db = calloc(1, sizeof *db);
#ifdef FJ_HAVE_PG
    if (pg) {
        db->pg = pg_connect(path);
        return db;
    }
#endif
    cr_assert_eq(sqlite3_open(path, &db->sq), SQLITE_OK);
    return db;
}

static void db_close(db_t *db)
{
#ifdef FJ_HAVE_PG
    if (db->pg)
        PQfinish(db->pg);
#endif
    if (db->sq)
        sqlite3_close(db->sq);
    free(db);
}

/* 0 when sql (one or more statements without results) ran. */
static int db_try(db_t *db, const char *sql)
{
#ifdef FJ_HAVE_PG
    if (db->pg) {
        PGresult *r = PQexec(db->pg, sql);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
        PQclear(r);
        return ok ? 0 : 1;
    }
#endif
    return sqlite3_exec(db->sq, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : 1;
}

/* Every row of a query as text, columns ending in '|', rows in '\n' (caller frees). */
static char *dump(db_t *db, const char *sql)
{
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    out[0] = 0;
#define APPEND(v)                                                                                        \
    do {                                                                                                 \
        const char *v_ = (v);                                                                            \
        size_t need_ = len + (v_ ? strlen(v_) : 4) + 4;                                                  \
        if (need_ >= cap) {                                                                              \
            cap = need_ * 2;                                                                             \
            out = realloc(out, cap);                                                                     \
        }                                                                                                \
        len += (size_t)sprintf(out + len, "%s|", v_ ? v_ : "NULL");                                      \
    } while (0)
#ifdef FJ_HAVE_PG
    if (db->pg) {
        PGresult *r = PQexec(db->pg, sql);
        cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(db->pg));
        for (int i = 0; i < PQntuples(r); i++) {
            for (int c = 0; c < PQnfields(r); c++)
                APPEND(PQgetisnull(r, i, c) ? NULL : PQgetvalue(r, i, c));
            if (len + 2 >= cap)
                out = realloc(out, cap *= 2);
            out[len++] = '\n';
            out[len] = 0;
        }
        PQclear(r);
        return out;
    }
#endif
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db->sq, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db->sq));
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++)
            APPEND((const char *)sqlite3_column_text(st, i));
        if (len + 2 >= cap)
            out = realloc(out, cap *= 2);
        out[len++] = '\n';
        out[len] = 0;
    }
    sqlite3_finalize(st);
#undef APPEND
    return out;
}

/* The first column of the first row as an integer, -1 when there is no row. */
static int64_t q1(db_t *db, const char *sql)
{
    char *d = dump(db, sql);
    int64_t v = d[0] ? strtoll(d, NULL, 10) : -1;
    free(d);
    return v;
}

static void write_ok(fj_store *s, fj_batch **b, size_t n, fj_write_count *counts)
{
    fj_err err = {0};
    fj_status st = fj_store_write(s, b, n, counts, &err);
    cr_assert_eq(st, FJ_OK, "write: %s", err.message);
}

typedef fj_status (*query_op)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);

/* A query op's answer as the API writes it in JSON (api/out.c), to look for fragments in; free()
 * it. */
static char *query_json(fj_store *s, query_op op, fj_query *q)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    fj_out o;
    fj_out_init(&o, &b, false);
    fj_err err = {0};
    cr_assert_eq(op(s, q, &o.sink, &err), FJ_OK, "%s", err.message);
    cr_assert_eq(fj_out_finish(&o, false, NULL), FJ_OK);
    fj_out_free(&o);
    char *json = strdup(b.data ? b.data : "");
    fj_buf_free(&b);
    return json;
}

/* The row of node in a q_nodes answer written by query_json (up to the next row); free() it. */
static char *node_row(const char *json, const char *node)
{
    char head[128];
    snprintf(head, sizeof head, "{\"cluster\":\"fox\",\"node\":\"%s\"", node);
    const char *row = strstr(json, head);
    cr_assert_not_null(row, "no row of %s in %s", node, json);
    const char *next = strstr(row + 1, "{\"cluster\":");
    return strndup(row, next ? (size_t)(next - row) : strlen(row));
}

/* Appends "name":value, value written as the API writes a real number (three decimals at most). */
static void real_member(fj_buf *b, const char *name, double d)
{
    fj_value v = {.t = FJ_VT_REAL, .d = d};
    cr_assert_eq(fj_buf_printf(b, "%s\"%s\":", b->len ? "," : "", name), FJ_OK);
    cr_assert_eq(fj_out_value_json(b, &v), FJ_OK);
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

/* A sample with system data, two GPUs, two disks, and the given jobs left to the caller. */
static fj_envelope *full_sample(fj_batch *b, const char *node, fj_time t)
{
    fj_envelope *e = env(b, FJ_KIND_SAMPLE, "fox", node, t);
    fj_sample *s = &e->u.sample;
    s->has_system = true;
    s->boot = t - 86400;
    s->n_cpus = 4;
    s->cpus = zalloc(b, 4, sizeof(uint64_t));
    s->cpus[0] = 738432;
    s->cpus[1] = 0;
    s->cpus[2] = 127;
    s->cpus[3] = 128;
    s->used_memory_kb = 169964060;
    s->load1 = 102.44;
    s->load5 = 115.35;
    s->load15 = 111.83;
    s->runnable_entities = 31;
    s->existing_entities = 4599;
    s->n_gpus = 2;
    s->gpus = zalloc(b, 2, sizeof(fj_sample_gpu));
    for (int i = 0; i < 2; i++) {
        s->gpus[i].index = (uint64_t)i;
        s->gpus[i].uuid = i ? "GPU-bbbb" : "GPU-aaaa";
        s->gpus[i].compute_mode = "Default";
        s->gpus[i].performance_state = i ? FJ_XU_UNSET : 2;
        s->gpus[i].memory_kb = 1000 * (uint64_t)(i + 1);
        s->gpus[i].ce_util = 90;
        s->gpus[i].temperature = -5 + i;
        s->gpus[i].power = 250;
    }
    s->n_disks = 2;
    s->disks = zalloc(b, 2, sizeof(fj_sample_disk));
    s->disks[0].name = "nvme0n1";
    s->disks[0].major = 259;
    s->disks[0].n_stats = 3;
    s->disks[0].stats = zalloc(b, 3, sizeof(uint64_t));
    s->disks[0].stats[0] = 520231578;
    s->disks[0].stats[1] = 1;
    s->disks[0].stats[2] = 123777504428ull;
    s->disks[1].name = "sda";
    s->disks[1].major = 8;
    return e;
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

static fj_slurm_job *jobs_env(fj_batch *b, fj_time t, size_t n)
{
    fj_envelope *e = env(b, FJ_KIND_JOB, "fox", NULL, t);
    e->u.jobs.jobs = zalloc(b, n, sizeof(fj_slurm_job));
    e->u.jobs.n_jobs = n;
    for (size_t i = 0; i < n; i++) {
        e->u.jobs.jobs[i].job_step = "";
        e->u.jobs.jobs[i].time_limit_s = FJ_XU_UNSET;
        e->u.jobs.jobs[i].priority = FJ_XU_UNSET;
    }
    return e->u.jobs.jobs;
}

static char **names(fj_batch *b, const char *a, const char *c)
{
    char **v = zalloc(b, 2, sizeof(char *));
    v[0] = (char *)a;
    v[1] = (char *)c;
    return v;
}

/* One envelope of every kind, exercising every table. */
static fj_batch *everything_batch(void)
{
    fj_batch *b = fj_batch_new();
    fj_envelope *e = full_sample(b, "c1-10", T0);
    fj_sample_job *j = add_jobs(b, e, 3);
    slurm_job_procs(b, &j[0], 2940904, 4, 398.23, 13305344);
    j[1].job = 1463093; /* a local job */
    j[1].epoch = EPOCH;
    j[1].user = "ec-haroldg";
    fj_sample_proc *p = add_procs(b, &j[1], 2);
    p[0].pid = 1463095;
    p[0].ppid = 1;
    p[0].cmd = "MathWorksServic";
    p[0].resident_kb = 51656;
    p[0].cpu_avg = 0.1;
    p[1].pid = 0; /* a rolled-up group without pid */
    p[1].ppid = 1463095;
    p[1].cmd = "worker";
    p[1].rolledup = 99;
    p[1].synthetic_pid = true;
    p[1].cpu_util = 96.491;
    j[2].job = 0; /* job 0 */
    j[2].epoch = EPOCH;
    j[2].user = "root";
    p = add_procs(b, &j[2], 2);
    p[0].pid = 77;
    p[0].cmd = "sshd";
    p[0].cpu_util = 1.5;
    p[1].pid = 78;
    p[1].cmd = "bash";
    e->n_errors = 1;
    e->errors = zalloc(b, 1, sizeof(fj_error_rec));
    e->errors[0] = (fj_error_rec){T0, "fox", "c1-10", "nvidia-smi failed"};
    e->n_notes = 1;
    e->notes = zalloc(b, 1, sizeof(fj_note));
    e->notes[0] = (fj_note){"data.attributes.jobs[0].processes[0].pid", "synthetic_pid", "0"};

    e = env(b, FJ_KIND_SYSINFO, "fox", "c1-10", T0);
    fj_sysinfo *si = &e->u.sysinfo;
    si->os_name = "Linux";
    si->os_release = "5.14";
    si->architecture = "x86_64";
    si->cpu_model = "AMD EPYC 7702";
    si->sockets = 2;
    si->cores_per_socket = 64;
    si->threads_per_core = 1;
    si->memory_kb = 263000000;
    si->numa_nodes = 2;
    si->topo_svg = "PHN2Zz48L3N2Zz4=";
    si->n_cards = 1;
    si->cards = zalloc(b, 1, sizeof(fj_gpu_card));
    si->cards[0].uuid = "GPU-aaaa";
    si->cards[0].model = "A100";
    si->cards[0].memory_kb = 40000000;
    si->distances_dim = 2;
    si->distances = zalloc(b, 4, sizeof(uint64_t));
    si->distances[0] = 10;
    si->distances[1] = 21;
    si->distances[2] = 21;
    si->distances[3] = 10;

    fj_slurm_job *sj = jobs_env(b, T0, 2);
    sj[0].job_id = 2940904;
    sj[0].job_name = "gambit-run";
    sj[0].job_state = "RUNNING";
    sj[0].user_name = "ec-imfjohan";
    sj[0].account = "ec30";
    sj[0].partition = "normal";
    sj[0].time_limit_s = 86400;
    sj[0].start_time = T0 - 3600;
    sj[0].nodes = names(b, "c1-10", "c1-11");
    sj[0].n_nodes = 2;
    sj[0].nodes_raw = "c1-[10-11]";
    fj_sacct *sa = zalloc(b, 1, sizeof(fj_sacct));
    sa->alloc_tres = "cpu=128";
    sa->max_rss = 1234;
    sj[0].sacct = sa;
    sj[1].job_id = 2940904;
    sj[1].job_step = "batch";
    sj[1].job_state = "RUNNING";
    sj[1].time_limit_s = FJ_XU_INFINITE;

    e = env(b, FJ_KIND_CLUSTER, "fox", NULL, T0);
    fj_cluster_info *ci = &e->u.cluster_info;
    ci->slurm = true;
    ci->n_partitions = 1;
    ci->partitions = zalloc(b, 1, sizeof(fj_partition));
    ci->partitions[0].name = "normal";
    ci->partitions[0].nodes = names(b, "c1-10", "c1-11");
    ci->partitions[0].n_nodes = 2;
    ci->n_nodes = 2;
    ci->nodes = zalloc(b, 2, sizeof(fj_node_state));
    ci->nodes[0].node = "c1-10";
    ci->nodes[0].states = names(b, "MIXED", "DRAIN");
    ci->nodes[0].n_states = 2;
    ci->nodes[1].node = "c1-11";
    ci->nodes[1].states = names(b, "IDLE", NULL);
    ci->nodes[1].n_states = 1;

    e = env(b, FJ_KIND_SAMPLE, "fox", "c1-12", T0);
    e->is_error = true;
    e->n_errors = 1;
    e->errors = zalloc(b, 1, sizeof(fj_error_rec));
    e->errors[0] = (fj_error_rec){T0, "fox", "c1-12", "sonar crashed"};
    return b;
}

static const char *const all_tables[] = {
    "clusters", "nodes", "strings", "envelopes", "errors", "notes", "blobs", "sysinfo", "sysinfo_gpus",
    "samples", "sample_gpus", "sample_disks", "sample_jobs", "sample_procs", "sample_proc_gpus", "jobs",
    "job_samples", "job_hosts", "job_cmds", "slurm_jobs", "slurm_jobs_current", "slurm_job_nodes",
    "cluster_info", "partitions", "partition_nodes", "node_states"};
#define N_TABLES (sizeof all_tables / sizeof all_tables[0])

static int64_t total_rows(db_t *db)
{
    int64_t n = 0;
    char sql[128];
    for (size_t i = 0; i < N_TABLES; i++) {
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", all_tables[i]);
        n += q1(db, sql);
    }
    return n;
}

/* --- migrations and schema versions ----------------------------------------------------------- */

Test(contract, create_applies_migrations)
{
    fj_store *s = open_w();
    fj_migration_info mi;
    fj_err err = {0};
    cr_assert_eq(fj_store_migrate_status(s, &mi, &err), FJ_OK);
    cr_assert_eq(mi.current, LATEST);
    cr_assert_eq(mi.latest, LATEST);
    fj_store_close(s);
    db_t *db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT count(*) FROM schema_migrations WHERE version=1 AND name='init' AND applied_at>0"), 1);
    char sql[160];
    for (size_t i = 0; i < N_TABLES; i++) {
        snprintf(sql, sizeof sql,
                 D("SELECT count(*) FROM sqlite_master WHERE name='%s'",
                   /* sample_procs: a view over sample_proc_sets (migration 0008) */
                   "SELECT count(*) FROM pg_class WHERE relname='%s' AND relkind IN ('r','p','v')"),
                 all_tables[i]);
        cr_assert_eq(q1(db, sql), 1, "table %s", all_tables[i]);
    }
    cr_assert_eq(q1(db, D("SELECT count(*) FROM sqlite_master WHERE name='tokens'",
                          "SELECT count(*) FROM pg_class WHERE relname='tokens'")), 1);
    db_close(db);
    /* reopening a current database, with or without create, changes nothing */
    s = open_store(dbpath, FJ_STORE_WRITE, false);
    fj_store_close(s);
    s = open_w();
    fj_store_close(s);
    db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT count(*) FROM schema_migrations"), LATEST);
    db_close(db);
}

Test(contract, url_forms_and_wal)
{
    cr_assert_not(fj_sqlite_driver.accepts("postgres://x/y"));
    cr_assert_not(fj_sqlite_driver.accepts("postgresql://x/y"));
#ifdef FJ_HAVE_PG
    cr_assert(fj_pg_driver.accepts("postgres://x/y"));
    cr_assert(fj_pg_driver.accepts("postgresql://u:p@h:5432/db?sslmode=disable"));
    cr_assert_not(fj_pg_driver.accepts("/var/lib/fjord/fjord.db"));
    cr_assert_not(fj_pg_driver.accepts("sqlite:x.db"));
    if (pg) { /* the other spelling of the scheme opens the same database */
        char url[600];
        snprintf(url, sizeof url, "postgresql://%s", strstr(dbpath, "://") + 3);
        fj_store_close(open_store(url, FJ_STORE_WRITE, true));
        fj_store_close(open_store(dbpath, FJ_STORE_READ, false));
        return;
    }
#endif
    char url[600];
    snprintf(url, sizeof url, "sqlite:%s", dbpath);
    cr_assert(fj_sqlite_driver.accepts(url));
    cr_assert(fj_sqlite_driver.accepts(dbpath));
    cr_assert_not(fj_sqlite_driver.accepts("postgres://x/y"));
    cr_assert_not(fj_sqlite_driver.accepts("postgresql://x/y"));
    fj_store *s = open_store(url, FJ_STORE_WRITE, true);
    fj_store_close(s);
    snprintf(url, sizeof url, "file:%s?cache=private", dbpath);
    s = open_store(url, FJ_STORE_WRITE, false);
    fj_store_close(s);
    db_t *db = raw(dbpath);
    char *mode = dump(db, "PRAGMA journal_mode");
    cr_assert_str_eq(mode, "wal|\n");
    free(mode);
    db_close(db);

    fj_store_opts bad = {.mode = FJ_STORE_WRITE, .synchronous = "SOMETIMES"};
    fj_err err = {0};
    cr_assert_eq(fj_store_open(dbpath, &bad, &s, &err), FJ_EINVAL);
}

Test(contract, empty_database_without_create_needs_migrate)
{
    fj_store_opts o = {.mode = FJ_STORE_WRITE};
    fj_store *s = NULL;
    fj_err err = {0};
    db_t *db = raw(dbpath); /* an empty file */
    db_close(db);
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_ESCHEMA);
    cr_assert(strstr(err.message, "fjord migrate up"), "%s", err.message);
    o.migrating = true;
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_OK, "%s", err.message);
    int applied = -1;
    cr_assert_eq(fj_store_migrate_up(s, &applied, &err), FJ_OK, "%s", err.message);
    cr_assert_eq(applied, LATEST);
    cr_assert_eq(fj_store_migrate_up(s, &applied, &err), FJ_OK);
    cr_assert_eq(applied, 0, "nothing left to apply");
    fj_store_close(s);
    s = open_store(dbpath, FJ_STORE_READ, false);
    fj_store_close(s);
}

Test(contract, older_schema_is_refused_with_a_migrate_hint)
{
    fj_store_close(open_w());
    db_t *db = raw(dbpath);
    /* fake a binary one migration ahead of the database */
    cr_assert_eq(db_try(db, "DELETE FROM schema_migrations"), 0);
    db_close(db);
    fj_store *s = NULL;
    fj_err err = {0};
    fj_store_opts o = {.mode = FJ_STORE_WRITE, .create = true};
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_ESCHEMA, "create never migrates an older schema");
    char want[64];
    snprintf(want, sizeof want, "version 0, this fjord needs %d", LATEST);
    cr_assert(strstr(err.message, want), "%s", err.message);
    cr_assert(strstr(err.message, "fjord migrate up --db"), "%s", err.message);
    o.mode = FJ_STORE_READ;
    o.create = false;
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_ESCHEMA);
    /* the migrate command may open it and sees where it stands */
    o.mode = FJ_STORE_WRITE;
    o.migrating = true;
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_OK, "%s", err.message);
    fj_migration_info mi;
    cr_assert_eq(fj_store_migrate_status(s, &mi, &err), FJ_OK);
    cr_assert_eq(mi.current, 0);
    cr_assert_eq(mi.latest, LATEST);
    fj_store_close(s);
}

Test(contract, newer_schema_is_refused)
{
    fj_store_close(open_w());
    db_t *db = raw(dbpath);
    char future[96];
    snprintf(future, sizeof future, "INSERT INTO schema_migrations VALUES(%d,'future',0)", LATEST + 1);
    cr_assert_eq(db_try(db, future), 0);
    db_close(db);
    fj_store *s = NULL;
    fj_err err = {0};
    fj_store_opts o = {.mode = FJ_STORE_WRITE, .create = true};
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_ESCHEMA);
    cr_assert(strstr(err.message, "newer"), "%s", err.message);
    o.migrating = true;
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_OK);
    int applied;
    cr_assert_eq(fj_store_migrate_up(s, &applied, &err), FJ_ESCHEMA);
    fj_store_close(s);
}

Test(contract, foreign_database_is_refused)
{
    db_t *db = raw(dbpath);
    cr_assert_eq(db_try(db, "CREATE TABLE stuff(x integer)"), 0);
    db_close(db);
    fj_store *s = NULL;
    fj_err err = {0};
    fj_store_opts o = {.mode = FJ_STORE_WRITE, .create = true};
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_ESCHEMA);
    cr_assert(strstr(err.message, "not an fjord database"), "%s", err.message);
}

/* --- writing ------------------------------------------------------------------------------------ */

Test(contract, every_table_is_written)
{
    fj_store *s = open_w();
    fj_batch *b = everything_batch();
    fj_write_count c[5];
    write_ok(s, &b, 1, c);
    /* sample: 1 + 2 gpus + 2 disks + 3 jobs + 8 procs + 1 proc gpu + 1 soft error */
    cr_assert_eq(c[0].inserted, 18, "sample rows %llu", (unsigned long long)c[0].inserted);
    cr_assert_eq(c[1].inserted, 2, "sysinfo + 1 card");
    cr_assert_eq(c[2].inserted, 2, "two Slurm records");
    cr_assert_eq(c[3].inserted, 1 + 1 + 2 + 3, "cluster, partition, 2 memberships, 3 states");
    cr_assert_eq(c[4].inserted, 1, "error envelope");
    for (int i = 0; i < 5; i++)
        cr_assert_eq(c[i].duplicates, 0);
    fj_store_close(s);
    fj_batch_free(b);

    db_t *db = raw(dbpath);
    char sql[128];
    for (size_t i = 0; i < N_TABLES; i++) {
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", all_tables[i]);
        cr_assert_gt(q1(db, sql), 0, "table %s is empty", all_tables[i]);
    }
    /* cpus packed as LEB128 varints: 738432 = 0x80 0x89 0x2d; 0; 127; 128 = 0x80 0x01 */
    char *cpus = dump(db, D("SELECT hex(cpus), boot, used_memory_kb, load1 FROM samples",
                            "SELECT upper(encode(cpus, 'hex')), boot, used_memory_kb, load1 FROM samples"));
    cr_assert_str_eq(cpus, "80892D007F8001|1769502168|169964060|102.44|\n");
    free(cpus);
    char *procs = dump(db, "SELECT cluster,node,job,epoch,\"user\",pid,ppid,cmd,cpu_util,rolledup,synthetic_pid "
                           "FROM v_processes ORDER BY job,pid,cmd");
    cr_assert_eq(q1(db, "SELECT count(*) FROM v_processes"), 8);
    cr_assert(strstr(procs, "fox|c1-10|2940904|0|ec-imfjohan|1482226|1481960|mpirun|398.23|0|0|"), "%s", procs);
    cr_assert(strstr(procs, "fox|c1-10|1463093|190553940|ec-haroldg|0|1463095|worker|96.491|99|1|"), "%s", procs);
    free(procs);
    cr_assert_eq(q1(db, "SELECT count(*) FROM sample_gpus WHERE performance_state IS NULL"), 1);
    cr_assert_eq(q1(db, "SELECT temperature FROM sample_gpus WHERE idx=0"), -5);
    cr_assert_eq(q1(db, "SELECT gpu_util_m FROM sample_proc_gpus"), 87500);
    char *si = dump(db, "SELECT cpu_model, distances, n_gpus FROM sysinfo");
    cr_assert_str_eq(si, "AMD EPYC 7702|[[10,21],[21,10]]|1|\n");
    free(si);
    cr_assert_eq(q1(db, "SELECT size FROM blobs"), 16);
    char *sl = dump(db, "SELECT job_step, job_state, time_limit_s, sacct_max_rss, sacct_alloc_tres, nodes "
                        "FROM slurm_jobs_current ORDER BY job_step");
    cr_assert_str_eq(sl, "|RUNNING|86400|1234|cpu=128|c1-[10-11]|\nbatch|RUNNING|-1|NULL|NULL|NULL|\n");
    free(sl);
    cr_assert_eq(q1(db, "SELECT count(*) FROM slurm_job_nodes WHERE job_step=''"), 2);
    char *st = dump(db, "SELECT n.name, s.s FROM node_states ns JOIN nodes n ON n.id=ns.node_id "
                        "JOIN strings s ON s.id=ns.state_id ORDER BY 1,2");
    cr_assert_str_eq(st, "c1-10|DRAIN|\nc1-10|MIXED|\nc1-11|IDLE|\n");
    free(st);
    char *er = dump(db, "SELECT source, kind, detail FROM errors ORDER BY detail");
    cr_assert_str_eq(er, "sample|sample|nvidia-smi failed|\nenvelope|sample|sonar crashed|\n");
    free(er);
    char *no = dump(db, "SELECT kind, path, note, detail FROM notes");
    cr_assert_str_eq(no, "sample|data.attributes.jobs[0].processes[0].pid|synthetic_pid|0|\n");
    free(no);
    /* rectified: the Slurm job, the local job, two job-0 processes */
    cr_assert_eq(q1(db, "SELECT count(*) FROM jobs"), 4);
    cr_assert_eq(q1(db, "SELECT count(*) FROM jobs WHERE job=0"), 2);
    cr_assert_eq(q1(db, "SELECT nproc_sum FROM jobs WHERE job=1463093"), 1 + 100);
    db_close(db);
}

Test(contract, rewrite_adds_nothing_and_counts_duplicates)
{
    fj_store *s = open_w();
    fj_batch *b = everything_batch();
    fj_write_count c1[5], c2[5];
    write_ok(s, &b, 1, c1);
    db_t *db = raw(dbpath);
    int64_t rows = total_rows(db);
    char *jobs1 = dump(db, "SELECT * FROM jobs ORDER BY id");
    char *cur1 = dump(db, "SELECT * FROM slurm_jobs_current");
    write_ok(s, &b, 1, c2);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(c2[i].inserted, 0, "envelope %d", i);
        cr_assert_eq(c2[i].duplicates, c1[i].inserted, "envelope %d", i);
    }
    cr_assert_eq(total_rows(db), rows);
    char *jobs2 = dump(db, "SELECT * FROM jobs ORDER BY id");
    char *cur2 = dump(db, "SELECT * FROM slurm_jobs_current");
    cr_assert_str_eq(jobs1, jobs2, "re-sent samples are not counted again");
    cr_assert_str_eq(cur1, cur2);
    free(jobs1);
    free(jobs2);
    free(cur1);
    free(cur2);
    /* the same batch twice in one group commit: the second copy is all duplicates */
    fj_batch *twice[2] = {b, b};
    fj_write_count c3[10];
    write_ok(s, twice, 2, c3);
    cr_assert_eq(total_rows(db), rows);
    cr_assert_eq(c3[5].duplicates, c1[0].inserted);
    db_close(db);
    fj_store_close(s);
    fj_batch_free(b);
}

Test(contract, failed_write_leaves_nothing)
{
    fj_store *s = open_w();
    fj_batch *good = everything_batch();
    fj_batch *bad = fj_batch_new();
    fj_envelope *e = env(bad, FJ_KIND_SAMPLE, "fox", "c9", T0);
    e->kind = FJ_KIND__COUNT; /* not a kind: the backend refuses it mid-transaction */
    fj_batch *both[2] = {good, bad};
    fj_write_count c[6];
    fj_err err = {0};
    cr_assert_neq(fj_store_write(s, both, 2, c, &err), FJ_OK);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(c[i].inserted + c[i].duplicates, 0);
    db_t *db = raw(dbpath);
    cr_assert_eq(total_rows(db), 0, "the good batch of the group was rolled back too");
    /* and the handle still works afterwards, names interned in the failed group included */
    write_ok(s, &good, 1, c);
    cr_assert_eq(c[0].inserted, 18);
    cr_assert_eq(q1(db, "SELECT count(*) FROM nodes n JOIN clusters c ON c.id=n.cluster_id WHERE c.name='fox'"), 3);
    cr_assert_eq(q1(db, "SELECT sum(n_samples) FROM jobs"), 4, "the rolled-back group left no trace in the summaries");
    cr_assert_eq(q1(db, "SELECT count(*) FROM job_samples"), 4);
    db_close(db);
    fj_store_close(s);
    fj_batch_free(good);
    fj_batch_free(bad);
}

Test(contract, out_of_memory_anywhere_rolls_back_cleanly)
{
    /* Fail the Nth allocation of the write path, for every N until the write succeeds: each
     * failure must roll back whole, and the handle must stay usable and consistent. */
    fj_batch *b = everything_batch();
    fj_store *s = open_w();
    fj_write_count c[5];
    fj_err err;
    int failures = 0;
    for (long n = 0; n < 1000; n++) {
        memset(&err, 0, sizeof err);
        fj_alloc_fail_after(n);
        fj_status st = fj_store_write(s, &b, 1, c, &err);
        fj_alloc_fail_after(-1);
        if (st == FJ_OK)
            break;
        cr_assert_eq(st, FJ_ENOMEM, "n=%ld: %s", n, err.message);
        failures++;
    }
    cr_assert_gt(failures, 3, "the write path allocates");
    cr_assert_eq(c[0].inserted, 18);
    write_ok(s, &b, 1, c);
    cr_assert_eq(c[0].duplicates, 18);
    db_t *db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT sum(n_samples) FROM jobs"), 4);
    cr_assert_eq(q1(db, "SELECT count(*) FROM sample_procs"), 8);
    db_close(db);
    fj_store_close(s);
    fj_batch_free(b);
}

Test(contract, job_batches_with_one_timestamp_are_not_duplicates)
{
    fj_store *s = open_w();
    fj_batch *b1 = fj_batch_new(), *b2 = fj_batch_new();
    fj_slurm_job *j = jobs_env(b1, T0, 1);
    j->job_id = 100;
    j->job_state = "RUNNING";
    j = jobs_env(b2, T0, 2);
    j[0].job_id = 101;
    j[0].job_state = "PENDING";
    j[1].job_id = 102;
    j[1].job_state = "PENDING";
    fj_write_count c1, c2[1];
    write_ok(s, &b1, 1, &c1);
    write_ok(s, &b2, 1, c2);
    cr_assert_eq(c1.inserted, 1);
    cr_assert_eq(c2[0].inserted, 2);
    cr_assert_eq(c2[0].duplicates, 0);
    db_t *db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT count(*) FROM slurm_jobs"), 3);
    cr_assert_eq(q1(db, "SELECT count(*) FROM slurm_jobs_current"), 3);
    db_close(db);
    fj_store_close(s);
    fj_batch_free(b1);
    fj_batch_free(b2);
}

/* Three records of one job: PENDING, RUNNING (start, nodes), COMPLETED (end, exit code, but no
 * partition and no account). */
static fj_batch *slurm_record(int which)
{
    fj_batch *b = fj_batch_new();
    fj_slurm_job *j = jobs_env(b, T0 + which * 600, 1);
    j->job_id = 555;
    j->user_name = "alice";
    switch (which) {
    case 0:
        j->job_state = "PENDING";
        j->partition = "normal";
        j->account = "ec30";
        j->time_limit_s = 7200;
        j->submit_time = T0 - 10;
        j->nodes_raw = NULL;
        break;
    case 1:
        j->job_state = "RUNNING";
        j->partition = "normal";
        j->start_time = T0 + 500;
        j->nodes = names(b, "c1-1", "c1-2");
        j->n_nodes = 2;
        j->nodes_raw = "c1-[1-2]";
        j->account = "ec31"; /* changed: the later value wins */
        break;
    default:
        j->job_state = "CANCELLED";
        j->job_state_raw = "CANCELLED by 7205";
        j->end_time = T0 + 1100;
        j->exit_code = 15;
        break;
    }
    return b;
}

static char *slurm_current_after(const int *order)
{
    next_db();
    fj_store *s = open_w();
    for (int i = 0; i < 3; i++) {
        fj_batch *b = slurm_record(order[i]);
        fj_write_count c;
        write_ok(s, &b, 1, &c);
        cr_assert_eq(c.inserted, 1);
        fj_batch_free(b);
    }
    fj_store_close(s);
    db_t *db = raw(dbpath);
    char *row = dump(db, "SELECT * FROM slurm_jobs_current");
    cr_assert_eq(q1(db, "SELECT count(*) FROM slurm_jobs"), 3);
    db_close(db);
    rm_db(dbpath);
    return row;
}

Test(contract, slurm_current_is_field_by_field_and_order_independent)
{
    static const int orders[6][3] = {{0, 1, 2}, {2, 1, 0}, {2, 0, 1}, {1, 0, 2}, {1, 2, 0}, {0, 2, 1}};
    char *ref = slurm_current_after(orders[0]);
    char expect[512];
    snprintf(expect, sizeof expect,
             "1|555||%d|NULL|CANCELLED|CANCELLED by 7205|NULL|NULL|NULL|NULL|alice|ec31|normal|NULL|NULL|%d|%d|%d|"
             "7200|NULL|c1-[1-2]|NULL|NULL|NULL|NULL|NULL|NULL|NULL|15|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|"
             "NULL|NULL|NULL|NULL|\n", /* the last: alloc_gpus, generated from TRES (none here) */
             T0 + 1200, T0 - 10, T0 + 500, T0 + 1100);
    cr_assert_str_eq(ref, expect);
    for (int i = 1; i < 6; i++) {
        char *got = slurm_current_after(orders[i]);
        cr_assert_str_eq(got, ref, "order %d %d %d", orders[i][0], orders[i][1], orders[i][2]);
        free(got);
    }
    free(ref);
}

/* --- rectification ------------------------------------------------------------------------------ */

typedef struct expect_sum {
    int64_t n, cpu_sum, cpu_peak, mem_sum, mem_peak, gpu_sum, gpu_peak, gm_sum, gm_peak, np_peak;
} expect_sum;

/* j's node-sample; windowed: a node-sample of the job on that node came >= 120 s before. The
 * processes here send no cpu_time (as from a container): their figure is cpu_util, and the peak is
 * the highest over 120 s windows (storage/core/jobcpu.h), here one interval long. */
static void expect_add(expect_sum *x, const fj_sample_job *j, bool windowed)
{
    int64_t cpu = 0, mem = 0, gpu = 0, gm = 0, np = 0;
    for (size_t i = 0; i < j->n_procs; i++) {
        const fj_sample_proc *p = &j->procs[i];
        cpu += (int64_t)(p->cpu_util * 1000 + 0.5);
        mem += (int64_t)p->resident_kb;
        np += (int64_t)p->rolledup + 1;
        for (size_t g = 0; g < p->n_gpus; g++) {
            gpu += (int64_t)(p->gpus[g].gpu_util * 1000 + 0.5);
            gm += (int64_t)p->gpus[g].gpu_memory_kb;
        }
    }
    x->n++;
    x->cpu_sum += cpu;
    x->mem_sum += mem;
    x->gpu_sum += gpu;
    x->gm_sum += gm;
#define UPMAX(a, b) if ((b) > (a)) (a) = (b)
    if (windowed)
        UPMAX(x->cpu_peak, cpu);
    UPMAX(x->mem_peak, mem);
    UPMAX(x->gpu_peak, gpu);
    UPMAX(x->gm_peak, gm);
    UPMAX(x->np_peak, np);
}

Test(contract, rectified_slurm_job_summary_across_nodes)
{
    fj_store *s = open_w();
    expect_sum x = {0};
    /* job 777 on two nodes, 5 samples each, varying load; one sample re-sent */
    fj_batch *batches[10];
    for (int i = 0; i < 10; i++) {
        fj_batch *b = batches[i] = fj_batch_new();
        fj_envelope *e = env(b, FJ_KIND_SAMPLE, "fox", i % 2 ? "c1-2" : "c1-1", T0 + (i / 2) * 300);
        fj_sample_job *j = add_jobs(b, e, 1);
        slurm_job_procs(b, j, 777, 2 + (size_t)(i % 3), 50.0 + i * 10.25, 1000 + (uint64_t)i * 100);
        for (size_t k = 0; k < j->n_procs; k++) /* no cpu_time, as from a container: cpu_util counts */
            j->procs[k].cpu_time = 0;
        expect_add(&x, j, i >= 2); /* the first of each node has no window */
    }
    fj_write_count c[10];
    write_ok(s, batches, 10, c);
    write_ok(s, &batches[3], 1, c); /* re-sent */
    cr_assert_eq(c[0].inserted, 0);
    db_t *db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT count(*) FROM jobs"), 1);
    char *got = dump(db, "SELECT node_id, n_samples, cpu_sum_m, cpu_peak_m, mem_sum_kb, mem_peak_kb, gpu_sum_m, "
                         "gpu_peak_m, gpumem_sum_kb, gpumem_peak_kb, nproc_peak, first_seen, last_seen FROM jobs");
    char want[512];
    snprintf(want, sizeof want, "0|%lld|%lld|%lld|%lld|%lld|%lld|%lld|%lld|%lld|%lld|%d|%d|\n", (long long)x.n,
             (long long)x.cpu_sum, (long long)x.cpu_peak, (long long)x.mem_sum, (long long)x.mem_peak,
             (long long)x.gpu_sum, (long long)x.gpu_peak, (long long)x.gm_sum, (long long)x.gm_peak,
             (long long)x.np_peak, T0, T0 + 4 * 300);
    cr_assert_str_eq(got, want);
    free(got);
    cr_assert_eq(q1(db, "SELECT count(*) FROM job_samples"), 10);
    cr_assert_eq(q1(db, "SELECT count(*) FROM job_hosts"), 2);
    cr_assert_eq(q1(db, "SELECT count(*) FROM job_cmds"), 2);
    db_close(db);

    /* the query: averages and peaks as numbers, hosts and commands, Slurm fields */
    fj_batch *jb = fj_batch_new();
    fj_slurm_job *sj = jobs_env(jb, T0, 1);
    sj->job_id = 777;
    sj->job_state = "RUNNING";
    sj->partition = "accel";
    sj->account = "ec1";
    sj->job_name = "train";
    sj->time_limit_s = 3600;
    write_ok(s, &jb, 1, c);
    fj_query q = {.cluster = "fox"};
    char *got_jobs = query_json(s, fj_store_query_jobs, &q);
    fj_buf frag;
    fj_buf_init(&frag, 1 << 10);
    real_member(&frag, "cpu_avg", (double)x.cpu_sum / 1000.0 / (double)x.n);
    real_member(&frag, "cpu_peak", (double)x.cpu_peak / 1000.0);
    cr_assert_eq(fj_buf_printf(&frag, ",\"mem_avg_kb\":%lld,\"mem_peak_kb\":%lld", (long long)(x.mem_sum / x.n),
                               (long long)x.mem_peak),
                 FJ_OK);
    cr_assert(strstr(got_jobs, frag.data), "%s\nwant %s", got_jobs, frag.data);
    fj_buf_free(&frag);
    cr_assert(strstr(got_jobs, "\"cluster\":\"fox\",\"job\":777,\"epoch\":0,\"node\":null,\"pid\":null,"
                               "\"user\":\"ec-imfjohan\",\"start\":\"2026-01-28T08:22:48Z\","
                               "\"end\":\"2026-01-28T08:42:48Z\""),
              "%s", got_jobs);
    cr_assert(strstr(got_jobs, "\"hosts\":[\"c1-1\",\"c1-2\"],\"commands\":[\"gambit\",\"mpirun\"]"), "%s", got_jobs);
    /* the Slurm record joined to the job, and the record itself (its time and raw state) */
    cr_assert(strstr(got_jobs, "\"state\":\"RUNNING\",\"partition\":\"accel\",\"account\":\"ec1\","
                               "\"job_name\":\"train\""),
              "%s", got_jobs);
    cr_assert(strstr(got_jobs, "\"time_limit_s\":3600"), "%s", got_jobs);
    free(got_jobs);
    char *got_slurm = query_json(s, fj_store_query_slurm_jobs, &q);
    cr_assert(strstr(got_slurm, "\"job_id\":777,\"step\":\"\",\"updated\":\"2026-01-28T08:22:48Z\","
                                "\"job_name\":\"train\",\"state\":\"RUNNING\",\"state_raw\":null"),
              "%s", got_slurm);
    free(got_slurm);
    q.from = T0 + 5 * 300; /* after the job */
    char *none = query_json(s, fj_store_query_jobs, &q);
    cr_assert_str_eq(none, "{\"jobs\":[]}\n");
    free(none);
    for (int i = 0; i < 10; i++)
        fj_batch_free(batches[i]);
    fj_batch_free(jb);
    fj_store_close(s);
}

/* A local job's samples at the given time offsets, written one envelope per call. */
static char *local_job_after(const int *offsets, size_t n)
{
    next_db();
    fj_store *s = open_w();
    for (size_t i = 0; i < n; i++) {
        fj_batch *b = fj_batch_new();
        fj_envelope *e = env(b, FJ_KIND_SAMPLE, "fox", "login1", T0 + offsets[i]);
        fj_sample_job *j = add_jobs(b, e, 2);
        j[0].job = 4242;
        j[0].epoch = EPOCH;
        j[0].user = "bob";
        fj_sample_proc *p = add_procs(b, &j[0], 1);
        p->pid = 4242;
        p->cmd = offsets[i] % 2 ? "make" : "cc1";
        p->cpu_util = offsets[i] / 100.0;
        p->resident_kb = (uint64_t)offsets[i];
        j[1].job = 0;
        j[1].epoch = EPOCH;
        p = add_procs(b, &j[1], 1);
        p->pid = 99;
        p->cmd = "sshd";
        p->resident_kb = 7;
        fj_write_count c[1];
        write_ok(s, &b, 1, c);
        fj_batch_free(b);
    }
    fj_store_close(s);
    db_t *db = raw(dbpath);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT j.job, j.epoch, j.pid, j.first_seen, j.last_seen, j.n_samples, j.nproc_sum, "
             "j.cpu_sum_m, j.cpu_peak_m, j.mem_sum_kb, j.mem_peak_kb, "
             "(SELECT count(*) FROM job_samples x WHERE x.rjob_id=j.id), "
             "(SELECT %s FROM (SELECT s.s FROM job_cmds c JOIN strings s ON s.id=c.cmd_id "
             " WHERE c.rjob_id=j.id ORDER BY s.s) s) "
             "FROM jobs j ORDER BY j.job, j.first_seen",
             D("group_concat(s.s)", "string_agg(s.s, ',')"));
    char *d = dump(db, sql);
    db_close(db);
    rm_db(dbpath);
    return d;
}

Test(contract, rectification_out_of_order_equals_in_order)
{
    /* gap 3600: 0..3000 and 9001..9601 are more than the gap apart, but 6001 is within the gap of
     * both (3001 and 3000): in order everything up to 9601 is one job; arriving last, 6001 bridges
     * the two instances the others made. 20000 is a job of its own. */
    static const int in_order[] = {0, 1500, 3000, 6001, 9001, 9601, 20000};
    static const int shuffled[] = {9601, 0, 20000, 3000, 9001, 1500, 6001};
    char *a = local_job_after(in_order, 7);
    char *b = local_job_after(shuffled, 7);
    cr_assert_str_eq(a, b);
    /* job 4242: one job 0..9601 and one at 20000; job 0: one process, over the same gaps */
    int64_t cpu_sum = 0;
    for (int i = 0; i < 6; i++)
        cpu_sum += (int64_t)(in_order[i] / 100.0 * 1000 + 0.5);
    char want[1024];
    snprintf(want, sizeof want,
             "0|%d|99|%d|%d|6|6|0|0|42|7|6|sshd|\n"
             "0|%d|99|%d|%d|1|1|0|0|7|7|1|sshd|\n"
             "4242|%d|0|%d|%d|6|6|%lld|%d|%d|%d|6|cc1,make|\n"
             "4242|%d|0|%d|%d|1|1|%d|%d|%d|%d|1|cc1|\n",
             EPOCH, T0, T0 + 9601, EPOCH, T0 + 20000, T0 + 20000, EPOCH, T0, T0 + 9601,
             (long long)cpu_sum, 96010, 0 + 1500 + 3000 + 6001 + 9001 + 9601, 9601, EPOCH,
             T0 + 20000, T0 + 20000, 200000, 200000, 20000, 20000);
    cr_assert_str_eq(a, want);
    free(a);
    free(b);
}

Test(contract, repeated_process_in_one_job_is_one_row)
{
    fj_store *s = open_w();
    fj_batch *b = fj_batch_new();
    fj_envelope *e = env(b, FJ_KIND_SAMPLE, "fox", "n1", T0);
    fj_sample_job *j = add_jobs(b, e, 1);
    j->job = 5;
    fj_sample_proc *p = add_procs(b, j, 3);
    p[0].pid = 10;
    p[0].cmd = "a";
    p[0].resident_kb = 100;
    p[1] = p[0];
    p[1].resident_kb = 999; /* same key: the first occurrence wins */
    p[2].pid = 9;
    p[2].cmd = "b";
    p[2].resident_kb = 1;
    fj_write_count c;
    write_ok(s, &b, 1, &c);
    cr_assert_eq(c.inserted, 1 + 1 + 2, "sample, job, two processes");
    cr_assert_eq(c.duplicates, 1);
    fj_store_close(s);
    db_t *db = raw(dbpath);
    char *d = dump(db, "SELECT pid, cmd, resident_kb FROM v_processes ORDER BY pid");
    cr_assert_str_eq(d, "9|b|1|\n10|a|100|\n");
    free(d);
    cr_assert_eq(q1(db, "SELECT mem_sum_kb FROM jobs"), 101, "the repeated record is not counted");
    db_close(db);
    fj_batch_free(b);
}

/* One sample of local job 42 on node n1 at T0 + off. */
static fj_batch *job42(int off, uint64_t mem)
{
    fj_batch *b = fj_batch_new();
    fj_envelope *e = env(b, FJ_KIND_SAMPLE, "fox", "n1", T0 + off);
    fj_sample_job *j = add_jobs(b, e, 1);
    j->job = 42;
    j->epoch = EPOCH;
    fj_sample_proc *p = add_procs(b, j, 1);
    p->pid = 42;
    p->cmd = off / 60 % 2 ? "x" : "y";
    p->resident_kb = mem;
    return b;
}

Test(contract, another_writer_does_not_confuse_the_job_cache)
{
    /* Two writer handles (as `fjord import` next to `fjord serve`): each must see the other's job
     * summaries, not a cached copy of its own. */
    fj_store *a = open_w(), *b = open_w();
    fj_write_count c;
    fj_batch *x;
    x = job42(0, 1);
    write_ok(a, &x, 1, &c);
    fj_batch_free(x);
    x = job42(60, 10);
    write_ok(b, &x, 1, &c);
    fj_batch_free(x);
    x = job42(120, 100);
    write_ok(a, &x, 1, &c);
    fj_batch_free(x);
    x = job42(180, 1000);
    write_ok(b, &x, 1, &c);
    fj_batch_free(x);
    /* b merges by bridging: a far sample, then one between */
    x = job42(7320, 10000); /* 7140 s after 180: a second instance */
    write_ok(a, &x, 1, &c);
    fj_batch_free(x);
    x = job42(3780, 100000); /* within the gap of both: merges them */
    write_ok(b, &x, 1, &c);
    fj_batch_free(x);
    x = job42(7380, 1000000);
    write_ok(a, &x, 1, &c);
    fj_batch_free(x);
    fj_store_close(a);
    fj_store_close(b);
    db_t *db = raw(dbpath);
    char *d = dump(db, "SELECT count(*), sum(n_samples), sum(mem_sum_kb), max(mem_peak_kb) FROM jobs");
    cr_assert_str_eq(d, "1|7|1111111|1000000|\n");
    free(d);
    cr_assert_eq(q1(db, "SELECT count(*) FROM job_cmds"), 2);
    cr_assert_eq(q1(db, "SELECT count(*) FROM job_samples"), 7);
    db_close(db);
}

Test(contract, reboot_starts_a_new_job)
{
    fj_store *s = open_w();
    for (int i = 0; i < 2; i++) {
        fj_batch *b = fj_batch_new();
        fj_envelope *e = env(b, FJ_KIND_SAMPLE, "fox", "vm1", T0 + i * 60);
        fj_sample_job *j = add_jobs(b, e, 1);
        j->job = 1000;
        j->epoch = EPOCH + (uint64_t)i * 50; /* rebooted in between, same pgid */
        add_procs(b, j, 1)->pid = 1000;
        fj_write_count c;
        write_ok(s, &b, 1, &c);
        fj_batch_free(b);
    }
    fj_store_close(s);
    db_t *db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT count(*) FROM jobs WHERE job=1000"), 2);
    db_close(db);
}

/* --- reading ------------------------------------------------------------------------------------ */

Test(contract, read_only_handle_reads_while_writer_holds_the_lock)
{
    fj_store *w = open_w();
    fj_batch *b = everything_batch();
    fj_write_count c[5];
    write_ok(w, &b, 1, c);
    fj_store *r = open_store(dbpath, FJ_STORE_READ, false);
    fj_err err = {0};
    cr_assert_eq(fj_store_write(r, &b, 1, c, &err), FJ_EINVAL, "a reader cannot write");
    db_t *db = raw(dbpath);
    cr_assert_eq(db_try(db, D("BEGIN IMMEDIATE; INSERT INTO clusters(name) VALUES('x')",
                              "BEGIN; INSERT INTO clusters(name) VALUES('x')")),
                 0);
    fj_query q = {.cluster = "fox"};
    char *got = query_json(r, fj_store_query_nodes, &q);
    char *c10 = node_row(got, "c1-10");
    cr_assert(strstr(c10, "{\"cluster\":\"fox\",\"node\":\"c1-10\",\"last_seen\":\"2026-01-28T08:22:48Z\","
                          "\"states\":[\"DRAIN\",\"MIXED\"],"),
              "%s", c10);
    cr_assert(strstr(c10, "\"sysinfo_time\":\"2026-01-28T08:22:48Z\",\"os_name\":\"Linux\",\"os_release\":\"5.14\","
                          "\"architecture\":\"x86_64\",\"cpu_model\":\"AMD EPYC 7702\",\"sockets\":2,"
                          "\"cores_per_socket\":64,\"threads_per_core\":1,"),
              "%s", c10);
    cr_assert(strstr(c10, "\"memory_kb\":263000000,"), "%s", c10);
    cr_assert(strstr(c10, "\"gpus\":1,"), "%s", c10);
    char *c11 = node_row(got, "c1-11");
    cr_assert(strstr(c11, "{\"cluster\":\"fox\",\"node\":\"c1-11\",\"last_seen\":null,\"states\":[\"IDLE\"],"),
              "%s", c11);
    cr_assert(strstr(c11, "\"sysinfo_time\":null,\"os_name\":null,"), "%s", c11);
    free(c10);
    free(c11);
    free(got);
    q.limit = 3;
    got = query_json(r, fj_store_query_jobs, &q);
    cr_assert(strstr(got, "\"pid\":77"), "%s", got);
    free(got);
    db_try(db, "ROLLBACK");
    db_close(db);
    fj_store_close(r);
    fj_store_close(w);
    fj_batch_free(b);

    fj_store_opts o = {.mode = FJ_STORE_READ};
    fj_store *s = NULL;
    cr_assert_neq(fj_store_open("/nonexistent/dir/x.db", &o, &s, &err), FJ_OK);
}

Test(contract, writer_busy_maps_to_ebusy)
{
    fj_store *w = open_w();
    db_t *db = raw(dbpath);
    if (db->sq)
        sqlite3_busy_timeout(db->sq, 0);
    /* PostgreSQL: a lock that conflicts with the writer's inserts; it waits lock_timeout (5 s) */
    cr_assert_eq(db_try(db, D("BEGIN IMMEDIATE", "BEGIN; LOCK TABLE slurm_jobs IN SHARE MODE")), 0);
    fj_batch *b = fj_batch_new();
    fj_slurm_job *j = jobs_env(b, T0, 1);
    j->job_id = 1;
    fj_write_count c;
    fj_err err = {0};
    /* the writer waits busy_timeout (5 s) for the other connection, then gives up */
    cr_assert_eq(fj_store_write(w, &b, 1, &c, &err), FJ_EBUSY, "%s", err.message);
    db_try(db, "ROLLBACK");
    write_ok(w, &b, 1, &c);
    cr_assert_eq(c.inserted, 1);
    db_close(db);
    fj_store_close(w);
    fj_batch_free(b);
}

Test(contract, topology_blobs_are_kept_once)
{
    fj_store *s = open_w();
    char *svg = malloc(300001);
    for (int i = 0; i < 300000; i++)
        svg[i] = "PHN2ZyB4bWxucz0i"[i % 16];
    svg[300000] = 0;
    for (int day = 0; day < 3; day++) {
        fj_batch *b = fj_batch_new();
        fj_envelope *e = env(b, FJ_KIND_SYSINFO, "fox", "c1-10", T0 + day * 86400);
        e->u.sysinfo.topo_svg = svg;
        e->u.sysinfo.topo_text = day == 2 ? "Machine (256GB)" : NULL;
        fj_write_count c;
        write_ok(s, &b, 1, &c);
        fj_batch_free(b);
    }
    fj_store_close(s);
    db_t *db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT count(*) FROM sysinfo"), 3);
    cr_assert_eq(q1(db, "SELECT count(DISTINCT topo_svg_blob) FROM sysinfo"), 1);
    cr_assert_eq(q1(db, "SELECT count(*) FROM blobs"), 2);
    cr_assert_eq(q1(db, "SELECT size FROM blobs WHERE codec='zstd'"), 300000);
    cr_assert_lt(q1(db, "SELECT length(data) FROM blobs WHERE codec='zstd'"), 10000, "compressed");
    db_close(db);
    free(svg);
}

/* --- tokens ------------------------------------------------------------------------------------- */

Test(contract, tokens)
{
    fj_store *s = open_w();
    fj_err err = {0};
    fj_token_rec t = {.cluster = "fox", .hash = "sha256$00$11", .read_only = false, .created = T0};
    cr_assert_eq(fj_tokens_put(s, &t, &err), FJ_OK);
    fj_token_rec t2 = {.cluster = "betzy", .hash = "sha256$22$33", .read_only = true, .created = T0 + 1};
    cr_assert_eq(fj_tokens_put(s, &t2, &err), FJ_OK);
    snprintf(t.hash, sizeof t.hash, "sha256$44$55"); /* rotate */
    cr_assert_eq(fj_tokens_put(s, &t, &err), FJ_OK);
    fj_token_rec got;
    cr_assert_eq(fj_tokens_get(s, "fox", &got, &err), FJ_OK);
    cr_assert_str_eq(got.hash, "sha256$44$55");
    cr_assert_eq(got.created, T0);
    cr_assert_not(got.read_only);
    fj_store *r = open_store(dbpath, FJ_STORE_READ, false);
    cr_assert_eq(fj_tokens_get(r, "betzy", &got, &err), FJ_OK);
    cr_assert(got.read_only);
    cr_assert_eq(fj_tokens_get(r, "saga", &got, &err), FJ_ENOTFOUND);
    fj_store_close(r);
    fj_token_rec *list;
    size_t n;
    cr_assert_eq(fj_tokens_list(s, &list, &n, &err), FJ_OK);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(list[0].cluster, "betzy");
    cr_assert_str_eq(list[1].cluster, "fox");
    fj_free(list);
    cr_assert_eq(fj_tokens_revoke(s, "fox", &err), FJ_OK);
    cr_assert_eq(fj_tokens_revoke(s, "fox", &err), FJ_ENOTFOUND);
    cr_assert_eq(fj_tokens_get(s, "fox", &got, &err), FJ_ENOTFOUND);
    cr_assert_eq(fj_tokens_list(s, &list, &n, &err), FJ_OK);
    cr_assert_eq(n, 1);
    fj_free(list);
    fj_store_close(s);
}

/* --- PostgreSQL only: partitions, concurrency, connection loss ---------------------------------- */

#ifdef FJ_HAVE_PG
#define NEED_PG()                                                                                        \
    do {                                                                                                 \
        if (!pg)                                                                                         \
            cr_skip_test("PostgreSQL only (FJ_TEST_DB_URL)");                                            \
    } while (0)

/* The Monday 00:00 UTC on or before t. */
static int64_t week_of(int64_t t)
{
    int64_t d = t - 345600, q = d / 604800;
    if (d % 604800 < 0)
        q--;
    return q * 604800 + 345600;
}

static bool partition_exists(db_t *db, const char *table, int64_t t)
{
    time_t w = (time_t)week_of(t);
    struct tm tm;
    gmtime_r(&w, &tm);
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM pg_class WHERE relname = '%s_w%04d%02d%02d'", table,
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
    return q1(db, sql) == 1;
}

Test(contract, pg_partitions_ahead_and_retention)
{
    NEED_PG();
    fj_time now = fj_time_now(), old = now - 100 * 86400;
    fj_store *s = open_w();
    db_t *db = raw(dbpath);
    /* created ahead: this week and the next two, before any data */
    cr_assert(partition_exists(db, "samples", now));
    cr_assert(partition_exists(db, "sample_proc_sets", now + 2 * 604800));
    cr_assert_not(partition_exists(db, "samples", old));
    fj_time times[] = {old, now};
    for (int i = 0; i < 2; i++) {
        fj_batch *b = fj_batch_new();
        fj_envelope *e = full_sample(b, "c1-10", times[i]);
        slurm_job_procs(b, add_jobs(b, e, 1), 900 + (uint64_t)i, 3, 50.0, 1000);
        fj_write_count c;
        write_ok(s, &b, 1, &c);
        cr_assert_eq(c.inserted, 1 + 2 + 2 + 1 + 3 + 1);
        fj_batch_free(b);
    }
    /* a week that had no partition got one when data for it came */
    cr_assert(partition_exists(db, "samples", old));
    cr_assert(partition_exists(db, "job_samples", old));
    cr_assert_eq(q1(db, "SELECT count(*) FROM samples"), 2);
    fj_store_close(s);

    /* retention 30 days: the writer drops the old week when it opens, whole partitions */
    fj_store_opts o = {.mode = FJ_STORE_WRITE, .create = true, .retention = {.process_samples_s = 30 * 86400, .node_samples_s = 30 * 86400}};
    fj_err err = {0};
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_OK, "%s", err.message);
    cr_assert_not(partition_exists(db, "samples", old));
    cr_assert_not(partition_exists(db, "sample_proc_sets", old));
    cr_assert(partition_exists(db, "samples", now));
    cr_assert_eq(q1(db, "SELECT count(*) FROM samples"), 1);
    cr_assert_eq(q1(db, "SELECT count(*) FROM sample_procs"), 3);
    cr_assert_eq(q1(db, "SELECT count(*) FROM job_samples"), 1);
    cr_assert_eq(q1(db, "SELECT count(*) FROM jobs"), 2, "job summaries are kept");
    /* data older than the horizon is still accepted (and dropped by the next pass) */
    fj_batch *b = fj_batch_new();
    full_sample(b, "c1-11", old);
    fj_write_count c;
    write_ok(s, &b, 1, &c);
    cr_assert_eq(c.inserted, 5);
    fj_batch_free(b);
    fj_store_close(s);
    db_close(db);
}

struct open_arg {
    fj_status st;
    char msg[256];
};

static void *open_thread(void *p)
{
    struct open_arg *a = p;
    fj_store_opts o = {.mode = FJ_STORE_WRITE, .create = true};
    fj_store *s = NULL;
    fj_err err = {0};
    a->st = fj_store_open(dbpath, &o, &s, &err);
    snprintf(a->msg, sizeof a->msg, "%s", err.message);
    fj_store_close(s);
    return NULL;
}

Test(contract, pg_concurrent_servers_migrate_once)
{
    NEED_PG();
    /* Several fjord processes starting on one empty database at once: the advisory lock lets one
     * migrate; the others wait and find the schema current. */
    pthread_t th[4];
    struct open_arg a[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, open_thread, &a[i]);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(a[i].st, FJ_OK, "opener %d: %s", i, a[i].msg);
    }
    db_t *db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT count(*) FROM schema_migrations"), LATEST);
    db_close(db);
}

/* Writer thread of the two-writers test: node's samples of Slurm job 777, of local job 42 on the
 * shared node "n-shared" (every other offset, so the two writers interleave one job), and a job-0
 * process, one envelope per transaction. */
struct writer_arg {
    const char *node;
    int parity;
    fj_status st;
    char msg[256];
};

#define TW_SAMPLES 40

static void *writer_thread(void *p)
{
    struct writer_arg *a = p;
    fj_store_opts o = {.mode = FJ_STORE_WRITE, .job_gap_s = 3600};
    fj_store *s = NULL;
    fj_err err = {0};
    a->st = fj_store_open(dbpath, &o, &s, &err);
    for (int i = 0; a->st == FJ_OK && i < TW_SAMPLES; i++) {
        fj_batch *b = fj_batch_new();
        fj_envelope *e = env(b, FJ_KIND_SAMPLE, "fox", a->node, T0 + i * 60);
        fj_sample_job *j = add_jobs(b, e, 2);
        j[0].job = 777;
        j[0].user = "alice";
        fj_sample_proc *pr = add_procs(b, &j[0], 1);
        pr->pid = 100;
        pr->cmd = "solver";
        pr->resident_kb = 10;
        j[1].job = 0;
        j[1].epoch = EPOCH;
        pr = add_procs(b, &j[1], 1);
        pr->pid = 5;
        pr->cmd = "sshd";
        /* the shared node, newest first on one writer and oldest first on the other */
        int k = a->parity ? TW_SAMPLES - 1 - i : i;
        e = env(b, FJ_KIND_SAMPLE, "fox", "n-shared", T0 + (2 * k + a->parity) * 60);
        j = add_jobs(b, e, 1);
        j->job = 42;
        j->epoch = EPOCH;
        pr = add_procs(b, j, 1);
        pr->pid = 42;
        pr->cmd = "make";
        pr->resident_kb = 1;
        fj_write_count c[2];
        a->st = fj_store_write(s, &b, 1, c, &err);
        fj_batch_free(b);
    }
    snprintf(a->msg, sizeof a->msg, "%s", err.message);
    fj_store_close(s);
    return NULL;
}

Test(contract, pg_two_writers_rectify_shared_jobs)
{
    NEED_PG();
    fj_store_close(open_w());
    pthread_t th[2];
    struct writer_arg a[2] = {{"n-a", 0, FJ_OK, ""}, {"n-b", 1, FJ_OK, ""}};
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, writer_thread, &a[i]);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(a[i].st, FJ_OK, "writer %d: %s", i, a[i].msg);
    }
    db_t *db = raw(dbpath);
    /* the Slurm job spans both writers' nodes: one row, every node-sample counted once */
    char *d = dump(db, "SELECT count(*), sum(n_samples), sum(mem_sum_kb), min(first_seen), max(last_seen) "
                       "FROM jobs WHERE job = 777");
    char want[128];
    snprintf(want, sizeof want, "1|%d|%d|%d|%d|\n", 2 * TW_SAMPLES, 20 * TW_SAMPLES, T0, T0 + (TW_SAMPLES - 1) * 60);
    cr_assert_str_eq(d, want);
    free(d);
    cr_assert_eq(q1(db, "SELECT count(*) FROM job_hosts h JOIN jobs j ON j.id = h.rjob_id WHERE j.job = 777"), 2);
    /* the local job on the shared node, written by both, interleaved and in opposite orders */
    d = dump(db, "SELECT count(*), sum(n_samples), sum(mem_sum_kb) FROM jobs WHERE job = 42");
    snprintf(want, sizeof want, "1|%d|%d|\n", 2 * TW_SAMPLES, 2 * TW_SAMPLES);
    cr_assert_str_eq(d, want);
    free(d);
    cr_assert_eq(q1(db, "SELECT count(*) FROM job_samples"), 2 * TW_SAMPLES * 3);
    cr_assert_eq(q1(db, "SELECT count(*) FROM jobs WHERE job = 0"), 2, "one job-0 process per node");
    cr_assert_eq(q1(db, "SELECT count(*) FROM samples"), 4 * TW_SAMPLES);
    db_close(db);
}

/* Ends every connection fjord has to the test database (a restarted or failed-over server). */
static void kill_fjord_connections(void)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'fjord' AND "
             "datname = '%s'",
             strrchr(dbpath, '/') + 1);
    PGconn *c = pg_connect(pg_admin);
    PGresult *r = PQexec(c, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    usleep(100000);
}

struct busy_arg {
    fj_store *s;
    fj_batch *b;
    fj_status st;
};

static void *busy_write(void *p)
{
    struct busy_arg *a = p;
    fj_write_count c;
    fj_err err = {0};
    a->st = fj_store_write(a->s, &a->b, 1, &c, &err);
    return NULL;
}

Test(contract, pg_connection_loss_is_ebusy_then_reconnects)
{
    NEED_PG();
    fj_store *w = open_w();
    fj_store *r = open_store(dbpath, FJ_STORE_READ, false);
    fj_batch *b = everything_batch();
    fj_write_count c[5];
    write_ok(w, &b, 1, c);
    /* lost while idle: the next transaction reconnects first, nothing fails */
    kill_fjord_connections();
    write_ok(w, &b, 1, c);
    cr_assert_eq(c[0].duplicates, 18);
    fj_query q = {.cluster = "fox"};
    free(query_json(r, fj_store_query_nodes, &q));
    fj_err err = {0};
    fj_token_rec t;
    cr_assert_eq(fj_tokens_get(r, "nobody", &t, &err), FJ_ENOTFOUND);

    /* lost in the middle of a transaction: FJ_EBUSY (503), nothing stored, the next write works */
    db_t *db = raw(dbpath);
    cr_assert_eq(db_try(db, "BEGIN; LOCK TABLE slurm_jobs IN SHARE MODE"), 0);
    fj_batch *jb = fj_batch_new();
    jobs_env(jb, T0 + 60, 1)->job_id = 4711;
    struct busy_arg a = {w, jb, FJ_OK};
    pthread_t th;
    pthread_create(&th, NULL, busy_write, &a);
    usleep(1000000); /* the writer now waits for the lock */
    kill_fjord_connections();
    pthread_join(th, NULL);
    cr_assert_eq(a.st, FJ_EBUSY);
    db_try(db, "ROLLBACK");
    cr_assert_eq(q1(db, "SELECT count(*) FROM slurm_jobs WHERE job_id = 4711"), 0);
    fj_write_count one;
    write_ok(w, &jb, 1, &one);
    cr_assert_eq(one.inserted, 1);
    cr_assert_eq(q1(db, "SELECT count(*) FROM slurm_jobs WHERE job_id = 4711"), 1);
    db_close(db);
    fj_batch_free(jb);
    fj_batch_free(b);
    fj_store_close(r);
    fj_store_close(w);
}
#endif

/* --- line-protocol metrics (docs/metrics.md) ------------------------------------------------------ */

#define TS_HOSTS 300 /* over two of PostgreSQL's statements of 128 series */
#define TS_STEPS 6

/* cpu_load of hosts h000.. at 60 s steps: host h's value at step k is h + k / 10. */
static void write_metric_hosts(fj_store *w)
{
    size_t cap = (size_t)TS_HOSTS * TS_STEPS * 64, off = 0;
    char *body = malloc(cap);
    cr_assert_not_null(body);
    for (int h = 0; h < TS_HOSTS; h++)
        for (int k = 0; k < TS_STEPS; k++)
            off += (size_t)snprintf(body + off, cap - off, "cpu_load,hostname=h%03d value=%g %d\n", h, h + k / 10.0,
                                    T0 + 60 * k);
    fj_batch *b = fj_batch_new();
    fj_cc_opts o = {.default_cluster = "fox", .arrival_ns = (int64_t)T0 * 1000000000, .keep_raw = true};
    cr_assert_eq(fj_cc_decode(body, off, &o, b, NULL, NULL, NULL, NULL), FJ_OK);
    fj_write_count c;
    write_ok(w, &b, 1, &c);
    fj_batch_free(b);
    free(body);
}

typedef struct ts_ids {
    uint32_t v[TS_HOSTS + 1];
    size_t n;
} ts_ids;

static fj_status collect_id(void *ud, uint32_t id, const fj_ts_key *key)
{
    (void)key;
    ts_ids *x = ud;
    if (x->n < TS_HOSTS)
        x->v[x->n++] = id;
    return FJ_OK;
}

/* What ts_read_many hands over, checked against ts_read's answers taken before. */
typedef struct many_check {
    fj_ts_points *want;
    size_t calls;
} many_check;

static fj_status same_as_one_by_one(void *ud, size_t i, const fj_ts_points *pts)
{
    many_check *m = ud;
    cr_assert_eq(i, m->calls++, "series handed over in order");
    cr_assert_eq(pts->n, m->want[i].n, "series %zu: %zu points, want %zu", i, pts->n, m->want[i].n);
    for (size_t k = 0; k < pts->n; k++) {
        cr_assert_eq(pts->t[k], m->want[i].t[k]);
        cr_assert_eq(pts->v[k], m->want[i].v[k]);
    }
    return FJ_OK;
}

static void expect_read_many_equals_ts_read(fj_store *r, fj_ts_engine *live, const ts_ids *ids)
{
    fj_ts_points *want = calloc(ids->n, sizeof *want), pts = {0};
    cr_assert_not_null(want);
    fj_err err = {0};
    for (size_t i = 0; i < ids->n; i++) {
        cr_assert_eq(fj_store_ts_read(r, live, ids->v[i], 0, INT64_MAX, &want[i], &err), FJ_OK, "%s", err.message);
        cr_assert_eq(want[i].n, TS_STEPS);
    }
    many_check m = {want, 0};
    cr_assert_eq(fj_store_ts_read_many(r, live, ids->v, ids->n, 0, INT64_MAX, &pts, same_as_one_by_one, &m, &err),
                 FJ_OK, "%s", err.message);
    cr_assert_eq(m.calls, ids->n);
    for (size_t i = 0; i < ids->n; i++)
        fj_ts_points_free(&want[i]);
    free(want);
    fj_ts_points_free(&pts);
}

Test(contract, ts_read_many_equals_ts_read_series_by_series)
{
    fj_store *w = open_w();
    fj_store_opts o = {.mode = FJ_STORE_WRITE, .ts_seal_points = 4}; /* a chunk and a buffer per series */
    fj_err err = {0};
    cr_assert_eq(fj_store_ts_start(w, &o, &err), FJ_OK, "%s", err.message);
    write_metric_hosts(w);
    fj_store *r = open_store(dbpath, FJ_STORE_READ, false);
    ts_ids ids = {.n = 0};
    fj_ts_sel sel = {"fox", NULL, "cpu_load"};
    cr_assert_eq(fj_store_ts_series(r, &sel, collect_id, &ids, &err), FJ_OK, "%s", err.message);
    cr_assert_eq(ids.n, TS_HOSTS);
    /* in no particular order, one series twice */
    for (size_t i = 0; i < ids.n / 2; i++) {
        uint32_t x = ids.v[i];
        ids.v[i] = ids.v[ids.n - 1 - i];
        ids.v[ids.n - 1 - i] = x;
    }
    ids.v[ids.n++] = ids.v[7];
    expect_read_many_equals_ts_read(r, fj_store_ts_engine(w), &ids); /* stored and live */
    fj_store_close(w); /* seals and stores the rest */
    expect_read_many_equals_ts_read(r, NULL, &ids);
    fj_ts_points none = {0};
    many_check m = {NULL, 0};
    cr_assert_eq(fj_store_ts_read_many(r, NULL, ids.v, ids.n, 5, 4, &none, same_as_one_by_one, &m, &err), FJ_EINVAL);
    cr_assert_eq(m.calls, 0);
    fj_store_close(r);
}

/* --- Chimbuko (docs/chimbuko.md) --------------------------------------------------------------- */

#define CB_V2 FJ_SHARED_DIR "/data/chimbuko/synthetic-v2/"

/* A batch of one Chimbuko envelope of cluster hpc1 decoded from text (a packet when c is
 * FJ_CB_PACKET). */
static fj_batch *cb_decode(const char *text, fj_cb_collection c, const char *run)
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

static fj_batch *cb_file(const char *name, fj_cb_collection c, const char *run)
{
    char path[512];
    size_t len;
    snprintf(path, sizeof path, CB_V2 "%s", name);
    char *text = fj_test_read_file(path, &len);
    cr_assert(text, "%s", path);
    fj_batch *b = cb_decode(text, c, run);
    free(text);
    return b;
}

/* Writes b alone and frees it; its counts. */
static fj_write_count cb_write1(fj_store *s, fj_batch *b)
{
    fj_write_count c = {0};
    write_ok(s, &b, 1, &c);
    fj_batch_free(b);
    return c;
}

/* A packet whose one function (app 0, fid 5) has the given calls, created at t milliseconds. */
static fj_batch *cb_func_packet(int t, int calls)
{
    char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"created_at\":%d,\"version\":2,\"anomaly_stats\":{\"created_at\":%d,\"func\":[{\"app\":0,\"fid\":5,"
             "\"name\":\"f\",\"stats\":{\"accumulate\":1,\"count\":1,\"kurtosis\":0,\"maximum\":1,\"mean\":1,"
             "\"minimum\":1,\"skewness\":0,\"stddev\":0},\"inclusive\":{\"accumulate\":10,\"count\":%d,"
             "\"kurtosis\":0,\"maximum\":10,\"mean\":10,\"minimum\":10,\"skewness\":0,\"stddev\":0},\"exclusive\":"
             "{\"accumulate\":10,\"count\":1,\"kurtosis\":0,\"maximum\":10,\"mean\":10,\"minimum\":10,"
             "\"skewness\":0,\"stddev\":0}}]}}",
             t, t, calls);
    return cb_decode(buf, FJ_CB_PACKET, "r");
}

Test(contract, chimbuko_packets_count_and_resending_adds_nothing)
{
    fj_store *s = open_w();
    fj_write_count c = cb_write1(s, cb_file("pserver-packet-full.json", FJ_CB_PACKET, "r1"));
    /* packet, rank stats, 2 steps, 2 functions, 1 counter, 1 metrics row */
    cr_expect_eq(c.inserted, 8);
    cr_expect_eq(c.duplicates, 0);
    c = cb_write1(s, cb_file("pserver-packet-full.json", FJ_CB_PACKET, "r1"));
    cr_expect_eq(c.inserted, 0);
    cr_expect_eq(c.duplicates, 8);
    /* The idle packet repeats the counter unchanged: only the packet row is new. */
    c = cb_write1(s, cb_file("pserver-packet-idle.json", FJ_CB_PACKET, "r1"));
    cr_expect_eq(c.inserted, 1);
    cr_expect_eq(c.duplicates, 1);
    c = cb_write1(s, cb_file("pserver-packet-minimal.json", FJ_CB_PACKET, "r1"));
    cr_expect_eq(c.inserted, 1);
    /* The same packet in another run is new. */
    c = cb_write1(s, cb_file("pserver-packet-full.json", FJ_CB_PACKET, "r2"));
    cr_expect_eq(c.inserted, 8);
    db_t *db = raw(dbpath);
    cr_expect_eq(q1(db, "SELECT count(*) FROM chimbuko_packets"), 4);
    cr_expect_eq(q1(db, "SELECT count(*) FROM chimbuko_counter_stats"), 2);
    cr_expect_eq(q1(db, "SELECT count(*) FROM chimbuko_rank_steps WHERE n_anomalies = 3 AND score_max = 7.3125"), 2);
    cr_expect_eq(q1(db, "SELECT count(*) FROM envelopes"), 0, "Chimbuko envelopes leave no envelope rows");
    db_close(db);
    fj_store_close(s);
}

/* t=1000 calls 1; t=2000 calls 1 (same: no point); t=3000 calls 2 (a point); t=1500, late, calls 1
 * (same as the point before it: no point). */
static const struct {
    int t, calls;
    uint64_t inserted;
} cb_points[] = {{1000, 1, 2}, {2000, 1, 1}, {3000, 2, 2}, {1500, 1, 1}};

Test(contract, chimbuko_function_points_only_on_change)
{
    fj_store *s = open_w();
    for (size_t i = 0; i < 4; i++) {
        fj_write_count c = cb_write1(s, cb_func_packet(cb_points[i].t, cb_points[i].calls));
        cr_expect_eq(c.inserted, cb_points[i].inserted, "packet at %d: %llu inserted", cb_points[i].t,
                     (unsigned long long)c.inserted);
    }
    db_t *db = raw(dbpath);
    cr_expect_eq(q1(db, "SELECT count(*) FROM chimbuko_func_stats"), 2);
    db_close(db);
    fj_store_close(s);
}

Test(contract, chimbuko_one_group_counts_as_one_by_one)
{
    /* The same packets in one group commit: each compared with the point an earlier packet of
     * the group wrote; records repeated within the group: the first copy counts. */
    fj_store *s = open_w();
    fj_batch *b[7];
    for (size_t i = 0; i < 4; i++)
        b[i] = cb_func_packet(cb_points[i].t, cb_points[i].calls);
    b[4] = cb_file("anomalies-record-cpu-hbos.json", FJ_CB_ANOMALIES, "r");
    b[5] = cb_file("anomalies-record-cpu-hbos.json", FJ_CB_ANOMALIES, "r");
    b[6] = cb_func_packet(2000, 1); /* the second packet again */
    fj_write_count c[7];
    write_ok(s, b, 7, c);
    for (size_t i = 0; i < 4; i++)
        cr_expect_eq(c[i].inserted, cb_points[i].inserted, "packet at %d: %llu inserted", cb_points[i].t,
                     (unsigned long long)c[i].inserted);
    cr_expect_eq(c[4].inserted, 1);
    cr_expect_eq(c[5].inserted, 0);
    cr_expect_eq(c[5].duplicates, 1);
    cr_expect_eq(c[6].inserted, 0);
    cr_expect_eq(c[6].duplicates, 2, "a packet of the group seen again: packet and function");
    db_t *db = raw(dbpath);
    cr_expect_eq(q1(db, "SELECT count(*) FROM chimbuko_func_stats"), 2);
    cr_expect_eq(q1(db, "SELECT count(*) FROM chimbuko_packets"), 4);
    cr_expect_eq(q1(db, "SELECT count(*) FROM chimbuko_events"), 1);
    db_close(db);
    for (size_t i = 0; i < 7; i++)
        fj_batch_free(b[i]);
    fj_store_close(s);
}

Test(contract, chimbuko_all_or_nothing_with_a_failing_envelope)
{
    fj_store *s = open_w();
    fj_batch *b = cb_file("pserver-packet-full.json", FJ_CB_PACKET, "r1");
    fj_envelope *e = fj_batch_add(b);
    e->kind = FJ_KIND__COUNT; /* not a kind: the backend refuses it mid-transaction */
    e->cluster = "hpc1";
    fj_write_count c[2];
    fj_err err = {0};
    cr_expect_neq(fj_store_write(s, &b, 1, c, &err), FJ_OK);
    fj_batch_free(b);
    db_t *db = raw(dbpath);
    cr_expect_eq(q1(db, "SELECT count(*) FROM chimbuko_packets"), 0);
    cr_expect_eq(q1(db, "SELECT count(*) FROM chimbuko_rank_steps"), 0);
    db_close(db);
    fj_store_close(s);
}

Test(contract, chimbuko_out_of_memory_anywhere_rolls_back_cleanly)
{
    fj_batch *b[3] = {cb_file("pserver-packet-full.json", FJ_CB_PACKET, "r1"),
                      cb_file("anomalies-record-gpu-sstd.json", FJ_CB_ANOMALIES, "r1"),
                      cb_file("metadata-records.json", FJ_CB_METADATA, "r1")};
    fj_store *s = open_w();
    fj_write_count c[3];
    fj_err err;
    int failures = 0;
    for (long n = 0; n < 1000; n++) {
        memset(&err, 0, sizeof err);
        fj_alloc_fail_after(n);
        fj_status st = fj_store_write(s, b, 3, c, &err);
        fj_alloc_fail_after(-1);
        if (st == FJ_OK)
            break;
        cr_assert_eq(st, FJ_ENOMEM, "n=%ld: %s", n, err.message);
        failures++;
    }
    cr_assert_gt(failures, 0, "the write path allocates");
    cr_assert_eq(c[0].inserted, 8);
    write_ok(s, b, 3, c);
    cr_assert_eq(c[0].duplicates, 8);
    cr_assert_eq(c[1].inserted + c[2].inserted, 0);
    db_t *db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT count(*) FROM chimbuko_packets"), 1);
    db_close(db);
    fj_store_close(s);
    for (size_t i = 0; i < 3; i++)
        fj_batch_free(b[i]);
}

/* A sink that keeps the text of one column of each row. */
typedef struct cb_capture {
    fj_sink sink;
    const fj_qtable *t;
    int col;
    const char *want_col;
    char rows[64][96];
    size_t n, tables;
} cb_capture;

static fj_status cb_cap_table(fj_sink *k, const fj_qtable *t)
{
    cb_capture *c = (cb_capture *)k;
    c->t = t;
    c->col = fj_qtable_col(t, c->want_col);
    c->tables++;
    return FJ_OK;
}

static fj_status cb_cap_row(fj_sink *k, const fj_value *v)
{
    cb_capture *c = (cb_capture *)k;
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

static cb_capture cb_cap(const char *col)
{
    cb_capture c = {.sink = {cb_cap_table, cb_cap_row}, .want_col = col};
    return c;
}

Test(contract, chimbuko_queries)
{
    fj_store *w = open_w();
    cb_write1(w, cb_file("pserver-packet-full.json", FJ_CB_PACKET, "r1"));
    cb_write1(w, cb_file("anomalies-record-cpu-hbos.json", FJ_CB_ANOMALIES, "r1"));
    cb_write1(w, cb_file("anomalies-record-gpu-sstd.json", FJ_CB_ANOMALIES, "r1"));
    cb_write1(w, cb_file("anomalies-record-cpu-hbos.json", FJ_CB_NORMALEXECS, "r1"));
    cb_write1(w, cb_file("metadata-records.json", FJ_CB_METADATA, "r1"));
    fj_store *s = open_store(dbpath, FJ_STORE_READ, false);
    fj_err err = {0};
    fj_cb_query q;

    fj_cb_query_init(&q);
    q.cluster = "hpc1";
    cb_capture c = cb_cap("run");
    cr_assert_eq(fj_store_chimbuko_runs(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.n, 1);
    cr_expect_str_eq(c.rows[0], "r1");

    c = cb_cap("step");
    q.series = FJ_CBS_RANKS;
    cr_assert_eq(fj_store_chimbuko_series(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.t, &fj_qt_cb_ranks);
    cr_expect_eq(c.n, 2);
    cr_expect_str_eq(c.rows[0], "11");
    cr_expect_str_eq(c.rows[1], "12");

    c = cb_cap("anomalies");
    cr_assert_eq(fj_store_chimbuko_top(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.tables, 2);
    cr_expect_eq(c.n, 2); /* one rank, one function */
    cr_expect_str_eq(c.rows[0], "4");
    cr_expect_str_eq(c.rows[1], "2");

    c = cb_cap("event");
    q.collection = FJ_CB_PACKET; /* both event collections */
    cr_assert_eq(fj_store_chimbuko_records(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.n, 3);
    q.collection = FJ_CB_ANOMALIES;
    q.limit = 1;
    c = cb_cap("event");
    cr_assert_eq(fj_store_chimbuko_records(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.n, 1);
    cr_expect_str_eq(c.rows[0], "1:12:4711");
    cr_expect(q.next.set, "a second page exists");
    q.after = q.next;
    c = cb_cap("event");
    cr_assert_eq(fj_store_chimbuko_records(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.n, 1);
    cr_expect_str_eq(c.rows[0], "1:12:9001");
    cr_expect(!q.next.set, "the last page");

    fj_cb_query_init(&q);
    q.cluster = "hpc1";
    q.collection = FJ_CB_METADATA;
    q.rank = 1;
    c = cb_cap("value");
    cr_assert_eq(fj_store_chimbuko_records(s, &q, &c.sink, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(c.n, 5);

    q.cluster = "nowhere";
    c = cb_cap("run");
    cr_expect_eq(fj_store_chimbuko_runs(s, &q, &c.sink, &err), FJ_ENOTFOUND);
    q.cluster = NULL;
    cr_expect_eq(fj_store_chimbuko_runs(s, &q, &c.sink, &err), FJ_EINVAL);
    fj_store_close(s);
    fj_store_close(w);
}

/* A job's energy inside a window (fj_store_job_energy, docs/energy.md), on each backend: a card whose
 * power ramps linearly (100 W + 20 W a minute, sampled every minute for 10 minutes) held by one
 * Slurm job; an interval cut by the window's edge counts its part inside, integrated under the same
 * line, so the figures are the ramp's integrals. */
Test(contract, job_energy_inside_a_window)
{
    fj_store *s = open_w();
    fj_batch *b = fj_batch_new();
    for (int k = 0; k <= 10; k++) {
        fj_envelope *e = env(b, FJ_KIND_SAMPLE, "fox", "e1", T0 + 60 * k);
        fj_sample *sm = &e->u.sample;
        sm->has_system = true;
        sm->boot = T0 - 86400;
        sm->n_gpus = 1;
        sm->gpus = zalloc(b, 1, sizeof(fj_sample_gpu));
        sm->gpus[0].uuid = "GPU-ramp";
        sm->gpus[0].performance_state = FJ_XU_UNSET;
        sm->gpus[0].power = (uint64_t)(100 + 20 * k);
        fj_sample_job *j = add_jobs(b, e, 1);
        j->job = 555;
        j->user = "ann";
        fj_sample_proc *p = add_procs(b, j, 1);
        p->pid = 4242;
        p->ppid = 1;
        p->cmd = "train";
        p->n_gpus = 1;
        p->gpus = zalloc(b, 1, sizeof(fj_proc_gpu));
        p->gpus[0].uuid = "GPU-ramp";
        p->gpus[0].gpu_util = 90;
    }
    fj_write_count c[11]; /* one per envelope */
    write_ok(s, &b, 1, c);
    fj_batch_free(b);
    db_t *db = raw(dbpath);
    int64_t id = q1(db, "SELECT id FROM jobs WHERE job = 555");
    db_close(db);

    fj_job_energy en;
    fj_err err = {0};
    /* the whole job: the 10 intervals, 100 W to 300 W: 120 kJ */
    cr_assert_eq(fj_store_job_energy(s, "fox", id, 0, 0, &en, &err), FJ_OK, "%s", err.message);
    cr_assert(en.set[FJ_EP_GPU] && !en.set[FJ_EP_CPU]);
    cr_assert_float_eq(en.joules[FJ_EP_GPU], 120000.0, 1e-6);
    cr_assert_eq(en.how[FJ_EP_GPU], FJ_EH_MEASURED);
    /* 90 s to 450 s: two intervals cut, p(t) = 100 + t / 3: 36000 + (450^2 - 90^2) / 6 */
    cr_assert_eq(fj_store_job_energy(s, "fox", id, T0 + 90, T0 + 450, &en, &err), FJ_OK, "%s", err.message);
    cr_assert_float_eq(en.joules[FJ_EP_GPU], 68400.0, 1e-6);
    /* a window that opens before the job and ends 30 s into it */
    cr_assert_eq(fj_store_job_energy(s, "fox", id, T0 - 1000, T0 + 30, &en, &err), FJ_OK, "%s", err.message);
    cr_assert_float_eq(en.joules[FJ_EP_GPU], 3150.0, 1e-6);
    double kwh;
    cr_assert(fj_job_energy_total(&en, &kwh));
    cr_assert_float_eq(kwh, 3150.0 / 3.6e6, 1e-12);
    /* unknown job, unknown cluster */
    cr_assert_eq(fj_store_job_energy(s, "fox", id + 1000, 0, 0, &en, &err), FJ_ENOTFOUND);
    cr_assert_eq(fj_store_job_energy(s, "no-such", id, 0, 0, &en, &err), FJ_ENOTFOUND);
    fj_store_close(s);
}
