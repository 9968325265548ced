/* libFuzzer harness: any bytes given to fj_ts_log_decode are refused or decoded without reading out
 * of bounds; what decodes, encoded again, decodes to the same points bit for bit. Aborts otherwise. */
#include "storage/ts/request_log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fj_ts_log *dec = fj_ts_log_create(), *enc = fj_ts_log_create();
    if (!dec || !enc)
        abort();
    const uint32_t *ids, *ids2;
    const int64_t *t, *t2;
    const double *v, *v2;
    size_t n = 0, n2 = 0;
    if (fj_ts_log_decode(dec, data, size, &ids, &t, &v, &n) == FJ_OK) {
        fj_ts_log_begin(enc);
        const void *rec;
        size_t len;
        if (fj_ts_log_add(enc, ids, t, v, n) != FJ_OK || fj_ts_log_finish(enc, &rec, &len) != FJ_OK)
            abort();
        void *copy = malloc(len);
        if (!copy)
            abort();
        memcpy(copy, rec, len);
        fj_ts_log *again = fj_ts_log_create();
        if (!again || fj_ts_log_decode(again, copy, len, &ids2, &t2, &v2, &n2) != FJ_OK || n2 != n ||
            (n && (memcmp(ids, ids2, n * sizeof *ids) || memcmp(t, t2, n * sizeof *t) ||
                   memcmp(v, v2, n * sizeof *v)))) /* an empty record has no arrays */
            abort();
        fj_ts_log_destroy(again);
        free(copy);
    }
    fj_ts_log_destroy(dec);
    fj_ts_log_destroy(enc);
    return 0;
}
