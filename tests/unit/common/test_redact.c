/* Tests of common/redact.c: every credential form a connection string can carry is hidden, the
 * rest is shown as it is, and a cut output never shows what was hidden. */
#include "redact.h"

#include <criterion/criterion.h>
#include <string.h>

static const char *red(const char *s)
{
    static char buf[512];
    return fj_redact_conn(s, buf, sizeof buf);
}

Test(redact, url_userinfo_password)
{
    cr_assert_str_eq(red("postgres://fj:S3cret@db.example.org:5433/fjord"),
                     "postgres://fj:***@db.example.org:5433/fjord");
    cr_assert_str_eq(red("postgresql://fj:@h/d"), "postgresql://fj:***@h/d");
    cr_assert_str_eq(red("postgres://fj@h/d"), "postgres://fj@h/d"); /* a user name is no secret */
    cr_assert_str_eq(red("postgres://h/d"), "postgres://h/d");
}

Test(redact, url_password_with_stray_separators)
{
    /* libpq cannot parse these, and shows them in its errors: nothing of the password may show */
    cr_assert_str_eq(red("postgres://fj:S3/cr?et@h/d"), "postgres://fj:***@h/d");
    cr_assert_str_eq(red("postgres://fj:S3@cret@h/d"), "postgres://fj:***@h/d");
    cr_assert_str_eq(red("postgres://fj:p%40ss@h/d"), "postgres://fj:***@h/d");
}

Test(redact, url_query_password)
{
    cr_assert_str_eq(red("postgres://fj@h/d?password=S3cret"), "postgres://fj@h/d?password=***");
    cr_assert_str_eq(red("postgres://h/d?sslmode=disable&password=S3cret&application_name=x"),
                     "postgres://h/d?sslmode=disable&password=***&application_name=x");
    cr_assert_str_eq(red("postgres://h/d?sslpassword=k&PASSWORD=p"), "postgres://h/d?sslpassword=***&PASSWORD=***");
    /* libpq percent-decodes parameter names */
    cr_assert_str_eq(red("postgres://h/d?pass%77ord=S3cret"), "postgres://h/d?pass%77ord=***");
    cr_assert_str_eq(red("postgres://fj:a@h/d?password=b"), "postgres://fj:***@h/d?password=***");
    /* an '@' in the query: the userinfo search covers it, the query's password is still hidden */
    cr_assert_eq(strstr(red("postgres://h/d?password=S3cret&application_name=a@b"), "S3cret"), NULL);
    cr_assert_eq(strstr(red("postgres://h:5432/d?password=S3cret&x=a@b"), "S3cret"), NULL);
}

Test(redact, conninfo_pairs)
{
    cr_assert_str_eq(red("host=h user=fj password=S3cret dbname=d"), "host=h user=fj password=*** dbname=d");
    cr_assert_str_eq(red("host=h password = 'S3 cr\\'et' dbname=d"), "host=h password = *** dbname=d");
    cr_assert_str_eq(red("password=S3\\ cret host=h"), "password=*** host=h");
    cr_assert_str_eq(red("host=h options='-c x=a://b' password=S3cret"), "host=h options='-c x=a://b' password=***");
}

Test(redact, other_strings_unchanged)
{
    cr_assert_str_eq(red("/var/lib/fjord/fjord.db"), "/var/lib/fjord/fjord.db");
    cr_assert_str_eq(red("file:fjord.db?mode=ro"), "file:fjord.db?mode=ro");
    cr_assert_str_eq(red("my dir/x.db"), "my dir/x.db");
    cr_assert_str_eq(red(""), "");
    char buf[8];
    cr_assert_str_eq(fj_redact_conn(NULL, buf, sizeof buf), "");
}

Test(redact, token_userinfo)
{
    cr_assert_str_eq(red("nats://T0ken@127.0.0.1:4222"), "nats://***@127.0.0.1:4222");
    cr_assert_str_eq(red("nats://u:pw@127.0.0.1:4222"), "nats://u:***@127.0.0.1:4222");
    cr_assert_str_eq(red("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
}

Test(redact, cut_output_never_shows_the_secret)
{
    const char *s = "postgres://fj:S3cretS3cretS3cret@h/d?password=S3cretS3cret";
    for (size_t cap = 1; cap < 80; cap++) {
        char buf[80];
        fj_redact_conn(s, buf, cap);
        cr_assert_lt(strlen(buf), cap);
        cr_assert_eq(strstr(buf, "S3c"), NULL, "cap %zu: %s", cap, buf);
    }
}
