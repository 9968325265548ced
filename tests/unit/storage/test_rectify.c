/* Tests of storage/core/rectify.c: job keys, gap splitting, bridging merges and running summaries,
 * without a database. An in-memory "store" of instances per key applies the rules the way the
 * storage backends do (match, merge the bridged instances, add). */
#include "storage/core/rectify.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define GAP 3600

/* --- a tiny in-memory rectifier: the instances of one key ----------------------------------- */

typedef struct instset {
    fj_jobsum inst[64];
    size_t n;
} instset;

static void apply(instset *s, fj_time t, const fj_jobcontrib *c, int64_t gap)
{
    size_t idx[64];
    fj_jobsum sum;
    size_t m = fj_rect_join(s->inst, s->n, t, gap, c, idx, &sum);
    if (m == 0) {
        cr_assert_lt(s->n, 64);
        s->inst[s->n++] = sum;
        return;
    }
    for (size_t k = m; k-- > 1;) { /* remove merged ones, highest index first */
        memmove(&s->inst[idx[k]], &s->inst[idx[k] + 1], (s->n - idx[k] - 1) * sizeof s->inst[0]);
        s->n--;
    }
    s->inst[idx[0]] = sum;
}

static int cmp_sum(const void *a, const void *b)
{
    const fj_jobsum *x = a, *y = b;
    return x->first_seen < y->first_seen ? -1 : x->first_seen > y->first_seen;
}

static void sorted(instset *s)
{
    qsort(s->inst, s->n, sizeof s->inst[0], cmp_sum);
}

static fj_jobcontrib contrib(int64_t v)
{
    fj_jobcontrib c = {v % 7 + 1, v * 1000, v * 10, v % 3 * 500, v % 5 * 100};
    return c;
}

static void assert_same(instset *a, instset *b)
{
    sorted(a);
    sorted(b);
    cr_assert_eq(a->n, b->n, "instance count %zu vs %zu", a->n, b->n);
    for (size_t i = 0; i < a->n; i++)
        cr_assert(memcmp(&a->inst[i], &b->inst[i], sizeof a->inst[i]) == 0, "instance %zu differs", i);
}

/* --- keys ------------------------------------------------------------------------------------ */

Test(rectify, slurm_key_spans_nodes)
{
    fj_sample_job j = {.job = 4242, .epoch = 0};
    fj_jobkey a = fj_jobkey_of("c", "n1", &j, NULL);
    fj_jobkey b = fj_jobkey_of("c", "n2", &j, NULL);
    cr_assert_eq(a.kind, FJ_JOBKEY_SLURM);
    cr_assert_null(a.node);
    cr_assert(fj_jobkey_equal(&a, &b));
    cr_assert_eq(fj_jobkey_gap(&a, GAP), INT64_MAX, "Slurm jobs are never split");
    fj_jobkey other = fj_jobkey_of("d", "n1", &j, NULL);
    cr_assert_not(fj_jobkey_equal(&a, &other), "cluster is part of the key");
}

Test(rectify, slurm_job_across_nodes_and_days_is_one_job)
{
    fj_sample_job j = {.job = 7, .epoch = 0};
    fj_jobkey k = fj_jobkey_of("c", "n1", &j, NULL);
    int64_t gap = fj_jobkey_gap(&k, GAP);
    instset s = {.n = 0};
    fj_jobcontrib c = contrib(3);
    apply(&s, 1000, &c, gap);             /* node n1 */
    apply(&s, 1000, &c, gap);             /* node n2, same time: another node-sample */
    apply(&s, 1000 + 5 * 86400, &c, gap); /* days later, after a long quiet spell */
    apply(&s, 500, &c, gap);
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.inst[0].first_seen, 500);
    cr_assert_eq(s.inst[0].last_seen, 1000 + 5 * 86400);
    cr_assert_eq(s.inst[0].n_samples, 4);
}

Test(rectify, local_key_has_node_and_epoch)
{
    fj_sample_job j = {.job = 4242, .epoch = 190553940};
    fj_jobkey a = fj_jobkey_of("c", "n1", &j, NULL);
    fj_jobkey b = fj_jobkey_of("c", "n2", &j, NULL);
    cr_assert_eq(a.kind, FJ_JOBKEY_LOCAL);
    cr_assert_not(fj_jobkey_equal(&a, &b), "a process group on another node is another job");
    fj_sample_job rebooted = {.job = 4242, .epoch = 190600000};
    fj_jobkey c = fj_jobkey_of("c", "n1", &rebooted, NULL);
    cr_assert_not(fj_jobkey_equal(&a, &c), "same pgid after a reboot (new epoch) is a new job");
    cr_assert_eq(fj_jobkey_gap(&a, GAP), GAP);
    cr_assert_eq(fj_jobkey_gap(&a, 0), FJ_JOB_GAP_DEFAULT_S);
}

Test(rectify, job_zero_is_one_job_per_process)
{
    fj_sample_job j = {.job = 0, .epoch = 190553940};
    fj_sample_proc p1 = {.pid = 100, .ppid = 1, .cmd = "bash"};
    fj_sample_proc p2 = {.pid = 101, .ppid = 1, .cmd = "bash"};
    fj_jobkey a = fj_jobkey_of("c", "n1", &j, &p1);
    fj_jobkey b = fj_jobkey_of("c", "n1", &j, &p2);
    cr_assert_eq(a.kind, FJ_JOBKEY_PROCESS);
    cr_assert_not(fj_jobkey_equal(&a, &b), "two job-0 processes are never merged");
    fj_jobkey a2 = fj_jobkey_of("c", "n1", &j, &p1);
    cr_assert(fj_jobkey_equal(&a, &a2), "but one process over time is one job");
    cr_assert_eq(a.ppid, 0, "ppid is not part of a real process's key");
    cr_assert_null(a.cmd);
}

Test(rectify, job_zero_groups_are_told_apart_by_ppid_and_cmd)
{
    fj_sample_job j = {.job = 0, .epoch = 9};
    fj_sample_proc g1 = {.pid = 0, .ppid = 10, .cmd = "python3", .rolledup = 3};
    fj_sample_proc g2 = {.pid = 0, .ppid = 11, .cmd = "python3", .rolledup = 3};
    fj_sample_proc g3 = {.pid = 0, .ppid = 10, .cmd = "ray", .rolledup = 3};
    fj_sample_proc s1 = {.pid = 4300000, .ppid = 10, .cmd = "python3", .synthetic_pid = true};
    fj_jobkey a = fj_jobkey_of("c", "n", &j, &g1), b = fj_jobkey_of("c", "n", &j, &g2);
    fj_jobkey c = fj_jobkey_of("c", "n", &j, &g3), d = fj_jobkey_of("c", "n", &j, &s1);
    cr_assert_not(fj_jobkey_equal(&a, &b));
    cr_assert_not(fj_jobkey_equal(&a, &c));
    cr_assert_eq(d.ppid, 10);
    cr_assert_str_eq(d.cmd, "python3");
}

/* --- gap splitting ---------------------------------------------------------------------------- */

Test(rectify, split_where_consecutive_records_are_more_than_gap_apart)
{
    instset s = {.n = 0};
    fj_jobcontrib c = contrib(1);
    fj_time t[] = {0, 300, 600, 600 + GAP, 600 + 2 * GAP + 1, 600 + 2 * GAP + 301};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        apply(&s, t[i], &c, GAP);
    sorted(&s);
    cr_assert_eq(s.n, 2, "exactly t apart joins, t+1 apart splits");
    cr_assert_eq(s.inst[0].first_seen, 0);
    cr_assert_eq(s.inst[0].last_seen, 600 + GAP);
    cr_assert_eq(s.inst[0].n_samples, 4);
    cr_assert_eq(s.inst[1].first_seen, 600 + 2 * GAP + 1);
    cr_assert_eq(s.inst[1].n_samples, 2);
}

Test(rectify, match_bounds_and_no_overflow)
{
    fj_jobsum inst[2];
    memset(inst, 0, sizeof inst);
    inst[0].first_seen = 1000;
    inst[0].last_seen = 2000;
    inst[0].n_samples = 1;
    inst[1].first_seen = 2000 + 2 * GAP;
    inst[1].last_seen = 2000 + 3 * GAP;
    inst[1].n_samples = 1;
    size_t out[2];
    cr_assert_eq(fj_rect_match(inst, 2, 1000 - GAP, GAP, out), 1);
    cr_assert_eq(out[0], 0);
    cr_assert_eq(fj_rect_match(inst, 2, 1000 - GAP - 1, GAP, out), 0);
    cr_assert_eq(fj_rect_match(inst, 2, 1500, GAP, out), 1);
    cr_assert_eq(fj_rect_match(inst, 2, 2000 + GAP, GAP, out), 2, "exactly between: bridges both");
    cr_assert_eq(out[0], 0);
    cr_assert_eq(out[1], 1);
    cr_assert_eq(fj_rect_match(inst, 2, INT64_MAX, INT64_MAX, out), 2);
    cr_assert_eq(fj_rect_match(inst, 2, -1000000, INT64_MAX, out), 2);
    cr_assert_eq(fj_rect_match(inst, 2, INT64_MIN, GAP, out), 0);
}

/* --- order independence -------------------------------------------------------------------- */

static void run_order(instset *s, const fj_time *t, const size_t *order, size_t n)
{
    s->n = 0;
    for (size_t i = 0; i < n; i++) {
        fj_jobcontrib c = contrib(t[order[i]]);
        apply(s, t[order[i]], &c, GAP);
    }
}

Test(rectify, bridging_record_merges_two_instances)
{
    /* in order: 0, 2000, 4000 are one job (gaps 2000 <= 3600). Without 2000, 0 and 4000 are two
     * jobs (gap 4000 > 3600); 2000 arriving last must merge them. */
    fj_time t[] = {0, 2000, 4000};
    size_t in_order[] = {0, 1, 2}, bridged[] = {0, 2, 1};
    instset a, b;
    run_order(&a, t, in_order, 3);
    cr_assert_eq(a.n, 1);
    b.n = 0;
    fj_jobcontrib c0 = contrib(0), c2 = contrib(4000), c1 = contrib(2000);
    apply(&b, 0, &c0, GAP);
    apply(&b, 4000, &c2, GAP);
    cr_assert_eq(b.n, 2, "before the bridge: two instances");
    apply(&b, 2000, &c1, GAP);
    cr_assert_eq(b.n, 1, "the bridge merges them");
    run_order(&b, t, bridged, 3);
    assert_same(&a, &b);
}

Test(rectify, out_of_order_arrival_equals_in_order)
{
    /* Three runs separated by more than the gap, with jitter; every permutation tried is compared
     * with in-order arrival. */
    fj_time t[40];
    size_t n = 0;
    fj_time base[] = {0, 20000, 50000};
    for (size_t r = 0; r < 3; r++)
        for (int i = 0; i < 13; i++)
            t[n++] = base[r] + i * 1200 + (i % 4) * 7;
    t[n++] = 20000 + 12 * 1200 + GAP; /* exactly the gap after the second run's end */
    size_t order[40];
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    instset ref, got;
    run_order(&ref, t, order, n);
    cr_assert_eq(ref.n, 3);

    for (size_t i = 0; i < n; i++) /* reversed */
        order[i] = n - 1 - i;
    run_order(&got, t, order, n);
    assert_same(&ref, &got);

    for (size_t i = 0; i < n; i++) /* evens then odds: every odd record bridges */
        order[i] = i < (n + 1) / 2 ? 2 * i : 2 * (i - (n + 1) / 2) + 1;
    run_order(&got, t, order, n);
    assert_same(&ref, &got);

    unsigned seed = 12345;
    for (int round = 0; round < 200; round++) {
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        for (size_t i = n - 1; i > 0; i--) {
            seed = seed * 1103515245u + 12345u;
            size_t k = (seed >> 8) % (i + 1);
            size_t tmp = order[i];
            order[i] = order[k];
            order[k] = tmp;
        }
        run_order(&got, t, order, n);
        assert_same(&ref, &got);
    }
}

/* --- summaries ------------------------------------------------------------------------------- */

Test(rectify, contribution_of_processes)
{
    fj_proc_gpu g[2] = {{.index = 0, .gpu_util = 50.5, .gpu_memory_kb = 1000},
                        {.index = 1, .gpu_util = 25.25, .gpu_memory_kb = 3000}};
    fj_sample_proc p[2] = {
        {.pid = 1, .cpu_util = 398.23, .resident_kb = 100, .rolledup = 99, .gpus = g, .n_gpus = 2},
        {.pid = 2, .cpu_util = 0.001, .resident_kb = 50},
    };
    fj_jobcontrib c;
    memset(&c, 0, sizeof c);
    fj_jobcontrib_add_proc(&c, &p[0]);
    fj_jobcontrib_add_proc(&c, &p[1]);
    cr_assert_eq(c.nproc, 101, "a rolled-up record counts rolledup + 1 processes");
    cr_assert_eq(c.cpu_m, 0, "CPU needs the previous sample: the backends compute it (storage/core/jobcpu.h)");
    cr_assert_eq(c.mem_kb, 150);
    cr_assert_eq(c.gpu_m, 75750);
    cr_assert_eq(c.gpumem_kb, 4000);
    cr_assert_eq(fj_pct_to_m(-3.0), 0);
    cr_assert_eq(fj_pct_to_m(0.0 / 0.0), 0);
    cr_assert_eq(fj_pct_to_m(1e30), INT64_MAX);
}

Test(rectify, summary_add_and_merge)
{
    fj_jobsum a, b, all;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&all, 0, sizeof all);
    fj_jobcontrib c1 = {1, 100000, 500, 0, 0}, c2 = {3, 50000, 900, 20000, 64}, c3 = {2, 300000, 100, 10000, 128};
    fj_jobsum_add(&a, 100, &c1);
    fj_jobsum_add(&a, 200, &c2);
    fj_jobsum_add(&b, 50, &c3);
    cr_assert_eq(a.first_seen, 100);
    cr_assert_eq(a.last_seen, 200);
    cr_assert_eq(a.n_samples, 2);
    cr_assert_eq(a.sum.cpu_m, 150000);
    cr_assert_eq(a.peak.cpu_m, 100000);
    cr_assert_eq(a.peak.mem_kb, 900);
    cr_assert_eq(a.peak.nproc, 3);

    fj_jobsum_add(&all, 200, &c2);
    fj_jobsum_add(&all, 50, &c3);
    fj_jobsum_add(&all, 100, &c1);
    fj_jobsum m1 = a, m2 = b;
    fj_jobsum_merge(&m1, &b);
    fj_jobsum_merge(&m2, &a);
    cr_assert(memcmp(&m1, &m2, sizeof m1) == 0, "merge is commutative");
    cr_assert(memcmp(&m1, &all, sizeof m1) == 0, "merge equals adding everything to one");
    cr_assert_eq(m1.first_seen, 50);
    cr_assert_eq(m1.last_seen, 200);
    cr_assert_eq(m1.n_samples, 3);
    cr_assert_eq(m1.sum.cpu_m, 450000);
    cr_assert_eq(m1.peak.cpu_m, 300000);
    cr_assert_eq(m1.sum.gpumem_kb, 192);
    cr_assert_eq(m1.peak.gpumem_kb, 128);

    fj_jobsum empty;
    memset(&empty, 0, sizeof empty);
    fj_jobsum m3 = a;
    fj_jobsum_merge(&m3, &empty);
    cr_assert(memcmp(&m3, &a, sizeof a) == 0, "merging an empty summary changes nothing");
    fj_jobsum_merge(&empty, &a);
    cr_assert(memcmp(&empty, &a, sizeof a) == 0);
}

/* --- what the writers share: fj_rect_join, fj_rjkey_of ---------------------------------------- */

Test(rect_join, new_extend_bridge)
{
    fj_jobcontrib c = contrib(3);
    fj_jobsum inst[2];
    memset(inst, 0, sizeof inst);
    fj_jobsum_add(&inst[0], 1000, &c);
    fj_jobsum_add(&inst[1], 1000 + 2 * GAP, &c);
    size_t match[2];
    fj_jobsum sum;

    /* far from both: a new instance holding c alone */
    cr_assert_eq(fj_rect_join(inst, 2, 1000 + 10 * GAP, GAP, &c, match, &sum), 0);
    cr_assert_eq(sum.n_samples, 1);
    cr_assert_eq(sum.first_seen, 1000 + 10 * GAP);
    cr_assert_eq(sum.sum.mem_kb, c.mem_kb);

    /* within the gap of the first only: it is extended */
    cr_assert_eq(fj_rect_join(inst, 2, 1000 + GAP / 2, GAP, &c, match, &sum), 1);
    cr_assert_eq(match[0], 0);
    cr_assert_eq(sum.n_samples, 2);
    cr_assert_eq(sum.first_seen, 1000);
    cr_assert_eq(sum.last_seen, 1000 + GAP / 2);

    /* between the two, within the gap of both: they merge into the first, plus c */
    cr_assert_eq(fj_rect_join(inst, 2, 1000 + GAP, GAP, &c, match, &sum), 2);
    cr_assert_eq(match[0], 0);
    cr_assert_eq(match[1], 1);
    cr_assert_eq(sum.n_samples, 3);
    cr_assert_eq(sum.first_seen, 1000);
    cr_assert_eq(sum.last_seen, 1000 + 2 * GAP);
    cr_assert_eq(sum.sum.mem_kb, 3 * c.mem_kb);
    cr_assert_eq(sum.peak.mem_kb, c.mem_kb);
}

static int64_t wrap(uint64_t v)
{
    return (int64_t)v;
}

static int64_t saturate(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

Test(rjkey, fields_of_each_kind)
{
    fj_sample_job slurm = {.job = 17};
    fj_jobkey k = fj_jobkey_of("c", "n1", &slurm, NULL);
    fj_rjkey r = fj_rjkey_of(&k, NULL, 5, 9, 44, wrap);
    cr_assert_eq(r.cluster_id, 5);
    cr_assert_eq(r.job, 17);
    cr_assert_eq(r.node_id, 0, "a Slurm job spans nodes");
    cr_assert_eq(r.cmd_id, 0);

    fj_sample_job local = {.job = 17, .epoch = 123};
    k = fj_jobkey_of("c", "n1", &local, NULL);
    r = fj_rjkey_of(&k, NULL, 5, 9, 44, wrap);
    cr_assert_eq(r.node_id, 9);
    cr_assert_eq(r.epoch, 123);

    fj_sample_job zero = {.job = 0, .epoch = 123};
    fj_sample_proc proc = {.pid = 300, .ppid = 2, .cmd = "x"};
    k = fj_jobkey_of("c", "n1", &zero, &proc);
    r = fj_rjkey_of(&k, &proc, 5, 9, 44, wrap);
    cr_assert_eq(r.pid, 300);
    cr_assert_eq(r.ppid, 0, "a real process is its pid");
    cr_assert_eq(r.cmd_id, 0);

    fj_sample_proc group = {.pid = 0, .ppid = 2, .cmd = "x"};
    k = fj_jobkey_of("c", "n1", &zero, &group);
    r = fj_rjkey_of(&k, &group, 5, 9, 44, wrap);
    cr_assert_eq(r.ppid, 2, "a rolled-up group is its parent and command");
    cr_assert_eq(r.cmd_id, 44);

    fj_sample_job huge = {.job = UINT64_MAX, .epoch = 1};
    k = fj_jobkey_of("c", "n1", &huge, NULL);
    cr_assert_eq(fj_rjkey_of(&k, NULL, 5, 9, 0, wrap).job, -1);
    cr_assert_eq(fj_rjkey_of(&k, NULL, 5, 9, 0, saturate).job, INT64_MAX);
}
