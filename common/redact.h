/* redact.h — connection strings as they may be shown: in log lines, error messages and answers.
 * Every place that prints a database or message-bus address passes it through here first, so a
 * credential in it is never written anywhere.
 *
 * Thread-safety: reentrant. */
#ifndef FJ_REDACT_H
#define FJ_REDACT_H

#include <stddef.h>

/* What replaces a credential. */
#define FJ_REDACTED "***"

/* Writes s into out (cap > 0 bytes, always NUL-terminated; cut when longer) with every credential
 * that a connection string can carry replaced by FJ_REDACTED:
 *   - the password of a URL's userinfo: scheme://user:SECRET@host (the user name is kept; the
 *     userinfo ends at the string's last '@', so a password holding an unescaped '/', '?' or '@'
 *     is covered whole);
 *   - the value of every parameter whose name contains "password", case-insensitively, after
 *     percent-decoding the name as libpq does: in a URL's query (?password=SECRET,
 *     &sslpassword=SECRET, ?pass%77ord=SECRET; the value runs to the next '&' or '#') and in a
 *     key=value conninfo string (password=SECRET, password = 'se cret', quotes and backslash
 *     escapes as libpq reads them; the value runs to the next space).
 * Everything else is copied as it is. Returns out. Environment variables (PGPASSWORD) and
 * password files are never part of the string and are never read here. */
char *fj_redact_conn(const char *s, char *out, size_t cap);

#endif
