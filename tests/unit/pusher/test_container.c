/* test_container.c — in_container: the node-level signs (tests/data/pusher/container-*, one sign
 * each), the spec's containerd ancestry and cgroup marks (tests/data/pusher/node-containerd:
 * 900 containerd-shim child of init, 901 its child, 905 a grandchild, 902 a login shell, 903 in
 * a docker cgroup), and the flag in whole samples both ways. */
#include "collect.h"
#include "alloc.h"
#include "container.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DATA FJ_SOURCE_DIR "/tests/data/pusher/"

Test(container, view_signs)
{
    cr_assert(fj_container_view(DATA "container-docker"));  /* /.dockerenv */
    cr_assert(fj_container_view(DATA "container-podman"));  /* /run/.containerenv */
    cr_assert(fj_container_view(DATA "container-nspawn"));  /* container= in PID 1's environment */
    cr_assert(fj_container_view(DATA "container-cgroup"));  /* docker in PID 1's cgroup */
    cr_assert_not(fj_container_view(DATA "node-containerd")); /* a host running containers */
    cr_assert_not(fj_container_view(DATA "node-x86"));        /* no /proc/1 at all */
}

Test(container, cgroup_marks)
{
    cr_assert(fj_container_cgroup("0::/system.slice/docker-9ec39b91.scope\n"));
    cr_assert(fj_container_cgroup("0::/machine.slice/libpod-5a1b.scope/container\n"));
    cr_assert(fj_container_cgroup("0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-77.scope\n"));
    cr_assert_not(fj_container_cgroup("0::/system.slice/slurmstepd.scope/job_4242/step_0\n"));
    cr_assert_not(fj_container_cgroup("0::/system.slice/containerd.service\n")); /* the daemon itself */
    cr_assert_not(fj_container_cgroup(NULL));
}

Test(container, containerd_ancestry)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 16);
    const char *r = DATA "node-containerd";
    cr_assert(fj_container_ancestry(r, 901, &b));     /* child of the shim */
    cr_assert(fj_container_ancestry(r, 905, &b));     /* grandchild */
    cr_assert_not(fj_container_ancestry(r, 900, &b)); /* the shim is not in the container */
    cr_assert_not(fj_container_ancestry(r, 902, &b));
    cr_assert_not(fj_container_ancestry(r, 1, &b));
    cr_assert_not(fj_container_ancestry(r, 4711, &b)); /* gone */
    fj_buf_free(&b);
}

static char *sample_of(const char *root)
{
    fj_push_config cfg;
    fj_push_config_init(&cfg);
    free(cfg.root);
    cfg.root = strdup(root);
    free(cfg.nvml_library);
    cfg.nvml_library = strdup("none");
    free(cfg.node);
    cfg.node = strdup("n1");
    cfg.cluster = strdup("c");
    cfg.amd = 0;
    cfg.processes = FJ_PROCS_ALL;
    cfg.fixed_time = 1698400000;
    fj_collector *c = fj_collector_new(&cfg);
    cr_assert_not_null(c);
    fj_buf out;
    fj_buf_init(&out, 1 << 20);
    fj_err err = {.code = ""};
    cr_assert_eq(fj_collect_sample(c, &out, &err), FJ_OK, "%s", err.message);
    fj_collector_free(c);
    fj_push_config_free(&cfg);
    return out.data;
}

static int flagged(const char *json, const char *cmd)
{
    char key[64];
    snprintf(key, sizeof key, "\"cmd\":\"%s\",", cmd);
    const char *p = strstr(json, key);
    cr_assert_not_null(p, "%s not in %s", cmd, json);
    const char *end = strchr(p, '}');
    const char *f = strstr(p, "\"in_container\":true");
    return f && f < end;
}

Test(container, sample_on_a_host)
{
    char *j = sample_of(DATA "node-containerd");
    cr_assert(flagged(j, "python3"), "%s", j);
    cr_assert(flagged(j, "pincpu"), "%s", j);
    cr_assert(flagged(j, "nginx"), "%s", j);
    cr_assert_not(flagged(j, "containerd-shim"), "%s", j);
    cr_assert_not(flagged(j, "bash"), "%s", j);
    cr_assert_not(flagged(j, "systemd"), "%s", j);
    cr_assert(strstr(j, "\"pid\":901,\"ppid\":900,\"in_container\":true,\"num_threads\":0,"), "%s", j);
    fj_free(j);
}

/* The same processes seen from inside a container (a root with /.dockerenv): all of them. */
Test(container, sample_inside_a_container)
{
    char root[] = "/tmp/fj_container_XXXXXX", path[256];
    cr_assert_not_null(mkdtemp(root));
    snprintf(path, sizeof path, "%s/proc", root);
    cr_assert_eq(symlink(DATA "node-containerd/proc", path), 0);
    snprintf(path, sizeof path, "%s/.dockerenv", root);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fclose(f);
    char *j = sample_of(root);
    unlink(path);
    snprintf(path, sizeof path, "%s/proc", root);
    unlink(path);
    rmdir(root);
    cr_assert(flagged(j, "bash"), "%s", j);
    cr_assert(flagged(j, "containerd-shim"), "%s", j);
    cr_assert(flagged(j, "systemd"), "%s", j);
    fj_free(j);
}
