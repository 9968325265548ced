/* cancel.c — cancellation tokens (cancel.h). */
#include "cancel.h"

#include <stdio.h>

static _Thread_local fj_cancel *tl_current;

void fj_cancel_set(fj_cancel *c, fj_cancel_why why)
{
    int none = FJ_CANCEL_NONE;
    if (c)
        atomic_compare_exchange_strong(&c->why, &none, (int)why);
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
