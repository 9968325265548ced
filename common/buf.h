/* buf.h — a growable byte buffer with a hard cap fixed at creation (curl's dynbuf habit): appends
 * past the cap fail with FJ_ETOOBIG and leave the buffer as it was, so a body is never truncated
 * silently. Errors are sticky: after one failed append every later append fails with the same
 * status and appends nothing, until the buffer is reset, so a writer may append a whole document
 * and check fj_buf_status once at the end (a short append after a failed long one can never
 * leave a document with a piece missing). The contents are always NUL-terminated (the terminator
 * is not counted in len). */
#ifndef FJ_BUF_H
#define FJ_BUF_H

#include "fj_status.h"
#include "membudget.h"

#include <stddef.h>

typedef struct fj_buf {
    char *data;   /* NULL until the first append */
    size_t len;
    size_t alloc;
    size_t cap;   /* maximum len */
    fj_status err; /* the first failed append's status; FJ_OK while none failed */
    fj_mem_budget *budget; /* charged with alloc; NULL: none (fj_buf_set_budget) */
} fj_buf;

/* An empty buffer that will refuse to hold more than cap bytes. Allocates nothing. */
void fj_buf_init(fj_buf *b, size_t cap);

/* From now on the buffer's memory is charged to m (what it holds already at once) until it is
 * freed or stolen; growth that m refuses fails with FJ_ENOMEM and m says which limit. m (not
 * owned) must outlive the buffer's memory. A read's answer is built in such a buffer. */
void fj_buf_set_budget(fj_buf *b, fj_mem_budget *m);

/* FJ_OK, FJ_ETOOBIG (cap exceeded; nothing appended) or FJ_ENOMEM; once one append failed, that
 * status again without appending. */
fj_status fj_buf_append(fj_buf *b, const void *p, size_t n);
fj_status fj_buf_puts(fj_buf *b, const char *s);
fj_status fj_buf_printf(fj_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends s as a JSON string literal, quotes included. */
fj_status fj_buf_json_str(fj_buf *b, const char *s);

/* FJ_OK, or the status of the first append that failed since init or reset. */
static inline fj_status fj_buf_status(const fj_buf *b)
{
    return b->err;
}

/* Empties the buffer, keeping its memory, and clears a failed append's status. */
void fj_buf_reset(fj_buf *b);

/* Frees the memory; the buffer is empty again (cap kept, status cleared). */
void fj_buf_free(fj_buf *b);

/* Hands the data to the caller (free with fj_free) and empties the buffer. */
char *fj_buf_steal(fj_buf *b, size_t *len);

#endif
