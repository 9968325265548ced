/* reqlog.c — request lines in logfmt or JSON; refusals rate-limited per (client address, reason)
 * in fixed windows.
 * The counters live in a small fixed table: when it is full, the least recently used slot is
 * reported (its suppressed count written) and reused, so memory stays bounded whatever the
 * number of addresses an attacker uses. */
#include "server/reqlog.h"

#include "alloc.h"
#include "buf.h"
#include "log.h"
#include "timefmt.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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
    fj_reqlog_format format;
    bool every_request;
    int64_t window_ns;
    pthread_mutex_t mu;
    slot slots[SLOTS];
};

fj_reqlog *fj_reqlog_new(const fj_reqlog_opts *o)
{
    fj_reqlog *l = fj_calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->burst = o->burst;
    l->format = o->format;
    l->every_request = o->every_request;
    l->window_ns = (int64_t)(o->window_s ? o->window_s : 60) * 1000000000LL;
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

/* One field, in the log's format; v NULL or "" is "-" in logfmt and null in JSON. raw: a number,
 * written bare. */
static void put_field(const fj_reqlog *l, fj_buf *b, const char *name, const char *v, bool raw)
{
    if (l->format == FJ_REQLOG_JSON) {
        fj_buf_puts(b, ",\"");
        fj_buf_puts(b, name);
        fj_buf_puts(b, "\":");
        if (!v || !*v)
            fj_buf_puts(b, "null");
        else if (raw)
            fj_buf_puts(b, v);
        else
            fj_buf_json_str(b, v);
        return;
    }
    fj_buf_puts(b, " ");
    fj_buf_puts(b, name);
    fj_buf_puts(b, "=");
    put_value(b, v);
}

/* Caps each value so a line stays within what fj_log writes (1 KiB). */
static void put_capped(const fj_reqlog *l, fj_buf *b, const char *name, const char *v, size_t cap)
{
    char tmp[512];
    if (v && strlen(v) > cap && cap < sizeof tmp - 4) {
        memcpy(tmp, v, cap);
        memcpy(tmp + cap, "...", 4);
        v = tmp;
    }
    put_field(l, b, name, v, false);
}

static void put_number(const fj_reqlog *l, fj_buf *b, const char *name, const char *fmt, double v)
{
    char num[32];
    snprintf(num, sizeof num, fmt, v);
    put_field(l, b, name, num, true);
}

/* "2024-05-01T12:00:00.123Z": the journal has its own time, but a line read elsewhere needs one. */
static void now_rfc3339(char out[32])
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03ldZ", ts.tv_nsec / 1000000L);
}

/* Starts a line of kind event ("refused", "request"): logfmt after the log's own prefix (its time
 * goes last, in end_line), JSON as an object of its own. */
static void begin_line(const fj_reqlog *l, fj_buf *b, const char *event)
{
    char t[32];
    now_rfc3339(t);
    if (l->format == FJ_REQLOG_JSON) {
        fj_buf_puts(b, "{\"time\":\"");
        fj_buf_puts(b, t);
        fj_buf_puts(b, "\",\"event\":\"");
        fj_buf_puts(b, event);
        fj_buf_puts(b, "\"");
    } else {
        fj_buf_puts(b, event); /* the time last: "refused client=..." stays what operators grep */
    }
}

static void end_line(const fj_reqlog *l, fj_buf *b, fj_log_level lvl)
{
    if (l->format != FJ_REQLOG_JSON) {
        char t[32];
        now_rfc3339(t);
        fj_buf_puts(b, " time=");
        fj_buf_puts(b, t);
    }
    if (l->format == FJ_REQLOG_JSON) {
        fj_buf_puts(b, "}");
        fj_log_raw(lvl, b->data ? b->data : "{}");
    } else {
        fj_log(lvl, "%s", b->data ? b->data : "");
    }
}

static void write_line(const fj_reqlog *l, const char *event, fj_log_level lvl, const fj_reqlog_entry *e,
                       unsigned long suppressed)
{
    fj_buf b;
    fj_buf_init(&b, 2048);
    begin_line(l, &b, event);
    put_capped(l, &b, "client", e->client, 64);
    if (e->via)
        put_capped(l, &b, "via", e->via, 64);
    put_capped(l, &b, "credential", e->credential, 64);
    put_capped(l, &b, "method", e->method, 16);
    put_capped(l, &b, "path", e->path, 200);
    if (e->status)
        put_number(l, &b, "status", "%.0f", e->status);
    else
        put_field(l, &b, "status", NULL, true);
    put_capped(l, &b, "reason", e->reason, 32);
    if (e->bytes)
        put_number(l, &b, "bytes", "%.0f", (double)e->bytes);
    if (e->bytes_in)
        put_number(l, &b, "bytes_in", "%.0f", (double)e->bytes_in);
    if (e->duration_us >= 0)
        put_number(l, &b, "duration_ms", "%.3f", (double)e->duration_us / 1000.0);
    if (suppressed)
        put_number(l, &b, "suppressed", "%.0f", (double)suppressed);
    end_line(l, &b, lvl);
    fj_buf_free(&b);
}

static void write_suppressed(const fj_reqlog *l, const slot *s)
{
    fj_buf b;
    fj_buf_init(&b, 512);
    begin_line(l, &b, "refused");
    put_field(l, &b, "client", s->client, false);
    put_field(l, &b, "reason", s->reason, false);
    put_number(l, &b, "suppressed", "%.0f", (double)s->suppressed);
    put_number(l, &b, "window_s", "%.0f", (double)(l->window_ns / 1000000000LL));
    end_line(l, &b, FJ_LOG_WARN);
    fj_buf_free(&b);
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
        write_suppressed(l, victim);
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
        write_line(l, "refused", FJ_LOG_WARN, e, 0);
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
        write_line(l, "refused", FJ_LOG_WARN, e, report);
}

void fj_reqlog_answer(fj_reqlog *l, const fj_reqlog_entry *e)
{
    if (!l)
        return;
    if (e->status >= 400 || e->status == 0)
        fj_reqlog_refusal(l, e);
    else if (l->every_request)
        write_line(l, "request", FJ_LOG_INFO, e, 0);
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
            write_suppressed(l, s);
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
            write_suppressed(l, &l->slots[i]);
    pthread_mutex_destroy(&l->mu);
    fj_free(l);
}
