/* noderange.h — Sonar's HostnameRange, expanded exactly as Slurm's hostlist does, and the host-name
 * check shared by every decoder.
 *
 * Syntax: literal host-name text with bracket groups, each a comma list of numbers or lo-hi ranges:
 * `c[1-3,5]-[2-4].fox` gives 12 names, the first group varying slowest (c1-2.fox, c1-3.fox, ...).
 * Items expand in the order written. Zero padding is kept and, as in Slurm, the width of the low
 * bound governs: `gpu-[01-08]` gives gpu-01 .. gpu-08, `[8-10]` gives 8, 9, 10. Refused: low > high,
 * a number repeated within one bracket, nested or unclosed brackets, empty items, characters outside
 * the host-name set, and ranges expanding to more than the limit (a range is a few bytes of input
 * but can name millions of hosts). Thread-safe: no state outside the arguments. */
#ifndef FJ_NODERANGE_H
#define FJ_NODERANGE_H

#include "arena.h"
#include "fj_status.h"

#include <stdbool.h>
#include <stddef.h>

/* Most names one range may expand to (fj_noderange_expand). */
#define FJ_NODERANGE_MAX_NAMES 1000000
/* Longest host name (RFC 1035 presentation form without the trailing dot). */
#define FJ_HOSTNAME_MAX 253

/* True when s is a usable Sonar Hostname / Clustername: 1..253 bytes of ASCII letters, digits, '-'
 * and '.', made of nonempty dot-separated labels of at most 63 bytes. '_' is refused: no host or
 * cluster name in the real data uses it (only Slurm partition names do, and those are not host
 * names). */
bool fj_hostname_valid(const char *s);

/* Expands range into *out, an array of *n NUL-terminated names, all allocated from a (never
 * freed individually). Errors: FJ_EINVAL with err->message saying what is wrong and where (byte
 * offset into range), err->path left empty for the caller to fill; FJ_ETOOBIG when the range names
 * more hosts than the cap (checked before anything is generated); FJ_ENOMEM. On error *out and *n
 * are untouched; arena memory already used is not reclaimed. */
fj_status fj_noderange_expand(fj_arena *a, const char *range, char ***out, size_t *n, fj_err *err);

/* The same with an explicit cap on the number of names (1..FJ_NODERANGE_MAX_NAMES is sensible);
 * used by decoders that budget names across a whole envelope. */
fj_status fj_noderange_expand_max(fj_arena *a, const char *range, size_t max_names, char ***out,
                                  size_t *n, fj_err *err);

/* The inverse of expansion: compresses names[0..n) into range syntax, the form Slurm writes and
 * SSS calls aggregation="Range": `node5` .. `node23`, `node77` -> `node[5-23,77]`. The number is
 * the last run of digits of a name (`c1-[2-4].fox`); names that share the text around it share
 * one bracket. Zero padding is kept: `gpu-01` .. `gpu-08` -> `gpu-[01-08]`, `n8`, `n9`, `n10` ->
 * `n[8-10]`, and `n1` with `n01` (the same number twice) go to separate items. Items are joined
 * with ',' (outside brackets; commas inside belong to the range, as fj_hostpat reads them); a
 * group of one name is written plainly. The result is canonical, whatever order the names came
 * in: groups sorted by the text around the number (bytewise), numbers ascending, duplicates
 * dropped; fj_noderange_expand_list of it gives the distinct names in that order, and compressing
 * that gives the same string again. Every name must be a valid host name (FJ_EINVAL with
 * err->message naming it). *out is allocated from a ("" for n == 0). FJ_ENOMEM. */
fj_status fj_noderange_compress(fj_arena *a, const char *const *names, size_t n, char **out, fj_err *err);

/* Expands a comma-separated list of ranges (commas inside brackets belong to the range), as
 * fj_noderange_compress writes it: the names of every item in order, at most max_names in all
 * (FJ_ETOOBIG). "" gives no names. Errors as fj_noderange_expand_max; an empty item is FJ_EINVAL. */
fj_status fj_noderange_expand_list(fj_arena *a, const char *list, size_t max_names, char ***out, size_t *n,
                                   fj_err *err);

#endif
