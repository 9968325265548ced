/* envelope.c — Sonar JSON writers. Strings go through fj_buf_json_str; numbers are integers except
 * load averages and process percentages, which are finite by construction. */
#include "envelope.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef FJ_PUSH_VERSION
#define FJ_PUSH_VERSION "0.0.0"
#endif

fj_status fj_buf_base64(fj_buf *out, const void *data, size_t n)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = data;
    char chunk[1024];
    size_t k = 0;
    fj_status st = FJ_OK;
    for (size_t i = 0; i < n && st == FJ_OK; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        chunk[k++] = tbl[(v >> 18) & 63];
        chunk[k++] = tbl[(v >> 12) & 63];
        chunk[k++] = i + 1 < n ? tbl[(v >> 6) & 63] : '=';
        chunk[k++] = i + 2 < n ? tbl[v & 63] : '=';
        if (k >= sizeof chunk - 4) {
            st = fj_buf_append(out, chunk, k);
            k = 0;
        }
    }
    return st == FJ_OK && k ? fj_buf_append(out, chunk, k) : st;
}

fj_status fj_push_meta_json(fj_buf *out)
{
    return fj_buf_puts(out, "{\"producer\":\"fjord-push\",\"version\":\"" FJ_PUSH_VERSION "\",\"format\":0}");
}

/* ,"key":"value" */
static fj_status s_kv(fj_buf *o, const char *k, const char *v)
{
    fj_status st = fj_buf_printf(o, ",\"%s\":", k);
    return st == FJ_OK ? fj_buf_json_str(o, v) : st;
}

static fj_status time_kv(fj_buf *o, const char *k, fj_time t, int comma)
{
    char ts[21];
    fj_time_format(t, ts);
    return fj_buf_printf(o, "%s\"%s\":\"%s\"", comma ? "," : "", k, ts);
}

static double fin(double d)
{
    return isfinite(d) ? d : 0.0;
}

fj_status fj_sysinfo_json(const fj_sysinfo *s, fj_buf *o)
{
    fj_status st = fj_buf_puts(o, "{\"meta\":");
    if (st == FJ_OK) st = fj_push_meta_json(o);
    if (st == FJ_OK) st = fj_buf_puts(o, ",\"data\":{\"type\":\"sysinfo\",\"attributes\":{");
    if (st == FJ_OK) st = time_kv(o, "time", s->time, 0);
    if (st == FJ_OK) st = s_kv(o, "cluster", s->cluster ? s->cluster : "");
    if (st == FJ_OK) st = s_kv(o, "node", s->node);
    if (st == FJ_OK) st = s_kv(o, "os_name", s->os_name);
    if (st == FJ_OK) st = s_kv(o, "os_release", s->os_release);
    if (st == FJ_OK) st = s_kv(o, "architecture", s->arch);
    if (st == FJ_OK)
        st = fj_buf_printf(o, ",\"numa_nodes\":%u,\"sockets\":%u,\"cores_per_socket\":%u,\"threads_per_core\":%u",
                           s->cpu.numa_nodes, s->cpu.sockets, s->cpu.cores_per_socket, s->cpu.threads_per_core);
    if (st == FJ_OK) st = s_kv(o, "cpu_model", s->cpu.model);
    if (st == FJ_OK) st = fj_buf_printf(o, ",\"memory\":%" PRIu64, s->cpu.mem_total_kb);
    if (st == FJ_OK && s->topo_svg) {
        st = fj_buf_puts(o, ",\"topo_svg\":\"");
        if (st == FJ_OK) st = fj_buf_base64(o, s->topo_svg, s->topo_svg_len);
        if (st == FJ_OK) st = fj_buf_puts(o, "\"");
    }
    if (st == FJ_OK && s->topo_text) {
        st = fj_buf_puts(o, ",\"topo_text\":\"");
        if (st == FJ_OK) st = fj_buf_base64(o, s->topo_text, s->topo_text_len);
        if (st == FJ_OK) st = fj_buf_puts(o, "\"");
    }
    if (st == FJ_OK) st = fj_buf_puts(o, ",\"cards\":[");
    for (size_t i = 0; i < s->ncards && st == FJ_OK; i++) {
        const fj_gpu_card *c = &s->cards[i];
        st = fj_buf_printf(o, "%s{\"index\":%u", i ? "," : "", c->index);
        if (st == FJ_OK) st = s_kv(o, "uuid", c->uuid);
        if (st == FJ_OK) st = s_kv(o, "address", c->address);
        if (st == FJ_OK) st = s_kv(o, "manufacturer", c->manufacturer);
        if (st == FJ_OK) st = s_kv(o, "model", c->model);
        if (st == FJ_OK) st = s_kv(o, "architecture", c->architecture);
        if (st == FJ_OK) st = s_kv(o, "driver", c->driver);
        if (st == FJ_OK) st = s_kv(o, "firmware", c->firmware);
        if (st == FJ_OK)
            st = fj_buf_printf(o,
                               ",\"memory\":%" PRIu64 ",\"power_limit\":%u,\"max_power_limit\":%u,\"min_power_limit\":%u"
                               ",\"max_ce_clock\":%u,\"max_memory_clock\":%u}",
                               c->memory_kb, c->power_limit, c->max_power_limit, c->min_power_limit, c->max_ce_clock,
                               c->max_memory_clock);
    }
    if (st == FJ_OK) st = fj_buf_puts(o, "]");
    if (st == FJ_OK && s->cpu.distances && s->cpu.numa_nodes) {
        unsigned n = s->cpu.numa_nodes;
        st = fj_buf_puts(o, ",\"distances\":[");
        for (unsigned i = 0; i < n && st == FJ_OK; i++) {
            st = fj_buf_puts(o, i ? ",[" : "[");
            for (unsigned j = 0; j < n && st == FJ_OK; j++)
                st = fj_buf_printf(o, "%s%" PRIu64, j ? "," : "", s->cpu.distances[(size_t)i * n + j]);
            if (st == FJ_OK) st = fj_buf_puts(o, "]");
        }
        if (st == FJ_OK) st = fj_buf_puts(o, "]");
    }
    if (st == FJ_OK) st = fj_buf_puts(o, "}}}");
    return st;
}

static fj_status gpu_state_json(fj_buf *o, const fj_gpu_state *g, int comma)
{
    fj_status st = fj_buf_printf(o, "%s{\"index\":%u", comma ? "," : "", g->index);
    if (st == FJ_OK) st = s_kv(o, "uuid", g->uuid);
    if (st == FJ_OK) st = fj_buf_printf(o, ",\"failing\":%u,\"fan\":%u", g->failing, g->fan);
    if (st == FJ_OK) st = s_kv(o, "compute_mode", g->compute_mode);
    /* ExtendedUint: 0 unset, v+2 for value v (the spec's encoding; Sonar itself writes v+1). */
    if (st == FJ_OK)
        st = fj_buf_printf(o,
                           ",\"performance_state\":%u,\"memory\":%" PRIu64 ",\"ce_util\":%u,\"memory_util\":%u"
                           ",\"temperature\":%d,\"power\":%u,\"power_limit\":%u,\"ce_clock\":%u,\"memory_clock\":%u",
                           g->perf_state < 0 ? 0u : (unsigned)g->perf_state + 2u, g->memory_kb, g->ce_util,
                           g->memory_util, g->temperature, g->power, g->power_limit, g->ce_clock, g->memory_clock);
    /* the energy counter, where the card has one (docs/energy.md) */
    if (st == FJ_OK && g->has_energy)
        st = fj_buf_printf(o, ",\"energy_mj\":%" PRIu64, g->energy_mj);
    return st == FJ_OK ? fj_buf_puts(o, "}") : st;
}

static int cmp_proc(const void *a, const void *b)
{
    const fj_sample_proc *x = a, *y = b;
    if (x->epoch != y->epoch)
        return x->epoch < y->epoch ? -1 : 1;
    if (x->job != y->job)
        return x->job < y->job ? -1 : 1;
    int c = strcmp(x->user, y->user);
    if (c)
        return c;
    return x->p.pid < y->p.pid ? -1 : x->p.pid > y->p.pid;
}

/* cpu_time: the process's CPU time with its reaped children's, utime + stime + cutime + cstime, in
 * whole seconds rounded to the nearest, as Sonar computes it. A child that lives and dies between
 * two samples is seen only there; the server takes a sampled child's last cpu_time off its
 * parent's jump, so nothing counts twice (docs/pusher.md). fjord-push before 0.2 sent own time
 * only; the server tells the two forms apart by meta.version. */
static uint64_t cpu_seconds(uint64_t ticks)
{
    uint64_t tck = (uint64_t)fj_clk_tck();
    return (ticks + tck / 2) / tck;
}

static fj_status proc_json(fj_buf *o, const fj_sample_proc *sp, int comma)
{
    const fj_proc *p = &sp->p;
    fj_status st = fj_buf_printf(o, "%s{\"resident_memory\":%" PRIu64 ",\"virtual_memory\":%" PRIu64, comma ? "," : "",
                                 p->rss_anon_kb, p->vm_kb);
    if (st == FJ_OK) st = s_kv(o, "cmd", p->cmd);
    /* in_container only when true, as Sonar writes it (false is the reader's default). */
    if (st == FJ_OK)
        st = fj_buf_printf(o, ",\"pid\":%" PRIu32 ",\"ppid\":%" PRIu32 "%s,\"num_threads\":%" PRIu64
                              ",\"cpu_avg\":%.3g,\"cpu_time\":%" PRIu64,
                           p->pid, p->ppid, sp->in_container ? ",\"in_container\":true" : "",
                           p->threads ? p->threads - 1 : 0, fin(sp->cpu_avg), cpu_seconds(p->cpu_ticks + p->child_ticks));
    if (st == FJ_OK && sp->have_util)
        st = fj_buf_printf(o, ",\"cpu_util\":%.3g", fin(sp->cpu_util));
    if (st == FJ_OK && p->have_io)
        st = fj_buf_printf(o, ",\"data_read\":%" PRIu64 ",\"data_written\":%" PRIu64 ",\"data_cancelled\":%" PRIu64,
                           p->read_kb, p->written_kb, p->cancelled_kb);
    if (st == FJ_OK && sp->ngpus) {
        st = fj_buf_puts(o, ",\"gpus\":[");
        for (size_t i = 0; i < sp->ngpus && st == FJ_OK; i++) {
            const fj_gpu_proc *g = sp->gpus[i];
            st = fj_buf_printf(o, "%s{\"index\":%u", i ? "," : "", g->index);
            if (st == FJ_OK) st = s_kv(o, "uuid", g->uuid);
            if (st == FJ_OK)
                st = fj_buf_printf(o, ",\"gpu_util\":%.3g,\"gpu_memory\":%" PRIu64 ",\"gpu_memory_util\":%.3g}",
                                   fin(g->gpu_util), g->gpu_memory_kb, fin(g->gpu_memory_util));
        }
        if (st == FJ_OK) st = fj_buf_puts(o, "]");
    }
    return st == FJ_OK ? fj_buf_puts(o, "}") : st;
}

fj_status fj_sample_json(fj_sample *s, fj_buf *o)
{
    const fj_sys_sample *y = s->sys;
    fj_status st = fj_buf_puts(o, "{\"meta\":");
    if (st == FJ_OK) st = fj_push_meta_json(o);
    if (st == FJ_OK) st = fj_buf_puts(o, ",\"data\":{\"type\":\"sample\",\"attributes\":{");
    if (st == FJ_OK) st = time_kv(o, "time", s->time, 0);
    if (st == FJ_OK) st = s_kv(o, "cluster", s->cluster ? s->cluster : "");
    if (st == FJ_OK) st = s_kv(o, "node", s->node);
    if (st == FJ_OK) st = fj_buf_puts(o, ",\"system\":{");
    if (st == FJ_OK && y->boot) st = time_kv(o, "boot", y->boot, 0);
    if (st == FJ_OK) st = fj_buf_printf(o, "%s\"cpus\":[", y->boot ? "," : "");
    for (size_t i = 0; i < y->ncpus && st == FJ_OK; i++)
        st = fj_buf_printf(o, "%s%" PRIu64, i ? "," : "", y->cpus[i]);
    if (st == FJ_OK) st = fj_buf_puts(o, "],\"gpus\":[");
    for (size_t i = 0; i < s->ngpus && st == FJ_OK; i++)
        st = gpu_state_json(o, &s->gpus[i], i > 0);
    if (st == FJ_OK) st = fj_buf_puts(o, "],\"disks\":[");
    for (size_t i = 0; i < y->ndisks && st == FJ_OK; i++) {
        const fj_disk *d = &y->disks[i];
        st = fj_buf_puts(o, i ? ",{\"name\":" : "{\"name\":");
        if (st == FJ_OK) st = fj_buf_json_str(o, d->name);
        if (st == FJ_OK) st = fj_buf_printf(o, ",\"major\":%" PRIu64 ",\"minor\":%" PRIu64 ",\"stats\":[", d->major, d->minor);
        for (size_t k = 0; k < d->nstats && st == FJ_OK; k++)
            st = fj_buf_printf(o, "%s%" PRIu64, k ? "," : "", d->stats[k]);
        if (st == FJ_OK) st = fj_buf_puts(o, "]}");
    }
    if (st == FJ_OK)
        st = fj_buf_printf(o,
                           "],\"used_memory\":%" PRIu64 ",\"load1\":%.2f,\"load5\":%.2f,\"load15\":%.2f"
                           ",\"runnable_entities\":%" PRIu64 ",\"existing_entities\":%" PRIu64 "}",
                           y->used_memory_kb, fin(y->load1), fin(y->load5), fin(y->load15), y->runnable,
                           y->existing);
    if (st == FJ_OK) st = fj_buf_puts(o, ",\"jobs\":[");
    if (s->nprocs)
        qsort(s->procs, s->nprocs, sizeof *s->procs, cmp_proc);
    for (size_t i = 0; i < s->nprocs && st == FJ_OK;) {
        const fj_sample_proc *g = &s->procs[i];
        st = fj_buf_printf(o, "%s{\"job\":%" PRIu64, i ? "," : "", g->job);
        if (st == FJ_OK) st = s_kv(o, "user", g->user);
        if (st == FJ_OK) st = fj_buf_printf(o, ",\"epoch\":%" PRIu64 ",\"processes\":[", g->epoch);
        size_t k = i;
        /* Job 0 is "no job": one record per process, never merged. */
        do {
            if (st == FJ_OK)
                st = proc_json(o, &s->procs[k], k > i);
            k++;
        } while (k < s->nprocs && g->job != 0 && s->procs[k].job == g->job && s->procs[k].epoch == g->epoch &&
                 !strcmp(s->procs[k].user, g->user));
        if (st == FJ_OK) st = fj_buf_puts(o, "]}");
        i = k;
    }
    if (st == FJ_OK) st = fj_buf_puts(o, "]");
    if (st == FJ_OK && s->errs && s->errs->n) {
        st = fj_buf_puts(o, ",\"errors\":[");
        for (size_t i = 0; i < s->errs->n && st == FJ_OK; i++) {
            st = fj_buf_puts(o, i ? ",{" : "{");
            if (st == FJ_OK) st = time_kv(o, "time", s->time, 0);
            if (st == FJ_OK) st = s_kv(o, "detail", s->errs->msg[i]);
            if (st == FJ_OK) st = s_kv(o, "cluster", s->cluster ? s->cluster : "");
            if (st == FJ_OK) st = s_kv(o, "node", s->node);
            if (st == FJ_OK) st = fj_buf_puts(o, "}");
        }
        if (st == FJ_OK) st = fj_buf_puts(o, "]");
    }
    if (st == FJ_OK) st = fj_buf_puts(o, "}}}");
    return st;
}
