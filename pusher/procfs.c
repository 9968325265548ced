/* procfs.c — /proc and /sys parsing for fjord-push. Parsers are tolerant: a field they cannot read
 * stays zero, because one odd kernel file must not cost the whole sample. */
#include "procfs.h"

#include "container.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

long fj_clk_tck(void)
{
    static long tck;
    if (!tck) {
        tck = sysconf(_SC_CLK_TCK);
        if (tck <= 0)
            tck = 100;
    }
    return tck;
}

/* Next line of text starting at *p; returns NULL at the end. The line is not terminated: its
 * length goes to *len. */
static const char *next_line(const char **p, size_t *len)
{
    const char *s = *p;
    if (!s || !*s)
        return NULL;
    const char *nl = strchr(s, '\n');
    *len = nl ? (size_t)(nl - s) : strlen(s);
    *p = nl ? nl + 1 : s + *len;
    return s;
}

static uint64_t meminfo_kb(const char *text, const char *key)
{
    const char *p = text;
    size_t klen = strlen(key);
    while (p && *p) {
        if (!strncmp(p, key, klen) && p[klen] == ':')
            return strtoull(p + klen + 1, NULL, 10);
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return 0;
}

fj_time fj_proc_boot_time(const char *root, fj_buf *scratch)
{
    if (fj_readfile(root, "/proc/stat", scratch) != FJ_OK)
        return 0;
    const char *b = strstr(scratch->data, "\nbtime ");
    return b ? (fj_time)strtoll(b + 7, NULL, 10) : 0;
}

static fj_status parse_stat(const char *text, fj_arena *a, fj_sys_sample *out)
{
    /* Two passes: the highest cpu index sizes a dense array (offline cores stay 0). */
    long maxidx = -1;
    const char *p = text, *line;
    size_t len;
    while ((line = next_line(&p, &len))) {
        if (len > 3 && !strncmp(line, "cpu", 3) && isdigit((unsigned char)line[3])) {
            long idx = strtol(line + 3, NULL, 10);
            if (idx > maxidx && idx < 65536)
                maxidx = idx;
        } else if (len > 6 && !strncmp(line, "btime ", 6)) {
            out->boot = (fj_time)strtoll(line + 6, NULL, 10);
        }
    }
    out->ncpus = (size_t)(maxidx + 1);
    out->cpus = out->ncpus ? fj_arena_calloc(a, out->ncpus, sizeof *out->cpus) : NULL;
    if (out->ncpus && !out->cpus)
        return FJ_ENOMEM;
    long tck = fj_clk_tck();
    p = text;
    while ((line = next_line(&p, &len))) {
        if (!(len > 3 && !strncmp(line, "cpu", 3) && isdigit((unsigned char)line[3])))
            continue;
        char *q;
        long idx = strtol(line + 3, &q, 10);
        if (idx < 0 || idx > maxidx)
            continue;
        uint64_t v[8] = {0};
        for (int i = 0; i < 8; i++)
            v[i] = strtoull(q, &q, 10);
        /* user nice system idle iowait irq softirq steal: busy is all but idle and iowait;
         * guest time is already inside user. */
        uint64_t busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        out->cpus[idx] = busy / (uint64_t)tck;
    }
    return FJ_OK;
}

static fj_status parse_diskstats(const char *text, fj_arena *a, fj_sys_sample *out)
{
    size_t n = 0;
    for (const char *p = text; (p = strchr(p, '\n')); p++)
        n++;
    out->disks = fj_arena_calloc(a, n + 1, sizeof *out->disks);
    if (!out->disks)
        return FJ_ENOMEM;
    const char *p = text, *line;
    size_t len;
    while ((line = next_line(&p, &len))) {
        char name[64];
        unsigned long long maj, min;
        int off = 0;
        char tmp[512];
        if (len >= sizeof tmp)
            continue;
        memcpy(tmp, line, len);
        tmp[len] = '\0';
        if (sscanf(tmp, "%llu %llu %63s%n", &maj, &min, name, &off) != 3)
            continue;
        fj_disk *d = &out->disks[out->ndisks];
        d->name = fj_arena_strdup(a, name);
        if (!d->name)
            return FJ_ENOMEM;
        d->major = maj;
        d->minor = min;
        char *q = tmp + off;
        while (d->nstats < sizeof d->stats / sizeof d->stats[0]) {
            char *e;
            unsigned long long v = strtoull(q, &e, 10);
            if (e == q)
                break;
            d->stats[d->nstats++] = v;
            q = e;
        }
        out->ndisks++;
    }
    return FJ_OK;
}

fj_status fj_proc_system(const char *root, fj_arena *a, fj_buf *scratch, fj_sys_sample *out, fj_err *err)
{
    memset(out, 0, sizeof *out);
    fj_status st = fj_readfile(root, "/proc/stat", scratch);
    if (st != FJ_OK)
        return fj_err_set(err, FJ_EIO, "/proc/stat", "cannot read /proc/stat: %s", fj_status_name(st));
    if ((st = parse_stat(scratch->data, a, out)) != FJ_OK)
        return st;
    st = fj_readfile(root, "/proc/meminfo", scratch);
    if (st != FJ_OK)
        return fj_err_set(err, FJ_EIO, "/proc/meminfo", "cannot read /proc/meminfo: %s", fj_status_name(st));
    out->mem_total_kb = meminfo_kb(scratch->data, "MemTotal");
    uint64_t avail = meminfo_kb(scratch->data, "MemAvailable");
    if (!avail) /* kernels before 3.14 */
        avail = meminfo_kb(scratch->data, "MemFree") + meminfo_kb(scratch->data, "Buffers") +
                meminfo_kb(scratch->data, "Cached");
    out->used_memory_kb = out->mem_total_kb > avail ? out->mem_total_kb - avail : 0;
    if (fj_readfile(root, "/proc/loadavg", scratch) == FJ_OK) {
        unsigned long long run = 0, exist = 0;
        if (sscanf(scratch->data, "%lf %lf %lf %llu/%llu", &out->load1, &out->load5, &out->load15, &run, &exist) ==
            5) {
            out->runnable = run;
            out->existing = exist;
        }
    }
    if (fj_readfile(root, "/proc/diskstats", scratch) == FJ_OK)
        if ((st = parse_diskstats(scratch->data, a, out)) != FJ_OK)
            return st;
    return FJ_OK;
}

/* Value of "key\t: value" in a cpuinfo block, into out. */
static int cpuinfo_field(const char *line, size_t len, const char *key, char *out, size_t n)
{
    size_t klen = strlen(key);
    if (len < klen || strncmp(line, key, klen))
        return 0;
    const char *p = line + klen;
    const char *end = line + len;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p >= end || *p != ':')
        return 0;
    p++;
    while (p < end && *p == ' ')
        p++;
    size_t vlen = (size_t)(end - p);
    if (vlen >= n)
        vlen = n - 1;
    memcpy(out, p, vlen);
    out[vlen] = '\0';
    return 1;
}

static void numa_facts(const char *root, fj_arena *a, fj_buf *scratch, fj_cpu_facts *out)
{
    char path[4096];
    if (!fj_rootpath(path, sizeof path, root, "/sys/devices/system/node"))
        return;
    DIR *d = opendir(path);
    if (!d)
        return;
    unsigned ids[1024];
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 1024) {
        unsigned id;
        char tail;
        if (sscanf(e->d_name, "node%u%c", &id, &tail) == 1)
            ids[n++] = id;
    }
    closedir(d);
    if (!n)
        return;
    /* sort ascending (few entries) */
    for (unsigned i = 1; i < n; i++)
        for (unsigned j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            unsigned t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    out->numa_nodes = n;
    uint64_t *m = fj_arena_calloc(a, (size_t)n * n, sizeof *m);
    if (!m)
        return;
    for (unsigned i = 0; i < n; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "/sys/devices/system/node/node%u/distance", ids[i]);
        if (fj_readfile(root, rel, scratch) != FJ_OK)
            return; /* no matrix rather than a partial one */
        char *q = scratch->data;
        for (unsigned j = 0; j < n; j++) {
            char *e2;
            unsigned long long v = strtoull(q, &e2, 10);
            if (e2 == q)
                return;
            m[(size_t)i * n + j] = v;
            q = e2;
        }
    }
    out->distances = m;
}

fj_status fj_proc_cpu_facts(const char *root, fj_arena *a, fj_buf *scratch, fj_cpu_facts *out)
{
    memset(out, 0, sizeof *out);
    if (fj_readfile(root, "/proc/meminfo", scratch) == FJ_OK)
        out->mem_total_kb = meminfo_kb(scratch->data, "MemTotal");
    numa_facts(root, a, scratch, out);
    if (fj_readfile(root, "/proc/cpuinfo", scratch) != FJ_OK)
        return FJ_OK;
    /* Distinct physical ids (bit set of up to 4096), and the per-socket facts of the first cpu. */
    unsigned char seen[4096 / 8];
    memset(seen, 0, sizeof seen);
    unsigned sockets = 0, cpu_cores = 0, siblings = 0, logical = 0;
    char v[128], impl[32] = "", part[32] = "";
    const char *p = scratch->data, *line;
    size_t len;
    while ((line = next_line(&p, &len))) {
        if (cpuinfo_field(line, len, "processor", v, sizeof v)) {
            logical++;
        } else if (!out->model[0] && cpuinfo_field(line, len, "model name", v, sizeof v)) {
            snprintf(out->model, sizeof out->model, "%s", v);
        } else if (cpuinfo_field(line, len, "physical id", v, sizeof v)) {
            unsigned id = (unsigned)strtoul(v, NULL, 10) % 4096;
            if (!(seen[id / 8] & (1u << (id % 8)))) {
                seen[id / 8] |= (unsigned char)(1u << (id % 8));
                sockets++;
            }
        } else if (!cpu_cores && cpuinfo_field(line, len, "cpu cores", v, sizeof v)) {
            cpu_cores = (unsigned)strtoul(v, NULL, 10);
        } else if (!siblings && cpuinfo_field(line, len, "siblings", v, sizeof v)) {
            siblings = (unsigned)strtoul(v, NULL, 10);
        } else if (!impl[0] && cpuinfo_field(line, len, "CPU implementer", v, sizeof v)) {
            snprintf(impl, sizeof impl, "%.31s", v);
        } else if (!part[0] && cpuinfo_field(line, len, "CPU part", v, sizeof v)) {
            snprintf(part, sizeof part, "%.31s", v);
        }
    }
    if (!out->model[0] && impl[0])
        snprintf(out->model, sizeof out->model, "ARM implementer %s part %s", impl, part);
    out->logical = logical;
    if (!sockets) {
        /* aarch64 and others: the package ids in sysfs */
        memset(seen, 0, sizeof seen);
        for (unsigned i = 0; i < logical; i++) {
            char rel[128], line2[32];
            snprintf(rel, sizeof rel, "/sys/devices/system/cpu/cpu%u/topology/physical_package_id", i);
            if (!fj_readline(root, rel, line2, sizeof line2))
                continue;
            unsigned id = (unsigned)strtoul(line2, NULL, 10) % 4096;
            if (!(seen[id / 8] & (1u << (id % 8)))) {
                seen[id / 8] |= (unsigned char)(1u << (id % 8));
                sockets++;
            }
        }
    }
    if (!sockets)
        sockets = 1;
    out->sockets = sockets;
    if (cpu_cores) {
        out->cores_per_socket = cpu_cores;
        out->threads_per_core = siblings >= cpu_cores ? siblings / cpu_cores : 1;
    } else {
        out->cores_per_socket = logical / sockets ? logical / sockets : 1;
        out->threads_per_core = 1;
    }
    return FJ_OK;
}

void fj_proc_os(const char *root, char *name, size_t nn, char *release, size_t rn, char *arch, size_t an)
{
    name[0] = release[0] = arch[0] = '\0';
    fj_readline(root, "/proc/sys/kernel/ostype", name, nn);
    fj_readline(root, "/proc/sys/kernel/osrelease", release, rn);
    fj_readline(root, "/proc/sys/kernel/arch", arch, an);
    int live = !root || !*root || !strcmp(root, "/");
    if (live && (!name[0] || !release[0] || !arch[0])) {
        struct utsname u;
        if (uname(&u) == 0) {
            if (!name[0])
                snprintf(name, nn, "%s", u.sysname);
            if (!release[0])
                snprintf(release, rn, "%s", u.release);
            if (!arch[0])
                snprintf(arch, an, "%s", u.machine);
        }
    }
}

static uint64_t status_field(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    if (!p || (p != text && p[-1] != '\n'))
        return 0;
    return strtoull(p + strlen(key), NULL, 10);
}

fj_status fj_proc_read(const char *root, uint32_t pid, fj_buf *scratch, fj_proc *out)
{
    memset(out, 0, sizeof *out);
    out->pid = pid;
    char rel[64];
    snprintf(rel, sizeof rel, "/proc/%" PRIu32 "/stat", pid);
    fj_status st = fj_readfile(root, rel, scratch);
    if (st != FJ_OK)
        return st == FJ_EIO ? FJ_EIO : FJ_ENOTFOUND;
    const char *s = scratch->data;
    const char *lp = strchr(s, '(');
    const char *rp = strrchr(s, ')');
    if (!lp || !rp || rp < lp)
        return FJ_EIO;
    size_t clen = (size_t)(rp - lp - 1);
    if (clen >= 48)
        clen = 47;
    memcpy(out->cmd, lp + 1, clen);
    out->cmd[clen] = '\0';
    /* Fields from 3 (state) on, after ") ". */
    const char *q = rp + 2;
    char state = *q;
    unsigned long long f[24] = {0};
    char *e = (char *)q + 1;
    for (int i = 4; i <= 22; i++)
        f[i] = strtoull(e, &e, 10);
    out->ppid = (uint32_t)f[4];
    out->pgrp = (uint32_t)f[5];
    out->kernel_thread = (f[9] & 0x00200000ull) != 0; /* PF_KTHREAD */
    out->cpu_ticks = f[14] + f[15];
    out->child_ticks = f[16] + f[17];
    out->threads = f[20];
    out->start_ticks = f[22];
    if (state == 'Z')
        strcat(out->cmd, " <defunct>");

    snprintf(rel, sizeof rel, "/proc/%" PRIu32 "/status", pid);
    if (fj_readfile(root, rel, scratch) == FJ_OK) {
        out->uid = (uint32_t)status_field(scratch->data, "Uid:");
        out->rss_anon_kb = status_field(scratch->data, "RssAnon:");
        out->vm_kb = status_field(scratch->data, "VmData:") + status_field(scratch->data, "VmStk:");
        uint64_t th = status_field(scratch->data, "Threads:");
        if (th)
            out->threads = th;
    }
    snprintf(rel, sizeof rel, "/proc/%" PRIu32 "/cgroup", pid);
    if (fj_readfile(root, rel, scratch) == FJ_OK) {
        const char *j = strstr(scratch->data, "/job_");
        if (j)
            out->slurm_job = strtoull(j + 5, NULL, 10);
        out->container_cgroup = fj_container_cgroup(scratch->data);
    }
    snprintf(rel, sizeof rel, "/proc/%" PRIu32 "/io", pid);
    if (fj_readfile(root, rel, scratch) == FJ_OK) {
        out->have_io = 1;
        out->read_kb = (status_field(scratch->data, "read_bytes:") + 1023) / 1024;
        out->written_kb = (status_field(scratch->data, "write_bytes:") + 1023) / 1024;
        out->cancelled_kb = (status_field(scratch->data, "cancelled_write_bytes:") + 1023) / 1024;
    }
    return FJ_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

fj_status fj_proc_pids(const char *root, fj_arena *a, uint32_t **pids, size_t *n)
{
    char path[4096];
    *pids = NULL;
    *n = 0;
    if (!fj_rootpath(path, sizeof path, root, "/proc"))
        return FJ_EINVAL;
    DIR *d = opendir(path);
    if (!d)
        return FJ_EIO;
    size_t cap = 1024, cnt = 0;
    uint32_t *v = fj_arena_alloc(a, cap * sizeof *v);
    struct dirent *e;
    fj_status st = v ? FJ_OK : FJ_ENOMEM;
    while (st == FJ_OK && (e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        if (cnt == cap) {
            uint32_t *nv = fj_arena_alloc(a, cap * 2 * sizeof *nv);
            if (!nv) {
                st = FJ_ENOMEM;
                break;
            }
            memcpy(nv, v, cap * sizeof *v);
            v = nv;
            cap *= 2;
        }
        v[cnt++] = (uint32_t)strtoul(e->d_name, NULL, 10);
    }
    closedir(d);
    if (st != FJ_OK)
        return st;
    qsort(v, cnt, sizeof *v, cmp_u32);
    *pids = v;
    *n = cnt;
    return FJ_OK;
}

void fj_user_name(const char *root, uint32_t uid, char out[64])
{
    snprintf(out, 64, "_user_%" PRIu32, uid);
    if (!root || !*root || !strcmp(root, "/")) {
        struct passwd pw, *res = NULL;
        char buf[4096];
        if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res && res->pw_name && *res->pw_name)
            snprintf(out, 64, "%s", res->pw_name);
        return;
    }
    char path[4096];
    if (!fj_rootpath(path, sizeof path, root, "/etc/passwd"))
        return;
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        if ((uint32_t)strtoul(c2 + 1, NULL, 10) == uid && c1 > line) {
            *c1 = '\0';
            snprintf(out, 64, "%.63s", line);
            break;
        }
    }
    fclose(f);
}
