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

#endif
