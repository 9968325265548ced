/* storage/query/sqlbuf.c — the SQL builder every backend's query code uses (storage/query/sqlbuf.h). */
#include "storage/query/sqlbuf.h"

#include "alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void fj_sqlbuf_init(fj_sqlbuf *b, char mark)
{
    memset(b, 0, sizeof *b);
    fj_buf_init(&b->sql, (size_t)16 << 20);
    b->mark = mark;
}

void fj_sqlbuf_free(fj_sqlbuf *b)
{
    fj_buf_free(&b->sql);
    fj_free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

void fj_sqlbuf_put(fj_sqlbuf *b, const char *text)
{
    if (b->st == FJ_OK)
        b->st = fj_buf_puts(&b->sql, text);
}

void fj_sqlbuf_printf(fj_sqlbuf *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        if (b->st == FJ_OK)
            b->st = FJ_EINTERNAL;
        return;
    }
    fj_sqlbuf_put(b, tmp);
}

static fj_sqlbuf_param *add_param(fj_sqlbuf *b)
{
    if (b->st != FJ_OK)
        return NULL;
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 16;
        fj_sqlbuf_param *p = fj_realloc(b->p, nc * sizeof *p);
        if (!p) {
            b->st = FJ_ENOMEM;
            return NULL;
        }
        b->p = p;
        b->cap = nc;
    }
    fj_sqlbuf_param *p = &b->p[b->n++];
    memset(p, 0, sizeof *p);
    fj_sqlbuf_printf(b, "%c%zu", b->mark, b->n);
    return p;
}

void fj_sqlbuf_int(fj_sqlbuf *b, int64_t v)
{
    fj_sqlbuf_param *p = add_param(b);
    if (p)
        p->t = 0, p->i = v;
}

void fj_sqlbuf_bound(fj_sqlbuf *b, const char *text, int64_t v)
{
    if (!v)
        return;
    fj_sqlbuf_put(b, text);
    fj_sqlbuf_int(b, v);
}

void fj_sqlbuf_page(fj_sqlbuf *b, size_t limit)
{
    if (limit)
        fj_sqlbuf_bound(b, " LIMIT ", (int64_t)limit + 1);
}

void fj_sqlbuf_real(fj_sqlbuf *b, double v)
{
    fj_sqlbuf_param *p = add_param(b);
    if (p)
        p->t = 1, p->d = v;
}

void fj_sqlbuf_text(fj_sqlbuf *b, const char *s)
{
    fj_sqlbuf_param *p = add_param(b);
    if (p)
        p->t = 2, p->s = s;
}

void fj_sqlbuf_text_list(fj_sqlbuf *b, const fj_strlist *l)
{
    if (!l->n) {
        fj_sqlbuf_put(b, "(NULL)");
        return;
    }
    fj_sqlbuf_put(b, "(");
    for (size_t i = 0; i < l->n; i++) {
        if (i)
            fj_sqlbuf_put(b, ",");
        fj_sqlbuf_text(b, l->v[i]);
    }
    fj_sqlbuf_put(b, ")");
}

void fj_sqlbuf_int_list(fj_sqlbuf *b, const int64_t *v, size_t n)
{
    if (!n) {
        fj_sqlbuf_put(b, "(NULL)");
        return;
    }
    fj_sqlbuf_put(b, "(");
    for (size_t i = 0; i < n; i++)
        fj_sqlbuf_printf(b, i ? ",%lld" : "%lld", (long long)v[i]);
    fj_sqlbuf_put(b, ")");
}

void fj_sqlbuf_node_list(fj_sqlbuf *b, const fj_qnodes *nodes)
{
    size_t k = 0;
    fj_sqlbuf_put(b, "(");
    for (size_t i = 0; i < nodes->n; i++)
        if (nodes->want[i])
            fj_sqlbuf_printf(b, k++ ? ",%lld" : "%lld", (long long)nodes->ids[i]);
    fj_sqlbuf_put(b, k ? ")" : "NULL)");
}

void fj_sqlbuf_glob(fj_sqlbuf *b, const fj_dialect *d, fj_arena *a, const char *col, const char *glob)
{
    if (!d->glob_regex) {
        fj_sqlbuf_printf(b, "%s GLOB ", col);
        fj_sqlbuf_text(b, glob);
        return;
    }
    /* ^...$ with every regex metacharacter outside [...] escaped; * -> .*, ? -> . */
    fj_sqlbuf_printf(b, "%s ~ ", col);
    size_t n = strlen(glob);
    char *re = fj_arena_alloc(a, 2 * n + 8);
    if (!re) {
        if (b->st == FJ_OK)
            b->st = FJ_ENOMEM;
        return;
    }
    size_t k = 0;
    re[k++] = '^';
    for (size_t i = 0; i < n; i++) {
        char c = glob[i];
        if (c == '*') {
            re[k++] = '.';
            re[k++] = '*';
        } else if (c == '?') {
            re[k++] = '.';
        } else if (c == '[' && strchr(glob + i + 1 + (glob[i + 1] == '^' || glob[i + 1] == ']'), ']')) {
            /* a class: copied up to its closing bracket ("]" first is a member, as in GLOB) */
            size_t j = i + 1;
            re[k++] = '[';
            if (glob[j] == '^')
                re[k++] = '^', j++;
            if (glob[j] == ']')
                re[k++] = '\\', re[k++] = ']', j++;
            while (glob[j] != ']') {
                if (glob[j] == '\\')
                    re[k++] = '\\';
                re[k++] = glob[j++];
            }
            re[k++] = ']';
            i = j;
        } else {
            if (strchr(".^$+()[]{}|\\", c))
                re[k++] = '\\';
            re[k++] = c;
        }
    }
    re[k++] = '$';
    re[k] = '\0';
    fj_sqlbuf_text(b, re);
}

void fj_sqlbuf_and_in_texts(fj_sqlbuf *b, const char *col, const fj_strlist *l)
{
    if (!l->n)
        return;
    fj_sqlbuf_printf(b, " AND %s IN ", col);
    fj_sqlbuf_text_list(b, l);
}

void fj_sqlbuf_and_in_ints(fj_sqlbuf *b, const char *col, const fj_intlist *l)
{
    if (!l->n)
        return;
    fj_sqlbuf_printf(b, " AND %s IN ", col);
    fj_sqlbuf_int_list(b, l->v, l->n);
}
