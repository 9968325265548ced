/* membudget.h — memory budgets: what a read may hold, alone and together with every other read in
 * flight. Arenas and buffers given a budget charge it as they grow and fail (NULL, FJ_ENOMEM) past
 * it, with the budget recording which limit was hit, so a query that would take the server down
 * gets an error instead. Counts what was malloc'd (arena chunks, buffer capacity), not what was
 * asked for. Thread-safe: counters are atomic. */
#ifndef FJ_MEMBUDGET_H
#define FJ_MEMBUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* Shared by several budgets: limit on the sum of their charges (0: none). */
typedef struct fj_mem_pool {
    atomic_size_t used;
    size_t limit;
    /* Refusals of its budgets, by the limit that refused (the budget's own, the pool's): counted
     * once a budget until fj_mem_clear_over (GET /metrics). */
    atomic_size_t refused_own, refused_pool;
} fj_mem_pool;

typedef enum {
    FJ_MEM_OK = 0,
    FJ_MEM_OVER_OWN,  /* the budget's own limit */
    FJ_MEM_OVER_POOL, /* the pool's: other budgets hold the rest */
} fj_mem_over;

/* One request's budget; zero it, then set limit (0: none) and pool (NULL: none). */
typedef struct fj_mem_budget {
    atomic_size_t used;
    size_t limit;
    fj_mem_pool *pool;
    atomic_int over; /* fj_mem_over: the first charge refused, until fj_mem_clear_over */
} fj_mem_budget;

/* Charges n bytes to b and its pool; false (nothing charged, b's `over` set) past either limit.
 * NULL b: true. */
bool fj_mem_charge(fj_mem_budget *b, size_t n);

/* Charges n bytes already held (memory taken before the budget was set), past the limits if need
 * be: later charges are then refused. NULL b: no-op. */
void fj_mem_charge_held(fj_mem_budget *b, size_t n);

/* Gives back n bytes charged before. NULL b: no-op. */
void fj_mem_uncharge(fj_mem_budget *b, size_t n);

/* Which limit refused a charge since the last clear (FJ_MEM_OK: none). */
fj_mem_over fj_mem_over_of(const fj_mem_budget *b);
void fj_mem_clear_over(fj_mem_budget *b);

/* Bytes charged now. */
size_t fj_mem_used(const fj_mem_budget *b);

#endif
