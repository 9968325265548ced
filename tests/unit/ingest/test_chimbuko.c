/* Tests of ingest/chimbuko.c: every record and packet in shared/data/chimbuko decodes with the
 * values it holds, the known departures of SCHEMA.md are accepted, normalised and noted, and bad
 * input is refused with the JSON path of the field and nothing added to the batch. */
#include "ingest/chimbuko.h"
#include "../fj_test.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA FJ_SHARED_DIR "/data/chimbuko/"

static fj_batch *B;

static void setup(void)
{
    B = fj_batch_new();
    cr_assert(B);
}

static void teardown(void)
{
    fj_batch_free(B);
}

TestSuite(chimbuko, .init = setup, .fini = teardown);

static char *load(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, DATA "%s", name);
    char *body = fj_test_read_file(path, len);
    cr_assert(body, "cannot read %s", path);
    return body;
}

/* The text with the first occurrence of from replaced by to (malloc'd). */
static char *edit(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    cr_assert(at, "\"%s\" not in the test input", from);
    size_t n = strlen(text) - strlen(from) + strlen(to);
    char *out = malloc(n + 1);
    size_t pre = (size_t)(at - text);
    memcpy(out, text, pre);
    strcpy(out + pre, to);
    strcat(out, at + strlen(from));
    return out;
}

static const fj_chimbuko *decode_records(const char *body, size_t len, fj_cb_collection c)
{
    fj_err err = {0};
    size_t before = B->n_envs;
    fj_status st = fj_chimbuko_decode_records(body, len, c, B, &err);
    cr_assert_eq(st, FJ_OK, "%s at %s", err.message, err.path);
    cr_assert_eq(B->n_envs, before + 1);
    cr_assert_eq(B->envs[before].kind, FJ_KIND_CHIMBUKO);
    return &B->envs[before].u.chimbuko;
}

static const fj_chimbuko *decode_file(const char *name, fj_cb_collection c)
{
    size_t len;
    char *body = load(name, &len);
    const fj_chimbuko *cb = decode_records(body, len, c);
    free(body);
    return cb;
}

static const fj_chimbuko *decode_packet_str(const char *body)
{
    fj_err err = {0};
    size_t before = B->n_envs;
    fj_status st = fj_chimbuko_decode_packet(body, strlen(body), B, &err);
    cr_assert_eq(st, FJ_OK, "%s at %s", err.message, err.path);
    cr_assert_eq(B->n_envs, before + 1);
    return &B->envs[before].u.chimbuko;
}

static const fj_chimbuko *decode_packet_file(const char *name)
{
    size_t len;
    char *body = load(name, &len);
    const fj_chimbuko *cb = decode_packet_str(body);
    free(body);
    return cb;
}

static const fj_envelope *last_env(void)
{
    return &B->envs[B->n_envs - 1];
}

static bool has_note(const fj_envelope *e, const char *kind, const char *path)
{
    for (size_t i = 0; i < e->n_notes; i++)
        if (strcmp(e->notes[i].kind, kind) == 0 && (!path || strcmp(e->notes[i].path, path) == 0))
            return true;
    return false;
}

/* Expects refusal with the given path (and a message containing needle when not NULL), and the
 * batch as it was. */
static void expect_refused(fj_cb_collection c, const char *body, const char *path, const char *needle)
{
    fj_err err = {0};
    size_t before = B->n_envs;
    fj_status st = c == FJ_CB_PACKET ? fj_chimbuko_decode_packet(body, strlen(body), B, &err)
                                     : fj_chimbuko_decode_records(body, strlen(body), c, B, &err);
    cr_assert_eq(st, FJ_EINVAL, "accepted, want refusal at %s", path);
    cr_expect_str_eq(err.path, path, "path: %s (%s)", err.path, err.message);
    if (needle)
        cr_expect(strstr(err.message, needle) != NULL, "message \"%s\" lacks \"%s\"", err.message, needle);
    cr_expect_eq(B->n_envs, before, "batch changed on error");
}

/* --- every shared file --------------------------------------------------------------------- */

Test(chimbuko, every_shared_file_decodes)
{
    static const struct {
        const char *file;
        fj_cb_collection c;
        size_t n;
    } files[] = {
        {"legacy-v1-anomaly-cpu-basic.json", FJ_CB_ANOMALIES, 1},
        {"legacy-v1-anomaly-cpu-comm-and-counters.json", FJ_CB_ANOMALIES, 1},
        {"legacy-v1-anomaly-gpu.json", FJ_CB_ANOMALIES, 1},
        {"legacy-v1-normalexec.json", FJ_CB_NORMALEXECS, 1},
        {"legacy-v1-metadata-rank0.json", FJ_CB_METADATA, 108},
        {"synthetic-v2/anomalies-record-cpu-hbos.json", FJ_CB_ANOMALIES, 1},
        {"synthetic-v2/anomalies-record-gpu-sstd.json", FJ_CB_ANOMALIES, 1},
        {"synthetic-v2/anomalies-record-gpu-parent-error.json", FJ_CB_ANOMALIES, 1},
        {"synthetic-v2/anomalies-record-cpu-hbos.json", FJ_CB_NORMALEXECS, 1}, /* same schema */
        {"synthetic-v2/metadata-records.json", FJ_CB_METADATA, 5},
        {"synthetic-v2/global-func_stats-records.json", FJ_CB_FUNC_STATS, 2},
        {"synthetic-v2/global-counter_stats-records.json", FJ_CB_COUNTER_STATS, 1},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const fj_chimbuko *cb = decode_file(files[i].file, files[i].c);
        size_t n = cb->n_events + cb->n_meta + cb->n_profiles + cb->n_counters;
        cr_expect_eq(n, files[i].n, "%s: %zu records, want %zu", files[i].file, n, files[i].n);
        cr_expect_eq(cb->collection, files[i].c);
        cr_expect_str_eq(cb->run, "default");
    }
    static const char *const packets[] = {"synthetic-v2/pserver-packet-full.json",
                                          "synthetic-v2/pserver-packet-idle.json",
                                          "synthetic-v2/pserver-packet-minimal.json"};
    for (size_t i = 0; i < 3; i++) {
        const fj_chimbuko *cb = decode_packet_file(packets[i]);
        cr_expect_eq(cb->collection, FJ_CB_PACKET);
        cr_expect_eq(cb->packet.version, 2, "%s", packets[i]);
        cr_expect_eq(last_env()->n_notes, 0, "%s: notes on a clean packet", packets[i]);
    }
}

Test(chimbuko, legacy_cpu_event)
{
    const fj_chimbuko *cb = decode_file("legacy-v1-anomaly-cpu-basic.json", FJ_CB_ANOMALIES);
    const fj_cb_event *e = &cb->events[0];
    cr_expect_eq(e->version, 0);
    cr_expect_eq(e->pid, 0);
    cr_expect_eq(e->rid, 1);
    cr_expect_eq(e->io_step, 1);
    cr_expect_eq(e->idx, 1309);
    cr_expect_eq(e->fid, 71);
    cr_expect_str_eq(e->func, "MPI_Barrier()");
    cr_expect_eq(e->entry_us, 1592584220737496);
    cr_expect_eq(e->exit_us, 1592584220817935);
    cr_expect_eq(e->runtime_exclusive_us, 80439);
    cr_expect_eq(e->io_step_tstart_us, 1592584220581569);
    cr_expect(isnan(e->outlier_score));
    cr_expect_null(e->hostname);
    cr_expect_eq(e->is_gpu_event, 0);
    cr_expect(!e->has_gpu_location);
    cr_expect_null(e->gpu_parent_event);
    cr_expect_str_eq(e->algo, "sstd"); /* legacy func_stats */
    cr_expect(strstr(e->algo_params, "\"count\":105") != NULL, "%s", e->algo_params);
    cr_expect_eq(e->n_call_stack, 4);
    cr_expect_eq(e->n_exec_window, 13);
    cr_expect_eq(e->n_comm_window, 0);
    cr_expect_eq(e->n_counter_events, 0);
    const char *cs = "[{\"entry\":1592584220737496,\"event_id\":\"1:1:1309\",\"exit\":1592584220817935,";
    cr_expect(strncmp(e->call_stack, cs, strlen(cs)) == 0, "%s", e->call_stack);
    cr_expect_null(e->node_state);
    cr_expect(has_note(last_env(), "legacy_schema", "[0]"));
    cr_expect_eq(last_env()->time, 1592584220);
}

Test(chimbuko, legacy_comm_counters_and_gpu)
{
    const fj_chimbuko *cb = decode_file("legacy-v1-anomaly-cpu-comm-and-counters.json", FJ_CB_ANOMALIES);
    cr_expect_eq(cb->events[0].n_counter_events, 1);
    cr_expect_eq(cb->events[0].n_comm_window, 2);
    cr_expect(strstr(cb->events[0].counter_events, "\"Message size for broadcast\"") != NULL);
    cb = decode_file("legacy-v1-anomaly-gpu.json", FJ_CB_ANOMALIES);
    const fj_cb_event *e = &cb->events[0];
    cr_expect_eq(e->is_gpu_event, 1);
    cr_expect(e->has_gpu_location);
    cr_expect_eq(e->gpu_thread, 8);
    cr_expect_eq(e->gpu_context, 1);
    cr_expect_eq(e->gpu_device, 0);
    cr_expect_eq(e->tid, 8);
    cr_expect_null(e->gpu_parent_event);
    cr_expect_null(e->gpu_parent_error);
    cb = decode_file("legacy-v1-normalexec.json", FJ_CB_NORMALEXECS);
    cr_expect_eq(cb->events[0].idx, 1314);
    cr_expect_eq(cb->collection, FJ_CB_NORMALEXECS);
}

Test(chimbuko, v2_events)
{
    const fj_chimbuko *cb = decode_file("synthetic-v2/anomalies-record-cpu-hbos.json", FJ_CB_ANOMALIES);
    const fj_cb_event *e = &cb->events[0];
    cr_expect_eq(e->version, 2);
    cr_expect_str_eq(e->hostname, "node0017");
    cr_expect_eq(e->outlier_score, 7.3125);
    cr_expect_eq(e->outlier_severity, 588.0);
    cr_expect_str_eq(e->algo, "histogram");
    cr_expect(strstr(e->algo_params, "\"Bin Counts\":[3,11,27,40,22,9,4,0,0,1]") != NULL, "%s", e->algo_params);
    cr_expect(strstr(e->algo_params, "\"internal_global_threshold\":1.44269e-05") != NULL, "%s", e->algo_params);
    cr_expect(strstr(e->node_state, "\"Memory Available (MB)\"") != NULL);
    cr_expect_eq(last_env()->n_notes, 0, "a v2 record needs no notes");

    cb = decode_file("synthetic-v2/anomalies-record-gpu-sstd.json", FJ_CB_ANOMALIES);
    e = &cb->events[0];
    cr_expect_str_eq(e->gpu_parent_event, "1:12:8990");
    cr_expect_eq(e->gpu_parent_tid, 0);
    cr_expect_null(e->gpu_parent_error);
    cr_expect_eq(e->gpu_stream, 7);
    cr_expect_str_eq(e->algo, "sstd");
    cr_expect(strstr(e->algo_params, "\"count\":7,") != NULL, "%s", e->algo_params);
    cr_expect(strstr(e->gpu_parent, "cudaLaunchKernel") != NULL);

    cb = decode_file("synthetic-v2/anomalies-record-gpu-parent-error.json", FJ_CB_ANOMALIES);
    e = &cb->events[0];
    cr_expect_null(e->gpu_parent_event);
    cr_expect_str_eq(e->gpu_parent_error, "Chimbuko error: Correlation ID of host parent event was not recorded");
    cr_expect(has_note(last_env(), "gpu_parent_error", "[0].gpu_parent"));
}

Test(chimbuko, metadata_and_globals)
{
    const fj_chimbuko *cb = decode_file("legacy-v1-metadata-rank0.json", FJ_CB_METADATA);
    cr_expect_eq(cb->n_meta, 108);
    bool host = false;
    for (size_t i = 0; i < cb->n_meta; i++) {
        cr_expect_eq(cb->meta[i].pid, 0);
        if (!strcmp(cb->meta[i].descr, "Hostname"))
            host = !strcmp(cb->meta[i].value, "b17n15");
    }
    cr_expect(host);
    /* every legacy metadata record lacks pid: notes are capped, then one says how many were dropped */
    cr_expect(has_note(last_env(), "missing_field", "[0].pid"));
    cr_expect_eq(last_env()->n_notes, FJ_CHIMBUKO_MAX_NOTES + 1);
    cr_expect(has_note(last_env(), "notes_truncated", ""));

    cb = decode_file("synthetic-v2/metadata-records.json", FJ_CB_METADATA);
    cr_expect_eq(cb->meta[1].tid, 8);
    cr_expect_str_eq(cb->meta[1].descr, "CUDA Context");
    cr_expect_eq(last_env()->n_notes, 0);

    cb = decode_file("synthetic-v2/global-func_stats-records.json", FJ_CB_FUNC_STATS);
    const fj_cb_profile *p = &cb->profiles[0];
    cr_expect_eq(p->fid, 42);
    cr_expect_str_eq(p->fname, "MPI_Allreduce()");
    cr_expect(p->has_anomalies);
    cr_expect_eq(p->anomalies.count.accumulate, 6.0);
    cr_expect_eq(p->anomalies.count.count, 3);
    cr_expect_eq(p->anomalies.first_io_step, 3);
    cr_expect_eq(p->anomalies.max_ts_us, 1745598462000000);
    cr_expect(p->has_runtime);
    cr_expect_eq(p->exclusive.accumulate, 1612.0);
    cr_expect(!cb->profiles[1].has_anomalies);
    cr_expect_null(cb->profiles[1].anomalies.json);

    cb = decode_file("synthetic-v2/global-counter_stats-records.json", FJ_CB_COUNTER_STATS);
    cr_expect_str_eq(cb->counters[0].counter, "Message size for all-reduce");
    cr_expect_eq(cb->counters[0].stats.count, 4);
    cr_expect_eq(cb->counters[0].stats.accumulate, 36864.0);
}

Test(chimbuko, packets)
{
    const fj_chimbuko *cb = decode_packet_file("synthetic-v2/pserver-packet-full.json");
    const fj_cb_packet *p = &cb->packet;
    cr_expect_eq(p->created_at_ms, 1745598463123);
    cr_expect_eq(p->stats_created_at_ms, 1745598463123);
    cr_expect_eq(last_env()->time, 1745598463);
    cr_assert_eq(p->n_ranks, 1);
    cr_expect_eq(p->ranks[0].app, 0);
    cr_expect_eq(p->ranks[0].rank, 1);
    cr_expect_eq(p->ranks[0].stats.accumulate, 6.0);
    cr_assert_eq(p->ranks[0].n_steps, 2);
    cr_expect_eq(p->ranks[0].steps[0].step, 11);
    cr_expect_eq(p->ranks[0].steps[1].n_anomalies, 3);
    cr_expect_eq(p->ranks[0].steps[1].min_ts_us, 1745598461200345);
    cr_expect_eq(p->ranks[0].steps[1].scores.maximum, 7.3125);
    cr_assert_eq(p->n_funcs, 2);
    cr_expect_eq(p->funcs[1].fid, 88);
    cr_expect_eq(p->funcs[1].exclusive.count, 2);
    cr_assert_eq(p->n_counters, 1);
    cr_assert_eq(p->n_metrics, 1);
    cr_expect_eq(p->metrics[0].rank, 1);
    cr_expect_eq(p->metrics[0].new_data.count.accumulate, 2.0);
    cr_expect_eq(p->metrics[0].all_data.last_io_step, 12);
    cr_expect(strstr(p->metrics[0].new_data.json, "\"first_io_step\":12") != NULL);

    cb = decode_packet_file("synthetic-v2/pserver-packet-idle.json");
    cr_expect_eq(cb->packet.n_counters, 1);
    cr_expect_eq(cb->packet.n_ranks + cb->packet.n_funcs + cb->packet.n_metrics, 0);
    cr_expect_eq(cb->packet.stats_created_at_ms, 0);
    cb = decode_packet_file("synthetic-v2/pserver-packet-minimal.json");
    cr_expect_eq(cb->packet.n_counters + cb->packet.n_ranks + cb->packet.n_funcs + cb->packet.n_metrics, 0);
    /* Only created_at: what a pserver with nothing to say sends before it knew about versions. */
    cb = decode_packet_str("{\"created_at\": 1745598465123}");
    cr_expect_eq(cb->packet.version, 0);
    cr_expect(has_note(last_env(), "legacy_schema", ""));
    /* Compact, as well as pretty (the pserver sends json.dump(4)). */
    decode_packet_str("{\"created_at\":1,\"version\":2,\"anomaly_stats\":{\"created_at\":1,\"func\":[]}}");
}

/* --- departures -------------------------------------------------------------------------------- */

Test(chimbuko, departure_histogram_keys)
{
    size_t len;
    char *body = load("synthetic-v2/anomalies-record-cpu-hbos.json", &len);
    const char *from = strstr(body, "\"histogram\": {");
    const char *to = strstr(from, "},\n        \"internal_global_threshold\"");
    cr_assert(from && to);
    char *doc = malloc(len + 200);
    size_t pre = (size_t)(from - body);
    memcpy(doc, body, pre);
    sprintf(doc + pre, "\"histogram\": {\"Histogram Bin Counts\": [1, 2, 3], \"Histogram Bin Edges\": [10.0, 12.0, "
                       "14.0, 16.0]%s",
            to);
    const fj_chimbuko *cb = decode_records(doc, strlen(doc), FJ_CB_ANOMALIES);
    const char *ap = cb->events[0].algo_params;
    cr_expect_str_eq(cb->events[0].algo, "histogram");
    cr_expect(strstr(ap, "\"Bin Counts\":[1,2,3]") != NULL, "%s", ap);
    cr_expect(strstr(ap, "\"Bin Edges\":[10,12,14,16]") != NULL, "%s", ap);
    cr_expect(strstr(ap, "\"First edge\":10,\"Bin width\":2,\"Min\":10,\"Max\":16") != NULL, "%s", ap);
    cr_expect(has_note(last_env(), "histogram_keys", "[0].algo_params.histogram"));
    /* edges that do not fit the counts are refused */
    char *bad = edit(doc, "14.0, 16.0]", "14.0]");
    expect_refused(FJ_CB_ANOMALIES, bad, "[0].algo_params.histogram.Histogram Bin Edges", "bin edges");
    free(bad);
    free(doc);
    free(body);
}

Test(chimbuko, departure_empty_stats_sentinels)
{
    const char *rec = "[{\"app\":0,\"counter\":\"c\",\"stats\":{\"accumulate\":0.0,\"count\":0.0,\"kurtosis\":0.0,"
                      "\"maximum\":2.2250738585072014e-308,\"mean\":0.0,\"minimum\":1.7976931348623157e308,"
                      "\"skewness\":0.0,\"stddev\":0.0}}]";
    const fj_chimbuko *cb = decode_records(rec, strlen(rec), FJ_CB_COUNTER_STATS);
    cr_expect_eq(cb->counters[0].stats.count, 0);
    cr_expect(isnan(cb->counters[0].stats.minimum));
    cr_expect(isnan(cb->counters[0].stats.maximum));
    cr_expect(strstr(cb->counters[0].stats.json, "\"minimum\":null,\"maximum\":null") != NULL, "%s",
              cb->counters[0].stats.json);
    cr_expect(has_note(last_env(), "empty_stats", "[0].stats"));
    /* a real minimum of a non-empty RunStats is kept, whatever it is */
    const char *rec2 = "{\"app\":0,\"counter\":\"c\",\"stats\":{\"accumulate\":1.0,\"count\":1.0,\"kurtosis\":0.0,"
                       "\"maximum\":1.0,\"mean\":1.0,\"minimum\":1.0,\"skewness\":null,\"stddev\":0.0}}";
    cb = decode_records(rec2, strlen(rec2), FJ_CB_COUNTER_STATS);
    cr_expect_eq(cb->counters[0].stats.minimum, 1.0);
    cr_expect(isnan(cb->counters[0].stats.skewness), "null read as unknown");
    cr_expect(!has_note(last_env(), "empty_stats", NULL));
}

Test(chimbuko, departure_float_count)
{
    /* count as a double (C++), as an integer (Jx9's re-encoding), and a fractional one */
    const char *f = "{\"app\":0,\"counter\":\"c\",\"stats\":{\"accumulate\":1,\"count\":14.0,\"kurtosis\":0,"
                    "\"maximum\":1,\"mean\":1,\"minimum\":1,\"skewness\":0,\"stddev\":0}}";
    const fj_chimbuko *cb = decode_records(f, strlen(f), FJ_CB_COUNTER_STATS);
    cr_expect_eq(cb->counters[0].stats.count, 14);
    char *i = edit(f, "14.0", "14");
    cb = decode_records(i, strlen(i), FJ_CB_COUNTER_STATS);
    cr_expect_eq(cb->counters[0].stats.count, 14);
    free(i);
    char *bad = edit(f, "14.0", "14.5");
    expect_refused(FJ_CB_COUNTER_STATS, bad, "[0].stats.count", "whole number");
    free(bad);
    bad = edit(f, "14.0", "-1.0");
    expect_refused(FJ_CB_COUNTER_STATS, bad, "[0].stats.count", "whole number");
    free(bad);
}

Test(chimbuko, departure_missing_gpu_fields)
{
    size_t len;
    char *body = load("synthetic-v2/anomalies-record-cpu-hbos.json", &len);
    char *a = edit(body, "\"gpu_location\": null,", "");
    char *b = edit(a, "\"gpu_parent\": null,", "");
    char *c = edit(b, "\"is_gpu_event\": false,", "");
    const fj_chimbuko *cb = decode_records(c, strlen(c), FJ_CB_ANOMALIES);
    cr_expect_eq(cb->events[0].is_gpu_event, -1);
    cr_expect(has_note(last_env(), "missing_gpu_fields", "[0]"));
    free(a);
    free(b);
    free(c);
    /* a GPU record without is_gpu_event: its location says it ran on a GPU */
    char *g = load("synthetic-v2/anomalies-record-gpu-sstd.json", &len);
    char *g2 = edit(g, "\"is_gpu_event\": true,", "");
    cb = decode_records(g2, strlen(g2), FJ_CB_ANOMALIES);
    cr_expect_eq(cb->events[0].is_gpu_event, 1);
    free(g);
    free(g2);
    free(body);
}

Test(chimbuko, departures_unknown_fields_and_versionless_records)
{
    const char *p = "{\"created_at\":1745598465123,\"version\":2,\"future_payload\":{\"x\":1}}";
    decode_packet_str(p);
    cr_expect(has_note(last_env(), "unknown_field", "future_payload"));
    cr_expect_eq(last_env()->unknown_fields, 1);
    size_t len;
    char *body = load("synthetic-v2/anomalies-record-gpu-sstd.json", &len);
    char *nov = edit(body, "\"version\": 2", "\"extra\": 2");
    const fj_chimbuko *cb = decode_records(nov, strlen(nov), FJ_CB_ANOMALIES);
    cr_expect_eq(cb->events[0].version, 0);
    cr_expect(has_note(last_env(), "legacy_schema", "[0]"));
    cr_expect(has_note(last_env(), "unknown_field", "[0].extra"));
    free(nov);
    free(body);
}

Test(chimbuko, many_records_per_body)
{
    /* One object, an array, concatenated objects and arrays, one per line: indexes run on. */
    size_t l1, l2;
    char *a = load("synthetic-v2/anomalies-record-gpu-sstd.json", &l1);
    char *m = load("legacy-v1-anomaly-cpu-basic.json", &l2);
    char *both = malloc(l1 + l2 + 8);
    sprintf(both, "%s\n[%s]\n", a, m);
    const fj_chimbuko *cb = decode_records(both, strlen(both), FJ_CB_ANOMALIES);
    cr_expect_eq(cb->n_events, 2);
    cr_expect_eq(cb->events[1].idx, 1309);
    cr_expect_eq(last_env()->time, 1592584220, "the earliest entry");
    char *bad = edit(both, "\"event_id\": \"1:1:1309\",\n  \"event_window\"",
                     "\"event_id\": \"1:1\",\n  \"event_window\"");
    expect_refused(FJ_CB_ANOMALIES, bad, "[1].event_id", "invalid event label");
    free(bad);
    free(both);
    free(a);
    free(m);
}

/* --- bad input ------------------------------------------------------------------------------- */

Test(chimbuko, bad_packets)
{
    expect_refused(FJ_CB_PACKET, "", "", "empty body");
    expect_refused(FJ_CB_PACKET, "[]", "", "expected object");
    expect_refused(FJ_CB_PACKET, "{\"version\":2}", "created_at", "required");
    expect_refused(FJ_CB_PACKET, "{\"version\":2,\"created_at\":\"1745598465123\"}", "created_at", "integer");
    expect_refused(FJ_CB_PACKET, "{\"version\":2,\"created_at\":0}", "created_at", "milliseconds");
    expect_refused(FJ_CB_PACKET, "{\"created_at\":1}{\"created_at\":2}", "", "one packet");
    expect_refused(FJ_CB_PACKET, "{\"created_at\":1,\n\"version\":2,\n\"x\": tru}", "line 3, column 9", NULL);
    expect_refused(FJ_CB_PACKET, "{\"created_at\":1,\"counter_stats\":{}}", "counter_stats", "expected array");
    expect_refused(FJ_CB_PACKET, "{\"created_at\":1,\"counter_stats\":[{\"app\":0,\"counter\":\"c\"}]}",
                   "counter_stats[0].stats", "required");

    size_t len;
    char *full = load("synthetic-v2/pserver-packet-full.json", &len);
    char *b = edit(full, "\"step\": 12", "\"step\": -12");
    expect_refused(FJ_CB_PACKET, b, "anomaly_stats.anomaly[0].data[1].step", "unsigned integer");
    free(b);
    b = edit(full, "\"key\": \"0:1\"", "\"key\": \"0:2\"");
    expect_refused(FJ_CB_PACKET, b, "anomaly_stats.anomaly[0].data[0]", "under key 0:2");
    free(b);
    b = edit(full, "\"key\": \"0:1\"", "\"key\": \"0-1\"");
    expect_refused(FJ_CB_PACKET, b, "anomaly_stats.anomaly[0].key", "app:rank");
    free(b);
    b = edit(full, "\"mean\": 6.65625,", "");
    expect_refused(FJ_CB_PACKET, b, "anomaly_metrics[0].new_data.score.mean", "required");
    free(b);
    b = edit(full, "\"name\": \"MPI_Allreduce()\"", "\"name\": 42");
    expect_refused(FJ_CB_PACKET, b, "anomaly_stats.func[0].name", "string");
    free(b);
    b = edit(full, "\"kurtosis\": -0.9030470914127426", "\"kurtosis\": \"x\"");
    expect_refused(FJ_CB_PACKET, b, "counter_stats[0].stats.kurtosis", "number");
    free(b);
    free(full);
}

Test(chimbuko, bad_records)
{
    expect_refused(FJ_CB_ANOMALIES, "", "", "no anomalies records");
    expect_refused(FJ_CB_ANOMALIES, "[]", "", "no anomalies records");
    expect_refused(FJ_CB_METADATA, "42", "", "expected a metadata record");
    expect_refused(FJ_CB_METADATA, "[{\"rid\":0,\"tid\":0,\"descr\":\"Hostname\",\"value\":5}]", "[0].value", "string");
    expect_refused(FJ_CB_METADATA, "[{\"rid\":0,\"tid\":0,\"descr\":\"\",\"value\":\"x\"}]", "[0].descr", "empty");
    expect_refused(FJ_CB_METADATA,
                   "{\"rid\":0,\"tid\":0,\"descr\":\"a\",\"value\":\"x\"}\n"
                   "{\"rid\":-1,\"tid\":0,\"descr\":\"a\",\"value\":\"x\"}",
                   "[1].rid", "unsigned");
    expect_refused(FJ_CB_COUNTER_STATS, "[{\"app\":0,\"counter\":\"c\"}]", "[0].stats", "required");
    expect_refused(FJ_CB_FUNC_STATS, "[{\"app\":0,\"fid\":1,\"fname\":\"f\",\"runtime_profile\":{}}]",
                   "[0].runtime_profile.exclusive_runtime", "required");

    size_t len;
    char *r = load("synthetic-v2/anomalies-record-cpu-hbos.json", &len);
    char *b = edit(r, "\"event_id\": \"1:12:4711\",\n    \"event_window\"",
                   "\"event_id\": \"2:12:4711\",\n    \"event_window\"");
    expect_refused(FJ_CB_ANOMALIES, b, "[0].event_id", "does not name rank 1");
    free(b);
    b = edit(r, "\"fid\": 42,", "\"fid\": \"42\",");
    expect_refused(FJ_CB_ANOMALIES, b, "[0].call_stack[0].fid", "unsigned integer");
    free(b);
    b = edit(r, "\"type\": \"SEND\"", "\"type\": \"PUT\"");
    expect_refused(FJ_CB_ANOMALIES, b, "[0].event_window.comm_window[0].type", "SEND");
    free(b);
    b = edit(r, "\"parent_event_id\": \"1:12:4590\"", "\"parent_event_id\": \"up\"");
    expect_refused(FJ_CB_ANOMALIES, b, "[0].event_window.exec_window[0].parent_event_id", "root");
    free(b);
    b = edit(r, "\"value\": 231456", "\"value\": 1.5");
    expect_refused(FJ_CB_ANOMALIES, b, "[0].node_state.data[0].value", "unsigned integer");
    free(b);
    b = edit(r, "\"Bin width\": 12.5,", "");
    expect_refused(FJ_CB_ANOMALIES, b, "[0].algo_params.histogram.Bin width", "required");
    free(b);
    b = edit(r, "\"counter_value\": 8192,", "\"counter_value\": true,");
    expect_refused(FJ_CB_ANOMALIES, b, "[0].counter_events[0].counter_value", "unsigned integer");
    free(b);
    b = edit(r, "\"io_step\": 12,", "");
    expect_refused(FJ_CB_ANOMALIES, b, "[0].io_step", "required");
    free(b);
    b = edit(r, "\"is_gpu_event\": false", "\"is_gpu_event\": 0");
    expect_refused(FJ_CB_ANOMALIES, b, "[0].is_gpu_event", "boolean");
    free(b);
    b = edit(r, "\"entry\": 1745598461200345,\n    \"event_id\"", "\"entry\": 1e400,\n    \"event_id\"");
    expect_refused(FJ_CB_ANOMALIES, b, "line 60, column 14", NULL);
    free(b);
    free(r);
    char *g = load("synthetic-v2/anomalies-record-gpu-sstd.json", &len);
    b = edit(g, "\"tid\": 0\n    },", "\"tid\": \"0\"\n    },");
    expect_refused(FJ_CB_ANOMALIES, b, "[0].gpu_parent.tid", "unsigned integer");
    free(b);
    b = edit(g, "\"stream\": 7,", "");
    expect_refused(FJ_CB_ANOMALIES, b, "[0].gpu_location.stream", "required");
    free(b);
    free(g);
}

Test(chimbuko, names)
{
    cr_expect_str_eq(fj_cb_collection_name(FJ_CB_PACKET), "packet");
    cr_expect_eq(fj_cb_collection_parse("normalexecs"), FJ_CB_NORMALEXECS);
    cr_expect_eq(fj_cb_collection_parse("counter_stats"), FJ_CB_COUNTER_STATS);
    cr_expect_eq(fj_cb_collection_parse("packet"), -1);
    cr_expect_eq(fj_cb_collection_parse("ad_model"), -1);
    cr_expect(fj_cb_run_valid("xgc-2025.04_25:a"));
    cr_expect(!fj_cb_run_valid(""));
    cr_expect(!fj_cb_run_valid("a b"));
    cr_expect(!fj_cb_run_valid("a/b"));
}
