/* timefmt.h — the time formats fjord reads and writes. All times inside fjord are fj_time:
 * seconds since 1970-01-01T00:00:00Z; 0 means "unknown" (no producer reports the epoch itself). */
#ifndef FJ_TIMEFMT_H
#define FJ_TIMEFMT_H

#include "fj_status.h"

#include <stdint.h>

typedef int64_t fj_time;

/* Parses Sonar's Timestamp: yyyy-mm-ddThh:mm:ss followed by Z or ±hh:mm, no fractional seconds.
 * Rejects impossible dates (Feb 30, hour 24, offsets past ±23:59). strict=0 also accepts a
 * fractional-second part (discarded) and a lower-case t/z, for the query API. */
fj_status fj_time_parse_rfc3339(const char *s, int strict, fj_time *out);

/* Parses a query-parameter time: RFC 3339 (lenient) or integer epoch seconds. */
fj_status fj_time_parse_param(const char *s, fj_time *out);

/* Writes t as yyyy-mm-ddThh:mm:ssZ into out (at least 21 bytes). */
void fj_time_format(fj_time t, char out[21]);

/* Days since 1970-01-01 of a proleptic Gregorian date (no validation). */
int64_t fj_days_from_civil(int64_t y, unsigned m, unsigned d);

/* Current wall-clock time in seconds, and monotonic time in nanoseconds. */
fj_time fj_time_now(void);
int64_t fj_mono_ns(void);

#endif
