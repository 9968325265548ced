/* amdgpu.c — AMD GPUs from sysfs. The files are the ones amdgpu documents (gpu_busy_percent,
 * mem_info_vram_*, pp_dpm_*clk, hwmon power/temperature/fan); missing ones leave fields at zero. */
#include "amdgpu.h"

#include "procfs.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct amd_dev {
    char dir[96];    /* /sys/class/drm/cardN/device */
    char hwmon[160]; /* .../hwmon/hwmonM, "" when absent */
    char address[32];
} amd_dev;

static int cmp_dev(const void *a, const void *b)
{
    return strcmp(((const amd_dev *)a)->address, ((const amd_dev *)b)->address);
}

static int read_u64(const char *root, const char *dir, const char *file, unsigned long long *v)
{
    char rel[320], line[64];
    snprintf(rel, sizeof rel, "%s/%s", dir, file);
    if (!fj_readline(root, rel, line, sizeof line))
        return 0;
    char *e;
    *v = strtoull(line, &e, 0);
    return e != line;
}

/* Up to 64 AMD devices, sorted by PCI address. */
static size_t find_devices(const char *root, amd_dev *out, size_t max)
{
    char path[4096];
    if (!fj_rootpath(path, sizeof path, root, "/sys/class/drm"))
        return 0;
    DIR *d = opendir(path);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        unsigned idx;
        char tail;
        if (sscanf(e->d_name, "card%u%c", &idx, &tail) != 1)
            continue;
        amd_dev *dev = &out[n];
        memset(dev, 0, sizeof *dev);
        snprintf(dev->dir, sizeof dev->dir, "/sys/class/drm/card%u/device", idx);
        char rel[160], line[256];
        snprintf(rel, sizeof rel, "%s/vendor", dev->dir);
        if (!fj_readline(root, rel, line, sizeof line) || strtoul(line, NULL, 0) != 0x1002)
            continue;
        /* The address and the driver from uevent: works for symlinks and fixture directories. */
        snprintf(rel, sizeof rel, "%s/uevent", dev->dir);
        char full[4096];
        int amdgpu = 0;
        if (fj_rootpath(full, sizeof full, root, rel)) {
            FILE *f = fopen(full, "re");
            if (f) {
                while (fgets(line, sizeof line, f)) {
                    line[strcspn(line, "\n")] = '\0';
                    if (!strncmp(line, "PCI_SLOT_NAME=", 14))
                        snprintf(dev->address, sizeof dev->address, "%.31s", line + 14);
                    else if (!strcmp(line, "DRIVER=amdgpu"))
                        amdgpu = 1;
                }
                fclose(f);
            }
        }
        if (!amdgpu)
            continue;
        snprintf(rel, sizeof rel, "%s/hwmon", dev->dir);
        if (fj_rootpath(full, sizeof full, root, rel)) {
            DIR *h = opendir(full);
            if (h) {
                struct dirent *he;
                while ((he = readdir(h)))
                    if (!strncmp(he->d_name, "hwmon", 5)) {
                        snprintf(dev->hwmon, sizeof dev->hwmon, "%.100s/%.32s", rel, he->d_name);
                        break;
                    }
                closedir(h);
            }
        }
        n++;
    }
    closedir(d);
    qsort(out, n, sizeof *out, cmp_dev);
    return n;
}

/* The starred (current) and the last (highest) level of a pp_dpm_* file, in MHz; the current
 * level's number goes to *level. */
static void dpm_clock(const char *root, const char *dir, const char *file, unsigned *cur, unsigned *max, int *level)
{
    char rel[320], full[4096], line[128];
    snprintf(rel, sizeof rel, "%s/%s", dir, file);
    if (!fj_rootpath(full, sizeof full, root, rel))
        return;
    FILE *f = fopen(full, "re");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        int lv;
        unsigned mhz;
        if (sscanf(line, "%d: %uMhz", &lv, &mhz) != 2 && sscanf(line, "%d: %uMHz", &lv, &mhz) != 2)
            continue;
        if (max)
            *max = mhz;
        if (strchr(line, '*')) {
            if (cur)
                *cur = mhz;
            if (level)
                *level = lv;
        }
    }
    fclose(f);
}

static void uuid_of(const char *root, const amd_dev *dev, const char *node, char out[96])
{
    char rel[160], line[96];
    snprintf(rel, sizeof rel, "%s/unique_id", dev->dir);
    if (fj_readline(root, rel, line, sizeof line) && line[0])
        snprintf(out, 96, "AMD-%.80s", line);
    else
        snprintf(out, 96, "SYN-%.50s-amd-%.31s", node, dev->address);
}

fj_status fj_amd_cards(const char *root, const char *node, fj_arena *a, fj_gpu_card **cards, size_t *count,
                       fj_gpu_errs *errs)
{
    amd_dev devs[64];
    size_t n = find_devices(root, devs, 64);
    *cards = NULL;
    *count = 0;
    if (!n)
        return FJ_OK;
    fj_gpu_card *v = fj_arena_calloc(a, n, sizeof *v);
    if (!v)
        return FJ_ENOMEM;
    char driver[80] = "";
    if (!fj_readline(root, "/sys/module/amdgpu/version", driver, sizeof driver))
        fj_readline(root, "/proc/sys/kernel/osrelease", driver, sizeof driver);
    for (size_t i = 0; i < n; i++) {
        fj_gpu_card *c = &v[i];
        const amd_dev *dev = &devs[i];
        char rel[320], line[128];
        c->index = (unsigned)i;
        uuid_of(root, dev, node, c->uuid);
        snprintf(c->address, sizeof c->address, "%s", dev->address);
        snprintf(c->manufacturer, sizeof c->manufacturer, "AMD");
        snprintf(c->driver, sizeof c->driver, "%s", driver);
        snprintf(rel, sizeof rel, "%s/product_name", dev->dir);
        if (!fj_readline(root, rel, c->model, sizeof c->model) || !c->model[0]) {
            snprintf(rel, sizeof rel, "%s/device", dev->dir);
            if (fj_readline(root, rel, line, sizeof line))
                snprintf(c->model, sizeof c->model, "AMD GPU %.80s", line);
        }
        unsigned long long maj, min, rev;
        if (read_u64(root, dev->dir, "ip_discovery/die/0/GC/0/major", &maj) &&
            read_u64(root, dev->dir, "ip_discovery/die/0/GC/0/minor", &min) &&
            read_u64(root, dev->dir, "ip_discovery/die/0/GC/0/revision", &rev))
            snprintf(c->architecture, sizeof c->architecture, "GC %llu.%llu.%llu", maj, min, rev);
        snprintf(rel, sizeof rel, "%s/vbios_version", dev->dir);
        fj_readline(root, rel, c->firmware, sizeof c->firmware);
        unsigned long long v64;
        if (read_u64(root, dev->dir, "mem_info_vram_total", &v64))
            c->memory_kb = v64 / 1024;
        else
            c->failing = 1;
        if (dev->hwmon[0]) {
            if (read_u64(root, dev->hwmon, "power1_cap", &v64))
                c->power_limit = (unsigned)(v64 / 1000000);
            if (read_u64(root, dev->hwmon, "power1_cap_max", &v64))
                c->max_power_limit = (unsigned)(v64 / 1000000);
            if (read_u64(root, dev->hwmon, "power1_cap_min", &v64))
                c->min_power_limit = (unsigned)(v64 / 1000000);
        }
        dpm_clock(root, dev->dir, "pp_dpm_sclk", NULL, &c->max_ce_clock, NULL);
        dpm_clock(root, dev->dir, "pp_dpm_mclk", NULL, &c->max_memory_clock, NULL);
        if (c->failing)
            fj_gpu_errs_add(errs, "AMD GPU %zu (%s): cannot read its sysfs files", i, c->uuid);
    }
    *cards = v;
    *count = n;
    return FJ_OK;
}

fj_status fj_amd_sample(const char *root, const char *node, fj_arena *a, fj_gpu_state **states, size_t *count,
                        fj_amd_card_ref **refs, fj_gpu_errs *errs)
{
    amd_dev devs[64];
    size_t n = find_devices(root, devs, 64);
    *states = NULL;
    *count = 0;
    if (refs)
        *refs = NULL;
    if (!n)
        return FJ_OK;
    fj_gpu_state *v = fj_arena_calloc(a, n, sizeof *v);
    fj_amd_card_ref *r = refs ? fj_arena_calloc(a, n, sizeof *r) : NULL;
    if (!v || (refs && !r))
        return FJ_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        fj_gpu_state *s = &v[i];
        const amd_dev *dev = &devs[i];
        unsigned long long x;
        int have_busy, have_mem;
        s->index = (unsigned)i;
        s->perf_state = -1;
        uuid_of(root, dev, node, s->uuid);
        if ((have_busy = read_u64(root, dev->dir, "gpu_busy_percent", &x)))
            s->ce_util = (unsigned)x;
        if (read_u64(root, dev->dir, "mem_busy_percent", &x))
            s->memory_util = (unsigned)x;
        if ((have_mem = read_u64(root, dev->dir, "mem_info_vram_used", &x)))
            s->memory_kb = x / 1024;
        dpm_clock(root, dev->dir, "pp_dpm_sclk", &s->ce_clock, NULL, &s->perf_state);
        dpm_clock(root, dev->dir, "pp_dpm_mclk", &s->memory_clock, NULL, NULL);
        if (dev->hwmon[0]) {
            if (read_u64(root, dev->hwmon, "temp1_input", &x))
                s->temperature = (int)(x / 1000);
            if (read_u64(root, dev->hwmon, "power1_average", &x) || read_u64(root, dev->hwmon, "power1_input", &x))
                s->power = (unsigned)(x / 1000000);
            if (read_u64(root, dev->hwmon, "power1_cap", &x))
                s->power_limit = (unsigned)(x / 1000000);
            unsigned long long pwm, pwm_max = 255;
            if (read_u64(root, dev->hwmon, "pwm1", &pwm)) {
                read_u64(root, dev->hwmon, "pwm1_max", &pwm_max);
                s->fan = pwm_max ? (unsigned)(pwm * 100 / pwm_max) : 0;
            }
        }
        if (!have_busy && !have_mem) {
            s->failing = 1;
            fj_gpu_errs_add(errs, "AMD GPU %zu (%s): failing, no utilization or memory readings", i, s->uuid);
        }
        if (r) {
            snprintf(r[i].address, sizeof r[i].address, "%s", dev->address);
            r[i].index = s->index;
            snprintf(r[i].uuid, sizeof r[i].uuid, "%s", s->uuid);
            if (read_u64(root, dev->dir, "mem_info_vram_total", &x))
                r[i].vram_kb = x / 1024;
        }
    }
    *states = v;
    if (refs)
        *refs = r;
    *count = n;
    return FJ_OK;
}
