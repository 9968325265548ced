/* Tests of api/influxql/parse.c (statements into a syntax tree, InfluxDB's error wording) and of
 * the answer's time and number texts (api/influxql/cond.c). */
#include "api/influxql/iq_int.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

typedef struct parsed {
    fj_arena *a;
    iq_regs regs;
    iq_stmt *st;
    size_t n;
    char msg[512];
    bool ok;
} parsed;

static parsed *parse(const char *q)
{
    parsed *p = calloc(1, sizeof *p);
    p->a = fj_arena_create();
    p->ok = iq_parse(p->a, q, NULL, &p->regs, &p->st, &p->n, p->msg, sizeof p->msg);
    return p;
}

static void done(parsed *p)
{
    iq_regs_free(&p->regs);
    fj_arena_destroy(p->a);
    free(p);
}

Test(influxql_parse, a_grafana_panel_query)
{
    parsed *p = parse("SELECT mean(\"value\") AS m FROM \"db\".\"autogen\".\"cpu_load\" WHERE (\"hostname\" =~ /^(a|b\\/c)$/)"
                      " AND time >= 1700000000000ms and time <= now() - 1h30m GROUP BY time(5m, -1m), \"hostname\""
                      " fill(previous) ORDER BY time DESC LIMIT 10 OFFSET 2 SLIMIT 3 SOFFSET 1 tz('UTC')");
    cr_assert(p->ok, "%s", p->msg);
    cr_assert_eq(p->n, 1);
    const iq_stmt *st = &p->st[0];
    cr_assert_eq(st->kind, IQS_SELECT);
    cr_assert_eq(st->nfields, 1);
    cr_assert_eq(st->fields[0].e->k, IQ_CALL);
    cr_assert_str_eq(st->fields[0].e->s, "mean");
    cr_assert_str_eq(st->fields[0].e->args[0]->s, "value");
    cr_assert_str_eq(st->fields[0].alias, "m");
    cr_assert_eq(st->nfrom, 1);
    cr_assert_str_eq(st->from[0].db, "db");
    cr_assert_str_eq(st->from[0].rp, "autogen");
    cr_assert_str_eq(st->from[0].name, "cpu_load");
    cr_assert(st->group_time);
    cr_assert_eq(st->every, 300000000000LL);
    cr_assert_eq(st->offset, -60000000000LL);
    cr_assert_eq(st->ngtags, 1);
    cr_assert_str_eq(st->gtags[0], "hostname");
    cr_assert_eq(st->fill, IQ_FILL_PREVIOUS);
    cr_assert(st->desc);
    cr_assert_eq(st->limit, 10);
    cr_assert_eq(st->off, 2);
    cr_assert_eq(st->slimit, 3);
    cr_assert_eq(st->soff, 1);
    cr_assert_str_eq(st->tz, "UTC");
    /* WHERE: AND at the top, the regex (an escaped slash is a slash) compiled */
    const iq_expr *w = st->where;
    cr_assert_eq(w->k, IQ_BIN);
    cr_assert_eq(w->op, IQ_AND);
    const iq_expr *re = w->l->l->r;
    cr_assert_eq(re->k, IQ_REGEX);
    cr_assert_str_eq(re->s, "^(a|b/c)$");
    cr_assert(fj_re_match(re->re, "b/c"));
    cr_assert_not(fj_re_match(re->re, "bc"));
    /* now() - 1h30m */
    const iq_expr *upper = w->r->r;
    cr_assert_eq(upper->k, IQ_BIN);
    cr_assert_eq(upper->op, IQ_SUB);
    cr_assert_eq(upper->l->k, IQ_NOW);
    cr_assert_eq(upper->r->dur, 5400000000000LL);
    done(p);
}

Test(influxql_parse, and_binds_tighter_than_or)
{
    parsed *p = parse("SELECT value FROM m WHERE a = 'x' OR b = 'y' AND c = 'z'");
    cr_assert(p->ok, "%s", p->msg);
    const iq_expr *w = p->st[0].where;
    cr_assert_eq(w->op, IQ_OR);
    cr_assert_eq(w->r->op, IQ_AND);
    done(p);
}

Test(influxql_parse, arithmetic_precedence)
{
    parsed *p = parse("SELECT a + b * 2 - 1 FROM m");
    cr_assert(p->ok, "%s", p->msg);
    const iq_expr *e = p->st[0].fields[0].e; /* (a + (b * 2)) - 1 */
    cr_assert_eq(e->op, IQ_SUB);
    cr_assert_eq(e->l->op, IQ_ADD);
    cr_assert_eq(e->l->r->op, IQ_MUL);
    done(p);
}

Test(influxql_parse, several_statements_and_show)
{
    parsed *p = parse("SHOW DATABASES; SHOW TAG VALUES FROM /cpu.*/ WITH KEY IN (\"host\", \"cpu\") WHERE host = 'a' LIMIT 5;"
                      " SHOW MEASUREMENTS WITH MEASUREMENT =~ /x/ ;");
    cr_assert(p->ok, "%s", p->msg);
    cr_assert_eq(p->n, 3);
    cr_assert_eq(p->st[0].kind, IQS_SHOW_DATABASES);
    cr_assert_eq(p->st[1].kind, IQS_SHOW_TAG_VALUES);
    cr_assert_eq(p->st[1].with_op, IQ_OR);
    cr_assert_eq(p->st[1].nkeys, 2);
    cr_assert_str_eq(p->st[1].keys[1], "cpu");
    cr_assert_not_null(p->st[1].from[0].re);
    cr_assert_eq(p->st[1].limit, 5);
    cr_assert_eq(p->st[2].kind, IQS_SHOW_MEASUREMENTS);
    cr_assert_eq(p->st[2].with_op, IQ_EQRE);
    done(p);
}

Test(influxql_parse, errors_in_influxdbs_words)
{
    parsed *p = parse("SELEC value FROM m");
    cr_assert_not(p->ok);
    cr_assert_str_eq(p->msg, "error parsing query: found SELEC, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, "
                             "GRANT, REVOKE, ALTER, SET, KILL at line 1, char 1");
    done(p);
    p = parse("SELECT value FROM m WHERE host = 'a");
    cr_assert_not(p->ok);
    cr_assert(strstr(p->msg, "error parsing query: found"), "%s", p->msg);
    done(p);
    p = parse("SELECT mean(value) FROM m GROUP BY time(1m) fill(sideways)");
    cr_assert_not(p->ok);
    cr_assert(strstr(p->msg, "expected null, none, previous, linear or a number"), "%s", p->msg);
    done(p);
    p = parse("DROP MEASUREMENT m");
    cr_assert_not(p->ok);
    cr_assert(strstr(p->msg, "DROP is not supported"), "%s", p->msg);
    done(p);
    p = parse("SELECT value FROM m WHERE host =~ /(/");
    cr_assert_not(p->ok);
    cr_assert(strstr(p->msg, "invalid regular expression"), "%s", p->msg);
    done(p);
    p = parse("SELECT value\nFROM m LIMIT x");
    cr_assert_not(p->ok);
    cr_assert(strstr(p->msg, "at line 2, char 14"), "%s", p->msg);
    done(p);
}

Test(influxql_out, times_and_numbers)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 16);
    iq_ctx c = {.epoch = IQ_EPOCH_RFC3339};
    iq_put_time(&c, &b, 1700000000500000000LL);
    fj_buf_puts(&b, " ");
    iq_put_time(&c, &b, 0);
    fj_buf_puts(&b, " ");
    iq_put_time(&c, &b, -1);
    fj_buf_puts(&b, " ");
    c.epoch = IQ_EPOCH_S;
    iq_put_time(&c, &b, -1);
    fj_buf_puts(&b, " ");
    c.epoch = IQ_EPOCH_MS;
    iq_put_time(&c, &b, 1700000000123456789LL);
    fj_buf_puts(&b, " ");
    iq_put_num(&b, 2.3333333333333335);
    fj_buf_puts(&b, " ");
    iq_put_num(&b, 3);
    fj_buf_puts(&b, " ");
    iq_put_num(&b, NAN);
    cr_assert_str_eq(b.data, "\"2023-11-14T22:13:20.5Z\" \"1970-01-01T00:00:00Z\" \"1969-12-31T23:59:59.999999999Z\" -1 "
                             "1700000000123 2.3333333333333335 3 null");
    fj_buf_free(&b);
}

Test(influxql_parse, costly_regexes_and_long_sources_are_refused)
{
    /* found by fuzz_influxql: stacked repetitions make glibc's regcomp take gigabytes */
    parsed *p = parse("SHOW SERIES FROM /cpU*U+++++++++++++++++++++++++U/");
    cr_assert_not(p->ok);
    cr_assert(strstr(p->msg, "nested repetition"), "%s", p->msg);
    done(p);
    /* PCRE2 copies a counted group: past its compiled size it refuses, and says so */
    p = parse("SELECT value FROM m WHERE host =~ /(((ab){1000}){1000})/");
    cr_assert_not(p->ok);
    cr_assert(strstr(p->msg, "too large"), "%s", p->msg);
    done(p);
    p = parse("SELECT value FROM m WHERE host =~ /a{1001}/");
    cr_assert_not(p->ok);
    cr_assert(strstr(p->msg, "invalid repeat count"), "%s", p->msg);
    done(p);
    p = parse("SELECT value FROM m WHERE host =~ /^node[0-9]+-gpu[0-9]{1,2}[+*]$/");
    cr_assert(p->ok, "%s", p->msg);
    done(p);
    /* found by fuzz_influxql: empty policies past db.rp.m overflowed the source's parts */
    p = parse("SELECT * FROM cpu_l.....oad");
    cr_assert_not(p->ok);
    done(p);
    p = parse("SELECT * FROM db..m");
    cr_assert(p->ok, "%s", p->msg);
    cr_assert_str_eq(p->st[0].from[0].db, "db");
    cr_assert_str_eq(p->st[0].from[0].name, "m");
    done(p);
}

/* A parse of `prefix` + n x `unit` + `suffix`. */
static parsed *parse_repeated(const char *prefix, const char *unit, size_t n, const char *mid, const char *unit2,
                              const char *suffix)
{
    size_t lp = strlen(prefix), lu = strlen(unit), lm = strlen(mid), l2 = strlen(unit2), ls = strlen(suffix);
    char *q = malloc(lp + n * (lu + l2) + lm + ls + 1), *o = q;
    memcpy(o, prefix, lp), o += lp;
    for (size_t i = 0; i < n; i++)
        memcpy(o, unit, lu), o += lu;
    memcpy(o, mid, lm), o += lm;
    for (size_t i = 0; i < n; i++)
        memcpy(o, unit2, l2), o += l2;
    memcpy(o, suffix, ls + 1);
    parsed *p = parse(q);
    free(q);
    return p;
}

static void expect_too_deep(parsed *p)
{
    cr_assert_not(p->ok);
    cr_assert(strstr(p->msg, "error parsing query: expression nested more than 256 levels deep"), "%s", p->msg);
    done(p);
}

Test(influxql_parse, nesting_is_bounded)
{
    /* 45,000 parentheses overflowed a worker's stack; now the parser stops at 256 */
    expect_too_deep(parse_repeated("SELECT value FROM m WHERE ", "(", 45000, "host = 'a'", ")", ""));
    /* a chain is built in a loop, but its tree is as deep: the evaluators would recurse */
    expect_too_deep(parse_repeated("SELECT value FROM m WHERE host = 'a'", " OR host = 'b'", 300, "", "", ""));
    expect_too_deep(parse_repeated("SELECT value FROM m WHERE x = 1", " + 1", 300, "", "", ""));
    /* calls inside calls (derivative(mean(...)) nests two) */
    expect_too_deep(parse_repeated("SELECT ", "abs(", 300, "value", ")", " FROM m"));
    /* just under the bound: still a query */
    parsed *p = parse_repeated("SELECT value FROM m WHERE ", "(", 200, "host = 'a'", ")", "");
    cr_assert(p->ok, "%s", p->msg);
    cr_assert_eq(p->st[0].where->height, 2); /* parentheses add no node */
    done(p);
    p = parse_repeated("SELECT value FROM m WHERE host = 'a'", " OR host = 'b'", 200, "", "", "");
    cr_assert(p->ok, "%s", p->msg);
    cr_assert_eq(p->st[0].where->height, 202);
    done(p);
    /* a unary minus takes a number only: "- - 1" is refused, not recursed into */
    p = parse("SELECT value FROM m WHERE x = - - 1");
    cr_assert_not(p->ok);
    done(p);
}

Test(influxql_parse, regexes_read_as_influxdb_reads_them)
{
    parsed *p = parse("SELECT value FROM m WHERE host =~ /(?i)^NODE\\d+$/ AND gpu !~ /\\d{2,}/");
    cr_assert(p->ok, "%s", p->msg);
    const iq_expr *w = p->st[0].where;
    cr_assert(fj_re_match(w->l->r->re, "node42"));
    cr_assert(fj_re_match(w->l->r->re, "Node7"));
    cr_assert_not(fj_re_match(w->l->r->re, "node4x"));
    cr_assert_not(fj_re_match(w->l->r->re, "node4\n"), "$ is the end of the text, as in Go");
    cr_assert(fj_re_match(w->r->r->re, "gpu10"));
    cr_assert_not(fj_re_match(w->r->r->re, "gpu1"));
    done(p);
    p = parse("SELECT value FROM m WHERE host =~ /a**/");
    cr_assert_not(p->ok);
    cr_assert(strstr(p->msg, "invalid regular expression /a**/: invalid nested repetition operator"), "%s", p->msg);
    done(p);
    p = parse("SELECT value FROM m WHERE host =~ /(a/");
    cr_assert_not(p->ok);
    cr_assert(strstr(p->msg, "missing closing parenthesis"), "%s", p->msg);
    done(p);
}
