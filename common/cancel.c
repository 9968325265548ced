/* cancel.c — cancellation tokens (cancel.h). */
#include "cancel.h"

#include <sched.h>
#include <stdio.h>

static _Thread_local fj_cancel *tl_current;

void fj_cancel_set(fj_cancel *c, fj_cancel_why why)
{
    int none = FJ_CANCEL_NONE;
    if (c)
        atomic_compare_exchange_strong(&c->why, &none, (int)why);
}

/* The hook's lock is held for a registration or a call of the hook only (a PQcancel: one short
 * round trip), so spinning with a yield costs nothing worth a mutex in every token. */
static void hook_lock(fj_cancel *c)
{
    int free_ = 0;
    while (!atomic_compare_exchange_weak(&c->hook_busy, &free_, 1)) {
        free_ = 0;
        sched_yield();
    }
}

static void hook_unlock(fj_cancel *c)
{
    atomic_store(&c->hook_busy, 0);
}

void fj_cancel_hook(fj_cancel *c, void (*fn)(void *arg), void *arg)
{
    if (!c)
        return;
    hook_lock(c);
    c->hook = fn;
    c->hook_arg = arg;
    hook_unlock(c);
}

void fj_cancel_unhook(fj_cancel *c)
{
    fj_cancel_hook(c, NULL, NULL);
}

void fj_cancel_fire(fj_cancel *c)
{
    if (!c || !fj_cancel_check(c))
        return;
    hook_lock(c);
    if (c->hook)
        c->hook(c->hook_arg);
    hook_unlock(c);
}

fj_cancel *fj_cancel_current(void)
{
    return tl_current;
}

void fj_cancel_set_current(fj_cancel *c)
{
    tl_current = c;
}

fj_status fj_cancel_err(fj_cancel_why why, unsigned timeout_s, fj_err *err)
{
    switch (why) {
    case FJ_CANCEL_TIMEOUT:
        fj_err_set(err, FJ_EBUSY, "query-timeout", "the query ran longer than %u s (query-timeout)", timeout_s);
        if (err)
            snprintf(err->code, sizeof err->code, "query_timeout");
        break;
    case FJ_CANCEL_SHUTDOWN:
        fj_err_set(err, FJ_EBUSY, NULL, "%s", "server is shutting down; retry later");
        if (err)
            snprintf(err->code, sizeof err->code, "shutting_down");
        break;
    default:
        fj_err_set(err, FJ_EBUSY, NULL, "%s", "the client closed the connection");
        if (err)
            snprintf(err->code, sizeof err->code, "client_gone");
        break;
    }
    return FJ_EBUSY;
}
