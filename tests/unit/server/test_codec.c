/* Tests of server/codec.c: gzip and zstd decoding with caps. */
#include "server/codec.h"

#include <criterion/criterion.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

static size_t make_gzip(const char *in, size_t n, unsigned char *out, size_t cap)
{
    z_stream z = {0};
    deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    deflate(&z, Z_FINISH);
    size_t len = z.total_out;
    deflateEnd(&z);
    return len;
}

Test(codec, identity_gzip_zstd_round_trip)
{
    static char text[200000];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = (char)('a' + i % 23);
    static unsigned char packed[300000];
    fj_buf out;
    fj_err err = {0};

    fj_buf_init(&out, sizeof text);
    cr_assert_eq(fj_codec_decode(NULL, text, sizeof text, &out, &err), FJ_OK);
    cr_assert_eq(out.len, sizeof text);
    fj_buf_free(&out);

    size_t gz = make_gzip(text, sizeof text, packed, sizeof packed);
    fj_buf_init(&out, sizeof text);
    cr_assert_eq(fj_codec_decode("gzip", packed, gz, &out, &err), FJ_OK, "%s", err.message);
    cr_assert_eq(out.len, sizeof text);
    cr_assert_eq(memcmp(out.data, text, sizeof text), 0);
    fj_buf_free(&out);

    size_t zs = ZSTD_compress(packed, sizeof packed, text, sizeof text, 3);
    fj_buf_init(&out, sizeof text);
    cr_assert_eq(fj_codec_decode("zstd", packed, zs, &out, &err), FJ_OK, "%s", err.message);
    cr_assert_eq(memcmp(out.data, text, sizeof text), 0);
    fj_buf_free(&out);
}

Test(codec, caps_and_corruption)
{
    static char zeros[1 << 20];
    static unsigned char packed[1 << 16];
    fj_buf out;
    fj_err err = {0};
    size_t gz = make_gzip(zeros, sizeof zeros, packed, sizeof packed);
    cr_assert_lt(gz, 8192, "a bomb is small compressed");
    fj_buf_init(&out, 1000);
    cr_assert_eq(fj_codec_decode("gzip", packed, gz, &out, &err), FJ_ETOOBIG);
    fj_buf_free(&out);

    size_t zs = ZSTD_compress(packed, sizeof packed, zeros, sizeof zeros, 3);
    fj_buf_init(&out, 1000);
    cr_assert_eq(fj_codec_decode("zstd", packed, zs, &out, &err), FJ_ETOOBIG);
    fj_buf_free(&out);

    fj_buf_init(&out, 1000);
    cr_assert_eq(fj_codec_decode("gzip", "\x1f\x8bjunkjunk", 10, &out, &err), FJ_EINVAL);
    fj_buf_free(&out);
    fj_buf_init(&out, 1000);
    cr_assert_eq(fj_codec_decode("zstd", "junkjunk", 8, &out, &err), FJ_EINVAL);
    fj_buf_free(&out);
    fj_buf_init(&out, 4 << 20);
    cr_assert_eq(fj_codec_decode("gzip", packed, gz / 2, &out, &err), FJ_EINVAL, "truncated gzip");
    fj_buf_free(&out);
    fj_buf_init(&out, 1000);
    cr_assert_eq(fj_codec_decode("br", "x", 1, &out, &err), FJ_EUNSUPPORTED);
    cr_assert(strstr(err.message, "br"));
    fj_buf_free(&out);
}
