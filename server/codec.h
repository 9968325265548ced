/* codec.h — request body content decoding (Content-Encoding: gzip, zstd, identity), each with a
 * hard cap on the decoded size so a small compressed bomb cannot exhaust memory. */
#ifndef FJ_CODEC_H
#define FJ_CODEC_H

#include "buf.h"
#include "fj_status.h"

/* Decodes in[0..n) per the Content-Encoding value `encoding` (NULL, "" or "identity" copy) into
 * out, which must be initialised with the decoded cap. FJ_EUNSUPPORTED for an unknown encoding,
 * FJ_ETOOBIG past the cap, FJ_EINVAL for corrupt data; err says which. */
fj_status fj_codec_decode(const char *encoding, const void *in, size_t n, fj_buf *out, fj_err *err);

#endif
