/* server/prom.c — the counters behind GET /metrics (prom.h), counted by the request threads and the
 * writer; prom_page.c writes them out. Below both http.c and writer.c, and calling neither. */
#include "server/prom_int.h"

#include "timefmt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct fj_prom_state fj_prom = {
    .reasons = {.mu = PTHREAD_MUTEX_INITIALIZER, .cap = MAX_REASONS},
    .names = {.mu = PTHREAD_MUTEX_INITIALIZER, .cap = MAX_NAMES},
    .store_mu = PTHREAD_MUTEX_INITIALIZER,
};

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The index of name in t, added when there is room; t->cap ("other") when there is none. */
static unsigned name_index(name_table *t, const char *name)
{
    if (!name || !*name)
        name = "-";
    size_t len = strlen(name);
    if (len >= NAME_LEN)
        return t->cap;
    unsigned start = (unsigned)(name_hash(name) % t->cap);
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 0; i < t->cap; i++) {
            unsigned k = (start + i) % t->cap;
            if (!atomic_load_explicit(&t->used[k], memory_order_acquire))
                break; /* slots fill in probe order: the name is not further on */
            if (!strcmp(t->names[k], name))
                return k;
        }
        if (pass)
            break;
        pthread_mutex_lock(&t->mu);
        unsigned found = t->cap;
        for (unsigned i = 0; i < t->cap; i++) {
            unsigned k = (start + i) % t->cap;
            if (!atomic_load_explicit(&t->used[k], memory_order_acquire)) {
                memcpy(t->names[k], name, len + 1);
                atomic_store_explicit(&t->used[k], true, memory_order_release);
                atomic_fetch_add(&t->n, 1);
                found = k;
                break;
            }
            if (!strcmp(t->names[k], name)) {
                found = k;
                break;
            }
        }
        pthread_mutex_unlock(&t->mu);
        return found;
    }
    return t->cap;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The process's start from /proc/self/stat (field 22, in clock ticks since boot) and the boot
 * time from /proc/stat: what ps shows, whenever fj_prom_init is called. */
static double process_start_s(void)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long long ticks = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                     &ticks) != 1)
        return wall_s();
    unsigned long long btime = 0;
    char line[256];
    if ((f = fopen("/proc/stat", "r"))) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "btime %llu", &btime) == 1)
                break;
        fclose(f);
    }
    long hz = sysconf(_SC_CLK_TCK);
    return btime && hz > 0 ? (double)btime + (double)ticks / (double)hz : wall_s();
}

void fj_prom_init(const fj_route *routes)
{
    fj_prom.routes = routes;
    fj_prom.n_routes = 0;
    while (routes && routes[fj_prom.n_routes].path)
        fj_prom.n_routes++;
    fj_prom.start_s = process_start_s();
}

static unsigned status_index(int status)
{
    for (unsigned i = 0; i < N_STATUS - 1; i++)
        if (statuses[i] == status)
            return i;
    return N_STATUS - 1;
}

void fj_prom_request(int route, int status, size_t bytes_in, size_t bytes_out)
{
    unsigned ri = route < 0 || (unsigned)route >= fj_prom.n_routes || route >= MAX_ROUTES ? MAX_ROUTES : (unsigned)route;
    unsigned si = status_index(status);
    ADD(fj_prom.requests[ri][si], 1);
    ADD(fj_prom.bytes_in[ri][si], bytes_in);
    ADD(fj_prom.bytes_out[ri][si], bytes_out);
}


void fj_prom_auth_failure(const char *reason)
{
    for (unsigned i = 0; i < 3; i++)
        if (!strcmp(reason, auth_reasons[i]))
            ADD(fj_prom.auth_fail[i], 1);
}

void fj_prom_udp(fj_prom_udp_result result, uint64_t n)
{
    if ((unsigned)result < 5)
        ADD(fj_prom.udp[result], n);
}

static int64_t wall_ms(void)
{
    return (int64_t)(wall_s() * 1000.0);
}

void fj_prom_accepted(fj_prom_unit unit, const char *cluster, uint64_t n)
{
    unsigned c = name_index(&fj_prom.names, cluster);
    ADD(fj_prom.units[unit].accepted[c], n);
    atomic_store_explicit(&fj_prom.last_accepted[c], wall_ms(), memory_order_relaxed);
}

void fj_prom_refused(fj_prom_unit unit, const char *cluster, const char *reason, uint64_t n)
{
    unsigned c = name_index(&fj_prom.names, cluster), why = name_index(&fj_prom.reasons, reason);
    ADD(fj_prom.units[unit].refused[c][why], n);
}

void fj_prom_credential_refused(const char *name)
{
    atomic_store_explicit(&fj_prom.last_refused[name_index(&fj_prom.names, name)], wall_ms(), memory_order_relaxed);
}

void fj_prom_commit(size_t batches, double seconds)
{
    unsigned b = 0;
    while (b < N_SIZE_B && (double)batches > size_bounds[b])
        b++;
    ADD(fj_prom.commit_size[b], 1);
    unsigned l = 0;
    while (l < N_LAT_B && seconds > latency_bounds[l])
        l++;
    ADD(fj_prom.commit_latency[l], 1);
    ADD(fj_prom.commits, 1);
    ADD(fj_prom.commit_batches, batches);
    ADD(fj_prom.commit_seconds_us, (uint64_t)(seconds * 1e6));
}
