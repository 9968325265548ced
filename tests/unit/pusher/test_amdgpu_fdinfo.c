/* test_amdgpu_fdinfo.c — AMD per-process GPU use from the DRM fdinfo files of the fixture
 * tests/data/pusher/node-amd: process 4242 holds two descriptors of one DRM client (17) on card
 * c1:00.0 plus non-GPU descriptors; process 4343 holds client 21 on the same card and an i915
 * descriptor. The second reading comes from a temporary root with later counters. */
#include "amdgpu_fdinfo.h"
#include "collect.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROOT FJ_SOURCE_DIR "/tests/data/pusher/node-amd"

/* As amdgpu.c reads them from the fixture's sysfs: card1 (c1:00.0) is AMD index 1. */
static const fj_amd_card_ref cards[2] = {
    {.address = "0000:41:00.0", .index = 0, .uuid = "SYN-n1-amd-0000:41:00.0", .vram_kb = 0},
    {.address = "0000:c1:00.0", .index = 1, .uuid = "AMD-0x5e2a1f3c4b5d6e7f", .vram_kb = 206141652992ull / 1024},
};

static const fj_gpu_proc *find(const fj_gpu_proc *p, size_t n, uint32_t pid)
{
    for (size_t i = 0; i < n; i++)
        if (p[i].pid == pid)
            return &p[i];
    return NULL;
}

static void put(const char *root, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s%s", root, rel);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static void link_dri(const char *root, const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s%s", root, rel);
    cr_assert_eq(symlink("/dev/dri/renderD129", path), 0, "%s", path);
}

/* The fixture's two processes two seconds later: client 17 ran 0.6 s gfx + 0.2 s compute, client
 * 21 ran 0.1 s gfx, and 4343 opened a new client 22 whose counters have no previous reading. */
static void later_root(char *root)
{
    strcpy(root, "/tmp/fj_fdinfo_XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    const char *dirs[] = {"/proc", "/proc/4242", "/proc/4242/fd", "/proc/4242/fdinfo", "/proc/4343", "/proc/4343/fd",
                          "/proc/4343/fdinfo"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s%s", root, dirs[i]);
        cr_assert_eq(mkdir(path, 0755), 0, "%s", path);
    }
    const char *c17 = "drm-driver:\tamdgpu\ndrm-client-id:\t17\ndrm-pdev:\t0000:c1:00.0\n"
                      "drm-memory-vram:\t4194304 KiB\ndrm-engine-gfx:\t1600000000 ns\ndrm-engine-compute:\t700000000 ns\n";
    link_dri(root, "/proc/4242/fd/5");
    link_dri(root, "/proc/4242/fd/6");
    put(root, "/proc/4242/fdinfo/5", c17);
    put(root, "/proc/4242/fdinfo/6", c17);
    link_dri(root, "/proc/4343/fd/3");
    link_dri(root, "/proc/4343/fd/9");
    put(root, "/proc/4343/fdinfo/3", "drm-driver:\tamdgpu\ndrm-client-id:\t21\ndrm-pdev:\t0000:c1:00.0\n"
                                     "drm-memory-vram:\t1024 MiB\ndrm-engine-gfx:\t300000000 ns\n");
    put(root, "/proc/4343/fdinfo/9", "drm-driver:\tamdgpu\ndrm-client-id:\t22\ndrm-pdev:\t0000:c1:00.0\n"
                                     "drm-memory-vram:\t2048 KiB\ndrm-engine-gfx:\t5000000000 ns\n");
}

static void remove_root(const char *root)
{
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    cr_assert_eq(system(cmd), 0);
}

Test(amdgpu_fdinfo, first_reading_dedupes_clients)
{
    fj_amd_fdinfo *t = fj_amd_fdinfo_new();
    fj_arena *a = fj_arena_create();
    fj_gpu_proc *p;
    size_t n;
    cr_assert_eq(fj_amd_fdinfo_sample(t, ROOT, cards, 2, 1000000000, a, &p, &n), FJ_OK);
    cr_assert_eq(n, 2); /* 4242 and 4343 on card 1; the i915 descriptor is not ours */
    const fj_gpu_proc *x = find(p, n, 4242), *y = find(p, n, 4343);
    cr_assert(x && y);
    cr_assert_eq(x->index, 1);
    cr_assert_str_eq(x->uuid, "AMD-0x5e2a1f3c4b5d6e7f");
    cr_assert_eq(x->gpu_memory_kb, 4194304); /* two descriptors, one client: counted once */
    cr_assert_float_eq(x->gpu_memory_util, 100.0 * 4194304 / (206141652992.0 / 1024), 1e-9);
    cr_assert_float_eq(x->gpu_util, 0.0, 1e-12); /* no previous reading yet */
    cr_assert_eq(y->gpu_memory_kb, 1048576); /* 1024 MiB */
    fj_arena_destroy(a);
    fj_amd_fdinfo_free(t);
}

Test(amdgpu_fdinfo, utilisation_from_two_readings)
{
    char later[64];
    later_root(later);
    fj_amd_fdinfo *t = fj_amd_fdinfo_new();
    fj_arena *a = fj_arena_create();
    fj_gpu_proc *p;
    size_t n;
    cr_assert_eq(fj_amd_fdinfo_sample(t, ROOT, cards, 2, 1000000000, a, &p, &n), FJ_OK);
    cr_assert_eq(fj_amd_fdinfo_sample(t, later, cards, 2, 3000000000, a, &p, &n), FJ_OK);
    remove_root(later);
    cr_assert_eq(n, 2);
    const fj_gpu_proc *x = find(p, n, 4242), *y = find(p, n, 4343);
    cr_assert(x && y);
    /* (0.6 + 0.2) s busy in 2 s; counting the duplicate descriptor twice would give 80 */
    cr_assert_float_eq(x->gpu_util, 40.0, 1e-9);
    cr_assert_eq(x->gpu_memory_kb, 4194304);
    /* client 21: 0.1 s in 2 s; new client 22 adds memory but no utilisation before its 2nd reading */
    cr_assert_float_eq(y->gpu_util, 5.0, 1e-9);
    cr_assert_eq(y->gpu_memory_kb, 1048576 + 2048);
    fj_arena_destroy(a);
    fj_amd_fdinfo_free(t);
}

Test(amdgpu_fdinfo, no_cards_no_scan)
{
    fj_amd_fdinfo *t = fj_amd_fdinfo_new();
    fj_arena *a = fj_arena_create();
    fj_gpu_proc *p = (fj_gpu_proc *)1;
    size_t n = 9;
    cr_assert_eq(fj_amd_fdinfo_sample(t, ROOT, cards, 0, 1, a, &p, &n), FJ_OK);
    cr_assert_eq(n, 0);
    cr_assert_null(p);
    fj_arena_destroy(a);
    fj_amd_fdinfo_free(t);
}

/* The whole sample: the AMD processes are selected by processes=gpu and carry their card. */
Test(amdgpu_fdinfo, in_the_sample)
{
    fj_push_config cfg;
    fj_push_config_init(&cfg);
    free(cfg.root);
    cfg.root = strdup(ROOT);
    free(cfg.nvml_library);
    cfg.nvml_library = strdup("none");
    free(cfg.node);
    cfg.node = strdup("n1");
    cfg.cluster = strdup("c");
    cfg.processes = FJ_PROCS_GPU;
    cfg.fixed_time = 1698400000;
    fj_collector *c = fj_collector_new(&cfg);
    cr_assert_not_null(c);
    fj_buf out;
    fj_buf_init(&out, 1 << 20);
    fj_err err = {.code = ""};
    cr_assert_eq(fj_collect_sample(c, &out, &err), FJ_OK, "%s", err.message);
    const char *j = out.data;
    cr_assert(strstr(j, "\"cmd\":\"rocm_train\",\"pid\":4242,"), "%s", j);
    cr_assert(strstr(j, "\"gpus\":[{\"index\":1,\"uuid\":\"AMD-0x5e2a1f3c4b5d6e7f\",\"gpu_util\":0,"
                        "\"gpu_memory\":4194304,\"gpu_memory_util\":2.08}]"),
              "%s", j);
    cr_assert(strstr(j, "\"cmd\":\"glxgears\",\"pid\":4343,"), "%s", j);
    fj_buf_free(&out);
    fj_collector_free(c);
    fj_push_config_free(&cfg);
}
