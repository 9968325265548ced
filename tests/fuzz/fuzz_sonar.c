/* libFuzzer harness: any body through the Sonar decoder (JSON parse, validation, normalisation),
 * as /api/v1/ingest/sonar receives it. */
#include "ingest/records/batch.h"
#include "ingest/sonar.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fj_batch *b = fj_batch_new();
    if (!b)
        return 0;
    fj_err err = {0};
    fj_sonar_decode_body((const char *)data, size, -1, b, NULL, NULL, &err);
    fj_batch_free(b);
    return 0;
}
