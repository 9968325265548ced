/* storage/core/tokens.h — the upload/read credentials (one row per cluster in `tokens`), written
 * once over the driver's statements outside a query (storage/core/driver.h's run). Every
 * backend's ops table names these four as its token ops; their contracts are store.h's. */
#ifndef FJ_STORE_TOKENS_H
#define FJ_STORE_TOKENS_H

#include "fj_status.h"
#include "storage/core/store.h"

#include <stddef.h>

fj_status fj_tokens_put(fj_store *s, const fj_token_rec *t, fj_err *err);
fj_status fj_tokens_get(fj_store *s, const char *cluster, fj_token_rec *out, fj_err *err);
fj_status fj_tokens_list(fj_store *s, fj_token_rec **out, size_t *n, fj_err *err);
fj_status fj_tokens_revoke(fj_store *s, const char *cluster, fj_err *err);

/* The four as a backend's fj_store_ops names them. */
#define FJ_TOKENS_OPS                                                                              \
    .token_put = fj_tokens_put, .token_get = fj_tokens_get, .token_list = fj_tokens_list,        \
    .token_revoke = fj_tokens_revoke

#endif
