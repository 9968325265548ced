/* ratelog.h — failure log lines limited to one per window per kind. A database outage or a full
 * disk fails every batch; logging each failure wrote thousands of identical lines in seconds.
 * A limiter per kind of failure lets the first line through, then one per window, and counts
 * the rest; the next line written carries the count (suppressed=N window_s=W), and a quiet
 * limiter's count is written on a line of its own by fj_ratelog_flush. Lock-free, thread-safe. */
#ifndef FJ_RATELOG_H
#define FJ_RATELOG_H

#include "log.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct fj_ratelog {
    const char *kind;            /* the start of its lines ("writer: commit failed") */
    int64_t window_ns;
    _Atomic int64_t last_ns;     /* when the last line was written; 0: never */
    _Atomic uint64_t suppressed; /* held back since then */
} fj_ratelog;

/* A limiter of lines of kind, at most one per window_s seconds: a static initialiser. */
#define FJ_RATELOG_INIT(kind, window_s) {(kind), (int64_t)(window_s) * 1000000000LL, 0, 0}

/* Whether a line may be written at now_ns (a monotonic time): yes for the first, then once
 * window_ns after the last one written. When yes, *suppressed is the number held back since
 * that one (and the count starts again); when no, this one is counted. */
bool fj_ratelog_allow(fj_ratelog *rl, int64_t now_ns, uint64_t *suppressed);

/* Whether a count held back should be written on a line of its own at now_ns: when some were
 * held back and the window since the last line has passed. When yes, *suppressed is the count,
 * which starts again, and the window starts now. */
bool fj_ratelog_due(fj_ratelog *rl, int64_t now_ns, uint64_t *suppressed);

/* Logs "<kind>: <message>" at lvl through rl (now: the monotonic clock), with
 * " suppressed=N window_s=W" when lines were held back before it. */
void fj_log_limited(fj_ratelog *rl, fj_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Writes "<kind>: suppressed=N window_s=W" at lvl when fj_ratelog_due says so; force: whenever
 * some were held back (at shutdown). */
void fj_ratelog_flush(fj_ratelog *rl, fj_log_level lvl, bool force);

#endif
