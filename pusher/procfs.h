/* procfs.h — readers for /proc and /sys under a root prefix (so tests point them at fixture trees).
 * Every reader fills caller memory or an arena; none keeps state. Files are read whole with one
 * open/read/close into a caller's fj_buf (reused between calls on the hot path). */
#ifndef FJ_PUSH_PROCFS_H
#define FJ_PUSH_PROCFS_H

#include "arena.h"
#include "buf.h"
#include "fj_status.h"
#include "rootfs.h"
#include "timefmt.h"

#include <stddef.h>
#include <stdint.h>

typedef struct fj_disk {
    const char *name;
    uint64_t major, minor;
    uint64_t stats[20];
    size_t nstats;
} fj_disk;

/* The node-wide part of a sample. */
typedef struct fj_sys_sample {
    fj_time boot;             /* btime from /proc/stat */
    uint64_t *cpus;           /* cumulative busy seconds per core, index order, dense */
    size_t ncpus;
    uint64_t mem_total_kb, used_memory_kb;
    double load1, load5, load15;
    uint64_t runnable, existing;
    fj_disk *disks;
    size_t ndisks;
} fj_sys_sample;

/* /proc/stat, /proc/meminfo, /proc/loadavg, /proc/diskstats. scratch is reused. A missing
 * /proc/stat or /proc/meminfo is an error (FJ_EIO with a message); a missing loadavg or
 * diskstats only leaves those fields empty. */
fj_status fj_proc_system(const char *root, fj_arena *a, fj_buf *scratch, fj_sys_sample *out, fj_err *err);

/* Boot time from /proc/stat (0 when unknown). */
fj_time fj_proc_boot_time(const char *root, fj_buf *scratch);

typedef struct fj_cpu_facts {
    char model[128];
    unsigned sockets, cores_per_socket, threads_per_core, logical;
    uint64_t mem_total_kb;
    unsigned numa_nodes;
    uint64_t *distances; /* numa_nodes^2 row-major, in the arena; NULL when unknown */
} fj_cpu_facts;

/* CPU model, sockets, cores and threads from /proc/cpuinfo (and /sys/devices/system/cpu when
 * cpuinfo lacks "physical id", as on aarch64), memory from /proc/meminfo, NUMA nodes and
 * distances from /sys/devices/system/node. Missing pieces stay 0. */
fj_status fj_proc_cpu_facts(const char *root, fj_arena *a, fj_buf *scratch, fj_cpu_facts *out);

/* OS name, release and machine: root/proc/sys/kernel/{ostype,osrelease,arch}, uname() for what is
 * missing when root is "/". */
void fj_proc_os(const char *root, char *name, size_t nn, char *release, size_t rn, char *arch, size_t an);

/* One process. */
typedef struct fj_proc {
    uint32_t pid, ppid, pgrp, uid;
    char cmd[64];            /* comm, " <defunct>" appended for zombies */
    uint64_t rss_anon_kb;    /* RssAnon */
    uint64_t vm_kb;          /* VmData + VmStk */
    uint64_t threads;        /* Threads (the spec sends threads - 1) */
    uint64_t cpu_ticks;      /* utime + stime: its own, not its reaped children's */
    uint64_t child_ticks;    /* cutime + cstime: its reaped (waited-for) children's, whole lifetimes */
    uint64_t start_ticks;    /* starttime since boot */
    int have_io;
    uint64_t read_kb, written_kb, cancelled_kb;
    uint64_t slurm_job;      /* from /proc/PID/cgroup "job_N"; 0 when not a Slurm job */
    int container_cgroup;    /* /proc/PID/cgroup names a container runtime (container.h) */
    int kernel_thread;
} fj_proc;

/* Reads /proc/PID/{stat,status,cgroup,io}. FJ_ENOTFOUND when the process is gone. */
fj_status fj_proc_read(const char *root, uint32_t pid, fj_buf *scratch, fj_proc *out);

/* Numeric entries of root/proc, ascending, in the arena. */
fj_status fj_proc_pids(const char *root, fj_arena *a, uint32_t **pids, size_t *n);

/* User name for a uid: root/etc/passwd when root is not "/", getpwuid_r otherwise;
 * "_user_<uid>" when unknown. out must hold 64 bytes. */
void fj_user_name(const char *root, uint32_t uid, char out[64]);

/* sysconf(_SC_CLK_TCK), cached. */
long fj_clk_tck(void);

#endif
