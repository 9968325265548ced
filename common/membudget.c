/* membudget.c — memory budgets with an optional shared pool (membudget.h). The pool is charged
 * first and given back when the budget's own limit refuses, so two racing charges can overshoot
 * neither limit. */
#include "membudget.h"

/* Adds n to *used unless the sum would pass limit (0: no limit). */
static bool take(atomic_size_t *used, size_t limit, size_t n)
{
    size_t before = atomic_fetch_add(used, n);
    if (before + n < before || (limit && before + n > limit)) {
        atomic_fetch_sub(used, n);
        return false;
    }
    return true;
}

bool fj_mem_charge(fj_mem_budget *b, size_t n)
{
    if (!b)
        return true;
    if (b->pool && !take(&b->pool->used, b->pool->limit, n)) {
        int none = FJ_MEM_OK;
        if (atomic_compare_exchange_strong(&b->over, &none, FJ_MEM_OVER_POOL))
            atomic_fetch_add(&b->pool->refused_pool, 1);
        return false;
    }
    if (!take(&b->used, b->limit, n)) {
        if (b->pool)
            atomic_fetch_sub(&b->pool->used, n);
        int none = FJ_MEM_OK;
        if (atomic_compare_exchange_strong(&b->over, &none, FJ_MEM_OVER_OWN) && b->pool)
            atomic_fetch_add(&b->pool->refused_own, 1);
        return false;
    }
    return true;
}

void fj_mem_charge_held(fj_mem_budget *b, size_t n)
{
    if (!b || !n)
        return;
    atomic_fetch_add(&b->used, n);
    if (b->pool)
        atomic_fetch_add(&b->pool->used, n);
}

void fj_mem_uncharge(fj_mem_budget *b, size_t n)
{
    if (!b || !n)
        return;
    atomic_fetch_sub(&b->used, n);
    if (b->pool)
        atomic_fetch_sub(&b->pool->used, n);
}

fj_mem_over fj_mem_over_of(const fj_mem_budget *b)
{
    return b ? (fj_mem_over)atomic_load(&((fj_mem_budget *)b)->over) : FJ_MEM_OK;
}

void fj_mem_clear_over(fj_mem_budget *b)
{
    if (b)
        atomic_store(&b->over, FJ_MEM_OK);
}

size_t fj_mem_used(const fj_mem_budget *b)
{
    return b ? atomic_load(&((fj_mem_budget *)b)->used) : 0;
}
