/* Tests of storage/core/jobcpu.c: a process's CPU from cpu_time differences (continuation, a new
 * series, a counter that went down, a rolled-up group that changed, no cpu_time), reaped children
 * under Sonar's and fjord-push's definitions (children that were never sampled, or sampled only
 * without cpu_time, an exec, a new parent), which producer counts children, and the peak window
 * (at least 120 s, weighted by intervals, capped at the threads). */
#include "storage/core/jobcpu.h"

#include <criterion/criterion.h>

static fj_jcpu_proc proc(int64_t pid, int64_t ppid, int64_t cpu_time, double avg, double util)
{
    return (fj_jcpu_proc){pid, ppid, 1, cpu_time, (int64_t)(avg * 1000), (int64_t)(util * 1000), 0, 0};
}

static fj_jcpu_sample at(fj_time t, fj_jcpu_proc *p, size_t n, bool children)
{
    fj_jcpu_sample s = {t, p, n, children};
    fj_jcpu_sort(&s);
    return s;
}

Test(jobcpu, difference_over_the_interval)
{
    fj_jcpu_proc a[] = {proc(10, 1, 100, 40, 57)}, b[] = {proc(10, 1, 115, 41, 62)};
    fj_jcpu_sample s0 = at(1000, a, 1, true), s1 = at(1030, b, 1, true);
    cr_assert_eq(fj_jcpu_sample_m(NULL, &s0), 40000, "the first sample: cpu_avg");
    cr_assert_eq(fj_jcpu_sample_m(&s0, &s1), 50000, "15 s in 30 s, not cpu_util");
}

Test(jobcpu, new_series)
{
    fj_jcpu_proc a[] = {proc(10, 1, 500, 40, 0)};
    fj_jcpu_proc reset[] = {proc(10, 1, 3, 30, 0)};      /* pid reused: the counter went down */
    fj_jcpu_proc old[] = {proc(11, 1, 9000, 25, 0)};     /* not in the previous sample, long-lived */
    fj_jcpu_proc container[] = {proc(10, 1, 0, 80, 77)}; /* no cpu_time */
    fj_jcpu_sample s0 = at(1000, a, 1, true);
    fj_jcpu_sample r = at(1030, reset, 1, true), o = at(1030, old, 1, false), c = at(1030, container, 1, true);
    cr_assert_eq(fj_jcpu_sample_m(&s0, &r), 10000, "a young process: all of its 3 s in 30 s, below cpu_avg");
    cr_assert_eq(fj_jcpu_sample_m(&s0, &o), 25000, "own time only: an old one has its cpu_avg");
    cr_assert_eq(fj_jcpu_sample_m(&s0, &c), 77000, "no cpu_time, no parent in the job: cpu_util");
    o = at(1030, old, 1, true);
    cr_assert_eq(fj_jcpu_sample_m(&s0, &o), 30000000, "children counted: its counter was never counted, all of it");
    fj_jcpu_proc g0[] = {proc(0, 1, 100, 20, 0)}, g1[] = {proc(0, 1, 400, 20, 0)};
    g0[0].rolledup = 3;
    g1[0].rolledup = 4; /* a member joined with its whole past: not a continuation */
    fj_jcpu_sample a0 = at(1000, g0, 1, true), a1 = at(1030, g1, 1, true);
    cr_assert_eq(fj_jcpu_sample_m(&a0, &a1), 20000);
    g1[0].rolledup = 3;
    cr_assert_eq(fj_jcpu_sample_m(&a0, &a1), 1000000, "the same group: its difference");
}

Test(jobcpu, reaped_child_counted_once)
{
    /* parent 10 (own 6 s per 30 s), child 11 sampled at 50 s, reaped before the next sample */
    fj_jcpu_proc p0[] = {proc(10, 1, 100, 20, 0), proc(11, 10, 50, 90, 0)};
    fj_jcpu_proc sonar[] = {proc(10, 1, 100 + 6 + 50 + 3, 20, 0)}; /* + the child's 53 s */
    fj_jcpu_proc push[] = {proc(10, 1, 106, 20, 0)};
    fj_jcpu_sample s0 = at(1000, p0, 2, true);
    fj_jcpu_sample s1 = at(1030, sonar, 1, true), s2 = at(1030, push, 1, false);
    cr_assert_eq(fj_jcpu_sample_m(&s0, &s1), 30000, "Sonar: the parent's 6 s and the child's unseen 3 s");
    cr_assert_eq(fj_jcpu_sample_m(&s0, &s2), 20000, "fjord-push: the parent's own 6 s");
}

Test(jobcpu, which_producers_count_children)
{
    cr_assert(fj_jcpu_counts_children("sonar", "0.19.0"));
    cr_assert(fj_jcpu_counts_children(NULL, NULL), "unknown: as Sonar");
    cr_assert(fj_jcpu_counts_children("slurm-monitor", "1.0"));
    cr_assert(!fj_jcpu_counts_children("fjord-push", "0.1.0"), "fjord-push before 0.2: own time");
    cr_assert(!fj_jcpu_counts_children("fjord-push", "0.0.0"));
    cr_assert(fj_jcpu_counts_children("fjord-push", "0.2.0"));
    cr_assert(fj_jcpu_counts_children("fjord-push", "0.10.1"), "minor 10 is after 2");
    cr_assert(fj_jcpu_counts_children("fjord-push", "1.0.0"));
    cr_assert(fj_jcpu_counts_children("fjord-push", "dev"), "not an old version");
    cr_assert(fj_jcpu_counts_children("fjord-push", NULL));
}

/* The three envelopes: a parent at cpu_time 1, 1, 2 and, in the middle one only, a child
 * at 100 % for a moment and no cpu_time. The job used 1 s in 20 s: the child's time is in the
 * parent's last jump, and its cpu_util is not counted as well. */
Test(jobcpu, child_without_cpu_time_counted_in_its_parent)
{
    fj_jcpu_proc a[] = {proc(10, 1, 1, 1, 0)}, b[] = {proc(10, 1, 1, 1, 0), proc(11, 10, 0, 100, 100)},
                 c[] = {proc(10, 1, 2, 1, 0)};
    fj_jcpu_sample s0 = at(1000, a, 1, true), s1 = at(1010, b, 2, true), s2 = at(1020, c, 1, true);
    cr_assert_eq(fj_jcpu_sample_m(NULL, &s0), 1000, "the first: cpu_avg");
    cr_assert_eq(fj_jcpu_sample_m(&s0, &s1), 0, "the child's time is not in a counter yet");
    cr_assert_eq(fj_jcpu_sample_m(&s1, &s2), 10000, "1 s in 10 s: the reaped child, once");
    /* own time only (fjord-push before 0.2): nothing arrives later, cpu_util is all there is */
    s1.children_counted = false;
    cr_assert_eq(fj_jcpu_sample_m(&s0, &s1), 100000);
    /* with children counted but no parent in the job, its time leaves with it: cpu_util */
    fj_jcpu_proc d[] = {proc(10, 1, 1, 1, 0), proc(12, 99, 0, 100, 40)};
    fj_jcpu_sample s3 = at(1010, d, 2, true);
    cr_assert_eq(fj_jcpu_sample_m(&s0, &s3), 40000);
    /* ... but no more than its own cpu_avg: Sonar's cpu_util jumps by a child reaped within it */
    fj_jcpu_proc e[] = {proc(12, 99, 0, 0.7, 300)};
    fj_jcpu_sample s4 = at(1010, e, 1, true);
    cr_assert_eq(fj_jcpu_sample_m(&s0, &s4), 700);
    s4.children_counted = false;
    cr_assert_eq(fj_jcpu_sample_m(&s0, &s4), 300000, "own time only: cpu_util is the process's own");
    fj_jcpu_proc u[] = {proc(12, 99, 0, 0, 30)};
    fj_jcpu_sample s5 = at(1010, u, 1, true);
    cr_assert_eq(fj_jcpu_sample_m(&s0, &s5), 30000, "cpu_util alone: nothing to bound it by");
}

Test(jobcpu, series_with_children_counted)
{
    /* a child seen without cpu_time, then with it: its series continues from 0 */
    fj_jcpu_proc a[] = {proc(10, 1, 5, 1, 0), proc(11, 10, 0, 50, 90)};
    fj_jcpu_proc b[] = {proc(10, 1, 5, 1, 0), proc(11, 10, 3, 90, 90)};
    fj_jcpu_sample s0 = at(1000, a, 2, true), s1 = at(1010, b, 2, true);
    cr_assert_eq(fj_jcpu_sample_m(&s0, &s1), 30000, "3 s in 10 s");
    /* the child execs (another command) and is then reaped: its pid carries the series, and
     * the parent's jump (3 + 4 more s) is less the child's last 3 s */
    fj_jcpu_proc c[] = {proc(10, 1, 5, 1, 0), proc(11, 10, 6, 90, 90)};
    c[1].cmd_id = 2;
    fj_jcpu_proc d[] = {proc(10, 1, 5 + 8, 1, 0)};
    fj_jcpu_sample s2 = at(1020, c, 2, true), s3 = at(1030, d, 1, true);
    cr_assert_eq(fj_jcpu_sample_m(&s1, &s2), 30000, "exec: 3 more s, not its whole 6 s again");
    cr_assert_eq(fj_jcpu_sample_m(&s2, &s3), 20000, "reaped: 8 s jump less its last 6 s");
    /* a child born and reaped between samples, itself the parent of reaped grandchildren: all
     * in its parent's jump; a new child brings all of its counter (its own and its reaped
     * children's), not its own cpu_avg */
    fj_jcpu_proc e[] = {proc(10, 1, 13 + 4, 1, 0), proc(12, 10, 5, 10, 0)};
    fj_jcpu_sample s4 = at(1040, e, 2, true);
    cr_assert_eq(fj_jcpu_sample_m(&s3, &s4), 90000, "4 s + 5 s in 10 s");
    /* a parent whose parent exited: reparented, the same counter */
    fj_jcpu_proc f[] = {proc(10, 1, 17, 1, 0), proc(12, 1, 7, 10, 0)};
    fj_jcpu_sample s5 = at(1050, f, 2, true);
    cr_assert_eq(fj_jcpu_sample_m(&s4, &s5), 20000, "2 s in 10 s");
    /* own time only: a new process is still held to its cpu_avg */
    s4.children_counted = false;
    cr_assert_eq(fj_jcpu_sample_m(&s3, &s4), 40000 + 10000);
}

Test(jobcpu, peak_window)
{
    fj_time t[] = {0, 30, 60, 90, 120, 150};
    int64_t m[] = {50000, 40000, 60000, 40000, 60000, 100000};
    cr_assert_eq(fj_jcpu_window_m(t, m, 3, INT64_MAX), -1, "no sample 120 s before");
    cr_assert_eq(fj_jcpu_window_m(t, m, 4, INT64_MAX), 50000, "the mean over (0, 120]");
    cr_assert_eq(fj_jcpu_window_m(t, m, 5, INT64_MAX), 65000, "(30, 150]");
    cr_assert_eq(fj_jcpu_window_m(t, m, 5, 60000), 60000, "capped at the threads");
    fj_time g[] = {0, 300, 310};
    int64_t gm[] = {0, 10000, 100000};
    cr_assert_eq(fj_jcpu_window_m(g, gm, 2, INT64_MAX), 12903, "weighted by intervals: (3000 + 1000) s / 310 s");
    fj_jcpu_proc p[] = {proc(1, 0, 5, 1, 1), proc(2, 0, 5, 1, 1)};
    p[0].num_threads = 3;
    p[1].rolledup = 2;
    fj_jcpu_sample s = at(0, p, 2, true);
    cr_assert_eq(fj_jcpu_cap_m(&s), (4 + 3) * 100000);
    cr_assert_eq(fj_jcpu_peak_m(-1, 900, 3), 300, "no window: the average");
    cr_assert_eq(fj_jcpu_peak_m(5000, 900, 3), 5000);
}
