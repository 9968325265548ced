/* test_cc.c — ClusterCockpit message classification, job payload parsing and line-protocol bodies
 * into records (ingest/cc.h): series keys, units, clusters, Telegraf lines, bad lines. */
#include "alloc.h"
#include "arena.h"
#include "ingest/cc.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

static fj_arena *A;
static fj_lp_parser *P;

static void setup(void)
{
    A = fj_arena_create();
    P = fj_lp_parser_create(NULL, 0);
    cr_assert(A && P);
}

static void teardown(void)
{
    fj_lp_parser_destroy(P);
    fj_arena_destroy(A);
}

TestSuite(cc, .init = setup, .fini = teardown);

static fj_lp_line one(const char *text)
{
    fj_lp_line l;
    fj_lp_reset(P, text, strlen(text));
    cr_assert_eq(fj_lp_next(P, &l, NULL), FJ_OK, "parse %s", text);
    return l;
}

static fj_cc_class cls(const char *text, size_t *field)
{
    fj_lp_line l = one(text);
    return fj_cc_classify(&l, field);
}

Test(cc, classify_by_field_key)
{
    size_t f = 99;
    cr_expect_eq(cls("cpu_load,hostname=n1,type=node value=1.5 1700000000", &f), FJ_CC_METRIC);
    cr_expect_eq(f, 0);
    cr_expect_eq(cls("job,function=start_job event=\"{}\" 1", &f), FJ_CC_EVENT);
    cr_expect_eq(cls("ccb,hostname=s1,loglevel=info log=\"archiving finished\" 1", NULL), FJ_CC_LOG);
    cr_expect_eq(cls("rapl,hostname=e1,type=socket,type-id=2,method=GET control=\"intel.pkg\" 1", NULL), FJ_CC_CONTROL);
    cr_expect_eq(cls("cpu,host=n1,cpu=cpu0 usage_user=3,usage_system=1 1", NULL), FJ_CC_GENERIC);
    /* a string `value` is not a metric; `event` wins over `value` */
    cr_expect_eq(cls("m value=\"x\" 1", NULL), FJ_CC_GENERIC);
    cr_expect_eq(cls("m value=1,event=\"e\" 1", &f), FJ_CC_EVENT);
    cr_expect_eq(f, 1);
    /* integer and unsigned values are metrics too */
    cr_expect_eq(cls("m value=3i 1", NULL), FJ_CC_METRIC);
    cr_expect_eq(cls("m value=3u 1", NULL), FJ_CC_METRIC);
}

/* ClusterCockpit's metric lines are told by their `type`, one of its scopes; any other `value` line
 * is plain InfluxDB line protocol (collectd through Telegraf, InfluxDB's own examples). */
Test(cc, classify_value_lines_by_clustercockpit_type)
{
    static const char *const cc[] = {
        "cpu_load,hostname=n1,type=node value=1 1",
        "flops_any,hostname=e1208,type=core,type-id=23 value=1203.3 1",
        "x,type=socket,type-id=0 value=1 1", "x,type=die,type-id=0 value=1 1",
        "x,type=memoryDomain,type-id=0 value=1 1", "x,type=llc,type-id=0 value=1 1",
        "x,type=hwthread,type-id=0 value=1 1", "x,type=accelerator,type-id=00000000:3B:00.0 value=1 1",
        /* ClusterCockpit's type with tags of its own beyond the key (cc-metric-collector's meta) */
        "mem_used,hostname=n1,type=node,unit=GB value=1 1",
        /* no type, and only tags ClusterCockpit gives a meaning to: as before */
        "m value=1 1", "m,hostname=n1 value=1 1", "m,host=n1,cluster=c value=1 1",
        "m,hostname=n1,stype=disk,stype-id=sda value=1 1",
    };
    static const char *const plain[] = {
        "cpu_value,host=c01,instance=0,type=cpu,type_instance=user value=42 1",
        "load_shortterm,host=c01,type=load value=0.5 1",
        "x,type=Node value=1 1", /* case matters */
        "x,type=gpu,type-id=0 value=1 1",
        "cpu_load_short,host=server01,region=us-west value=0.64 1",
    };
    for (size_t i = 0; i < sizeof cc / sizeof *cc; i++)
        cr_expect_eq(cls(cc[i], NULL), FJ_CC_METRIC, "%s", cc[i]);
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        cr_expect_eq(cls(plain[i], NULL), FJ_CC_GENERIC, "%s", plain[i]);
}

Test(cc, job_event_forms)
{
    fj_lp_line l = one("job,function=start_job event=\"{}\" 1");
    cr_expect_eq(fj_cc_job_event_op(&l), FJ_CC_JOB_START);
    l = one("job,function=stop_job event=\"{}\" 1");
    cr_expect_eq(fj_cc_job_event_op(&l), FJ_CC_JOB_STOP);
    l = one("start_job event=\"{}\" 1");
    cr_expect_eq(fj_cc_job_event_op(&l), FJ_CC_JOB_START);
    l = one("stop_job,hostname=m event=\"{}\" 1");
    cr_expect_eq(fj_cc_job_event_op(&l), FJ_CC_JOB_STOP);
    l = one("job,function=other event=\"{}\" 1");
    cr_expect_eq(fj_cc_job_event_op(&l), -1);
    l = one("slurm event=\"{}\" 1");
    cr_expect_eq(fj_cc_job_event_op(&l), -1);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "open %s", path);
    static char buf[1 << 20];
    *len = fread(buf, 1, sizeof buf - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

Test(cc, job_start_payload_of_cc_backend)
{
    size_t len;
    char *json = slurp(FJ_SHARED_DIR "/data/cc/cc-backend_startJobPayload.json", &len);
    fj_cc_job j;
    fj_err err = {0};
    cr_assert_eq(fj_cc_job_parse(A, FJ_CC_JOB_START, json, len, NULL, &j, &err), FJ_OK, "%s at %s", err.message,
                 err.path);
    cr_expect_str_eq(j.cluster, "fritz");
    cr_expect_eq(j.job_id, 123000);
    cr_expect_eq(j.start_time, 1649723812);
    cr_expect_str_eq(j.user, "k106eb10");
    cr_expect_str_eq(j.project, "k106eb");
    cr_expect_str_eq(j.partition, "main");
    cr_expect_str_eq(j.subcluster, "main");
    cr_expect_eq(j.num_nodes, 1);
    cr_expect_eq(j.num_hwthreads, 72);
    cr_expect_str_eq(j.hosts, "[\"f0726\"]");
    cr_expect_str_eq(j.state, "running");
}

Test(cc, job_stop_payload_of_cc_backend)
{
    size_t len;
    char *json = slurp(FJ_SHARED_DIR "/data/cc/cc-backend_stopJobPayload.json", &len);
    fj_cc_job j;
    fj_err err = {0};
    cr_assert_eq(fj_cc_job_parse(A, FJ_CC_JOB_STOP, json, len, NULL, &j, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(j.job_id, 123000);
    cr_expect_eq(j.start_time, 1649723812);
    cr_expect_eq(j.stop_time, 1649763839);
    cr_expect_str_eq(j.state, "completed");
}

Test(cc, job_payload_errors_name_the_field)
{
    static const struct {
        fj_cc_job_op op;
        const char *json, *path;
    } bad[] = {
        {FJ_CC_JOB_START, "{\"cluster\":\"c\",\"startTime\":1,\"user\":\"u\",\"resources\":[{\"hostname\":\"h\"}]}", "jobId"},
        {FJ_CC_JOB_START, "{\"jobId\":1,\"startTime\":1,\"user\":\"u\",\"resources\":[{\"hostname\":\"h\"}]}", "cluster"},
        {FJ_CC_JOB_START, "{\"jobId\":1,\"cluster\":\"c\",\"user\":\"u\",\"resources\":[{\"hostname\":\"h\"}]}", "startTime"},
        {FJ_CC_JOB_START, "{\"jobId\":1,\"cluster\":\"c\",\"startTime\":1,\"resources\":[{\"hostname\":\"h\"}]}", "user"},
        {FJ_CC_JOB_START, "{\"jobId\":1,\"cluster\":\"c\",\"startTime\":1,\"user\":\"u\",\"resources\":[]}", "resources"},
        {FJ_CC_JOB_START, "{\"jobId\":1,\"cluster\":\"c\",\"startTime\":1,\"user\":\"u\",\"resources\":[{}]}",
         "resources[0].hostname"},
        {FJ_CC_JOB_START, "{\"jobId\":-1,\"cluster\":\"c\",\"startTime\":1,\"user\":\"u\",\"resources\":[{\"hostname\":\"h\"}]}", "jobId"},
        /* past 2^63-1: refused, not stored as -1 */
        {FJ_CC_JOB_START, "{\"jobId\":18446744073709551615,\"cluster\":\"c\",\"startTime\":1,\"user\":\"u\",\"resources\":[{\"hostname\":\"h\"}]}", "jobId"},
        {FJ_CC_JOB_START, "{\"jobId\":1,\"cluster\":\"c\",\"startTime\":1,\"user\":\"u\",\"numNodes\":9223372036854775808,\"resources\":[{\"hostname\":\"h\"}]}", "numNodes"},
        {FJ_CC_JOB_STOP, "{\"jobId\":9223372036854775808,\"cluster\":\"c\",\"stopTime\":5}", "jobId"},
        {FJ_CC_JOB_STOP, "{\"jobId\":1,\"cluster\":\"c\"}", "stopTime"},
        {FJ_CC_JOB_STOP, "{\"jobId\":1,\"cluster\":\"c\",\"stopTime\":5,\"jobState\":\"exploded\"}", "jobState"},
        {FJ_CC_JOB_STOP, "[1]", "body"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fj_cc_job j;
        fj_err err = {0};
        cr_expect_eq(fj_cc_job_parse(A, bad[i].op, bad[i].json, strlen(bad[i].json), NULL, &j, &err), FJ_EINVAL,
                     "case %zu", i);
        cr_expect_str_eq(err.path, bad[i].path, "case %zu: %s", i, err.message);
    }
    /* a stop may leave the cluster to the caller's default */
    fj_cc_job j;
    cr_expect_eq(fj_cc_job_parse(A, FJ_CC_JOB_STOP, "{\"jobId\":7,\"stopTime\":9}", 24, "dflt", &j, NULL), FJ_OK);
    cr_expect_str_eq(j.cluster, "dflt");
    cr_expect(fj_cc_job_state_valid("timeout"));
    cr_expect(!fj_cc_job_state_valid("TIMEOUT"));
}

/* --- decoding ----------------------------------------------------------------------------------- */

typedef struct bads {
    size_t n, line[16], col[16];
    char why[16][128];
} bads;

static void on_bad(void *ud, size_t line, size_t col, const char *why)
{
    bads *b = ud;
    if (b->n < 16) {
        b->line[b->n] = line;
        b->col[b->n] = col;
        snprintf(b->why[b->n], sizeof b->why[b->n], "%s", why);
    }
    b->n++;
}

static bool eq(fj_mstr m, const char *s)
{
    return m.n == strlen(s) && (!m.n || !memcmp(m.p, s, m.n));
}

static fj_metrics *decode(fj_batch *b, const char *body, const fj_cc_opts *o, bads *bd, size_t *good)
{
    cr_assert_eq(fj_cc_decode(body, strlen(body), o, b, bd ? on_bad : NULL, bd, good, NULL), FJ_OK);
    cr_assert_eq(b->n_envs, 1);
    cr_assert_eq(b->envs[0].kind, FJ_KIND_METRICS);
    return &b->envs[0].u.metrics;
}

Test(cc, metric_keys_units_and_clusters)
{
    fj_batch *b = fj_batch_new();
    bads bd = {0};
    size_t good;
    fj_cc_opts o = {.default_cluster = "fritz", .arrival_ns = 1700000000123456789LL, .keep_raw = true};
    const char *body = "cpu_load,hostname=f01,type=node,type-id=0 value=13.4 1700000040\n"
                       "cpu_user,hostname=f01,type=hwthread,type-id=5 value=2 1700000040000\n"
                       "mem_bw,cluster=alex,hostname=a1,type=socket,type-id=1,stype=mc,stype-id=3 value=7i 1700000040000000\n"
                       "ipc,host=f02 value=1.25 1700000040000000000\n"
                       "clock,hostname=f01,type=core value=1 1\n"
                       "nots,hostname=f01 value=4\n";
    fj_metrics *m = decode(b, body, &o, &bd, &good);
    cr_expect_eq(good, 5);
    cr_assert_eq(bd.n, 1);
    cr_expect_eq(bd.line[0], 5);
    cr_expect(strstr(bd.why[0], "type-id") != NULL, "%s", bd.why[0]);
    cr_assert_eq(m->n_points, 5);
    fj_metric_point *p = m->points;
    cr_expect(eq(p[0].cluster, "fritz") && eq(p[0].host, "f01") && eq(p[0].metric, "cpu_load"));
    cr_expect(eq(p[0].type, "node") && eq(p[0].type_id, ""), "node has no type-id");
    cr_expect_eq(p[0].t, 1700000040LL * 1000000000);
    cr_expect_eq(p[1].t, 1700000040LL * 1000000000, "milliseconds inferred");
    cr_expect(eq(p[1].type, "hwthread") && eq(p[1].type_id, "5"));
    cr_expect(eq(p[2].cluster, "alex") && eq(p[2].stype, "mc") && eq(p[2].stype_id, "3"));
    cr_expect_eq(p[2].v, 7.0);
    cr_expect_eq(p[2].t, 1700000040LL * 1000000000, "microseconds inferred");
    cr_expect(eq(p[3].host, "f02"), "host tag when there is no hostname");
    cr_expect_eq(p[3].t, 1700000040LL * 1000000000);
    cr_expect_eq(p[4].t, 1700000000LL * 1000000000, "no timestamp: arrival truncated to seconds");
    cr_expect_eq(m->n_clusters, 2);
    cr_expect_str_eq(m->clusters[0], "fritz");
    cr_expect_str_eq(m->clusters[1], "alex");
    cr_expect_eq(m->raw_len, strlen(body));
    cr_expect_eq(memcmp(m->raw, body, m->raw_len), 0);
    fj_batch_free(b);
}

Test(cc, explicit_precision_and_future_and_no_cluster)
{
    fj_batch *b = fj_batch_new();
    bads bd = {0};
    size_t good;
    int64_t now = 1700000000LL * 1000000000;
    fj_cc_opts o = {.unit_ns = 1000000000, .arrival_ns = now, .max_future_ns = 3600LL * 1000000000};
    fj_metrics *m = decode(b,
                           "a,cluster=c value=1 1700000000\n"
                           "a,cluster=c value=1 1700007201\n" /* two hours ahead */
                           "a value=1 1700000000\n"           /* no cluster anywhere */
                           "a,cluster=c value=1 9223372036854775807\n",
                           &o, &bd, &good);
    cr_expect_eq(good, 1);
    cr_expect_eq(m->n_points, 1);
    cr_assert_eq(bd.n, 3);
    cr_expect(strstr(bd.why[0], "future") != NULL);
    cr_expect(strstr(bd.why[1], "cluster") != NULL);
    cr_expect(strstr(bd.why[2], "range") != NULL);
    fj_batch_free(b);
}

/* collectd's lines through Telegraf's collectd input: stored, every tag kept, `type` a tag */
Test(cc, collectd_lines_are_plain_influxdb)
{
    fj_batch *b = fj_batch_new();
    bads bd = {0};
    size_t good;
    fj_cc_opts o = {.default_cluster = "t", .unit_ns = 1};
    fj_metrics *m = decode(b,
                           "cpu_value,host=c01,instance=0,type=cpu,type_instance=user value=42 1000\n"
                           "x,host=c01,type=socket v=1 1000\n"          /* a plain line's scope without type-id: a tag */
                           "y,host=c01,type-id=3 v=1 1000\n"            /* type-id without a type: a tag */
                           "z,host=c01,hostname=h2,type=hwthread,type-id=4 v=1 1000\n",
                           &o, &bd, &good);
    cr_expect_eq(bd.n, 0, "%s", bd.why[0]);
    cr_expect_eq(good, 4);
    cr_assert_eq(m->n_points, 4);
    fj_metric_point *p = m->points;
    cr_expect(eq(p[0].metric, "cpu_value.value") && eq(p[0].host, "c01") && eq(p[0].type, "node") &&
              eq(p[0].type_id, ""));
    cr_expect(eq(p[0].stype, "instance,type,type_instance") && eq(p[0].stype_id, "0,cpu,user"));
    cr_expect_eq(p[0].v, 42.0);
    cr_expect(eq(p[1].metric, "x.v") && eq(p[1].type, "node") && eq(p[1].stype, "type") &&
              eq(p[1].stype_id, "socket"));
    cr_expect(eq(p[2].type_id, "") && eq(p[2].stype, "type-id") && eq(p[2].stype_id, "3"));
    /* ClusterCockpit's topology on a plain line stays in the key, as before; both host tags kept */
    cr_expect(eq(p[3].type, "hwthread") && eq(p[3].type_id, "4") && eq(p[3].host, "c01") &&
              eq(p[3].stype, "hostname") && eq(p[3].stype_id, "h2"));
    fj_batch_free(b);
}

Test(cc, telegraf_lines_become_measurement_dot_field)
{
    fj_batch *b = fj_batch_new();
    bads bd = {0};
    size_t good;
    fj_cc_opts o = {.default_cluster = "t", .unit_ns = 1};
    fj_metrics *m = decode(b,
                           "cpu,host=n1,cpu=cpu0 usage_user=3.5,usage_system=1i,note=\"x\",up=true 1000\n"
                           "disk,path=/home,host=n1,device=sda1 free=10u 1000\n"
                           "only_strings,host=n1 s=\"a\" 1000\n",
                           &o, &bd, &good);
    cr_expect_eq(bd.n, 0);
    cr_expect_eq(good, 3);
    cr_assert_eq(m->n_points, 6, "every field a point, strings too");
    cr_expect(eq(m->points[0].metric, "cpu.usage_user") && eq(m->points[0].stype, "cpu") &&
              eq(m->points[0].stype_id, "cpu0") && eq(m->points[0].type, "node"));
    cr_expect(m->points[0].ftype == FJ_FT_FLOAT && m->points[0].v == 3.5 && m->points[0].line == 1);
    cr_expect(eq(m->points[1].metric, "cpu.usage_system") && m->points[1].v == 1.0 &&
              m->points[1].ftype == FJ_FT_INTEGER);
    cr_expect(eq(m->points[2].metric, "cpu.note") && m->points[2].ftype == FJ_FT_STRING && eq(fj_metric_string(m, &m->points[2]), "x"));
    cr_expect(eq(m->points[3].metric, "cpu.up") && m->points[3].v == 1.0 && m->points[3].ftype == FJ_FT_BOOLEAN);
    cr_expect(eq(m->points[4].metric, "disk.free") && eq(m->points[4].stype, "device,path") &&
              eq(m->points[4].stype_id, "sda1,/home") && m->points[4].ftype == FJ_FT_INTEGER && m->points[4].v == 10,
              "other tags sorted by key; unsigned integers are integers");
    cr_expect(eq(m->points[5].metric, "only_strings.s") && eq(fj_metric_string(m, &m->points[5]), "a") && m->points[5].line == 3);
    fj_batch_free(b);
}

Test(cc, string_fields_unescaped_and_metric_values_float)
{
    fj_batch *b = fj_batch_new();
    bads bd = {0};
    size_t good;
    fj_cc_opts o = {.default_cluster = "t", .unit_ns = 1};
    fj_metrics *m = decode(b,
                           "syslog,host=n1 message=\"a \\\"q\\\" b\",empty=\"\" 1000\n"
                           "cpu_load,hostname=n1,type=node value=5i 1000\n",
                           &o, &bd, &good);
    cr_expect_eq(bd.n, 0);
    cr_assert_eq(m->n_points, 3);
    cr_expect(eq(fj_metric_string(m, &m->points[0]), "a \"q\" b") && m->points[0].ftype == FJ_FT_STRING);
    cr_expect(fj_metric_string(m, &m->points[1]).n == 0 && m->points[1].ftype == FJ_FT_STRING, "the empty string is a value");
    cr_expect(eq(m->points[2].metric, "cpu_load") && m->points[2].ftype == FJ_FT_FLOAT && m->points[2].v == 5,
              "a ClusterCockpit metric is a float, as cc-metric-store keeps it");
    fj_batch_free(b);
}

Test(cc, events_logs_controls_and_jobs)
{
    fj_batch *b = fj_batch_new();
    bads bd = {0};
    size_t good;
    fj_cc_opts o = {.default_cluster = "ccfront"};
    fj_metrics *m = decode(
        b,
        "job,hostname=mngmt02,type=node,function=start_job event=\"{\\\"jobId\\\":69,\\\"cluster\\\":\\\"ccfront\\\","
        "\\\"startTime\\\":1738800000,\\\"user\\\":\\\"u\\\",\\\"resources\\\":[{\\\"hostname\\\":\\\"n1\\\"}]}\" 1740027951\n"
        "stop_job event=\"{\\\"jobId\\\": 69, \\\"cluster\\\": \\\"ccfront\\\", \\\"stopTime\\\": 1738842306, "
        "\\\"jobState\\\": \\\"completed\\\"}\" 1740027952\n"
        "ccb,hostname=server01,type=node,type-id=1,loglevel=info log=\"archiving finished\" 1740027951\n"
        "rapl,hostname=e1208,type=socket,type-id=2,method=GET control=\"intel.pkg.energy_status\" 1740027951\n"
        "job,function=start_job event=\"{not json\" 1740027951\n",
        &o, &bd, &good);
    cr_expect_eq(good, 4);
    cr_assert_eq(bd.n, 1);
    cr_expect_eq(bd.line[0], 5);
    cr_expect(strstr(bd.why[0], "job event payload") != NULL, "%s", bd.why[0]);
    cr_assert_eq(m->n_messages, 4);
    cr_expect_eq(m->messages[0].kind, FJ_CC_MSG_EVENT);
    cr_expect_str_eq(m->messages[0].name, "job");
    cr_expect_str_eq(m->messages[0].host, "mngmt02");
    cr_expect(strstr(m->messages[0].tags, "\"function\":\"start_job\"") != NULL, "%s", m->messages[0].tags);
    cr_expect_eq(m->messages[2].kind, FJ_CC_MSG_LOG);
    cr_expect_str_eq(m->messages[2].payload, "archiving finished");
    cr_expect_eq(m->messages[3].kind, FJ_CC_MSG_CONTROL);
    cr_expect_eq(m->messages[3].time, 1740027951LL * 1000000000);
    cr_assert_eq(m->n_jobs, 2);
    cr_expect_eq(m->jobs[0].op, FJ_CC_JOB_START);
    cr_expect_eq(m->jobs[0].job_id, 69);
    cr_expect_eq(m->jobs[1].op, FJ_CC_JOB_STOP);
    cr_expect_eq(m->jobs[1].stop_time, 1738842306);
    cr_expect_eq(m->n_points, 0);
    fj_batch_free(b);

    /* replay takes points only */
    b = fj_batch_new();
    o.points_only = true;
    m = decode(b, "ccb log=\"x\" 1\ncpu_load value=1 1\n", &o, &bd, &good);
    cr_expect_eq(m->n_messages, 0);
    cr_expect_eq(m->n_points, 1);
    fj_batch_free(b);
}

Test(cc, escaped_keys_are_unescaped)
{
    fj_batch *b = fj_batch_new();
    fj_cc_opts o = {.default_cluster = "c"};
    fj_metrics *m = decode(b, "my\\ metric,hostname=a\\,b value=1 1\n", &o, NULL, NULL);
    cr_assert_eq(m->n_points, 1);
    cr_expect(eq(m->points[0].metric, "my metric"));
    cr_expect(eq(m->points[0].host, "a,b"));
    fj_batch_free(b);
}

Test(cc, out_of_memory_is_reported)
{
    for (long k = 0; k < 40; k++) {
        fj_batch *b = fj_batch_new();
        cr_assert(b);
        fj_cc_opts o = {.default_cluster = "c"};
        fj_alloc_fail_after(k);
        fj_status st = fj_cc_decode("a value=1 1\nb,x=y,stype=q,stype-id=1 f=2 2\n", 40, &o, b, NULL, NULL, NULL, NULL);
        fj_alloc_fail_after(-1);
        cr_expect(st == FJ_OK || st == FJ_ENOMEM);
        fj_batch_free(b);
    }
}

/* Dots in measurements and commas in tags are escaped in the series key (ingest/metric_name.h), so
 * that a measurement with a dot is not split and a tag with a comma is not folded wrong. */
Test(cc, dotted_names_and_commas_are_escaped)
{
    fj_batch *b = fj_batch_new();
    bads bd = {0};
    fj_cc_opts o = {.default_cluster = "c", .unit_ns = 1};
    fj_metrics *m = decode(b,
                           "node.temp,host=n1 celsius=40 1\n"
                           "ib.rcv_bytes,hostname=n1,type=node value=7 1\n"
                           "fs,host=n1,path=/scratch/a\\,b,z=x\\=y\\ z used=1 1\n"
                           "cpu,host=n1,cpu=cpu0 usage.user=3 1\n"
                           "cpu_load,hostname=n1,type=node value=1 1\n",
                           &o, &bd, NULL);
    cr_expect_eq(bd.n, 0);
    cr_assert_eq(m->n_points, 5);
    cr_expect(eq(m->points[0].metric, "node\\.temp.celsius"));
    cr_expect(eq(m->points[1].metric, "ib\\.rcv_bytes"));
    cr_expect(eq(m->points[2].metric, "fs.used") && eq(m->points[2].stype, "path,z") &&
              eq(m->points[2].stype_id, "/scratch/a\\,b,x=y z"));
    cr_expect(eq(m->points[3].metric, "cpu.usage.user"), "a field's dots need no escape");
    cr_expect(eq(m->points[4].metric, "cpu_load"));
    fj_batch_free(b);
}
