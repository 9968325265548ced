/* storage/core/tokens.h — the upload/read credentials (one row per cluster in `tokens`), written
 * once over the driver's statements outside a query (storage/core/driver.h's run). Secrets are
 * never stored, only their hash (fj_token_rec, storage/core/store.h). */
#ifndef FJ_STORE_TOKENS_H
#define FJ_STORE_TOKENS_H

#include "fj_status.h"
#include "storage/core/store.h"

#include <stddef.h>

/* Adds or replaces the cluster's token (writer handle). */
fj_status fj_tokens_put(fj_store *s, const fj_token_rec *t, fj_err *err);
/* FJ_ENOTFOUND (path "cluster") when the cluster has none. */
fj_status fj_tokens_get(fj_store *s, const char *cluster, fj_token_rec *out, fj_err *err);
/* Every token, by cluster name; *out from fj_malloc (the caller frees it), NULL when none. */
fj_status fj_tokens_list(fj_store *s, fj_token_rec **out, size_t *n, fj_err *err);
/* Deletes the cluster's token (writer handle); FJ_ENOTFOUND when it has none. */
fj_status fj_tokens_revoke(fj_store *s, const char *cluster, fj_err *err);

#endif
