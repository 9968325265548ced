/* storage/query/sqlbuf.h — the SQL builder of the query code: SQL text with numbered placeholders and
 * the values bound to them, kept apart (values are never pasted into SQL; integer lists of ids,
 * numbers we format, excepted). Backends differ only in the placeholder's mark (SQLite ?N,
 * PostgreSQL $N) and in how they bind, which their *_prepare does. Not a public header. */
#ifndef FJ_QUERY_SQLBUF_H
#define FJ_QUERY_SQLBUF_H

#include "buf.h"
#include "storage/query/qx.h"

typedef struct fj_sqlbuf_param {
    int t; /* 0 int, 1 real, 2 text */
    int64_t i;
    double d;
    const char *s;
} fj_sqlbuf_param;

typedef struct fj_sqlbuf {
    fj_buf sql;     /* at most 16 MiB */
    fj_sqlbuf_param *p; /* p[i] is placeholder i + 1 */
    size_t n, cap;
    fj_status st; /* first failure; later appends are ignored */
    char mark;    /* what starts a placeholder: '?' or '$' */
} fj_sqlbuf;

void fj_sqlbuf_init(fj_sqlbuf *b, char mark);
void fj_sqlbuf_free(fj_sqlbuf *b);
void fj_sqlbuf_put(fj_sqlbuf *b, const char *text);
/* Formatted text of at most 1023 bytes; longer fails the builder, never cuts the text. */
void fj_sqlbuf_printf(fj_sqlbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends a placeholder bound to the value. */
void fj_sqlbuf_int(fj_sqlbuf *b, int64_t v);
void fj_sqlbuf_real(fj_sqlbuf *b, double v);
/* A condition on one bound of a window: text then v as a parameter, when v is set (0: unset). */
void fj_sqlbuf_bound(fj_sqlbuf *b, const char *text, int64_t v);
/* " LIMIT" one more than a page of limit rows (0: no limit): the extra row says a page follows. */
void fj_sqlbuf_page(fj_sqlbuf *b, size_t limit);
void fj_sqlbuf_text(fj_sqlbuf *b, const char *s); /* s must outlive the statement's use */
/* "(p,p,...)" of the strings as parameters; "(NULL)" for none. */
void fj_sqlbuf_text_list(fj_sqlbuf *b, const fj_strlist *l);
/* "(1,2,...)" as literals (numbers we format, never input text); "(NULL)" for none. */
void fj_sqlbuf_int_list(fj_sqlbuf *b, const int64_t *v, size_t n);
/* A filter by one of the given values: " AND col IN (...)" when the list has members. */
void fj_sqlbuf_and_in_texts(fj_sqlbuf *b, const char *col, const fj_strlist *l);
void fj_sqlbuf_and_in_ints(fj_sqlbuf *b, const char *col, const fj_intlist *l);
/* The wanted node ids as a literal list, "(NULL)" for none. */
void fj_sqlbuf_node_list(fj_sqlbuf *b, const fj_qnodes *nodes);
/* The condition that text column col matches glob (*, ?, [...] as in SQLite's GLOB): col GLOB p,
 * or where the dialect has no GLOB (glob_regex) col ~ p with p the glob as an anchored regular
 * expression, made in the arena a. */
void fj_sqlbuf_glob(fj_sqlbuf *b, const fj_dialect *d, fj_arena *a, const char *col, const char *glob);

#endif
