/* storage/chimbuko/rows.c — which field of a Chimbuko record goes in which column, for every backend
 * (storage/chimbuko/rows.h). The column lists here and the order the row functions set them in are one
 * contract: change both together. */
#include "storage/chimbuko/rows.h"

#include <math.h>

static const fj_cb_tabledef tables[FJ_CBT__COUNT] = {
    [FJ_CBT_PACKETS] = {"chimbuko_packets",
                        "cluster_id,run_id,created_at_ms,version,received,n_ranks,n_steps,n_funcs,n_counters,n_metrics",
                        "bbbbbbbbbb", "cluster_id,run_id,created_at_ms"},
    [FJ_CBT_RANK_STATS] = {"chimbuko_rank_stats", "cluster_id,run_id,app,rank,created_at_ms,anomalies,steps,stats",
                           "bbbbbfbt", "cluster_id,run_id,app,rank,created_at_ms"},
    [FJ_CBT_RANK_STEPS] = {"chimbuko_rank_steps",
                           "cluster_id,run_id,app,rank,step,created_at_ms,min_ts_us,max_ts_us,n_anomalies,score_max,"
                           "score_mean,scores",
                           "bbbbbbbbbfft", "cluster_id,run_id,app,rank,step"},
    [FJ_CBT_FUNC_STATS] = {"chimbuko_func_stats",
                           "cluster_id,run_id,app,fid,created_at_ms,name_id,anomalies,calls,anomaly_stats,inclusive,"
                           "exclusive",
                           "bbbbbbfbttt", "cluster_id,run_id,app,fid,created_at_ms"},
    [FJ_CBT_COUNTER_STATS] = {"chimbuko_counter_stats",
                              "cluster_id,run_id,app,counter_id,created_at_ms,count,total,stats", "bbbbbbft",
                              "cluster_id,run_id,app,counter_id,created_at_ms"},
    [FJ_CBT_FUNC_METRICS] = {"chimbuko_func_metrics",
                             "cluster_id,run_id,app,rank,fid,created_at_ms,name_id,anomalies,score_max,severity_total,"
                             "first_io_step,last_io_step,min_ts_us,max_ts_us,new_data,all_data",
                             "bbbbbbbfffbbbbtt", "cluster_id,run_id,app,rank,fid,created_at_ms"},
    [FJ_CBT_EVENTS] = {"chimbuko_events",
                       "cluster_id,run_id,anomaly,pid,rid,io_step,idx,version,tid,fid,func_id,entry_us,exit_us,"
                       "runtime_total_us,runtime_exclusive_us,io_step_tstart_us,io_step_tend_us,outlier_score,"
                       "outlier_severity,host_id,is_gpu,gpu_thread,gpu_device,gpu_context,gpu_stream,gpu_parent_event,"
                       "gpu_parent_tid,gpu_parent_error,algo,algo_params,call_stack,counter_events,event_window,"
                       "node_state,gpu_parent",
                       "bbobbbbbbbbbbbbbbffbobbbbtbtttttttt", "cluster_id,run_id,anomaly,pid,rid,io_step,idx"},
    [FJ_CBT_METADATA] = {"chimbuko_metadata", "cluster_id,run_id,pid,rid,tid,descr_id,value", "bbbbbbt",
                         "cluster_id,run_id,pid,rid,tid,descr_id"},
    [FJ_CBT_PROFILES] = {"chimbuko_profiles",
                         "cluster_id,run_id,app,fid,name_id,anomalies,exclusive_total_us,inclusive,exclusive,"
                         "anomaly_metrics",
                         "bbbbbffttt", "cluster_id,run_id,app,fid"},
    [FJ_CBT_COUNTERS] = {"chimbuko_counters", "cluster_id,run_id,app,counter_id,count,total,stats", "bbbbbft",
                         "cluster_id,run_id,app,counter_id"},
};

const fj_cb_tabledef *fj_cb_table_def(fj_cb_table t)
{
    return &tables[t];
}

const char *fj_cb_run_label(const fj_chimbuko *cb)
{
    return cb->run ? cb->run : "default";
}

/* --- typed setters: the NULL and NaN conventions live here, not in the backends ------------------ */

static void set_null(const fj_cb_colw *w, int c)
{
    w->ops->null(w->ctx, c);
}

static void set_i64(const fj_cb_colw *w, int c, int64_t v)
{
    w->ops->i64(w->ctx, c, v);
}

static void set_u64(const fj_cb_colw *w, int c, uint64_t v)
{
    w->ops->u64(w->ctx, c, v);
}

/* NaN (an absent or null statistic) is NULL. */
static void set_real(const fj_cb_colw *w, int c, double v)
{
    if (isnan(v))
        set_null(w, c);
    else
        w->ops->real(w->ctx, c, v);
}

static void set_text(const fj_cb_colw *w, int c, const char *s)
{
    if (s)
        w->ops->text(w->ctx, c, s);
    else
        set_null(w, c);
}

static void set_key(const fj_cb_colw *w, fj_cb_key k)
{
    set_i64(w, 0, k.cluster_id);
    set_i64(w, 1, k.run_id);
}

/* --- rows ------------------------------------------------------------------------------------- */

void fj_cb_row_packet(const fj_cb_colw *w, fj_cb_key k, const fj_cb_packet *p, fj_time received)
{
    set_key(w, k);
    set_i64(w, 2, p->created_at_ms);
    set_i64(w, 3, p->version);
    set_i64(w, 4, received);
    set_i64(w, 5, (int64_t)p->n_ranks);
    set_i64(w, 6, (int64_t)fj_cb_packet_steps(p));
    set_i64(w, 7, (int64_t)p->n_funcs);
    set_i64(w, 8, (int64_t)p->n_counters);
    set_i64(w, 9, (int64_t)p->n_metrics);
}

void fj_cb_row_rank(const fj_cb_colw *w, fj_cb_key k, int64_t at, const fj_cb_rank *r)
{
    set_key(w, k);
    set_u64(w, 2, r->app);
    set_u64(w, 3, r->rank);
    set_i64(w, 4, at);
    set_real(w, 5, r->stats.accumulate);
    set_u64(w, 6, r->stats.count);
    set_text(w, 7, r->stats.json);
}

void fj_cb_row_step(const fj_cb_colw *w, fj_cb_key k, int64_t at, const fj_cb_step *s)
{
    set_key(w, k);
    set_u64(w, 2, s->app);
    set_u64(w, 3, s->rank);
    set_u64(w, 4, s->step);
    set_i64(w, 5, at);
    set_i64(w, 6, s->min_ts_us);
    set_i64(w, 7, s->max_ts_us);
    set_u64(w, 8, s->n_anomalies);
    /* without outlier scores (packets before 2021-05) the statistics are not zeros but unknown */
    if (s->scores.json) {
        set_real(w, 9, s->scores.maximum);
        set_real(w, 10, s->scores.mean);
    } else {
        set_null(w, 9);
        set_null(w, 10);
    }
    set_text(w, 11, s->scores.json);
}

void fj_cb_row_func(const fj_cb_colw *w, fj_cb_key k, int64_t at, const fj_cb_func *f, int64_t name_id)
{
    set_key(w, k);
    set_u64(w, 2, f->app);
    set_u64(w, 3, f->fid);
    set_i64(w, 4, at);
    set_i64(w, 5, name_id);
    set_real(w, 6, f->anomalies.accumulate);
    set_u64(w, 7, f->inclusive.count);
    set_text(w, 8, f->anomalies.json);
    set_text(w, 9, f->inclusive.json);
    set_text(w, 10, f->exclusive.json);
}

void fj_cb_row_counter_point(const fj_cb_colw *w, fj_cb_key k, int64_t at, const fj_cb_counter *c,
                             int64_t counter_id)
{
    set_key(w, k);
    set_u64(w, 2, c->app);
    set_i64(w, 3, counter_id);
    set_i64(w, 4, at);
    set_u64(w, 5, c->stats.count);
    set_real(w, 6, c->stats.accumulate);
    set_text(w, 7, c->stats.json);
}

void fj_cb_row_metrics(const fj_cb_colw *w, fj_cb_key k, int64_t at, const fj_cb_func_metrics *m,
                       int64_t name_id)
{
    set_key(w, k);
    set_u64(w, 2, m->app);
    set_u64(w, 3, m->rank);
    set_u64(w, 4, m->fid);
    set_i64(w, 5, at);
    set_i64(w, 6, name_id);
    set_real(w, 7, m->new_data.count.accumulate);
    set_real(w, 8, m->new_data.score.maximum);
    set_real(w, 9, m->new_data.severity.accumulate);
    set_u64(w, 10, m->new_data.first_io_step);
    set_u64(w, 11, m->new_data.last_io_step);
    set_i64(w, 12, m->new_data.min_ts_us);
    set_i64(w, 13, m->new_data.max_ts_us);
    /* the columns are NOT NULL: an absent block is the JSON null */
    set_text(w, 14, m->new_data.json ? m->new_data.json : "null");
    set_text(w, 15, m->all_data.json ? m->all_data.json : "null");
}

static void row_event(const fj_cb_colw *w, fj_cb_key k, bool anomaly, const fj_cb_event *e, int64_t func_id,
                      int64_t host_id)
{
    int c = 0;
    set_i64(w, c++, k.cluster_id);
    set_i64(w, c++, k.run_id);
    w->ops->boolean(w->ctx, c++, anomaly);
    set_u64(w, c++, e->pid);
    set_u64(w, c++, e->rid);
    set_u64(w, c++, e->io_step);
    set_u64(w, c++, e->idx);
    set_i64(w, c++, e->version);
    set_u64(w, c++, e->tid);
    set_u64(w, c++, e->fid);
    set_i64(w, c++, func_id);
    set_i64(w, c++, e->entry_us);
    if (e->exit_us) /* 0: had not exited */
        set_i64(w, c++, e->exit_us);
    else
        set_null(w, c++);
    set_i64(w, c++, e->runtime_total_us);
    set_i64(w, c++, e->runtime_exclusive_us);
    set_i64(w, c++, e->io_step_tstart_us);
    set_i64(w, c++, e->io_step_tend_us);
    set_real(w, c++, e->outlier_score);
    set_real(w, c++, e->outlier_severity);
    if (e->hostname)
        set_i64(w, c++, host_id);
    else
        set_null(w, c++);
    if (e->is_gpu_event >= 0) /* -1: the AD did not say */
        w->ops->boolean(w->ctx, c++, e->is_gpu_event != 0);
    else
        set_null(w, c++);
    const uint64_t gpu[4] = {e->gpu_thread, e->gpu_device, e->gpu_context, e->gpu_stream};
    for (int i = 0; i < 4; i++) {
        if (e->has_gpu_location)
            set_u64(w, c++, gpu[i]);
        else
            set_null(w, c++);
    }
    set_text(w, c++, e->gpu_parent_event);
    if (e->gpu_parent_event)
        set_u64(w, c++, e->gpu_parent_tid);
    else
        set_null(w, c++);
    const char *texts[] = {e->gpu_parent_error, e->algo,         e->algo_params, e->call_stack,
                           e->counter_events,   e->event_window, e->node_state,  e->gpu_parent};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        set_text(w, c++, texts[i]);
}

static void row_meta(const fj_cb_colw *w, fj_cb_key k, const fj_cb_meta *m, int64_t descr_id)
{
    set_key(w, k);
    set_u64(w, 2, m->pid);
    set_u64(w, 3, m->rid);
    set_u64(w, 4, m->tid);
    set_i64(w, 5, descr_id);
    set_text(w, 6, m->value ? m->value : "");
}

static void row_profile(const fj_cb_colw *w, fj_cb_key k, const fj_cb_profile *p, int64_t name_id)
{
    set_key(w, k);
    set_u64(w, 2, p->app);
    set_u64(w, 3, p->fid);
    set_i64(w, 4, name_id);
    if (p->has_anomalies)
        set_real(w, 5, p->anomalies.count.accumulate);
    else
        set_null(w, 5);
    if (p->has_runtime) {
        set_real(w, 6, p->exclusive.accumulate);
        set_text(w, 7, p->inclusive.json);
        set_text(w, 8, p->exclusive.json);
    } else {
        set_null(w, 6);
        set_null(w, 7);
        set_null(w, 8);
    }
    set_text(w, 9, p->has_anomalies ? p->anomalies.json : NULL);
}

static void row_counter(const fj_cb_colw *w, fj_cb_key k, const fj_cb_counter *c, int64_t counter_id)
{
    set_key(w, k);
    set_u64(w, 2, c->app);
    set_i64(w, 3, counter_id);
    set_u64(w, 4, c->stats.count);
    set_real(w, 5, c->stats.accumulate);
    set_text(w, 6, c->stats.json);
}

size_t fj_cb_record_count(const fj_chimbuko *cb, fj_cb_table t)
{
    switch (t) {
    case FJ_CBT_EVENTS:
        return cb->n_events;
    case FJ_CBT_METADATA:
        return cb->n_meta;
    case FJ_CBT_PROFILES:
        return cb->n_profiles;
    case FJ_CBT_COUNTERS:
        return cb->n_counters;
    default:
        return 0;
    }
}

void fj_cb_record_names(const fj_chimbuko *cb, fj_cb_table t, size_t i, const char *names[2])
{
    names[1] = NULL;
    switch (t) {
    case FJ_CBT_EVENTS:
        names[0] = cb->events[i].func;
        names[1] = cb->events[i].hostname;
        break;
    case FJ_CBT_METADATA:
        names[0] = cb->meta[i].descr;
        break;
    case FJ_CBT_PROFILES:
        names[0] = cb->profiles[i].fname;
        break;
    case FJ_CBT_COUNTERS:
        names[0] = cb->counters[i].counter;
        break;
    default:
        names[0] = NULL;
        break;
    }
}

void fj_cb_row_record(const fj_cb_colw *w, fj_cb_key k, const fj_chimbuko *cb, fj_cb_table t, size_t i,
                      const int64_t ids[2])
{
    switch (t) {
    case FJ_CBT_EVENTS:
        row_event(w, k, cb->collection == FJ_CB_ANOMALIES, &cb->events[i], ids[0], ids[1]);
        break;
    case FJ_CBT_METADATA:
        row_meta(w, k, &cb->meta[i], ids[0]);
        break;
    case FJ_CBT_PROFILES:
        row_profile(w, k, &cb->profiles[i], ids[0]);
        break;
    case FJ_CBT_COUNTERS:
        row_counter(w, k, &cb->counters[i], ids[0]);
        break;
    default:
        break;
    }
}

/* --- counting --------------------------------------------------------------------------------- */

size_t fj_cb_packet_steps(const fj_cb_packet *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n_ranks; i++)
        n += p->ranks[i].n_steps;
    return n;
}

uint64_t fj_cb_packet_rows(const fj_cb_packet *p)
{
    return 1 + p->n_ranks + p->n_funcs + p->n_counters + p->n_metrics + fj_cb_packet_steps(p);
}

void fj_cb_count(fj_write_count *cnt, bool added)
{
    if (added)
        cnt->inserted++;
    else
        cnt->duplicates++;
}
