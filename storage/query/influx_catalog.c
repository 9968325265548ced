/* storage/query/influx_catalog.c — the clusters holding line-protocol series, for InfluxQL's
 * SHOW DATABASES (storage/query/influx_catalog.h). */
#include "storage/query/influx_catalog.h"

#include "ingest/metric_name.h"
#include "storage/query/qx.h"
#include "storage/ts/strchunk.h"

#include <string.h>

fj_status fj_q_ts_clusters(fj_store *s, fj_arena *a, const char ***out, size_t *n, fj_err *err)
{
    *out = NULL;
    *n = 0;
    fj_query q = {0};
    fj_qx x;
    fj_status rs = fj_qx_begin(&x, s, &q, NULL, err);
    if (rs != FJ_OK)
        return rs;
    fj_qrows r = {0};
    if ((rs = fj_qx_prepare(&x, "SELECT c FROM (SELECT DISTINCT cluster AS c FROM ts_series) d ORDER BY c{bytes}", &r)) != FJ_OK)
        goto out;
    size_t cap = 0;
    for (;;) {
        bool row = false;
        if ((rs = fj_qr_step(&r, "list the clusters of ts_series", &row)) != FJ_OK || !row)
            break;
        const char *c = fj_qr_text(&r, 0);
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            const char **nv = fj_arena_calloc(a, cap, sizeof *nv);
            if (!nv) {
                rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                break;
            }
            if (*n)
                memcpy(nv, *out, *n * sizeof *nv);
            *out = nv;
        }
        if (!((*out)[*n] = fj_arena_strdup(a, c ? c : ""))) {
            rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            break;
        }
        (*n)++;
    }
out:
    fj_qx_finalize(&x, &r);
    return fj_qx_end(&x, rs);
}

/* Hands every row of r (the columns of ts_series) to cb; *rows counts them. */
static fj_status each_series(const fj_qrows *r, fj_status (*cb)(void *ud, uint32_t id, const fj_ts_key *key),
                             void *ud, size_t *rows)
{
    for (;;) {
        bool row = false;
        fj_status rs = fj_qr_step(r, "list the series of a measurement", &row);
        if (rs != FJ_OK || !row)
            return rs;
        fj_ts_key k;
        fj_ts_str *f[] = {&k.cluster, &k.host, &k.metric, &k.type, &k.type_id, &k.stype, &k.stype_id};
        for (int i = 0; i < 7; i++) {
            const char *t = fj_qr_text(r, i + 1);
            *f[i] = (fj_ts_str){t ? t : "", t ? strlen(t) : 0};
        }
        k.ftype = (uint8_t)fj_qr_i64(r, 8);
        (*rows)++;
        if ((rs = cb(ud, (uint32_t)fj_qr_i64(r, 0), &k)) != FJ_OK)
            return rs;
    }
}

#define SERIES_COLS "SELECT id, cluster, host, metric, type, type_id, stype, stype_id, ftype FROM ts_series"

fj_status fj_q_ts_series_of(fj_store *s, const char *cluster, const char *meas,
                            fj_status (*cb)(void *ud, uint32_t id, const fj_ts_key *key), void *ud, fj_err *err)
{
    fj_query q = {0};
    fj_qx x;
    fj_status rs = fj_qx_begin(&x, s, &q, NULL, err);
    if (rs != FJ_OK)
        return rs;
    fj_qrows exact = {0}, range = {0};
    size_t rows = 0;
    /* the measurement as series keys write it: its dots escaped (ingest/metric_name.h), a
     * ClusterCockpit metric's whole and a plain line's before ".field" */
    size_t mn = strlen(meas);
    char *cc = fj_arena_alloc(x.a, 2 * mn + 1), *plain = fj_arena_alloc(x.a, 2 * mn + 1);
    if (!cc || !plain) {
        rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    cc[fj_mname_escape(meas, mn, '.', false, cc)] = '\0';
    plain[fj_mname_escape(meas, mn, '.', true, plain)] = '\0';
    /* the metric itself (a ClusterCockpit metric line's series; its index), and the fields of plain
     * lines: the range [meas".", meas"/") in byte order ('/' follows '.'), which no index of every
     * collation serves. Both: since ClusterCockpit's flavour is told by its `type` (docs/metrics.md),
     * a `value` line without one that was ClusterCockpit's before is plain now, and its new series
     * stand beside the old under the same name. */
    if ((rs = fj_qx_prepare(&x, SERIES_COLS " WHERE cluster = ?1 AND metric = ?2", &exact)) != FJ_OK)
        goto out;
    fj_qr_bind_text(&exact, 1, cluster);
    fj_qr_bind_text(&exact, 2, cc);
    if ((rs = each_series(&exact, cb, ud, &rows)) != FJ_OK)
        goto out;
    if ((rs = fj_qx_prepare(&x, SERIES_COLS " WHERE cluster = ?1 AND metric{bytes} >= ?2 AND metric{bytes} < ?3",
                            &range)) != FJ_OK)
        goto out;
    char *lo = fj_arena_printf(x.a, "%s.", plain), *hi = fj_arena_printf(x.a, "%s/", plain);
    if (!lo || !hi) {
        rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    fj_qr_bind_text(&range, 1, cluster);
    fj_qr_bind_text(&range, 2, lo);
    fj_qr_bind_text(&range, 3, hi);
    rs = each_series(&range, cb, ud, &rows);
out:
    fj_qx_finalize(&x, &exact);
    fj_qx_finalize(&x, &range);
    return fj_qx_end(&x, rs);
}

/* One row of a string series (its statement stepped), or none. */
typedef struct srow {
    fj_qrows *r;
    bool have;
    int64_t t;
} srow;

static fj_status srow_next(srow *w)
{
    bool row = false;
    fj_status rs = fj_qr_step(w->r, "read string points", &row);
    w->have = rs == FJ_OK && row;
    w->t = w->have ? fj_qr_i64(w->r, 0) : 0;
    return rs;
}

/* Hands the current row to cb and steps on. */
static fj_status srow_emit(srow *w, size_t i, fj_status (*cb)(void *, size_t, int64_t, const char *, size_t), void *ud)
{
    size_t len = 0;
    const unsigned char *v = w->r->ops->blob(w->r, 1, &len);
    fj_status rs = cb(ud, i, w->t, v ? (const char *)v : "", v ? len : 0);
    return rs == FJ_OK ? srow_next(w) : rs;
}

fj_status fj_q_ts_strings(fj_store *s, const uint32_t *ids, size_t n, int64_t from, int64_t to,
                          fj_status (*cb)(void *ud, size_t i, int64_t t, const char *v, size_t len), void *ud,
                          fj_err *err)
{
    if (!n)
        return FJ_OK;
    fj_query q = {0};
    fj_qx x;
    fj_status rs = fj_qx_begin(&x, s, &q, NULL, err);
    if (rs != FJ_OK)
        return rs;
    fj_qrows r = {0}, ch = {0};
    fj_ts_strs pts = {0};
    fj_ts_codec *codec = NULL;
    if ((rs = fj_qx_prepare(&x, "SELECT t, v FROM ts_strings WHERE series_id = ?1 AND t >= ?2 AND t <= ?3 ORDER BY t",
                            &r)) != FJ_OK ||
        (rs = fj_qx_prepare(&x, "SELECT blob FROM ts_string_chunk WHERE series_id = ?1 AND t_last >= ?2 AND "
                                "t_first <= ?3 ORDER BY t_first", &ch)) != FJ_OK)
        goto out;
    /* Per series: its packed chunks (time-ordered, never overlapping) merged with its rows, a row
     * winning over a chunk's point of the same time (the later write). */
    for (size_t i = 0; i < n && rs == FJ_OK; i++) {
        fj_qrows *st[] = {&r, &ch};
        for (int k = 0; k < 2; k++) {
            fj_qr_reset(st[k]);
            fj_qr_bind(st[k], 1, ids[i]);
            fj_qr_bind(st[k], 2, from);
            fj_qr_bind(st[k], 3, to);
        }
        srow w = {.r = &r};
        if ((rs = srow_next(&w)) != FJ_OK)
            break;
        for (;;) {
            bool row = false;
            if ((rs = fj_qr_step(&ch, "read string chunks", &row)) != FJ_OK || !row)
                break;
            size_t blen = 0;
            const unsigned char *blob = ch.ops->blob(&ch, 0, &blen);
            if (!codec && !(codec = fj_ts_codec_create())) {
                rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                break;
            }
            fj_status ds = fj_ts_strchunk_decode(codec, blob, blen, &pts);
            if (ds != FJ_OK) {
                rs = fj_err_set(err, ds == FJ_ENOMEM ? FJ_ENOMEM : FJ_EIO, "db", "a string chunk of series %u is %s",
                                (unsigned)ids[i], ds == FJ_ENOMEM ? "too large for memory" : "corrupt");
                break;
            }
            for (size_t k = 0; k < pts.n && rs == FJ_OK; k++) {
                int64_t t = pts.t[k];
                if (t < from || t > to)
                    continue;
                while (rs == FJ_OK && w.have && w.t < t)
                    rs = srow_emit(&w, i, cb, ud);
                if (rs != FJ_OK)
                    break;
                if (w.have && w.t == t)
                    rs = srow_emit(&w, i, cb, ud);
                else
                    rs = cb(ud, i, t, pts.data + pts.off[k], pts.len[k]);
            }
            if (rs != FJ_OK)
                break;
        }
        while (rs == FJ_OK && w.have)
            rs = srow_emit(&w, i, cb, ud);
    }
out:
    fj_ts_strs_free(&pts);
    fj_ts_codec_destroy(codec);
    fj_qx_finalize(&x, &r);
    fj_qx_finalize(&x, &ch);
    return fj_qx_end(&x, rs);
}
