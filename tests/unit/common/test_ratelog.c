/* Tests of common/ratelog.c: one line per window per kind, the count held back carried by the next
 * line or written alone once the window is over, exact counts under threads, and the lines as
 * written to stderr. */
#include "ratelog.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define S 1000000000LL

Test(ratelog, one_line_per_window_then_the_count)
{
    fj_ratelog rl = FJ_RATELOG_INIT("k", 10);
    uint64_t held = 99;
    cr_assert(fj_ratelog_allow(&rl, 5 * S, &held), "the first line passes");
    cr_assert_eq(held, 0);
    for (int i = 0; i < 2400; i++) /* a 3 s outage, a batch per 1.25 ms */
        cr_assert_not(fj_ratelog_allow(&rl, 5 * S + i * 1250000LL, &held));
    cr_assert_not(fj_ratelog_allow(&rl, 15 * S - 1, &held), "still inside the window");
    cr_assert(fj_ratelog_allow(&rl, 15 * S, &held), "the window is over");
    cr_assert_eq(held, 2401, "the next line carries what was held back");
    cr_assert(fj_ratelog_allow(&rl, 40 * S, &held));
    cr_assert_eq(held, 0, "the count started again");
}

Test(ratelog, a_clock_at_zero_is_not_never)
{
    fj_ratelog rl = FJ_RATELOG_INIT("k", 10);
    uint64_t held;
    cr_assert(fj_ratelog_allow(&rl, 0, &held));
    cr_assert_not(fj_ratelog_allow(&rl, 1, &held), "a line at time 0 starts a window too");
}

Test(ratelog, the_count_alone_once_quiet)
{
    fj_ratelog rl = FJ_RATELOG_INIT("k", 10);
    uint64_t held = 0;
    cr_assert_not(fj_ratelog_due(&rl, 1 * S, &held), "nothing held back, nothing due");
    cr_assert(fj_ratelog_allow(&rl, 1 * S, &held));
    cr_assert_not(fj_ratelog_due(&rl, 20 * S, &held), "nothing held back since the line");
    cr_assert_not(fj_ratelog_allow(&rl, 2 * S, &held));
    cr_assert_not(fj_ratelog_allow(&rl, 3 * S, &held));
    cr_assert_not(fj_ratelog_due(&rl, 10 * S, &held), "not before the window is over");
    cr_assert(fj_ratelog_due(&rl, 11 * S, &held));
    cr_assert_eq(held, 2);
    cr_assert_not(fj_ratelog_due(&rl, 30 * S, &held), "written once");
    cr_assert_not(fj_ratelog_allow(&rl, 12 * S, &held), "the summary line starts a window");
}

typedef struct hammer {
    fj_ratelog *rl;
    _Atomic uint64_t *allowed, *reported;
} hammer;

static void *hammer_main(void *arg)
{
    hammer *h = arg;
    for (int i = 0; i < 100000; i++) {
        uint64_t held = 0;
        /* every 1000th call a new window: some pass, most are held back */
        if (fj_ratelog_allow(h->rl, (int64_t)(i / 1000 + 1) * 10 * S, &held)) {
            atomic_fetch_add(h->allowed, 1);
            atomic_fetch_add(h->reported, held);
        }
    }
    return NULL;
}

Test(ratelog, threads_lose_no_count)
{
    fj_ratelog rl = FJ_RATELOG_INIT("k", 10);
    _Atomic uint64_t allowed = 0, reported = 0;
    hammer h = {&rl, &allowed, &reported};
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, hammer_main, &h);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    uint64_t rest = 0;
    fj_ratelog_due(&rl, 1000000 * S, &rest);
    cr_assert_eq(allowed + reported + rest, 400000, "%llu passed + %llu reported + %llu left",
                 (unsigned long long)allowed, (unsigned long long)reported, (unsigned long long)rest);
    cr_assert(allowed >= 1 && allowed <= 100, "at most one a window: %llu", (unsigned long long)allowed);
}

Test(ratelog, lines_as_written, .init = cr_redirect_stderr)
{
    fj_ratelog rl = FJ_RATELOG_INIT("writer: commit failed", 3600);
    for (int i = 0; i < 5; i++)
        fj_log_limited(&rl, FJ_LOG_ERROR, "connection refused (%d)", i);
    fj_ratelog_flush(&rl, FJ_LOG_ERROR, false); /* the window is not over: nothing */
    fj_ratelog_flush(&rl, FJ_LOG_ERROR, true);  /* at shutdown: what was held back */
    fj_ratelog_flush(&rl, FJ_LOG_ERROR, true);  /* nothing left: nothing */
    fflush(stderr);
    char out[512] = "";
    size_t n = fread(out, 1, sizeof out - 1, cr_get_redirected_stderr());
    out[n] = '\0';
    cr_assert(strstr(out, "error: writer: commit failed: connection refused (0)\n"), "%s", out);
    cr_assert(strstr(out, "error: writer: commit failed: suppressed=4 window_s=3600\n"), "%s", out);
    cr_assert_null(strstr(out, "(1)"), "%s", out);
    size_t lines = 0;
    for (const char *p = out; (p = strchr(p, '\n')); p++)
        lines++;
    cr_assert_eq(lines, 2, "the first line and one count line: %s", out);
}
