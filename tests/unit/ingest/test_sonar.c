/* test_sonar.c — the Sonar decoder against every real and reference envelope we hold
 * (shared/data/sonar: real/, formats-testdata/, sonar-0.19-output/head-*.json), with chosen values
 * checked against the files, plus the normalisations, body splitting, rollback and out-of-memory.
 * Refused inputs are data files in tests/data/bad, run by test_sonar_bad.c. */
#include "alloc.h"
#include "arena.h"
#include "json.h"
#include "ingest/records/batch.h"
#include "ingest/sonar.h"

#include <criterion/criterion.h>

#include "../fj_test.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SONAR_DIR FJ_SHARED_DIR "/data/sonar/"

#define read_file fj_test_read_file

typedef struct tally {
    size_t items, failed;
    char first[512];
    char paths[8][160]; /* error paths of the first items */
} tally;

static void on_item(void *ctx, size_t index, fj_status st, const fj_err *err, const fj_envelope *env)
{
    tally *t = ctx;
    if (index < 8)
        snprintf(t->paths[index], sizeof t->paths[index], "%s", st ? err->path : "ok");
    t->items++;
    if (st != FJ_OK) {
        cr_assert_null(env);
        cr_assert_not_null(err);
        if (!t->failed++)
            snprintf(t->first, sizeof t->first, "item %zu: %s: %s", index, err->path, err->message);
    } else {
        cr_assert_not_null(env);
    }
}

/* Decodes a file (relative to shared/data/sonar/) with expect -1 and asserts every envelope in it
 * was accepted. */
static fj_batch *decode_file(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, SONAR_DIR "%s", rel);
    size_t len = 0;
    char *body = read_file(path, &len);
    cr_assert_not_null(body, "cannot read %s", path);
    fj_batch *b = fj_batch_new();
    tally t = {0};
    fj_err err = {0};
    fj_status st = fj_sonar_decode_body(body, len, -1, b, on_item, &t, &err);
    free(body);
    cr_assert_eq(st, FJ_OK, "%s: %s: %s", rel, err.path, err.message);
    cr_assert_eq(t.failed, 0, "%s: %s", rel, t.first);
    cr_assert_eq(t.items, b->n_envs);
    return b;
}

static fj_status decode_str(const char *json, int expect, fj_batch *b, fj_err *err)
{
    return fj_sonar_decode_body(json, strlen(json), expect, b, NULL, NULL, err);
}

static const fj_note *find_note(const fj_envelope *env, const char *kind, const char *path)
{
    for (size_t i = 0; i < env->n_notes; i++)
        if (strcmp(env->notes[i].kind, kind) == 0 && (!path || strcmp(env->notes[i].path, path) == 0))
            return &env->notes[i];
    return NULL;
}

static size_t count_notes(const fj_envelope *env, const char *kind)
{
    size_t n = 0;
    for (size_t i = 0; i < env->n_notes; i++)
        n += strcmp(env->notes[i].kind, kind) == 0;
    return n;
}

#define META "\"meta\":{\"producer\":\"sonar\",\"version\":\"0.18.0\"}"
#define ATTRS0 "\"time\":\"2025-01-01T00:00:00Z\",\"cluster\":\"c.no\""
#define SAMPLE(extra) "{" META ",\"data\":{\"type\":\"sample\",\"attributes\":{" ATTRS0 ",\"node\":\"n1\"" extra "}}}"
#define JOBS(jobs) "{" META ",\"data\":{\"type\":\"job\",\"attributes\":{" ATTRS0 ",\"slurm_jobs\":[" jobs "]}}}"
#define CLUSTER(extra) "{" META ",\"data\":{\"type\":\"cluster\",\"attributes\":{" ATTRS0 extra "}}}"
#define SYSINFO(extra)                                                                                            \
    "{" META ",\"data\":{\"type\":\"sysinfo\",\"attributes\":{" ATTRS0 ",\"node\":\"n1\",\"os_name\":\"Linux\","   \
    "\"os_release\":\"6.1\",\"architecture\":\"x86_64\",\"sockets\":1,\"cores_per_socket\":2,"                     \
    "\"threads_per_core\":1,\"memory\":1024" extra "}}}"

/* --- every shared file ---------------------------------------------------------------------- */

Test(sonar_files, every_shared_file_is_accepted)
{
    static const char *patterns[] = {SONAR_DIR "real/*", SONAR_DIR "formats-testdata/*",
                                     SONAR_DIR "sonar-0.19-output/head-*.json"};
    size_t files = 0, envs = 0;
    for (size_t p = 0; p < sizeof patterns / sizeof patterns[0]; p++) {
        glob_t g;
        cr_assert_eq(glob(patterns[p], 0, NULL, &g), 0, "no files for %s", patterns[p]);
        for (size_t i = 0; i < g.gl_pathc; i++) {
            const char *rel = g.gl_pathv[i] + strlen(SONAR_DIR);
            fj_batch *b = decode_file(rel);
            for (size_t k = 0; k < b->n_envs; k++) {
                const fj_envelope *e = &b->envs[k];
                cr_expect_str_eq(e->producer, "sonar", "%s", rel);
                cr_expect_not_null(e->version, "%s", rel);
                if (!e->is_error) {
                    cr_expect_gt(e->time, 0, "%s", rel);
                    cr_expect_not_null(e->cluster, "%s", rel);
                    cr_expect_eq(e->node != NULL, e->kind == FJ_KIND_SAMPLE || e->kind == FJ_KIND_SYSINFO, "%s",
                                 rel);
                }
            }
            envs += b->n_envs;
            files++;
            fj_batch_free(b);
        }
        globfree(&g);
    }
    cr_expect_eq(files, 24);
    cr_expect_eq(envs, 29);
}

Test(sonar_files, sample_ml1)
{
    fj_batch *b = decode_file("real/0+sample-ml1.hpc.uio.no.json");
    cr_assert_eq(b->n_envs, 1);
    const fj_envelope *e = &b->envs[0];
    cr_expect_eq(e->kind, FJ_KIND_SAMPLE);
    cr_expect_not(e->is_error);
    cr_expect_str_eq(e->version, "0.16.0");
    cr_expect_eq(e->time, 1764064320); /* 2025-11-25T10:52:00+01:00 */
    cr_expect_str_eq(e->cluster, "mlx.hpc.uio.no");
    cr_expect_str_eq(e->node, "ml1");
    cr_expect_eq(e->n_notes, 0);
    cr_expect_eq(e->unknown_fields, 0);

    const fj_sample *s = &e->u.sample;
    cr_expect(s->has_system);
    cr_expect_eq(s->boot, 0, "no system.boot before Sonar 0.17");
    cr_expect_eq(s->n_cpus, 56);
    cr_expect_eq(s->cpus[0], 201894);
    cr_expect_eq(s->used_memory_kb, 80910596);
    cr_expect_float_eq(s->load1, 11.31, 1e-9);
    cr_expect_eq(s->runnable_entities, 12);

    cr_assert_eq(s->n_gpus, 3);
    cr_expect_eq(s->gpus[0].index, 0, "index omitted when 0");
    cr_expect_eq(s->gpus[1].index, 1);
    cr_expect_str_eq(s->gpus[0].uuid, "GPU-35080357-601c-7113-ec05-f6ca1e58a91e");
    cr_expect_eq(s->gpus[0].performance_state, 8, "Sonar sends P8 as 9 (value+1)");
    cr_expect_eq(s->gpus[2].temperature, 28);

    cr_expect_eq(s->n_jobs, 52);
    size_t procs = 0;
    for (size_t j = 0; j < s->n_jobs; j++)
        procs += s->jobs[j].n_procs;
    cr_expect_eq(procs, 107);
    const fj_sample_job *j0 = &s->jobs[0];
    cr_expect_eq(j0->job, 2575193);
    cr_expect_str_eq(j0->user, "larstha");
    cr_expect_eq(j0->epoch, 184424948);
    cr_assert_eq(j0->n_procs, 1);
    cr_expect_str_eq(j0->procs[0].cmd, "tmux: server");
    cr_expect_eq(j0->procs[0].pid, 2575193);
    cr_expect_eq(j0->procs[0].ppid, 1);
    cr_expect_eq(j0->procs[0].resident_kb, 732);
    cr_expect_not(j0->procs[0].synthetic_pid);
    fj_batch_free(b);
}

Test(sonar_files, sample_fox_rolled_up)
{
    fj_batch *b = decode_file("real/3+sample.fox.educloud.no.json");
    const fj_envelope *e = &b->envs[0];
    const fj_sample *s = &e->u.sample;
    cr_expect_str_eq(e->node, "c1-10.fox");
    cr_expect_eq(s->boot, 1768390740); /* 2026-01-14T11:39:00+00:00 */
    cr_expect_eq(s->n_cpus, 128);
    cr_assert_eq(s->n_jobs, 3);
    cr_expect_eq(s->jobs[1].job, 2940904);
    cr_expect_eq(s->jobs[1].epoch, 0, "epoch omitted for Slurm jobs");
    cr_expect_eq(s->jobs[1].n_procs, 7);
    const fj_sample_proc *p = &s->jobs[2].procs[0];
    cr_expect_str_eq(p->cmd, "python3");
    cr_expect_eq(p->pid, 0, "pid omitted for a one-shot rolled-up group");
    cr_expect(p->synthetic_pid);
    cr_expect_eq(p->rolledup, 99);
    cr_expect_eq(p->ppid, 1430857);
    cr_expect_float_eq(p->cpu_avg, 8783.8, 1e-9);
    cr_expect_eq(p->data_cancelled_kb, 400);
    fj_batch_free(b);
}

Test(sonar_files, sample_with_stray_disks)
{
    fj_batch *b = decode_file("real/0+sample-g001.ex3.simula.no.json");
    const fj_envelope *e = &b->envs[0];
    cr_expect_eq(e->unknown_fields, 1);
    cr_expect_not_null(find_note(e, "unknown_field", "data.attributes.disks"));
    cr_expect_not(e->u.sample.has_system);
    cr_expect_eq(e->u.sample.n_jobs, 32);
    fj_batch_free(b);
}

Test(sonar_files, file_named_sample_holds_sysinfo)
{
    fj_batch *b = decode_file("real/0+sample-g002.ex3.simula.no.json");
    cr_expect_eq(b->envs[0].kind, FJ_KIND_SYSINFO);
    cr_expect_null(b->envs[0].u.sysinfo.topo_svg, "\"\" topology is none");
    fj_batch_free(b);

    /* The same body on the sample route is refused at data.type. */
    size_t len = 0;
    char *body = read_file(SONAR_DIR "real/0+sample-g002.ex3.simula.no.json", &len);
    cr_assert_not_null(body);
    b = fj_batch_new();
    fj_err err = {0};
    cr_expect_eq(fj_sonar_decode_body(body, len, FJ_KIND_SAMPLE, b, NULL, NULL, &err), FJ_EINVAL);
    cr_expect_str_eq(err.path, "data.type");
    cr_expect(strstr(err.message, "sysinfo") != NULL, "%s", err.message);
    cr_expect_eq(b->n_envs, 0);
    free(body);
    fj_batch_free(b);
}

Test(sonar_files, slurm_jobs_real)
{
    fj_batch *b = decode_file("real/0+job-srl-login3.ex3.simula.no.json");
    const fj_envelope *e = &b->envs[0];
    cr_expect_eq(e->kind, FJ_KIND_JOB);
    cr_expect_null(e->node);
    cr_assert_eq(e->u.jobs.n_jobs, 15);
    const fj_slurm_job *j = e->u.jobs.jobs;

    /* Pending: "None allocated", start/end "" */
    cr_expect_eq(j[0].job_id, 924799);
    cr_expect_str_eq(j[0].job_state, "PENDING");
    cr_expect_null(j[0].job_state_raw);
    cr_expect_str_eq(j[0].job_step, "");
    cr_expect_eq(j[0].n_nodes, 0);
    cr_expect_null(j[0].nodes_raw);
    cr_expect_eq(j[0].start_time, 0);
    cr_expect_eq(j[0].end_time, 0);
    cr_expect_eq(j[0].submit_time, 1765909963); /* 2025-12-16T19:32:43+01:00 */
    cr_expect_eq(j[0].time_limit_s, 9998, "time_limit is seconds+2");
    cr_expect_eq(j[0].priority, 4294331328ULL, "priority beyond 2^32, ExtendedUint");
    cr_expect_str_eq(j[0].partition, "dgx2q");
    cr_expect_not_null(find_note(e, "none_assigned", "data.attributes.slurm_jobs[0].nodes[0]"));
    cr_expect_not_null(find_note(e, "empty_time", "data.attributes.slurm_jobs[0].start_time"));

    cr_expect_eq(j[1].time_limit_s, 172800, "2 days");
    cr_assert_eq(j[1].n_nodes, 1);
    cr_expect_str_eq(j[1].nodes[0], "g001");
    cr_expect_str_eq(j[1].nodes_raw, "g001");
    cr_expect_str_eq(j[2].job_step, "batch");
    cr_expect_eq(j[2].time_limit_s, FJ_XU_UNSET, "absent ExtendedUint");
    cr_expect_eq(j[2].priority, FJ_XU_UNSET);

    /* "CANCELLED by 7205" and "None assigned" */
    cr_expect_eq(j[13].job_id, 935008);
    cr_expect_str_eq(j[13].job_state, "CANCELLED");
    cr_expect_str_eq(j[13].job_state_raw, "CANCELLED by 7205");
    cr_expect_eq(j[13].n_nodes, 0);
    cr_expect_eq(j[13].start_time, 1765973266);
    const fj_note *n = find_note(e, "state_suffix", "data.attributes.slurm_jobs[13].job_state");
    cr_assert_not_null(n);
    cr_expect(strstr(n->detail, "CANCELLED by 7205") != NULL);
    cr_expect_not_null(find_note(e, "none_assigned", "data.attributes.slurm_jobs[13].nodes[0]"));
    cr_expect_eq(e->unknown_fields, 0);
    fj_batch_free(b);
}

Test(sonar_files, slurm_jobs_spec_testdata)
{
    fj_batch *b = decode_file("formats-testdata/newfmt_slurmjobs.json");
    cr_assert_eq(b->n_envs, 2);
    const fj_envelope *e = &b->envs[0];
    cr_expect_eq(e->kind, FJ_KIND_JOB);
    cr_expect_not_null(find_note(e, "data_type_alias", "data.type"), "\"jobs\" as DataType");
    cr_expect_eq(e->unknown_fields, 3, "sacct ReqCPUS, ReqMem, ReqNodes");
    cr_assert_eq(e->u.jobs.n_jobs, 1);
    const fj_slurm_job *j = &e->u.jobs.jobs[0];
    cr_expect_str_eq(j->job_step, "0");
    cr_expect_str_eq(j->reservation, "big-cheese");
    cr_expect_eq(j->n_nodes, 12);
    cr_expect_str_eq(j->nodes[0], "c1-10");
    cr_expect_str_eq(j->nodes[10], "c1-20");
    cr_expect_str_eq(j->nodes[11], "bigmem-1");
    cr_expect_str_eq(j->nodes_raw, "c1-[10-20],bigmem-1");
    cr_expect_eq(j->time_limit_s, 98);
    cr_expect_eq(j->priority, 1000);
    cr_expect_eq(j->minimum_cpus_per_node, 2);
    cr_expect_eq(j->suspend_time_s, 37);
    cr_expect_eq(j->requested_memory_per_node_kb, 12345678);
    cr_assert_not_null(j->sacct);
    cr_expect_str_eq(j->sacct->alloc_tres, "billing=128,cpu=128,energy=52238802,mem=472.50G,node=1");
    cr_expect_eq(j->sacct->ave_cpu, 5);
    cr_expect_eq(j->sacct->user_cpu, 11111111);

    const fj_envelope *x = &b->envs[1];
    cr_expect(x->is_error);
    cr_expect_eq(x->kind, FJ_SONAR_KIND_UNKNOWN, "no data, no route: the kind is unknown");
    cr_assert_eq(x->n_errors, 1);
    cr_expect_str_eq(x->errors[0].detail, "No can do");
    cr_expect_str_eq(x->errors[0].node, "c1-26.fox");
    cr_expect_str_eq(x->cluster, "fox.educloud.no");
    cr_expect_eq(x->time, 1741681860);
    fj_batch_free(b);
}

Test(sonar_files, sysinfo_ml1)
{
    fj_batch *b = decode_file("real/0+sysinfo-ml1.hpc.uio.no.json");
    const fj_envelope *e = &b->envs[0];
    const fj_sysinfo *si = &e->u.sysinfo;
    cr_expect_eq(e->kind, FJ_KIND_SYSINFO);
    cr_expect_str_eq(si->os_name, "Linux");
    cr_expect_str_eq(si->os_release, "4.18.0-553.53.1.el8_10.x86_64");
    cr_expect_str_eq(si->architecture, "x86_64");
    cr_expect_eq(si->sockets, 2);
    cr_expect_eq(si->cores_per_socket, 14);
    cr_expect_eq(si->threads_per_core, 2);
    cr_expect_eq(si->memory_kb, 130950172);
    cr_assert_eq(si->distances_dim, 2);
    cr_expect_eq(si->distances[0], 10);
    cr_expect_eq(si->distances[1], 21);
    cr_expect_eq(si->distances[2], 21);
    cr_expect_eq(si->distances[3], 10);
    cr_assert_eq(si->n_cards, 3);
    cr_expect_str_eq(si->cards[0].model, "NVIDIA GeForce RTX 2080 Ti");
    cr_expect_eq(si->cards[0].memory_kb, 11534336);
    cr_expect_eq(si->cards[0].max_memory_clock, 7000);
    fj_batch_free(b);
}

Test(sonar_files, sysinfo_old_fields)
{
    fj_batch *b = decode_file("formats-testdata/newfmt_sysinfo.json");
    cr_assert_eq(b->n_envs, 3);
    cr_expect_eq(b->envs[0].unknown_fields, 1, "software");
    cr_expect_eq(b->envs[0].u.sysinfo.n_cards, 3);
    cr_expect_not_null(find_note(&b->envs[0], "missing_field", "data.attributes.architecture"));
    const fj_envelope *e = &b->envs[1];
    cr_expect_eq(e->unknown_fields, 2, "os, os-version");
    cr_expect_not_null(find_note(e, "unknown_field", "data.attributes.os"));
    cr_expect_not_null(find_note(e, "unknown_field", "data.attributes.os-version"));
    cr_expect_null(e->u.sysinfo.os_name);
    cr_expect_eq(count_notes(e, "missing_field"), 3);
    cr_expect_eq(e->u.sysinfo.n_cards, 0);
    const fj_envelope *x = &b->envs[2];
    cr_expect(x->is_error);
    cr_expect_str_eq(x->errors[0].detail, "Node not cooperating");
    cr_expect_eq(x->time, 0, "the spec's test error has no time");
    cr_expect_null(x->cluster);
    cr_expect_not_null(find_note(x, "missing_field", "errors[0].time"));
    fj_batch_free(b);
}

Test(sonar_files, cluster_fox)
{
    fj_batch *b = decode_file("real/4+cluster.fox.educloud.no.json");
    const fj_envelope *e = &b->envs[0];
    const fj_cluster_info *ci = &e->u.cluster_info;
    cr_expect_eq(e->kind, FJ_KIND_CLUSTER);
    cr_expect_null(e->node);
    cr_expect(ci->slurm);
    cr_assert_eq(ci->n_partitions, 13);
    cr_expect_str_eq(ci->partitions[0].name, "normal");
    cr_expect_eq(ci->partitions[0].n_nodes, 24);
    cr_expect_str_eq(ci->partitions[0].nodes[0], "c1-5");
    cr_expect_str_eq(ci->partitions[0].nodes[23], "c1-28");
    cr_expect_str_eq(ci->partitions[1].name, "accel");
    cr_expect_eq(ci->partitions[1].n_nodes, 14); /* gpu-[1-2,4-5,7-9,11-17] */
    /* First ClusterNodes: bigmem-1, c1-[5,8,10-13,16,21-22,24-28] (14), gpu-[1-2,8-10,13-14] (7) */
    cr_assert_geq(ci->n_nodes, 22);
    cr_expect_str_eq(ci->nodes[0].node, "bigmem-1");
    cr_expect_str_eq(ci->nodes[1].node, "c1-5");
    cr_expect_str_eq(ci->nodes[14].node, "c1-28");
    cr_expect_str_eq(ci->nodes[21].node, "gpu-14");
    cr_assert_eq(ci->nodes[21].n_states, 2);
    cr_expect_str_eq(ci->nodes[21].states[0], "MIXED");
    cr_expect_str_eq(ci->nodes[21].states[1], "PLANNED");
    fj_batch_free(b);
}

Test(sonar_files, cluster_zero_padding)
{
    fj_batch *b = decode_file("real/0+cluster.ex3.simula.no.json");
    const fj_cluster_info *ci = &b->envs[0].u.cluster_info;
    cr_assert_eq(ci->n_nodes, 2);
    cr_expect_str_eq(ci->nodes[0].node, "g001");
    cr_expect_str_eq(ci->nodes[1].node, "g002");
    fj_batch_free(b);
}

Test(sonar_files, sonar_019_sample)
{
    fj_batch *b = decode_file("sonar-0.19-output/head-sample-default.json");
    const fj_sample *s = &b->envs[0].u.sample;
    cr_expect_gt(s->boot, 0);
    cr_assert_eq(s->n_disks, 10);
    cr_expect_str_eq(s->disks[0].name, "loop0");
    cr_expect_eq(s->disks[0].major, 7);
    cr_expect_eq(s->disks[0].n_stats, 17);
    cr_expect_float_eq(s->load1, 3.69, 1e-9);
    cr_expect_eq(s->n_jobs, 80);
    cr_expect_eq(s->jobs[0].job, 0, "job 0 with an epoch: a process with no job");
    cr_expect_eq(s->jobs[0].epoch, 217468716);
    fj_batch_free(b);
}

/* --- normalisations, inline ------------------------------------------------------------------ */

static fj_batch *ok(const char *json, int expect)
{
    fj_batch *b = fj_batch_new();
    fj_err err = {0};
    fj_status st = decode_str(json, expect, b, &err);
    cr_assert_eq(st, FJ_OK, "%s: %s", err.path, err.message);
    cr_assert_eq(b->n_envs, 1);
    return b;
}

static void refused(const char *json, int expect, const char *path, const char *needle)
{
    fj_batch *b = fj_batch_new();
    fj_err err = {0};
    fj_status st = decode_str(json, expect, b, &err);
    cr_expect_eq(st, FJ_EINVAL, "accepted: %s", json);
    cr_expect_str_eq(err.path, path, "message: %s", err.message);
    cr_expect(strstr(err.message, needle) != NULL, "\"%s\" lacks \"%s\"", err.message, needle);
    cr_expect_eq(b->n_envs, 0);
    fj_batch_free(b);
}

Test(sonar, extended_uint)
{
    fj_batch *b = ok(JOBS("{\"job_id\":1,\"job_state\":\"RUNNING\",\"time_limit\":1,\"priority\":0},"
                          "{\"job_id\":2,\"job_state\":\"RUNNING\",\"time_limit\":2,\"priority\":9223372036854775807}"),
                     FJ_KIND_JOB);
    const fj_slurm_job *j = b->envs[0].u.jobs.jobs;
    cr_expect_eq(j[0].time_limit_s, FJ_XU_INFINITE, "1 is infinite (UNLIMITED)");
    cr_expect_eq(j[0].priority, FJ_XU_UNSET);
    cr_expect_eq(j[1].time_limit_s, 0);
    cr_expect_eq(j[1].priority, (uint64_t)INT64_MAX - 2);
    fj_batch_free(b);
    refused(JOBS("{\"job_id\":2,\"job_state\":\"RUNNING\",\"priority\":18446744073709551615}"), FJ_KIND_JOB,
            "data.attributes.slurm_jobs[0].priority", "up to 9223372036854775807");
}

/* Unsigned values past 2^63-1 cannot be stored as they are (signed 64-bit columns): refused,
 * naming the field, never stored changed. */
Test(sonar, unsigned_past_int64_refused)
{
    refused(SAMPLE(",\"jobs\":[{\"job\":1,\"user\":\"u\",\"processes\":[{\"pid\":1,\"cpu_time\":9223372036854775808}]}]"),
            FJ_KIND_SAMPLE, "data.attributes.jobs[0].processes[0].cpu_time", "9223372036854775808 is too large");
    refused(SAMPLE(",\"jobs\":[{\"job\":18446744073709551615,\"user\":\"u\"}]"), FJ_KIND_SAMPLE,
            "data.attributes.jobs[0].job", "18446744073709551615 is too large");
    refused(SAMPLE(",\"system\":{\"cpus\":[1,9223372036854775808]}"), FJ_KIND_SAMPLE,
            "data.attributes.system.cpus[1]", "too large");
    refused(SAMPLE(",\"system\":{\"used_memory\":9223372036854775808}"), FJ_KIND_SAMPLE,
            "data.attributes.system.used_memory", "too large");
    refused(SYSINFO(",\"distances\":[[10,18446744073709551615],[20,10]]"), FJ_KIND_SYSINFO,
            "data.attributes.distances[0][1]", "too large");
    refused(JOBS("{\"job_id\":9223372036854775808,\"job_state\":\"RUNNING\"}"), FJ_KIND_JOB,
            "data.attributes.slurm_jobs[0].job_id", "too large");
}

Test(sonar, performance_state_is_value_plus_one)
{
    fj_batch *b = ok(SAMPLE(",\"system\":{\"gpus\":[{\"uuid\":\"a\",\"performance_state\":0},"
                            "{\"uuid\":\"b\",\"performance_state\":1},{\"uuid\":\"c\"},"
                            "{\"uuid\":\"d\",\"performance_state\":13}]}"),
                     FJ_KIND_SAMPLE);
    const fj_sample_gpu *g = b->envs[0].u.sample.gpus;
    cr_expect_eq(g[0].performance_state, FJ_XU_UNSET);
    cr_expect_eq(g[1].performance_state, 0, "P0");
    cr_expect_eq(g[2].performance_state, FJ_XU_UNSET, "absent");
    cr_expect_eq(g[3].performance_state, 12, "P12");
    fj_batch_free(b);
}

Test(sonar, performance_state_spec_encoding_for_other_producers)
{
    /* fjord-push follows the spec: ExtendedUint, v+2. Only Sonar's own output is off by one. */
    fj_batch *b = ok("{\"meta\":{\"producer\":\"fjord-push\",\"version\":\"0.1.0\"},\"data\":{\"type\":\"sample\","
                     "\"attributes\":{\"time\":\"2025-01-01T00:00:00Z\",\"cluster\":\"c.x\",\"node\":\"n1\","
                     "\"system\":{\"gpus\":[{\"uuid\":\"a\",\"performance_state\":10},"
                     "{\"uuid\":\"b\",\"performance_state\":1},{\"uuid\":\"c\",\"performance_state\":0}]}}}}",
                     FJ_KIND_SAMPLE);
    const fj_sample_gpu *g = b->envs[0].u.sample.gpus;
    cr_expect_eq(g[0].performance_state, 8, "P8");
    cr_expect_eq(g[1].performance_state, FJ_XU_INFINITE);
    cr_expect_eq(g[2].performance_state, FJ_XU_UNSET);
    fj_batch_free(b);
}

Test(sonar, synthetic_pid_boundary)
{
    fj_batch *b = ok(SAMPLE(",\"jobs\":[{\"job\":5,\"user\":\"u\",\"processes\":[{\"pid\":4194303},"
                            "{\"pid\":4194304},{\"pid\":0},{},{\"pid\":9000000,\"rolledup\":3}]}]"),
                     FJ_KIND_SAMPLE);
    const fj_sample_proc *p = b->envs[0].u.sample.jobs[0].procs;
    cr_expect_not(p[0].synthetic_pid, "2^22-1 can be a real pid");
    cr_expect(p[1].synthetic_pid, "2^22 is above any pid_max");
    cr_expect(p[2].synthetic_pid);
    cr_expect(p[3].synthetic_pid, "absent pid is 0");
    cr_expect(p[4].synthetic_pid);
    cr_expect_eq(p[4].rolledup, 3);
    fj_batch_free(b);
}

Test(sonar, null_is_absent)
{
    fj_batch *b = ok("{\"meta\":{\"producer\":\"slurm-monitor\",\"version\":\"1\",\"format\":null},"
                     "\"errors\":null,\"data\":{\"type\":\"sample\",\"attributes\":{" ATTRS0
                     ",\"node\":\"n1\",\"system\":null,\"jobs\":[{\"job\":5,\"user\":\"u\",\"epoch\":null,"
                     "\"processes\":[{\"pid\":7,\"cmd\":null,\"cpu_avg\":null}]}]}}}",
                     FJ_KIND_SAMPLE);
    const fj_envelope *e = &b->envs[0];
    cr_expect_not(e->u.sample.has_system);
    cr_expect_null(e->u.sample.jobs[0].procs[0].cmd);
    cr_expect_eq(e->unknown_fields, 0);
    fj_batch_free(b);
}

Test(sonar, numbers)
{
    fj_batch *b = ok(SAMPLE(",\"system\":{\"load1\":2,\"load5\":0.25,\"gpus\":[{\"uuid\":\"a\",\"temperature\":-5},"
                            "{\"uuid\":\"b\",\"temperature\":9223372036854775807}]},"
                            "\"jobs\":[{\"job\":1,\"user\":\"u\",\"processes\":[{\"pid\":1,\"cpu_avg\":3,"
                            "\"cpu_util\":1e2,\"in_container\":true,\"cpu_time\":9223372036854775807}]}]"),
                     FJ_KIND_SAMPLE);
    const fj_sample *s = &b->envs[0].u.sample;
    cr_expect_float_eq(s->load1, 2.0, 0, "integer accepted for float64");
    cr_expect_float_eq(s->load5, 0.25, 0);
    cr_expect_eq(s->gpus[0].temperature, -5);
    cr_expect_eq(s->gpus[1].temperature, INT64_MAX);
    cr_expect_float_eq(s->jobs[0].procs[0].cpu_avg, 3.0, 0);
    cr_expect_float_eq(s->jobs[0].procs[0].cpu_util, 100.0, 0);
    cr_expect(s->jobs[0].procs[0].in_container);
    cr_expect_eq(s->jobs[0].procs[0].cpu_time, (uint64_t)INT64_MAX, "up to 2^63-1, exactly");
    fj_batch_free(b);
}

Test(sonar, base64_topology)
{
    fj_batch *b = ok(SYSINFO(",\"topo_svg\":\"PHN2Zz4=\",\"topo_text\":\"YQ==\",\"distances\":[]"), FJ_KIND_SYSINFO);
    const fj_sysinfo *si = &b->envs[0].u.sysinfo;
    cr_expect_str_eq(si->topo_svg, "PHN2Zz4=");
    cr_expect_str_eq(si->topo_text, "YQ==");
    cr_expect_null(si->distances);
    cr_expect_eq(si->distances_dim, 0);
    fj_batch_free(b);
    refused(SYSINFO(",\"topo_svg\":\"PHN2Zz4\""), FJ_KIND_SYSINFO, "data.attributes.topo_svg", "multiple of 4");
    refused(SYSINFO(",\"topo_svg\":\"PH=2Zz4=\""), FJ_KIND_SYSINFO, "data.attributes.topo_svg", "byte 2");
    refused(SYSINFO(",\"topo_text\":\"PHN2\\nZz4\""), FJ_KIND_SYSINFO, "data.attributes.topo_text", "byte 4");
}

Test(sonar, state_normalisation)
{
    fj_batch *b = ok(JOBS("{\"job_id\":1,\"job_state\":\"running\"},{\"job_id\":2,\"job_state\":\"OUT_OF_MEMORY\"},"
                          "{\"job_id\":3,\"job_state\":\"cancelled by 0\"}"),
                     FJ_KIND_JOB);
    const fj_envelope *e = &b->envs[0];
    const fj_slurm_job *j = e->u.jobs.jobs;
    cr_expect_str_eq(j[0].job_state, "RUNNING");
    cr_expect_str_eq(j[0].job_state_raw, "running");
    cr_expect_not_null(find_note(e, "state_case", "data.attributes.slurm_jobs[0].job_state"));
    cr_expect_str_eq(j[1].job_state, "OUT_OF_MEMORY");
    cr_expect_null(j[1].job_state_raw);
    cr_expect_str_eq(j[2].job_state, "CANCELLED");
    cr_expect_str_eq(j[2].job_state_raw, "cancelled by 0");
    cr_expect_not_null(find_note(e, "state_suffix", "data.attributes.slurm_jobs[2].job_state"));
    fj_batch_free(b);

    b = ok(CLUSTER(",\"nodes\":[{\"names\":[\"c[1-2]\"],\"states\":[\"idle\",\"\",\"DRAIN\"]}]"), FJ_KIND_CLUSTER);
    e = &b->envs[0];
    const fj_cluster_info *ci = &e->u.cluster_info;
    cr_assert_eq(ci->n_nodes, 2);
    cr_assert_eq(ci->nodes[1].n_states, 2);
    cr_expect_str_eq(ci->nodes[1].states[0], "IDLE");
    cr_expect_str_eq(ci->nodes[1].states[1], "DRAIN");
    cr_expect_not_null(find_note(e, "state_case", "data.attributes.nodes[0].states[0]"));
    cr_expect_not_null(find_note(e, "empty_state", "data.attributes.nodes[0].states[1]"));
    fj_batch_free(b);
}

Test(sonar, notes_are_capped)
{
    char json[8192];
    size_t o = (size_t)snprintf(json, sizeof json, "{" META ",\"data\":{\"type\":\"cluster\",\"attributes\":{" ATTRS0);
    for (int i = 0; i < 100; i++)
        o += (size_t)snprintf(json + o, sizeof json - o, ",\"x%d\":%d", i, i);
    snprintf(json + o, sizeof json - o, "}}}");
    fj_batch *b = ok(json, FJ_KIND_CLUSTER);
    const fj_envelope *e = &b->envs[0];
    cr_expect_eq(e->unknown_fields, 100);
    cr_assert_eq(e->n_notes, FJ_SONAR_MAX_NOTES + 1);
    cr_expect_str_eq(e->notes[FJ_SONAR_MAX_NOTES].kind, "notes_truncated");
    cr_expect_str_eq(e->notes[FJ_SONAR_MAX_NOTES].detail, "36 more notes dropped");
    cr_expect_str_eq(e->notes[0].path, "data.attributes.x0");
    fj_batch_free(b);
}

Test(sonar, envelope_node_budget)
{
    refused(CLUSTER(",\"partitions\":[{\"name\":\"a\",\"nodes\":[\"n[1-600000]\"]},"
                    "{\"name\":\"b\",\"nodes\":[\"m[1-600000]\"]}]"),
            FJ_KIND_CLUSTER, "data.attributes.partitions[1].nodes[0]", "at most 1000000 hosts");
}

Test(sonar, job_and_cluster_envelopes_take_no_node)
{
    /* A `node` in job attributes is not in the spec: ignored, counted. */
    fj_batch *b = ok("{" META ",\"data\":{\"type\":\"job\",\"attributes\":{" ATTRS0 ",\"node\":\"x\"}}}", -1);
    cr_expect_null(b->envs[0].node);
    cr_expect_eq(b->envs[0].unknown_fields, 1);
    fj_batch_free(b);
}

Test(sonar, soft_errors_in_a_sample)
{
    fj_batch *b = ok(SAMPLE(",\"errors\":[{\"time\":\"2025-01-01T00:00:00Z\",\"detail\":\"gpu probe failed\"}]"),
                     FJ_KIND_SAMPLE);
    const fj_envelope *e = &b->envs[0];
    cr_expect_not(e->is_error);
    cr_assert_eq(e->n_errors, 1);
    cr_expect_str_eq(e->errors[0].detail, "gpu probe failed");
    cr_expect_eq(e->errors[0].time, 1735689600);
    fj_batch_free(b);
}

Test(sonar, error_envelope_takes_route_kind)
{
    fj_batch *b = ok("{" META ",\"errors\":[{\"time\":\"2025-01-01T01:00:00+01:00\",\"detail\":\"no\","
                     "\"cluster\":\"c.no\",\"node\":\"n7\"},{\"detail\":\"again\"}]}",
                     FJ_KIND_SYSINFO);
    const fj_envelope *e = &b->envs[0];
    cr_expect(e->is_error);
    cr_expect_eq(e->kind, FJ_KIND_SYSINFO);
    cr_expect_eq(e->n_errors, 2);
    cr_expect_eq(e->time, 1735689600);
    cr_expect_str_eq(e->cluster, "c.no");
    cr_expect_str_eq(e->node, "n7");
    fj_batch_free(b);
}

/* --- bodies ---------------------------------------------------------------------------------- */

Test(sonar_body, concatenated_and_line_separated)
{
    const char *body = SAMPLE("") SAMPLE("") "\n\n  " CLUSTER("") "\r\n";
    fj_batch *b = fj_batch_new();
    tally t = {0};
    fj_err err = {0};
    cr_assert_eq(fj_sonar_decode_body(body, strlen(body), -1, b, on_item, &t, &err), FJ_OK);
    cr_expect_eq(t.items, 3);
    cr_expect_eq(t.failed, 0);
    cr_assert_eq(b->n_envs, 3);
    cr_expect_eq(b->envs[2].kind, FJ_KIND_CLUSTER);
    fj_batch_free(b);
}

Test(sonar_body, syntax_error_skips_to_next_line)
{
    const char *body = SAMPLE("") "\n"
                       "{\"meta\":{\"producer\":\"sonar\",\"version\":\"1\"},\"data\":{\"type\":\"sample\" oops}\n" SAMPLE(
                           "") "\n";
    fj_batch *b = fj_batch_new();
    tally t = {0};
    fj_err err = {0};
    cr_assert_eq(fj_sonar_decode_body(body, strlen(body), FJ_KIND_SAMPLE, b, on_item, &t, &err), FJ_OK);
    cr_expect_eq(t.items, 3);
    cr_expect_eq(t.failed, 1);
    cr_expect_eq(b->n_envs, 2);
    cr_expect_str_eq(t.paths[0], "ok");
    cr_expect_str_eq(t.paths[1], "line 2, column 68", "line counted from the start of the body");
    cr_expect_str_eq(t.paths[2], "ok");
    fj_batch_free(b);
}

Test(sonar_body, syntax_error_in_pretty_printed_body)
{
    const char *body = "{\n  \"meta\": {\"producer\": \"sonar\",\n  \"version\": 1.}\n}\n" SAMPLE("") "\n";
    fj_batch *b = fj_batch_new();
    tally t = {0};
    fj_err err = {0};
    cr_assert_eq(fj_sonar_decode_body(body, strlen(body), FJ_KIND_SAMPLE, b, on_item, &t, &err), FJ_OK);
    cr_expect_eq(t.items, 2, "resumes at the next line starting with '{', not inside the bad object");
    cr_expect_eq(t.failed, 1);
    cr_expect_eq(strncmp(t.paths[0], "line 3, column ", 15), 0, "%s", t.paths[0]);
    cr_expect_eq(b->n_envs, 1);
    fj_batch_free(b);
}

Test(sonar_body, none_accepted_returns_first_error)
{
    const char *body = "{\"meta\":{\"producer\":\"sonar\",\"version\":\"1\"}}\n[1]\n";
    fj_batch *b = fj_batch_new();
    tally t = {0};
    fj_err err = {0};
    cr_expect_eq(fj_sonar_decode_body(body, strlen(body), -1, b, on_item, &t, &err), FJ_EINVAL);
    cr_expect_eq(t.items, 2);
    cr_expect_str_eq(err.path, "");
    cr_expect(strstr(err.message, "neither") != NULL, "%s", err.message);
    cr_expect_eq(b->n_envs, 0);
    fj_batch_free(b);
}

Test(sonar_body, empty)
{
    fj_batch *b = fj_batch_new();
    fj_err err = {0};
    tally t = {0};
    cr_expect_eq(fj_sonar_decode_body("", 0, -1, b, on_item, &t, &err), FJ_EINVAL);
    cr_expect(strstr(err.message, "empty body") != NULL);
    cr_expect_eq(fj_sonar_decode_body(" \n\t\r\n", 5, -1, b, on_item, &t, &err), FJ_EINVAL);
    cr_expect(strstr(err.message, "empty body") != NULL);
    cr_expect_eq(t.items, 0);
    fj_batch_free(b);
}

Test(sonar_body, refused_envelope_leaves_batch_as_before)
{
    fj_batch *b = fj_batch_new();
    fj_err err = {0};
    cr_assert_eq(decode_str(SAMPLE(""), -1, b, &err), FJ_OK);
    for (int i = 0; i < 10; i++) { /* enough to make the envelope array grow */
        fj_status st = decode_str(SAMPLE(",\"jobs\":[{\"job\":1,\"user\":\"u\",\"processes\":[{\"pid\":-1}]}]"), -1, b,
                                  &err);
        cr_assert_eq(st, FJ_EINVAL);
    }
    cr_expect_str_eq(err.path, "data.attributes.jobs[0].processes[0].pid");
    cr_expect_str_eq(err.message, "expected unsigned integer, got negative integer -1");
    cr_assert_eq(b->n_envs, 1);
    cr_expect_str_eq(b->envs[0].node, "n1");
    cr_expect_eq(b->envs[0].u.sample.n_jobs, 0);
    fj_batch_free(b);
}

Test(sonar_body, decode_tree_directly)
{
    fj_arena *a = fj_arena_create();
    fj_json *root;
    fj_err err = {0};
    const char *txt = CLUSTER("");
    cr_assert_eq(fj_json_parse(a, txt, strlen(txt), NULL, &root, &err), FJ_OK);
    fj_batch *b = fj_batch_new();
    cr_expect_eq(fj_sonar_decode(root, FJ_KIND_JOB, b, &err), FJ_EINVAL);
    cr_expect_str_eq(err.path, "data.type");
    cr_expect_eq(b->n_envs, 0);
    cr_expect_eq(fj_sonar_decode(root, FJ_KIND__COUNT, b, &err), FJ_EINTERNAL, "a caller's bug, not bad input");
    cr_expect_eq(b->n_envs, 0);
    cr_expect_eq(fj_sonar_decode(root, FJ_KIND_CLUSTER, b, &err), FJ_OK);
    fj_arena_destroy(a); /* the batch does not point into the tree */
    cr_expect_str_eq(b->envs[0].cluster, "c.no");
    fj_batch_free(b);
}

Test(sonar_body, out_of_memory_is_reported_and_rolled_back)
{
    size_t len = 0;
    char *body = read_file(SONAR_DIR "real/0+job-srl-login3.ex3.simula.no.json", &len);
    cr_assert_not_null(body);
    fj_arena *a = fj_arena_create();
    fj_json *root;
    fj_err err = {0};
    cr_assert_eq(fj_json_parse(a, body, len, NULL, &root, &err), FJ_OK);
    bool succeeded = false;
    for (long n = 0; n < 1000 && !succeeded; n++) {
        fj_batch *b = fj_batch_new();
        cr_assert_not_null(b);
        fj_alloc_fail_after(n);
        fj_status st = fj_sonar_decode(root, FJ_KIND_JOB, b, &err);
        fj_alloc_fail_after(-1);
        if (st == FJ_OK) {
            succeeded = true;
            cr_expect_eq(b->n_envs, 1);
            cr_expect_eq(b->envs[0].u.jobs.n_jobs, 15);
        } else {
            cr_expect_eq(st, FJ_ENOMEM, "after %ld allocations: %s", n, err.message);
            cr_expect_eq(b->n_envs, 0);
        }
        fj_batch_free(b);
    }
    cr_expect(succeeded);
    fj_arena_destroy(a);
    free(body);
}
