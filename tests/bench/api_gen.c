/* api_gen.c — builds the query benchmark's synthetic database through fjord's real write path
 * (typed batches into fj_store_write: the same rows, rectification and indexes as ingest, minus
 * HTTP and JSON decoding). A cluster of N nodes (a tenth with 4 GPUs) sampled every interval for
 * D days; a simple scheduler keeps about 90% of the nodes busy with Slurm jobs of 1 to 64 nodes
 * lasting 30 min to 24 h; each node-sample carries 1 to 3 process records (MPI ranks rolled up,
 * the batch script and srun on the first node; Python with rolled-up workers on GPU nodes). One
 * 64-node job runs for 26 hours from the start of the second day: the profile benchmark's job.
 * Prints the cluster, the time span and that job's Slurm id as JSON at the end.
 *
 * With --lp-nodes N it also writes ClusterCockpit metrics through the metrics engine's writer in
 * process (line protocol decoded by fj_cc_decode, stored by fj_store_write in the same
 * transaction as the step's Sonar batch): cluster "fritz", hosts f0000.., the 9 node-level
 * metrics of tests/bench/lp_load.c every --lp-interval seconds, so that lp_load can continue
 * the same series over HTTP from the end of the history (tests/bench/history_bench.sh).
 *
 *   api_gen --db FILE [--nodes 1000] [--days 7] [--interval 300] [--cores 64] [--seed 1]
 *           [--lp-nodes 0] [--lp-interval 60]
 */
#include "alloc.h"
#include "arena.h"
#include "ingest/cc.h"
#include "storage/core/store.h"
#include "storage/core/store_ts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1736121600 /* 2025-01-06T00:00:00Z */
#define CLUSTER "bench.cluster"
#define MAXN 64

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static double urand(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

typedef struct job {
    uint64_t id;
    int n_nodes, kind; /* 0 MPI, 1 Python on GPU nodes, 2 serial */
    int nodes[MAXN];
    fj_time start, end;
    int user;
    double cpu;      /* busy fraction of the cores it uses */
    int cores;       /* cores used per node */
    uint64_t mem_kb; /* per node */
    uint64_t cpu_time[MAXN], rd[MAXN], wr[MAXN];
    bool done;
} job;

typedef struct gen {
    int nodes, cores, gpu_nodes, days, interval;
    char **names;
    int *job_of; /* node -> index into jobs, -1 when idle */
    uint64_t *cpus; /* nodes x cores cumulative CPU-seconds */
    job *jobs;
    size_t n_jobs, cap_jobs;
    uint64_t next_id;
    fj_time big_start, big_end;
    uint64_t big_id;
    size_t *ended; /* jobs that ended in this step */
    size_t n_ended;
    size_t *started;
    size_t n_started;
} gen;

static void die(const char *what, const fj_err *e)
{
    fprintf(stderr, "api_gen: %s%s%s\n", what, e ? ": " : "", e ? e->message : "");
    exit(1);
}

static bool is_gpu(const gen *g, int n) { return n >= g->nodes - g->gpu_nodes; }

static size_t new_job(gen *g)
{
    if (g->n_jobs == g->cap_jobs) {
        g->cap_jobs = g->cap_jobs ? g->cap_jobs * 2 : 4096;
        g->jobs = realloc(g->jobs, g->cap_jobs * sizeof *g->jobs);
        g->ended = realloc(g->ended, g->cap_jobs * sizeof *g->ended);
        g->started = realloc(g->started, g->cap_jobs * sizeof *g->started);
        if (!g->jobs || !g->ended || !g->started)
            die("out of memory", NULL);
    }
    job *j = &g->jobs[g->n_jobs];
    memset(j, 0, sizeof *j);
    j->id = g->next_id++;
    g->started[g->n_started++] = g->n_jobs;
    return g->n_jobs++;
}

static int pick_size(void)
{
    double u = urand();
    return u < 0.45 ? 1 : u < 0.60 ? 2 : u < 0.75 ? 4 : u < 0.85 ? 8 : u < 0.93 ? 16 : u < 0.98 ? 32 : 64;
}

/* Ends jobs past their end, starts new ones until about 90% of the nodes are busy. Nodes 0..63
 * take only jobs that end before the big job starts, until it has ended. */
static void schedule(gen *g, fj_time t)
{
    g->n_ended = g->n_started = 0;
    for (int n = 0; n < g->nodes; n++) {
        int ji = g->job_of[n];
        if (ji >= 0 && g->jobs[ji].end <= t) {
            if (!g->jobs[ji].done) {
                g->jobs[ji].done = true;
                g->ended[g->n_ended++] = (size_t)ji;
            }
            g->job_of[n] = -1;
        }
    }
    if (t == g->big_start) {
        size_t ji = new_job(g);
        job *j = &g->jobs[ji];
        j->n_nodes = 64, j->kind = 0, j->start = t, j->end = g->big_end, j->user = 7;
        j->cpu = 0.85, j->cores = g->cores, j->mem_kb = 96ull << 20;
        for (int i = 0; i < 64; i++) {
            j->nodes[i] = i;
            g->job_of[i] = (int)ji;
        }
        g->big_id = j->id;
    }
    int busy = 0;
    for (int n = 0; n < g->nodes; n++)
        busy += g->job_of[n] >= 0;
    for (int attempts = 0; busy < g->nodes * 9 / 10 && attempts < 400; attempts++) {
        bool gpu = urand() < 0.12;
        int size = pick_size();
        if (gpu && size > 4)
            size = 1 + (int)(rnd() % 4);
        int lo = gpu ? g->nodes - g->gpu_nodes : 0, hi = gpu ? g->nodes : g->nodes - g->gpu_nodes;
        /* 30 min .. 24 h, log-uniform, whole steps */
        fj_time dur = (fj_time)(1800.0 * exp(urand() * log(48.0)));
        dur = (dur / g->interval + 1) * g->interval;
        int picked[MAXN], k = 0;
        int start = lo + (int)(rnd() % (uint64_t)(hi - lo));
        for (int i = 0; i < hi - lo && k < size; i++) {
            int n = lo + (start - lo + i) % (hi - lo);
            if (g->job_of[n] >= 0)
                continue;
            if (n < 64 && t < g->big_end && t + dur > g->big_start)
                continue; /* kept free for the big job */
            picked[k++] = n;
        }
        if (k < size)
            continue;
        size_t ji = new_job(g);
        job *j = &g->jobs[ji];
        j->n_nodes = size;
        j->kind = gpu ? 1 : size > 1 || urand() < 0.6 ? 0 : 2;
        j->start = t;
        j->end = t + dur;
        j->user = (int)(rnd() % 200);
        j->cpu = 0.3 + 0.65 * urand();
        j->cores = j->kind == 2 ? 1 : j->kind == 1 ? 8 : g->cores / (1 + (int)(rnd() % 2));
        j->mem_kb = (uint64_t)(4 + rnd() % 200) << 20;
        for (int i = 0; i < size; i++) {
            j->nodes[i] = picked[i];
            g->job_of[picked[i]] = (int)ji;
        }
        busy += size;
    }
}

static char *astr(fj_arena *a, const char *fmt, int v)
{
    char *s = fj_arena_printf(a, fmt, v);
    if (!s)
        die("out of memory", NULL);
    return s;
}

/* The Slurm records of jobs that started or ended in this step. */
static void add_slurm(gen *g, fj_batch *b, fj_time t)
{
    size_t n = g->n_started + g->n_ended;
    if (!n)
        return;
    fj_envelope *e = fj_batch_add(b);
    e->kind = FJ_KIND_JOB;
    e->producer = "sonar";
    e->version = "0.19.0";
    e->time = t;
    e->cluster = CLUSTER;
    e->u.jobs.jobs = fj_arena_calloc(b->arena, n, sizeof(fj_slurm_job));
    e->u.jobs.n_jobs = n;
    for (size_t i = 0; i < n; i++) {
        bool end = i >= g->n_started;
        const job *j = &g->jobs[end ? g->ended[i - g->n_started] : g->started[i]];
        fj_slurm_job *s = &e->u.jobs.jobs[i];
        s->job_id = j->id;
        s->job_step = "";
        s->job_name = j->kind == 1 ? "train" : j->kind == 0 ? "mpi-run" : "postproc";
        s->job_state = end ? (j->id % 17 == 0 ? "FAILED" : "COMPLETED") : "RUNNING";
        s->user_name = astr(b->arena, "user%03d", j->user);
        s->account = astr(b->arena, "proj%02d", j->user % 40);
        s->partition = j->kind == 1 ? "accel" : "normal";
        s->submit_time = j->start - 60;
        s->start_time = j->start;
        s->end_time = end ? j->end : 0;
        s->time_limit_s = (uint64_t)(j->end - j->start) * 2;
        s->priority = FJ_XU_UNSET;
        s->array_job_id = s->array_task_id = s->het_job_id = s->het_job_offset = 0;
        s->nodes = fj_arena_calloc(b->arena, (size_t)j->n_nodes, sizeof(char *));
        s->n_nodes = (size_t)j->n_nodes;
        for (int k = 0; k < j->n_nodes; k++)
            s->nodes[k] = g->names[j->nodes[k]];
        s->nodes_raw = g->names[j->nodes[0]];
        s->requested_cpus = (uint64_t)(j->cores * j->n_nodes);
        s->requested_node_count = (uint64_t)j->n_nodes;
        s->requested_memory_per_node_kb = j->mem_kb * 2;
        s->exit_code = end && j->id % 17 == 0 ? 1 : 0;
    }
}

static void add_sysinfo(gen *g, fj_batch *b, fj_time t)
{
    for (int n = 0; n < g->nodes; n++) {
        fj_envelope *e = fj_batch_add(b);
        e->kind = FJ_KIND_SYSINFO;
        e->producer = "sonar";
        e->version = "0.19.0";
        e->time = t;
        e->cluster = CLUSTER;
        e->node = g->names[n];
        fj_sysinfo *si = &e->u.sysinfo;
        si->os_name = "Linux";
        si->os_release = "5.14.0-427.el9.x86_64";
        si->architecture = "x86_64";
        si->cpu_model = "AMD EPYC 7742 64-Core Processor";
        si->numa_nodes = 2;
        si->sockets = 2;
        si->cores_per_socket = (uint64_t)g->cores / 2;
        si->threads_per_core = 1;
        si->memory_kb = 256ull << 20;
        if (is_gpu(g, n)) {
            si->n_cards = 4;
            si->cards = fj_arena_calloc(b->arena, 4, sizeof *si->cards);
            for (int c = 0; c < 4; c++) {
                fj_gpu_card *gc = &si->cards[c];
                gc->index = (uint64_t)c;
                gc->uuid = fj_arena_printf(b->arena, "GPU-%04d-%d", n, c);
                gc->manufacturer = "NVIDIA";
                gc->model = "NVIDIA A100-SXM4-80GB";
                gc->memory_kb = 80ull << 20;
                gc->power_limit = 400;
            }
        }
    }
}

/* One node's sample at time t. */
static void add_sample(gen *g, fj_batch *b, int n, fj_time t)
{
    fj_envelope *e = fj_batch_add(b);
    e->kind = FJ_KIND_SAMPLE;
    e->producer = "sonar";
    e->version = "0.19.0";
    e->time = t;
    e->cluster = CLUSTER;
    e->node = g->names[n];
    fj_sample *s = &e->u.sample;
    s->has_system = true;
    s->boot = T0 - 86400;
    int ji = g->job_of[n];
    job *j = ji >= 0 ? &g->jobs[ji] : NULL;
    int slot = 0;
    if (j)
        while (slot < j->n_nodes && j->nodes[slot] != n)
            slot++;
    uint64_t *c = &g->cpus[(size_t)n * (size_t)g->cores];
    double busy_cores = 0;
    for (int k = 0; k < g->cores; k++) {
        double u = 0.01;
        if (j && k < j->cores)
            u = j->cpu * (0.9 + 0.2 * urand());
        uint64_t inc = (uint64_t)(u * g->interval + urand());
        c[k] += inc;
        busy_cores += (double)inc / g->interval;
    }
    s->n_cpus = (size_t)g->cores;
    s->cpus = fj_arena_alloc(b->arena, s->n_cpus * sizeof *s->cpus);
    memcpy(s->cpus, c, s->n_cpus * sizeof *s->cpus);
    s->used_memory_kb = (4ull << 20) + (j ? j->mem_kb : 0);
    s->load1 = busy_cores * (0.95 + 0.1 * urand());
    s->load5 = busy_cores;
    s->load15 = busy_cores;
    if (is_gpu(g, n)) {
        s->n_gpus = 4;
        s->gpus = fj_arena_calloc(b->arena, 4, sizeof *s->gpus);
        for (int k = 0; k < 4; k++) {
            fj_sample_gpu *sg = &s->gpus[k];
            bool used = j && j->kind == 1;
            sg->index = (uint64_t)k;
            sg->performance_state = FJ_XU_UNSET;
            sg->ce_util = used ? 50 + rnd() % 50 : 0;
            sg->memory_kb = used ? (uint64_t)(20 + rnd() % 50) << 20 : 0;
            sg->temperature = used ? 55 + (int64_t)(rnd() % 20) : 32;
            sg->power = used ? 250 + rnd() % 150 : 60;
            sg->failing = 0;
        }
    }
    if (!j)
        return;
    s->n_jobs = 1;
    s->jobs = fj_arena_calloc(b->arena, 1, sizeof *s->jobs);
    fj_sample_job *sj = s->jobs;
    sj->job = j->id;
    sj->epoch = 0;
    sj->user = astr(b->arena, "user%03d", j->user);
    size_t np = j->kind == 1 ? 2 : (j->kind == 0 && slot == 0) ? 3 : 1;
    sj->procs = fj_arena_calloc(b->arena, np, sizeof *sj->procs);
    sj->n_procs = np;
    uint64_t base = 100000 + (j->id % 1000) * 50;
    double util = j->cpu * 100.0 * j->cores;
    j->cpu_time[slot] += (uint64_t)(util / 100.0 * g->interval);
    j->rd[slot] += rnd() % 100000;
    j->wr[slot] += rnd() % 50000;
    for (size_t p = 0; p < np; p++) {
        fj_sample_proc *pr = &sj->procs[p];
        pr->ppid = base;
        pr->num_threads = 0;
        if (p == 0) { /* the work: rolled-up ranks or the Python process */
            pr->pid = base + 10;
            pr->cmd = j->kind == 1 ? "python" : j->kind == 0 ? "lmp_mpi" : "postproc";
            pr->rolledup = j->kind == 0 ? (uint64_t)(j->cores - 1) : 0;
            pr->cpu_util = util * (0.95 + 0.1 * urand());
            pr->cpu_avg = util;
            pr->cpu_time = j->cpu_time[slot];
            pr->resident_kb = j->mem_kb;
            pr->virtual_kb = j->mem_kb * 2;
            pr->data_read_kb = j->rd[slot];
            pr->data_written_kb = j->wr[slot];
            if (j->kind == 1) {
                pr->n_gpus = 4;
                pr->gpus = fj_arena_calloc(b->arena, 4, sizeof *pr->gpus);
                for (int k = 0; k < 4; k++) {
                    pr->gpus[k].index = (uint64_t)k;
                    pr->gpus[k].gpu_util = 50 + (double)(rnd() % 50);
                    pr->gpus[k].gpu_memory_kb = (uint64_t)(20 + rnd() % 50) << 20;
                }
            }
        } else if (j->kind == 1) { /* data loader workers */
            pr->pid = base + 20;
            pr->cmd = "pt_data_worker";
            pr->rolledup = 3 + rnd() % 5;
            pr->cpu_util = 40 + (double)(rnd() % 200);
            pr->resident_kb = 2ull << 20;
            pr->cpu_time = j->cpu_time[slot] / 4;
        } else { /* batch script and srun */
            pr->pid = base + p;
            pr->cmd = p == 1 ? "slurm_script" : "srun";
            pr->cpu_util = 0.1;
            pr->resident_kb = 4096;
            pr->cpu_time = 1;
        }
    }
}

/* lp_load.c's node-level metrics, random walks with its decimals. */
static const char *lp_metrics[] = {"cpu_load", "mem_used", "ib_recv", "ib_xmit", "ib_recv_pkts",
                                   "ib_xmit_pkts", "nfs4_read", "nfs4_write", "nfs4_total"};
#define LP_METRICS (sizeof lp_metrics / sizeof *lp_metrics)

/* The line protocol of the ClusterCockpit nodes for times [t, t + step), decoded into a batch of
 * one metrics envelope; NULL when there are none. */
static fj_batch *lp_batch(int lp_nodes, int lp_interval, fj_time t, int step, double *walk, char **text,
                          size_t *cap)
{
    if (lp_nodes <= 0)
        return NULL;
    size_t need = (size_t)lp_nodes * LP_METRICS * (size_t)(step / lp_interval + 1) * 96 + 1;
    if (*cap < need) {
        *text = realloc(*text, need);
        *cap = need;
        if (!*text)
            die("out of memory", NULL);
    }
    size_t len = 0;
    for (fj_time u = t; u < t + step; u += lp_interval)
        for (int n = 0; n < lp_nodes; n++)
            for (size_t m = 0; m < LP_METRICS; m++) {
                double *w = &walk[(size_t)n * LP_METRICS + m];
                *w += urand() - 0.5;
                if (*w < 0)
                    *w = -*w;
                len += (size_t)sprintf(*text + len, "%s,cluster=fritz,hostname=f%04d,type=node,type-id=0 value=%.2f %lld\n",
                                       lp_metrics[m], n, *w, (long long)u);
            }
    fj_batch *b = fj_batch_new();
    fj_cc_opts o = {.default_cluster = "fritz", .unit_ns = 1000000000};
    fj_err err = {0};
    size_t good = 0;
    if (!b || fj_cc_decode(*text, len, &o, b, NULL, NULL, &good, &err) != FJ_OK)
        die("line protocol", &err);
    if (good != (size_t)lp_nodes * LP_METRICS * (size_t)((step + lp_interval - 1) / lp_interval))
        die("line protocol: a line was refused", NULL);
    return b;
}

/* One transaction: the Sonar batch and, when there is one, the metrics batch. */
static void write_batch(fj_store *st, fj_batch *b, fj_batch *lp)
{
    fj_batch *bs[2] = {b, lp};
    size_t n = lp ? 2 : 1;
    fj_write_count *counts = fj_calloc(b->n_envs + (lp ? lp->n_envs : 0) + 1, sizeof *counts);
    fj_err err = {0};
    fj_status rs = fj_store_write(st, bs, n, counts, &err);
    if (rs != FJ_OK)
        die("write", &err);
    if (lp && fj_store_ts_maintain(st, &err) != FJ_OK)
        die("metrics upkeep", &err);
    fj_free(counts);
    fj_batch_free(b);
    if (lp)
        fj_batch_free(lp);
}

int main(int argc, char **argv)
{
    gen g = {.nodes = 1000, .cores = 64, .days = 7, .interval = 300, .next_id = 100000};
    const char *db = NULL;
    int lp_nodes = 0, lp_interval = 60;
    for (int i = 1; i < argc; i += 2) { /* --option value pairs */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            die("usage: api_gen --db FILE [--nodes N] [--days D] [--interval S] [--cores C] [--seed S] "
                "[--lp-nodes N] [--lp-interval S]", NULL);
        if (!strcmp(a, "--db")) db = v;
        else if (!strcmp(a, "--nodes")) g.nodes = atoi(v);
        else if (!strcmp(a, "--days")) g.days = atoi(v);
        else if (!strcmp(a, "--interval")) g.interval = atoi(v);
        else if (!strcmp(a, "--cores")) g.cores = atoi(v);
        else if (!strcmp(a, "--lp-nodes")) lp_nodes = atoi(v);
        else if (!strcmp(a, "--lp-interval")) lp_interval = atoi(v);
        else if (!strcmp(a, "--seed")) rng_state ^= (uint64_t)strtoull(v, NULL, 10) * 0x9E3779B97F4A7C15ull;
        else die("unknown option", NULL);
    }
    if (!db || g.nodes < 64 || g.cores < 2 || g.days < 2 || g.interval < 10 || lp_nodes < 0 || lp_nodes > 9999 ||
        lp_interval < 1 || g.interval % lp_interval)
        die("need --db, --nodes >= 64, --cores >= 2, --days >= 2, --interval >= 10, --lp-nodes 0..9999, "
            "--lp-interval dividing --interval", NULL);
    g.gpu_nodes = g.nodes / 10;
    g.names = calloc((size_t)g.nodes, sizeof *g.names);
    g.job_of = malloc((size_t)g.nodes * sizeof *g.job_of);
    g.cpus = calloc((size_t)g.nodes * (size_t)g.cores, sizeof *g.cpus);
    if (!g.names || !g.job_of || !g.cpus)
        die("out of memory", NULL);
    for (int n = 0; n < g.nodes; n++) {
        char buf[32];
        if (is_gpu(&g, n))
            snprintf(buf, sizeof buf, "g%03d", n - (g.nodes - g.gpu_nodes) + 1);
        else
            snprintf(buf, sizeof buf, "c%04d", n + 1);
        g.names[n] = strdup(buf);
        g.job_of[n] = -1;
        for (int k = 0; k < g.cores; k++)
            g.cpus[(size_t)n * (size_t)g.cores + (size_t)k] = 86400 / 100 + (uint64_t)(rnd() % 1000);
    }
    g.big_start = T0 + 86400;
    g.big_end = g.big_start + 26 * 3600;

    fj_store_opts o = {.mode = FJ_STORE_WRITE, .create = true, .synchronous = "OFF", .job_gap_s = 6 * 3600};
    fj_store *st = NULL;
    fj_err err = {0};
    if (fj_store_open(db, &o, &st, &err) != FJ_OK)
        die("open", &err);
    if (lp_nodes > 0 && fj_store_ts_start(st, &o, &err) != FJ_OK)
        die("metrics engine", &err);
    double *walk = calloc((size_t)lp_nodes * LP_METRICS + 1, sizeof *walk);
    char *lp_text = NULL;
    size_t lp_cap = 0, lp_points = 0;
    if (!walk)
        die("out of memory", NULL);

    fj_batch *b = fj_batch_new();
    add_sysinfo(&g, b, T0 - 60);
    write_batch(st, b, NULL);

    fj_time end = T0 + (fj_time)g.days * 86400;
    size_t steps = 0, envs = 0;
    for (fj_time t = T0; t < end; t += g.interval, steps++) {
        schedule(&g, t);
        b = fj_batch_new();
        if (!b)
            die("out of memory", NULL);
        add_slurm(&g, b, t);
        for (int n = 0; n < g.nodes; n++)
            add_sample(&g, b, n, t);
        envs += b->n_envs;
        fj_batch *lp = lp_batch(lp_nodes, lp_interval, t, g.interval, walk, &lp_text, &lp_cap);
        lp_points += lp ? (size_t)lp_nodes * LP_METRICS * (size_t)(g.interval / lp_interval) : 0;
        write_batch(st, b, lp);
        if (steps % 288 == 0)
            fprintf(stderr, "api_gen: day %zu, %zu jobs\n", steps / 288, g.n_jobs);
    }
    fj_store_close(st);
    free(walk);
    free(lp_text);
    printf("{\"cluster\":\"%s\",\"from\":%lld,\"to\":%lld,\"nodes\":%d,\"jobs\":%zu,\"envelopes\":%zu,"
           "\"big_job\":%llu,\"big_start\":%lld,\"big_end\":%lld,\"lp_nodes\":%d,\"lp_points\":%zu}\n",
           CLUSTER, (long long)T0, (long long)(end - g.interval), g.nodes, g.n_jobs, envs,
           (unsigned long long)g.big_id, (long long)g.big_start, (long long)g.big_end, lp_nodes, lp_points);
    return 0;
}
