/* send.h — HTTP delivery with libcurl: POST of a zstd-compressed JSON body
 * (Content-Type: application/json, Content-Encoding: zstd) with Basic or Bearer credentials read
 * from a file at every attempt (so a rotated secret is picked up), an optional CA file, one
 * keep-alive connection, not reused past the server's announced idle limit. The answer is classified for the caller's retry logic.
 * Not thread-safe: one sender per thread. */
#ifndef FJ_PUSH_SEND_H
#define FJ_PUSH_SEND_H

#include "buf.h"
#include "config.h"
#include "spool.h"

typedef struct fj_sender fj_sender;

/* NULL on out-of-memory or when libcurl cannot start. */
fj_sender *fj_sender_new(const fj_push_config *cfg);
void fj_sender_free(fj_sender *s);

/* Outcome of one POST:
 *   FJ_OK        2xx: delivered
 *   FJ_EBUSY     try again later: connection failure, timeout, 408, 429, 5xx; *retry_after holds
 *                the server's Retry-After in seconds (0 when none was given)
 *   FJ_EAUTH     401/403: kept and retried slowly, the operator must fix the credentials
 *   FJ_EINVAL    any other 4xx: the server will never take this document; drop it
 * err gets the HTTP status or the transport error. */
fj_status fj_sender_post(fj_sender *s, fj_item_kind kind, const void *zbody, size_t len, long *retry_after,
                         fj_err *err);

/* The URL a kind of document goes to. */
const char *fj_sender_url(const fj_sender *s, fj_item_kind kind);

/* How long the sender's kept connection may sit idle and still be reused, from the server's
 * Keep-Alive header ("timeout=N", or NULL when the answer had none): N less a margin (5 s, or
 * half of N when N is 10 or less), so a send never goes out on a connection the server is closing;
 * FJ_REUSE_DEFAULT_S without an announcement (below the 10 s after which fjord before
 * keepalive-timeout closed idle connections). */
enum { FJ_REUSE_DEFAULT_S = 8 };
long fj_keepalive_reuse_s(const char *keep_alive);

/* zstd (level 3) of in, appended to out. */
fj_status fj_zstd_compress(const void *in, size_t n, fj_buf *out);

/* The Authorization header for the contents of an auth file ("" for none). Exposed for tests. */
fj_status fj_auth_header(fj_auth_type type, const char *secret, char *out, size_t n);

#endif
