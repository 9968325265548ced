/* libFuzzer harness: any body through the aicr snapshot decoder (YAML through libyaml, or JSON),
 * as /api/v1/ingest/measurements receives it; a decoded snapshot must survive the normalised JSON
 * round trip unchanged, and its metadata.path, read as a constraint path, must parse and resolve
 * or fail cleanly. */
#include "ingest/aicr.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *normalised(const fj_aicr_snapshot *s, fj_arena *a)
{
    fj_buf b;
    fj_buf_init(&b, (size_t)1 << 28);
    char *out = fj_aicr_json(s, &b) == FJ_OK ? fj_arena_strndup(a, b.data ? b.data : "", b.len) : NULL;
    fj_buf_free(&b);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fj_arena *a = fj_arena_create();
    if (!a)
        return 0;
    const char *body = (const char *)data;
    for (int f = FJ_AICR_AUTO; f <= FJ_AICR_YAML; f++) {
        fj_aicr_snapshot *s = NULL;
        fj_err err = {0};
        if (fj_aicr_decode(a, body, size, (fj_aicr_format)f, &s, &err) != FJ_OK)
            continue;
        char *j1 = normalised(s, a);
        if (!j1)
            continue;
        fj_aicr_snapshot *s2 = NULL;
        if (fj_aicr_decode(a, j1, strlen(j1), FJ_AICR_JSON, &s2, &err) != FJ_OK)
            abort(); /* what we would store must decode again */
        char *j2 = normalised(s2, a);
        if (!j2 || strcmp(j1, j2) != 0)
            abort();
        const char *path = fj_aicr_meta(s, "path");
        fj_aicr_path p;
        fj_aicr_result r;
        if (path && fj_aicr_path_parse(a, path, &p, &err) == FJ_OK)
            fj_aicr_resolve(a, s, &p, &r, &err);
    }
    fj_arena_destroy(a);
    return 0;
}
