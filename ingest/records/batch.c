/* ingest/records/batch.c — batch bookkeeping (ingest/records/batch.h). */
#include "ingest/records/batch.h"

#include "alloc.h"

#include <string.h>

const char *fj_kind_name(fj_kind k)
{
    static const char *names[] = {"sample", "sysinfo", "job", "cluster", "measurements", "metrics", "chimbuko"};
    return (unsigned)k < FJ_KIND__COUNT ? names[k] : "unknown";
}

fj_batch *fj_batch_new(void)
{
    fj_batch *b = fj_calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->arena = fj_arena_create();
    if (!b->arena) {
        fj_free(b);
        return NULL;
    }
    return b;
}

fj_envelope *fj_batch_add(fj_batch *b)
{
    if (b->n_envs == b->cap_envs) {
        size_t cap = b->cap_envs ? b->cap_envs * 2 : 4;
        /* Grow into a new arena block; the old one is freed with the arena. */
        fj_envelope *envs = fj_arena_calloc(b->arena, cap, sizeof *envs);
        if (!envs)
            return NULL;
        if (b->n_envs)
            memcpy(envs, b->envs, b->n_envs * sizeof *envs);
        b->envs = envs;
        b->cap_envs = cap;
    }
    fj_envelope *e = &b->envs[b->n_envs++];
    memset(e, 0, sizeof *e);
    return e;
}

void fj_batch_free(fj_batch *b)
{
    if (!b)
        return;
    fj_arena_destroy(b->arena);
    fj_free(b);
}
