/* test_metric_name.c — the escapes of measurements and folded tags in series keys
 * (ingest/metric_name.h): written and read back exactly, names without a separator or backslash
 * written as they are, and the names stored before the rule read as they were. */
#include "ingest/metric_name.h"

#include <criterion/criterion.h>

#include <string.h>

static const char *esc(const char *s, char sep, bool follows)
{
    static char out[256];
    out[fj_mname_escape(s, strlen(s), sep, follows, out)] = '\0';
    return out;
}

/* The first item of the escaped text s up to an unescaped sep, and where it ended. */
static const char *first(const char *s, char sep, size_t *used)
{
    static char out[256];
    size_t n;
    *used = fj_mname_unescape(s, strlen(s), sep, out, &n);
    out[n] = '\0';
    return out;
}

Test(metric_name, plain_names_are_written_as_they_are)
{
    cr_expect_str_eq(esc("cpu_load", '.', false), "cpu_load");
    cr_expect_str_eq(esc("C:\\dir", ',', true), "C:\\dir", "a backslash before a letter stays single");
    cr_expect(!fj_mname_needs_escape("cpu_load", 8, '.'));
    cr_expect(fj_mname_needs_escape("node.temp", 9, '.'));
    cr_expect(fj_mname_needs_escape("a\\b", 3, '.'));
}

Test(metric_name, escaped_and_read_back)
{
    static const char *const names[] = {"node.temp", "ib.rcv_bytes", "a..b", ".x", "x.", "a\\", "a\\.b", "a\\\\b",
                                        "\\", "/scratch/a,b", "a=b c", ""};
    for (int sep = 0; sep < 2; sep++) {
        char c = sep ? ',' : '.';
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            for (int follows = 0; follows < 2; follows++) {
                char stored[256];
                size_t n = fj_mname_escape(names[i], strlen(names[i]), c, follows, stored);
                if (follows)
                    stored[n++] = c, memcpy(stored + n, "rest", 5);
                else
                    stored[n] = '\0';
                size_t used;
                cr_expect_str_eq(first(stored, c, &used), names[i], "%s (sep %c, %d): stored %s", names[i], c, follows,
                                 stored);
                cr_expect_eq(used, follows ? n - 1 : n, "%s: the separator found", names[i]);
            }
    }
}

Test(metric_name, a_plain_line_splits_at_the_first_unescaped_dot)
{
    size_t used;
    cr_expect_str_eq(first("node\\.temp.celsius", '.', &used), "node.temp");
    cr_expect_eq(used, 10);
    /* stored before the rule: bare dots, split at the first as then */
    cr_expect_str_eq(first("node.temp.celsius", '.', &used), "node");
    cr_expect_eq(used, 4);
    cr_expect_str_eq(first("ib\\.rcv_bytes", '.', &used), "ib.rcv_bytes", "a ClusterCockpit metric: no field");
    cr_expect_eq(used, 13);
    cr_expect_str_eq(first("C:\\dir,x", ',', &used), "C:\\dir");
}
