/* storage/query/misc.c — uptime and error records as every backend answers them (storage/query/misc.h). */
#include "storage/query/misc.h"
#include "storage/core/store_query.h"
#include "storage/query/sqlbuf.h"

#include "alloc.h"
#include "storage/query/value.h"

#include <stdio.h>
#include <string.h>

/* --- uptime -------------------------------------------------------------------------------- */

typedef struct upctx {
    const fj_qenv *e;
    const char *node;
    fj_time from, to, interval;
} upctx;

static fj_status up_row(upctx *u, const char *device, bool up, fj_time a, fj_time b)
{
    if (a < u->from)
        a = u->from;
    if (b > u->to)
        b = u->to;
    if (a > b)
        return FJ_OK;
    fj_value v[6] = {fj_value_text(u->node), fj_value_text(device), fj_value_text(up ? "up" : "down"),
                     fj_value_time(a),       fj_value_time(b),      fj_value_int(b - a)};
    return u->e->k->row(u->e->k, v);
}

/* The up segments of sample times t[0..n): runs with no gap over the interval; the last run
 * reaches `to` when its last sample is within the interval of it. Writes [a,b] pairs into seg,
 * returns their number. */
static size_t up_segments(const fj_time *t, size_t n, fj_time to, fj_time interval, fj_time *seg)
{
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && t[j + 1] - t[j] <= interval)
            j++;
        seg[2 * k] = t[i];
        seg[2 * k + 1] = t[j];
        k++;
        i = j + 1;
    }
    if (k && to - seg[2 * k - 1] <= interval && to > seg[2 * k - 1])
        seg[2 * k - 1] = to;
    return k;
}

fj_status fj_quptime_window(fj_query *q, fj_err *err)
{
    fj_time to = q->to ? q->to : q->now, interval = q->interval_s > 0 ? q->interval_s : 900;
    fj_time from = q->from ? q->from : to - 86400;
    if (from > to)
        return fj_err_set(err, FJ_EINVAL, "from", "parameter 'from': after 'to'");
    q->from = from; /* what was used, for the answer */
    q->to = to;
    q->interval_s = interval;
    return FJ_OK;
}

fj_status fj_quptime_rows(const fj_qenv *e, const fj_qrows *times, const fj_qrows *cards, const fj_qrows *sysinfo,
                          const fj_qrows *first)
{
    const fj_query *q = e->q;
    fj_time *t = NULL, *seg = NULL;
    uint64_t *mask = NULL;
    size_t cap = 0;
    upctx u = {e, NULL, q->from, q->to, q->interval_s};
    fj_status rs = e->k->table(e->k, &fj_qt_uptime);
    if (rs != FJ_OK)
        goto out;

    size_t *order = NULL, n_order = 0;
    if ((rs = fj_qenv_wanted_by_name(e, &order, &n_order)) != FJ_OK)
        goto out;

    for (size_t oi = 0; oi < n_order; oi++) {
        size_t ni = order[oi];
        int64_t node = e->nodes->ids[ni];
        u.node = e->nodes->names[ni];
        /* Before a node's first sample it was not monitored: that time is neither up nor down, so
         * it is left out (a node first seen yesterday is not "down" for the week before). A node
         * with no sample at all, or none until after the window, has no interval. */
        bool row = false;
        fj_qr_bind(first, 1, node);
        rs = fj_qr_step(first, "first sample", &row);
        bool monitored = rs == FJ_OK && row && !fj_qr_null(first, 0);
        fj_time first_t = monitored ? fj_qr_i64(first, 0) : 0;
        fj_qr_reset(first);
        if (rs != FJ_OK)
            goto out;
        if (!monitored || first_t > u.to)
            continue;
        /* sample times from one interval before the window, so a node up at `from` shows so */
        size_t n = 0;
        fj_qr_bind(times, 1, node);
        fj_qr_bind(times, 2, u.from - u.interval);
        fj_qr_bind(times, 3, u.to);
        while ((rs = fj_qr_step(times, "sample times", &row)) == FJ_OK && row) {
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 1024;
                fj_time *a = fj_realloc(t, nc * sizeof *a), *b2 = a ? fj_realloc(seg, 2 * nc * sizeof *b2) : NULL;
                uint64_t *m = b2 ? fj_realloc(mask, nc * sizeof *m) : NULL;
                if (a)
                    t = a;
                if (b2)
                    seg = b2;
                if (m)
                    mask = m;
                if (!a || !b2 || !m) {
                    fj_qr_reset(times);
                    rs = fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
                    goto out;
                }
                cap = nc;
            }
            t[n++] = fj_qr_i64(times, 0);
        }
        fj_qr_reset(times);
        if (rs != FJ_OK)
            goto out;
        if (n == 0) {
            if ((rs = up_row(&u, "node", false, u.from, u.to)) != FJ_OK)
                goto out;
            continue;
        }
        size_t ns = up_segments(t, n, u.to, u.interval, seg);
        fj_time cur = first_t > u.from ? first_t : u.from;
        for (size_t i = 0; i < ns; i++) {
            if (seg[2 * i] > cur && (rs = up_row(&u, "node", false, cur, seg[2 * i])) != FJ_OK)
                goto out;
            if ((rs = up_row(&u, "node", true, seg[2 * i], seg[2 * i + 1])) != FJ_OK)
                goto out;
            cur = seg[2 * i + 1];
        }
        if (cur < u.to && (rs = up_row(&u, "node", false, cur, u.to)) != FJ_OK)
            goto out;

        /* GPU cards: up at a sample when listed there and not failing; only while the node is up */
        fj_qr_bind(sysinfo, 1, node);
        /* a failed read counts as no cards: the cards' own read would fail the same way */
        bool gpus = fj_qr_step(sysinfo, "gpu count", &row) == FJ_OK && row &&
                    (fj_qr_i64(sysinfo, 0) == 0 || fj_qr_i64(sysinfo, 1) > 0);
        fj_qr_reset(sysinfo);
        if (!gpus)
            continue;
        memset(mask, 0, n * sizeof *mask);
        uint64_t seen = 0;
        fj_qr_bind(cards, 1, node);
        fj_qr_bind(cards, 2, u.from - u.interval);
        fj_qr_bind(cards, 3, u.to);
        size_t si = 0;
        while ((rs = fj_qr_step(cards, "gpu samples", &row)) == FJ_OK && row) {
            fj_time gt = fj_qr_i64(cards, 0);
            int64_t idx = fj_qr_i64(cards, 1);
            while (si < n && t[si] < gt)
                si++;
            if (si == n || t[si] != gt || idx < 0 || idx >= 64)
                continue;
            seen |= (uint64_t)1 << idx;
            if (fj_qr_i64(cards, 2) == 0)
                mask[si] |= (uint64_t)1 << idx;
        }
        fj_qr_reset(cards);
        if (rs != FJ_OK)
            goto out;
        for (int g = 0; g < 64; g++) {
            if (!(seen & ((uint64_t)1 << g)))
                continue;
            char dev[16];
            snprintf(dev, sizeof dev, "gpu%d", g);
            size_t si2 = 0;
            for (size_t i = 0; i < ns; i++) {
                fj_time a = seg[2 * i], b = seg[2 * i + 1];
                while (si2 < n && t[si2] < a)
                    si2++;
                /* runs of one state within [a, b]: a state holds from its sample to the next change */
                bool state = si2 < n ? (mask[si2] >> g) & 1 : false;
                fj_time start = a;
                for (size_t j = si2; j < n && t[j] <= b; j++) {
                    bool sj = (mask[j] >> g) & 1;
                    if (sj != state) {
                        if ((rs = up_row(&u, dev, state, start, t[j])) != FJ_OK)
                            goto out;
                        state = sj;
                        start = t[j];
                    }
                }
                if ((rs = up_row(&u, dev, state, start, b)) != FJ_OK)
                    goto out;
            }
        }
    }
out:
    fj_free(t);
    fj_free(seg);
    fj_free(mask);
    return rs;
}

/* --- errors -------------------------------------------------------------------------------- */

void fj_qerrors_sql(fj_sqlbuf *b, const fj_qenv *e, const char *collate_c)
{
    const fj_query *q = e->q;
    fj_sqlbuf_put(b, "SELECT node_id, time, source, kind, detail FROM errors WHERE cluster_id = ");
    fj_sqlbuf_int(b, e->cluster_id);
    fj_time from = q->from;
    if (q->after.set && (fj_time)q->after.v > from)
        from = (fj_time)q->after.v;
    fj_sqlbuf_bound(b, " AND time >= ", from);
    fj_sqlbuf_bound(b, " AND time <= ", q->to);
    fj_sqlbuf_and_in_texts(b, "source", &q->sources);
    if (e->nodes->filtered) {
        fj_sqlbuf_put(b, " AND node_id IN ");
        fj_sqlbuf_node_list(b, e->nodes);
    }
    fj_sqlbuf_printf(b, " ORDER BY time, node_id, source%s, detail%s", collate_c, collate_c);
}

fj_status fj_qerrors_rows(const fj_qenv *e, const fj_qrows *r)
{
    fj_query *q = e->q;
    fj_sink *k = e->k;
    fj_status rs = k->table(k, &fj_qt_errors);
    if (rs != FJ_OK)
        return rs;
    /* Position: the time of the last row sent and how many rows of that time were sent (rows are
     * never deleted, so the order is stable). */
    fj_time last_t = q->after.set ? (fj_time)q->after.v : 0;
    int64_t same = q->after.set ? q->after.id : 0, skip = same;
    size_t n = 0;
    bool row = false;
    while ((rs = fj_qr_step(r, "errors", &row)) == FJ_OK && row) {
        fj_time t = fj_qr_i64(r, 1);
        if (q->after.set && t == (fj_time)q->after.v && skip > 0) {
            skip--;
            continue;
        }
        if (q->limit && n == q->limit) {
            q->next.set = true;
            q->next.v = (double)last_t;
            q->next.id = same;
            break;
        }
        fj_value v[6] = {
            fj_value_text(q->cluster),
            fj_value_text(fj_qnodes_name(e->nodes, fj_qr_i64(r, 0))),
            fj_value_time(t),
            fj_qr_value(r, 2, FJ_VT_TEXT),
            fj_qr_value(r, 3, FJ_VT_TEXT),
            fj_qr_value(r, 4, FJ_VT_TEXT),
        };
        if ((rs = k->row(k, v)) != FJ_OK)
            return rs;
        same = t == last_t ? same + 1 : 1;
        last_t = t;
        n++;
    }
    return rs;
}

/* --- the ops of storage/core/store.h: their SQL and rows (fj_qx_run does the rest) ------------- */

static fj_status uptime(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)x, (void)arg;
    return fj_quptime_rows(e, &st[0], &st[1], &st[2], &st[3]);
}

fj_status fj_store_query_uptime(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_status rs = fj_quptime_window(q, err);
    if (rs != FJ_OK)
        return rs;
    const char *const sql[] = {
        "SELECT time FROM samples WHERE node_id = ?1 AND time >= ?2 AND time <= ?3 ORDER BY time",
        fj_driver_of(s)->layout->uptime_cards,
        "SELECT count(*), max(n_gpus) FROM sysinfo WHERE node_id = ?1",
        "SELECT min(time) FROM samples WHERE node_id = ?1",
        NULL,
    };
    return fj_qx_run(s, q, k, err, FJ_QX_NODES, sql, uptime, NULL);
}

fj_status fj_store_query_errors(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    return fj_qx_run_built(s, q, k, err, fj_qerrors_sql, fj_qerrors_rows);
}
