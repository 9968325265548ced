/* sonar.h — decoding, validation and normalisation of Sonar JSON envelopes (spec: Sonar's
 * util/formats/newfmt/types.go, "NEW-FORMAT.md") into the typed records of ingest/records/sonar.h.
 *
 * Everything the spec states is checked: types (unsigned fields must be non-negative JSON integers;
 * float64 fields accept any finite number; temperature is a signed integer), Timestamps with real
 * dates, NonemptyString, NonzeroUint, host and cluster names, HostnameRange grammar, data XOR errors,
 * square distance matrices, base64 topology. A violation refuses the envelope with the JSON path of
 * the field. What real producers send that departs from the spec but whose meaning is clear is
 * accepted, normalised and recorded as an fj_note on the envelope (kinds below).
 *
 * Decoding conventions (ingest/records/sonar.h states what the values mean):
 *  - JSON null for a member is the same as an absent member (Go's encoding/json, which Sonar's own
 *    tools use, does the same; Python producers such as slurm-monitor emit null for "no value").
 *    Inside arrays null is a type error.
 *  - ExtendedUint: 0 -> FJ_XU_UNSET, 1 -> FJ_XU_INFINITE, v -> v-2 (time_limit, priority).
 *  - time_limit is sent by Sonar's code as seconds+2 (not minutes as the spec says), so the decoded
 *    ExtendedUint is already time_limit_s. Not noted: every job record is encoded this way.
 *  - SampleGpu performance_state is written by Sonar as value+1, not value+2 as the spec says: 0 ->
 *    FJ_XU_UNSET, v -> v-1, when meta.producer is "sonar". Other producers (fjord-push) follow the
 *    spec's ExtendedUint. Not noted: every GPU sample is encoded this way.
 *  - A process with pid 0 or pid >= 2^22 is a rolled-up group (synthetic_pid).
 *  - Missing times (start/end/submit, system.boot before Sonar 0.17) are 0 without a note.
 *
 * Note kinds: "unknown_field" (also counted in env->unknown_fields; not descended into),
 * "data_type_alias" ("jobs" for "job"), "none_assigned" ("None assigned"/"None allocated" node
 * lists), "state_suffix" (job_state "CANCELLED by 7205" -> "CANCELLED"), "state_case" (a job or
 * node state folded to upper case), "empty_time" ("" for a Timestamp), "missing_field" (a field the
 * spec requires but real producers omit: os_name, os_release, architecture, an error's time),
 * "empty_state" (an empty node state, dropped), "notes_truncated" (more than FJ_SONAR_MAX_NOTES).
 *
 * Thread-safety: none needed; all state is in the arguments. */
#ifndef FJ_SONAR_H
#define FJ_SONAR_H

#include "json.h"
#include "ingest/records/batch.h"

#include <stddef.h>

/* The kind of an `errors` envelope decoded with expect -1: nothing in it says which probe failed. */
#define FJ_SONAR_KIND_UNKNOWN FJ_KIND__COUNT

/* Notes kept per envelope; past this one "notes_truncated" note says how many were dropped
 * (unknown_fields still counts them all). Bounds the cost of an envelope full of junk fields. */
#define FJ_SONAR_MAX_NOTES 64

/* Most host names all node ranges of one envelope may expand to together. */
#define FJ_SONAR_MAX_NAMES 1000000

/* Decodes one parsed envelope into a new envelope appended to b. expect: the fj_kind named by the
 * request path, or -1 to accept any kind from data.type. Strings are copied into b's arena, so root
 * may be freed afterwards. Hard error: FJ_EINVAL, err->path is the JSON path of the field (e.g.
 * "data.attributes.jobs[3].processes[0].pid"; "" for the envelope itself), err->message says what
 * is wrong, and the batch is left as before (no partial envelope; arena memory already used is not
 * reclaimed). FJ_ENOMEM likewise. */
fj_status fj_sonar_decode(const fj_json *root, int expect, fj_batch *b, fj_err *err);

/* One outcome per envelope of a body. env (valid until the next envelope is added to the batch) is
 * set when st is FJ_OK, err otherwise. */
typedef void (*fj_sonar_item_fn)(void *ctx, size_t index, fj_status st, const fj_err *err,
                                 const fj_envelope *env);

/* Parses a body holding one or more envelopes (concatenated JSON objects, or one per line, any
 * whitespace between) and decodes each into b, calling fn (may be NULL) for each. A JSON syntax
 * error is reported for that item with path "line L, column C" counted from the start of the body;
 * decoding then resumes at the next line that starts with '{' (one envelope per line, as Sonar's
 * sinks write, loses only the bad line). Returns FJ_OK when at least one envelope was accepted,
 * FJ_EINVAL when none was (err = the first error; "empty body" when there was nothing), FJ_ENOMEM
 * (envelopes accepted before it stay in b). */
fj_status fj_sonar_decode_body(const char *body, size_t len, int expect, fj_batch *b,
                               fj_sonar_item_fn fn, void *ctx, fj_err *err);

#endif
