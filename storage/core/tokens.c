/* storage/core/tokens.c — the credentials' four ops over the driver (storage/core/tokens.h).
 * read_only is read as 0 or 1 through CASE, which both databases evaluate alike (an integer on
 * SQLite, a boolean on PostgreSQL), and written as "1" or "0", which each column takes. */
#include "storage/core/tokens.h"

#include "alloc.h"
#include "storage/core/driver.h"
#include "storage/core/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN_COLS "cluster, hash, CASE WHEN read_only THEN 1 ELSE 0 END, created"

static fj_status no_token(const char *cluster, fj_err *err)
{
    return fj_err_set(err, FJ_ENOTFOUND, "cluster", "no token for cluster '%s'", cluster);
}

static void token_from_cells(const char *const *cells, fj_token_rec *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->cluster, sizeof t->cluster, "%s", cells[0] ? cells[0] : "");
    snprintf(t->hash, sizeof t->hash, "%s", cells[1] ? cells[1] : "");
    t->read_only = cells[2] && strcmp(cells[2], "0") != 0;
    t->created = cells[3] ? strtoll(cells[3], NULL, 10) : 0;
}

fj_status fj_tokens_put(fj_store *s, const fj_token_rec *t, fj_err *err)
{
    const fj_driver *d = fj_driver_of(s);
    if (!d->writable(s))
        return fj_err_set(err, FJ_EINVAL, "db", "token_put needs a writable handle");
    char created[24];
    snprintf(created, sizeof created, "%lld", (long long)t->created);
    const char *vals[] = {t->cluster, t->hash, t->read_only ? "1" : "0", created};
    return d->run(s,
                  "INSERT INTO tokens(cluster, hash, read_only, created) VALUES(?1, ?2, ?3, ?4)"
                  " ON CONFLICT (cluster) DO UPDATE SET hash = excluded.hash,"
                  " read_only = excluded.read_only, created = excluded.created",
                  4, vals, NULL, NULL, NULL, "token_put", err);
}

typedef struct one_token {
    fj_token_rec *out;
    bool found;
} one_token;

static void take_one(void *ctx, int ncols, const char *const *cells)
{
    (void)ncols;
    one_token *o = ctx;
    if (!o->found)
        token_from_cells(cells, o->out);
    o->found = true;
}

fj_status fj_tokens_get(fj_store *s, const char *cluster, fj_token_rec *out, fj_err *err)
{
    one_token o = {out, false};
    const char *vals[] = {cluster};
    fj_status st = fj_driver_of(s)->run(s, "SELECT " TOKEN_COLS " FROM tokens WHERE cluster = ?1", 1, vals,
                                        take_one, &o, NULL, "token_get", err);
    if (st == FJ_OK && !o.found)
        st = no_token(cluster, err);
    return st;
}

typedef struct token_vec {
    fj_token_rec *v;
    size_t len, cap;
    bool oom;
} token_vec;

static void take_all(void *ctx, int ncols, const char *const *cells)
{
    (void)ncols;
    token_vec *tv = ctx;
    if (tv->oom)
        return;
    if (!fj_grow(&tv->v, &tv->cap, tv->len + 1, sizeof *tv->v, 8)) {
        tv->oom = true;
        return;
    }
    token_from_cells(cells, &tv->v[tv->len++]);
}

fj_status fj_tokens_list(fj_store *s, fj_token_rec **out, size_t *n, fj_err *err)
{
    *out = NULL;
    *n = 0;
    const fj_driver *d = fj_driver_of(s);
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT " TOKEN_COLS " FROM tokens ORDER BY cluster%s", d->dialect.bytewise);
    token_vec tv = {0};
    fj_status st = d->run(s, sql, 0, NULL, take_all, &tv, NULL, "token_list", err);
    if (st == FJ_OK && tv.oom)
        st = fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    if (st != FJ_OK) {
        fj_free(tv.v);
        return st;
    }
    *out = tv.v;
    *n = tv.len;
    return FJ_OK;
}

fj_status fj_tokens_revoke(fj_store *s, const char *cluster, fj_err *err)
{
    const fj_driver *d = fj_driver_of(s);
    if (!d->writable(s))
        return fj_err_set(err, FJ_EINVAL, "db", "token_revoke needs a writable handle");
    const char *vals[] = {cluster};
    int64_t changed = 0;
    fj_status st = d->run(s, "DELETE FROM tokens WHERE cluster = ?1", 1, vals, NULL, NULL, &changed,
                          "token_revoke", err);
    if (st == FJ_OK && changed == 0)
        st = no_token(cluster, err);
    return st;
}
