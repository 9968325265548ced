/* reqlog.c — refusal lines in logfmt, rate-limited per (client address, reason) in fixed windows.
 * The counters live in a small fixed table: when it is full, the least recently used slot is
 * reported (its suppressed count written) and reused, so memory stays bounded whatever the
 * number of addresses an attacker uses. */
#include "reqlog.h"

#include "alloc.h"
#include "buf.h"
#include "log.h"
#include "timefmt.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum { SLOTS = 1024, PROBE = 16, KEY_CLIENT = 64, KEY_REASON = 32 };

typedef struct slot {
    bool used;
    char client[KEY_CLIENT];
    char reason[KEY_REASON];
    int64_t window_start_ns;
    int64_t last_ns;
    unsigned lines;      /* written in this window */
    unsigned long suppressed; /* counted, not yet reported */
} slot;

struct fj_reqlog {
    unsigned burst;
    int64_t window_ns;
    pthread_mutex_t mu;
    slot slots[SLOTS];
};

fj_reqlog *fj_reqlog_new(unsigned burst, unsigned window_s)
{
    fj_reqlog *l = fj_calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->burst = burst;
    l->window_ns = (int64_t)(window_s ? window_s : 60) * 1000000000LL;
    pthread_mutex_init(&l->mu, NULL);
    return l;
}

/* logfmt value: bare when it is plain, else quoted with \" \\ and control bytes escaped. */
static void put_value(fj_buf *b, const char *v)
{
    if (!v || !*v) {
        fj_buf_puts(b, "-");
        return;
    }
    bool plain = true;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p >= 0x7f)
            plain = false;
    if (plain) {
        fj_buf_puts(b, v);
        return;
    }
    fj_buf_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\')
            snprintf(esc, sizeof esc, "\\%c", *p);
        else if (*p < ' ' || *p == 0x7f)
            snprintf(esc, sizeof esc, "\\x%02x", *p);
        else
            esc[0] = (char)*p, esc[1] = '\0';
        fj_buf_puts(b, esc);
    }
    fj_buf_puts(b, "\"");
}

static void put_field(fj_buf *b, const char *name, const char *v)
{
    fj_buf_puts(b, " ");
    fj_buf_puts(b, name);
    fj_buf_puts(b, "=");
    put_value(b, v);
}

/* Caps each value so a line stays within what fj_log writes (1 KiB). */
static void put_capped(fj_buf *b, const char *name, const char *v, size_t cap)
{
    char tmp[512];
    if (v && strlen(v) > cap && cap < sizeof tmp - 4) {
        memcpy(tmp, v, cap);
        memcpy(tmp + cap, "...", 4);
        v = tmp;
    }
    put_field(b, name, v);
}

static void write_line(const fj_reqlog_entry *e, unsigned long suppressed)
{
    fj_buf b;
    fj_buf_init(&b, 2048);
    char num[32];
    fj_buf_puts(&b, "refused");
    put_capped(&b, "client", e->client, 64);
    if (e->via)
        put_capped(&b, "via", e->via, 64);
    put_capped(&b, "credential", e->credential, 64);
    put_capped(&b, "method", e->method, 16);
    put_capped(&b, "path", e->path, 200);
    if (e->status) {
        snprintf(num, sizeof num, "%d", e->status);
        put_field(&b, "status", num);
    } else {
        put_field(&b, "status", NULL);
    }
    put_capped(&b, "reason", e->reason, 32);
    if (e->bytes) {
        snprintf(num, sizeof num, "%zu", e->bytes);
        put_field(&b, "bytes", num);
    }
    if (e->duration_us >= 0) {
        snprintf(num, sizeof num, "%.3f", (double)e->duration_us / 1000.0);
        put_field(&b, "duration_ms", num);
    }
    if (suppressed) {
        snprintf(num, sizeof num, "%lu", suppressed);
        put_field(&b, "suppressed", num);
    }
    fj_warn("%s", b.data ? b.data : "refused");
    fj_buf_free(&b);
}

static void write_suppressed(const slot *s, int64_t window_ns)
{
    fj_warn("refused client=%s reason=%s suppressed=%lu window_s=%lld", s->client, s->reason, s->suppressed,
            (long long)(window_ns / 1000000000LL));
}

static uint64_t key_hash(const char *client, const char *reason)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const char *p = client; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;
    for (const char *p = reason; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

/* The slot for (client, reason), claimed if need be; called with l->mu held. */
static slot *find_slot(fj_reqlog *l, const char *client, const char *reason, int64_t now)
{
    size_t start = (size_t)(key_hash(client, reason) % SLOTS);
    slot *victim = NULL;
    for (size_t i = 0; i < PROBE; i++) {
        slot *s = &l->slots[(start + i) % SLOTS];
        if (s->used && !strcmp(s->client, client) && !strcmp(s->reason, reason))
            return s;
        if (!s->used) {
            if (!victim || victim->used)
                victim = s;
        } else if (!victim || (victim->used && s->last_ns < victim->last_ns)) {
            victim = s;
        }
    }
    if (victim->used && victim->suppressed)
        write_suppressed(victim, l->window_ns);
    memset(victim, 0, sizeof *victim);
    victim->used = true;
    snprintf(victim->client, sizeof victim->client, "%s", client);
    snprintf(victim->reason, sizeof victim->reason, "%s", reason);
    victim->window_start_ns = now;
    return victim;
}

void fj_reqlog_refusal(fj_reqlog *l, const fj_reqlog_entry *e)
{
    if (!l)
        return;
    if (!l->burst) {
        write_line(e, 0);
        return;
    }
    const char *client = e->client ? e->client : "-", *reason = e->reason ? e->reason : "-";
    int64_t now = fj_mono_ns();
    unsigned long report = 0;
    bool write = false;
    pthread_mutex_lock(&l->mu);
    slot *s = find_slot(l, client, reason, now);
    s->last_ns = now;
    if (now - s->window_start_ns >= l->window_ns) {
        s->window_start_ns = now;
        s->lines = 0;
    }
    if (s->lines < l->burst) {
        s->lines++;
        report = s->suppressed;
        s->suppressed = 0;
        write = true;
    } else {
        s->suppressed++;
    }
    pthread_mutex_unlock(&l->mu);
    if (write) /* outside the lock: a slow stderr must not serialise request threads on it */
        write_line(e, report);
}

void fj_reqlog_flush(fj_reqlog *l)
{
    if (!l)
        return;
    int64_t now = fj_mono_ns();
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < SLOTS; i++) {
        slot *s = &l->slots[i];
        if (!s->used || now - s->window_start_ns < l->window_ns)
            continue;
        if (s->suppressed)
            write_suppressed(s, l->window_ns);
        s->used = false; /* a quiet source frees its slot */
    }
    pthread_mutex_unlock(&l->mu);
}

void fj_reqlog_free(fj_reqlog *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < SLOTS; i++)
        if (l->slots[i].used && l->slots[i].suppressed)
            write_suppressed(&l->slots[i], l->window_ns);
    pthread_mutex_destroy(&l->mu);
    fj_free(l);
}
