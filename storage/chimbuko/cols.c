/* storage/chimbuko/cols.c — the column lists of the Chimbuko query tables and of node usage
 * (storage/core/store_chimbuko.h). Every backend emits exactly these columns in this order; docs/chimbuko.md
 * describes them. Units are in the names: _us microseconds, _ms milliseconds since 1970; a
 * `time` column is the same instant in seconds (RFC 3339 in JSON). RunStats columns are JSON
 * objects {count, accumulate, minimum, maximum, mean, stddev, skewness, kurtosis}. */
#include "storage/core/store_chimbuko.h"

#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define TABLE(var, jname, cols, nkey) const fj_qtable var = {jname, cols, N(cols), nkey}

void fj_cb_query_init(fj_cb_query *q)
{
    memset(q, 0, sizeof *q);
    q->app = q->rank = q->fid = q->idx = -1;
    q->step_from = q->step_to = -1;
    q->collection = FJ_CB_PACKET;
}

static const fj_qcol runs_cols[] = {
    {"run", FJ_VT_TEXT, "run label (the ?run= of the sender; \"default\" when none)"},
    {"packets", FJ_VT_INT, "pserver packets received"},
    {"first", FJ_VT_TIME, "first packet's created_at"},
    {"last", FJ_VT_TIME, "latest packet's created_at"},
    {"anomalies", FJ_VT_INT, "provenance anomaly records"},
    {"normalexecs", FJ_VT_INT, "provenance normal-execution records"},
    {"ranks", FJ_VT_INT, "distinct (app, rank) with anomalies in packets"},
};
TABLE(fj_qt_cb_runs, "runs", runs_cols, 0);

static const fj_qcol ranks_cols[] = {
    {"run", FJ_VT_TEXT, "run label"},
    {"app", FJ_VT_INT, "program index"},
    {"rank", FJ_VT_INT, "MPI rank"},
    {"step", FJ_VT_INT, "IO step with anomalies"},
    {"time", FJ_VT_TIME, "latest event of the step"},
    {"min_ts_us", FJ_VT_INT, "earliest event of the step on the rank"},
    {"max_ts_us", FJ_VT_INT, "latest event of the step on the rank"},
    {"anomalies", FJ_VT_INT, "anomalies in the step"},
    {"score_max", FJ_VT_REAL, "highest outlier score of the step"},
    {"score_mean", FJ_VT_REAL, "mean outlier score of the step"},
    {"scores", FJ_VT_JSON, "outlier scores of the step (RunStats)"},
};
TABLE(fj_qt_cb_ranks, "ranks", ranks_cols, 3);

static const fj_qcol functions_cols[] = {
    {"run", FJ_VT_TEXT, "run label"},
    {"app", FJ_VT_INT, "program index"},
    {"fid", FJ_VT_INT, "function index"},
    {"name", FJ_VT_TEXT, "function name"},
    {"time", FJ_VT_TIME, "packet time (a point is stored when the profile changed)"},
    {"created_at_ms", FJ_VT_INT, "packet created_at"},
    {"anomalies", FJ_VT_INT, "anomalies of the function since the run began (stats.accumulate)"},
    {"calls", FJ_VT_INT, "executions since the run began (inclusive.count)"},
    {"anomaly_stats", FJ_VT_JSON, "anomalies per (rank, IO step) report (RunStats)"},
    {"inclusive", FJ_VT_JSON, "inclusive runtime, microseconds (RunStats)"},
    {"exclusive", FJ_VT_JSON, "exclusive runtime, microseconds (RunStats)"},
};
TABLE(fj_qt_cb_functions, "functions", functions_cols, 3);

static const fj_qcol metrics_cols[] = {
    {"run", FJ_VT_TEXT, "run label"},
    {"app", FJ_VT_INT, "program index"},
    {"rank", FJ_VT_INT, "MPI rank"},
    {"fid", FJ_VT_INT, "function index"},
    {"name", FJ_VT_TEXT, "function name"},
    {"time", FJ_VT_TIME, "packet time"},
    {"created_at_ms", FJ_VT_INT, "packet created_at"},
    {"anomalies", FJ_VT_INT, "anomalies since the previous packet (new_data.count.accumulate)"},
    {"score_max", FJ_VT_REAL, "highest outlier score since the previous packet"},
    {"severity_total", FJ_VT_REAL, "summed severity (exclusive runtime, microseconds) since the previous packet"},
    {"first_io_step", FJ_VT_INT, "first IO step of new_data"},
    {"last_io_step", FJ_VT_INT, "last IO step of new_data"},
    {"new_data", FJ_VT_JSON, "metrics since the previous packet: {count, score, severity, first_io_step, "
                             "last_io_step, min_timestamp, max_timestamp}"},
    {"all_data", FJ_VT_JSON, "the same since the run began"},
};
TABLE(fj_qt_cb_metrics, "metrics", metrics_cols, 4);

static const fj_qcol counters_cols[] = {
    {"run", FJ_VT_TEXT, "run label"},
    {"app", FJ_VT_INT, "program index"},
    {"counter", FJ_VT_TEXT, "counter name"},
    {"time", FJ_VT_TIME, "packet time (a point is stored when the statistics changed)"},
    {"created_at_ms", FJ_VT_INT, "packet created_at"},
    {"count", FJ_VT_INT, "values seen since the run began"},
    {"total", FJ_VT_REAL, "their sum"},
    {"stats", FJ_VT_JSON, "RunStats of the counter's values"},
};
TABLE(fj_qt_cb_counters, "counters", counters_cols, 3);

static const fj_qcol top_ranks_cols[] = {
    {"run", FJ_VT_TEXT, "run label"},
    {"app", FJ_VT_INT, "program index"},
    {"rank", FJ_VT_INT, "MPI rank"},
    {"anomalies", FJ_VT_INT, "anomalies in IO steps overlapping the window"},
    {"steps", FJ_VT_INT, "IO steps with anomalies"},
    {"score_max", FJ_VT_REAL, "highest outlier score"},
    {"first", FJ_VT_TIME, "earliest of those steps"},
    {"last", FJ_VT_TIME, "latest of those steps"},
};
TABLE(fj_qt_cb_top_ranks, "ranks", top_ranks_cols, 0);

static const fj_qcol top_functions_cols[] = {
    {"run", FJ_VT_TEXT, "run label"},
    {"app", FJ_VT_INT, "program index"},
    {"fid", FJ_VT_INT, "function index"},
    {"name", FJ_VT_TEXT, "function name"},
    {"anomalies", FJ_VT_INT, "anomalies reported in packets of the window (anomaly_metrics new_data)"},
    {"ranks", FJ_VT_INT, "ranks where it had anomalies"},
    {"score_max", FJ_VT_REAL, "highest outlier score"},
    {"severity_total", FJ_VT_REAL, "summed severity, microseconds"},
};
TABLE(fj_qt_cb_top_functions, "functions", top_functions_cols, 0);

static const fj_qcol events_cols[] = {
    {"event", FJ_VT_TEXT, "event label rank:io_step:idx (unique within run and app)"},
    {"kind", FJ_VT_TEXT, "anomaly or normal (collection anomalies or normalexecs)"},
    {"run", FJ_VT_TEXT, "run label"},
    {"app", FJ_VT_INT, "program index (pid)"},
    {"rank", FJ_VT_INT, "MPI rank (rid)"},
    {"thread", FJ_VT_INT, "thread index (tid; a TAU virtual thread for GPU events)"},
    {"io_step", FJ_VT_INT, "IO step"},
    {"idx", FJ_VT_INT, "index of the event within the step"},
    {"fid", FJ_VT_INT, "function index"},
    {"func", FJ_VT_TEXT, "function name"},
    {"hostname", FJ_VT_TEXT, "host of the rank"},
    {"time", FJ_VT_TIME, "entry"},
    {"entry_us", FJ_VT_INT, "entry"},
    {"exit_us", FJ_VT_INT, "exit (null: had not exited)"},
    {"runtime_total_us", FJ_VT_INT, "inclusive runtime"},
    {"runtime_exclusive_us", FJ_VT_INT, "exclusive runtime"},
    {"outlier_score", FJ_VT_REAL, "algorithm score (null before schema version 2)"},
    {"outlier_severity", FJ_VT_REAL, "importance (exclusive runtime)"},
    {"is_gpu", FJ_VT_BOOL, "ran on a GPU (null when the record did not say)"},
    {"gpu", FJ_VT_JSON, "GPU location {thread, device, context, stream}"},
    {"gpu_parent_event", FJ_VT_TEXT, "label of the CPU event that launched the kernel"},
    {"gpu_parent_error", FJ_VT_TEXT, "Chimbuko's error when the launching event was not found"},
    {"algo", FJ_VT_TEXT, "model kind: sstd or histogram (HBOS, COPOD)"},
    {"algo_params", FJ_VT_JSON, "the model used for this function"},
    {"call_stack", FJ_VT_JSON, "the event and its parents"},
    {"counter_events", FJ_VT_JSON, "counters seen during the execution"},
    {"event_window", FJ_VT_JSON, "executions and MPI messages around the event"},
    {"node_state", FJ_VT_JSON, "node state from TAU monitoring"},
    {"gpu_parent", FJ_VT_JSON, "the launching CPU event {event_id, tid, call_stack}"},
    {"version", FJ_VT_INT, "record schema version (0: before version 2)"},
};
TABLE(fj_qt_cb_events, "events", events_cols, 0);

static const fj_qcol metadata_cols[] = {
    {"run", FJ_VT_TEXT, "run label"},
    {"app", FJ_VT_INT, "program index"},
    {"rank", FJ_VT_INT, "MPI rank"},
    {"thread", FJ_VT_INT, "thread (a GPU context's TAU virtual thread)"},
    {"descr", FJ_VT_TEXT, "metadata key (Hostname, CPU MHz, GPU[0] Name, CUDA Device, ...)"},
    {"value", FJ_VT_TEXT, "value"},
};
TABLE(fj_qt_cb_metadata, "metadata", metadata_cols, 0);

static const fj_qcol profiles_cols[] = {
    {"run", FJ_VT_TEXT, "run label"},
    {"app", FJ_VT_INT, "program index"},
    {"fid", FJ_VT_INT, "function index"},
    {"name", FJ_VT_TEXT, "function name"},
    {"anomalies", FJ_VT_INT, "anomalies over the run (null: none detected)"},
    {"exclusive_total_us", FJ_VT_REAL, "exclusive runtime over the run"},
    {"inclusive", FJ_VT_JSON, "inclusive runtime (RunStats)"},
    {"exclusive", FJ_VT_JSON, "exclusive runtime (RunStats)"},
    {"anomaly_metrics", FJ_VT_JSON, "{count, score, severity, first_io_step, last_io_step, min_timestamp, "
                                    "max_timestamp}; null when the function had no anomaly"},
};
TABLE(fj_qt_cb_profiles, "func_stats", profiles_cols, 0);

static const fj_qcol final_counters_cols[] = {
    {"run", FJ_VT_TEXT, "run label"},
    {"app", FJ_VT_INT, "program index"},
    {"counter", FJ_VT_TEXT, "counter name"},
    {"count", FJ_VT_INT, "values over the run"},
    {"total", FJ_VT_REAL, "their sum"},
    {"stats", FJ_VT_JSON, "RunStats"},
};
TABLE(fj_qt_cb_final_counters, "counter_stats", final_counters_cols, 0);
