/* storage/core/try.h — early return on failure, for the write paths' long sequences of steps.
 *
 *   FJ_TRY(write_meta(w));   // returns write_meta's status from the enclosing function unless FJ_OK
 *
 * Where the steps only append to an fj_buf, its sticky error (common/buf.h) reads better: append
 * everything, then check fj_buf_status once. */
#ifndef FJ_STORAGE_TRY_H
#define FJ_STORAGE_TRY_H

#include "fj_status.h"

#define FJ_TRY(expr)                                                                                     \
    do {                                                                                                 \
        fj_status fj_try_st_ = (expr);                                                                   \
        if (fj_try_st_ != FJ_OK)                                                                         \
            return fj_try_st_;                                                                           \
    } while (0)

#endif
