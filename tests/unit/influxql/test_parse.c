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
    p->ok = iq_parse(p->a, q, &p->regs, &p->st, &p->n, p->msg, sizeof p->msg);
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
    cr_assert_eq(regexec(re->re, "b/c", 0, NULL, 0), 0);
    cr_assert_neq(regexec(re->re, "bc", 0, NULL, 0), 0);
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
    p = parse("SELECT value FROM m WHERE host =~ /((a{1000}){1000})/");
    cr_assert_not(p->ok);
    cr_assert(strstr(p->msg, "too many repetitions"), "%s", p->msg);
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
