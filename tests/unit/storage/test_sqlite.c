/* Tests of storage/sqlite*.c: batches built by hand go through fj_store_write, and the rows are
 * checked with plain sqlite3 queries on the file. */
#include "alloc.h"
#include "rectify.h"
#include "sqlite_migrations.h"
#include "store.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dbpath[256];
static int db_counter;

/* The schema version this binary ships (migrations are numbered 1..n). */
#define LATEST ((int)fj_sqlite_n_migrations)

static void rm_db(const char *p)
{
    char b[300];
    unlink(p);
    snprintf(b, sizeof b, "%s-wal", p);
    unlink(b);
    snprintf(b, sizeof b, "%s-shm", p);
    unlink(b);
}

static void next_db(void)
{
    snprintf(dbpath, sizeof dbpath, "/tmp/fj_test_sqlite_%d_%d.db", (int)getpid(), db_counter++);
    rm_db(dbpath);
}

static void setup(void)
{
    next_db();
}

static void teardown(void)
{
    rm_db(dbpath);
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

static int64_t total_rows(sqlite3 *db)
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

Test(sqlite, create_applies_migrations)
{
    fj_store *s = open_w();
    fj_migration_info mi;
    fj_err err = {0};
    cr_assert_eq(fj_store_ops_of(s)->migrate_status(s, &mi, &err), FJ_OK);
    cr_assert_eq(mi.current, LATEST);
    cr_assert_eq(mi.latest, LATEST);
    fj_store_close(s);
    sqlite3 *db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT count(*) FROM schema_migrations WHERE version=1 AND name='init' AND applied_at>0"), 1);
    char sql[128];
    for (size_t i = 0; i < N_TABLES; i++) {
        snprintf(sql, sizeof sql, "SELECT count(*) FROM sqlite_master WHERE name='%s'", all_tables[i]);
        cr_assert_eq(q1(db, sql), 1, "table %s", all_tables[i]);
    }
    cr_assert_eq(q1(db, "SELECT count(*) FROM sqlite_master WHERE name='tokens'"), 1);
    sqlite3_close(db);
    /* reopening a current database, with or without create, changes nothing */
    s = open_store(dbpath, FJ_STORE_WRITE, false);
    fj_store_close(s);
    s = open_w();
    fj_store_close(s);
    db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT count(*) FROM schema_migrations"), LATEST);
    sqlite3_close(db);
}

Test(sqlite, url_forms_and_wal)
{
    char url[300];
    snprintf(url, sizeof url, "sqlite:%s", dbpath);
    cr_assert(fj_store_sqlite_ops.accepts(url));
    cr_assert(fj_store_sqlite_ops.accepts(dbpath));
    cr_assert_not(fj_store_sqlite_ops.accepts("postgres://x/y"));
    cr_assert_not(fj_store_sqlite_ops.accepts("postgresql://x/y"));
    fj_store *s = open_store(url, FJ_STORE_WRITE, true);
    fj_store_close(s);
    snprintf(url, sizeof url, "file:%s?cache=private", dbpath);
    s = open_store(url, FJ_STORE_WRITE, false);
    fj_store_close(s);
    sqlite3 *db = raw(dbpath);
    char *mode = dump(db, "PRAGMA journal_mode");
    cr_assert_str_eq(mode, "wal|\n");
    free(mode);
    sqlite3_close(db);

    fj_store_opts bad = {.mode = FJ_STORE_WRITE, .synchronous = "SOMETIMES"};
    fj_err err = {0};
    cr_assert_eq(fj_store_open(dbpath, &bad, &s, &err), FJ_EINVAL);
}

Test(sqlite, empty_database_without_create_needs_migrate)
{
    fj_store_opts o = {.mode = FJ_STORE_WRITE};
    fj_store *s = NULL;
    fj_err err = {0};
    sqlite3 *db = raw(dbpath); /* an empty file */
    sqlite3_close(db);
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_ESCHEMA);
    cr_assert(strstr(err.message, "fjord migrate up"), "%s", err.message);
    o.migrating = true;
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_OK, "%s", err.message);
    int applied = -1;
    cr_assert_eq(fj_store_ops_of(s)->migrate_up(s, &applied, &err), FJ_OK, "%s", err.message);
    cr_assert_eq(applied, LATEST);
    cr_assert_eq(fj_store_ops_of(s)->migrate_up(s, &applied, &err), FJ_OK);
    cr_assert_eq(applied, 0, "nothing left to apply");
    fj_store_close(s);
    s = open_store(dbpath, FJ_STORE_READ, false);
    fj_store_close(s);
}

Test(sqlite, older_schema_is_refused_with_a_migrate_hint)
{
    fj_store_close(open_w());
    sqlite3 *db = raw(dbpath);
    /* fake a binary one migration ahead of the database */
    cr_assert_eq(sqlite3_exec(db, "DELETE FROM schema_migrations", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
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
    cr_assert_eq(fj_store_ops_of(s)->migrate_status(s, &mi, &err), FJ_OK);
    cr_assert_eq(mi.current, 0);
    cr_assert_eq(mi.latest, LATEST);
    fj_store_close(s);
}

Test(sqlite, newer_schema_is_refused)
{
    fj_store_close(open_w());
    sqlite3 *db = raw(dbpath);
    char future[96];
    snprintf(future, sizeof future, "INSERT INTO schema_migrations VALUES(%d,'future',0)", LATEST + 1);
    cr_assert_eq(sqlite3_exec(db, future, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    fj_store *s = NULL;
    fj_err err = {0};
    fj_store_opts o = {.mode = FJ_STORE_WRITE, .create = true};
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_ESCHEMA);
    cr_assert(strstr(err.message, "newer"), "%s", err.message);
    o.migrating = true;
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_OK);
    int applied;
    cr_assert_eq(fj_store_ops_of(s)->migrate_up(s, &applied, &err), FJ_ESCHEMA);
    fj_store_close(s);
}

Test(sqlite, foreign_database_is_refused)
{
    sqlite3 *db = raw(dbpath);
    cr_assert_eq(sqlite3_exec(db, "CREATE TABLE stuff(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    fj_store *s = NULL;
    fj_err err = {0};
    fj_store_opts o = {.mode = FJ_STORE_WRITE, .create = true};
    cr_assert_eq(fj_store_open(dbpath, &o, &s, &err), FJ_ESCHEMA);
    cr_assert(strstr(err.message, "not an fjord database"), "%s", err.message);
}

/* --- writing ------------------------------------------------------------------------------------ */

Test(sqlite, every_table_is_written)
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

    sqlite3 *db = raw(dbpath);
    char sql[128];
    for (size_t i = 0; i < N_TABLES; i++) {
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", all_tables[i]);
        cr_assert_gt(q1(db, sql), 0, "table %s is empty", all_tables[i]);
    }
    /* cpus packed as LEB128 varints: 738432 = 0x80 0x89 0x2d; 0; 127; 128 = 0x80 0x01 */
    char *cpus = dump(db, "SELECT hex(cpus), boot, used_memory_kb, load1 FROM samples");
    cr_assert_str_eq(cpus, "80892D007F8001|1769502168|169964060|102.44|\n");
    free(cpus);
    char *procs = dump(db, "SELECT cluster,node,job,epoch,user,pid,ppid,cmd,cpu_util,rolledup,synthetic_pid "
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
    sqlite3_close(db);
}

Test(sqlite, rewrite_adds_nothing_and_counts_duplicates)
{
    fj_store *s = open_w();
    fj_batch *b = everything_batch();
    fj_write_count c1[5], c2[5];
    write_ok(s, &b, 1, c1);
    sqlite3 *db = raw(dbpath);
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
    sqlite3_close(db);
    fj_store_close(s);
    fj_batch_free(b);
}

Test(sqlite, failed_write_leaves_nothing)
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
    sqlite3 *db = raw(dbpath);
    cr_assert_eq(total_rows(db), 0, "the good batch of the group was rolled back too");
    /* and the handle still works afterwards, names interned in the failed group included */
    write_ok(s, &good, 1, c);
    cr_assert_eq(c[0].inserted, 18);
    cr_assert_eq(q1(db, "SELECT count(*) FROM nodes n JOIN clusters c ON c.id=n.cluster_id WHERE c.name='fox'"), 3);
    cr_assert_eq(q1(db, "SELECT sum(n_samples) FROM jobs"), 4, "the rolled-back group left no trace in the summaries");
    cr_assert_eq(q1(db, "SELECT count(*) FROM job_samples"), 4);
    sqlite3_close(db);
    fj_store_close(s);
    fj_batch_free(good);
    fj_batch_free(bad);
}

Test(sqlite, out_of_memory_anywhere_rolls_back_cleanly)
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
    sqlite3 *db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT sum(n_samples) FROM jobs"), 4);
    cr_assert_eq(q1(db, "SELECT count(*) FROM sample_procs"), 8);
    sqlite3_close(db);
    fj_store_close(s);
    fj_batch_free(b);
}

Test(sqlite, job_batches_with_one_timestamp_are_not_duplicates)
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
    sqlite3 *db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT count(*) FROM slurm_jobs"), 3);
    cr_assert_eq(q1(db, "SELECT count(*) FROM slurm_jobs_current"), 3);
    sqlite3_close(db);
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
    sqlite3 *db = raw(dbpath);
    char *row = dump(db, "SELECT * FROM slurm_jobs_current");
    cr_assert_eq(q1(db, "SELECT count(*) FROM slurm_jobs"), 3);
    sqlite3_close(db);
    rm_db(dbpath);
    return row;
}

Test(sqlite, slurm_current_is_field_by_field_and_order_independent)
{
    static const int orders[6][3] = {{0, 1, 2}, {2, 1, 0}, {2, 0, 1}, {1, 0, 2}, {1, 2, 0}, {0, 2, 1}};
    char *ref = slurm_current_after(orders[0]);
    char expect[512];
    snprintf(expect, sizeof expect,
             "1|555||%d|NULL|CANCELLED|CANCELLED by 7205|NULL|NULL|NULL|NULL|alice|ec31|normal|NULL|NULL|%d|%d|%d|"
             "7200|NULL|c1-[1-2]|NULL|NULL|NULL|NULL|NULL|NULL|NULL|15|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|"
             "NULL|NULL|NULL|\n",
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

static void expect_add(expect_sum *x, const fj_sample_job *j)
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
    UPMAX(x->cpu_peak, cpu);
    UPMAX(x->mem_peak, mem);
    UPMAX(x->gpu_peak, gpu);
    UPMAX(x->gm_peak, gm);
    UPMAX(x->np_peak, np);
}

Test(sqlite, rectified_slurm_job_summary_across_nodes)
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
        expect_add(&x, j);
    }
    fj_write_count c[10];
    write_ok(s, batches, 10, c);
    write_ok(s, &batches[3], 1, c); /* re-sent */
    cr_assert_eq(c[0].inserted, 0);
    sqlite3 *db = raw(dbpath);
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
    sqlite3_close(db);

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
    fj_buf out;
    fj_buf_init(&out, 1 << 20);
    fj_job_query q = {.cluster = "fox"};
    fj_err err = {0};
    cr_assert_eq(fj_store_ops_of(s)->query_jobs(s, &q, &out, &err), FJ_OK, "%s", err.message);
    char frag[256];
    snprintf(frag, sizeof frag, "\"cpu_avg\":%.3f,\"cpu_peak\":%.3f,\"mem_avg_kb\":%lld,\"mem_peak_kb\":%lld",
             (double)x.cpu_sum / 1000.0 / (double)x.n, (double)x.cpu_peak / 1000.0, (long long)(x.mem_sum / x.n),
             (long long)x.mem_peak);
    cr_assert(strstr(out.data, frag), "%s\nwant %s", out.data, frag);
    cr_assert(strstr(out.data, "\"cluster\":\"fox\",\"job\":777,\"epoch\":0,\"node\":null,\"user\":\"ec-imfjohan\","
                               "\"first_seen\":\"2026-01-28T08:22:48Z\",\"last_seen\":\"2026-01-28T08:42:48Z\","
                               "\"hosts\":[\"c1-1\",\"c1-2\"],\"commands\":[\"gambit\",\"mpirun\"]"),
              "%s", out.data);
    cr_assert(strstr(out.data, "\"slurm\":{\"updated\":\"2026-01-28T08:22:48Z\",\"state\":\"RUNNING\","
                               "\"state_raw\":null,\"partition\":\"accel\",\"account\":\"ec1\",\"job_name\":\"train\""),
              "%s", out.data);
    cr_assert(strstr(out.data, "\"time_limit_s\":3600"), "%s", out.data);
    fj_buf_reset(&out);
    q.from = T0 + 5 * 300; /* after the job */
    cr_assert_eq(fj_store_ops_of(s)->query_jobs(s, &q, &out, &err), FJ_OK);
    cr_assert_str_eq(out.data, "{\"jobs\":[]}");
    fj_buf_free(&out);
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
    sqlite3 *db = raw(dbpath);
    char *d = dump(db, "SELECT j.job, j.epoch, j.pid, j.first_seen, j.last_seen, j.n_samples, j.nproc_sum, "
                       "j.cpu_sum_m, j.cpu_peak_m, j.mem_sum_kb, j.mem_peak_kb, "
                       "(SELECT count(*) FROM job_samples x WHERE x.rjob_id=j.id), "
                       "(SELECT group_concat(s.s) FROM (SELECT s.s FROM job_cmds c JOIN strings s ON s.id=c.cmd_id "
                       " WHERE c.rjob_id=j.id ORDER BY s.s) s) "
                       "FROM jobs j ORDER BY j.job, j.first_seen");
    sqlite3_close(db);
    rm_db(dbpath);
    return d;
}

Test(sqlite, rectification_out_of_order_equals_in_order)
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

Test(sqlite, repeated_process_in_one_job_is_one_row)
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
    sqlite3 *db = raw(dbpath);
    char *d = dump(db, "SELECT pid, cmd, resident_kb FROM v_processes ORDER BY pid");
    cr_assert_str_eq(d, "9|b|1|\n10|a|100|\n");
    free(d);
    cr_assert_eq(q1(db, "SELECT mem_sum_kb FROM jobs"), 101, "the repeated record is not counted");
    sqlite3_close(db);
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

Test(sqlite, another_writer_does_not_confuse_the_job_cache)
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
    sqlite3 *db = raw(dbpath);
    char *d = dump(db, "SELECT count(*), sum(n_samples), sum(mem_sum_kb), max(mem_peak_kb) FROM jobs");
    cr_assert_str_eq(d, "1|7|1111111|1000000|\n");
    free(d);
    cr_assert_eq(q1(db, "SELECT count(*) FROM job_cmds"), 2);
    cr_assert_eq(q1(db, "SELECT count(*) FROM job_samples"), 7);
    sqlite3_close(db);
}

Test(sqlite, reboot_starts_a_new_job)
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
    sqlite3 *db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT count(*) FROM jobs WHERE job=1000"), 2);
    sqlite3_close(db);
}

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
     * wrapper in sqlite.c. */
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

Test(sqlite, read_only_handle_reads_while_writer_holds_the_lock)
{
    fj_store *w = open_w();
    fj_batch *b = everything_batch();
    fj_write_count c[5];
    write_ok(w, &b, 1, c);
    fj_store *r = open_store(dbpath, FJ_STORE_READ, false);
    fj_err err = {0};
    cr_assert_eq(fj_store_write(r, &b, 1, c, &err), FJ_EINVAL, "a reader cannot write");
    sqlite3 *db = raw(dbpath);
    cr_assert_eq(sqlite3_exec(db, "BEGIN IMMEDIATE; INSERT INTO clusters(name) VALUES('x')", NULL, NULL, NULL),
                 SQLITE_OK);
    fj_buf out;
    fj_buf_init(&out, 1 << 20);
    cr_assert_eq(fj_store_ops_of(r)->query_nodes(r, "fox", &out, &err), FJ_OK, "%s", err.message);
    cr_assert(strstr(out.data, "{\"cluster\":\"fox\",\"node\":\"c1-10\",\"last_seen\":\"2026-01-28T08:22:48Z\","
                               "\"sysinfo\":{\"time\":\"2026-01-28T08:22:48Z\",\"cpu_model\":\"AMD EPYC 7702\","
                               "\"sockets\":2,\"cores_per_socket\":64,\"threads_per_core\":1,\"memory_kb\":263000000,"
                               "\"os_name\":\"Linux\",\"os_release\":\"5.14\",\"architecture\":\"x86_64\",\"gpus\":1},"
                               "\"states\":[\"DRAIN\",\"MIXED\"]}"),
              "%s", out.data);
    cr_assert(strstr(out.data, "{\"cluster\":\"fox\",\"node\":\"c1-11\",\"last_seen\":null,\"sysinfo\":null,"
                               "\"states\":[\"IDLE\"]}"),
              "%s", out.data);
    fj_buf_reset(&out);
    fj_job_query q = {.cluster = "fox", .limit = 3};
    cr_assert_eq(fj_store_ops_of(r)->query_jobs(r, &q, &out, &err), FJ_OK, "%s", err.message);
    cr_assert(strstr(out.data, "\"pid\":77"), "%s", out.data);
    fj_buf_reset(&out);
    fj_buf_free(&out);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    fj_store_close(r);
    fj_store_close(w);
    fj_batch_free(b);

    fj_store_opts o = {.mode = FJ_STORE_READ};
    fj_store *s = NULL;
    cr_assert_neq(fj_store_open("/nonexistent/dir/x.db", &o, &s, &err), FJ_OK);
}

Test(sqlite, writer_busy_maps_to_ebusy)
{
    fj_store *w = open_w();
    sqlite3 *db = raw(dbpath);
    sqlite3_busy_timeout(db, 0);
    cr_assert_eq(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    fj_batch *b = fj_batch_new();
    fj_slurm_job *j = jobs_env(b, T0, 1);
    j->job_id = 1;
    fj_write_count c;
    fj_err err = {0};
    /* the writer waits busy_timeout (5 s) for the other connection, then gives up */
    cr_assert_eq(fj_store_write(w, &b, 1, &c, &err), FJ_EBUSY, "%s", err.message);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    write_ok(w, &b, 1, &c);
    cr_assert_eq(c.inserted, 1);
    sqlite3_close(db);
    fj_store_close(w);
    fj_batch_free(b);
}

Test(sqlite, topology_blobs_are_kept_once)
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
    sqlite3 *db = raw(dbpath);
    cr_assert_eq(q1(db, "SELECT count(*) FROM sysinfo"), 3);
    cr_assert_eq(q1(db, "SELECT count(DISTINCT topo_svg_blob) FROM sysinfo"), 1);
    cr_assert_eq(q1(db, "SELECT count(*) FROM blobs"), 2);
    cr_assert_eq(q1(db, "SELECT size FROM blobs WHERE codec='zstd'"), 300000);
    cr_assert_lt(q1(db, "SELECT length(data) FROM blobs WHERE codec='zstd'"), 10000, "compressed");
    sqlite3_close(db);
    free(svg);
}

/* --- tokens ------------------------------------------------------------------------------------- */

Test(sqlite, tokens)
{
    fj_store *s = open_w();
    const fj_store_ops *ops = fj_store_ops_of(s);
    fj_err err = {0};
    fj_token_rec t = {.cluster = "fox", .hash = "sha256$00$11", .read_only = false, .created = T0};
    cr_assert_eq(ops->token_put(s, &t, &err), FJ_OK);
    fj_token_rec t2 = {.cluster = "betzy", .hash = "sha256$22$33", .read_only = true, .created = T0 + 1};
    cr_assert_eq(ops->token_put(s, &t2, &err), FJ_OK);
    snprintf(t.hash, sizeof t.hash, "sha256$44$55"); /* rotate */
    cr_assert_eq(ops->token_put(s, &t, &err), FJ_OK);
    fj_token_rec got;
    cr_assert_eq(ops->token_get(s, "fox", &got, &err), FJ_OK);
    cr_assert_str_eq(got.hash, "sha256$44$55");
    cr_assert_eq(got.created, T0);
    cr_assert_not(got.read_only);
    fj_store *r = open_store(dbpath, FJ_STORE_READ, false);
    cr_assert_eq(fj_store_ops_of(r)->token_get(r, "betzy", &got, &err), FJ_OK);
    cr_assert(got.read_only);
    cr_assert_eq(fj_store_ops_of(r)->token_get(r, "saga", &got, &err), FJ_ENOTFOUND);
    fj_store_close(r);
    fj_token_rec *list;
    size_t n;
    cr_assert_eq(ops->token_list(s, &list, &n, &err), FJ_OK);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(list[0].cluster, "betzy");
    cr_assert_str_eq(list[1].cluster, "fox");
    fj_free(list);
    cr_assert_eq(ops->token_revoke(s, "fox", &err), FJ_OK);
    cr_assert_eq(ops->token_revoke(s, "fox", &err), FJ_ENOTFOUND);
    cr_assert_eq(ops->token_get(s, "fox", &got, &err), FJ_ENOTFOUND);
    cr_assert_eq(ops->token_list(s, &list, &n, &err), FJ_OK);
    cr_assert_eq(n, 1);
    fj_free(list);
    fj_store_close(s);
}
