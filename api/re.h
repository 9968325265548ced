/* re.h — the server's one regular-expression engine: PCRE2 in UTF mode, with every cost bounded.
 * A pattern is refused past FJ_RE_MAX_PATTERN bytes or FJ_RE_MAX_NEST nested groups; a match
 * stops after FJ_RE_MATCH_LIMIT steps, FJ_RE_DEPTH_LIMIT backtracking frames or FJ_RE_HEAP_KIB
 * KiB of backtracking memory, and is then an error for its query rather than a hang.
 *
 * The syntax is Go's RE2 as InfluxDB reads it, where PCRE2 agrees ((?i), \d, \w, \s, [[:alpha:]],
 * lazy *?, {m,n} up to 1000); $ matches only at the very end, as in Go. What RE2 refuses and
 * PCRE2 would take (a repetition of a repetition such as a** or the possessive a++) is refused
 * here too, so a query behaves as it would against InfluxDB. Back-references and look-arounds
 * are PCRE2's own; bounded like the rest. */
#ifndef FJ_RE_H
#define FJ_RE_H

#include <stdbool.h>
#include <stddef.h>

#define FJ_RE_MAX_PATTERN 32768  /* bytes of one pattern */
#define FJ_RE_MAX_NEST 250       /* nested parentheses in one pattern */
#define FJ_RE_MAX_REPEAT 1000    /* the largest {m,n} count (RE2's) */
#define FJ_RE_MATCH_LIMIT 100000 /* backtracking steps of one match (PCRE2's match limit) */
#define FJ_RE_DEPTH_LIMIT 10000  /* nested backtracking frames of one match */
#define FJ_RE_HEAP_KIB 4096      /* memory of one match's backtracking frames */

typedef struct fj_re fj_re;

/* Compiles pattern (NUL-terminated, UTF-8). NULL when it is refused or out of memory, with why in
 * msg ("missing closing parenthesis at offset 3", "pattern longer than 32768 bytes"). Free with
 * fj_re_free. */
fj_re *fj_re_compile(const char *pattern, char *msg, size_t cap);

/* Whether s matches anywhere (unanchored, as InfluxDB's =~). A match that hits a limit counts as
 * no match and marks re as failed; a failed re answers false at once from then on, so a query
 * over many series pays the limit once. Not thread-safe: one re is used by one thread at a time. */
bool fj_re_match(fj_re *re, const char *s);

/* Why re failed while matching ("the match limit of 100000 steps"), or NULL while it has not. */
const char *fj_re_failure(const fj_re *re);

/* The pattern as compiled. */
const char *fj_re_pattern(const fj_re *re);

void fj_re_free(fj_re *re);

#endif
