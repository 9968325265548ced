/* metric_name.h — how a line's measurement, field key and folded tags are written into the text
 * columns of a series key (ingest/cc.h: metric, stype, stype-id), and how they are read back
 * (InfluxQL's catalogue, cc-metric-store's /api/query).
 *
 * A ClusterCockpit metric line is stored under its measurement, a plain InfluxDB line's field
 * under "<measurement>.<field key>", and a plain line's other tags folded into stype "k1,k2" with
 * stype-id "v1,v2". So a dot separates measurement from field and a comma one tag from the next:
 * a dot in a measurement and a comma in a tag key or value are written escaped, `\.` and `\,`.
 * A backslash is written `\\` where it would otherwise be read as an escape (before a dot, a
 * comma or another backslash, or at the end of a measurement followed by the field, or of a tag);
 * any other backslash is written as it is. Read back: `\.`, `\,` and `\\` are the escapes, any
 * other backslash stands for itself, and the first unescaped separator splits.
 *
 * Names without a dot or backslash, and tags without a comma or backslash (nearly all), are
 * written as they always were, so their series keep their keys. Before this rule a measurement's
 * dots and a tag's commas were written bare; such series are read as they were then (a stored
 * metric is split at its first dot: "node.temp.celsius" is measurement `node`), except the rare
 * stored name holding `\.`, `\,` or `\\`, which now reads as the escape. */
#ifndef FJ_METRIC_NAME_H
#define FJ_METRIC_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Writes src[0..n) to dst with every `sep` escaped and backslashes doubled where needed;
 * sep_follows: a separator is written right after it (a measurement before its field, a tag
 * before the next). dst has room for 2n bytes; returns the length written (no NUL). */
size_t fj_mname_escape(const char *src, size_t n, char sep, bool sep_follows, char *dst);

/* Reads the escaped text at src[0..n) up to its first unescaped sep, unescaped into dst (room for
 * n bytes). Returns the number of source bytes read (the separator's index, or n when there is
 * none); *out_n the length written to dst. */
size_t fj_mname_unescape(const char *src, size_t n, char sep, char *dst, size_t *out_n);

/* Whether src[0..n) must be escaped (it holds sep or a backslash). Inline, eight bytes a step:
 * every line asks, of names of a few bytes. */
static inline bool fj_mname_needs_escape(const char *src, size_t n, char sep)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    const uint64_t s = ones * (unsigned char)sep, b = ones * (unsigned char)'\\';
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, src + i, 8);
        uint64_t x = w ^ s, y = w ^ b; /* a zero byte where w holds sep or a backslash */
        if (((x - ones) & ~x & highs) | ((y - ones) & ~y & highs))
            return true;
    }
    for (; i < n; i++)
        if (src[i] == sep || src[i] == '\\')
            return true;
    return false;
}

#endif
