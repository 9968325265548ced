/* daemon.c — scheduling, queueing and delivery around the collector. */
#include "daemon.h"

#include "alloc.h"
#include "collect.h"
#include "log.h"
#include "send.h"
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

fj_time fj_next_aligned(fj_time t, long interval)
{
    if (interval <= 0)
        return t + 1;
    return (t / interval + 1) * interval;
}

long fj_backoff(unsigned failures, long retry_after, double jitter)
{
    long b = 300;
    if (failures == 0)
        b = 0;
    else if (failures <= 9)
        b = 1L << (failures - 1);
    if (b > 300)
        b = 300;
    b += (long)((double)b * 0.25 * jitter);
    return b > retry_after ? b : retry_after;
}

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static double rnd(void)
{
    return (double)random() / ((double)RAND_MAX + 1.0);
}

static void seed(void)
{
    unsigned s = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        unsigned r;
        if (read(fd, &r, sizeof r) == (ssize_t)sizeof r)
            s ^= r;
        close(fd);
    }
    srandom(s);
}

typedef enum { DOC_SYSINFO, DOC_SAMPLE, DOC_TOPOLOGY } doc_kind;
static const char *doc_names[] = {"sysinfo", "sample", "topology"};

/* Collects one document into json (reset first). FJ_ENOTFOUND: nothing to report. */
static fj_status collect(fj_collector *c, doc_kind k, fj_buf *json)
{
    fj_err err = {.code = ""};
    fj_buf_reset(json);
    fj_status st = k == DOC_SYSINFO  ? fj_collect_sysinfo(c, json, &err)
                   : k == DOC_SAMPLE ? fj_collect_sample(c, json, &err)
                                     : fj_collect_topology(c, json, &err);
    if (st == FJ_ENOTFOUND)
        fj_debug("no %s to report (no Mellanox/NVIDIA NIC found)", doc_names[k]);
    else if (st != FJ_OK)
        fj_error("%s collection failed: %s%s%s", doc_names[k], err.message[0] ? err.message : fj_status_name(st),
                 err.path[0] ? " at " : "", err.path);
    return st;
}

static fj_status enqueue(fj_spool *sp, doc_kind k, const fj_buf *json)
{
    fj_buf z;
    fj_buf_init(&z, (size_t)1 << 30);
    fj_status st = fj_zstd_compress(json->data, json->len, &z);
    if (st == FJ_OK)
        st = fj_spool_put(sp, k == DOC_TOPOLOGY ? FJ_ITEM_MEASUREMENT : FJ_ITEM_SONAR, z.data, z.len);
    if (st != FJ_OK)
        fj_error("cannot queue %s: %s", doc_names[k], fj_status_name(st));
    else
        fj_debug("queued %s: %zu bytes json, %zu compressed", doc_names[k], json->len, z.len);
    fj_buf_free(&z);
    return st;
}

/* Sends queued documents oldest first until the queue is empty (FJ_OK) or a send must be retried
 * later (that status, *retry_after from the server). Refused documents are dropped with an error. */
static fj_status drain(fj_sender *snd, fj_spool *sp, long *retry_after, unsigned *refused)
{
    *retry_after = 0;
    for (;;) {
        uint64_t id;
        fj_item_kind kind;
        char *data;
        size_t len;
        fj_status st = fj_spool_peek(sp, &id, &kind, &data, &len);
        if (st == FJ_ENOTFOUND)
            return FJ_OK;
        if (st != FJ_OK)
            return st;
        fj_err err = {.code = ""};
        st = fj_sender_post(snd, kind, data, len, retry_after, &err);
        fj_free(data);
        if (st == FJ_OK) {
            fj_spool_remove(sp, id);
            continue;
        }
        if (st == FJ_EINVAL) {
            fj_error("server refused a document for good, dropping it: %s (%s)", err.message, err.path);
            fj_spool_remove(sp, id);
            ++*refused;
            continue;
        }
        if (st == FJ_EAUTH)
            fj_error("not authorized: %s (%s); keeping data, check auth_file", err.message, err.path);
        else
            fj_warn("send failed, will retry: %s (%s)", err.message, err.path);
        return st;
    }
}

static fj_spool *open_spool(const fj_push_config *cfg)
{
    fj_spool *sp = NULL;
    fj_err err = {.code = ""};
    if (cfg->spool_dir && *cfg->spool_dir) {
        if (fj_spool_open(cfg->spool_dir, cfg->spool_max, &sp, &err) == FJ_OK)
            return sp;
        fj_warn("%s (%s): keeping unsent data in memory only", err.message, err.path);
    }
    return fj_spool_open(NULL, cfg->spool_max, &sp, &err) == FJ_OK ? sp : NULL;
}

static int print_doc(const fj_buf *json)
{
    return fwrite(json->data, 1, json->len, stdout) == json->len && fputc('\n', stdout) != EOF &&
                   fflush(stdout) == 0
               ? 0
               : -1;
}

int fj_push_once(const fj_push_config *cfg)
{
    fj_collector *c = fj_collector_new(cfg);
    if (!c) {
        fj_error("out of memory");
        return 1;
    }
    fj_spool *sp = cfg->to_stdout ? NULL : open_spool(cfg);
    fj_buf json;
    fj_buf_init(&json, (size_t)1 << 30);
    int rc = 0;
    if (!cfg->to_stdout && !sp)
        rc = 1;
    static const unsigned bits[] = {FJ_WHAT_SYSINFO, FJ_WHAT_SAMPLE, FJ_WHAT_TOPOLOGY};
    for (int k = 0; k < 3 && rc == 0; k++) {
        if (!(cfg->what & bits[k]))
            continue;
        fj_status st = collect(c, (doc_kind)k, &json);
        if (st == FJ_ENOTFOUND) {
            if (cfg->what == FJ_WHAT_TOPOLOGY)
                fj_info("no Mellanox/NVIDIA NIC found: no network topology to report");
            continue;
        }
        if (st != FJ_OK) {
            rc = 1;
            break;
        }
        if (cfg->to_stdout) {
            if (print_doc(&json) != 0)
                rc = 1;
        } else if (enqueue(sp, (doc_kind)k, &json) != FJ_OK) {
            rc = 1;
        }
    }
    fj_buf_free(&json);
    if (!cfg->to_stdout && sp) {
        fj_sender *snd = fj_sender_new(cfg);
        if (!snd) {
            fj_error("cannot start libcurl");
            rc = 1;
        }
        /* A few bounded attempts: a one-shot run must end, what is left stays in the spool dir. */
        for (unsigned attempt = 1; snd && attempt <= 4; attempt++) {
            long ra = 0;
            unsigned refused = 0;
            fj_status st = drain(snd, sp, &ra, &refused);
            if (refused)
                rc = 1;
            if (st == FJ_OK)
                break;
            if (attempt == 4 || st == FJ_EAUTH) {
                rc = 1;
                break;
            }
            long wait = fj_backoff(attempt, ra, rnd());
            if (wait > 30)
                wait = 30;
            sleep((unsigned)wait);
        }
        if (fj_spool_count(sp)) {
            rc = 1;
            fj_warn("%zu documents not delivered%s", fj_spool_count(sp),
                    cfg->spool_dir && *cfg->spool_dir ? " (kept in the spool if it is a directory)" : "");
        }
        fj_sender_free(snd);
    }
    fj_spool_close(sp);
    fj_collector_free(c);
    return rc;
}

/* The same clock the sleep uses. time() reads the kernel's coarse clock, which can lag
 * CLOCK_REALTIME by up to a tick: woken at an aligned second, the loop would still see the
 * second before and spin until the tick catches up (several ms of CPU per sample). */
static fj_time now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (fj_time)ts.tv_sec;
}

int fj_push_daemon(const fj_push_config *cfg)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: the sleep returns at once */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    seed();

    fj_collector *c = fj_collector_new(cfg);
    fj_spool *sp = cfg->to_stdout ? NULL : open_spool(cfg);
    fj_sender *snd = cfg->to_stdout ? NULL : fj_sender_new(cfg);
    if (!c || (!cfg->to_stdout && (!sp || !snd))) {
        fj_error("cannot start: out of memory or libcurl failure");
        fj_collector_free(c);
        fj_spool_close(sp);
        fj_sender_free(snd);
        return 1;
    }
    fj_info("fjord-push running: node %s, cluster %s, samples every %lds, sending to %s", cfg->node,
            cfg->cluster ? cfg->cluster : "", cfg->sample_interval, cfg->to_stdout ? "stdout" : cfg->url);
    fj_buf json;
    fj_buf_init(&json, (size_t)1 << 30);
    char *sent_topo = NULL;
    fj_time t = now_s();
    fj_time next_sysinfo = t, next_topo = t, next_sample = fj_next_aligned(t, cfg->sample_interval);
    const fj_time never = INT64_MAX;
    fj_time send_at = never, not_before = 0;
    unsigned failures = 0;
    while (!stopping) {
        t = now_s();
        int queued = 0;
        doc_kind due[3];
        int ndue = 0;
        if (t >= next_sysinfo) {
            due[ndue++] = DOC_SYSINFO;
            next_sysinfo = fj_next_aligned(t, cfg->sysinfo_interval);
        }
        if (t >= next_topo) {
            due[ndue++] = DOC_TOPOLOGY;
            next_topo = fj_next_aligned(t, cfg->topology_interval);
        }
        if (t >= next_sample) {
            due[ndue++] = DOC_SAMPLE;
            next_sample = fj_next_aligned(t, cfg->sample_interval);
        }
        int rare_doc = 0;
        for (int i = 0; i < ndue; i++) {
            rare_doc |= due[i] != DOC_SAMPLE;
            if (collect(c, due[i], &json) != FJ_OK)
                continue;
            if (due[i] == DOC_TOPOLOGY) {
                const char *key = fj_collector_topology_key(c);
                if (sent_topo && key && !strcmp(sent_topo, key))
                    continue; /* unchanged since last sent */
                fj_free(sent_topo);
                sent_topo = key ? fj_strdup(key) : NULL;
                fj_info("network topology changed or first seen: sending it");
            }
            if (cfg->to_stdout)
                print_doc(&json);
            else if (enqueue(sp, due[i], &json) == FJ_OK)
                queued = 1;
        }
        /* Sysinfo (hwloc topology, pictures of hundreds of KB on a big node) and topology documents
         * come hours apart and use far more memory than a sample: give it back after them rather
         * than keep it resident until the next one. */
        if (rare_doc || json.alloc > ((size_t)64 << 10)) {
            fj_buf_free(&json);
            fj_buf_init(&json, (size_t)1 << 30);
            malloc_trim(0);
        }
        if (queued && send_at == never)
            send_at = t + (fj_time)(rnd() * (double)cfg->send_jitter);
        if (sp && fj_spool_count(sp) && t >= send_at && t >= not_before) {
            long ra;
            unsigned refused = 0;
            fj_status st = drain(snd, sp, &ra, &refused);
            if (st == FJ_OK) {
                failures = 0;
                send_at = never;
            } else {
                failures++;
                /* Wrong credentials will not fix themselves quickly: retry at the slowest pace. */
                not_before = t + (st == FJ_EAUTH ? fj_backoff(9, ra, rnd()) : fj_backoff(failures, ra, rnd()));
            }
        }
        fj_time wake = next_sample;
        if (next_sysinfo < wake)
            wake = next_sysinfo;
        if (next_topo < wake)
            wake = next_topo;
        if (sp && fj_spool_count(sp)) {
            fj_time s = send_at > not_before ? send_at : not_before;
            if (s < wake)
                wake = s;
        }
        if (wake > now_s()) {
            struct timespec ts = {.tv_sec = (time_t)wake, .tv_nsec = 0};
            clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
        }
    }
    fj_info("stopping; %zu documents left in the spool", sp ? fj_spool_count(sp) : (size_t)0);
    fj_free(sent_topo);
    fj_buf_free(&json);
    fj_sender_free(snd);
    fj_spool_close(sp);
    fj_collector_free(c);
    return 0;
}
