/* aicr.h — NVIDIA aicr snapshots (the Measurement schema of shared/seeds/aicr-measurement-schema.txt):
 * decoding from YAML or JSON in both spellings seen in the wild, one normalised form, and the
 * resolution of aicr constraint paths against it.
 *
 * Two spellings are accepted, also mixed: aicr's Go types (`subtype`, bare scalar readings) and
 * aicr's OpenAPI file (`name`, `{value, unit}` readings, lower-case type names). Both decode to the
 * one form below; fj_aicr_json writes it as compact JSON in the Go spelling, a reading with a unit
 * as {"value","unit"}, so the stored form decodes again to the same snapshot.
 *
 * Everything is allocated from the caller's arena. Thread-safety: none needed; all state is in the
 * arguments. */
#ifndef FJ_AICR_H
#define FJ_AICR_H

#include "arena.h"
#include "buf.h"
#include "fj_status.h"
#include "ingest/records/measurements.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum fj_aicr_vtype { FJ_AICR_STRING, FJ_AICR_INT, FJ_AICR_UINT, FJ_AICR_REAL, FJ_AICR_BOOL } fj_aicr_vtype;

/* A scalar Reading: INT is negative, UINT non-negative (0..2^64-1), REAL finite. */
typedef struct fj_aicr_reading {
    const char *key;
    fj_aicr_vtype type;
    union {
        const char *s;
        int64_t i;
        uint64_t u;
        double d;
        bool b;
    } v;
    const char *unit; /* NULL when none */
} fj_aicr_reading;

typedef struct fj_aicr_pair {
    const char *key, *value;
} fj_aicr_pair;

/* An ItemEntry: data (Readings) and context (strings); no nested items. */
typedef struct fj_aicr_item {
    fj_aicr_reading *data;
    size_t n_data;
    fj_aicr_pair *context;
    size_t n_context;
} fj_aicr_item;

typedef struct fj_aicr_subtype {
    const char *name;
    fj_aicr_reading *data;
    size_t n_data;
    fj_aicr_pair *context;
    size_t n_context;
    fj_aicr_item *items;
    size_t n_items;
} fj_aicr_subtype;

typedef struct fj_aicr_measurement {
    const char *type; /* canonical spelling for the six types aicr defines, else as sent */
    fj_aicr_subtype *subtypes;
    size_t n_subtypes;
} fj_aicr_measurement;

typedef struct fj_aicr_snapshot {
    const char *api_version; /* NULL when absent */
    fj_aicr_pair *metadata;
    size_t n_metadata;
    fj_aicr_measurement *measurements;
    size_t n_measurements;
} fj_aicr_snapshot;

typedef enum fj_aicr_format { FJ_AICR_AUTO, FJ_AICR_JSON, FJ_AICR_YAML } fj_aicr_format;

/* The largest snapshot body the ingest route decodes (after Content-Encoding): decoding needs up to
 * ~40 times the body in memory, and real snapshots are kilobytes (a NetworkTopology) to a few
 * hundred kilobytes (a whole aicr snapshot). */
#define FJ_AICR_MAX_BODY ((size_t)4 << 20)

/* Decodes one snapshot (AUTO: JSON when the body starts with '{', else YAML). FJ_EINVAL with
 * err->path naming the field (measurements[1].subtypes[0].data.rail) and, for YAML, the line in
 * the message; FJ_ENOMEM. Rules (docs/measurements.md): `measurements` required; type and subtype
 * names non-empty; readings scalar or {value, unit}; context values scalar; items without nested
 * items; no duplicate keys, no duplicate subtype in a measurement; no YAML aliases, one document. */
fj_status fj_aicr_decode(fj_arena *a, const char *body, size_t len, fj_aicr_format fmt, fj_aicr_snapshot **out,
                         fj_err *err);

/* The metadata value of key, or NULL. */
const char *fj_aicr_meta(const fj_aicr_snapshot *s, const char *key);

/* Appends the normalised snapshot (or one subtype) as compact JSON. FJ_OK, FJ_ETOOBIG, FJ_ENOMEM. */
fj_status fj_aicr_json(const fj_aicr_snapshot *s, fj_buf *out);
fj_status fj_aicr_subtype_json(const fj_aicr_subtype *st, fj_buf *out);

/* Fills the storage record (JSON texts in arena a). */
fj_status fj_aicr_record(const fj_aicr_snapshot *s, fj_arena *a, fj_measurements *rec, fj_err *err);

/* Reading.String() of aicr's Go types (fmt's %v): strings as they are, integers in decimal,
 * booleans true/false, floats as Go prints them (24.04, 1e+06). Into the arena; NULL on ENOMEM. */
const char *fj_aicr_reading_string(fj_arena *a, const fj_aicr_reading *r);

/* Appends a reading's value as a JSON scalar (string, number or boolean). */
fj_status fj_aicr_reading_json(const fj_aicr_reading *r, fj_buf *out);

/* Is this JSON body an aicr snapshot ("kind":"Snapshot" among the first object's members)?
 * Reads only the first object, without building it. */
bool fj_aicr_json_is_snapshot(const char *body, size_t len);

/* Does a Content-Type name YAML (application/yaml, application/x-yaml, text/yaml, text/x-yaml)? */
bool fj_aicr_content_type_is_yaml(const char *ctype);

/* --- Constraint paths ------------------------------------------------------------------ */

typedef enum fj_aicr_sel { FJ_AICR_SEL_NONE, FJ_AICR_SEL_INDEX, FJ_AICR_SEL_PREDICATE } fj_aicr_sel;

/* {Type}.{Subtype}.{Key} or {Type}.{Subtype}[<selector>].{Key}; see fj_aicr_path_parse. */
typedef struct fj_aicr_path {
    const char *type, *subtype, *key;
    fj_aicr_sel sel;
    uint64_t index;                     /* SEL_INDEX */
    const char *pred_key, *pred_value;  /* SEL_PREDICATE */
} fj_aicr_path;

/* Parses a constraint path. The type ends at the first '.'. The subtype ends at the first '.' or
 * '[' — except for SystemD, whose subtypes are unit names ("containerd.service"): without a
 * selector it ends at the last '.'. A selector is digits (an index) or key=value (split at the
 * first '='; both sides non-empty); after it comes '.' and the key, which is the rest (dots
 * allowed). FJ_EINVAL (path "path") for a malformed path. */
fj_status fj_aicr_path_parse(fj_arena *a, const char *path, fj_aicr_path *out, fj_err *err);

typedef struct fj_aicr_result {
    const char *value;                /* Reading.String(), or the context string */
    const fj_aicr_reading *reading;   /* NULL when the value came from context */
    const char *from;                 /* "data" or "context" */
} fj_aicr_result;

/* Resolves a parsed path as aicr's constraint extractor does: the first measurement of the type,
 * the first subtype of the name; without a selector the key is looked up in the subtype's data
 * only; with one, in the chosen item's data, then its context. A predicate key=value picks the
 * one item whose data[key].String() (or, without such data, context[key]) equals value.
 * FJ_ENOTFOUND (no such type, subtype, item or key; an index past the end; a selector on a
 * subtype without items; a predicate matching nothing), FJ_ECONFLICT (a predicate matching several
 * items), FJ_ENOMEM. err->path is "path". */
fj_status fj_aicr_resolve(fj_arena *a, const fj_aicr_snapshot *s, const fj_aicr_path *p, fj_aicr_result *out,
                          fj_err *err);

#endif
