/* daemon.h — the run modes of fjord-push.
 *   once:   collect the requested kinds, print them (--stdout) or queue and send them with a few
 *           bounded retries, and exit.
 *   daemon: samples at clock-aligned multiples of sample_interval; sysinfo at start and every
 *           sysinfo_interval; the network topology at start and whenever a check (every
 *           topology_interval) finds it changed. Collection happens on the aligned tick; sending
 *           waits a random 0..send_jitter seconds so a thousand nodes do not hit the server in the
 *           same second. Failed sends stay in the spool and are retried with exponential backoff
 *           (1 s doubling to 5 min, with jitter), never sooner than the server's Retry-After.
 * Both return the process exit status. SIGTERM/SIGINT end the daemon after the current step. */
#ifndef FJ_PUSH_DAEMON_H
#define FJ_PUSH_DAEMON_H

#include "config.h"
#include "timefmt.h"

int fj_push_once(const fj_push_config *cfg);
int fj_push_daemon(const fj_push_config *cfg);

/* The first multiple of interval strictly after t (clock alignment). */
fj_time fj_next_aligned(fj_time t, long interval);

/* Backoff after `failures` consecutive failures: 2^(failures-1) s capped at 300 s, never less than
 * retry_after; jitter in [0,1) spreads it by up to a quarter. */
long fj_backoff(unsigned failures, long retry_after, double jitter);

#endif
