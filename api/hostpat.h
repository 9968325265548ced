/* hostpat.h — host patterns of the query API: comma-separated items, each a Slurm node range
 * (`c1-[1-8,10]`, expanded by ingest/noderange.h with Slurm's padding rules) and/or `*`
 * wildcards (`gpu-*`, `c[1-2]-*`). An item matches a node name whole, or the name's leading
 * dot-separated labels (`ml1` matches `ml1.hpc.uio.no`), as sonalyze does. Pure: no I/O; a
 * compiled set lives in the caller's arena and is read-only, so it may be shared by threads. */
#ifndef FJ_HOSTPAT_H
#define FJ_HOSTPAT_H

#include "arena.h"
#include "fj_status.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct fj_hostpat fj_hostpat;

/* Most exact names plus wildcard patterns one set may expand to. */
#define FJ_HOSTPAT_MAX 100000

/* Compiles specs[0..n) (each a comma-separated list; commas inside brackets belong to the range)
 * into *out. FJ_EINVAL with err->message saying which item and why (err->path left for the
 * caller); FJ_ETOOBIG past FJ_HOSTPAT_MAX names; FJ_ENOMEM. */
fj_status fj_hostpat_compile(fj_arena *a, const char *const *specs, size_t n, fj_hostpat **out, fj_err *err);

/* Does name match any item? */
bool fj_hostpat_match(const fj_hostpat *p, const char *name);

/* `*` matches any run of characters (also empty); everything else matches itself. */
bool fj_glob_match(const char *pat, const char *s);

#endif
