/* log.h — one-line structured log messages on stderr (journald picks them up under systemd).
 * Thread-safe: each message is written with a single write(2). */
#ifndef FJ_LOG_H
#define FJ_LOG_H

typedef enum { FJ_LOG_DEBUG, FJ_LOG_INFO, FJ_LOG_WARN, FJ_LOG_ERROR } fj_log_level;

void fj_log_set_level(fj_log_level lvl);
void fj_log(fj_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes line as it is, without the "fjord warn: " prefix (a JSON line for a log shipper), when
 * lvl is logged; one write(2), cut at 4 KiB. */
void fj_log_raw(fj_log_level lvl, const char *line);

#define fj_info(...) fj_log(FJ_LOG_INFO, __VA_ARGS__)
#define fj_warn(...) fj_log(FJ_LOG_WARN, __VA_ARGS__)
#define fj_error(...) fj_log(FJ_LOG_ERROR, __VA_ARGS__)
#define fj_debug(...) fj_log(FJ_LOG_DEBUG, __VA_ARGS__)

#endif
