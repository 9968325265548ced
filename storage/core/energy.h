/* storage/core/energy.h — how a series of power or energy readings becomes joules, and how an
 * interval's joules are shared among jobs: the rules of docs/energy.md, pure (no database), the
 * same for both backends and unit-tested on their own.
 *
 * Times are seconds (doubles, so a window's edge can cut an interval anywhere). An interval is the
 * span between two consecutive readings of one device; it counts unless it is a gap: longer than
 * twice the series' cadence, the lower median of its spacings (fj_en_cadence). A gap adds no
 * energy and its length is reported as missing. */
#ifndef FJ_ENERGY_H
#define FJ_ENERGY_H

#include <stdbool.h>
#include <stddef.h>

/* One reading: a power gauge's watts, or an energy counter's joules. */
typedef struct fj_en_reading {
    double t;
    double v;
} fj_en_reading;

/* What an integration found: joules, the seconds covered and the seconds left out as gaps, and
 * how many intervals were gaps. */
typedef struct fj_en_sum {
    double joules;
    double covered_s;
    double missing_s;
    size_t gaps;
} fj_en_sum;

/* The cadence of n readings in time order: the lower median of their consecutive spacings (0 with
 * fewer than two readings). Spacings of 0 (repeated times) are left out. */
double fj_en_cadence(const fj_en_reading *r, size_t n);

/* Whether an interval of dt seconds is a gap for a series of this cadence (cadence 0: never). */
bool fj_en_is_gap(double dt, double cadence);

/* The energy of the power line from (t0, p0) to (t1, p1) inside [from, to]: the trapezoid of the
 * part of the interval inside, the power between the readings taken as linear. 0 when the interval
 * misses the window or t1 <= t0. */
double fj_en_trapezoid(double t0, double p0, double t1, double p1, double from, double to);

/* The rise of a counter from v0 to v1: v1 - v0; when it went down, (wrap - v0) + v1 for a counter
 * that wraps at wrap (> 0), false for one without a known width (a reset: the interval is
 * missing). */
bool fj_en_counter_rise(double v0, double v1, double wrap, double *rise);

/* The fraction of the interval [t0, t1] inside [from, to] (a counter's rise is taken as uniform
 * across its interval). */
double fj_en_inside(double t0, double t1, double from, double to);

/* Adds to *s the energy of power readings r[0..n) (time order) inside [from, to] under the gap
 * rule for the given cadence (<= 0: the series' own, fj_en_cadence). A gap's length inside the
 * window goes to missing_s. */
void fj_en_power(const fj_en_reading *r, size_t n, double cadence, double from, double to, fj_en_sum *s);

/* Likewise for an energy counter (joules) that wraps at wrap (0: unknown; a fall is then a reset,
 * whose interval is missing). */
void fj_en_counter(const fj_en_reading *r, size_t n, double cadence, double wrap, double from, double to,
                   fj_en_sum *s);

/* A reading of a device with a power gauge, an energy counter, or both. */
typedef struct fj_en_dual {
    double t;
    double power;   /* W, when has_power */
    double counter; /* J, when has_counter */
    bool has_power, has_counter;
} fj_en_dual;

/* The energy of the interval from a to b inside [from, to]: by the counter's rise when both
 * readings have it and it rose (or wrapped at wrap > 0), else by the power's trapezoid when both
 * have power; *by_counter says which. false when neither (the interval has no figure). The gap
 * rule is the caller's. */
bool fj_en_interval(const fj_en_dual *a, const fj_en_dual *b, double wrap, double from, double to, double *joules,
                    bool *by_counter);

/* A node-sample of a node with a job's share of the node in the interval it ends: its CPU time
 * against all the node's jobs' there (1 when it ran alone, 0 when absent). */
typedef struct fj_en_cover {
    double t;
    double share;
    bool alone;
} fj_en_cover;

/* Adds to *s a job's part of a node device's readings r[0..n) (power, or a counter that wraps at
 * wrap when counter) inside [from, to]: each interval goes to the job by the share of the first
 * node-sample at or after its end (cover, by time; none: the interval is not the job's; before the
 * first node-sample, only intervals ending within one node-sample spacing of it count). A gap
 * whose share is above 0 is missing. *shared becomes true when a counted interval was shared. */
void fj_en_node_part(const fj_en_reading *r, size_t n, bool counter, double wrap, const fj_en_cover *cover,
                     size_t n_cover, double from, double to, fj_en_sum *s, bool *shared);

/* Shares e among n users by their weights w[0..n) (>= 0; negative counts as 0): in proportion,
 * or equally when all are 0. out[i] gets the share of user i added. */
void fj_en_split(double e, const double *w, size_t n, double *out);

/* The GPUs an allocation holds, from Slurm's AllocTRES text ("cpu=8,gres/gpu=2,node=1",
 * "gres/gpu:a100=4"; several typed entries add up, an untyped total wins): -1 when it names none.
 * Never fails: an unreadable count is -1. */
long fj_en_tres_gpus(const char *tres);

/* The node count of AllocTRES ("node=2"), -1 when absent. */
long fj_en_tres_nodes(const char *tres);

/* Joules to kWh. */
static inline double fj_en_kwh(double joules)
{
    return joules / 3.6e6;
}

#endif
