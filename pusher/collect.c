/* collect.c — gathers procfs, GPU and topology facts into envelope structs and writes them. Each
 * collection uses one arena, freed at its end; only cross-sample state lives in the collector. */
#include "collect.h"

#include "alloc.h"
#include "arena.h"
#include "container.h"
#include "envelope.h"
#include "gpu.h"
#include "hwtopo.h"
#include "log.h"
#include "nettopo.h"
#include "pcitree.h"
#include "procfs.h"

#include <hwloc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef FJ_PUSH_VERSION
#define FJ_PUSH_VERSION "0.0.0"
#endif

/* Non-Slurm jobs carry the boot time as epoch, counted from 2020-01-01 as Sonar does. */
#define SONAR_EPOCH_BASE 1577836800

typedef struct prev_cpu {
    uint32_t pid;
    uint64_t ticks, start;
} prev_cpu;

typedef struct user_entry {
    uint32_t uid;
    char name[64];
} user_entry;

struct fj_collector {
    const fj_push_config *cfg;
    fj_gpus *gpus;
    fj_buf scratch;
    prev_cpu *prev;
    size_t nprev;
    int64_t prev_ns;
    user_entry users[128];
    size_t nusers;
    char *topo_key;
    int container_view; /* the /proc we read is a container's: every process is in it */
};

fj_collector *fj_collector_new(const fj_push_config *cfg)
{
    fj_collector *c = fj_calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cfg = cfg;
    c->container_view = fj_container_view(cfg->root);
    fj_buf_init(&c->scratch, 16u << 20);
    c->gpus = fj_gpus_open(cfg->nvml_library, cfg->amd, cfg->root, cfg->node);
    if (!c->gpus) {
        fj_free(c);
        return NULL;
    }
    return c;
}

void fj_collector_free(fj_collector *c)
{
    if (!c)
        return;
    fj_gpus_close(c->gpus);
    fj_buf_free(&c->scratch);
    fj_free(c->prev);
    fj_free(c->topo_key);
    fj_free(c);
}

const char *fj_collector_topology_key(const fj_collector *c)
{
    return c->topo_key;
}

static fj_time now(const fj_collector *c)
{
    if (c->cfg->fixed_time)
        return c->cfg->fixed_time;
    /* Not time(): its coarse clock can still show the second before the aligned tick the daemon
     * woke up for, and the sample would carry that earlier time. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (fj_time)ts.tv_sec;
}

static int live_root(const char *root)
{
    return !root || !*root || !strcmp(root, "/");
}

static void log_errs(const fj_gpu_errs *e)
{
    for (size_t i = 0; i < e->n; i++)
        fj_warn("%s", e->msg[i]);
}

/* The hwloc topology to use: an XML export when configured, the live system on a real root, none
 * for a fixture root (which hwloc could not see). */
static fj_hwtopo *load_hwtopo(const fj_push_config *cfg)
{
    if (!cfg->hwloc_xml && !live_root(cfg->root))
        return NULL;
    char why[160];
    fj_hwtopo *t = fj_hwtopo_load(cfg->hwloc_xml, why);
    if (!t)
        fj_warn("no hwloc topology: %s", why);
    return t;
}

fj_status fj_collect_sysinfo(fj_collector *c, fj_buf *out, fj_err *err)
{
    const fj_push_config *cfg = c->cfg;
    fj_arena *a = fj_arena_create();
    if (!a)
        return FJ_ENOMEM;
    fj_sysinfo s;
    memset(&s, 0, sizeof s);
    s.time = now(c);
    s.cluster = cfg->cluster;
    s.node = cfg->node;
    fj_proc_os(cfg->root, s.os_name, sizeof s.os_name, s.os_release, sizeof s.os_release, s.arch, sizeof s.arch);
    fj_status st = fj_proc_cpu_facts(cfg->root, a, &c->scratch, &s.cpu);
    fj_buf text, svg;
    fj_buf_init(&text, 4u << 20);
    fj_buf_init(&svg, 16u << 20);
    fj_hwtopo *t = st == FJ_OK ? load_hwtopo(cfg) : NULL;
    if (t) {
        if (!s.arch[0]) {
            const char *ar = hwloc_obj_get_info_by_name(hwloc_get_root_obj(fj_hwtopo_raw(t)), "Architecture");
            if (ar)
                snprintf(s.arch, sizeof s.arch, "%s", ar);
        }
        fj_hwtopo_cpu_facts(t, a, &s.cpu);
        if (fj_hwtopo_text(t, &text) == FJ_OK) {
            s.topo_text = text.data;
            s.topo_text_len = text.len;
        }
        if (fj_hwtopo_svg(t, &svg) == FJ_OK) {
            s.topo_svg = svg.data;
            s.topo_svg_len = svg.len;
        }
    }
    fj_gpu_errs errs = {.n = 0};
    fj_gpu_card *cards = NULL;
    if (st == FJ_OK)
        st = fj_gpus_cards(c->gpus, a, &cards, &s.ncards, &errs);
    s.cards = cards;
    log_errs(&errs);
    if (st == FJ_OK)
        st = fj_sysinfo_json(&s, out);
    if (st != FJ_OK && st != FJ_EIO)
        fj_err_set(err, st, "sysinfo", "cannot build sysinfo: %s", fj_status_name(st));
    fj_hwtopo_free(t);
    fj_buf_free(&text);
    fj_buf_free(&svg);
    fj_arena_destroy(a);
    return st;
}

static const char *user_of(fj_collector *c, uint32_t uid)
{
    for (size_t i = 0; i < c->nusers; i++)
        if (c->users[i].uid == uid)
            return c->users[i].name;
    size_t slot = c->nusers < sizeof c->users / sizeof c->users[0] ? c->nusers++ : uid % c->nusers;
    c->users[slot].uid = uid;
    fj_user_name(c->cfg->root, uid, c->users[slot].name);
    return c->users[slot].name;
}

static const prev_cpu *find_prev(const fj_collector *c, uint32_t pid)
{
    size_t lo = 0, hi = c->nprev;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->prev[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->nprev && c->prev[lo].pid == pid ? &c->prev[lo] : NULL;
}

static int cmp_pid(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Reads the processes to report and fills s->procs. */
static fj_status collect_procs(fj_collector *c, fj_arena *a, fj_sample *s, const fj_sys_sample *sys,
                               const fj_gpu_proc *gp, size_t ngp)
{
    const fj_push_config *cfg = c->cfg;
    uint32_t *pids = NULL;
    size_t npids = 0;
    fj_status st;
    if (cfg->processes == FJ_PROCS_ALL) {
        if ((st = fj_proc_pids(cfg->root, a, &pids, &npids)) != FJ_OK)
            return st;
    } else {
        pids = fj_arena_alloc(a, (ngp + 1) * sizeof *pids);
        if (!pids)
            return FJ_ENOMEM;
        for (size_t i = 0; i < ngp; i++)
            pids[npids++] = gp[i].pid;
        qsort(pids, npids, sizeof *pids, cmp_pid);
        size_t u = 0;
        for (size_t i = 0; i < npids; i++)
            if (!u || pids[u - 1] != pids[i])
                pids[u++] = pids[i];
        npids = u;
    }
    s->procs = fj_arena_calloc(a, npids + 1, sizeof *s->procs);
    prev_cpu *next = fj_calloc(npids + 1, sizeof *next);
    if (!s->procs || !next) {
        fj_free(next);
        return FJ_ENOMEM;
    }
    int64_t ns = fj_mono_ns();
    double dt = c->prev_ns ? (double)(ns - c->prev_ns) / 1e9 : 0;
    long tck = fj_clk_tck();
    fj_time t = s->time;
    uint64_t epoch = sys->boot > SONAR_EPOCH_BASE ? (uint64_t)(sys->boot - SONAR_EPOCH_BASE) : 1;
    size_t nnext = 0;
    for (size_t i = 0; i < npids; i++) {
        fj_sample_proc *sp = &s->procs[s->nprocs];
        memset(sp, 0, sizeof *sp);
        if (fj_proc_read(cfg->root, pids[i], &c->scratch, &sp->p) != FJ_OK)
            continue; /* gone since we listed it */
        if (sp->p.kernel_thread)
            continue;
        sp->user = user_of(c, sp->p.uid);
        sp->in_container = c->container_view || sp->p.container_cgroup ||
                           fj_container_ancestry(cfg->root, sp->p.pid, &c->scratch);
        if (sp->p.slurm_job) {
            sp->job = sp->p.slurm_job;
            sp->epoch = 0;
        } else {
            sp->job = sp->p.pgrp;
            sp->epoch = epoch;
        }
        if (sys->boot && t > sys->boot) {
            double alive = (double)(t - sys->boot) - (double)sp->p.start_ticks / (double)tck;
            if (alive > 0)
                sp->cpu_avg = 100.0 * ((double)sp->p.cpu_ticks / (double)tck) / alive;
        }
        const prev_cpu *pc = find_prev(c, sp->p.pid);
        if (pc && pc->start == sp->p.start_ticks && dt > 0 && sp->p.cpu_ticks >= pc->ticks) {
            sp->cpu_util = 100.0 * ((double)(sp->p.cpu_ticks - pc->ticks) / (double)tck) / dt;
            sp->have_util = 1;
        }
        next[nnext].pid = sp->p.pid;
        next[nnext].ticks = sp->p.cpu_ticks;
        next[nnext].start = sp->p.start_ticks;
        nnext++;
        for (size_t k = 0; k < ngp && sp->ngpus < sizeof sp->gpus / sizeof sp->gpus[0]; k++)
            if (gp[k].pid == sp->p.pid)
                sp->gpus[sp->ngpus++] = &gp[k];
        s->nprocs++;
    }
    fj_free(c->prev);
    c->prev = next; /* ascending, as pids were */
    c->nprev = nnext;
    c->prev_ns = ns;
    return FJ_OK;
}

fj_status fj_collect_sample(fj_collector *c, fj_buf *out, fj_err *err)
{
    const fj_push_config *cfg = c->cfg;
    fj_arena *a = fj_arena_create();
    if (!a)
        return FJ_ENOMEM;
    fj_sample s;
    fj_sys_sample sys;
    memset(&s, 0, sizeof s);
    s.time = now(c);
    s.cluster = cfg->cluster;
    s.node = cfg->node;
    s.sys = &sys;
    fj_gpu_errs errs = {.n = 0};
    s.errs = &errs;
    fj_status st = fj_proc_system(cfg->root, a, &c->scratch, &sys, err);
    fj_gpu_state *gpus = NULL;
    fj_gpu_proc *gp = NULL;
    size_t ngp = 0;
    if (st == FJ_OK)
        st = fj_gpus_sample(c->gpus, a, cfg->processes != FJ_PROCS_NONE, &gpus, &s.ngpus, &gp, &ngp, &errs);
    s.gpus = gpus;
    if (st == FJ_OK && cfg->processes != FJ_PROCS_NONE)
        st = collect_procs(c, a, &s, &sys, gp, ngp);
    if (st == FJ_OK)
        st = fj_sample_json(&s, out);
    fj_arena_destroy(a);
    return st;
}

fj_status fj_collect_topology(fj_collector *c, fj_buf *out, fj_err *err)
{
    const fj_push_config *cfg = c->cfg;
    fj_pcitree tree;
    memset(&tree, 0, sizeof tree);
    fj_hwtopo *t = NULL;
    fj_status st;
    char machine[128] = "";
    if (cfg->hwloc_xml) {
        char why[160];
        t = fj_hwtopo_load(cfg->hwloc_xml, why);
        if (!t)
            return fj_err_set(err, FJ_EIO, "hwloc_xml", "%s", why);
        st = fj_pcitree_from_hwloc(fj_hwtopo_raw(t), &tree);
        const char *m = hwloc_obj_get_info_by_name(hwloc_get_root_obj(fj_hwtopo_raw(t)), "DMIProductName");
        if (m)
            snprintf(machine, sizeof machine, "%s", m);
    } else {
        st = fj_pcitree_from_sysfs(cfg->root, &tree);
        if (st == FJ_ENOTFOUND)
            st = FJ_OK; /* no /sys/devices: an empty tree, so no NICs */
    }
    /* The GPU type: NVML's model name, else what hwloc recorded for the first NVIDIA GPU. */
    char gpu_type[128] = "";
    fj_arena *a = fj_arena_create();
    if (st == FJ_OK && !a)
        st = FJ_ENOMEM;
    if (st == FJ_OK) {
        fj_gpu_card *cards;
        size_t n = 0;
        fj_gpu_errs errs = {.n = 0};
        if (fj_gpus_cards(c->gpus, a, &cards, &n, &errs) == FJ_OK)
            for (size_t i = 0; i < n && !gpu_type[0]; i++)
                if (!strcmp(cards[i].manufacturer, "NVIDIA") && cards[i].model[0])
                    snprintf(gpu_type, sizeof gpu_type, "%s", cards[i].model);
        int g[1];
        if (!gpu_type[0] && fj_pcitree_nvidia_gpus(&tree, g, 1))
            snprintf(gpu_type, sizeof gpu_type, "%s", tree.devs[g[0]].model);
    }
    fj_buf m;
    fj_buf_init(&m, 4u << 20);
    if (st == FJ_OK) {
        fj_nettopo_in in = {
            .root = cfg->root,
            .tree = &tree,
            .node = cfg->node,
            .machine_type = cfg->hwloc_xml ? machine : NULL,
            .gpu_type = gpu_type[0] ? gpu_type : NULL,
            .node_selector = cfg->topology_selector,
            .north_south = cfg->north_south,
            .east_west = cfg->east_west,
        };
        st = fj_nettopo_measurement(&in, &m);
    }
    if (st == FJ_OK) {
        char ts[21];
        fj_time_format(now(c), ts);
        st = fj_buf_puts(out, "{\"kind\":\"Snapshot\",\"apiVersion\":\"aicr.nvidia.com/v1alpha1\",\"metadata\":{\"source-node\":");
        if (st == FJ_OK) st = fj_buf_json_str(out, cfg->node);
        if (st == FJ_OK) st = fj_buf_puts(out, ",\"cluster\":");
        if (st == FJ_OK) st = fj_buf_json_str(out, cfg->cluster ? cfg->cluster : "");
        if (st == FJ_OK)
            st = fj_buf_printf(out, ",\"timestamp\":\"%s\",\"producer\":\"fjord-push\",\"version\":\"%s\"},\"measurements\":[",
                               ts, FJ_PUSH_VERSION);
        if (st == FJ_OK) st = fj_buf_append(out, m.data, m.len);
        if (st == FJ_OK) st = fj_buf_puts(out, "]}");
        if (st == FJ_OK) {
            char *k = fj_strdup(m.data);
            if (k) {
                fj_free(c->topo_key);
                c->topo_key = k;
            }
        }
    }
    fj_buf_free(&m);
    fj_arena_destroy(a);
    fj_pcitree_free(&tree);
    fj_hwtopo_free(t);
    return st;
}
