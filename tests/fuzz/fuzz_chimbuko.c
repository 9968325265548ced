/* libFuzzer harness: any body through the Chimbuko decoder, as a pserver packet (POST
 * /api/anomalydata) and as provenance records of each collection (POST
 * /api/v1/ingest/chimbuko/{collection}). The first byte picks the collection. */
#include "ingest/chimbuko.h"
#include "ingest/records/batch.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    fj_batch *b = fj_batch_new();
    if (!b)
        return 0;
    fj_err err = {0};
    fj_cb_collection c = (fj_cb_collection)(data[0] % FJ_CB__COUNT);
    if (c == FJ_CB_PACKET)
        fj_chimbuko_decode_packet((const char *)data + 1, size - 1, b, &err);
    else
        fj_chimbuko_decode_records((const char *)data + 1, size - 1, c, b, &err);
    fj_batch_free(b);
    return 0;
}
