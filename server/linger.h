/* linger.h — the lingering close: a connection answered before its request body was read is not
 * closed at once. Its sending side is shut down (the answer ends with FIN), and what the client
 * still sends is read and thrown away until it closes its side, for at most a time and an amount,
 * then the socket is closed.
 *
 * Why: closing a TCP socket that still has unread bytes makes the kernel send RST. A client still
 * sending its body (curl without Expect: 100-continue) then fails its next send with "connection
 * reset" before it reads the answer waiting for it (a 401 or 413 becomes curl exit 55). nginx
 * (lingering_close) and Apache do the same. The sockets handed over here are duplicates taken
 * just before libmicrohttpd closes its own descriptor (conn_guard.c), so the socket outlives the
 * connection without libmicrohttpd knowing. */
#ifndef FJ_LINGER_H
#define FJ_LINGER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct fj_linger fj_linger;

typedef struct fj_linger_limits {
    unsigned timeout_ms; /* per socket, from the hand-over */
    size_t max_bytes;    /* read and discarded per socket; past it the socket is closed */
    unsigned max_socks;  /* lingering at once; past it a socket is closed at once */
} fj_linger_limits;

/* Starts the thread that reads the lingering sockets. NULL when out of memory or the thread or its
 * epoll instance cannot start. */
fj_linger *fj_linger_start(const fj_linger_limits *lim);

/* Takes fd (a connected TCP socket) in every case: it lingers, or when the table is full or the
 * module stopping it is closed at once (false). Any thread. */
bool fj_linger_add(fj_linger *l, int fd);

/* Sockets lingering now. */
unsigned fj_linger_count(fj_linger *l);

/* Stops the thread and closes every socket still lingering. NULL is a no-op. */
void fj_linger_free(fj_linger *l);

#endif
