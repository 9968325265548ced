/* storage/core/write_values.c — what a record's fields become as stored values (storage/core/write_values.h). */
#include "storage/core/write_values.h"

#include "alloc.h"
#include "storage/core/cmp.h"
#include "storage/core/rectify.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define NOTE_DETAIL_MAX 200

fj_wval fj_wv_text(const char *s)
{
    if (!s)
        return fj_wv_null();
    return (fj_wval){.type = FJ_WV_TEXT, .u.s = {s, strlen(s)}};
}

fj_wval fj_wv_xu(uint64_t v)
{
    if (v == FJ_XU_UNSET || v == 0)
        return fj_wv_null();
    if (v == FJ_XU_INFINITE)
        return fj_wv_int(-1);
    return fj_wv_u64(v);
}

/* --- encodings ------------------------------------------------------------------------------ */

size_t fj_wv_varints(unsigned char *out, const uint64_t *v, size_t n)
{
    unsigned char *p = out;
    for (size_t i = 0; i < n; i++) {
        uint64_t u = v[i];
        while (u >= 0x80) {
            *p++ = (unsigned char)(u | 0x80);
            u >>= 7;
        }
        *p++ = (unsigned char)u;
    }
    return (size_t)(p - out);
}

static fj_wval varints(unsigned char *bytes, const uint64_t *v, size_t n)
{
    if (!n)
        return fj_wv_null();
    return (fj_wval){.type = FJ_WV_BLOB, .u.s = {(const char *)bytes, fj_wv_varints(bytes, v, n)}};
}

fj_status fj_wv_distances_json(const fj_sysinfo *si, fj_buf *out, fj_err *err)
{
    fj_buf_init(out, (size_t)1 << 24);
    if (!si->distances || !si->distances_dim)
        return FJ_OK;
    size_t dim = si->distances_dim;
    fj_status st = fj_buf_puts(out, "[");
    for (size_t r = 0; st == FJ_OK && r < dim; r++) {
        st = fj_buf_puts(out, r ? ",[" : "[");
        for (size_t c = 0; st == FJ_OK && c < dim; c++)
            st = fj_buf_printf(out, c ? ",%llu" : "%llu", (unsigned long long)si->distances[r * dim + c]);
        if (st == FJ_OK)
            st = fj_buf_puts(out, "]");
    }
    if (st == FJ_OK)
        st = fj_buf_puts(out, "]");
    if (st == FJ_OK)
        return FJ_OK;
    fj_buf_free(out);
    return fj_err_set(err, st, "data.attributes.distances", "NUMA distance matrix too large");
}

uint64_t fj_wv_hash(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

bool fj_wv_blob_equals(const char *codec, const void *data, size_t dlen, const char *text, size_t n)
{
    if (strcmp(codec, "none") == 0)
        return dlen == n && memcmp(data, text, n) == 0;
    if (strcmp(codec, "zstd") != 0)
        return false;
    char *tmp = fj_malloc(n + 1);
    if (!tmp)
        return false; /* treated as different: worst case a second copy is stored */
    size_t got = ZSTD_decompress(tmp, n + 1, data, dlen);
    bool eq = !ZSTD_isError(got) && got == n && memcmp(tmp, text, n) == 0;
    fj_free(tmp);
    return eq;
}

fj_status fj_wv_blob_pack(fj_wv_blob *b, const char *text, size_t n)
{
    size_t bound = ZSTD_compressBound(n);
    b->owned = fj_malloc(bound);
    if (!b->owned)
        return FJ_ENOMEM;
    size_t zlen = ZSTD_compress(b->owned, bound, text, n, 3);
    bool use_z = !ZSTD_isError(zlen) && zlen < n;
    b->codec = use_z ? "zstd" : "none";
    b->data = use_z ? b->owned : (const unsigned char *)text;
    b->len = use_z ? zlen : n;
    return FJ_OK;
}

void fj_wv_blob_free(fj_wv_blob *b)
{
    fj_free(b->owned);
    b->owned = NULL;
}

/* --- processes of a sample job -------------------------------------------------------------- */

static int pkey_cmp(const void *a, const void *b)
{
    const fj_wv_pkey *x = a, *y = b;
    int c = fj_cmp_u64(x->pid, y->pid);
    if (!c)
        c = fj_cmp_u64(x->ppid, y->ppid);
    if (!c)
        c = fj_cmp_i64(x->cmd_id, y->cmd_id);
    return c ? c : fj_cmp_u64(x->idx, y->idx); /* the first occurrence wins */
}

size_t fj_wv_pkeys_sort(fj_wv_pkey *pk, size_t n)
{
    if (n > 16) {
        qsort(pk, n, sizeof *pk, pkey_cmp);
    } else { /* most jobs have a few processes: insertion sort, no calls */
        for (size_t i = 1; i < n; i++) {
            fj_wv_pkey x = pk[i];
            size_t k = i;
            for (; k > 0 && pkey_cmp(&pk[k - 1], &x) > 0; k--)
                pk[k] = pk[k - 1];
            pk[k] = x;
        }
    }
    size_t n_unique = n ? 1 : 0;
    for (size_t i = 1; i < n; i++)
        n_unique += !fj_wv_pkey_same(&pk[i], &pk[i - 1]);
    return n_unique;
}

/* --- records -------------------------------------------------------------------------------- */

void fj_wv_envelope(fj_wval *v, const fj_envelope *e)
{
    v[0] = fj_wv_text(fj_kind_name(e->kind));
    v[1] = fj_wv_int(e->time);
    v[2] = fj_wv_text(e->producer);
    v[3] = fj_wv_text(e->version);
    v[4] = fj_wv_nz(e->format);
    v[5] = fj_wv_u64(e->unknown_fields);
}

void fj_wv_error(fj_wval *v, const fj_envelope *e, const fj_error_rec *r)
{
    v[0] = fj_wv_int(r->time ? r->time : e->time);
    v[1] = fj_wv_text(e->is_error ? "envelope" : "sample");
    v[2] = fj_wv_text(fj_kind_name(e->kind));
    v[3] = fj_wv_text(r->detail ? r->detail : "");
}

void fj_wv_note(fj_wval *v, const fj_envelope *e, const fj_note *n)
{
    v[0] = fj_wv_text(fj_kind_name(e->kind));
    v[1] = fj_wv_int(e->time);
    v[2] = fj_wv_text(n->path ? n->path : "");
    v[3] = fj_wv_text(n->kind ? n->kind : "");
    v[4] = fj_wv_text(n->detail);
    if (n->detail && v[4].u.s.n > NOTE_DETAIL_MAX) { /* keep notes small */
        size_t len = NOTE_DETAIL_MAX;
        while (len > 0 && ((unsigned char)n->detail[len] & 0xC0) == 0x80)
            len--;
        v[4].u.s.n = len;
    }
}

void fj_wv_sample(fj_wval *v, const fj_sample *sm, unsigned char *bytes)
{
    if (!sm->has_system) {
        for (int i = 0; i < FJ_WV_SAMPLE_N; i++)
            v[i] = fj_wv_null();
        return;
    }
    v[0] = fj_wv_id(sm->boot);
    v[1] = fj_wv_u64(sm->used_memory_kb);
    v[2] = fj_wv_real(sm->load1);
    v[3] = fj_wv_real(sm->load5);
    v[4] = fj_wv_real(sm->load15);
    v[5] = fj_wv_u64(sm->runnable_entities);
    v[6] = fj_wv_u64(sm->existing_entities);
    v[7] = varints(bytes, sm->cpus, sm->n_cpus);
}

void fj_wv_sample_gpu(fj_wval *v, const fj_sample_gpu *g, int64_t uuid_id, int64_t mode_id)
{
    bool pstate = g->performance_state != FJ_XU_UNSET && g->performance_state != FJ_XU_INFINITE;
    v[0] = fj_wv_u64(g->index);
    v[1] = fj_wv_id(uuid_id);
    v[2] = fj_wv_u64(g->failing);
    v[3] = fj_wv_u64(g->fan);
    v[4] = fj_wv_id(mode_id);
    v[5] = pstate ? fj_wv_u64(g->performance_state) : fj_wv_null();
    v[6] = fj_wv_u64(g->memory_kb);
    v[7] = fj_wv_u64(g->ce_util);
    v[8] = fj_wv_u64(g->memory_util);
    v[9] = fj_wv_int(g->temperature);
    v[10] = fj_wv_u64(g->power);
    v[11] = fj_wv_u64(g->power_limit);
    v[12] = fj_wv_u64(g->ce_clock);
    v[13] = fj_wv_u64(g->memory_clock);
    v[14] = g->energy_mj ? fj_wv_u64(g->energy_mj) : fj_wv_null();
}

void fj_wv_sample_disk(fj_wval *v, const fj_sample_disk *d, int64_t name_id, unsigned char *bytes)
{
    v[0] = fj_wv_int(name_id);
    v[1] = fj_wv_u64(d->major);
    v[2] = fj_wv_u64(d->minor);
    v[3] = varints(bytes, d->stats, d->n_stats);
}

void fj_wv_sample_job(fj_wval *v, const fj_sample_job *j, int64_t user_id)
{
    v[0] = fj_wv_u64(j->job);
    v[1] = fj_wv_u64(j->epoch);
    v[2] = fj_wv_id(user_id);
}

void fj_wv_sysinfo(fj_wval *v, const fj_sysinfo *si, int64_t svg_id, int64_t text_id, const fj_buf *dist)
{
    v[0] = fj_wv_text(si->os_name);
    v[1] = fj_wv_text(si->os_release);
    v[2] = fj_wv_text(si->architecture);
    v[3] = fj_wv_text(si->cpu_model);
    v[4] = fj_wv_u64(si->numa_nodes);
    v[5] = fj_wv_u64(si->sockets);
    v[6] = fj_wv_u64(si->cores_per_socket);
    v[7] = fj_wv_u64(si->threads_per_core);
    v[8] = fj_wv_u64(si->memory_kb);
    v[9] = fj_wv_u64(si->n_cards);
    v[10] = fj_wv_id(svg_id);
    v[11] = fj_wv_id(text_id);
    v[12] = fj_wv_text(dist->len ? dist->data : NULL);
}

void fj_wv_sysinfo_gpu(fj_wval *v, const fj_gpu_card *g)
{
    v[0] = fj_wv_u64(g->index);
    v[1] = fj_wv_text(g->uuid);
    v[2] = fj_wv_text(g->address);
    v[3] = fj_wv_text(g->manufacturer);
    v[4] = fj_wv_text(g->model);
    v[5] = fj_wv_text(g->architecture);
    v[6] = fj_wv_text(g->driver);
    v[7] = fj_wv_text(g->firmware);
    v[8] = fj_wv_u64(g->memory_kb);
    v[9] = fj_wv_u64(g->power_limit);
    v[10] = fj_wv_u64(g->max_power_limit);
    v[11] = fj_wv_u64(g->min_power_limit);
    v[12] = fj_wv_u64(g->max_ce_clock);
    v[13] = fj_wv_u64(g->max_memory_clock);
}

void fj_wv_jobsum(fj_wval *v, const fj_jobsum *s)
{
    v[0] = fj_wv_int(s->first_seen);
    v[1] = fj_wv_int(s->last_seen);
    v[2] = fj_wv_int(s->n_samples);
    v[3] = fj_wv_int(s->sum.nproc);
    v[4] = fj_wv_int(s->peak.nproc);
    v[5] = fj_wv_int(s->sum.cpu_m);
    v[6] = fj_wv_int(s->peak.cpu_m);
    v[7] = fj_wv_int(s->sum.mem_kb);
    v[8] = fj_wv_int(s->peak.mem_kb);
    v[9] = fj_wv_int(s->sum.gpu_m);
    v[10] = fj_wv_int(s->peak.gpu_m);
    v[11] = fj_wv_int(s->sum.gpumem_kb);
    v[12] = fj_wv_int(s->peak.gpumem_kb);
}

void fj_wv_jobsum_read(fj_jobsum *s, const int64_t *v)
{
    s->first_seen = v[0];
    s->last_seen = v[1];
    s->n_samples = v[2];
    s->sum.nproc = v[3];
    s->peak.nproc = v[4];
    s->sum.cpu_m = v[5];
    s->peak.cpu_m = v[6];
    s->sum.mem_kb = v[7];
    s->peak.mem_kb = v[8];
    s->sum.gpu_m = v[9];
    s->peak.gpu_m = v[10];
    s->sum.gpumem_kb = v[11];
    s->peak.gpumem_kb = v[12];
}

void fj_wv_slurm(fj_wval *v, const fj_slurm_job *j)
{
    int i = 0;
    v[i++] = fj_wv_u64(j->job_id);
    v[i++] = fj_wv_text(fj_wv_job_step(j));
    v[i++] = fj_wv_text(j->job_name);
    v[i++] = fj_wv_text(j->job_state);
    v[i++] = fj_wv_text(j->job_state_raw);
    v[i++] = fj_wv_nz(j->array_job_id);
    /* task 0 is a real task of an array job, likewise offset 0 of a het job */
    v[i++] = j->array_job_id ? fj_wv_u64(j->array_task_id) : fj_wv_null();
    v[i++] = fj_wv_nz(j->het_job_id);
    v[i++] = j->het_job_id ? fj_wv_u64(j->het_job_offset) : fj_wv_null();
    v[i++] = fj_wv_text(j->user_name);
    v[i++] = fj_wv_text(j->account);
    v[i++] = fj_wv_text(j->partition);
    v[i++] = fj_wv_text(j->reservation);
    v[i++] = fj_wv_text(j->distribution);
    v[i++] = fj_wv_id(j->submit_time);
    v[i++] = fj_wv_id(j->start_time);
    v[i++] = fj_wv_id(j->end_time);
    v[i++] = fj_wv_xu(j->time_limit_s);
    v[i++] = fj_wv_xu(j->priority);
    v[i++] = fj_wv_text(j->nodes_raw);
    v[i++] = fj_wv_text(j->requested_resources);
    v[i++] = fj_wv_text(j->allocated_resources);
    v[i++] = fj_wv_nz(j->requested_cpus);
    v[i++] = fj_wv_nz(j->requested_memory_per_node_kb);
    v[i++] = fj_wv_nz(j->requested_node_count);
    v[i++] = fj_wv_nz(j->minimum_cpus_per_node);
    v[i++] = fj_wv_nz(j->suspend_time_s);
    v[i++] = fj_wv_nz(j->exit_code);
    const fj_sacct *a = j->sacct;
    if (!a) {
        while (i < FJ_WV_SLURM_N)
            v[i++] = fj_wv_null();
        return;
    }
    v[i++] = fj_wv_text(a->alloc_tres);
    v[i++] = fj_wv_nz(a->ave_cpu);
    v[i++] = fj_wv_nz(a->ave_disk_read);
    v[i++] = fj_wv_nz(a->ave_disk_write);
    v[i++] = fj_wv_nz(a->ave_rss);
    v[i++] = fj_wv_nz(a->ave_vmsize);
    v[i++] = fj_wv_nz(a->elapsed_raw);
    v[i++] = fj_wv_nz(a->max_rss);
    v[i++] = fj_wv_nz(a->max_vmsize);
    v[i++] = fj_wv_nz(a->min_cpu);
    v[i++] = fj_wv_nz(a->system_cpu);
    v[i] = fj_wv_nz(a->user_cpu);
}
