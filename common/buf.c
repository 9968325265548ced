/* buf.c — capped growable buffer. */
#include "buf.h"

#include "alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void fj_buf_init(fj_buf *b, size_t cap)
{
    b->data = NULL;
    b->len = b->alloc = 0;
    b->cap = cap;
    b->err = FJ_OK;
    b->budget = NULL;
}

void fj_buf_set_budget(fj_buf *b, fj_mem_budget *m)
{
    fj_mem_uncharge(b->budget, b->alloc);
    b->budget = m;
    fj_mem_charge_held(m, b->alloc);
}

static fj_status fail(fj_buf *b, fj_status st)
{
    b->err = st;
    return st;
}

static fj_status reserve(fj_buf *b, size_t extra)
{
    if (b->err != FJ_OK)
        return b->err;
    if (extra > b->cap || b->len > b->cap - extra)
        return fail(b, FJ_ETOOBIG);
    size_t need = b->len + extra + 1;
    if (need <= b->alloc)
        return FJ_OK;
    size_t n = b->alloc ? b->alloc : 256;
    while (n < need)
        n = n > (size_t)-1 / 2 ? need : n * 2;
    if (n > b->cap + 1)
        n = b->cap + 1 > need ? b->cap + 1 : need;
    if (!fj_mem_charge(b->budget, n - b->alloc))
        return fail(b, FJ_ENOMEM);
    char *p = fj_realloc(b->data, n);
    if (!p) {
        fj_mem_uncharge(b->budget, n - b->alloc);
        return fail(b, FJ_ENOMEM);
    }
    b->data = p;
    b->alloc = n;
    return FJ_OK;
}

fj_status fj_buf_append(fj_buf *b, const void *p, size_t n)
{
    fj_status st = reserve(b, n);
    if (st != FJ_OK)
        return st;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return FJ_OK;
}

fj_status fj_buf_puts(fj_buf *b, const char *s)
{
    return fj_buf_append(b, s, strlen(s));
}

fj_status fj_buf_printf(fj_buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    fj_status st = n < 0 ? fail(b, FJ_EINTERNAL) : reserve(b, (size_t)n);
    if (st == FJ_OK) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
    return st;
}

fj_status fj_buf_json_str(fj_buf *b, const char *s)
{
    fj_status st = fj_buf_append(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; st == FJ_OK && *p; p++) {
        switch (*p) {
        case '"': st = fj_buf_append(b, "\\\"", 2); break;
        case '\\': st = fj_buf_append(b, "\\\\", 2); break;
        case '\n': st = fj_buf_append(b, "\\n", 2); break;
        case '\r': st = fj_buf_append(b, "\\r", 2); break;
        case '\t': st = fj_buf_append(b, "\\t", 2); break;
        default:
            if (*p < 0x20)
                st = fj_buf_printf(b, "\\u%04x", *p);
            else
                st = fj_buf_append(b, p, 1);
        }
    }
    return st == FJ_OK ? fj_buf_append(b, "\"", 1) : st;
}

void fj_buf_reset(fj_buf *b)
{
    b->len = 0;
    b->err = FJ_OK;
    if (b->data)
        b->data[0] = '\0';
}

void fj_buf_free(fj_buf *b)
{
    fj_mem_uncharge(b->budget, b->alloc);
    fj_free(b->data);
    b->data = NULL;
    b->len = b->alloc = 0;
    b->err = FJ_OK;
}

char *fj_buf_steal(fj_buf *b, size_t *len)
{
    char *p = b->data;
    if (len)
        *len = b->len;
    fj_mem_uncharge(b->budget, b->alloc); /* the caller's now */
    b->data = NULL;
    b->len = b->alloc = 0;
    b->err = FJ_OK;
    return p;
}
