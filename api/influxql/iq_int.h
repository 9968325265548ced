/* api/influxql/iq_int.h — what the InfluxQL files share inside api/influxql/: a database's catalog
 * (its fjord series seen as InfluxDB measurements, series and fields), the WHERE clause's value
 * evaluation, and the answer's JSON pieces. Not a public header. */
#ifndef FJ_IQ_INT_H
#define FJ_IQ_INT_H

#include "api/influxql/influxql.h"
#include "storage/core/store_query.h"
#include "storage/ts/engine.h"

typedef struct iq_tag {
    const char *k, *v;
} iq_tag;

/* Where a measurement's points come from: the time-series engine (line protocol), or Sonar's
 * node and GPU load (api/influxql/sonar.c). */
enum { IQ_SRC_TS = 0, IQ_SRC_SONAR_NODE, IQ_SRC_SONAR_GPU, IQ_SRC_SONAR_JOB, IQ_SRC_SUB };

/* One fjord series: one field of one InfluxDB series. */
typedef struct iq_fser {
    uint32_t id; /* IQ_SRC_TS: the engine's series id */
    int src;
    uint8_t ftype; /* the field's type (fj_ts_ftype; Sonar's are floats) */
    const char *meas, *field;
    const char *skey; /* InfluxDB's series key: measurement,k=v,... (tags sorted) */
    iq_tag *tags;     /* sorted by key */
    size_t ntags;
} iq_fser;

/* One InfluxDB series: its fields are fser[first .. first+nfields). */
typedef struct iq_iser {
    const iq_fser *f; /* the first field's fser: meas, skey, tags */
    size_t first, nfields;
} iq_iser;

/* A measurement: its series are iser[first .. first+n). */
typedef struct iq_meas {
    const char *name;
    int src;
    size_t first, n;
    const char **tagkeys, **fields; /* sorted, distinct */
    uint8_t *ftypes;                /* per field: its type (fj_ts_ftype), the first series' */
    size_t ntagkeys, nfields;
} iq_meas;

typedef struct iq_catalog {
    iq_fser *fser;
    size_t nfser;
    iq_iser *iser;
    size_t niser;
    iq_meas *meas;
    size_t nmeas;
} iq_catalog;

/* The catalog of cluster db, built in the arena: the series of the measurements that from[0..nfrom)
 * names when they are all plain names, else every series stored for it. FJ_OK, or the store's
 * error (err says). */
fj_status iq_catalog_load(iq_ctx *c, const char *db, const iq_source *from, size_t nfrom, iq_catalog *cat,
                          fj_err *err);
/* A catalog of the series that list adds, each field of each series with its own id and type
 * (a subquery's answer, subquery.c); the series' source is IQ_SRC_SUB. */
typedef fj_status (*iq_fser_add_typed)(void *l, uint32_t id, uint8_t ftype, const char *meas, const char *field,
                                       const iq_tag *tags, size_t n);
typedef fj_status (*iq_catalog_list)(void *ud, iq_fser_add_typed add, void *l, fj_err *err);
fj_status iq_catalog_build(iq_ctx *c, iq_catalog_list list, void *ud, iq_catalog *cat, fj_err *err);

/* A subquery's answer as a source (subquery.c): answer[0..len) is the inner statement's result
 * object ({"statement_id":0,"series":[...]}, times in ns); its series as a catalog (measurement
 * and tags as it answered them, a field per column) and per field series (its fser id) the
 * points, a string's value its index in strs. */
typedef struct iq_subdata {
    fj_ts_points *pts;
    const char **strs;
    size_t npts, nstrs;
} iq_subdata;
fj_status iq_subquery_catalog(iq_ctx *c, const char *answer, size_t len, iq_catalog *cat, iq_subdata *data,
                              fj_err *err);

/* What statements ask of a catalogue's series (series.c). */
/* The value of tag k of series is, or "" when it has none (InfluxDB's rule for absent tags). */
const char *iq_tag_value(const iq_iser *is, const char *k);
/* The type of field f of measurement m (fj_ts_ftype; an untyped series' is a float's). */
uint8_t iq_field_type(const iq_meas *m, const char *f);
/* InfluxDB's name of a type: "float", "integer", "string", "boolean". */
const char *iq_ftype_name(uint8_t t);
/* Whether measurement m has tag key k. */
bool iq_meas_has_tag(const iq_meas *m, const char *k);
/* Whether a FROM source names measurement m (no sources: all). */
bool iq_sources_match(const iq_source *src, size_t n, const char *m);
/* Appends the point (t, v) to p, growing its arrays in a (doubling from 64): the points a statement
 * builds itself (string points read as indices, a subquery's answer). false when out of memory. */
bool iq_points_push(fj_arena *a, fj_ts_points *p, int64_t t, double v);

/* Adds one field of one series to a catalog being built (tags copied, any order). */
typedef fj_status (*iq_fser_add)(void *ud, int src, const char *meas, const char *field, const iq_tag *tags,
                                 size_t n);
/* Adds the Sonar measurements of cluster db (sonar.c): sonar_node, a series per node; sonar_gpu, a
 * series per node, card and UUID seen in c->window_from..window_to (open: the last 7 days). */
fj_status iq_sonar_catalog(iq_ctx *c, const char *db, unsigned mask, iq_fser_add add, void *ud, fj_err *err);
/* Bits of iq_sonar_catalog's mask: which measurements to list. */
#define IQ_SONAR_ALL ((1u << IQ_SRC_SONAR_NODE) | (1u << IQ_SRC_SONAR_GPU) | (1u << IQ_SRC_SONAR_JOB))
/* The source of a Sonar measurement's name, or IQ_SRC_TS. */
int iq_sonar_src(const char *meas);
/* The points of fields need[0..nneed) of Sonar series isers[0..n) (all of one cluster) with
 * from_ns <= t <= to_ns into pts[i * nneed + j] (NULL: not wanted), one point per load bucket of
 * every_ns (GROUP BY time; 0: a minute). */
fj_status iq_sonar_read(iq_ctx *c, int src, const iq_iser *const *isers, size_t n, const char **need, size_t nneed,
                        fj_ts_points **pts, int64_t from_ns, int64_t to_ns, int64_t every_ns, fj_err *err);
const fj_qtable *iq_sonar_table(int src);

/* The databases (databases.c): the clusters with line-protocol series or Sonar data (SHOW
 * DATABASES), sorted, into the arena. */
fj_status iq_databases(iq_ctx *c, const char ***out, size_t *n, fj_err *err);

/* Whether db is one of iq_databases. */
fj_status iq_db_known(iq_ctx *c, const char *db, bool *known, fj_err *err);

/* A value of the WHERE clause. */
typedef enum { IQV_NULL, IQV_NUM, IQV_STR, IQV_BOOL } iq_vkind;
typedef struct iq_val {
    iq_vkind k;
    double n;
    const char *s;
} iq_val;

/* Looks up an identifier of a condition: a tag of the series, else a field of the row. */
typedef iq_val (*iq_ref_fn)(void *ud, const char *name);
/* The condition e (time terms already taken out) as true/false. */
bool iq_cond_true(const iq_expr *e, iq_ref_fn ref, void *ud);
/* Whether e refers to an identifier that is not a tag of m (a field) and not `time`. */
bool iq_cond_uses_fields(const iq_expr *e, const iq_meas *m);
/* Splits cond into a time range and the rest: tmin and tmax (inclusive) narrowed by the time
 * terms ANDed at its top, *rest the other terms (NULL: none). False with msg for a time term
 * inside OR or one that cannot be evaluated. */
bool iq_cond_split(iq_ctx *c, const iq_expr *cond, int64_t *tmin, int64_t *tmax, const iq_expr **rest, char *msg,
                   size_t cap);

/* JSON pieces: a time in the request's epoch format, a float (null for NaN), a string. */
void iq_put_time(const iq_ctx *c, fj_buf *out, int64_t t_ns);
void iq_put_num(fj_buf *out, double v);
/* The same texts at dst (room for IQ_FMT_MAX bytes, not terminated); their length. */
#define IQ_FMT_MAX 48
size_t iq_fmt_time(const iq_ctx *c, char *dst, int64_t t_ns);
size_t iq_fmt_num(char *dst, double v);
/* {"statement_id":id,"error":msg} */
void iq_put_stmt_error(fj_buf *out, int id, const char *msg);

/* SELECT (select.c) and SHOW (show.c): the statement's series, appended to out after
 * "statement_id"; *any set when at least one series was written. A statement error is returned
 * in msg (non-empty) with FJ_OK. */
fj_status iq_select(iq_ctx *c, const iq_stmt *st, fj_buf *out, bool *any, char *msg, size_t cap, fj_err *err);
fj_status iq_show(iq_ctx *c, const iq_stmt *st, fj_buf *out, bool *any, char *msg, size_t cap, fj_err *err);

#define IQ_NO_MIN INT64_MIN
#define IQ_NO_MAX INT64_MAX

#endif
