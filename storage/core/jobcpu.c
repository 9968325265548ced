/* storage/core/jobcpu.c — a job's CPU use from cumulative cpu_time (storage/core/jobcpu.h). */
#include "storage/core/jobcpu.h"

#include <stdlib.h>
#include <string.h>

int fj_jcpu_proc_cmp(const void *a, const void *b)
{
    const fj_jcpu_proc *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->ppid != y->ppid)
        return x->ppid < y->ppid ? -1 : 1;
    return x->cmd_id < y->cmd_id ? -1 : x->cmd_id > y->cmd_id;
}

/* fjord-push's versions are major.minor.patch; 0.1 and older sent own time only. A version that
 * does not start with two numbers is not one of those old ones. */
bool fj_jcpu_push_counts_children(const char *version)
{
    if (!version)
        return true;
    char *end;
    unsigned long major = strtoul(version, &end, 10);
    if (end == version || *end != '.')
        return true;
    const char *m = end + 1;
    unsigned long minor = strtoul(m, &end, 10);
    if (end == m)
        return true;
    return major > 0 || minor >= 2;
}

bool fj_jcpu_counts_children(const char *producer, const char *version)
{
    if (producer && strcmp(producer, "fjord-push") == 0)
        return fj_jcpu_push_counts_children(version);
    return true;
}

void fj_jcpu_sort(fj_jcpu_sample *s)
{
    if (s->n > 1)
        qsort(s->procs, s->n, sizeof *s->procs, fj_jcpu_proc_cmp);
}

static const fj_jcpu_proc *find(const fj_jcpu_sample *s, const fj_jcpu_proc *key)
{
    return s ? bsearch(key, s->procs, s->n, sizeof *s->procs, fj_jcpu_proc_cmp) : NULL;
}

/* Is a process with pid `pid` among s's processes (sorted by pid first)? Its first record or NULL. */
static const fj_jcpu_proc *with_pid(const fj_jcpu_sample *s, int64_t pid)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->procs[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n && s->procs[lo].pid == pid ? &s->procs[lo] : NULL;
}

/* The previous record of cur's process p when it continues the same series, else NULL. For a
 * producer that counts children, a previous record without cpu_time continues from 0 (it had used
 * under 0.5 s), and a process known by its pid alone continues too: an exec changes its command
 * and its parent's exit its ppid, not its counters. */
static const fj_jcpu_proc *continued(const fj_jcpu_sample *prev, const fj_jcpu_sample *cur, const fj_jcpu_proc *p)
{
    if (!prev || cur->time <= prev->time)
        return NULL;
    const fj_jcpu_proc *q = find(prev, p);
    if (!q && cur->children_counted && p->pid > 0)
        q = with_pid(prev, p->pid);
    if (!q || q->cpu_time > p->cpu_time || q->rolledup != p->rolledup)
        return NULL;
    if (q->cpu_time <= 0 && !cur->children_counted)
        return NULL;
    return q;
}

/* Is prev's process c still there in cur (by its pid; a one-shot rolled-up group, pid 0, by its
 * key)? */
static bool still_there(const fj_jcpu_sample *cur, const fj_jcpu_proc *c)
{
    return c->pid > 0 ? with_pid(cur, c->pid) != NULL : find(cur, c) != NULL;
}

/* The last cpu_time of p's children in prev that are gone in cur (seconds); only for producers
 * whose counter includes reaped children. */
static int64_t reaped_children_s(const fj_jcpu_sample *prev, const fj_jcpu_sample *cur, const fj_jcpu_proc *p)
{
    if (!prev || !cur->children_counted || p->pid == 0)
        return 0;
    int64_t s = 0;
    for (size_t i = 0; i < prev->n; i++) {
        const fj_jcpu_proc *c = &prev->procs[i];
        if (c->ppid == p->pid && c->cpu_time > 0 && !still_there(cur, c))
            s += c->cpu_time;
    }
    return s;
}

/* The CPU of a process without cpu_time (it used under 0.5 s in all). */
static int64_t absent_time_m(const fj_jcpu_sample *cur, const fj_jcpu_proc *p)
{
    int64_t util = p->cpu_util_m > 0 ? p->cpu_util_m : 0;
    if (!cur->children_counted)
        return util;
    /* its time reaches a counter of the job later: its own, or its parent's when reaped */
    if (p->ppid > 0 && p->ppid != p->pid && with_pid(cur, p->ppid))
        return 0;
    /* Sonar's cpu_util counts children too, so a child reaped within its 100 ms adds its whole
     * life; cpu_avg (own time over the process's age), when sent, bounds the process's own rate.
     * A record with cpu_util alone has nothing else to go by. */
    int64_t avg = p->cpu_avg_m;
    return avg > 0 && avg < util ? avg : util;
}

/* seconds of CPU over dt seconds, in milli-percent of a core */
static int64_t per_interval_m(int64_t seconds, int64_t dt)
{
    double m = (double)seconds * 100000.0 / (double)dt;
    return m >= 9.2e18 ? INT64_MAX : (int64_t)(m + 0.5);
}

int64_t fj_jcpu_proc_m(const fj_jcpu_sample *prev, const fj_jcpu_sample *cur, size_t i)
{
    const fj_jcpu_proc *p = &cur->procs[i];
    if (p->cpu_time <= 0)
        return absent_time_m(cur, p);
    const fj_jcpu_proc *q = continued(prev, cur, p);
    int64_t avg = p->cpu_avg_m > 0 ? p->cpu_avg_m : 0;
    if (!q) {
        if (!prev || cur->time <= prev->time)
            return avg;
        /* With children counted, a process's counter is its share of the job's total: one that
         * starts a series brings all of it into the interval (new since the previous node-sample,
         * or never counted before), less its sampled children that are gone. A rolled-up group
         * whose membership changed carries its continuing members' past: its cpu_avg. */
        if (cur->children_counted && p->rolledup <= 0) {
            int64_t used = p->cpu_time - reaped_children_s(prev, cur, p);
            return used <= 0 ? 0 : per_interval_m(used, cur->time - prev->time);
        }
        /* A process new since the previous node-sample ran at most the interval: all its
         * cpu_time falls in it (cpu_avg x lifetime); one that is older (it was filtered out, or
         * its series broke) has only its lifetime average to go by. */
        int64_t in_interval = per_interval_m(p->cpu_time, cur->time - prev->time);
        return in_interval < avg ? in_interval : avg;
    }
    int64_t used = p->cpu_time - q->cpu_time - reaped_children_s(prev, cur, p);
    if (used <= 0)
        return 0;
    return per_interval_m(used, cur->time - prev->time);
}

int64_t fj_jcpu_sample_m(const fj_jcpu_sample *prev, const fj_jcpu_sample *cur)
{
    int64_t s = 0;
    for (size_t i = 0; i < cur->n; i++) {
        int64_t m = fj_jcpu_proc_m(prev, cur, i);
        s = m > INT64_MAX - s ? INT64_MAX : s + m;
    }
    return s;
}

int64_t fj_jcpu_cap_m(const fj_jcpu_sample *s)
{
    int64_t threads = 0;
    for (size_t i = 0; i < s->n; i++) {
        const fj_jcpu_proc *p = &s->procs[i];
        threads += (p->num_threads > 0 ? p->num_threads : 0) + (p->rolledup > 0 ? p->rolledup : 0) + 1;
    }
    return threads * 100000;
}

int64_t fj_jcpu_window_m(const fj_time *t, const int64_t *cpu_m, size_t k, int64_t cap_m)
{
    size_t j = k;
    while (j-- > 0)
        if (t[k] - t[j] >= FJ_JCPU_WINDOW_S)
            break;
    if (j == (size_t)-1)
        return -1;
    double used = 0;
    for (size_t i = j + 1; i <= k; i++)
        used += (double)cpu_m[i] * (double)(t[i] - t[i - 1]);
    double m = used / (double)(t[k] - t[j]);
    int64_t v = m >= 9.2e18 ? INT64_MAX : (int64_t)(m + 0.5);
    return v < cap_m ? v : cap_m;
}

int64_t fj_jcpu_peak_m(int64_t win_max_m, int64_t cpu_sum_m, int64_t n_samples)
{
    if (win_max_m >= 0)
        return win_max_m;
    return n_samples > 0 ? cpu_sum_m / n_samples : 0;
}

/* --- keeping the stored figures current ------------------------------------------------------ */

/* Sets rows[i]'s candidate (reading its capacity) and stores the row if it changed; old is the
 * row as stored. */
static fj_status settle(const fj_jcpu_io *io, int64_t rjob, int64_t node, fj_jcpu_row *rows, const fj_time *t,
                        const int64_t *cpu_m, size_t i, const fj_jcpu_sample *known, size_t n_known,
                        fj_jcpu_delta *d)
{
    fj_status st;
    int64_t win = fj_jcpu_window_m(t, cpu_m, i, INT64_MAX);
    if (win >= 0) {
        const fj_jcpu_sample *s = NULL;
        for (size_t k = 0; k < n_known; k++)
            if (known[k].time == t[i])
                s = &known[k];
        fj_jcpu_sample own;
        bool have = true;
        if (!s) {
            if ((st = io->procs(io->x, 1, rjob, node, t[i], &own, &have)) != FJ_OK)
                return st;
            s = &own;
        }
        if (have) {
            int64_t cap = fj_jcpu_cap_m(s);
            win = win < cap ? win : cap;
        }
    }
    fj_jcpu_row *r = &rows[i];
    if (r->cpu_m == cpu_m[i] && r->win_m == win)
        return FJ_OK;
    d->sum_m += cpu_m[i] - r->cpu_m;
    if (win > d->win_max_m)
        d->win_max_m = win;
    if (r->win_m > win)
        d->stale = true;
    r->cpu_m = cpu_m[i];
    r->win_m = win;
    return io->set(io->x, rjob, node, t[i], cpu_m[i], win);
}

/* Times and figures of rows, in two arrays for fj_jcpu_window_m (from scratch room). */
typedef struct series {
    fj_time *t;
    int64_t *m;
} series;

static fj_status split(const fj_jcpu_row *rows, size_t n, series *s, fj_err *err)
{
    s->t = malloc((n ? n : 1) * sizeof *s->t);
    s->m = malloc((n ? n : 1) * sizeof *s->m);
    if (!s->t || !s->m) {
        free(s->t);
        free(s->m);
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        s->t[i] = rows[i].time, s->m[i] = rows[i].cpu_m;
    return FJ_OK;
}

fj_status fj_jcpu_next(const fj_jcpu_sample *prev, const fj_jcpu_row *rows, size_t n, const fj_jcpu_sample *cur,
                       int64_t *cpu_m, int64_t *win_m, fj_err *err)
{
    fj_time t_small[16];
    int64_t m_small[16];
    fj_time *t = t_small;
    int64_t *m = m_small;
    if (n + 1 > 16) {
        t = malloc((n + 1) * sizeof *t);
        m = malloc((n + 1) * sizeof *m);
        if (!t || !m) {
            free(t);
            free(m);
            return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
        }
    }
    for (size_t i = 0; i < n; i++)
        t[i] = rows[i].time, m[i] = rows[i].cpu_m;
    *cpu_m = fj_jcpu_sample_m(prev, cur);
    t[n] = cur->time;
    m[n] = *cpu_m;
    int64_t win = fj_jcpu_window_m(t, m, n, INT64_MAX);
    if (win >= 0) {
        int64_t cap = fj_jcpu_cap_m(cur);
        win = win < cap ? win : cap;
    }
    *win_m = win;
    if (t != t_small) {
        free(t);
        free(m);
    }
    return FJ_OK;
}

size_t fj_jcpu_rows_keep_from(const fj_jcpu_row *rows, size_t n)
{
    if (n == 0)
        return 0;
    fj_time last = rows[n - 1].time;
    size_t i = n;
    while (i-- > 0)
        if (last - rows[i].time >= FJ_JCPU_WINDOW_S)
            return i;
    return 0;
}

fj_status fj_jcpu_update(const fj_jcpu_io *io, int64_t rjob, int64_t node, fj_time t, fj_jcpu_delta *d, fj_err *err)
{
    fj_status st;
    fj_jcpu_sample cur, other, known[2];
    bool have, found_prev, found_next, found_lo;
    fj_time tp = 0, tn = 0, lo = 0;
    if ((st = io->procs(io->x, 0, rjob, node, t, &cur, &have)) != FJ_OK || !have)
        return st;
    d->seen = true;
    if ((st = io->at_or_before(io->x, rjob, node, t - 1, &tp, &found_prev)) != FJ_OK ||
        (st = io->after(io->x, rjob, node, t, &tn, &found_next)) != FJ_OK ||
        (st = io->at_or_before(io->x, rjob, node, t - FJ_JCPU_WINDOW_S, &lo, &found_lo)) != FJ_OK)
        return st;
    bool have_prev = false;
    if (found_prev && (st = io->procs(io->x, 1, rjob, node, tp, &other, &have_prev)) != FJ_OK)
        return st;
    int64_t cur_m = fj_jcpu_sample_m(have_prev ? &other : NULL, &cur);
    size_t n_known = 1;
    known[0] = cur;
    int64_t next_m = -1;
    if (found_next) {
        bool have_next;
        if ((st = io->procs(io->x, 1, rjob, node, tn, &other, &have_next)) != FJ_OK)
            return st;
        if (have_next) {
            next_m = fj_jcpu_sample_m(&cur, &other);
            known[n_known++] = other;
        }
    }
    fj_time hi = found_next ? tn + FJ_JCPU_WINDOW_S : t;
    fj_jcpu_row *rows;
    size_t n;
    if ((st = io->rows(io->x, rjob, node, found_lo ? lo : INT64_MIN, hi, &rows, &n)) != FJ_OK)
        return st;
    series s;
    if ((st = split(rows, n, &s, err)) != FJ_OK)
        return st;
    for (size_t i = 0; i < n; i++) {
        if (s.t[i] == t)
            s.m[i] = cur_m;
        else if (found_next && s.t[i] == tn && next_m >= 0)
            s.m[i] = next_m;
    }
    /* known[1] lives in slot 1, which settle() reuses for other node-samples: those come after
     * tn is done with, as rows ascend */
    for (size_t i = 0; i < n && st == FJ_OK; i++)
        if (s.t[i] >= t)
            st = settle(io, rjob, node, rows, s.t, s.m, i, known, n_known, d);
    free(s.t);
    free(s.m);
    return st;
}

fj_status fj_jcpu_recompute(const fj_jcpu_io *io, int64_t rjob, int64_t node, fj_jcpu_delta *d, fj_err *err)
{
    fj_status st;
    fj_jcpu_row *rows;
    size_t n;
    if ((st = io->rows(io->x, rjob, node, INT64_MIN, INT64_MAX, &rows, &n)) != FJ_OK)
        return st;
    series s;
    if ((st = split(rows, n, &s, err)) != FJ_OK)
        return st;
    bool *have = calloc(n ? n : 1, sizeof *have);
    if (!have) {
        free(s.t);
        free(s.m);
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    }
    fj_jcpu_sample smp[2];
    for (size_t i = 0; i < n && st == FJ_OK; i++) {
        int slot = (int)(i & 1);
        if ((st = io->procs(io->x, slot, rjob, node, s.t[i], &smp[slot], &have[i])) != FJ_OK)
            break;
        if (have[i]) {
            s.m[i] = fj_jcpu_sample_m(i > 0 && have[i - 1] ? &smp[!slot] : NULL, &smp[slot]);
            d->seen = true;
        }
    }
    /* node-samples whose raw rows are gone keep what they have */
    for (size_t i = 0; i < n && st == FJ_OK; i++)
        if (have[i])
            st = settle(io, rjob, node, rows, s.t, s.m, i, NULL, 0, d);
    free(have);
    free(s.t);
    free(s.m);
    return st;
}

int fj_jcpu_note_cmp(const void *a, const void *b)
{
    const fj_jcpu_note *x = a, *y = b;
    if (x->rjob != y->rjob)
        return x->rjob < y->rjob ? -1 : 1;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

static fj_status settle_job(const fj_jcpu_io *io, int64_t rjob, const fj_jcpu_delta *d)
{
    if (!d->seen && !d->resum)
        return FJ_OK; /* no raw rows: what is stored stays */
    int64_t sum = 0, n = 0, win = -1;
    fj_status st = io->job_get(io->x, rjob, &sum, &n, &win);
    if (st != FJ_OK)
        return st;
    if (d->stale || d->resum) {
        int64_t all_sum = 0;
        if ((st = io->job_all(io->x, rjob, &all_sum, &win)) != FJ_OK)
            return st;
        sum = d->resum ? all_sum : sum + d->sum_m;
    } else {
        sum += d->sum_m;
        if (d->win_max_m > win)
            win = d->win_max_m;
    }
    return io->job_set(io->x, rjob, sum, win, fj_jcpu_peak_m(win, sum, n));
}

fj_status fj_jcpu_drain(const fj_jcpu_io *io, fj_jcpu_note *notes, size_t n, fj_err *err)
{
    if (n > 1)
        qsort(notes, n, sizeof *notes, fj_jcpu_note_cmp);
    fj_status st = FJ_OK;
    for (size_t i = 0; i < n && st == FJ_OK;) {
        int64_t rjob = notes[i].rjob;
        fj_jcpu_delta d = {0, -1, false, false, false};
        for (; i < n && notes[i].rjob == rjob && st == FJ_OK; i++) {
            const fj_jcpu_note *nt = &notes[i];
            if (i > 0 && notes[i - 1].rjob == rjob && notes[i - 1].node == nt->node && notes[i - 1].t == nt->t)
                continue; /* the same node-sample twice (a merge's note repeats) */
            if (nt->node < 0) {
                if (nt->t == INT64_MAX)
                    d.stale = true;
                else
                    d.resum = true;
            } else if (nt->t == INT64_MIN) {
                d.stale = true;
                st = fj_jcpu_recompute(io, rjob, nt->node, &d, err);
            } else {
                st = fj_jcpu_update(io, rjob, nt->node, nt->t, &d, err);
            }
        }
        if (st == FJ_OK)
            st = settle_job(io, rjob, &d);
    }
    return st;
}
