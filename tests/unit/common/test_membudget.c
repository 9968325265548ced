/* Tests of common/membudget.c and the budgets of common/arena.c and common/buf.c: a read's memory
 * is refused past its own limit and past the pool it shares, every charge is given back, and an
 * arena released to a mark keeps what came before it. */
#include "arena.h"
#include "buf.h"
#include "cancel.h"
#include "membudget.h"

#include <criterion/criterion.h>
#include <string.h>

Test(membudget, own_limit_refuses_and_says_so)
{
    fj_mem_budget b = {.limit = 1000};
    cr_assert(fj_mem_charge(&b, 600));
    cr_assert_not(fj_mem_charge(&b, 500));
    cr_assert_eq(fj_mem_over_of(&b), FJ_MEM_OVER_OWN);
    cr_assert_eq(fj_mem_used(&b), 600, "a refused charge adds nothing");
    fj_mem_uncharge(&b, 600);
    cr_assert_eq(fj_mem_used(&b), 0);
    fj_mem_clear_over(&b);
    cr_assert_eq(fj_mem_over_of(&b), FJ_MEM_OK);
}

Test(membudget, pool_is_shared_and_given_back)
{
    fj_mem_pool pool = {.limit = 1000};
    fj_mem_budget a = {.limit = 800, .pool = &pool}, b = {.limit = 800, .pool = &pool};
    cr_assert(fj_mem_charge(&a, 700));
    cr_assert_not(fj_mem_charge(&b, 400), "the pool holds 700 of 1000");
    cr_assert_eq(fj_mem_over_of(&b), FJ_MEM_OVER_POOL);
    cr_assert_eq(atomic_load(&pool.used), 700);
    cr_assert_not(fj_mem_charge(&a, 200), "a's own limit");
    cr_assert_eq(fj_mem_over_of(&a), FJ_MEM_OVER_OWN);
    cr_assert_eq(atomic_load(&pool.used), 700, "a refusal by the budget's own limit gives the pool back");
    fj_mem_uncharge(&a, 700);
    cr_assert(fj_mem_charge(&b, 400));
    fj_mem_uncharge(&b, 400);
    cr_assert_eq(atomic_load(&pool.used), 0);
}

Test(membudget, arena_refuses_past_budget_and_gives_all_back)
{
    fj_mem_pool pool = {.limit = 0};
    fj_mem_budget b = {.limit = 1 << 20, .pool = &pool};
    fj_arena *a = fj_arena_create();
    fj_arena_set_budget(a, &b);
    size_t got = 0;
    while (fj_arena_alloc(a, 4096))
        got += 4096;
    cr_assert_gt(got, 900 * 1024, "about the budget was handed out (%zu)", got);
    cr_assert_leq(fj_mem_used(&b), (size_t)1 << 20);
    cr_assert_eq(fj_mem_over_of(&b), FJ_MEM_OVER_OWN);
    cr_assert_null(fj_arena_alloc(a, 1 << 20), "a big one-off block is refused too");
    fj_arena_destroy(a);
    cr_assert_eq(fj_mem_used(&b), 0);
    cr_assert_eq(atomic_load(&pool.used), 0);
}

Test(membudget, arena_release_keeps_what_came_before)
{
    fj_mem_budget b = {.limit = 0};
    fj_arena *a = fj_arena_create();
    fj_arena_set_budget(a, &b);
    char *keep = fj_arena_strdup(a, "parsed statements");
    fj_arena_mark m = fj_arena_save(a);
    size_t used_at_mark = fj_arena_used(a), held_at_mark = fj_mem_used(&b);
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 100; k++)
            cr_assert_not_null(fj_arena_alloc(a, 3000)); /* fills chunks */
        cr_assert_not_null(fj_arena_alloc(a, 200 * 1024)); /* one-off blocks */
        cr_assert_gt(fj_mem_used(&b), held_at_mark);
        fj_arena_release(a, m);
        cr_assert_eq(fj_mem_used(&b), held_at_mark, "round %d: the budget got everything back", i);
        cr_assert_eq(fj_arena_used(a), used_at_mark);
        cr_assert_str_eq(keep, "parsed statements");
    }
    char *after = fj_arena_strdup(a, "next statement");
    cr_assert_str_eq(after, "next statement");
    cr_assert_str_eq(keep, "parsed statements");
    fj_arena_destroy(a);
    cr_assert_eq(fj_mem_used(&b), 0);
}

Test(membudget, buffer_growth_is_charged_and_refused)
{
    fj_mem_budget b = {.limit = 64 * 1024};
    fj_buf buf;
    fj_buf_init(&buf, (size_t)1 << 30);
    fj_buf_set_budget(&buf, &b);
    char line[1000];
    memset(line, 'x', sizeof line);
    fj_status st = FJ_OK;
    for (int i = 0; i < 1000 && st == FJ_OK; i++)
        st = fj_buf_append(&buf, line, sizeof line);
    cr_assert_eq(st, FJ_ENOMEM);
    cr_assert_eq(fj_mem_over_of(&b), FJ_MEM_OVER_OWN);
    cr_assert_leq(fj_mem_used(&b), 64 * 1024);
    cr_assert_eq(fj_mem_used(&b), buf.alloc);
    fj_buf_free(&buf);
    cr_assert_eq(fj_mem_used(&b), 0);
}

Test(cancel, first_reason_stays)
{
    fj_cancel c = {0};
    cr_assert_eq(fj_cancel_check(&c), FJ_CANCEL_NONE);
    cr_assert_eq(fj_cancel_check(NULL), FJ_CANCEL_NONE);
    fj_cancel_set(&c, FJ_CANCEL_CLIENT_GONE);
    fj_cancel_set(&c, FJ_CANCEL_SHUTDOWN);
    cr_assert_eq(fj_cancel_check(&c), FJ_CANCEL_CLIENT_GONE);
    fj_err err = {0};
    cr_assert_eq(fj_cancel_err(FJ_CANCEL_TIMEOUT, 60, &err), FJ_EBUSY);
    cr_assert_str_eq(err.code, "query_timeout");
    cr_assert_str_eq(err.path, "query-timeout");
}

Test(membudget, pool_counts_refusals_once_a_budget)
{
    fj_mem_pool pool = {.limit = 1000};
    fj_mem_budget a = {.limit = 500, .pool = &pool}, b = {.limit = 800, .pool = &pool};
    cr_assert(fj_mem_charge(&a, 400));
    cr_assert_not(fj_mem_charge(&a, 200));
    cr_assert_not(fj_mem_charge(&a, 300), "refused again: the same stop");
    cr_assert(fj_mem_charge(&b, 500));
    cr_assert_not(fj_mem_charge(&b, 200), "the pool's limit");
    cr_assert_eq(atomic_load(&pool.refused_own), 1);
    cr_assert_eq(atomic_load(&pool.refused_pool), 1);
    fj_mem_uncharge(&b, 500);
    fj_mem_clear_over(&a); /* the next statement */
    cr_assert_not(fj_mem_charge(&a, 200));
    cr_assert_eq(atomic_load(&pool.refused_own), 2);
    fj_mem_uncharge(&a, 400);
}

static void count_call(void *arg)
{
    ++*(int *)arg;
}

Test(cancel, hook_called_while_registered)
{
    fj_cancel c = {0};
    int calls = 0;
    fj_cancel_hook(&c, count_call, &calls);
    fj_cancel_fire(&c);
    cr_assert_eq(calls, 0, "not cancelled: nothing to stop");
    fj_cancel_set(&c, FJ_CANCEL_TIMEOUT);
    cr_assert_eq(calls, 0, "setting the token waits for nothing");
    fj_cancel_fire(&c);
    cr_assert_eq(calls, 1, "the watch stops the statement");
    fj_cancel_fire(&c);
    cr_assert_eq(calls, 2, "and again at its next round");
    fj_cancel_unhook(&c);
    fj_cancel_fire(&c);
    cr_assert_eq(calls, 2, "unhooked: the statement is over");
    fj_cancel_hook(NULL, count_call, &calls);
    fj_cancel_unhook(NULL);
}
