/* envelope.h — collected facts as Sonar JSON envelopes (spec: NEW-FORMAT.md, format version 0):
 * SysinfoEnvelope and SampleEnvelope, with meta.producer "fjord-push". Every field the spec
 * defines for sysinfo, cards, system and GPU samples is written, zeros included (index 0 is a real
 * index); SampleGpu.performance_state uses the spec's ExtendedUint encoding, value+2 (0 unset).
 * Pure functions of their input; the output buffer is appended to. */
#ifndef FJ_PUSH_ENVELOPE_H
#define FJ_PUSH_ENVELOPE_H

#include "buf.h"
#include "gpu.h"
#include "procfs.h"

typedef struct fj_sysinfo {
    fj_time time;
    const char *cluster, *node;
    char os_name[64], os_release[128], arch[64];
    fj_cpu_facts cpu;
    const char *topo_text, *topo_svg; /* raw text (base64-encoded on output); NULL to omit */
    size_t topo_text_len, topo_svg_len;
    const fj_gpu_card *cards;
    size_t ncards;
} fj_sysinfo;

typedef struct fj_sample_proc {
    fj_proc p;
    const char *user;
    uint64_t job, epoch;
    double cpu_avg, cpu_util;
    int have_util;
    int in_container;
    const fj_gpu_proc *gpus[16]; /* this process's cards */
    size_t ngpus;
} fj_sample_proc;

typedef struct fj_sample {
    fj_time time;
    const char *cluster, *node;
    const fj_sys_sample *sys;
    const fj_gpu_state *gpus;
    size_t ngpus;
    fj_sample_proc *procs; /* grouped into jobs by (epoch, job, user); sorted here */
    size_t nprocs;
    const fj_gpu_errs *errs;
} fj_sample;

fj_status fj_sysinfo_json(const fj_sysinfo *s, fj_buf *out);
fj_status fj_sample_json(fj_sample *s, fj_buf *out);

/* RFC 4648 base64 of n bytes, appended. */
fj_status fj_buf_base64(fj_buf *out, const void *data, size_t n);

/* The "meta" object every fjord-push envelope carries. */
fj_status fj_push_meta_json(fj_buf *out);

#endif
