/* storage/core/store_metric_catalog.h — the line-protocol (ClusterCockpit) metrics a cluster has
 * sent, from the series catalogue (ts_series; docs/metrics.md): per metric its scopes, hosts and
 * series, and one series to read its sampling interval from. For GET /api/v1/metrics/catalog
 * (api/metrics_catalog.c). A plain function, written once over the SQL driver. */
#ifndef FJ_STORE_METRIC_CATALOG_H
#define FJ_STORE_METRIC_CATALOG_H

#include "arena.h"
#include "fj_status.h"
#include "storage/core/store.h"

#include <stddef.h>
#include <stdint.h>

typedef struct fj_metric_entry {
    const char *metric;
    const char **scopes; /* the series' types (node, socket, core, hwthread, accelerator, ...), sorted */
    size_t n_scopes;
    const char **hosts;  /* sorted byte-wise */
    size_t n_hosts;
    int64_t series;
    uint32_t probe;      /* a series of the metric at its widest scope (the first type, then host) */
} fj_metric_entry;

/* The metrics of cluster's series, sorted byte-wise by name, into a (*out, *n). A cluster without
 * series has none (FJ_OK, *n 0). FJ_ENOMEM or the store's error (err says). */
fj_status fj_store_metric_catalog(fj_store *s, const char *cluster, fj_arena *a, fj_metric_entry **out, size_t *n,
                                  fj_err *err);

#endif
