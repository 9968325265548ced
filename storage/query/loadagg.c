/* storage/query/loadagg.c — merging load buckets and their roll-up rows (storage/query/loadagg.h). */
#include "storage/query/loadagg.h"

#include <string.h>

static void acc_merge(fj_qm_acc *a, const fj_qm_acc *b)
{
    if (!b->n)
        return;
    if (!a->n || b->max > a->max)
        a->max = b->max;
    a->sum += b->sum;
    a->w += b->w;
    a->n += b->n;
}

void fj_loadagg_merge(fj_loadagg_bucket *into, const fj_loadagg_bucket *b)
{
    into->samples += b->samples;
    if (b->cores > into->cores)
        into->cores = b->cores;
    if (b->gpus > into->gpus)
        into->gpus = b->gpus;
    acc_merge(&into->cpu_util, &b->cpu_util);
    acc_merge(&into->cpu_cores, &b->cpu_cores);
    acc_merge(&into->mem, &b->mem);
    acc_merge(&into->load1, &b->load1);
    acc_merge(&into->load5, &b->load5);
    acc_merge(&into->load15, &b->load15);
    acc_merge(&into->gpu_util, &b->gpu_util);
    acc_merge(&into->gpu_util_card_max, &b->gpu_util_card_max);
    acc_merge(&into->gpu_mem, &b->gpu_mem);
    acc_merge(&into->gpu_power, &b->gpu_power);
    acc_merge(&into->gpu_temp, &b->gpu_temp);
    acc_merge(&into->gpu_temp_card_max, &b->gpu_temp_card_max);
}

/* Columns 0-2 (samples, cores, gpus) and the counts cpu_n, mem_n, load_n, gpu_n. */
bool fj_loadagg_col_is_int(int i)
{
    return i <= 3 || i == 8 || i == 11 || i == 16;
}

/* The unweighted accumulators of a bucket were filled by fj_qm_add (weight 1), so their weight is
 * their count; the CPU pair shares its count and weight (seconds), the load triple and the six
 * GPU accumulators theirs (a sample adds to all of them or to none). */
void fj_loadagg_to_row(const fj_loadagg_bucket *b, double v[FJ_LOADAGG_NCOLS])
{
    double r[FJ_LOADAGG_NCOLS] = {
        (double)b->samples,        (double)b->cores,          (double)b->gpus,
        (double)b->cpu_util.n,     b->cpu_util.w,             b->cpu_util.sum,
        b->cpu_util.max,           b->cpu_cores.sum,          (double)b->mem.n,
        b->mem.sum,                b->mem.max,                (double)b->load1.n,
        b->load1.sum,              b->load1.max,              b->load5.sum,
        b->load15.sum,             (double)b->gpu_util.n,     b->gpu_util.sum,
        b->gpu_util_card_max.max,  b->gpu_mem.sum,            b->gpu_mem.max,
        b->gpu_power.sum,          b->gpu_power.max,          b->gpu_temp.sum,
        b->gpu_temp_card_max.max,
    };
    memcpy(v, r, sizeof r);
}

static fj_qm_acc acc(uint64_t n, double w, double sum, double max)
{
    return (fj_qm_acc){.sum = sum, .w = w, .max = n ? max : 0, .n = n};
}

void fj_loadagg_from_row(fj_loadagg_bucket *b, const double v[FJ_LOADAGG_NCOLS])
{
    uint64_t cpu_n = (uint64_t)v[3], mem_n = (uint64_t)v[8], load_n = (uint64_t)v[11], gpu_n = (uint64_t)v[16];
    double gw = (double)gpu_n;
    *b = (fj_loadagg_bucket){
        .samples = (int64_t)v[0],
        .cores = (int64_t)v[1],
        .gpus = (int64_t)v[2],
        .cpu_util = acc(cpu_n, v[4], v[5], v[6]),
        .cpu_cores = acc(cpu_n, v[4], v[7], 0),
        .mem = acc(mem_n, (double)mem_n, v[9], v[10]),
        .load1 = acc(load_n, (double)load_n, v[12], v[13]),
        .load5 = acc(load_n, (double)load_n, v[14], 0),
        .load15 = acc(load_n, (double)load_n, v[15], 0),
        .gpu_util = acc(gpu_n, gw, v[17], 0),
        .gpu_util_card_max = acc(gpu_n, gw, 0, v[18]),
        .gpu_mem = acc(gpu_n, gw, v[19], v[20]),
        .gpu_power = acc(gpu_n, gw, v[21], v[22]),
        .gpu_temp = acc(gpu_n, gw, v[23], 0),
        .gpu_temp_card_max = acc(gpu_n, gw, 0, v[24]),
    };
}
