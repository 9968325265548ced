/* storage/query/gpuload.h — GPU load per card (GET /api/v1/load/gpus), the part both backends share: a backend
 * reads one node's card readings ordered by card index, UUID and time, hands each to fj_gl_add,
 * and this module buckets them per card and writes the rows of fj_qt_gpu_load to the sink, one
 * series per (node, card, uuid). A reading's missing values (NAN) are left out of that figure.
 * Not thread-safe: one series state per query. */
#ifndef FJ_GPULOAD_H
#define FJ_GPULOAD_H

#include "storage/query/qmath.h"
#include "storage/core/store_query.h"

typedef struct fj_gl_bucket fj_gl_bucket;

typedef struct fj_gl_series {
    const fj_qm_grid *g;
    fj_sink *k;
    fj_gl_bucket *b; /* g->n buckets of the open series */
    bool open;       /* a series has readings not yet written */
    const char *node; /* borrowed: must live until the series is written */
    int64_t card;
    char *uuid;      /* owned copy, NULL for none */
} fj_gl_series;

/* Buckets for grid g (borrowed, must outlive s); rows go to k. FJ_ENOMEM. */
fj_status fj_gl_init(fj_gl_series *s, const fj_qm_grid *g, fj_sink *k);
/* One reading of a card at time t (outside the grid: ignored). A new (node, card, uuid) writes
 * the previous series first. uuid is copied. Returns the sink's status, or FJ_ENOMEM. */
fj_status fj_gl_add(fj_gl_series *s, const char *node, int64_t card, const char *uuid, fj_time t, double util,
                    double mem_kb, double power_w, double temp_c);
/* Writes the open series, if any. */
fj_status fj_gl_flush(fj_gl_series *s);
void fj_gl_free(fj_gl_series *s);

#endif
