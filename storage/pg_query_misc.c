/* pg_query_misc.c — uptime (up and down intervals of nodes and GPU cards from the gaps in their
 * samples) and error records, for the PostgreSQL backend; a port of sqlite_query_misc.c. */
#include "pg_query_int.h"

#include "alloc.h"

#include <stdio.h>
#include <string.h>

/* --- uptime -------------------------------------------------------------------------------- */

typedef struct upctx {
    fj_pgq *x;
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
    fj_value v[6] = {fj_pv_text(u->node), fj_pv_text(device), fj_pv_text(up ? "up" : "down"),
                     fj_pv_time(a),       fj_pv_time(b),      fj_pv_int(b - a)};
    return u->x->k->row(u->x->k, v);
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

fj_status fj_pg_q_uptime(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *ts = NULL, *gs = NULL, *hg = NULL;
    fj_time *t = NULL, *seg = NULL;
    uint64_t *mask = NULL;
    size_t cap = 0;
    upctx u = {&x, NULL, q->from, q->to ? q->to : q->now, q->interval_s > 0 ? q->interval_s : 900};
    if (!u.from)
        u.from = u.to - 86400;
    if (u.from > u.to) {
        rs = fj_err_set(err, FJ_EINVAL, "from", "parameter 'from': after 'to'");
        goto out;
    }
    q->from = u.from; /* what was used, for the answer */
    q->to = u.to;
    q->interval_s = u.interval;
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT time FROM samples WHERE node_id = $1 AND time >= $2 AND time <= $3"
                                 " ORDER BY time", &ts)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT g.time, g.idx, g.failing FROM sample_gpus g"
                                 " WHERE g.node_id = $1 AND g.time >= $2 AND g.time <= $3"
                                 " ORDER BY g.time, g.idx", &gs)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT count(*), max(n_gpus) FROM sysinfo WHERE node_id = $1", &hg)) != FJ_OK ||
        (rs = k->table(k, &fj_qt_uptime)) != FJ_OK)
        goto out;

    size_t *order = fj_arena_alloc(x.a, (x.nodes.n + 1) * sizeof *order), n_order = 0;
    if (!order) {
        rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < x.nodes.n; i++)
        if (x.nodes.want[i]) {
            size_t j = n_order++;
            while (j > 0 && strcmp(x.nodes.names[order[j - 1]], x.nodes.names[i]) > 0) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = i;
        }

    for (size_t oi = 0; oi < n_order; oi++) {
        size_t ni = order[oi];
        int64_t node = x.nodes.ids[ni];
        u.node = x.nodes.names[ni];
        /* sample times from one interval before the window, so a node up at `from` shows so */
        size_t n = 0;
        fj_pgs_bind_int(ts, 1, node);
        fj_pgs_bind_int(ts, 2, u.from - u.interval);
        fj_pgs_bind_int(ts, 3, u.to);
        int r;
        while ((r = fj_pgs_step(ts)) == FJ_PGS_ROW) {
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
                    fj_pgs_reset(ts);
                    rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                    goto out;
                }
                cap = nc;
            }
            t[n++] = fj_pgs_int(ts, 0);
        }
        fj_pgs_reset(ts);
        if (r != FJ_PGS_DONE) {
            rs = fj_pgq_fail(&x, r, "sample times");
            goto out;
        }
        if (n == 0) {
            if ((rs = up_row(&u, "node", false, u.from, u.to)) != FJ_OK)
                goto out;
            continue;
        }
        size_t ns = up_segments(t, n, u.to, u.interval, seg);
        fj_time cur = u.from;
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
        fj_pgs_bind_int(hg, 1, node);
        r = fj_pgs_step(hg);
        bool gpus = r == FJ_PGS_ROW && (fj_pgs_int(hg, 0) == 0 || fj_pgs_int(hg, 1) > 0);
        fj_pgs_reset(hg);
        if (!gpus)
            continue;
        memset(mask, 0, n * sizeof *mask);
        uint64_t seen = 0;
        fj_pgs_bind_int(gs, 1, node);
        fj_pgs_bind_int(gs, 2, u.from - u.interval);
        fj_pgs_bind_int(gs, 3, u.to);
        size_t si = 0;
        while ((r = fj_pgs_step(gs)) == FJ_PGS_ROW) {
            fj_time gt = fj_pgs_int(gs, 0);
            int64_t idx = fj_pgs_int(gs, 1);
            while (si < n && t[si] < gt)
                si++;
            if (si == n || t[si] != gt || idx < 0 || idx >= 64)
                continue;
            seen |= (uint64_t)1 << idx;
            if (fj_pgs_int(gs, 2) == 0)
                mask[si] |= (uint64_t)1 << idx;
        }
        fj_pgs_reset(gs);
        if (r != FJ_PGS_DONE) {
            rs = fj_pgq_fail(&x, r, "gpu samples");
            goto out;
        }
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
    fj_pgs_finalize(ts);
    fj_pgs_finalize(gs);
    fj_pgs_finalize(hg);
    return fj_pgq_end(&x, rs);
}

/* --- errors -------------------------------------------------------------------------------- */

fj_status fj_pg_q_errors(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgb b;
    fj_pgb_init(&b);
    fj_pgs *st = NULL;
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK)
        goto out;
    fj_pgb_put(&b, "SELECT node_id, time, source, kind, detail FROM errors WHERE cluster_id = ");
    fj_pgb_int(&b, x.cluster_id);
    fj_time from = q->from;
    if (q->after.set && (fj_time)q->after.v > from)
        from = (fj_time)q->after.v;
    if (from) {
        fj_pgb_put(&b, " AND time >= ");
        fj_pgb_int(&b, from);
    }
    if (q->to) {
        fj_pgb_put(&b, " AND time <= ");
        fj_pgb_int(&b, q->to);
    }
    if (q->sources.n) {
        fj_pgb_put(&b, " AND source IN ");
        fj_pgb_text_list(&b, &q->sources);
    }
    if (x.nodes.filtered) {
        fj_pgb_put(&b, " AND node_id IN ");
        fj_pgb_node_list(&b, &x);
    }
    fj_pgb_put(&b, " ORDER BY time, node_id, source COLLATE \"C\", detail COLLATE \"C\"");
    if ((rs = fj_pgb_prepare(&x, &b, &st)) != FJ_OK || (rs = k->table(k, &fj_qt_errors)) != FJ_OK)
        goto out;
    /* Position: the time of the last row sent and how many rows of that time were sent (rows are
     * never deleted, so the order is stable). */
    fj_time last_t = q->after.set ? (fj_time)q->after.v : 0;
    int64_t same = q->after.set ? q->after.id : 0, skip = same;
    size_t n = 0;
    int r;
    while ((r = fj_pgs_step(st)) == FJ_PGS_ROW) {
        fj_time t = fj_pgs_int(st, 1);
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
            fj_pv_text(q->cluster),
            fj_pv_text(fj_pgq_node_name(&x, fj_pgs_int(st, 0))),
            fj_pv_time(t),
            fj_pv_col(st, 2, FJ_VT_TEXT),
            fj_pv_col(st, 3, FJ_VT_TEXT),
            fj_pv_col(st, 4, FJ_VT_TEXT),
        };
        if ((rs = k->row(k, v)) != FJ_OK)
            goto out;
        same = t == last_t ? same + 1 : 1;
        last_t = t;
        n++;
    }
    if (r != FJ_PGS_ROW && r != FJ_PGS_DONE)
        rs = fj_pgq_fail(&x, r, "errors");
out:
    fj_pgs_finalize(st);
    fj_pgb_free(&b);
    return fj_pgq_end(&x, rs);
}
