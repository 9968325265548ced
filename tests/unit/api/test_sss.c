/* Tests of api/sss.c's XML escaping (fj_xml_escape): every string the SSS export writes goes
 * through it, so any stored string must give well-formed XML. The export itself is tested end to
 * end by tests/integration/test_sss.py. */
#include "api/sss.h"

#include <criterion/criterion.h>
#include <string.h>

static void expect_escaped(const char *in, const char *want)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 16);
    cr_assert_eq(fj_xml_escape(&b, in), FJ_OK);
    cr_expect_str_eq(b.data ? b.data : "", want, "escaping \"%s\"", in);
    fj_buf_free(&b);
}

#define FFFD "\xEF\xBF\xBD"

Test(sss_xml, markup_characters)
{
    expect_escaped("plain node-1.fox", "plain node-1.fox");
    expect_escaped("<&>\"'", "&lt;&amp;&gt;&quot;&apos;");
    expect_escaped("a&amp;b", "a&amp;amp;b");
    expect_escaped("", "");
}

Test(sss_xml, characters_xml_forbids)
{
    expect_escaped("tab\tlf\ncr\r", "tab\tlf\ncr\r");
    expect_escaped("x\x01y\x1fz", "x" FFFD "y" FFFD "z");
    expect_escaped("nonchar \xEF\xBF\xBE \xEF\xBF\xBF", "nonchar " FFFD " " FFFD);
}

Test(sss_xml, utf8)
{
    expect_escaped("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    expect_escaped("bad \xFF end", "bad " FFFD " end");
    expect_escaped("overlong \xC0\x80", "overlong " FFFD FFFD);
    expect_escaped("surrogate \xED\xA0\x80", "surrogate " FFFD FFFD FFFD);
    expect_escaped("cut \xE2\x82", "cut " FFFD FFFD);
    expect_escaped("big \xF4\x90\x80\x80", "big " FFFD FFFD FFFD FFFD);
}
