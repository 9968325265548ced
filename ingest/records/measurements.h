/* ingest/records/measurements.h — the typed record of an NVIDIA aicr snapshot (ingest/aicr.h
 * decodes it; docs/measurements.md). */
#ifndef FJ_RECORDS_MEASUREMENTS_H
#define FJ_RECORDS_MEASUREMENTS_H

#include "timefmt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One subtype of an aicr snapshot as stored, addressed by (type, instance, subtype). */
typedef struct fj_measure_row {
    const char *type;    /* canonical type name (K8s, GPU, OS, SystemD, NodeTopology, NetworkTopology)
                          * or, for a type aicr does not define yet, as sent */
    uint32_t instance;   /* 0 for the first measurement of this type in the snapshot, 1 for the next */
    const char *subtype;
    const char *json;    /* the normalised subtype, compact JSON */
} fj_measure_row;

/* A decoded, validated and normalised aicr snapshot (see ingest/aicr.h). Storage keeps the whole
 * snapshot and one row per subtype, and never parses either. */
typedef struct fj_measurements {
    const char *json;      /* the normalised snapshot, compact JSON */
    bool arrival_time;     /* no metadata.timestamp: the envelope time is when it arrived; a
                            * snapshot equal to the node's latest one is a duplicate, and a new one
                            * is stored after the node's latest (so it becomes the latest) */
    fj_time *stored_time;  /* out, may be NULL: the time storage keeps the snapshot under (for an
                            * arrival-time duplicate, the time of the equal latest snapshot) */
    size_t n_measurements;
    fj_measure_row *rows;  /* one per subtype */
    size_t n_rows;
} fj_measurements;

#endif
