/* storage/query/value.c — the result values every backend builds (storage/query/value.h). */
#include "storage/query/value.h"

#include <math.h>

fj_value fj_value_null(void)
{
    fj_value v = {0};
    return v;
}

fj_value fj_value_int(int64_t i)
{
    fj_value v = {.t = FJ_VT_INT, .i = i};
    return v;
}

fj_value fj_value_real(double d)
{
    fj_value v = {.t = FJ_VT_REAL, .d = d};
    return v;
}

fj_value fj_value_bool(bool b)
{
    fj_value v = {.t = FJ_VT_BOOL, .i = b ? 1 : 0};
    return v;
}

fj_value fj_value_text(const char *s)
{
    fj_value v = {.t = s ? FJ_VT_TEXT : FJ_VT_NULL, .s = s};
    return v;
}

fj_value fj_value_time(int64_t t)
{
    fj_value v = {.t = t ? FJ_VT_TIME : FJ_VT_NULL, .i = t};
    return v;
}

fj_value fj_value_list(const char *const *l, size_t n)
{
    fj_value v = {.t = FJ_VT_LIST, .list = l, .n = n};
    return v;
}

fj_value fj_value_json(const char *s)
{
    fj_value v = {.t = s ? FJ_VT_JSON : FJ_VT_NULL, .s = s};
    return v;
}

fj_value fj_value_avg(double sum, double n)
{
    return n > 0 ? fj_value_real(sum / n) : fj_value_null();
}

fj_value fj_value_acc_avg(const fj_qm_acc *a)
{
    double v;
    return fj_qm_avg(a, &v) ? fj_value_real(v) : fj_value_null();
}

fj_value fj_value_acc_avg_int(const fj_qm_acc *a)
{
    double v;
    return fj_qm_avg(a, &v) ? fj_value_int((int64_t)llround(v)) : fj_value_null();
}

fj_value fj_value_acc_max(const fj_qm_acc *a)
{
    return a->n ? fj_value_real(a->max) : fj_value_null();
}

fj_value fj_value_acc_max_int(const fj_qm_acc *a)
{
    return a->n ? fj_value_int((int64_t)llround(a->max)) : fj_value_null();
}
