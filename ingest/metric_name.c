/* metric_name.c — escaping of measurements and folded tags in series keys (see metric_name.h). */
#include "ingest/metric_name.h"

#include <string.h>

size_t fj_mname_escape(const char *src, size_t n, char sep, bool sep_follows, char *dst)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = src[i];
        if (c == sep) {
            dst[o++] = '\\';
        } else if (c == '\\') {
            /* a backslash is an escape only before sep or another backslash */
            bool before_escape = i + 1 < n ? src[i + 1] == sep || src[i + 1] == '\\' : sep_follows;
            if (before_escape)
                dst[o++] = '\\';
        }
        dst[o++] = c;
    }
    return o;
}

size_t fj_mname_unescape(const char *src, size_t n, char sep, char *dst, size_t *out_n)
{
    size_t i = 0, o = 0;
    while (i < n) {
        char c = src[i];
        if (c == '\\' && i + 1 < n && (src[i + 1] == sep || src[i + 1] == '\\')) {
            dst[o++] = src[i + 1];
            i += 2;
            continue;
        }
        if (c == sep)
            break;
        dst[o++] = c;
        i++;
    }
    *out_n = o;
    return i;
}
