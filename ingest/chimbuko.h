/* chimbuko.h — decoding, validation and normalisation of Chimbuko's output (schema: the shared
 * data's chimbuko/SCHEMA.md, from Chimbuko 7's code) into the records of
 * ingest/records/chimbuko.h: the parameter server's packets (POST /api/anomalydata) and the
 * provenance database's records (anomalies, normalexecs, metadata, func_stats, counter_stats).
 *
 * Checked: JSON types of every field the schema lists (unsigned integers, int64 timestamps,
 * finite numbers, booleans, strings without NUL), event labels "rank:io_step:idx" (parent labels
 * may also be "root") and their agreement with rid and io_step, packet keys "app:rank" and their
 * agreement with the steps under them, RunStats counts that are whole numbers, SEND/RECV. A
 * violation refuses the whole body with the JSON path of the field ("[3].call_stack[0].fid" for
 * the fourth record of a body; "anomaly_stats.anomaly[0].data[1].step" in a packet).
 *
 * What Chimbuko really sends that departs from the documented schema is accepted, normalised,
 * and noted (fj_note, ingest/records/batch.h; at most FJ_CHIMBUKO_MAX_NOTES per body):
 *  - "histogram_keys": a model histogram with the documented "Histogram Bin Counts"/"Histogram Bin
 *    Edges" keys instead of the code's "Bin Counts"/"First edge"/"Bin width"/"Min"/"Max": stored
 *    with the code's names ("Bin Edges" kept; first edge, width, min and max derived from it).
 *  - "gpu_parent_error": gpu_parent sent as a "Chimbuko error: ..." string instead of an object:
 *    kept as the event's gpu_parent_error, no parent.
 *  - "missing_gpu_fields": is_gpu_event/gpu_location/gpu_parent absent (an AD without its
 *    metadata parser): is_gpu_event unknown (-1) unless a gpu_location says it is a GPU event.
 *  - "empty_stats": a RunStats with count 0 whose minimum/maximum are the DBL_MAX/DBL_MIN
 *    sentinels: read as null.
 *  - "legacy_schema": an event record without `version` (2020-2022): no score, severity, hostname
 *    or node state; its `func_stats` (SSTD RunStats) is read as algo_params. A metadata record
 *    without `pid` (before Oct 2020) gets "missing_field" and pid 0. A packet without `version`
 *    gets "legacy_schema" and version 0.
 *  - "unknown_field": members the schema does not list (the pserver's payload list is pluggable):
 *    ignored, counted in env->unknown_fields.
 * Not noted, because every record does it: RunStats `count` written as a double (14.0) is stored
 * as an integer (a fractional count is refused); timestamps are microseconds (created_at
 * milliseconds) and are kept at that resolution; `__id` and `_id` (store-internal counters) are
 * dropped.
 *
 * JSON null is the same as an absent member, as in the Sonar decoder; members the schema marks
 * always present are required, except the GPU fields above.
 *
 * Thread-safety: none needed; all state is in the arguments. */
#ifndef FJ_CHIMBUKO_H
#define FJ_CHIMBUKO_H

#include "ingest/records/batch.h"

#include <stddef.h>

/* Notes kept per body; past this, one "notes_truncated" note says how many were dropped. */
#define FJ_CHIMBUKO_MAX_NOTES 64

/* Most records one provenance body may hold. */
#define FJ_CHIMBUKO_MAX_RECORDS 1000000

/* "packet", "anomalies", "normalexecs", "metadata", "func_stats", "counter_stats". */
const char *fj_cb_collection_name(fj_cb_collection c);
/* The collection of a provenance path segment ("anomalies"...; not "packet"), or -1. */
int fj_cb_collection_parse(const char *name);

/* Decodes a pserver packet (one JSON object) into a new envelope appended to b: kind
 * FJ_KIND_CHIMBUKO, collection FJ_CB_PACKET, time created_at in seconds. cluster, node and
 * u.chimbuko.run are left for the caller. A packet with only `created_at` (and `version`), which
 * the pserver sends every period when idle, is valid. Errors: FJ_EINVAL with err->path (the JSON
 * path, or "line L, column C" for a syntax error; "" for the packet itself) and nothing added to
 * b; FJ_ENOMEM. */
fj_status fj_chimbuko_decode_packet(const char *body, size_t len, fj_batch *b, fj_err *err);

/* Decodes provenance records of collection c (not FJ_CB_PACKET) into one new envelope of b: the
 * body is one record (an object), a JSON array of records (as the AD and pserver write their
 * files), or several of either concatenated or one per line. time: the earliest entry time of the
 * events in seconds, 0 for the other collections. Errors as fj_chimbuko_decode_packet, with
 * paths starting at the record's index ("[2].event_id"); an empty body or array is FJ_EINVAL. */
fj_status fj_chimbuko_decode_records(const char *body, size_t len, fj_cb_collection c, fj_batch *b,
                                     fj_err *err);

/* Is s a valid run label (1..128 bytes of letters, digits, '.', '_', '-', ':')? */
bool fj_cb_run_valid(const char *s);

#endif
