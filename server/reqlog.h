/* reqlog.h — the request log: one line on stderr for each refused request or shed connection,
 * and optionally for every answered request (time, client address, credential name, method,
 * path, status, bytes, duration, reason), in logfmt or JSON. Refusals are rate-limited per client
 * address and reason so a misconfigured fleet or an attacker cannot flood the log; the lines of
 * accepted requests (every_request) are not, since they cost what the requests cost.
 *
 * It is the one place requests are logged; authentication failures go through it too. */
#ifndef FJ_REQLOG_H
#define FJ_REQLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fj_reqlog fj_reqlog;

typedef enum { FJ_REQLOG_LOGFMT, FJ_REQLOG_JSON } fj_reqlog_format;

typedef struct fj_reqlog_opts {
    unsigned burst;          /* refusal lines per client address and reason a window; 0 = all */
    unsigned window_s;       /* the window; 0 = 60 */
    fj_reqlog_format format;
    bool every_request;      /* also a line (level info) for every request answered below 400 */
} fj_reqlog_opts;

/* One request (or dropped connection). Strings may be NULL (written as "-"); they are copied or escaped, never
 * kept. */
typedef struct fj_reqlog_entry {
    const char *client;     /* the client's address, as text (behind a trusted proxy: the forwarded one) */
    const char *via;        /* the trusted proxy's address when client was forwarded by it; NULL otherwise */
    const char *credential; /* the name presented (Basic user) or checked (principal) */
    const char *method;
    const char *path;
    int status;             /* HTTP status answered; 0 when the connection was closed unanswered */
    const char *reason;     /* short code: "unauthorized", "rate_limited", "header_deadline"... */
    size_t bytes;           /* answer bytes; 0 when unknown */
    size_t bytes_in;        /* request body bytes received; 0 when none */
    int64_t duration_us;    /* from the request's headers to its answer; < 0 when unknown */
} fj_reqlog_entry;

/* A log writing at most o->burst refusal lines per client address and reason in each window of
 * o->window_s seconds; refusals past that are counted and the count is written as `suppressed=N`,
 * on the next line for that address and reason or by fj_reqlog_flush once the window is over.
 * Lines are logfmt after the log's prefix ("fjord warn: refused client=..."), or one JSON object
 * alone on its line ({"time":...,"event":"refused",...}) for a log shipper. NULL when out of
 * memory. */
fj_reqlog *fj_reqlog_new(const fj_reqlog_opts *o);

/* Writes what is still suppressed, then frees. */
void fj_reqlog_free(fj_reqlog *l);

/* Logs refusal e (or counts it as suppressed). Thread-safe. */
void fj_reqlog_refusal(fj_reqlog *l, const fj_reqlog_entry *e);

/* An answered request: a refusal (status >= 400) as fj_reqlog_refusal; any other a `request`
 * line at level info when every_request is set, nothing otherwise. Thread-safe. */
void fj_reqlog_answer(fj_reqlog *l, const fj_reqlog_entry *e);

/* Writes a `suppressed` line for every address and reason whose window has ended with refusals
 * not yet reported. Thread-safe; meant to be called every second or so. */
void fj_reqlog_flush(fj_reqlog *l);

#endif
