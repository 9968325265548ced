/* cancel.h — a read's cancellation token: set once by whoever decides that the read must stop (its
 * deadline passed, its client went away, the server is draining), polled by the read's loops and by
 * storage's long statements. Setting is one atomic store and checking one atomic load, so loops
 * may check it every row. Thread-safe. */
#ifndef FJ_CANCEL_H
#define FJ_CANCEL_H

#include "fj_status.h"

#include <stdatomic.h>

typedef enum {
    FJ_CANCEL_NONE = 0,
    FJ_CANCEL_TIMEOUT,     /* query-timeout passed */
    FJ_CANCEL_CLIENT_GONE, /* the client closed its connection: nobody waits for the answer */
    FJ_CANCEL_SHUTDOWN,    /* the server is draining */
} fj_cancel_why;

typedef struct fj_cancel {
    atomic_int why; /* fj_cancel_why; zero: running */
    /* What stops the statement now running for this read (fj_cancel_hook): a PostgreSQL read waits
     * inside libpq for its whole result, where no loop of ours sees the token. */
    atomic_int hook_busy; /* a spin lock over the two below */
    void (*hook)(void *arg);
    void *hook_arg;
} fj_cancel;

/* Sets the reason unless one is set already (the first reason is the one answered). It does not
 * call the hook: sending a cancel request may wait on the network, which the setter (holding the
 * read pool's lock) must not; fj_cancel_fire does, from where waiting is harmless. */
void fj_cancel_set(fj_cancel *c, fj_cancel_why why);

/* While a read waits for a statement it cannot interrupt from its own thread, fn(arg) is what
 * stops it (PQcancel): registered before the statement is sent, removed after it returned. Once
 * unhooked, fn is not running and will not be called. One hook at a time; NULL c: no-op. */
void fj_cancel_hook(fj_cancel *c, void (*fn)(void *arg), void *arg);
void fj_cancel_unhook(fj_cancel *c);

/* Calls the registered hook when the token is set. The read pool's watch does it every round for
 * a cancelled read still running, so a statement sent just as the token was set (when a cancel
 * request can arrive before it and be ignored) is stopped at the next round too. */
void fj_cancel_fire(fj_cancel *c);

/* The reason, or FJ_CANCEL_NONE (also for NULL). */
static inline fj_cancel_why fj_cancel_check(const fj_cancel *c)
{
    return c ? (fj_cancel_why)atomic_load_explicit(&((fj_cancel *)c)->why, memory_order_relaxed) : FJ_CANCEL_NONE;
}

/* The token of the read that runs on this thread, NULL when none: storage polls it from its long
 * statements (SQLite's progress handler) without every call passing it down. */
fj_cancel *fj_cancel_current(void);
void fj_cancel_set_current(fj_cancel *c);

/* Fills err with what a cancelled read answers (FJ_EBUSY: 503 with Retry-After): code
 * query_timeout and path query-timeout; shutting_down; client_gone. Returns FJ_EBUSY. */
fj_status fj_cancel_err(fj_cancel_why why, unsigned timeout_s, fj_err *err);

#endif
