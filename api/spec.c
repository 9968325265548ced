/* spec.c — the query API's endpoints, their parameters, and the OpenAPI document built from them.
 * A parameter added here is accepted by its handler and documented at once; a column added to
 * storage/query/cols.c shows up in the document. */
#include "api/spec.h"

#include "api/chimbuko_api.h"
#include "api/account_usage.h"
#include "api/metrics_catalog.h"
#include "api/problems.h"
#include "api/sss.h"

#include <stdio.h>
#include <string.h>

#ifndef FJ_VERSION
#define FJ_VERSION "dev"
#endif

#define P_CLUSTER {"cluster", FJ_PT_STRING, "cluster name", NULL, true, 0, 0}
#define P_CLUSTER_OPT {"cluster", FJ_PT_STRING, "cluster name", NULL, false, 0, 0}
#define P_FORMAT                                                                                       \
    {"format", FJ_PT_ENUM, "json (default) or csv; an Accept header of text/csv also selects CSV", "json|csv", \
     false, 0, 0}
#define P_HOST                                                                                         \
    {"host", FJ_PT_HOSTS,                                                                              \
     "host patterns, comma-separated: Slurm node ranges (c1-[1-8,10]) and * wildcards (gpu-*); a "     \
     "pattern also matches the leading labels of a name (ml1 matches ml1.hpc.uio.no); repeatable",    \
     NULL, false, 0, 0}
#define P_FROM(what)                                                                                   \
    {"from", FJ_PT_TIME, what " (RFC 3339, epoch seconds, now or now-DURATION)", NULL, false, 0, 0}
#define P_TO(what) {"to", FJ_PT_TIME, what " (same forms as from)", NULL, false, 0, 0}
#define P_LIMIT(def) {"limit", FJ_PT_INT, "rows per page (default " def ")", NULL, false, 1, 100000}
#define P_CURSOR                                                                                       \
    {"cursor", FJ_PT_CURSOR, "the next member of the previous page: continues the same listing", NULL, false, 0, 0}
#define P_BUCKET                                                                                       \
    {"bucket", FJ_PT_DURATION,                                                                         \
     "bucket width (seconds or 5m, 1h...; default max(60 s, span / 120)); buckets are aligned to "     \
     "multiples of the width", NULL, false, 0, 0}
#define P_USER {"user", FJ_PT_LIST, "user names, comma-separated; repeatable", NULL, false, 0, 0}
#define P_STATE {"state", FJ_PT_LIST, "Slurm job states (COMPLETED, RUNNING, ...); repeatable", NULL, false, 0, 0}
#define P_PARTITION {"partition", FJ_PT_LIST, "Slurm partitions; repeatable", NULL, false, 0, 0}
#define P_ACCOUNT {"account", FJ_PT_LIST, "Slurm accounts; repeatable", NULL, false, 0, 0}
#define P_JOB {"job", FJ_PT_INTLIST, "job ids, comma-separated; repeatable", NULL, false, 0, 0}
#define P_END {NULL, 0, NULL, NULL, false, 0, 0}
#define P_MINMAX(field, type, unit)                                                                    \
    {"min_" field, type, "smallest " field " (" unit ")", NULL, false, 0, 0},                          \
        {"max_" field, type, "largest " field " (" unit ")", NULL, false, 0, 0}

/* The efficiency filters under the names of the usage report's figures too (cpu_eff_max=0.25). */
#define P_EFF_ALIASES(field)                                                                           \
    {field "_min", FJ_PT_NUMBER, "the same as min_" field, NULL, false, 0, 0},                         \
        {field "_max", FJ_PT_NUMBER, "the same as max_" field, NULL, false, 0, 0}

static const fj_pspec no_params[] = {P_FORMAT, P_END};
static const fj_pspec none[] = {P_END};

/* --- clusters and nodes -------------------------------------------------------------------- */

const fj_endpoint fj_ep_clusters = {
    "/api/v1/clusters", "Clusters",
    "The clusters fjord holds data of (those the credential may read), with node counts, the latest "
    "sample time and the Slurm partitions of the latest cluster envelope. A cluster that sends only "
    "line protocol is listed too (0 nodes, its metrics' hosts counted), and so is one with only "
    "Chimbuko data.",
    NULL, NULL, no_params, {&fj_qt_clusters}, NULL, NULL, 0, NULL};

static const fj_pspec nodes_params[] = {P_CLUSTER, P_HOST, P_FORMAT, P_END};
const fj_endpoint fj_ep_nodes = {
    "/api/v1/nodes", "Nodes",
    "Every node of a cluster with its latest sysinfo (CPU, memory, GPU cards, NUMA distances), when it "
    "was last seen, and its Slurm states and partitions from the latest cluster envelope.",
    NULL, NULL, nodes_params, {&fj_qt_nodes}, NULL, NULL, 0, NULL};

static const fj_pspec sysinfo_params[] = {P_CLUSTER, P_FROM("oldest record"), P_TO("newest record"), P_FORMAT,
                                          P_END};
const fj_endpoint fj_ep_node_sysinfo = {
    "/api/v1/nodes/{node}/sysinfo", "A node's sysinfo history",
    "Every sysinfo record of one node in the window, oldest first.",
    "node", "node name", sysinfo_params, {&fj_qt_sysinfo}, NULL, NULL, 0, NULL};

static const fj_pspec topology_params[] = {
    P_CLUSTER,
    {"kind", FJ_PT_ENUM, "svg (default: the lstopo drawing) or text", "svg|text", false, 0, 0},
    {"at", FJ_PT_TIME, "the latest topology at or before this time (default: the latest)", NULL, false, 0, 0},
    P_END};
const fj_endpoint fj_ep_node_topology = {
    "/api/v1/nodes/{node}/topology", "A node's hardware topology",
    "The node's latest topology rendering as sent by Sonar (decoded): image/svg+xml or text/plain. "
    "The Fjord-Time header gives the time of the sysinfo it came with. The SVG is a download "
    "(Content-Disposition: attachment; filename=\"topology-<node>.svg\"), both forms come with "
    "Content-Security-Policy: default-src 'none'; sandbox and X-Content-Type-Options: nosniff: a "
    "producer's SVG never runs as a page of this server.",
    "node", "node name", topology_params, {NULL}, NULL, NULL, FJ_EP_RAW, "image/svg+xml,text/plain"};

static const fj_pspec measurement_params[] = {
    P_CLUSTER,
    {"path", FJ_PT_STRING, "an aicr constraint path selecting one value of the snapshot", NULL, false, 0, 0},
    P_END};
const fj_endpoint fj_ep_node_measurements = {
    "/api/v1/nodes/{node}/measurements", "A node's latest measurement snapshot",
    "See docs/measurements.md: the node's latest aicr snapshot, or with path the value it names.",
    "node", "node name", measurement_params, {NULL}, NULL, NULL, FJ_EP_RAW | FJ_EP_EXTERNAL, "application/json"};

/* --- jobs ---------------------------------------------------------------------------------- */

static const fj_pspec jobs_params[] = {
    P_CLUSTER,
    P_FROM("jobs that ended at or after this time"),
    P_TO("jobs that started at or before this time"),
    P_HOST,
    P_USER,
    P_JOB,
    {"command", FJ_PT_LIST, "commands (glob: * ? [...]); a job matches when one of its commands does; repeatable",
     NULL, false, 0, 0},
    P_STATE,
    P_PARTITION,
    P_ACCOUNT,
    {"running", FJ_PT_BOOL, "true: jobs still running; false: finished jobs", NULL, false, 0, 0},
    {"gpu", FJ_PT_ENUM, "some: jobs that used a GPU; none: jobs that did not", "some|none", false, 0, 0},
    {"energy", FJ_PT_BOOL,
     "false: leave the energy columns null and read no power (a faster list; default true, docs/energy.md)", NULL,
     false, 0, 0},
    {"min_runtime", FJ_PT_DURATION, "shortest duration (end - start)", NULL, false, 0, 0},
    P_MINMAX("cpu_avg", FJ_PT_NUMBER, "percent of one core"),
    P_MINMAX("cpu_peak", FJ_PT_NUMBER, "percent of one core"),
    P_MINMAX("mem_avg_kb", FJ_PT_KB, "kB, or 16G"),
    P_MINMAX("mem_peak_kb", FJ_PT_KB, "kB, or 16G"),
    P_MINMAX("gpu_avg", FJ_PT_NUMBER, "percent of one card"),
    P_MINMAX("gpu_peak", FJ_PT_NUMBER, "percent of one card"),
    P_MINMAX("gpumem_avg_kb", FJ_PT_KB, "kB, or 16G"),
    P_MINMAX("gpumem_peak_kb", FJ_PT_KB, "kB, or 16G"),
    P_MINMAX("cpu_eff", FJ_PT_NUMBER, "0..1; jobs without an allocation left out"),
    P_MINMAX("mem_eff", FJ_PT_NUMBER, "0..1; jobs without an allocation left out"),
    P_MINMAX("gpu_eff", FJ_PT_NUMBER, "0..1; jobs without an allocation left out"),
    P_EFF_ALIASES("cpu_eff"),
    P_EFF_ALIASES("mem_eff"),
    P_EFF_ALIASES("gpu_eff"),
    {"sort", FJ_PT_ENUM, "sort key (default start); an efficiency sorts jobs without one first ascending",
     "start|end|duration|job|cpu_avg|cpu_peak|mem_avg_kb|mem_peak_kb|gpu_avg|gpu_peak|gpumem_avg_kb|gpumem_peak_kb|"
     "cpu_eff|mem_eff|gpu_eff",
     false, 0, 0},
    {"order", FJ_PT_ENUM, "asc (default) or desc", "asc|desc", false, 0, 0},
    P_LIMIT("1000"),
    P_CURSOR,
    P_FORMAT,
    P_END};
const fj_endpoint fj_ep_jobs = {
    "/api/v1/jobs", "Jobs",
    "The rectified jobs of a cluster (Slurm jobs across their nodes; other jobs per node and process "
    "group) overlapping the window, filtered, sorted, and paged by cursor: pass the answer's next as "
    "cursor (with the same parameters) for the following page; next is null on the last.",
    NULL, NULL, jobs_params, {&fj_qt_jobs}, NULL, "raw_expired_before", FJ_EP_PAGED, NULL};

static const fj_pspec job_params[] = {P_CLUSTER, P_FORMAT, P_END};
const fj_endpoint fj_ep_job = {
    "/api/v1/jobs/{id}", "A job",
    "One job (the id column of the job list): its row with the ClusterCockpit job of the same cluster "
    "and job id (clustercockpit), and per host its samples, time span, CPU, memory and GPU figures.",
    "id", "the job's id (column id of GET /api/v1/jobs)", job_params, {&fj_qt_job, &fj_qt_job_hosts}, "job",
    "raw_expired_before", 0, NULL};

static const fj_pspec profile_params[] = {
    P_CLUSTER,
    P_FROM("start of the window (default: the job's start)"),
    P_TO("end of the window (default: the job's end)"),
    P_HOST,
    P_BUCKET,
    {"by", FJ_PT_ENUM, "process (default): one series per host and process; host: one per host, processes summed",
     "process|host", false, 0, 0},
    P_FORMAT,
    P_END};
const fj_endpoint fj_ep_job_profile = {
    "/api/v1/jobs/{id}/profile", "A job's profile",
    "Time series of the job per host and process (pid, ppid, command): CPU, resident memory, GPU and "
    "GPU memory, averaged and maximal per bucket. JSON nests each series' buckets under points.",
    "id", "the job's id", profile_params, {&fj_qt_profile}, NULL, "from,to,bucket_s,raw_expired_before", 0, NULL};

/* --- load ------------------------------------------------------------------------------------ */

static const fj_pspec load_params[] = {
    P_CLUSTER,
    P_FROM("start of the window (default: to - 1 day)"),
    P_TO("end of the window (default: now)"),
    P_HOST,
    P_BUCKET,
    P_FORMAT,
    {"fields", FJ_PT_LIST,
     "the columns to answer, comma-separated; repeatable (default all); the node (and card) and time "
     "always come: cpu_util,mem_kb,gpu_util is what a grid needs",
     NULL, false, 0, 0},
    {"layout", FJ_PT_ENUM,
     "rows (default): an object per bucket; columns (JSON only, node and GPU load): per node (and "
     "card) an array per column with one value per bucket of the window, null where there is none, "
     "and no time column: slot k is the bucket that starts at floor(from / bucket_s) * bucket_s + k * "
     "bucket_s, up to the bucket holding to. The compact form of a grid: a thousand nodes' day in "
     "hours is numbers and commas, not a member name per value",
     "rows|columns", false, 0, 0},
    P_END};
const fj_endpoint fj_ep_load_nodes = {
    "/api/v1/load/nodes", "Node load",
    "Per node and bucket: CPU utilisation from the cumulative per-core counters (a decreasing counter "
    "counts as no use; an interval is credited to the bucket of its end), memory, load averages, and "
    "GPU utilisation, memory, power and temperature; average and maximum per bucket. JSON nests each "
    "node's buckets under points.",
    NULL, NULL, load_params, {&fj_qt_node_load}, NULL, "from,to,bucket_s,raw_expired_before", 0, NULL};
const fj_endpoint fj_ep_load_cluster = {
    "/api/v1/load/cluster", "Cluster load",
    "Per bucket over the cluster's nodes (or those host selects): busy cores, memory, GPU memory and "
    "power are sums of the nodes' averages, utilisation, load and temperature their means; the _max "
    "columns are the highest node.",
    NULL, NULL, load_params, {&fj_qt_cluster_load}, NULL, "from,to,bucket_s,raw_expired_before", 0, NULL};
const fj_endpoint fj_ep_load_gpus = {
    "/api/v1/load/gpus", "GPU load per card",
    "Per node, GPU card (index and UUID) and bucket: the card's utilisation, memory, power draw and "
    "temperature, average and maximum. A value a sample lacks is left out of that figure. JSON nests "
    "each card's buckets under points.",
    NULL, NULL, load_params, {&fj_qt_gpu_load}, NULL, "from,to,bucket_s,raw_expired_before", 0, NULL};

/* --- Slurm --------------------------------------------------------------------------------- */

static const fj_pspec slurm_jobs_params[] = {
    P_CLUSTER,
    P_FROM("jobs that ended at or after this time, or have not ended"),
    P_TO("jobs that started (or were submitted) at or before this time"),
    P_HOST,
    P_USER,
    P_JOB,
    P_STATE,
    P_PARTITION,
    P_ACCOUNT,
    {"array", FJ_PT_INTLIST, "array job ids; repeatable", NULL, false, 0, 0},
    {"het", FJ_PT_INTLIST, "heterogeneous job ids; repeatable", NULL, false, 0, 0},
    {"running", FJ_PT_BOOL, "true: pending or running states; false: the others", NULL, false, 0, 0},
    {"steps", FJ_PT_BOOL, "include job steps (default true)", NULL, false, 0, 0},
    {"order", FJ_PT_ENUM, "by job id: asc (default) or desc", "asc|desc", false, 0, 0},
    P_LIMIT("1000"),
    P_CURSOR,
    P_FORMAT,
    P_END};
const fj_endpoint fj_ep_slurm_jobs = {
    "/api/v1/slurm/jobs", "Slurm jobs",
    "Slurm jobs and steps as sacct shows them: per job and step the latest value of every field "
    "received. Paged by cursor.",
    NULL, NULL, slurm_jobs_params, {&fj_qt_slurm_jobs}, NULL, "raw_expired_before", FJ_EP_PAGED, NULL};

static const fj_pspec at_params[] = {
    P_CLUSTER,
    {"at", FJ_PT_TIME, "the latest cluster envelope at or before this time (default: the latest)", NULL, false, 0, 0},
    P_FORMAT,
    P_END};
const fj_endpoint fj_ep_slurm_partitions = {
    "/api/v1/slurm/partitions", "Slurm partitions",
    "The partitions of the latest cluster envelope (at or before at), with their nodes.",
    NULL, NULL, at_params, {&fj_qt_partitions}, NULL, NULL, 0, NULL};

static const fj_pspec node_states_params[] = {
    P_CLUSTER, P_HOST,
    {"at", FJ_PT_TIME, "the latest states at or before this time (default: the latest)", NULL, false, 0, 0},
    P_FORMAT, P_END};
const fj_endpoint fj_ep_slurm_nodes = {
    "/api/v1/slurm/nodes", "Slurm node states",
    "Per node, the states of the latest cluster envelope naming it (at or before at).",
    NULL, NULL, node_states_params, {&fj_qt_node_states}, NULL, NULL, 0, NULL};

/* --- uptime and errors --------------------------------------------------------------------- */

static const fj_pspec uptime_params[] = {
    P_CLUSTER,
    P_FROM("start of the window (default: to - 1 day)"),
    P_TO("end of the window (default: now)"),
    P_HOST,
    {"interval", FJ_PT_DURATION,
     "longest gap between two samples that still counts as up (default 15m; a little over the "
     "sampling interval)", NULL, false, 0, 0},
    P_FORMAT,
    P_END};
const fj_endpoint fj_ep_uptime = {
    "/api/v1/uptime", "Uptime",
    "Up and down intervals of each node (from gaps in its samples longer than interval; a node whose "
    "samples stopped is down from its last sample) and of each GPU card while its node is up (down "
    "when failing or missing from a sample). Time before a node's first sample is in no interval: it "
    "was not monitored then, which is neither up nor down (a node with no sample has no row).",
    NULL, NULL, uptime_params, {&fj_qt_uptime}, NULL, "from,to,interval_s", 0, NULL};

static const fj_pspec errors_params[] = {
    P_CLUSTER,
    P_FROM("oldest error"),
    P_TO("newest error"),
    P_HOST,
    {"source", FJ_PT_LIST, "envelope and/or sample", NULL, false, 0, 0},
    P_LIMIT("1000"),
    P_CURSOR,
    P_FORMAT,
    P_END};
const fj_endpoint fj_ep_errors = {
    "/api/v1/errors", "Error records",
    "Errors reported by Sonar, oldest first: envelopes that carried errors instead of data, and the "
    "soft errors of samples. Paged by cursor.",
    NULL, NULL, errors_params, {&fj_qt_errors}, NULL, "raw_expired_before", FJ_EP_PAGED, NULL};

const fj_endpoint fj_ep_openapi = {
    "/api/v1/openapi.json", "This document", "The OpenAPI 3 description of fjord's HTTP API.", NULL, NULL,
    none, {NULL}, NULL, NULL, FJ_EP_RAW | FJ_EP_NOAUTH, "application/json"};

const fj_endpoint fj_ep_health = {
    "/api/v1/health", "Health", "200 {\"status\":\"ok\",\"version\":...} while the server runs.", NULL, NULL,
    none, {NULL}, NULL, NULL, FJ_EP_RAW | FJ_EP_NOAUTH, "application/json"};

/* --- ingest (documented here, served by server/ingest_routes.c and measure_routes.c) -------- */

static const fj_endpoint ep_insert = {
    "/api/v1/insert/{topic}", "Insert one Sonar envelope",
    "What Sonar's HTTP sink and sonalyze's insert API send: one envelope; topic is sample, sysinfo, "
    "job or cluster (or <prefix>.<type>). See docs/ingest.md.",
    "topic", "sample, sysinfo, job, cluster, or <prefix>.<type>", none, {NULL}, NULL, NULL,
    FJ_EP_RAW | FJ_EP_EXTERNAL | FJ_EP_POST, "application/json"};
static const fj_endpoint ep_bulk = {
    "/api/v1/ingest/sonar", "Insert Sonar envelopes in bulk",
    "One or many envelopes of any kind; answers per envelope. See docs/ingest.md.", NULL, NULL, none, {NULL},
    NULL, NULL, FJ_EP_RAW | FJ_EP_EXTERNAL | FJ_EP_POST, "application/json"};
static const fj_endpoint ep_measurements_in = {
    "/api/v1/ingest/measurements", "Insert measurement snapshots",
    "NVIDIA aicr snapshots. See docs/measurements.md.", NULL, NULL, none, {NULL}, NULL, NULL,
    FJ_EP_RAW | FJ_EP_EXTERNAL | FJ_EP_POST, "application/json"};
static const fj_endpoint ep_ingest_any = {
    "/ingest", "Insert anything fjord reads",
    "Told apart by Content-Type and content. See docs/ingest.md.", NULL, NULL, none, {NULL}, NULL, NULL,
    FJ_EP_RAW | FJ_EP_EXTERNAL | FJ_EP_POST, "application/json"};

/* --- other modules' endpoints, documented here (parameters parsed by their handlers) --------- */

#define EXT(path, summary, doc, params, flags, resp)                                               \
    {path, summary, doc, NULL, NULL, params, {NULL}, NULL, NULL, FJ_EP_RAW | FJ_EP_EXTERNAL | (flags), resp}
#define EXTP(path, pp, ppdoc, summary, doc, params, flags, resp)                                   \
    {path, summary, doc, pp, ppdoc, params, {NULL}, NULL, NULL, FJ_EP_RAW | FJ_EP_EXTERNAL | (flags), resp}
#define S(name, doc) {name, FJ_PT_STRING, doc, NULL, false, 0, 0}
static const fj_pspec ccms_write_params[] = {S("cluster", "cluster of lines without a cluster tag"), P_END};
static const fj_pspec influx1_params[] = {S("db", "the cluster"), S("precision", "ns, u, ms, s, m or h"), P_END};
static const fj_pspec influx2_params[] = {S("org", "ignored"), S("bucket", "the cluster"),
                                          S("precision", "ns, us, ms or s"), P_END};
static const fj_pspec health_params[] = {S("cluster", "cluster name"), S("node", "node name"), P_END};
static const fj_pspec events_params[] = {S("cluster", "cluster name"), S("from", "oldest"), S("to", "newest"),
                                         S("kind", "event, log or control"), S("name", "measurement name"),
                                         S("host", "host"), S("limit", "most rows"), P_END};
static const fj_pspec chimbuko_in_params[] = {S("cluster", "cluster (default: the credential's)"),
                                              S("run", "run label"), P_END};
static const fj_endpoint ep_ccms_write =
    EXT("/api/write", "Line protocol (cc-metric-store)", "cc-metric-store's write path. See docs/metrics.md.",
        ccms_write_params, FJ_EP_POST | FJ_EP_TEXTBODY, "application/json");
static const fj_endpoint ep_influx1 =
    EXT("/write", "Line protocol (InfluxDB 1.x)", "InfluxDB 1.x's write path; 204. See docs/metrics.md.",
        influx1_params, FJ_EP_POST | FJ_EP_TEXTBODY, "application/json");
static const fj_endpoint ep_influx2 =
    EXT("/api/v2/write", "Line protocol (InfluxDB 2.x)", "InfluxDB 2.x's write path; 204. See docs/metrics.md.",
        influx2_params, FJ_EP_POST | FJ_EP_TEXTBODY, "application/json");
static const fj_endpoint ep_ccms_query = EXT("/api/query", "Metric query (cc-metric-store)",
                                             "cc-metric-store's query API. See docs/metrics.md.", none,
                                             FJ_EP_GETPOST, "application/json");
static const fj_endpoint ep_ccms_health = EXT("/api/healthcheck", "Node health (cc-metric-store)",
                                              "cc-metric-store's health check: a GET with cc-backend's JSON body "
                                              "{cluster, nodes, metric-names} answers each node's State and "
                                              "HealthMetrics; without a body, ?cluster=&node=. See docs/metrics.md.",
                                              health_params, 0, "application/json");
static const fj_pspec influxql_params[] = {
    S("q", "InfluxQL: one or more SELECT and SHOW statements separated by ';' (POST: also in a form body)"),
    S("db", "the database: a cluster"), S("epoch", "times as integers in ns, u, ms, s, m or h (default RFC 3339)"),
    S("u", "user (the credential's name), InfluxDB 1.x style"), S("p", "password (the secret)"),
    S("pretty", "ignored"), S("chunked", "ignored: the answer is one document"), P_END};
static const fj_endpoint ep_influxql =
    EXT("/query", "InfluxQL query (InfluxDB 1.x)",
        "InfluxDB 1.x's query API over the line-protocol metrics: SHOW DATABASES, MEASUREMENTS, TAG KEYS, TAG "
        "VALUES, FIELD KEYS, SERIES, RETENTION POLICIES and SELECT with aggregates, selectors, transformations, "
        "GROUP BY time and tags, fill, ORDER BY time DESC, LIMIT/SLIMIT. Answers "
        "{\"results\":[{\"statement_id\",\"series\":[{\"name\",\"tags\",\"columns\",\"values\"}]}]}; "
        "a statement's error is in its result, a request that cannot run is 400 {\"error\"}. "
        "See docs/metrics.md (InfluxQL).",
        influxql_params, FJ_EP_GETPOST, "application/json");
static const fj_endpoint ep_influx_ping =
    EXT("/ping", "InfluxDB ping",
        "204 with X-Influxdb-Version and X-Influxdb-Build, as InfluxDB 1.6.7 answers (also HEAD). No credential.",
        none, FJ_EP_NOAUTH | FJ_EP_HEAD, "application/json");
static const fj_endpoint ep_events =
    EXT("/api/v1/events", "ClusterCockpit events and logs",
        "Stored ClusterCockpit event, log and control messages. See docs/metrics.md.", events_params, 0,
        "application/json");
static const fj_pspec cc_jobs_params[] = {S("cluster", "cluster name"), S("from", "oldest"), S("to", "newest"),
                                          S("limit", "most rows"), P_END};
static const fj_endpoint ep_cc_jobs =
    EXT("/api/v1/cc/jobs", "ClusterCockpit jobs",
        "Jobs started and stopped through cc-backend's job API, joined with Sonar's Slurm jobs. See docs/metrics.md.",
        cc_jobs_params, 0, "application/json");
static const fj_endpoint ep_start_job =
    EXT("/api/jobs/start_job", "Job start (cc-backend)",
        "cc-backend's start_job: 201; 422 for a duplicate. See docs/metrics.md.", none, FJ_EP_POST,
        "application/json");
static const fj_endpoint ep_stop_job = EXT("/api/jobs/stop_job", "Job stop (cc-backend)",
                                           "cc-backend's stop_job: 200 with the job. See docs/metrics.md.", none,
                                           FJ_EP_POST, "application/json");
static const fj_endpoint ep_anomalydata =
    EXT("/api/anomalydata", "Chimbuko parameter-server packet",
        "One packet as Chimbuko's PSstatSender posts it. See docs/chimbuko.md.", chimbuko_in_params, FJ_EP_POST,
        "application/json");
static const fj_endpoint ep_chimbuko_in =
    EXTP("/api/v1/ingest/chimbuko/{collection}", "collection",
         "anomalies, normalexecs, metadata, func_stats or counter_stats", "Chimbuko provenance records",
         "Provenance records, one or many per request. See docs/chimbuko.md.", chimbuko_in_params, FJ_EP_POST,
         "application/json");

/* --- the web dashboard (server/dashboard.c; docs/dashboard.md) ------------------------------ */
static const fj_endpoint ep_dashboard =
    EXT("/", "Web dashboard", "The dashboard's page (HTML). No credential; it asks for one. See docs/dashboard.md.",
        none, FJ_EP_NOAUTH, "text/html");
static const fj_endpoint ep_dashboard_files =
    EXTP("/ui/{path}", "path", "assets/NAME (a hashed bundle file, cached as immutable), another bundle file, "
         "or a view's address (answered with the page)", "Web dashboard files",
         "The dashboard's bundle and views. No credential. See docs/dashboard.md.", none, FJ_EP_NOAUTH,
         "text/html");

/* --- Prometheus (server/prom.c; docs/deploy.md "Watch it") ---------------------------------- */
static const fj_endpoint ep_prom_metrics =
    EXT("/metrics", "Metrics for Prometheus",
        "fjord's figures in Prometheus's text exposition format 0.0.4: requests, envelopes and points "
        "accepted and refused, authentication failures, the write queue, group commits, the database, the "
        "process. Needs a credential that reads every cluster, or the metrics-token setting as a Bearer "
        "token; an upload credential gets 403. See docs/deploy.md.",
        none, 0, "text/plain");

const fj_endpoint *const fj_endpoints[] = {
    &fj_ep_clusters,     &fj_ep_nodes,        &fj_ep_node_sysinfo,     &fj_ep_node_topology,
    &fj_ep_node_measurements, &fj_ep_jobs,    &fj_ep_job,              &fj_ep_job_profile,
    &fj_ep_load_nodes,   &fj_ep_load_cluster, &fj_ep_load_gpus,        &fj_ep_slurm_jobs,       &fj_ep_slurm_partitions,
    &fj_ep_slurm_nodes,  &fj_ep_uptime,       &fj_ep_errors,           &fj_ep_openapi,
    &fj_ep_health,       &ep_insert,          &ep_bulk,                &ep_measurements_in,
    &ep_ingest_any,      &ep_ccms_write,      &ep_influx1,             &ep_influx2,
    &ep_ccms_query,      &ep_ccms_health,     &ep_influxql,            &ep_influx_ping,
    &ep_events,              &ep_start_job,
    &ep_stop_job,        &ep_cc_jobs,         &ep_anomalydata,         &ep_chimbuko_in,
    &ep_dashboard,       &ep_dashboard_files, &ep_prom_metrics,
    NULL,
};

void fj_endpoints_each(void (*fn)(const fj_endpoint *e, void *ctx), void *ctx)
{
    const fj_endpoint *const *lists[] = {fj_endpoints,          fj_problems_endpoints, fj_account_usage_endpoints,
                                          fj_metrics_catalog_endpoints, fj_chimbuko_endpoints, fj_sss_endpoints};
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
        for (size_t i = 0; lists[l][i]; i++)
            fn(lists[l][i], ctx);
}

/* --- OpenAPI ------------------------------------------------------------------------------- */

typedef struct w {
    fj_buf *b;
    fj_status st;
} w;

static void put(w *o, const char *s)
{
    if (o->st == FJ_OK)
        o->st = fj_buf_puts(o->b, s);
}

static void str(w *o, const char *s)
{
    if (o->st == FJ_OK)
        o->st = fj_buf_json_str(o->b, s);
}

static void key(w *o, const char *k)
{
    str(o, k);
    put(o, ":");
}

static void col_schema(w *o, const fj_qcol *c)
{
    switch (c->type) {
    case FJ_VT_INT: put(o, "{\"type\":\"integer\""); break;
    case FJ_VT_REAL: put(o, "{\"type\":\"number\""); break;
    case FJ_VT_BOOL: put(o, "{\"type\":\"boolean\""); break;
    case FJ_VT_TIME: put(o, "{\"type\":\"string\",\"format\":\"date-time\""); break;
    case FJ_VT_LIST: put(o, "{\"type\":\"array\",\"items\":{\"type\":\"string\"}"); break;
    case FJ_VT_JSON: put(o, "{\"oneOf\":[{\"type\":\"array\",\"items\":{}},{\"type\":\"object\"}]"); break;
    default: put(o, "{\"type\":\"string\""); break;
    }
    put(o, ",\"nullable\":true,\"description\":");
    str(o, c->doc);
    put(o, "}");
}

static void cols_object(w *o, const fj_qtable *t, size_t from, size_t to, bool points)
{
    put(o, "{\"type\":\"object\",\"properties\":{");
    for (size_t i = from; i < to; i++) {
        if (i > from)
            put(o, ",");
        key(o, t->cols[i].name);
        col_schema(o, &t->cols[i]);
    }
    if (points) {
        put(o, ",\"points\":{\"type\":\"array\",\"items\":");
        cols_object(o, t, t->n_key, t->n_cols, false);
        put(o, "}");
    }
    put(o, "}}");
}

static void row_schema(w *o, const fj_qtable *t)
{
    if (t->n_key)
        cols_object(o, t, 0, t->n_key, true);
    else
        cols_object(o, t, 0, t->n_cols, false);
}

static void param_schema(w *o, const fj_pspec *p)
{
    switch (p->type) {
    case FJ_PT_INT:
        put(o, "{\"type\":\"integer\"");
        if (p->min < p->max && o->st == FJ_OK)
            o->st = fj_buf_printf(o->b, ",\"minimum\":%lld,\"maximum\":%lld", (long long)p->min, (long long)p->max);
        put(o, "}");
        break;
    case FJ_PT_NUMBER: put(o, "{\"type\":\"number\"}"); break;
    case FJ_PT_BOOL: put(o, "{\"type\":\"boolean\"}"); break;
    case FJ_PT_ENUM: {
        put(o, "{\"type\":\"string\",\"enum\":[");
        const char *s = p->values;
        for (int i = 0; s; i++) {
            const char *bar = strchr(s, '|');
            size_t len = bar ? (size_t)(bar - s) : strlen(s);
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%.*s", (int)len, s);
            if (i)
                put(o, ",");
            str(o, tmp);
            s = bar ? bar + 1 : NULL;
        }
        put(o, "]}");
        break;
    }
    case FJ_PT_LIST: put(o, "{\"type\":\"array\",\"items\":{\"type\":\"string\"}}"); break;
    case FJ_PT_INTLIST: put(o, "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}"); break;
    default: put(o, "{\"type\":\"string\"}"); break;
    }
}

static void parameters(w *o, const fj_endpoint *e)
{
    put(o, "\"parameters\":[");
    int n = 0;
    if (e->path_param) {
        put(o, "{\"name\":");
        str(o, e->path_param);
        put(o, ",\"in\":\"path\",\"required\":true,\"description\":");
        str(o, e->path_doc ? e->path_doc : "");
        put(o, strcmp(e->path_param, "id") == 0 ? ",\"schema\":{\"type\":\"integer\"}}" : ",\"schema\":{\"type\":\"string\"}}");
        n++;
    }
    for (const fj_pspec *p = e->params; p && p->name; p++, n++) {
        if (n)
            put(o, ",");
        put(o, "{\"name\":");
        str(o, p->name);
        put(o, ",\"in\":\"query\",\"required\":");
        put(o, p->required ? "true" : "false");
        put(o, ",\"description\":");
        str(o, p->doc);
        if (p->type == FJ_PT_LIST || p->type == FJ_PT_INTLIST)
            put(o, ",\"style\":\"form\",\"explode\":false");
        put(o, ",\"schema\":");
        param_schema(o, p);
        put(o, "}");
    }
    put(o, "]");
}

static void ok_response(w *o, const fj_endpoint *e)
{
    put(o, "\"200\":{\"description\":\"OK\",\"content\":{");
    if (e->flags & FJ_EP_RAW) {
        const char *s = e->raw_types;
        for (int i = 0; s; i++) {
            const char *comma = strchr(s, ',');
            size_t len = comma ? (size_t)(comma - s) : strlen(s);
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%.*s", (int)len, s);
            if (i)
                put(o, ",");
            key(o, tmp);
            put(o, strcmp(tmp, "application/json") == 0 ? "{\"schema\":{\"type\":\"object\"}}"
                                                         : "{\"schema\":{\"type\":\"string\"}}");
            s = comma ? comma + 1 : NULL;
        }
        put(o, "}}");
        return;
    }
    put(o, "\"application/json\":{\"schema\":{\"type\":\"object\",\"properties\":{");
    int n = 0;
    if (e->meta) {
        const char *s = e->meta;
        while (s) {
            const char *comma = strchr(s, ',');
            size_t len = comma ? (size_t)(comma - s) : strlen(s);
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%.*s", (int)len, s);
            if (n++)
                put(o, ",");
            key(o, tmp);
            if (strcmp(tmp, "raw_expired_before") == 0)
                put(o, "{\"type\":\"string\",\"format\":\"date-time\",\"nullable\":true,\"description\":"
                       "\"retention deleted the raw rows (processes, node samples, errors or Slurm records) "
                       "before this time, and the window starts before it: figures made from them are absent "
                       "there, summaries remain; null when nothing in the window expired\"}");
            else
                put(o, len > 2 && strcmp(tmp + len - 2, "_s") == 0 ? "{\"type\":\"integer\"}"
                                                                   : "{\"type\":\"string\",\"format\":\"date-time\"}");
            s = comma ? comma + 1 : NULL;
        }
    }
    for (int i = 0; i < 3 && e->tables[i]; i++) {
        if (n++)
            put(o, ",");
        if (i == 0 && e->single) {
            key(o, e->single);
            row_schema(o, e->tables[i]);
        } else {
            key(o, e->tables[i]->name);
            put(o, "{\"type\":\"array\",\"items\":");
            row_schema(o, e->tables[i]);
            put(o, "}");
        }
    }
    if (e->flags & FJ_EP_PAGED) {
        if (n++)
            put(o, ",");
        put(o, "\"next\":{\"type\":\"string\",\"nullable\":true,\"description\":\"cursor of the next page; "
               "null on the last\"}");
    }
    put(o, "}}},\"text/csv\":{\"schema\":{\"type\":\"string\"}}}}");
}

static const char *const errors[][2] = {
    {"400", "a bad parameter (error.path names it) or body"},
    {"401", "no credential or a wrong one"},
    {"403", "the credential may not read this cluster"},
    {"404", "no such cluster, node or job"},
    {"503", "busy or shutting down; retry after Retry-After"},
};

static void operation(w *o, const fj_endpoint *e)
{
    put(o, "{\"summary\":");
    str(o, e->summary);
    put(o, ",\"description\":");
    str(o, e->doc);
    put(o, ",");
    parameters(o, e);
    if (e->flags & (FJ_EP_POST | FJ_EP_GETPOST)) {
        put(o, ",\"requestBody\":{\"required\":");
        put(o, (e->flags & FJ_EP_GETPOST) ? "false" : "true");
        put(o, (e->flags & FJ_EP_TEXTBODY) ? ",\"content\":{\"text/plain\":{\"schema\":{\"type\":\"string\"}}}}"
                                           : ",\"content\":{\"application/json\":{\"schema\":{\"type\":\"object\"}}}}");
    }
    /* parameters parsed by params.c: any other is refused with 400 */
    if (!(e->flags & FJ_EP_EXTERNAL))
        put(o, ",\"x-fjord-strict-parameters\":true");
    if (e->flags & FJ_EP_NOAUTH)
        put(o, ",\"security\":[]");
    put(o, ",\"responses\":{");
    ok_response(o, e);
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        if ((e->flags & FJ_EP_NOAUTH) && (!strcmp(errors[i][0], "401") || !strcmp(errors[i][0], "403")))
            continue; /* cannot happen without credentials */
        put(o, ",");
        key(o, errors[i][0]);
        put(o, "{\"description\":");
        str(o, errors[i][1]);
        put(o, ",\"content\":{\"application/json\":{\"schema\":{\"$ref\":\"#/components/schemas/Error\"}}}}");
    }
    put(o, "}}");
}

static void path_item(const fj_endpoint *e, void *ctx)
{
    w *o = ctx;
    if (o->b->len && o->b->data[o->b->len - 1] != '{')
        put(o, ",");
    key(o, e->path);
    if (e->flags & FJ_EP_GETPOST) {
        put(o, "{\"get\":");
        operation(o, e);
        put(o, ",\"post\":");
        operation(o, e);
    } else {
        put(o, (e->flags & FJ_EP_POST) ? "{\"post\":" : "{\"get\":");
        operation(o, e);
        if (e->flags & FJ_EP_HEAD) {
            put(o, ",\"head\":");
            operation(o, e);
        }
    }
    put(o, "}");
}

fj_status fj_openapi_write(fj_buf *out)
{
    w o = {out, FJ_OK};
    put(&o, "{\"openapi\":\"3.0.3\",\"info\":{\"title\":\"fjord\",\"version\":");
    str(&o, FJ_VERSION);
    put(&o, ",\"description\":");
    str(&o, "fjord's HTTP API: ingest of Sonar data and the analysts' queries. Queries answer JSON, or "
            "CSV with format=csv or Accept: text/csv. Times are RFC 3339 in answers; parameters take RFC "
            "3339 or epoch seconds. Errors have one shape: {\"error\":{\"code\",\"message\",\"path\"}}, "
            "path naming the bad parameter. See docs/api.md.");
    put(&o, "},\"security\":[{\"basic\":[]},{\"bearer\":[]}],\"components\":{\"securitySchemes\":{"
            "\"basic\":{\"type\":\"http\",\"scheme\":\"basic\",\"description\":\"user: the cluster; password: "
            "the secret\"},\"bearer\":{\"type\":\"http\",\"scheme\":\"bearer\"}},\"schemas\":{\"Error\":{"
            "\"type\":\"object\",\"properties\":{\"error\":{\"type\":\"object\",\"properties\":{"
            "\"code\":{\"type\":\"string\"},\"message\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"}},"
            "\"required\":[\"code\",\"message\"]}}}}},\"paths\":{");
    fj_endpoints_each(path_item, &o);
    put(&o, "}}\n");
    return o.st;
}
