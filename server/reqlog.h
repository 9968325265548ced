/* reqlog.h — the refusal log: one logfmt line on stderr for each refused request or shed
 * connection (time, client address, credential name, method, path, status, reason), rate-limited
 * per client address and reason so a misconfigured fleet or an attacker cannot flood the log.
 *
 * It is the one place refusals are logged; authentication failures go through it too. Fields
 * that are not filled yet (bytes, duration) are part of the entry so a request log of every
 * request, or another line format, extends this module rather than adding a second one. */
#ifndef FJ_REQLOG_H
#define FJ_REQLOG_H

#include <stddef.h>
#include <stdint.h>

typedef struct fj_reqlog fj_reqlog;

/* One refused request. Strings may be NULL (written as "-"); they are copied or escaped, never
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
    int64_t duration_us;    /* from the first byte of headers; < 0 when unknown */
} fj_reqlog_entry;

/* A log writing at most `burst` lines per client address and reason in each window of window_s
 * seconds; refusals past that are counted and the count is written as `suppressed=N`, on the
 * next line for that address and reason or by fj_reqlog_flush once the window is over.
 * burst 0 logs every refusal. NULL when out of memory. */
fj_reqlog *fj_reqlog_new(unsigned burst, unsigned window_s);

/* Writes what is still suppressed, then frees. */
void fj_reqlog_free(fj_reqlog *l);

/* Logs e (or counts it as suppressed). Thread-safe. */
void fj_reqlog_refusal(fj_reqlog *l, const fj_reqlog_entry *e);

/* Writes a `suppressed` line for every address and reason whose window has ended with refusals
 * not yet reported. Thread-safe; meant to be called every second or so. */
void fj_reqlog_flush(fj_reqlog *l);

#endif
