/* fj_status.c — names and HTTP codes of fj_status, and fj_err filling. */
#include "fj_status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int http;
} status_table[] = {
    [FJ_OK] = {"ok", 200},
    [FJ_EINVAL] = {"invalid", 400},
    [FJ_EAUTH] = {"unauthorized", 401},
    [FJ_EFORBIDDEN] = {"forbidden", 403},
    [FJ_ENOTFOUND] = {"not_found", 404},
    [FJ_EMETHOD] = {"method_not_allowed", 405},
    [FJ_ECONFLICT] = {"conflict", 422},
    [FJ_ETOOBIG] = {"too_large", 413},
    [FJ_EUNSUPPORTED] = {"unsupported_media_type", 415},
    [FJ_EBUSY] = {"busy", 503},
    [FJ_ENOMEM] = {"out_of_memory", 503},
    [FJ_EIO] = {"io_error", 500},
    [FJ_ESCHEMA] = {"schema_outdated", 503},
    [FJ_EINTERNAL] = {"internal", 500},
    [FJ_ELIMITED] = {"rate_limited", 429},
};

const char *fj_status_name(fj_status st)
{
    if ((unsigned)st >= sizeof status_table / sizeof status_table[0])
        return "internal";
    return status_table[st].name;
}

int fj_status_http(fj_status st)
{
    if ((unsigned)st >= sizeof status_table / sizeof status_table[0])
        return 500;
    return status_table[st].http;
}

fj_status fj_err_set(fj_err *err, fj_status st, const char *path, const char *fmt, ...)
{
    if (!err)
        return st;
    snprintf(err->code, sizeof err->code, "%s", fj_status_name(st));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    snprintf(err->path, sizeof err->path, "%s", path ? path : "");
    return st;
}
