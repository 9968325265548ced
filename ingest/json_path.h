/* json_path.h — where a decoder stands in a parsed JSON tree (json.h), and how its errors and notes
 * name that place. Shared by the decoders that walk the tree once (sonar.c, chimbuko.c).
 *
 * The path is the way from the root to the value at hand: a stack of segments, each an object
 * member's key or an array index. A decoder pushes a segment before it looks into a member or an
 * element and pops it after, so a step costs one store; the path becomes text only when an error
 * or a note names it. As text, keys are joined by '.' and indexes written as [k]:
 * "data.attributes.slurm_jobs[2].job_state", "[0].call_stack[3].fid"; the root is "". Keys are
 * written as sent (not quoted). Segments past FJ_JPATH_MAX_DEPTH are counted but not kept, and
 * the text is cut to the room it has (sizeof fj_err.path for errors, FJ_JPATH_NOTE_MAX for notes).
 *
 * Errors: the first failure ends a decode. fj_jpath_fail and its kin fill the walk's fj_err with
 * the current path and return the status, so a decoder writes `return fj_jpath_fail(...)`.
 * Notes: what a decoder accepted but changed or ignored (fj_note, ingest/records/batch.h), at
 * most max_notes of them; later ones are counted and fj_jpath_end_notes adds one
 * "notes_truncated" note for them.
 * Keys and kinds are kept by pointer: keys must outlive the walk (the parsed tree), kinds must be
 * string literals. Not thread-safe: one walk per decode. Not a public header. */
#ifndef FJ_JSON_PATH_H
#define FJ_JSON_PATH_H

#include "arena.h"
#include "fj_status.h"
#include "json.h"
#include "ingest/records/batch.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum {
    FJ_JPATH_MAX_DEPTH = 24, /* segments kept; deeper ones are counted only */
    FJ_JPATH_NOTE_MAX = 256  /* a note's path text, with its NUL */
};

typedef struct fj_jpath_seg {
    const char *key; /* NULL: an array index */
    size_t idx;
} fj_jpath_seg;

/* One decode's walk. Set a, err and max_notes, zero the rest; after the decode, notes[0..n_notes)
 * are the envelope's (in a). */
typedef struct fj_jpath {
    fj_arena *a;  /* notes and their texts */
    fj_err *err;  /* gets the failure */
    int depth;    /* may exceed FJ_JPATH_MAX_DEPTH: only the first segments are kept */
    fj_jpath_seg seg[FJ_JPATH_MAX_DEPTH];
    fj_note *notes;
    size_t n_notes, cap_notes, dropped_notes;
    size_t max_notes;
} fj_jpath;

/* --- the path: inline, as every member and element of a document goes through it -------------- */

static inline void fj_jpath_push_key(fj_jpath *p, const char *key)
{
    if (p->depth < FJ_JPATH_MAX_DEPTH)
        p->seg[p->depth].key = key;
    p->depth++;
}

static inline void fj_jpath_push_idx(fj_jpath *p, size_t i)
{
    if (p->depth < FJ_JPATH_MAX_DEPTH) {
        p->seg[p->depth].key = NULL;
        p->seg[p->depth].idx = i;
    }
    p->depth++;
}

static inline void fj_jpath_pop(fj_jpath *p)
{
    p->depth--;
}

/* The path as text into buf (cap > 0 bytes, always NUL-terminated). */
void fj_jpath_render(const fj_jpath *p, char *buf, size_t cap);

/* --- errors at the path ----------------------------------------------------------------------- */

/* FJ_EINVAL with the formatted message. */
fj_status fj_jpath_fail(fj_jpath *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* FJ_ENOMEM, "out of memory". */
fj_status fj_jpath_oom(fj_jpath *p);
/* FJ_EINVAL "expected <want>, got <what v is>" (numbers are shown with their value). */
fj_status fj_jpath_type_error(fj_jpath *p, const char *want, const fj_json *v);

/* --- notes at the path ------------------------------------------------------------------------ */

/* Records a note of kind (a string literal) with the formatted detail; FJ_OK, or FJ_ENOMEM
 * through fj_jpath_oom. Past max_notes the note is only counted. */
fj_status fj_jpath_note(fj_jpath *p, const char *kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Ends the notes of a decode that ended with st: when st is FJ_OK and notes were dropped, adds the
 * "notes_truncated" note (path "", "N more notes dropped") in the slot fj_jpath_note kept for it.
 * Returns st, or FJ_ENOMEM (error path "") when that note cannot be made. */
fj_status fj_jpath_end_notes(fj_jpath *p, fj_status st);

/* --- scalars: the value v at the path, of one JSON type; inline for Sonar's hot path ---------- */

/* The largest unsigned value fjord stores: SQLite's and PostgreSQL's integers are signed 64-bit,
 * and no count, size, id or time a producer sends comes near 2^63. */
#define FJ_JPATH_U64_MAX ((uint64_t)INT64_MAX)

/* An unsigned integer to be stored: at most FJ_JPATH_U64_MAX, else refused (never stored
 * changed). */
static inline fj_status fj_jpath_get_u64(fj_jpath *p, const fj_json *v, uint64_t *out)
{
    if (v->type != FJ_JSON_UINT)
        return fj_jpath_type_error(p, "unsigned integer", v);
    if (v->v.u > FJ_JPATH_U64_MAX)
        return fj_jpath_fail(p, "%llu is too large: fjord stores unsigned integers up to %llu (2^63-1)",
                             (unsigned long long)v->v.u, (unsigned long long)FJ_JPATH_U64_MAX);
    *out = v->v.u;
    return FJ_OK;
}

/* An unsigned integer that is checked but not stored: the whole 64-bit range. */
static inline fj_status fj_jpath_check_uint(fj_jpath *p, const fj_json *v)
{
    return v->type == FJ_JSON_UINT ? FJ_OK : fj_jpath_type_error(p, "unsigned integer", v);
}

/* An integer that fits int64_t. */
static inline fj_status fj_jpath_get_i64(fj_jpath *p, const fj_json *v, int64_t *out)
{
    if (v->type == FJ_JSON_INT)
        *out = v->v.i;
    else if (v->type == FJ_JSON_UINT && v->v.u <= (uint64_t)INT64_MAX)
        *out = (int64_t)v->v.u;
    else if (v->type == FJ_JSON_UINT)
        return fj_jpath_fail(p, "integer %llu out of range for a signed 64-bit value", (unsigned long long)v->v.u);
    else
        return fj_jpath_type_error(p, "integer", v);
    return FJ_OK;
}

/* Any finite number. */
static inline fj_status fj_jpath_get_f64(fj_jpath *p, const fj_json *v, double *out)
{
    if (v->type == FJ_JSON_REAL)
        *out = v->v.d;
    else if (v->type == FJ_JSON_UINT)
        *out = (double)v->v.u;
    else if (v->type == FJ_JSON_INT)
        *out = (double)v->v.i;
    else
        return fj_jpath_type_error(p, "number", v);
    if (!isfinite(*out))
        return fj_jpath_fail(p, "number is not finite");
    return FJ_OK;
}

/* A string without NUL characters (v->v.s, v->len; not copied). */
static inline fj_status fj_jpath_check_str(fj_jpath *p, const fj_json *v)
{
    if (v->type != FJ_JSON_STRING)
        return fj_jpath_type_error(p, "string", v);
    if (memchr(v->v.s, '\0', v->len))
        return fj_jpath_fail(p, "string contains a NUL character");
    return FJ_OK;
}

#endif
