/* Tests of ingest/aicr.c: every aicr snapshot in shared/data/aicr decodes (and the k8s-launch-kit
 * presets there, which are not snapshots, are refused), both spellings decode to the same values,
 * the normalised form round-trips, bad snapshots are refused naming the field, YAML scalars are
 * typed as aicr's yaml.v3 types them, and constraint paths resolve as the seed specifies. */
#include "ingest/aicr.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fj_arena *A;

static void setup(void)
{
    A = fj_arena_create();
    cr_assert(A);
}

static void teardown(void)
{
    fj_arena_destroy(A);
}

TestSuite(aicr, .init = setup, .fini = teardown);

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = fj_arena_alloc(A, (size_t)n + 1);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return b;
}

static fj_aicr_snapshot *decode_file(const char *path, fj_aicr_format fmt)
{
    size_t len;
    char *body = slurp(path, &len);
    fj_aicr_snapshot *s = NULL;
    fj_err err = {0};
    fj_status st = fj_aicr_decode(A, body, len, fmt, &s, &err);
    cr_assert_eq(st, FJ_OK, "%s: %s at %s", path, err.message, err.path);
    return s;
}

static fj_aicr_snapshot *decode_str(const char *body, fj_aicr_format fmt)
{
    fj_aicr_snapshot *s = NULL;
    fj_err err = {0};
    fj_status st = fj_aicr_decode(A, body, strlen(body), fmt, &s, &err);
    cr_assert_eq(st, FJ_OK, "%s at %s\n%s", err.message, err.path, body);
    return s;
}

#define GO_FILE FJ_SOURCE_DIR "/tests/data/aicr/snapshot-xe9680-go.yaml"
#define OPENAPI_FILE FJ_SOURCE_DIR "/tests/data/aicr/snapshot-xe9680-openapi.json"
#define AICR_DIR FJ_SHARED_DIR "/data/aicr"

/* Resolves path; returns the value, or NULL with *st set. */
static const char *resolve_st(const fj_aicr_snapshot *s, const char *path, fj_status *st, fj_err *err)
{
    fj_aicr_path p;
    *st = fj_aicr_path_parse(A, path, &p, err);
    cr_assert_eq(*st, FJ_OK, "parse %s: %s", path, err->message);
    fj_aicr_result r;
    *st = fj_aicr_resolve(A, s, &p, &r, err);
    return *st == FJ_OK ? r.value : NULL;
}

static void expect_value(const fj_aicr_snapshot *s, const char *path, const char *want)
{
    fj_status st;
    fj_err err = {0};
    const char *got = resolve_st(s, path, &st, &err);
    cr_expect_eq(st, FJ_OK, "%s: %s", path, err.message);
    if (got)
        cr_expect_str_eq(got, want, "%s", path);
}

static void expect_status(const fj_aicr_snapshot *s, const char *path, fj_status want, const char *msg_part)
{
    fj_status st;
    fj_err err = {0};
    const char *got = resolve_st(s, path, &st, &err);
    cr_expect_eq(st, want, "%s: got %d (%s), value %s", path, (int)st, err.message, got ? got : "-");
    cr_expect_str_eq(err.path, "path", "%s", path);
    if (msg_part)
        cr_expect(strstr(err.message, msg_part), "%s: message '%s' lacks '%s'", path, err.message, msg_part);
}

static size_t n_subtypes(const fj_aicr_snapshot *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_measurements; i++)
        n += s->measurements[i].n_subtypes;
    return n;
}

static char *json_of(const fj_aicr_snapshot *s)
{
    fj_buf b;
    fj_buf_init(&b, (size_t)1 << 26);
    cr_assert_eq(fj_aicr_json(s, &b), FJ_OK);
    char *out = fj_arena_strndup(A, b.data, b.len);
    fj_buf_free(&b);
    return out;
}

/* The normalised JSON decodes to a snapshot whose normalised JSON is the same text. */
static void expect_round_trip(const fj_aicr_snapshot *s, const char *what)
{
    char *j1 = json_of(s);
    fj_aicr_snapshot *s2 = decode_str(j1, FJ_AICR_JSON);
    char *j2 = json_of(s2);
    cr_expect_str_eq(j1, j2, "%s: normalised form does not round-trip", what);
}

/* --- the data in shared/data/aicr ------------------------------------------------------------ */

Test(aicr, every_shared_snapshot_decodes_and_round_trips)
{
    DIR *d = opendir(AICR_DIR);
    cr_assert(d, "%s", AICR_DIR);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, "m-", 2) != 0 || l < 5 || strcmp(e->d_name + l - 5, ".yaml") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", AICR_DIR, e->d_name);
        fj_aicr_snapshot *s = decode_file(path, FJ_AICR_YAML);
        cr_expect_gt(s->n_measurements, 0, "%s", e->d_name);
        expect_round_trip(s, e->d_name);
        n++;
    }
    closedir(d);
    cr_expect_geq(n, 3, "the three m-*.yaml snapshots");
}

Test(aicr, mock_snapshot_values)
{
    fj_aicr_snapshot *s = decode_file(AICR_DIR "/m-mock-snapshot-cuj1-training.yaml", FJ_AICR_AUTO);
    cr_expect_eq(s->n_measurements, 2);
    cr_expect_null(s->api_version, "measurements only: no header");
    expect_value(s, "K8s.server.version", "v1.33.0");
    expect_value(s, "K8s.helm.gpu-operator.version", "v25.10.1");
    expect_value(s, "K8s.helm.skyhook-customizations.namespace", "skyhook");
    expect_status(s, "K8s.helm.skyhook-customizations.version", FJ_ENOTFOUND, "no key");
    expect_value(s, "OS.release.ID", "ubuntu");
    expect_value(s, "OS.release.VERSION_ID", "24.04"); /* quoted: a string */
}

Test(aicr, doc_example_values)
{
    fj_aicr_snapshot *s = decode_file(AICR_DIR "/m-snapshot-example-from-doc-go.yaml", FJ_AICR_YAML);
    cr_expect_str_eq(s->api_version, "aicr.nvidia.com/v1alpha1");
    cr_expect_str_eq(fj_aicr_meta(s, "timestamp"), "2025-01-15T10:30:00Z");
    cr_expect_str_eq(fj_aicr_meta(s, "source"), "node-1");
    cr_expect_null(fj_aicr_meta(s, "nope"));
    cr_expect_eq(n_subtypes(s), 7);
    expect_value(s, "K8s.server.version", "1.33.5"); /* two dots: a string, not a float */
    expect_value(s, "K8s.node.kernel-version", "6.8.0");
    expect_value(s, "K8s.policy.driver.version", "570.86.16");
    expect_value(s, "K8s.argocd.gpu-operator.syncStatus", "Synced");
    expect_value(s, "GPU.device.model", "H100");
}

Test(aicr, partial_assertion_decodes_with_empty_subtypes)
{
    /* A Chainsaw partial assertion: subtypes carry only names. aicr v0.11.1 itself writes `data: {}`
     * for empty collections, so empty subtypes are accepted (docs/measurements.md). */
    fj_aicr_snapshot *s = decode_file(AICR_DIR "/m-assert-snapshot-content-partial.yaml", FJ_AICR_YAML);
    cr_expect_eq(s->n_measurements, 4);
    cr_expect_eq(n_subtypes(s), 12);
    cr_expect_str_eq(fj_aicr_meta(s, "source-node"), "aicr-worker");
    expect_value(s, "GPU.smi.gpu-count", "8");
    expect_value(s, "GPU.smi.driver", "560.35.03");
    expect_value(s, "GPU.smi.gpu.model", "NVIDIA B200");
    expect_status(s, "OS.grub.x", FJ_ENOTFOUND, "no key x");
    expect_status(s, "SystemD.kubelet.service.ActiveState", FJ_ENOTFOUND, "no key ActiveState");
}

Test(aicr, presets_are_not_snapshots)
{
    /* NOTES.md: the p-*.yaml files are k8s-launch-kit presets and a cluster-config, the input
     * NetworkTopology is built from; none is a snapshot. They are refused, naming what is missing. */
    DIR *d = opendir(AICR_DIR);
    cr_assert(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, "p-", 2) != 0 || l < 5 || strcmp(e->d_name + l - 5, ".yaml") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", AICR_DIR, e->d_name);
        size_t len;
        char *body = slurp(path, &len);
        fj_aicr_snapshot *s = NULL;
        fj_err err = {0};
        cr_expect_eq(fj_aicr_decode(A, body, len, FJ_AICR_AUTO, &s, &err), FJ_EINVAL, "%s", e->d_name);
        cr_expect_str_eq(err.path, "measurements", "%s", e->d_name);
        cr_expect(strstr(err.message, "not an aicr snapshot"), "%s: %s", e->d_name, err.message);
        n++;
    }
    closedir(d);
    cr_expect_eq(n, 6, "five presets and the cluster-config excerpt");
}

/* --- both spellings ------------------------------------------------------------------------ */

static void strip_units(fj_aicr_snapshot *s)
{
    for (size_t i = 0; i < s->n_measurements; i++)
        for (size_t k = 0; k < s->measurements[i].n_subtypes; k++) {
            fj_aicr_subtype *st = &s->measurements[i].subtypes[k];
            for (size_t j = 0; j < st->n_data; j++)
                st->data[j].unit = NULL;
            for (size_t t = 0; t < st->n_items; t++)
                for (size_t j = 0; j < st->items[t].n_data; j++)
                    st->items[t].data[j].unit = NULL;
        }
}

Test(aicr, both_spellings_decode_to_one_form)
{
    fj_aicr_snapshot *go = decode_file(GO_FILE, FJ_AICR_AUTO);
    fj_aicr_snapshot *oa = decode_file(OPENAPI_FILE, FJ_AICR_AUTO);
    cr_expect_str_eq(oa->measurements[0].type, "NetworkTopology", "lower-case types are canonicalised");
    cr_expect_str_eq(oa->measurements[1].type, "GPU");
    cr_expect_str_eq(oa->measurements[2].type, "SystemD");
    cr_expect_str_eq(oa->measurements[0].subtypes[2].name, "pfs", "`name` is the subtype");
    const fj_aicr_reading *mem = &oa->measurements[1].subtypes[0].data[4];
    cr_expect_str_eq(mem->key, "memory");
    cr_expect_str_eq(mem->unit, "KiB");
    cr_expect_null(go->measurements[1].subtypes[0].data[4].unit);
    static const char *const paths[] = {
        "NetworkTopology.identity.pf-count", "NetworkTopology.capabilities.ib", "NetworkTopology.pfs[3].rail",
        "NetworkTopology.pfs[rail=7].rdmaDevice", "GPU.smi.memory", "GPU.smi.power-limit", "GPU.smi.ecc",
        "SystemD.containerd.service.SubState", "NetworkTopology.kernel-modules.thirdParty.0"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        fj_status s1, s2;
        fj_err e1 = {0}, e2 = {0};
        const char *v1 = resolve_st(go, paths[i], &s1, &e1), *v2 = resolve_st(oa, paths[i], &s2, &e2);
        cr_expect_eq(s1, FJ_OK, "%s: %s", paths[i], e1.message);
        cr_expect_eq(s2, FJ_OK, "%s: %s", paths[i], e2.message);
        if (v1 && v2)
            cr_expect_str_eq(v1, v2, "%s", paths[i]);
    }
    /* Units aside, the two files hold the same snapshot: one normalised text. */
    expect_round_trip(oa, "openapi");
    expect_round_trip(go, "go");
    strip_units(oa);
    cr_expect_str_eq(json_of(go), json_of(oa));
}

Test(aicr, normalised_json_shape)
{
    fj_aicr_snapshot *s = decode_str("{\"measurements\":[{\"type\":\"gpu\",\"subtypes\":[{\"name\":\"smi\","
                                     "\"data\":{\"mem\":{\"value\":81559,\"unit\":\"MiB\"},\"f\":{\"value\":1.0},"
                                     "\"neg\":-3,\"t\":true},\"context\":{\"n\":7}}]}]}",
                                     FJ_AICR_JSON);
    cr_expect_str_eq(json_of(s), "{\"kind\":\"Snapshot\",\"metadata\":{},\"measurements\":[{\"type\":\"GPU\","
                                 "\"subtypes\":[{\"subtype\":\"smi\",\"context\":{\"n\":\"7\"},\"data\":{\"mem\":"
                                 "{\"value\":81559,\"unit\":\"MiB\"},\"f\":1.0,\"neg\":-3,\"t\":true}}]}]}");
    fj_buf b;
    fj_buf_init(&b, 1024);
    cr_expect_eq(fj_aicr_subtype_json(&s->measurements[0].subtypes[0], &b), FJ_OK);
    cr_expect(strncmp(b.data, "{\"subtype\":\"smi\"", 16) == 0, "%s", b.data);
    fj_buf_free(&b);
}

Test(aicr, pusher_snapshot)
{
    /* what fjord-push sends (tests/integration/test_pusher_send.py, 24em64t hwloc export) */
    fj_aicr_snapshot *s = decode_str(
        "{\"kind\":\"Snapshot\",\"apiVersion\":\"aicr.nvidia.com/v1alpha1\",\"metadata\":{\"source-node\":\"c1\","
        "\"cluster\":\"\",\"timestamp\":\"2023-10-27T09:46:40Z\",\"producer\":\"fjord-push\",\"version\":\"0.1.0\"},"
        "\"measurements\":[{\"type\":\"NetworkTopology\",\"subtypes\":[{\"subtype\":\"identity\",\"context\":{"
        "\"identifier\":\"proliant-sl390s-g7\",\"machineType\":\"ProLiant-SL390s-G7\",\"gpuType\":\"\",\"linkType\":"
        "\"Ethernet\",\"nodeSelector\":\"kubernetes.io/hostname=c1\"},\"data\":{\"pf-count\":1,\"rail-count\":0}},"
        "{\"subtype\":\"capabilities\",\"data\":{\"sriov\":false,\"rdma\":true,\"ib\":false}},{\"subtype\":\"pfs\","
        "\"items\":[{\"context\":{\"pciAddress\":\"0000:05:00.0\",\"deviceID\":\"6746\",\"psid\":\"\",\"partNumber\":"
        "\"\",\"rdmaDevice\":\"mlx4_0\",\"networkInterface\":\"eth2\",\"connectedGPU\":\"GPU0\",\"gpuProximity\":"
        "\"PHB\"},\"data\":{\"numaNode\":0,\"traffic\":\"north-south\"}}]}]}]}\n",
        FJ_AICR_AUTO);
    expect_value(s, "NetworkTopology.pfs[0].rdmaDevice", "mlx4_0");
    expect_value(s, "NetworkTopology.pfs[rdmaDevice=mlx4_0].gpuProximity", "PHB");
    expect_value(s, "NetworkTopology.capabilities.sriov", "false");
    expect_status(s, "NetworkTopology.pfs[0].rail", FJ_ENOTFOUND, "no rail");
    fj_measurements rec;
    fj_err err = {0};
    cr_assert_eq(fj_aicr_record(s, A, &rec, &err), FJ_OK);
    cr_expect_eq(rec.n_measurements, 1);
    cr_expect_eq(rec.n_rows, 3);
    cr_expect_str_eq(rec.rows[2].subtype, "pfs");
    cr_expect_str_eq(rec.rows[2].type, "NetworkTopology");
    cr_expect_eq(rec.rows[2].instance, 0);
    cr_expect(strstr(rec.json, "\"rdmaDevice\":\"mlx4_0\""), "%s", rec.json);
}

Test(aicr, record_numbers_instances_of_a_type)
{
    fj_aicr_snapshot *s = decode_str("measurements:\n"
                                     "- {type: NetworkTopology, subtypes: [{subtype: identity, data: {a: 1}}]}\n"
                                     "- {type: GPU, subtypes: [{subtype: smi, data: {a: 1}}]}\n"
                                     "- {type: networktopology, subtypes: [{subtype: identity, data: {a: 2}}]}\n",
                                     FJ_AICR_YAML);
    fj_measurements rec;
    fj_err err = {0};
    cr_assert_eq(fj_aicr_record(s, A, &rec, &err), FJ_OK);
    cr_assert_eq(rec.n_rows, 3);
    cr_expect_eq(rec.rows[0].instance, 0);
    cr_expect_eq(rec.rows[1].instance, 0);
    cr_expect_eq(rec.rows[2].instance, 1);
    cr_expect_str_eq(rec.rows[2].type, "NetworkTopology");
    cr_expect_str_eq(rec.rows[2].json, "{\"subtype\":\"identity\",\"data\":{\"a\":2}}");
    expect_value(s, "NetworkTopology.identity.a", "1"); /* find-first-by-type, as aicr's consumers */
}

/* --- YAML scalars, as yaml.v3 types them, and Reading.String() -------------------------------- */

Test(aicr, yaml_scalars_and_go_strings)
{
    fj_aicr_snapshot *s = decode_str("measurements:\n"
                                     "- type: X\n"
                                     "  subtypes:\n"
                                     "  - subtype: s\n"
                                     "    context: {v: 1.10, t: True, n: ~, q: 0x1F}\n"
                                     "    data:\n"
                                     "      int: 1\n"
                                     "      str: \"1\"\n"
                                     "      sq: '2'\n"
                                     "      hex: 0x1F\n"
                                     "      under: 1_000\n"
                                     "      oct: 0777\n"
                                     "      oct2: 0o17\n"
                                     "      bin: 0b101\n"
                                     "      bad-oct: 089\n"
                                     "      yes: yes\n"
                                     "      T: True\n"
                                     "      F: FALSE\n"
                                     "      ver: 1.10\n"
                                     "      neg: -5\n"
                                     "      umax: 18446744073709551615\n"
                                     "      big: 18446744073709551616\n"
                                     "      tagged: !!str 12\n"
                                     "      tagf: !!float 3\n"
                                     "      e3: 1e3\n"
                                     "      half: .5\n"
                                     "      tiny: 0.00001\n"
                                     "      small: 0.0001\n"
                                     "      k: 123456.0\n"
                                     "      m: 1234567.0\n"
                                     "      mz: -0.0\n"
                                     "      ts: 2025-01-15T10:30:00Z\n"
                                     "      block: |\n"
                                     "        two\n"
                                     "        lines\n",
                                     FJ_AICR_YAML);
    static const char *const want[][2] = {
        {"int", "1"},        {"str", "1"},           {"sq", "2"},
        {"hex", "31"},       {"under", "1000"},      {"oct", "511"}, /* Go's base-0 syntax, as yaml.v3 */
        {"oct2", "15"},      {"bin", "5"},           {"bad-oct", "89"},
        {"yes", "yes"},      {"T", "true"},          {"F", "false"},
        {"ver", "1.1"},      {"neg", "-5"},          {"umax", "18446744073709551615"},
        {"big", "1.8446744073709552e+19"},           {"tagged", "12"},
        {"tagf", "3"},       {"e3", "1000"},         {"half", "0.5"},
        {"tiny", "1e-05"},   {"small", "0.0001"},    {"k", "123456"},
        {"m", "1.234567e+06"}, {"mz", "-0"},         {"ts", "2025-01-15T10:30:00Z"},
        {"block", "two\nlines\n"}};
    char path[64];
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        snprintf(path, sizeof path, "X.s.%s", want[i][0]);
        expect_value(s, path, want[i][1]);
    }
    const fj_aicr_subtype *st = &s->measurements[0].subtypes[0];
    cr_expect_eq(st->data[1].type, FJ_AICR_STRING, "quoted: a string");
    cr_expect_eq(st->data[0].type, FJ_AICR_UINT);
    cr_expect_eq(st->data[13].type, FJ_AICR_INT);
    cr_expect_eq(st->data[12].type, FJ_AICR_REAL);
    cr_expect_eq(st->data[10].type, FJ_AICR_BOOL);
    /* context values stay as written (yaml.v3 into map[string]string) */
    cr_expect_str_eq(st->context[0].value, "1.10");
    cr_expect_str_eq(st->context[1].value, "True");
    cr_expect_str_eq(st->context[2].value, "");
    cr_expect_str_eq(st->context[3].value, "0x1F");
    expect_round_trip(s, "scalars");
}

Test(aicr, json_numbers_stay_exact)
{
    fj_aicr_snapshot *s = decode_str("{\"measurements\":[{\"type\":\"X\",\"subtypes\":[{\"subtype\":\"s\",\"data\":"
                                     "{\"u\":18446744073709551615,\"i\":-9223372036854775808,\"r\":2.5e-7,"
                                     "\"w\":1e6,\"x\":3.0}}]}]}",
                                     FJ_AICR_AUTO);
    expect_value(s, "X.s.u", "18446744073709551615");
    expect_value(s, "X.s.i", "-9223372036854775808");
    expect_value(s, "X.s.r", "2.5e-07");
    expect_value(s, "X.s.w", "1e+06");
    expect_value(s, "X.s.x", "3");
    expect_round_trip(s, "json numbers");
}

/* --- bad snapshots ------------------------------------------------------------------------- */

static void expect_bad(const char *body, fj_aicr_format fmt, const char *path, const char *msg_part)
{
    fj_aicr_snapshot *s = NULL;
    fj_err err = {0};
    fj_status st = fj_aicr_decode(A, body, strlen(body), fmt, &s, &err);
    cr_expect_eq(st, FJ_EINVAL, "accepted: %s", body);
    cr_expect_str_eq(err.path, path, "%s\n(message: %s)", body, err.message);
    if (msg_part)
        cr_expect(strstr(err.message, msg_part), "message '%s' lacks '%s'", err.message, msg_part);
}

#define Y FJ_AICR_YAML
#define J FJ_AICR_JSON

Test(aicr, bad_snapshots_name_the_field)
{
    expect_bad("", Y, "body", "empty body");
    expect_bad("   \n", FJ_AICR_AUTO, "body", "empty body");
    expect_bad("- a\n- b\n", Y, "body", "not array");
    expect_bad("measurements: {}\n", Y, "measurements", "must be a list");
    expect_bad("measurements: [{subtypes: []}]\n", Y, "measurements[0].type", "required");
    expect_bad("measurements: [{type: \"\"}]\n", Y, "measurements[0].type", "non-empty");
    expect_bad("measurements: [{type: K8s, subtypes: {}}]\n", Y, "measurements[0].subtypes", "must be a list");
    expect_bad("measurements: [{type: K8s, subtypes: [{data: {a: 1}}]}]\n", Y, "measurements[0].subtypes[0].subtype",
               "required");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a, name: b}]}]\n", Y,
               "measurements[0].subtypes[0].name", "differ");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a}, {name: a}]}]\n", Y,
               "measurements[0].subtypes[1]", "appears twice");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a, data: {x: null}}]}]\n", Y,
               "measurements[0].subtypes[0].data.x", "null is not a reading");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a, data: {x: [1]}}]}]\n", Y,
               "measurements[0].subtypes[0].data.x", "not array");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a, data: {x: {unit: W}}}]}]\n", Y,
               "measurements[0].subtypes[0].data.x", "needs `value`");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a, data: {x: {value: 1, unit: 5}}}]}]\n", Y,
               "measurements[0].subtypes[0].data.x.unit", "unit is a string");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a, data: {x: {value: {a: 1}}}}]}]\n", Y,
               "measurements[0].subtypes[0].data.x.value", "not object");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a, data: {x: .inf}}]}]\n", Y,
               "measurements[0].subtypes[0].data.x", "not a finite number");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a, data: {\"storage.0\": 1e999}}]}]\n", Y,
               "measurements[0].subtypes[0].data[\"storage.0\"]", "1e999 is not a finite number");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a, data: {\"\": 1}}]}]\n", Y,
               "measurements[0].subtypes[0].data[\"\"]", "empty key");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a, context: {k: {a: b}}}]}]\n", Y,
               "measurements[0].subtypes[0].context.k", "strings");
    expect_bad("measurements: [{type: NetworkTopology, subtypes: [{subtype: pfs, items: [{data: {rail: 0}, "
               "items: []}]}]}]\n",
               Y, "measurements[0].subtypes[0].items[0].items", "nested items");
    expect_bad("measurements: [{type: NetworkTopology, subtypes: [{subtype: pfs, items: [3]}]}]\n", Y,
               "measurements[0].subtypes[0].items[0]", "must be a mapping");
    expect_bad("measurements: [{type: NetworkTopology, subtypes: [{subtype: pfs, items: {}}]}]\n", Y,
               "measurements[0].subtypes[0].items", "must be a list");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a, data: {x: 1, x: 2}}]}]\n", Y,
               "measurements[0].subtypes[0].data.x", "duplicate key");
    expect_bad("{\"measurements\":[{\"type\":\"K8s\",\"subtypes\":[{\"subtype\":\"a\",\"data\":{\"x\":1,\"x\":2}}]}]}",
               J, "measurements[0].subtypes[0].data.x", "duplicate key");
    expect_bad("kind: Recipe\nmeasurements: []\n", Y, "kind", "kind Snapshot");
    expect_bad("apiVersion: 3\nmeasurements: []\n", Y, "apiVersion", "string");
    expect_bad("metadata: [a]\nmeasurements: []\n", Y, "metadata", "must be a mapping");
    /* YAML-level refusals */
    expect_bad("a: &x {b: 1}\nmeasurements: [*x]\n", Y, "line 2, column 16", "aliases");
    expect_bad("measurements: []\n---\nmeasurements: []\n", Y, "line 2, column 1", "second YAML document");
    expect_bad("measurements: [\n", Y, "line 2, column 1", "YAML");
    expect_bad("measurements:\n  - type: K8s\n   bad: indent\n", Y, "line 3, column 4", "YAML");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a, data: {x: !!int abc}}]}]\n", Y,
               "line 1, column 62", "not a valid !!int");
    expect_bad("measurements: [{type: K8s, subtypes: [{subtype: a, data: {x: !custom 1}}]}]\n", Y,
               "line 1, column 62", "unsupported YAML tag");
    expect_bad("? [a]\n: b\nmeasurements: []\n", Y, "line 1, column 3", "mapping keys must be scalars");
    /* JSON-level refusals */
    expect_bad("{\"measurements\":[}", J, "line 1, column 18", NULL);
    expect_bad("{\"measurements\":[]} {}", J, "body", "one snapshot per request");
    expect_bad("{\"measurements\":[{\"type\":\"K8s\",\"subtypes\":[{\"subtype\":\"a\\u0000b\"}]}]}", J, "body",
               "NUL");
    /* messages of YAML nodes say where */
    fj_aicr_snapshot *s;
    fj_err err = {0};
    const char *b = "measurements:\n- type: K8s\n  subtypes:\n  - subtype: a\n    data:\n      x: null\n";
    cr_expect_eq(fj_aicr_decode(A, b, strlen(b), Y, &s, &err), FJ_EINVAL);
    cr_expect(strstr(err.message, "(line 6, column 10)"), "%s", err.message);
}

Test(aicr, nesting_is_bounded)
{
    char body[400] = "measurements: ";
    for (int i = 0; i < 40; i++)
        strcat(body, "[");
    fj_aicr_snapshot *s;
    fj_err err = {0};
    cr_expect_eq(fj_aicr_decode(A, body, strlen(body), Y, &s, &err), FJ_EINVAL);
    cr_expect(strstr(err.message, "nested more than"), "%s", err.message);
}

Test(aicr, lenient_where_producers_are)
{
    /* empty subtypes, null lists, unknown fields, numbers in context and metadata */
    fj_aicr_snapshot *s = decode_str("kind: Snapshot\nextra: ignored\nmetadata: {n: 3, b: true}\n"
                                     "measurements:\n- type: K8s\n  subtypes: null\n- type: GPU\n  note: x\n"
                                     "  subtypes:\n  - subtype: smi\n    data: {}\n    items: null\n    foo: 1\n",
                                     FJ_AICR_YAML);
    cr_expect_eq(s->n_measurements, 2);
    cr_expect_eq(s->measurements[0].n_subtypes, 0);
    cr_expect_str_eq(fj_aicr_meta(s, "n"), "3");
    cr_expect_str_eq(fj_aicr_meta(s, "b"), "true");
    s = decode_str("measurements: null\n", FJ_AICR_YAML);
    cr_expect_eq(s->n_measurements, 0);
    /* a type aicr does not define (yet) is kept as sent */
    s = decode_str("measurements: [{type: Storage, subtypes: [{subtype: nvme, data: {n: 2}}]}]", FJ_AICR_YAML);
    expect_value(s, "Storage.nvme.n", "2");
}

/* --- constraint paths ---------------------------------------------------------------------- */

Test(aicr, legacy_paths)
{
    fj_aicr_snapshot *s = decode_file(GO_FILE, FJ_AICR_YAML);
    expect_value(s, "NetworkTopology.identity.pf-count", "10");
    expect_value(s, "NetworkTopology.identity.rail-count", "8");
    expect_value(s, "NetworkTopology.capabilities.sriov", "true");
    expect_value(s, "NetworkTopology.capabilities.ib", "false");
    expect_value(s, "NetworkTopology.kernel-modules.storage.0", "nvme_rdma"); /* dotted key */
    expect_value(s, "NetworkTopology.kernel-modules.storage.1", "nfsrdma");
    expect_value(s, "GPU.smi.gpu.model", "NVIDIA H200");
    expect_value(s, "GPU.smi.driver", "570.86.15");
    expect_value(s, "GPU.smi.power-limit", "700.5");
    expect_value(s, "GPU.smi.memory", "1.5e+06"); /* Go's %v of float64(1500000) */
    expect_value(s, "OS.sysctl./proc/sys/kernel/osrelease", "6.8.0-1028-aws");
    expect_value(s, "OS.release.VERSION_ID", "24.04");
    expect_value(s, "SystemD.containerd.service.ActiveState", "active"); /* unit names split at the last dot */
    fj_aicr_path p;
    fj_aicr_result r;
    fj_err err = {0};
    cr_assert_eq(fj_aicr_path_parse(A, "GPU.smi.power-limit", &p, &err), FJ_OK);
    cr_assert_eq(fj_aicr_resolve(A, s, &p, &r, &err), FJ_OK);
    cr_expect_str_eq(r.from, "data");
    cr_assert_not_null(r.reading);
    cr_expect_eq(r.reading->type, FJ_AICR_REAL);
    fj_buf b;
    fj_buf_init(&b, 64);
    cr_expect_eq(fj_aicr_reading_json(r.reading, &b), FJ_OK);
    cr_expect_str_eq(b.data, "700.5");
    fj_buf_free(&b);
}

Test(aicr, index_selectors)
{
    fj_aicr_snapshot *s = decode_file(GO_FILE, FJ_AICR_YAML);
    expect_value(s, "NetworkTopology.pfs[0].rail", "0");
    expect_value(s, "NetworkTopology.pfs[0].pciAddress", "0000:1a:00.0"); /* context */
    expect_value(s, "NetworkTopology.pfs[4].traffic", "east-west");
    expect_value(s, "NetworkTopology.pfs[9].networkInterface", "eth11");
    expect_value(s, "NetworkTopology.pfs[9].rail", "7");
    expect_status(s, "NetworkTopology.pfs[10].rail", FJ_ENOTFOUND, "10 items: index 10 is out of range");
    expect_status(s, "NetworkTopology.pfs[99999999999999999999999].rail", FJ_ENOTFOUND, "out of range");
    expect_status(s, "NetworkTopology.pfs[5].rail", FJ_ENOTFOUND, "no rail"); /* north-south: no rail */
    expect_value(s, "NetworkTopology.pfs[5].networkInterface", "eth7");
}

Test(aicr, predicate_selectors)
{
    fj_aicr_snapshot *s = decode_file(GO_FILE, FJ_AICR_YAML);
    expect_value(s, "NetworkTopology.pfs[rail=3].pciAddress", "0000:5e:00.0");
    expect_value(s, "NetworkTopology.pfs[rail=3].gpuProximity", "PIX");
    expect_value(s, "NetworkTopology.pfs[rail=0].numaNode", "0");
    expect_value(s, "NetworkTopology.pfs[networkInterface=eth8].pciAddress", "0000:9d:00.1"); /* context LHS */
    expect_value(s, "NetworkTopology.pfs[pciAddress=0000:9d:00.1].networkInterface", "eth8"); /* dots, colons */
}

Test(aicr, predicate_reads_data_then_context)
{
    fj_aicr_snapshot *s = decode_str("measurements:\n"
                                     "- type: NetworkTopology\n"
                                     "  subtypes:\n"
                                     "  - subtype: pfs\n"
                                     "    items:\n"
                                     "    - context: {rail: '7', x: from-context, only: ctx0}\n"
                                     "      data: {rail: 3, x: from-data}\n"
                                     "    - context: {rail: '5', x: c1}\n"
                                     "      data: {traffic: north-south}\n",
                                     FJ_AICR_YAML);
    /* key resolution: data first, then context */
    expect_value(s, "NetworkTopology.pfs[0].x", "from-data");
    expect_value(s, "NetworkTopology.pfs[0].only", "ctx0");
    /* predicate LHS: data first; context only when data lacks the key */
    expect_value(s, "NetworkTopology.pfs[rail=3].x", "from-data");
    expect_status(s, "NetworkTopology.pfs[rail=7].x", FJ_ENOTFOUND, "no item of NetworkTopology.pfs has rail=7");
    expect_value(s, "NetworkTopology.pfs[rail=5].x", "c1");
    fj_aicr_path p;
    fj_aicr_result r;
    fj_err err = {0};
    cr_assert_eq(fj_aicr_path_parse(A, "NetworkTopology.pfs[rail=5].x", &p, &err), FJ_OK);
    cr_assert_eq(fj_aicr_resolve(A, s, &p, &r, &err), FJ_OK);
    cr_expect_str_eq(r.from, "context");
    cr_expect_null(r.reading);
}

Test(aicr, not_found)
{
    fj_aicr_snapshot *s = decode_file(GO_FILE, FJ_AICR_YAML);
    expect_status(s, "K8s.server.version", FJ_ENOTFOUND, "no measurement of type K8s");
    expect_status(s, "networktopology.pfs[0].rail", FJ_ENOTFOUND, "case-sensitive");
    expect_status(s, "NetworkTopology.nics[0].rail", FJ_ENOTFOUND, "no subtype nics");
    expect_status(s, "NetworkTopology.identity.nope", FJ_ENOTFOUND, "no key nope");
    /* the legacy form reads data only: identity's strings are in its context */
    expect_status(s, "NetworkTopology.identity.machineType", FJ_ENOTFOUND, "in its context, not its data");
    expect_status(s, "NetworkTopology.capabilities[0].sriov", FJ_ENOTFOUND, "has no items");
    expect_status(s, "NetworkTopology.pfs[rail=99].pciAddress", FJ_ENOTFOUND, "no item");
    expect_status(s, "NetworkTopology.pfs[0].nonexistent", FJ_ENOTFOUND, "no nonexistent");
    expect_status(s, "SystemD.kubelet.service.ActiveState", FJ_ENOTFOUND, "no subtype kubelet.service");
    fj_aicr_snapshot *empty = decode_str("measurements: []", FJ_AICR_YAML);
    expect_status(empty, "K8s.server.version", FJ_ENOTFOUND, "it has: none");
}

Test(aicr, conflict)
{
    fj_aicr_snapshot *s = decode_file(GO_FILE, FJ_AICR_YAML);
    expect_status(s, "NetworkTopology.pfs[traffic=east-west].rail", FJ_ECONFLICT, "8 items");
    expect_status(s, "NetworkTopology.pfs[traffic=north-south].pciAddress", FJ_ECONFLICT, "2 items");
    expect_status(s, "NetworkTopology.pfs[psid=mt_0000000884].pciAddress", FJ_ECONFLICT, "exactly one");
    expect_status(s, "NetworkTopology.pfs[numaNode=1].rail", FJ_ECONFLICT, NULL);
}

static void expect_malformed(const char *path, const char *msg_part)
{
    fj_aicr_path p;
    fj_err err = {0};
    cr_expect_eq(fj_aicr_path_parse(A, path, &p, &err), FJ_EINVAL, "accepted: %s", path);
    cr_expect_str_eq(err.path, "path");
    if (msg_part)
        cr_expect(strstr(err.message, msg_part), "%s: '%s' lacks '%s'", path, err.message, msg_part);
}

Test(aicr, malformed_paths)
{
    expect_malformed("", "empty path");
    expect_malformed(NULL, "empty path");
    expect_malformed("K8s", "no type");
    expect_malformed(".server.version", "no type");
    expect_malformed("K8s.server", "no key");
    expect_malformed("K8s..version", "empty subtype");
    expect_malformed("K8s.server.", "no key");
    expect_malformed("NetworkTopology.pfs[0.rail", "unclosed");
    expect_malformed("NetworkTopology.pfs[0]rail", "followed by '.'");
    expect_malformed("NetworkTopology.pfs[0]", "followed by '.'");
    expect_malformed("NetworkTopology.pfs[0].", "no key after the selector");
    expect_malformed("NetworkTopology.pfs[].rail", "empty selector");
    expect_malformed("NetworkTopology.[0].rail", "empty subtype");
    expect_malformed("NetworkTopology.pfs[-1].rail", "neither an index nor key=value");
    expect_malformed("NetworkTopology.pfs[notnumber].rail", "neither an index nor key=value");
    expect_malformed("NetworkTopology.pfs[=3].rail", "no key");
    expect_malformed("NetworkTopology.pfs[rail=].pciAddress", "no value");
    expect_malformed("Network[0]Topology.pfs.rail", "after the subtype");
    expect_malformed("SystemD.containerd", "no key");
}

Test(aicr, path_grammar)
{
    fj_aicr_path p;
    fj_err err = {0};
    cr_assert_eq(fj_aicr_path_parse(A, "SystemD.containerd.service.ActiveState", &p, &err), FJ_OK);
    cr_expect_str_eq(p.subtype, "containerd.service");
    cr_expect_str_eq(p.key, "ActiveState");
    cr_assert_eq(fj_aicr_path_parse(A, "OS.sysctl./proc/sys/kernel/osrelease", &p, &err), FJ_OK);
    cr_expect_str_eq(p.subtype, "sysctl");
    cr_expect_str_eq(p.key, "/proc/sys/kernel/osrelease");
    cr_assert_eq(fj_aicr_path_parse(A, "NodeTopology.label.nvidia.com/gpu.present", &p, &err), FJ_OK);
    cr_expect_str_eq(p.subtype, "label");
    cr_expect_str_eq(p.key, "nvidia.com/gpu.present");
    cr_assert_eq(fj_aicr_path_parse(A, "NetworkTopology.pfs[0]./some/dotted/key", &p, &err), FJ_OK);
    cr_expect_eq(p.sel, FJ_AICR_SEL_INDEX);
    cr_expect_eq(p.index, 0);
    cr_expect_str_eq(p.key, "/some/dotted/key");
    cr_assert_eq(fj_aicr_path_parse(A, "NetworkTopology.pfs[pciAddress=0000:03:00.2].rail", &p, &err), FJ_OK);
    cr_expect_eq(p.sel, FJ_AICR_SEL_PREDICATE);
    cr_expect_str_eq(p.pred_key, "pciAddress");
    cr_expect_str_eq(p.pred_value, "0000:03:00.2");
    cr_assert_eq(fj_aicr_path_parse(A, "K8s.slinky-slurm[id=nodeset/slurm/workers].partition-enabled", &p, &err),
                 FJ_OK);
    cr_expect_str_eq(p.pred_value, "nodeset/slurm/workers");
    cr_assert_eq(fj_aicr_path_parse(A, "X.s[a=b=c].k", &p, &err), FJ_OK);
    cr_expect_str_eq(p.pred_key, "a");
    cr_expect_str_eq(p.pred_value, "b=c");
    cr_assert_eq(fj_aicr_path_parse(A, "SystemD.containerd.service[0].x", &p, &err), FJ_OK);
    cr_expect_str_eq(p.subtype, "containerd.service");
}

/* --- telling bodies apart ------------------------------------------------------------------ */

Test(aicr, json_snapshot_sniffing)
{
    static const struct {
        const char *body;
        bool want;
    } cases[] = {
        {"{\"kind\":\"Snapshot\",\"measurements\":[]}", true},
        {"  \n{ \"apiVersion\" : \"x\", \"kind\" : \"Snapshot\" }", true},
        {"{\"metadata\":{\"kind\":\"Snapshot\"},\"measurements\":[]}", false},
        {"{\"a\":\"x\\\"kind\\\":\\\"Snapshot\",\"kind\":\"Other\"}", false},
        {"{\"a\":[{\"kind\":\"Snapshot\"}],\"b\":1,\"kind\":\"Snapshot\"}", true},
        {"{\"meta\":{\"producer\":\"sonar\"},\"data\":{\"type\":\"sample\"}}", false},
        {"{\"kind\":\"SnapshotX\"}", false},
        {"{\"kind\":1}", false},
        {"{\"kind\":\"Snap", false},
        {"kind: Snapshot", false},
        {"", false},
        {"{", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(fj_aicr_json_is_snapshot(cases[i].body, strlen(cases[i].body)), cases[i].want, "%s",
                     cases[i].body);
}

Test(aicr, yaml_content_types)
{
    cr_expect(fj_aicr_content_type_is_yaml("application/yaml"));
    cr_expect(fj_aicr_content_type_is_yaml("application/x-yaml; charset=utf-8"));
    cr_expect(fj_aicr_content_type_is_yaml("Text/YAML"));
    cr_expect(fj_aicr_content_type_is_yaml("text/x-yaml"));
    cr_expect_not(fj_aicr_content_type_is_yaml("application/json"));
    cr_expect_not(fj_aicr_content_type_is_yaml("application/yamlx"));
    cr_expect_not(fj_aicr_content_type_is_yaml(NULL));
}
