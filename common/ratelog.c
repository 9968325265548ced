/* ratelog.c — failure log lines limited per kind (common/ratelog.h). Two atomics per limiter: the
 * time of the last line written, claimed by compare-and-swap so that one thread of many writes
 * it, and the count held back since. */
#include "ratelog.h"

#include "timefmt.h"

#include <stdarg.h>
#include <stdio.h>

static bool claim(fj_ratelog *rl, int64_t last, int64_t now_ns)
{
    /* 0 means "never": a clock that reads 0 is taken as 1 ns later */
    return atomic_compare_exchange_strong(&rl->last_ns, &last, now_ns ? now_ns : 1);
}

bool fj_ratelog_allow(fj_ratelog *rl, int64_t now_ns, uint64_t *suppressed)
{
    int64_t last = atomic_load(&rl->last_ns);
    if ((last && now_ns - last < rl->window_ns) || !claim(rl, last, now_ns)) {
        atomic_fetch_add(&rl->suppressed, 1);
        return false;
    }
    *suppressed = atomic_exchange(&rl->suppressed, 0);
    return true;
}

bool fj_ratelog_due(fj_ratelog *rl, int64_t now_ns, uint64_t *suppressed)
{
    int64_t last = atomic_load(&rl->last_ns);
    if (!atomic_load(&rl->suppressed) || now_ns - last < rl->window_ns || !claim(rl, last, now_ns))
        return false;
    *suppressed = atomic_exchange(&rl->suppressed, 0);
    return *suppressed > 0;
}

static long window_s(const fj_ratelog *rl)
{
    return (long)(rl->window_ns / 1000000000LL);
}

void fj_log_limited(fj_ratelog *rl, fj_log_level lvl, const char *fmt, ...)
{
    uint64_t held = 0;
    if (!fj_ratelog_allow(rl, fj_mono_ns(), &held))
        return;
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (held)
        fj_log(lvl, "%s: %s suppressed=%llu window_s=%ld", rl->kind, msg, (unsigned long long)held, window_s(rl));
    else
        fj_log(lvl, "%s: %s", rl->kind, msg);
}

void fj_ratelog_flush(fj_ratelog *rl, fj_log_level lvl, bool force)
{
    uint64_t held = 0;
    if (force)
        held = atomic_exchange(&rl->suppressed, 0);
    else if (!fj_ratelog_due(rl, fj_mono_ns(), &held))
        return;
    if (held)
        fj_log(lvl, "%s: suppressed=%llu window_s=%ld", rl->kind, (unsigned long long)held, window_s(rl));
}
