/* fj_status.h — the one closed vocabulary of outcomes, and the error detail that travels with it.
 *
 * Every fallible function in fjord returns an fj_status and, where a caller can use the detail,
 * fills a caller-provided fj_err. errno, SQLITE_* and PGRES_* are mapped to these at the module edge
 * and never leak upward. fj_status_http() is the one table from outcome to HTTP status. */
#ifndef FJ_STATUS_H
#define FJ_STATUS_H

#include <stddef.h>

typedef enum fj_status {
    FJ_OK = 0,
    FJ_EINVAL,      /* input can never be accepted: 400 */
    FJ_EAUTH,       /* missing or wrong credentials: 401 */
    FJ_EFORBIDDEN,  /* credentials valid but not for this cluster: 403 */
    FJ_ENOTFOUND,   /* no such route or object: 404 */
    FJ_EMETHOD,     /* method not allowed on this route: 405 */
    FJ_ECONFLICT,   /* state conflict, e.g. a duplicate job start: 422 (cc-backend's choice) */
    FJ_ETOOBIG,     /* body or decoded body over the cap: 413 */
    FJ_EUNSUPPORTED,/* unsupported media type or encoding: 415 */
    FJ_EBUSY,       /* cannot take it now, retry later: 503 with Retry-After */
    FJ_ENOMEM,      /* out of memory: 503, never abort on a request path */
    FJ_EIO,         /* storage or system failure: 500 (503 when retrying can help) */
    FJ_ESCHEMA,     /* database schema older than this binary: run `fjord migrate up` */
    FJ_EINTERNAL,   /* a bug */
    FJ_ELIMITED     /* too many failures from this client or for this name: 429 with Retry-After */
} fj_status;

/* Human detail of a failure. `path` names where in the input (a JSON path such as
 * data.attributes.jobs[3].pid, or "line 12, column 5"); both strings are NUL-terminated and
 * truncated to fit, never overflowed. A zeroed fj_err is empty. */
typedef struct fj_err {
    char code[32];
    char message[256];
    char path[160];
} fj_err;

/* Fills err (if not NULL) with code/message and optional path (may be NULL); returns st so
 * callers can write `return fj_err_set(err, FJ_EINVAL, "bad", "x", ...)`. */
fj_status fj_err_set(fj_err *err, fj_status st, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Stable lower-case name of a status ("invalid", "unauthorized"...), used as the JSON error code
 * when the fj_err carries none. */
const char *fj_status_name(fj_status st);

/* HTTP status for an outcome. */
int fj_status_http(fj_status st);

#endif
