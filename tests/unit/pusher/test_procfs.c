/* test_procfs.c — /proc and /sys parsing against the fixture root tests/data/pusher/node-x86
 * (Sonar's own /proc/stat, /proc/meminfo and /proc/cpuinfo fixtures plus hand-made processes). */
#include "procfs.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROOT FJ_SOURCE_DIR "/tests/data/pusher/node-x86"

Test(procfs, system_sample)
{
    fj_arena *a = fj_arena_create();
    fj_buf scratch;
    fj_buf_init(&scratch, 1 << 20);
    fj_sys_sample s;
    fj_err err = {.code = ""};
    cr_assert_eq(fj_proc_system(ROOT, a, &scratch, &s, &err), FJ_OK);
    cr_assert_eq(s.boot, 1698303295);
    cr_assert_eq(s.ncpus, 8);
    /* cpu0: user 32528 + nice 189 + system 19573 + irq 0 + softirq 1149 + steal 0 ticks */
    cr_assert_eq(s.cpus[0], (32528 + 189 + 19573 + 1149) / fj_clk_tck());
    cr_assert_eq(s.mem_total_kb, 16093776);
    cr_assert_eq(s.used_memory_kb, 16093776 - 8162068);
    cr_assert_float_eq(s.load1, 1.25, 1e-9);
    cr_assert_float_eq(s.load15, 0.10, 1e-9);
    cr_assert_eq(s.runnable, 3);
    cr_assert_eq(s.existing, 412);
    cr_assert_eq(s.ndisks, 2);
    cr_assert_str_eq(s.disks[1].name, "nvme0n1");
    cr_assert_eq(s.disks[1].major, 259);
    cr_assert_eq(s.disks[1].nstats, 17);
    cr_assert_eq(s.disks[1].stats[0], 112);
    fj_buf_free(&scratch);
    fj_arena_destroy(a);
}

Test(procfs, missing_stat_is_an_error)
{
    fj_arena *a = fj_arena_create();
    fj_buf scratch;
    fj_buf_init(&scratch, 1 << 20);
    fj_sys_sample s;
    fj_err err = {.code = ""};
    cr_assert_eq(fj_proc_system("/nonexistent-root", a, &scratch, &s, &err), FJ_EIO);
    cr_assert(strstr(err.message, "/proc/stat"));
    fj_buf_free(&scratch);
    fj_arena_destroy(a);
}

Test(procfs, cpu_facts)
{
    fj_arena *a = fj_arena_create();
    fj_buf scratch;
    fj_buf_init(&scratch, 1 << 20);
    fj_cpu_facts f;
    cr_assert_eq(fj_proc_cpu_facts(ROOT, a, &scratch, &f), FJ_OK);
    cr_assert_str_eq(f.model, "Intel(R) Xeon(R) CPU E5-2637 v4 @ 3.50GHz");
    cr_assert_eq(f.sockets, 2);
    cr_assert_eq(f.cores_per_socket, 4);
    cr_assert_eq(f.threads_per_core, 2);
    cr_assert_eq(f.logical, 16);
    cr_assert_eq(f.mem_total_kb, 16093776);
    cr_assert_eq(f.numa_nodes, 2);
    cr_assert_not_null(f.distances);
    cr_assert_eq(f.distances[0], 10);
    cr_assert_eq(f.distances[1], 21);
    cr_assert_eq(f.distances[2], 21);
    cr_assert_eq(f.distances[3], 10);
    fj_buf_free(&scratch);
    fj_arena_destroy(a);
}

Test(procfs, aarch64_cpuinfo_without_model_name)
{
    /* Sonar's aarch64 fixture has no "model name" and no "physical id". */
    char dir[] = "/tmp/fj-procfs-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/proc && cp %s/data/node-fixtures/src__linux__testdata__cpuinfo-aarch64.txt %s/proc/cpuinfo",
             dir, FJ_SHARED_DIR, dir);
    cr_assert_eq(system(cmd), 0);
    fj_arena *a = fj_arena_create();
    fj_buf scratch;
    fj_buf_init(&scratch, 1 << 20);
    fj_cpu_facts f;
    cr_assert_eq(fj_proc_cpu_facts(dir, a, &scratch, &f), FJ_OK);
    cr_assert_str_eq(f.model, "ARM implementer 0x41 part 0xd0c");
    cr_assert_eq(f.sockets, 1);
    cr_assert_eq(f.threads_per_core, 1);
    cr_assert_eq(f.cores_per_socket, f.logical);
    cr_assert_gt(f.logical, 1);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    fj_buf_free(&scratch);
    fj_arena_destroy(a);
}

Test(procfs, os)
{
    char name[64], rel[128], arch[64];
    fj_proc_os(ROOT, name, sizeof name, rel, sizeof rel, arch, sizeof arch);
    cr_assert_str_eq(name, "Linux");
    cr_assert_str_eq(rel, "5.14.0-427.37.1.el9_4.x86_64");
    cr_assert_str_eq(arch, "x86_64");
}

Test(procfs, process)
{
    fj_buf scratch;
    fj_buf_init(&scratch, 1 << 20);
    fj_proc p;
    cr_assert_eq(fj_proc_read(ROOT, 5000, &scratch, &p), FJ_OK);
    cr_assert_str_eq(p.cmd, "python3");
    cr_assert_eq(p.ppid, 4990);
    cr_assert_eq(p.pgrp, 4990);
    cr_assert_eq(p.uid, 1001);
    cr_assert_eq(p.rss_anon_kb, 2048000);
    cr_assert_eq(p.vm_kb, 3000000 + 132);
    cr_assert_eq(p.threads, 5);
    cr_assert_eq(p.cpu_ticks, 15000);
    cr_assert_eq(p.child_ticks, 0);
    cr_assert_eq(p.start_ticks, 15000);
    cr_assert_eq(p.slurm_job, 4242);
    cr_assert(p.have_io);
    cr_assert_eq(p.read_kb, (31858688 + 1023) / 1024);
    cr_assert_eq(p.written_kb, (11223040 + 1023) / 1024);
    cr_assert_eq(p.cancelled_kb, (1433600 + 1023) / 1024);
    cr_assert(!p.kernel_thread);

    cr_assert_eq(fj_proc_read(ROOT, 7001, &scratch, &p), FJ_OK);
    cr_assert_str_eq(p.cmd, "my app (v2)"); /* parentheses inside comm */
    cr_assert_eq(p.slurm_job, 0);
    cr_assert(!p.have_io);
    cr_assert_eq(fj_proc_read(ROOT, 7100, &scratch, &p), FJ_OK);
    cr_assert_str_eq(p.cmd, "zombie <defunct>");
    cr_assert_eq(fj_proc_read(ROOT, 2, &scratch, &p), FJ_OK);
    cr_assert(p.kernel_thread);
    cr_assert_eq(fj_proc_read(ROOT, 123456, &scratch, &p), FJ_ENOTFOUND);
    fj_buf_free(&scratch);
}

Test(procfs, pids_and_users)
{
    fj_arena *a = fj_arena_create();
    uint32_t *pids;
    size_t n;
    cr_assert_eq(fj_proc_pids(ROOT, a, &pids, &n), FJ_OK);
    cr_assert_eq(n, 5);
    uint32_t want[] = {2, 5000, 5001, 7001, 7100};
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(pids[i], want[i]);
    char u[64];
    fj_user_name(ROOT, 1001, u);
    cr_assert_str_eq(u, "alice");
    fj_user_name(ROOT, 4321, u);
    cr_assert_str_eq(u, "_user_4321");
    fj_arena_destroy(a);
}

/* cutime and cstime (fields 16 and 17): the reaped children's time, apart from the own. */
Test(procfs, reaped_children_ticks)
{
    char root[] = "/tmp/fj_procfs_XXXXXX", path[256];
    cr_assert_not_null(mkdtemp(root));
    snprintf(path, sizeof path, "%s/proc", root);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/proc/77", root);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/proc/77/stat", root);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("77 (make) S 1 77 77 0 -1 4194560 100 0 0 0 120 30 4500 700 20 0 1 0 900 1000000 500 "
          "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n", f);
    fclose(f);
    fj_buf scratch;
    fj_buf_init(&scratch, 1 << 20);
    fj_proc p;
    cr_assert_eq(fj_proc_read(root, 77, &scratch, &p), FJ_OK);
    cr_assert_eq(p.cpu_ticks, 120 + 30, "utime + stime");
    cr_assert_eq(p.child_ticks, 4500 + 700, "cutime + cstime");
    cr_assert_eq(p.start_ticks, 900);
    fj_buf_free(&scratch);
    unlink(path);
    snprintf(path, sizeof path, "%s/proc/77", root);
    rmdir(path);
    snprintf(path, sizeof path, "%s/proc", root);
    rmdir(path);
    rmdir(root);
}
