/* storage/core/write_values.h — what a record's fields become as stored values, the same for every backend:
 * which zero means absent (NULL), how an ExtendedUint, a percentage or a process's flags are
 * stored, how counter lists (varints), a NUMA distance matrix and a blob's text are encoded, how
 * a note's detail is cut, which processes of a job repeat. The writers (storage/sqlite/write.c,
 * storage/pg/write.c) turn these values into their own parameters (SQLite bindings and buffered rows,
 * PostgreSQL COPY text, arrays and text parameters) and keep their SQL, their ids and their
 * batching. Not a public header.
 *
 * A fill function writes one record's own values, in the order of its table's columns, into
 * v[0 .. FJ_WV_*_N). The columns that place a record (cluster, node, envelope time, sample,
 * process or sequence) come before them and are the writer's: they differ between backends. */
#ifndef FJ_WRITE_VALUES_H
#define FJ_WRITE_VALUES_H

#include "buf.h"
#include "ingest/records/batch.h"
#include "storage/core/rectify.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- one stored value ---------------------------------------------------------------------- */

typedef enum {
    FJ_WV_NULL,
    FJ_WV_INT,  /* u.i */
    FJ_WV_U64,  /* u.u, an unsigned number: a backend stores it as it stores those (SQLite: past
                 * INT64_MAX as REAL; PostgreSQL: saturated at INT64_MAX). The decoders refuse
                 * such values (json_path.h FJ_JPATH_U64_MAX), so neither happens to input. */
    FJ_WV_REAL, /* u.r */
    FJ_WV_TEXT, /* u.s.p[0 .. u.s.n); terminated at n except for a cut note detail */
    FJ_WV_BLOB, /* u.s.p[0 .. u.s.n), bytes */
} fj_wv_type;

typedef struct fj_wval {
    fj_wv_type type;
    union {
        int64_t i;
        uint64_t u;
        double r;
        struct {
            const char *p;
            size_t n;
        } s;
    } u;
} fj_wval;

static inline fj_wval fj_wv_null(void)
{
    return (fj_wval){.type = FJ_WV_NULL};
}

static inline fj_wval fj_wv_int(int64_t v)
{
    return (fj_wval){.type = FJ_WV_INT, .u.i = v};
}

static inline fj_wval fj_wv_u64(uint64_t v)
{
    return (fj_wval){.type = FJ_WV_U64, .u.u = v};
}

static inline fj_wval fj_wv_real(double v)
{
    return (fj_wval){.type = FJ_WV_REAL, .u.r = v};
}

/* NULL stays NULL. */
fj_wval fj_wv_text(const char *s);

/* 0 is absent (Sonar omits zero values): NULL. */
static inline fj_wval fj_wv_nz(uint64_t v)
{
    return v ? fj_wv_u64(v) : fj_wv_null();
}

/* An interned id or a time, 0 when there is none: NULL. */
static inline fj_wval fj_wv_id(int64_t id)
{
    return id ? fj_wv_int(id) : fj_wv_null();
}

/* ExtendedUint: unset (or 0) NULL, infinite -1. */
fj_wval fj_wv_xu(uint64_t v);

/* --- encodings ------------------------------------------------------------------------------ */

/* Counter lists (a sample's CPU times, a disk's stats) are stored as unsigned LEB128 varints:
 * out holds FJ_WV_VARINTS_MAX(n) bytes; returns the bytes written. */
#define FJ_WV_VARINTS_MAX(n) ((n) * 10 + 1)
size_t fj_wv_varints(unsigned char *out, const uint64_t *v, size_t n);

/* A sysinfo's NUMA distance matrix as JSON ([[10,20],[20,10]]) into out, which this initialises
 * (empty without a matrix; the caller frees it). Past 16 MiB, or out of memory, out is freed and
 * err set (at data.attributes.distances). */
fj_status fj_wv_distances_json(const fj_sysinfo *si, fj_buf *out, fj_err *err);

/* Blobs (sysinfo topologies) are stored once per content, found by (hash, length) and compared. */
uint64_t fj_wv_hash(const char *p, size_t n); /* FNV-1a, 64 bits */
/* Does a stored blob (codec "none" or "zstd") hold exactly text[0 .. n)? */
bool fj_wv_blob_equals(const char *codec, const void *data, size_t dlen, const char *text, size_t n);

/* How text[0 .. n) is stored: zstd (level 3) when that is smaller, else as it is. data points
 * into owned or text; fj_wv_blob_free releases owned. */
typedef struct fj_wv_blob {
    const char *codec;
    const unsigned char *data;
    size_t len;
    void *owned;
} fj_wv_blob;
fj_status fj_wv_blob_pack(fj_wv_blob *b, const char *text, size_t n); /* FJ_ENOMEM */
void fj_wv_blob_free(fj_wv_blob *b);

/* --- processes of a sample job -------------------------------------------------------------- */

/* A process's key within its job; cmd_id is the interned command. Of the processes with one key
 * the first listed is stored, the others are duplicates. */
typedef struct fj_wv_pkey {
    uint64_t pid, ppid;
    int64_t cmd_id;
    size_t idx; /* in the job's procs */
} fj_wv_pkey;

/* Sorts pk by key, then by idx; returns the number of distinct keys. */
size_t fj_wv_pkeys_sort(fj_wv_pkey *pk, size_t n);

static inline bool fj_wv_pkey_same(const fj_wv_pkey *a, const fj_wv_pkey *b)
{
    return a->pid == b->pid && a->ppid == b->ppid && a->cmd_id == b->cmd_id;
}

/* --- records -------------------------------------------------------------------------------- */

/* envelopes after (cluster, node): kind, time, producer, version, format, unknown_fields */
enum { FJ_WV_ENVELOPE_N = 6 };
void fj_wv_envelope(fj_wval *v, const fj_envelope *e);

/* errors after (cluster, node) (the error's own, when it names them): time, source, kind, detail */
enum { FJ_WV_ERROR_N = 4 };
void fj_wv_error(fj_wval *v, const fj_envelope *e, const fj_error_rec *r);

/* notes after (cluster, node): kind, time, path, note, detail (cut at 200 bytes, at a UTF-8
 * character boundary: the text is not terminated there) */
enum { FJ_WV_NOTE_N = 5 };
void fj_wv_note(fj_wval *v, const fj_envelope *e, const fj_note *n);

/* samples after (node, time): boot, used_memory_kb, load1, load5, load15, runnable_entities,
 * existing_entities, cpus (varints into bytes, of FJ_WV_VARINTS_MAX(sm->n_cpus)); all NULL
 * without system data */
enum { FJ_WV_SAMPLE_N = 8 };
void fj_wv_sample(fj_wval *v, const fj_sample *sm, unsigned char *bytes);

/* sample_gpus after the sample: idx, uuid, failing, fan, compute_mode, performance_state,
 * memory_kb, ce_util, memory_util, temperature, power, power_limit, ce_clock, memory_clock,
 * energy_mj (NULL when absent) */
enum { FJ_WV_SAMPLE_GPU_N = 15 };
void fj_wv_sample_gpu(fj_wval *v, const fj_sample_gpu *g, int64_t uuid_id, int64_t mode_id);

/* sample_disks after the sample: name, major, minor, stats (varints into bytes, of
 * FJ_WV_VARINTS_MAX(d->n_stats)) */
enum { FJ_WV_SAMPLE_DISK_N = 4 };
void fj_wv_sample_disk(fj_wval *v, const fj_sample_disk *d, int64_t name_id, unsigned char *bytes);

/* sample_jobs after the sample: job, epoch, user */
enum { FJ_WV_SAMPLE_JOB_N = 3 };
void fj_wv_sample_job(fj_wval *v, const fj_sample_job *j, int64_t user_id);

/* sample_procs after the process's place: pid, ppid, cmd, resident_kb, virtual_kb, num_threads,
 * cpu_avg_m, cpu_util_m, cpu_time, data_read_kb, data_written_kb, data_cancelled_kb, rolledup,
 * flags (1 in a container, 2 a synthetic pid). Inline, as is fj_wv_proc_gpu: they run once per
 * process, and a writer that inlines its own conversion then sees each value's type at compile
 * time. */
enum { FJ_WV_PROC_N = 14 };
static inline void fj_wv_proc(fj_wval *v, const fj_sample_proc *p, int64_t cmd_id)
{
    v[0] = fj_wv_u64(p->pid);
    v[1] = fj_wv_u64(p->ppid);
    v[2] = fj_wv_int(cmd_id);
    v[3] = fj_wv_u64(p->resident_kb);
    v[4] = fj_wv_u64(p->virtual_kb);
    v[5] = fj_wv_u64(p->num_threads);
    v[6] = fj_wv_int(fj_pct_to_m(p->cpu_avg));
    v[7] = fj_wv_int(fj_pct_to_m(p->cpu_util));
    v[8] = fj_wv_u64(p->cpu_time);
    v[9] = fj_wv_u64(p->data_read_kb);
    v[10] = fj_wv_u64(p->data_written_kb);
    v[11] = fj_wv_u64(p->data_cancelled_kb);
    v[12] = fj_wv_u64(p->rolledup);
    v[13] = fj_wv_int((p->in_container ? 1 : 0) | (p->synthetic_pid ? 2 : 0));
}

/* sample_proc_gpus after the process's place: idx, uuid, gpu_util_m, gpu_memory_kb,
 * gpu_memory_util_m */
enum { FJ_WV_PROC_GPU_N = 5 };
static inline void fj_wv_proc_gpu(fj_wval *v, const fj_proc_gpu *pg, int64_t uuid_id)
{
    v[0] = fj_wv_u64(pg->index);
    v[1] = fj_wv_id(uuid_id);
    v[2] = fj_wv_int(fj_pct_to_m(pg->gpu_util));
    v[3] = fj_wv_u64(pg->gpu_memory_kb);
    v[4] = fj_wv_int(fj_pct_to_m(pg->gpu_memory_util));
}

/* sysinfo after (node, time): os_name, os_release, architecture, cpu_model, numa_nodes,
 * sockets, cores_per_socket, threads_per_core, memory_kb, n_cards, topo_svg and topo_text (blob
 * ids), distances (fj_wv_distances_json's text, NULL when empty) */
enum { FJ_WV_SYSINFO_N = 13 };
void fj_wv_sysinfo(fj_wval *v, const fj_sysinfo *si, int64_t svg_id, int64_t text_id, const fj_buf *dist);

/* sysinfo_gpus after (node, time): idx, uuid, address, manufacturer, model, architecture, driver,
 * firmware, memory_kb, power_limit, max_power_limit, min_power_limit, max_ce_clock,
 * max_memory_clock */
enum { FJ_WV_SYSINFO_GPU_N = 14 };
void fj_wv_sysinfo_gpu(fj_wval *v, const fj_gpu_card *g);

/* jobs (rectified) after their key and user: first_seen, last_seen, n_samples, then the sums and
 * peaks of nproc, cpu_m, mem_kb, gpu_m, gpumem_kb (sum, peak, sum, peak, ...) */
enum { FJ_WV_JOBSUM_N = 13 };
void fj_wv_jobsum(fj_wval *v, const fj_jobsum *s);
/* The other way: a summary from the FJ_WV_JOBSUM_N integer columns of a jobs row, in that order. */
void fj_wv_jobsum_read(fj_jobsum *s, const int64_t *v);

/* A Slurm record's step: "" for the job itself. */
static inline const char *fj_wv_job_step(const fj_slurm_job *j)
{
    return j->job_step ? j->job_step : "";
}

/* slurm_jobs (and slurm_jobs_current) after cluster and before the envelope time: job_id,
 * job_step, then the record's fields in the order of the writers' SLURM_FIELDS */
enum { FJ_WV_SLURM_N = 40 };
void fj_wv_slurm(fj_wval *v, const fj_slurm_job *j);

#endif
