/* test_linger.c — the lingering close: the peer sees the end of the answer at once, what it still
 * sends is taken until it closes, and the byte limit, the table's size and a stop close sockets.
 * Sockets are socket pairs; waits are bounded polls of the module's count, never timed checks. */
#include "server/linger.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static void pair(int sv[2])
{
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct timeval tv = {5, 0}; /* a read that would hang fails the test instead */
    setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(sv[1], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* Waits (at most 10 s) until l holds n sockets. */
static bool count_reaches(fj_linger *l, unsigned n)
{
    for (int i = 0; i < 1000; i++) {
        if (fj_linger_count(l) == n)
            return true;
        usleep(10000);
    }
    return false;
}

Test(linger, answer_ends_and_body_is_taken_until_the_client_closes)
{
    fj_linger_limits lim = {.timeout_ms = 60000, .max_bytes = 8 << 20, .max_socks = 4};
    fj_linger *l = fj_linger_start(&lim);
    cr_assert_not_null(l);
    int sv[2];
    pair(sv);
    cr_assert(fj_linger_add(l, sv[0]));
    char b[4096];
    cr_assert_eq(read(sv[1], b, sizeof b), 0, "the peer reads the end of the answer (FIN)");
    memset(b, 'x', sizeof b);
    for (int i = 0; i < 1024; i++) /* 4 MiB, more than a socket buffer holds: only reading makes room */
        cr_assert_eq(write(sv[1], b, sizeof b), (ssize_t)sizeof b, "the body is still taken (%d)", i);
    cr_assert_eq(fj_linger_count(l), 1);
    close(sv[1]);
    cr_assert(count_reaches(l, 0), "closed once the peer closed");
    fj_linger_free(l);
}

Test(linger, byte_limit_closes)
{
    fj_linger_limits lim = {.timeout_ms = 60000, .max_bytes = 64 * 1024, .max_socks = 4};
    fj_linger *l = fj_linger_start(&lim);
    int sv[2];
    pair(sv);
    cr_assert(fj_linger_add(l, sv[0]));
    char b[16 * 1024];
    memset(b, 'x', sizeof b);
    ssize_t n = 0;
    size_t sent = 0;
    for (int i = 0; i < 4096 && (n = send(sv[1], b, sizeof b, MSG_NOSIGNAL)) > 0; i++)
        sent += (size_t)n;
    cr_assert(n < 0 && (errno == EPIPE || errno == ECONNRESET), "the sender is cut off (%zd, %s)", n,
              strerror(errno));
    cr_assert_geq(sent, (size_t)64 * 1024, "not before the limit");
    cr_assert(count_reaches(l, 0));
    close(sv[1]);
    fj_linger_free(l);
}

Test(linger, time_limit_closes)
{
    fj_linger_limits lim = {.timeout_ms = 50, .max_bytes = 1 << 20, .max_socks = 4};
    fj_linger *l = fj_linger_start(&lim);
    int sv[2];
    pair(sv);
    cr_assert(fj_linger_add(l, sv[0]));
    cr_assert(count_reaches(l, 0), "a silent client's socket is closed after the time limit");
    close(sv[1]);
    fj_linger_free(l);
}

Test(linger, full_table_closes_at_once)
{
    fj_linger_limits lim = {.timeout_ms = 60000, .max_bytes = 1 << 20, .max_socks = 1};
    fj_linger *l = fj_linger_start(&lim);
    int a[2], b[2];
    pair(a);
    pair(b);
    cr_assert(fj_linger_add(l, a[0]));
    cr_assert_not(fj_linger_add(l, b[0]), "no room: closed at once");
    char c;
    cr_assert_eq(read(b[1], &c, 1), 0);
    cr_assert_eq(send(b[1], "x", 1, MSG_NOSIGNAL), -1, "the second socket is gone");
    cr_assert_eq(fj_linger_count(l), 1);
    fj_linger_free(l); /* closes the first */
    cr_assert_eq(send(a[1], "x", 1, MSG_NOSIGNAL), -1, "stopping closed what was lingering");
    close(a[1]);
    close(b[1]);
}

Test(linger, null_closes)
{
    int sv[2];
    pair(sv);
    cr_assert_not(fj_linger_add(NULL, sv[0]));
    cr_assert_eq(send(sv[1], "x", 1, MSG_NOSIGNAL), -1);
    close(sv[1]);
    fj_linger_free(NULL);
}
