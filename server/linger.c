/* linger.c — lingering sockets in a fixed table, read by one thread through epoll. */
#include "server/linger.h"

#include "alloc.h"
#include "timefmt.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct slot {
    int fd;             /* -1: free */
    uint32_t gen;       /* bumped at each reuse: an event names slot and generation */
    int64_t due_ns;     /* closed at this time whatever the client does */
    size_t bytes;       /* discarded so far */
} slot;

struct fj_linger {
    fj_linger_limits lim;
    int ep;
    pthread_mutex_t mu;
    slot *slots;
    unsigned used;
    atomic_bool stopping;
    bool started;
    pthread_t thread;
};

static uint64_t event_key(unsigned i, uint32_t gen)
{
    return (uint64_t)gen << 32 | i;
}

/* Called with l->mu held. */
static void release(fj_linger *l, slot *s)
{
    epoll_ctl(l->ep, EPOLL_CTL_DEL, s->fd, NULL);
    close(s->fd);
    s->fd = -1;
    l->used--;
}

bool fj_linger_add(fj_linger *l, int fd)
{
    if (!l || atomic_load(&l->stopping)) {
        close(fd);
        return false;
    }
    /* The answer is out (or in the send buffer): FIN after it tells the client nothing more
     * comes, while reading stays open so its body can still land somewhere. */
    shutdown(fd, SHUT_WR);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    pthread_mutex_lock(&l->mu);
    slot *s = NULL;
    unsigned i = 0;
    for (; l->used < l->lim.max_socks && i < l->lim.max_socks; i++)
        if (l->slots[i].fd < 0) {
            s = &l->slots[i];
            break;
        }
    bool ok = false;
    if (s) {
        s->fd = fd;
        s->gen++;
        s->bytes = 0;
        s->due_ns = fj_mono_ns() + (int64_t)l->lim.timeout_ms * 1000000LL;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.u64 = event_key(i, s->gen)};
        ok = epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev) == 0;
        if (ok)
            l->used++;
        else
            s->fd = -1;
    }
    pthread_mutex_unlock(&l->mu);
    if (!ok)
        close(fd);
    return ok;
}

/* Reads what s has (discarding it); true when s is done with: the client closed, an error, or the
 * byte limit. Called with l->mu held. */
static bool drain(fj_linger *l, slot *s)
{
    static _Thread_local char sink[64 * 1024];
    for (;;) {
        ssize_t n = recv(s->fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n > 0) {
            s->bytes += (size_t)n;
            if (s->bytes >= l->lim.max_bytes)
                return true;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    }
}

static void handle_events(fj_linger *l, const struct epoll_event *ev, int n)
{
    pthread_mutex_lock(&l->mu);
    for (int k = 0; k < n; k++) {
        unsigned i = (unsigned)(ev[k].data.u64 & 0xffffffffu);
        uint32_t gen = (uint32_t)(ev[k].data.u64 >> 32);
        slot *s = i < l->lim.max_socks ? &l->slots[i] : NULL;
        if (s && s->fd >= 0 && s->gen == gen && drain(l, s))
            release(l, s);
    }
    pthread_mutex_unlock(&l->mu);
}

/* Closes the sockets past their time (all of them when stopping). */
static void sweep(fj_linger *l, bool all)
{
    int64_t now = fj_mono_ns();
    pthread_mutex_lock(&l->mu);
    for (unsigned i = 0; i < l->lim.max_socks && l->used; i++)
        if (l->slots[i].fd >= 0 && (all || now >= l->slots[i].due_ns))
            release(l, &l->slots[i]);
    pthread_mutex_unlock(&l->mu);
}

static void *linger_main(void *arg)
{
    fj_linger *l = arg;
    struct epoll_event ev[64];
    while (!atomic_load(&l->stopping)) {
        int n = epoll_wait(l->ep, ev, 64, 100);
        if (n > 0)
            handle_events(l, ev, n);
        sweep(l, false);
    }
    sweep(l, true);
    return NULL;
}

fj_linger *fj_linger_start(const fj_linger_limits *lim)
{
    fj_linger *l = fj_calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->lim = *lim;
    if (!l->lim.max_socks)
        l->lim.max_socks = 1;
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    l->slots = fj_calloc(l->lim.max_socks, sizeof *l->slots);
    pthread_mutex_init(&l->mu, NULL);
    if (l->slots)
        for (unsigned i = 0; i < l->lim.max_socks; i++)
            l->slots[i].fd = -1;
    if (l->ep < 0 || !l->slots || pthread_create(&l->thread, NULL, linger_main, l) != 0) {
        fj_linger_free(l);
        return NULL;
    }
    l->started = true;
    return l;
}

unsigned fj_linger_count(fj_linger *l)
{
    if (!l)
        return 0;
    pthread_mutex_lock(&l->mu);
    unsigned n = l->used;
    pthread_mutex_unlock(&l->mu);
    return n;
}

void fj_linger_free(fj_linger *l)
{
    if (!l)
        return;
    atomic_store(&l->stopping, true);
    if (l->started)
        pthread_join(l->thread, NULL);
    else if (l->slots)
        sweep(l, true);
    if (l->ep >= 0)
        close(l->ep);
    pthread_mutex_destroy(&l->mu);
    fj_free(l->slots);
    fj_free(l);
}
