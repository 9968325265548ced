/* codec.h — request body content decoding (Content-Encoding: gzip, zstd, identity), each with a
 * hard cap on the decoded size so a small compressed bomb cannot exhaust memory; and gzip for the
 * answers of clients that take it (http.c, dashboard.c). */
#ifndef FJ_CODEC_H
#define FJ_CODEC_H

#include "buf.h"
#include "fj_status.h"

#include <stdbool.h>
#include <stddef.h>

/* Decodes in[0..n) per the Content-Encoding value `encoding` (NULL, "" or "identity" copy) into
 * out, which must be initialised with the decoded cap. FJ_EUNSUPPORTED for an unknown encoding,
 * FJ_ETOOBIG past the cap, FJ_EINVAL for corrupt data; err says which. */
fj_status fj_codec_decode(const char *encoding, const void *in, size_t n, fj_buf *out, fj_err *err);

/* Whether an Accept-Encoding value takes gzip (`gzip` or `*` with a q above 0, any case). */
bool fj_codec_accepts_gzip(const char *accept_encoding);

/* The most fj_codec_gzip writes for n bytes of input. */
size_t fj_codec_gzip_bound(size_t n);
/* Compresses in[0..n) as one gzip member at level (1 fastest .. 9 smallest) into out[0..cap):
 * the bytes written, or 0 when it failed or did not make the data smaller. */
size_t fj_codec_gzip(const void *in, size_t n, int level, void *out, size_t cap);

#endif
