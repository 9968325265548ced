/* hostpat.c — host patterns: node ranges (expanded by fj_noderange_expand) and `*` wildcards.
 * An item is split at its `*`s; each piece holding brackets is expanded on its own, and the
 * cross product of the pieces' expansions gives exact names (no `*`) or wildcard patterns. */
#include "api/hostpat.h"

#include "ingest/noderange.h"

#include <stdlib.h>
#include <string.h>

struct fj_hostpat {
    const char **exact; /* sorted, for bsearch */
    size_t n_exact;
    const char **glob;
    size_t n_glob;
};

bool fj_glob_match(const char *p, const char *s)
{
    const char *star = NULL, *resume = NULL;
    while (*s) {
        if (*p == '*') {
            star = p++;
            resume = s;
        } else if (*p == *s) {
            p++;
            s++;
        } else if (star) {
            p = star + 1;
            s = ++resume;
        } else {
            return false;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

typedef struct strvec {
    const char **v;
    size_t n, cap;
} strvec;

static fj_status push(fj_arena *a, strvec *sv, const char *s)
{
    if (sv->n == sv->cap) {
        size_t nc = sv->cap ? sv->cap * 2 : 16;
        const char **v = fj_arena_alloc(a, nc * sizeof *v);
        if (!v)
            return FJ_ENOMEM;
        if (sv->n)
            memcpy(v, sv->v, sv->n * sizeof *v);
        sv->v = v;
        sv->cap = nc;
    }
    sv->v[sv->n++] = s;
    return FJ_OK;
}

static bool piece_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '[' || c == ']' || c == ',' || c == '_';
}

/* The expansions of one piece (text between `*`s). A piece without brackets is itself. */
static fj_status expand_piece(fj_arena *a, const char *item, const char *piece, size_t len, strvec *out,
                              fj_err *err)
{
    for (size_t i = 0; i < len; i++)
        if (!piece_char((unsigned char)piece[i]))
            return fj_err_set(err, FJ_EINVAL, NULL, "host pattern '%s': character '%c' is not allowed", item,
                              piece[i]);
    if (!memchr(piece, '[', len)) {
        char *c = fj_arena_strndup(a, piece, len);
        return c ? push(a, out, c) : FJ_ENOMEM;
    }
    char **names;
    size_t n;
    fj_err e = {0}, e2 = {0};
    char *plain = fj_arena_strndup(a, piece, len);
    if (!plain)
        return FJ_ENOMEM;
    fj_status st = fj_noderange_expand_max(a, plain, FJ_HOSTPAT_MAX, &names, &n, &e);
    if (st == FJ_OK) {
        for (size_t i = 0; i < n; i++)
            if ((st = push(a, out, names[i])) != FJ_OK)
                return st;
        return FJ_OK;
    }
    if (st == FJ_ETOOBIG)
        return fj_err_set(err, st, NULL, "host pattern '%s' names more than %d hosts", item, FJ_HOSTPAT_MAX);
    if (st != FJ_EINVAL)
        return st;
    /* Pieces of a wildcard pattern need not be host names themselves (".fox", "c1-"): expand them
     * between two letters, then strip those. */
    char *wrapped = fj_arena_alloc(a, len + 3);
    if (!wrapped)
        return FJ_ENOMEM;
    wrapped[0] = 'x';
    memcpy(wrapped + 1, piece, len);
    wrapped[len + 1] = 'x';
    wrapped[len + 2] = '\0';
    st = fj_noderange_expand_max(a, wrapped, FJ_HOSTPAT_MAX, &names, &n, &e2);
    if (st == FJ_ETOOBIG)
        return fj_err_set(err, st, NULL, "host pattern '%s' names more than %d hosts", item, FJ_HOSTPAT_MAX);
    if (st != FJ_OK) /* the unwrapped piece's complaint reads better */
        return fj_err_set(err, st, NULL, "host pattern '%s': %s", item, e.message);
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(names[i]);
        names[i][l - 1] = '\0';
        if ((st = push(a, out, names[i] + 1)) != FJ_OK)
            return st;
    }
    return FJ_OK;
}

/* Adds the names or patterns of one item (no top-level commas). */
static fj_status add_item(fj_arena *a, const char *item, strvec *exact, strvec *glob, fj_err *err)
{
    if (!*item)
        return fj_err_set(err, FJ_EINVAL, NULL, "empty host pattern");
    strvec acc = {0};
    fj_status st = push(a, &acc, "");
    if (st != FJ_OK)
        return st;
    bool wild = false;
    const char *p = item;
    for (;;) {
        const char *star = strchr(p, '*');
        size_t len = star ? (size_t)(star - p) : strlen(p);
        strvec pieces = {0};
        if ((st = expand_piece(a, item, p, len, &pieces, err)) != FJ_OK)
            return st;
        if (acc.n * pieces.n > FJ_HOSTPAT_MAX)
            return fj_err_set(err, FJ_ETOOBIG, NULL, "host pattern '%s' names more than %d hosts", item,
                              FJ_HOSTPAT_MAX);
        strvec next = {0};
        for (size_t i = 0; i < acc.n; i++)
            for (size_t j = 0; j < pieces.n; j++) {
                char *c = fj_arena_printf(a, "%s%s%s", acc.v[i], pieces.v[j], star ? "*" : "");
                if (!c || (st = push(a, &next, c)) != FJ_OK)
                    return FJ_ENOMEM;
            }
        acc = next;
        if (!star)
            break;
        wild = true;
        p = star + 1;
    }
    for (size_t i = 0; i < acc.n; i++)
        if ((st = push(a, wild ? glob : exact, acc.v[i])) != FJ_OK)
            return st;
    if (exact->n + glob->n > FJ_HOSTPAT_MAX)
        return fj_err_set(err, FJ_ETOOBIG, NULL, "host patterns name more than %d hosts", FJ_HOSTPAT_MAX);
    return FJ_OK;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

fj_status fj_hostpat_compile(fj_arena *a, const char *const *specs, size_t n, fj_hostpat **out, fj_err *err)
{
    fj_hostpat *hp = fj_arena_calloc(a, 1, sizeof *hp);
    if (!hp)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    strvec exact = {0}, glob = {0};
    for (size_t s = 0; s < n; s++) {
        const char *spec = specs[s];
        size_t start = 0, depth = 0, len = strlen(spec);
        for (size_t i = 0; i <= len; i++) {
            char c = spec[i];
            if (c == '[')
                depth++;
            else if (c == ']' && depth)
                depth--;
            if ((c == ',' && depth == 0) || c == '\0') {
                char *item = fj_arena_strndup(a, spec + start, i - start);
                if (!item)
                    return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                fj_status st = add_item(a, item, &exact, &glob, err);
                if (st == FJ_ENOMEM)
                    return fj_err_set(err, st, NULL, "out of memory");
                if (st != FJ_OK)
                    return st;
                start = i + 1;
            }
        }
    }
    if (exact.n > 1)
        qsort(exact.v, exact.n, sizeof *exact.v, cmp_str);
    hp->exact = exact.v;
    hp->n_exact = exact.n;
    hp->glob = glob.v;
    hp->n_glob = glob.n;
    *out = hp;
    return FJ_OK;
}

static bool match_whole(const fj_hostpat *p, const char *name)
{
    if (p->n_exact && bsearch(&name, p->exact, p->n_exact, sizeof *p->exact, cmp_str))
        return true;
    for (size_t i = 0; i < p->n_glob; i++)
        if (fj_glob_match(p->glob[i], name))
            return true;
    return false;
}

bool fj_hostpat_match(const fj_hostpat *p, const char *name)
{
    if (match_whole(p, name))
        return true;
    /* leading labels: "ml1" and "ml1.hpc" for "ml1.hpc.uio.no" */
    char buf[256];
    size_t len = strlen(name);
    if (len >= sizeof buf)
        return false;
    memcpy(buf, name, len + 1);
    for (size_t i = len; i-- > 0;)
        if (buf[i] == '.') {
            buf[i] = '\0';
            if (match_whole(p, buf))
                return true;
        }
    return false;
}
