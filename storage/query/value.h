/* storage/query/value.h — the values of result rows (fj_value, storage/core/store_query.h) as every backend's query
 * code builds them, so that a null, a time or a list means the same whichever backend answers.
 * Not a public header. */
#ifndef FJ_QUERY_VALUE_H
#define FJ_QUERY_VALUE_H

#include "storage/core/store_query.h"
#include "storage/query/qmath.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

fj_value fj_value_null(void);
fj_value fj_value_int(int64_t v);
fj_value fj_value_real(double v);
fj_value fj_value_bool(bool v);
fj_value fj_value_text(const char *s);    /* NULL gives null */
fj_value fj_value_time(int64_t t);        /* 0 gives null */
fj_value fj_value_list(const char *const *l, size_t n);
fj_value fj_value_json(const char *s);    /* NULL gives null */
/* An average of accumulated values, null when empty. */
fj_value fj_value_avg(double sum, double n);
/* An accumulator's (storage/query/qmath.h) weighted average or maximum, as a real or rounded to
 * an integer; null when nothing was added. The load and job profile tables' cells. */
fj_value fj_value_acc_avg(const fj_qm_acc *a);
fj_value fj_value_acc_avg_int(const fj_qm_acc *a);
fj_value fj_value_acc_max(const fj_qm_acc *a);
fj_value fj_value_acc_max_int(const fj_qm_acc *a);

#endif
