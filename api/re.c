/* re.c — regular expressions through PCRE2 (api/re.h): compiled in UTF mode under a compile
 * context that bounds the pattern, matched under a match context that bounds the work. PCRE2
 * replaced glibc's regcomp, which lacked RE2's syntax ((?i), \d) and bounded nothing: a stacked
 * repetition made it take gigabytes, and its backtracking had no limit. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "api/re.h"

#include "alloc.h"

#include <ctype.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FJ_RE_XSTR(x) #x
#define FJ_RE_STR(x) FJ_RE_XSTR(x)

struct fj_re {
    pcre2_code *code;
    pcre2_match_data *md;
    pcre2_match_context *mc;
    const char *failure; /* a static text; NULL while no match failed */
    char pattern[];
};

/* A {m}, {m,} or {m,n} count at p ('{'): its largest count (m for {m,}) and the '}', or -1 when
 * the brace is a literal, as RE2 and PCRE2 read a brace that starts no count. */
static long brace_count(const char *p, const char **end)
{
    const char *q = p + 1;
    if (!isdigit((unsigned char)*q))
        return -1;
    long lo = strtol(q, (char **)&q, 10), hi = lo;
    if (*q == ',') {
        q++;
        if (isdigit((unsigned char)*q))
            hi = strtol(q, (char **)&q, 10);
    }
    if (*q != '}')
        return -1;
    *end = q;
    return hi > lo ? hi : lo;
}

/* What RE2 (InfluxDB's engine) refuses and PCRE2 would accept, so a query does what it does
 * against InfluxDB: a repetition of a repetition (a**, a+*; the possessive a++ is PCRE2's own),
 * and a count above 1000. A single ? after a repetition makes it lazy, which both allow. NULL
 * when acceptable, else why. */
static const char *re2_refuses(const char *p)
{
    int rep = 0; /* 1: right after a repetition; 2: after its lazy ? */
    bool in_class = false;
    bool opened = false; /* right after an unescaped ( */
    for (; *p; p++) {
        bool after_open = opened;
        opened = false;
        if (*p == '\\' && p[1]) {
            p++;
            rep = 0;
            continue;
        }
        if (in_class) { /* inside [...] nothing repeats */
            in_class = *p != ']';
            continue;
        }
        const char *end = p;
        long count = *p == '{' ? brace_count(p, &end) : -1;
        bool q = *p == '*' || *p == '+' || *p == '?' || count >= 0;
        if (q && rep == 1 && *p == '?') {
            rep = 2;
            continue;
        }
        if (q && rep)
            return "invalid nested repetition operator";
        if (count > FJ_RE_MAX_REPEAT)
            return "invalid repeat count";
        rep = q && !after_open ? 1 : 0; /* (? and (* open a group's options or a verb */
        opened = *p == '(';
        p = end;
        if (*p == '[') {
            in_class = true;
            if (p[1] == '^')
                p++;
            if (p[1] == ']') /* a leading ] is a member */
                p++;
        }
    }
    return NULL;
}

static void compile_error(int code, size_t offset, char *msg, size_t cap)
{
    PCRE2_UCHAR m[160];
    if (pcre2_get_error_message(code, m, sizeof m) < 0)
        snprintf((char *)m, sizeof m, "error %d", code);
    snprintf(msg, cap, "%s at offset %zu", (const char *)m, offset);
}

static pcre2_code *compile(const char *pattern, char *msg, size_t cap)
{
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    if (!cc) {
        snprintf(msg, cap, "out of memory");
        return NULL;
    }
    pcre2_set_max_pattern_length(cc, FJ_RE_MAX_PATTERN);
    pcre2_set_parens_nest_limit(cc, FJ_RE_MAX_NEST);
    /* Go's rules: $ only at the very end; \C (one byte of a UTF-8 character) never. A subject
     * that is not valid UTF-8 is matched as far as it is, not refused. */
    uint32_t opts = PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C | PCRE2_MATCH_INVALID_UTF;
    int code = 0;
    PCRE2_SIZE off = 0;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts, &code, &off, cc);
    pcre2_compile_context_free(cc);
    if (!c)
        compile_error(code, (size_t)off, msg, cap);
    return c;
}

fj_re *fj_re_compile(const char *pattern, char *msg, size_t cap)
{
    size_t n = strlen(pattern);
    if (n > FJ_RE_MAX_PATTERN) {
        snprintf(msg, cap, "pattern longer than %d bytes", FJ_RE_MAX_PATTERN);
        return NULL;
    }
    const char *why = re2_refuses(pattern);
    if (why) {
        snprintf(msg, cap, "%s", why);
        return NULL;
    }
    fj_re *re = fj_calloc(1, sizeof *re + n + 1);
    if (!re) {
        snprintf(msg, cap, "out of memory");
        return NULL;
    }
    memcpy(re->pattern, pattern, n + 1);
    if (!(re->code = compile(pattern, msg, cap)))
        goto fail;
    re->md = pcre2_match_data_create_from_pattern(re->code, NULL);
    re->mc = pcre2_match_context_create(NULL);
    if (!re->md || !re->mc) {
        snprintf(msg, cap, "out of memory");
        goto fail;
    }
    pcre2_set_match_limit(re->mc, FJ_RE_MATCH_LIMIT);
    pcre2_set_depth_limit(re->mc, FJ_RE_DEPTH_LIMIT);
    pcre2_set_heap_limit(re->mc, FJ_RE_HEAP_KIB);
    return re;
fail:
    fj_re_free(re);
    return NULL;
}

static const char *failure_of(int rc)
{
    switch (rc) {
    case PCRE2_ERROR_MATCHLIMIT: return "it exceeded the match limit of " FJ_RE_STR(FJ_RE_MATCH_LIMIT) " steps";
    case PCRE2_ERROR_DEPTHLIMIT: return "it exceeded the depth limit of " FJ_RE_STR(FJ_RE_DEPTH_LIMIT) " frames";
    case PCRE2_ERROR_HEAPLIMIT: return "it exceeded the memory limit of " FJ_RE_STR(FJ_RE_HEAP_KIB) " KiB";
    case PCRE2_ERROR_NOMEMORY: return "out of memory";
    default: return "the match failed";
    }
}

bool fj_re_match(fj_re *re, const char *s)
{
    if (re->failure)
        return false;
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, strlen(s), 0, 0, re->md, re->mc);
    if (rc >= 0)
        return true;
    if (rc != PCRE2_ERROR_NOMATCH)
        re->failure = failure_of(rc);
    return false;
}

const char *fj_re_failure(const fj_re *re)
{
    return re->failure;
}

const char *fj_re_pattern(const fj_re *re)
{
    return re->pattern;
}

void fj_re_free(fj_re *re)
{
    if (!re)
        return;
    pcre2_match_context_free(re->mc);
    pcre2_match_data_free(re->md);
    pcre2_code_free(re->code);
    fj_free(re);
}
