/* tz.h — time zones read from the system's TZif files (/usr/share/zoneinfo, Debian's tzdata; the
 * TZDIR environment variable names another directory), for answers in a zone's local time.
 * Each zone is read once and kept for the life of the process; lookups never touch libc's TZ
 * state (no setenv, tzset or localtime), so any thread may use them at any time. */
#ifndef FJ_TZ_H
#define FJ_TZ_H

#include <stdint.h>

typedef struct fj_tz fj_tz;

/* The zone named `name` (an IANA name such as "Europe/Oslo"), read on first use; NULL when the name
 * is not acceptable (empty, longer than 127 bytes, a leading '/', "..", or characters other than
 * A-Z a-z 0-9 _ + - /) or no readable TZif file has that name. The result is never freed. */
const fj_tz *fj_tz_get(const char *name);

/* The zone's offset from UTC, in seconds east, at instant t (seconds since the epoch). Before the
 * first transition: the file's first local time type; after the last: the last transition's type
 * (Debian's files list transitions to 2037). */
int32_t fj_tz_offset(const fj_tz *z, int64_t t);

/* The first instant after t (seconds) at which the zone's offset changes; INT64_MAX when none. */
int64_t fj_tz_next_change(const fj_tz *z, int64_t t);

/* The same at t_ns nanoseconds since the epoch (floored to the second). */
int32_t fj_tz_offset_ns(const fj_tz *z, int64_t t_ns);

#endif
