/* Tests of the queries on SQLite (storage/query/, storage/sqlite/load.c) on batches built by hand: node load
 * read in one pass over many nodes (its later half on a second thread) equals node load read node
 * by node, also when some nodes' rows arrived out of time order (back-filled); cluster load sums
 * the nodes; the job list pages by
 * cursor without loss. Answers are compared as CSV text (api/out.c). */
#include "api/out.h"
#include "sqlite_test_db.h"
#include "storage/core/store.h"
#include "storage/core/store_query.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NODES 70 /* over 64: the one-pass read and its split over two threads */
#define STEPS 12
#define T0 1736121600

static char dbpath[256];

static void rm_db(void)
{
    fj_test_rm_db(dbpath);
}

static void setup(void)
{
    fj_test_db_path(dbpath, sizeof dbpath, "sqlite_query", ".db");
}

TestSuite(sqlite_query, .init = setup, .fini = rm_db);

static char name_buf[NODES][16];

/* One sample of node n at step k: counters grow by (n + 1) * k per core, memory and load vary. */
static void add_sample(fj_batch *b, int n, int k)
{
    fj_envelope *e = fj_batch_add(b);
    e->kind = FJ_KIND_SAMPLE;
    e->time = T0 + k * 60;
    e->cluster = "qc";
    e->node = name_buf[n];
    fj_sample *s = &e->u.sample;
    s->has_system = true;
    s->boot = T0 - 1000;
    s->n_cpus = 4;
    s->cpus = fj_arena_calloc(b->arena, 4, sizeof *s->cpus);
    for (int c = 0; c < 4; c++)
        s->cpus[c] = 1000 + (uint64_t)((n + 1) * k * (c + 1)) + (k == 7 && c == 0 ? 0 : 0);
    if (n == 3 && k == 6)
        s->cpus[1] = 5; /* a counter reset */
    s->used_memory_kb = (uint64_t)(1000 * (n + 1) + k);
    s->load1 = n + k / 10.0;
    s->load5 = s->load15 = n;
    if (n % 5 == 0) {
        s->n_gpus = 2;
        s->gpus = fj_arena_calloc(b->arena, 2, sizeof *s->gpus);
        for (int g = 0; g < 2; g++) {
            s->gpus[g].index = (uint64_t)g;
            s->gpus[g].performance_state = FJ_XU_UNSET;
            s->gpus[g].ce_util = (uint64_t)(10 * g + k);
            s->gpus[g].memory_kb = 1000;
            s->gpus[g].power = 100;
            s->gpus[g].temperature = 40 + g;
        }
    }
    /* one Slurm job per node, for the job list */
    s->n_jobs = 1;
    s->jobs = fj_arena_calloc(b->arena, 1, sizeof *s->jobs);
    s->jobs[0].job = (uint64_t)(500 + n);
    s->jobs[0].user = n % 2 ? "alice" : "bob";
    s->jobs[0].n_procs = 1;
    s->jobs[0].procs = fj_arena_calloc(b->arena, 1, sizeof(fj_sample_proc));
    s->jobs[0].procs[0].pid = (uint64_t)(100 + n);
    s->jobs[0].procs[0].cmd = "app";
    s->jobs[0].procs[0].resident_kb = (uint64_t)(100 * (n + 1) + k);
    s->jobs[0].procs[0].cpu_util = (n * 7 + k) % 100;
}

static void put_batch(fj_store *st, fj_batch *b)
{
    fj_write_count *c = calloc(b->n_envs + 1, sizeof *c);
    fj_err err = {0};
    cr_assert_eq(fj_store_write(st, &b, 1, c, &err), FJ_OK, "%s", err.message);
    free(c);
    fj_batch_free(b);
}

static void fill(void)
{
    fj_store_opts o = {.mode = FJ_STORE_WRITE, .create = true, .job_gap_s = 3600};
    fj_store *st = NULL;
    fj_err err = {0};
    cr_assert_eq(fj_store_open(dbpath, &o, &st, &err), FJ_OK, "%s", err.message);
    for (int n = 0; n < NODES; n++)
        snprintf(name_buf[n], sizeof name_buf[n], "n%02d", n);
    /* time order for most nodes; node 5 entirely reversed; node 7's step 4 back-filled at the end */
    for (int k = 0; k < STEPS; k++) {
        fj_batch *b = fj_batch_new();
        for (int n = 0; n < NODES; n++)
            if (n != 5 && !(n == 7 && k == 4))
                add_sample(b, n, k);
        put_batch(st, b);
    }
    for (int k = STEPS - 1; k >= 0; k--) {
        fj_batch *b = fj_batch_new();
        add_sample(b, 5, k);
        put_batch(st, b);
    }
    fj_batch *b = fj_batch_new();
    add_sample(b, 7, 4);
    put_batch(st, b);
    fj_store_close(st);
}

typedef struct one {
    const char *name;
} one;

static bool match_one(void *ctx, const char *name)
{
    return strcmp(((one *)ctx)->name, name) == 0;
}

static bool match_few(void *ctx, const char *name)
{
    (void)ctx;
    return strcmp(name, "n05") < 0; /* n00 .. n04 */
}

static char *run(fj_store *r, fj_query *q, fj_status (*op)(fj_store *, fj_query *, fj_sink *, fj_err *))
{
    fj_buf b;
    fj_buf_init(&b, 1 << 24);
    fj_out o;
    fj_out_init(&o, &b, true);
    fj_err err = {0};
    cr_assert_eq(op(r, q, &o.sink, &err), FJ_OK, "%s", err.message);
    cr_assert_eq(fj_out_finish(&o, false, NULL), FJ_OK);
    fj_out_free(&o);
    char *s = strdup(b.data ? b.data : "");
    fj_buf_free(&b);
    return s;
}

static fj_store *reader(void)
{
    fj_store_opts o = {.mode = FJ_STORE_READ};
    fj_store *r = NULL;
    fj_err err = {0};
    cr_assert_eq(fj_store_open(dbpath, &o, &r, &err), FJ_OK, "%s", err.message);
    return r;
}

Test(sqlite_query, one_pass_equals_node_by_node_whatever_the_arrival_order)
{
    fill();
    fj_store *r = reader();
    fj_query q = {.cluster = "qc", .from = T0 + 90, .to = T0 + STEPS * 60, .bucket_s = 120};
    char *all = run(r, &q, fj_store_query_node_load); /* 20 nodes: one pass (nodes 5 and 7 read again) */
    size_t lines = 0;
    for (char *p = all; *p; p++)
        lines += *p == '\n';
    cr_assert_gt(lines, NODES * 3, "%s", all);
    char *rest = all;
    rest = strchr(rest, '\n') + 1; /* header */
    for (int n = 0; n < NODES; n++) {
        one m = {name_buf[n]};
        fj_query q1 = {.cluster = "qc", .from = T0 + 90, .to = T0 + STEPS * 60, .bucket_s = 120,
                       .host_match = match_one, .host_ctx = &m};
        char *single = run(r, &q1, fj_store_query_node_load);
        char *body = strchr(single, '\n') + 1;
        cr_assert(strncmp(rest, body, strlen(body)) == 0, "node %s read alone:\n%s\nin one pass:\n%.*s", name_buf[n],
                  body, (int)strlen(body), rest);
        rest += strlen(body);
        free(single);
    }
    cr_assert_str_eq(rest, "", "nothing else");
    /* a few nodes are read one by one into one bucket array: each is answered before the next */
    fj_query few = {.cluster = "qc", .from = T0 + 90, .to = T0 + STEPS * 60, .bucket_s = 120,
                    .host_match = match_few};
    char *some = run(r, &few, fj_store_query_node_load);
    char *first = strchr(all, '\n') + 1, *cut = strstr(all, "\nn05,") + 1;
    cr_assert(strncmp(strchr(some, '\n') + 1, first, (size_t)(cut - first)) == 0 &&
                  strlen(strchr(some, '\n') + 1) == (size_t)(cut - first),
              "five nodes:\n%s\nof all:\n%.*s", some, (int)(cut - first), first);
    free(some);
    /* the counter reset of n03 never shows as negative use */
    cr_assert_null(strstr(all, ",-"), "no negative figure: %s", all);

    char *cl = run(r, &q, fj_store_query_cluster_load);
    char want[32];
    snprintf(want, sizeof want, ",%d,%d,", NODES, NODES * 4);
    cr_assert(strstr(cl, want), "%d nodes of 4 cores in each bucket: %s", NODES, cl);
    free(cl);
    free(all);
    fj_store_close(r);
}

Test(sqlite_query, job_pages_lose_nothing)
{
    fill();
    fj_store *r = reader();
    fj_query q = {.cluster = "qc", .sort = FJ_JS_METRIC0 + FJ_JM_MEM_PEAK, .desc = true, .limit = 0};
    char *whole = run(r, &q, fj_store_query_jobs);
    fj_buf acc;
    fj_buf_init(&acc, 1 << 24);
    fj_qpos after = {0};
    int pages = 0;
    for (;;) {
        fj_query p = {.cluster = "qc", .sort = FJ_JS_METRIC0 + FJ_JM_MEM_PEAK, .desc = true, .limit = 3,
                      .after = after};
        char *page = run(r, &p, fj_store_query_jobs);
        const char *rows = strchr(page, '\n') + 1;
        if (!pages)
            fj_buf_append(&acc, page, (size_t)(rows - page));
        fj_buf_puts(&acc, rows);
        free(page);
        pages++;
        if (!p.next.set)
            break;
        after = p.next;
        cr_assert_lt(pages, 50);
    }
    cr_assert_eq(pages, (NODES + 2) / 3);
    cr_assert_str_eq(acc.data, whole);
    fj_buf_free(&acc);
    free(whole);
    fj_query u = {.cluster = "qc", .users = {(const char *[]){"alice"}, 1}};
    char *alice = run(r, &u, fj_store_query_jobs);
    size_t lines = 0;
    for (char *p = alice; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 1 + NODES / 2, "%s", alice);
    free(alice);
    fj_store_close(r);
}

Test(sqlite_query, unknown_cluster_and_bad_window)
{
    fill();
    fj_store *r = reader();
    fj_out o;
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    fj_out_init(&o, &b, false);
    fj_err err = {0};
    fj_query q = {.cluster = "nope"};
    cr_assert_eq(fj_store_query_jobs(r, &q, &o.sink, &err), FJ_ENOTFOUND);
    cr_assert_str_eq(err.path, "cluster");
    fj_query w = {.cluster = "qc", .from = T0, .to = T0 + 86400 * 400, .bucket_s = 1};
    memset(&err, 0, sizeof err);
    cr_assert_eq(fj_store_query_node_load(r, &w, &o.sink, &err), FJ_EINVAL);
    cr_assert_str_eq(err.path, "bucket");
    fj_query j = {.cluster = "qc", .id = 999999};
    memset(&err, 0, sizeof err);
    cr_assert_eq(fj_store_query_job(r, &j, &o.sink, &err), FJ_ENOTFOUND);
    fj_out_free(&o);
    fj_buf_free(&b);
    fj_store_close(r);
}
