/* log.c — stderr logging. */
#define _GNU_SOURCE /* program_invocation_short_name */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static fj_log_level min_level = FJ_LOG_INFO;

void fj_log_set_level(fj_log_level lvl)
{
    min_level = lvl;
}

void fj_log(fj_log_level lvl, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if (lvl < min_level)
        return;
    char line[1024];
    /* program_invocation_short_name: "fjord" or "fjord-push", whichever binary logs. */
    int n = snprintf(line, sizeof line, "%s %s: ", program_invocation_short_name, names[lvl]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(2, line, len);
    (void)w;
}

void fj_log_raw(fj_log_level lvl, const char *line)
{
    if (lvl < min_level)
        return;
    char out[4096];
    size_t len = strlen(line);
    if (len > sizeof out - 1)
        len = sizeof out - 1;
    memcpy(out, line, len);
    out[len++] = '\n';
    ssize_t w = write(2, out, len);
    (void)w;
}
