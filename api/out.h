/* out.h — JSON and CSV writers for the query API, as row sinks (storage/core/store_query.h): one store query
 * feeds either format from the same rows. JSON: {"<meta>":..., "<table>":[{row}...], "next":...};
 * a grouped table (n_key > 0) nests each key's other columns under "points". CSV (RFC 4180): a
 * header line of column names, then one line per row; several tables are separated by a blank
 * line; lists are joined with commas inside one quoted cell; times are RFC 3339; null is empty;
 * a text cell that a spreadsheet would run as a formula starts with ' (fj_csv_text).
 * Pure (writes into an fj_buf): unit-tested directly. */
#ifndef FJ_OUT_H
#define FJ_OUT_H

#include "buf.h"
#include "storage/core/store_query.h"

#include <stdbool.h>

#define FJ_OUT_MAX_COLS 128

typedef struct fj_out {
    fj_sink sink;       /* first: the store calls it */
    fj_buf *b;
    bool csv;
    const char *single; /* JSON: write the first table as one object under this name */
    const fj_qtable *t; /* the table being written */
    size_t n_tables, rows, groups;
    fj_buf key;         /* JSON grouping: the previous row's key, serialised */
    fj_buf keys;        /* JSON: ,"name": of every column of the table, at key_off */
    size_t key_off[FJ_OUT_MAX_COLS], key_len[FJ_OUT_MAX_COLS];
    fj_buf tmp;
    fj_status st;       /* first failure */
    bool open;          /* JSON: "{" written */
    /* Set by the caller before the first table (fj_out_fields, fj_out_columns). */
    const char *const *fields; /* the columns to write besides a grouped table's key (NULL: all) */
    size_t n_fields;
    const fj_query *grid;      /* JSON columns layout of a grouped table over q's from, to, bucket_s */
    /* Per table: which columns are written; in the columns layout, each written column's values
     * of the current group (JSON, comma-separated) and the group's next bucket. */
    bool pick[FJ_OUT_MAX_COLS];
    bool columns;
    fj_buf *colv;
    fj_time grid_from, grid_step;
    size_t grid_n, slot;
} fj_out;

/* A writer appending to b. */
void fj_out_init(fj_out *o, fj_buf *b, bool csv);

/* Only these columns of each table (the key columns and a "time" column always), in the table's order;
 * names not in a table are the caller's to refuse. The array must outlive the writer. */
void fj_out_fields(fj_out *o, const char *const *fields, size_t n);

/* JSON only: a grouped table whose first column after the key is its bucket time (the load
 * tables) is written by columns: per group, each column an array with one value per bucket of q's
 * grid (q->from, q->to, q->bucket_s, read when the table begins), null where the group has no
 * row; the time column itself is left out (slot k is the bucket starting at floor(from / bucket_s)
 * * bucket_s + k * bucket_s, through the bucket holding to). A thousand nodes' day of three
 * columns is then numbers and commas, not a member name per value. */
void fj_out_columns(fj_out *o, const fj_query *q);
void fj_out_free(fj_out *o);

/* JSON only: top-level members besides the tables (before or after them). */
fj_status fj_out_meta_str(fj_out *o, const char *name, const char *value);
fj_status fj_out_meta_int(fj_out *o, const char *name, int64_t value);
fj_status fj_out_meta_time(fj_out *o, const char *name, fj_time value);

/* Closes the document; JSON gets "next" (null when next is NULL) when paged. */
fj_status fj_out_finish(fj_out *o, bool paged, const char *next);

/* Appends one CSV cell (quoted when it holds a comma, quote, CR or LF): a number, a time, a
 * column name, written as it is. */
fj_status fj_csv_cell(fj_buf *b, const char *s);
/* Appends a cell of text a user chose (job, user and host names, commands). A spreadsheet reads a
 * cell starting with =, +, -, @, tab or CR as a formula (=HYPERLINK(...), =cmd|...), so such a
 * text gets a leading ' inside its quoting, as OWASP recommends ("'=1+2"); a plain decimal number
 * (-5, +1.5) stays as it is, since it computes nothing. */
fj_status fj_csv_text(fj_buf *b, const char *s);
/* Whether fj_csv_text would neutralise s. */
bool fj_csv_formula(const char *s);

/* Appends a value as JSON, or as CSV cell text (unquoted; fj_csv_cell quotes it). */
fj_status fj_out_value_json(fj_buf *b, const fj_value *v);
fj_status fj_out_value_text(fj_buf *b, const fj_value *v);

#endif
