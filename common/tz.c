/* tz.c — a reader of TZif files (RFC 8536): the version 2+ block of 64-bit transition times when
 * present, else the version 1 block; leap-second records are skipped (zoneinfo, not right/). */
#include "tz.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TZ_NAME_MAX 128
#define TZ_FILE_MAX (1 << 20)

struct fj_tz {
    struct fj_tz *next; /* the cache's list */
    char name[TZ_NAME_MAX];
    size_t n;       /* transitions */
    int64_t *at;    /* transition instants, ascending */
    int32_t *off;   /* the offset from each transition on */
    int32_t before; /* the offset before the first */
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fj_tz *cache;

static int name_ok(const char *name)
{
    size_t len = strlen(name);
    if (!len || len >= TZ_NAME_MAX || name[0] == '/' || strstr(name, ".."))
        return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
              *p == '+' || *p == '-' || *p == '/'))
            return 0;
    return 1;
}

static int64_t be(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    if (bytes == 4)
        return (int32_t)(uint32_t)v;
    return (int64_t)v;
}

/* Decodes one data block (times of `tb` bytes: 4 or 8) at p of the header's counts into z. */
static int decode(const unsigned char *p, size_t left, int tb, struct fj_tz *z)
{
    if (left < 44 || memcmp(p, "TZif", 4))
        return 0;
    uint32_t cnt[6]; /* isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt */
    for (int i = 0; i < 6; i++)
        cnt[i] = (uint32_t)be(p + 20 + 4 * i, 4);
    uint32_t timecnt = cnt[3], typecnt = cnt[4];
    if (!typecnt || timecnt > 100000 || typecnt > 256)
        return 0;
    size_t need = 44 + (size_t)timecnt * ((size_t)tb + 1) + (size_t)typecnt * 6;
    if (need > left)
        return 0;
    const unsigned char *times = p + 44, *idx = times + (size_t)timecnt * tb, *types = idx + timecnt;
    z->at = calloc(timecnt + 1, sizeof *z->at);
    z->off = calloc(timecnt + 1, sizeof *z->off);
    if (!z->at || !z->off)
        return 0;
    for (uint32_t i = 0; i < timecnt; i++) {
        if (idx[i] >= typecnt)
            return 0;
        z->at[i] = be(times + (size_t)i * tb, tb);
        z->off[i] = (int32_t)be(types + 6 * (size_t)idx[i], 4);
        if (i && z->at[i] <= z->at[i - 1])
            return 0;
    }
    z->n = timecnt;
    z->before = (int32_t)be(types, 4);
    return 1;
}

/* Bytes of a version 1 data block after its header. */
static size_t v1_size(const unsigned char *p)
{
    size_t c[6];
    for (int i = 0; i < 6; i++)
        c[i] = (uint32_t)be(p + 20 + 4 * i, 4);
    return c[3] * 5 + c[4] * 6 + c[5] + c[2] * 8 + c[1] + c[0];
}

static struct fj_tz *load(const char *name)
{
    const char *dir = getenv("TZDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *buf = malloc(TZ_FILE_MAX);
    size_t len = buf ? fread(buf, 1, TZ_FILE_MAX, f) : 0;
    fclose(f);
    struct fj_tz *z = calloc(1, sizeof *z);
    int ok = 0;
    if (buf && z && len >= 44 && !memcmp(buf, "TZif", 4)) {
        snprintf(z->name, sizeof z->name, "%s", name);
        size_t v2 = 44 + v1_size(buf);
        if (buf[4] >= '2' && v2 < len)
            ok = decode(buf + v2, len - v2, 8, z);
        else
            ok = decode(buf, len, 4, z);
    }
    free(buf);
    if (!ok && z) {
        free(z->at);
        free(z->off);
        free(z);
        z = NULL;
    }
    return z;
}

const fj_tz *fj_tz_get(const char *name)
{
    if (!name || !name_ok(name))
        return NULL;
    pthread_mutex_lock(&cache_lock);
    struct fj_tz *z = cache;
    while (z && strcmp(z->name, name))
        z = z->next;
    if (!z && (z = load(name))) {
        z->next = cache;
        cache = z;
    }
    pthread_mutex_unlock(&cache_lock);
    return z;
}

int32_t fj_tz_offset(const fj_tz *z, int64_t t)
{
    if (!z->n || t < z->at[0])
        return z->before;
    size_t lo = 0, hi = z->n; /* the last transition at or before t: at[lo] <= t < at[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (z->at[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return z->off[lo];
}

int64_t fj_tz_next_change(const fj_tz *z, int64_t t)
{
    size_t lo = 0, hi = z->n; /* the first transition after t */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (z->at[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < z->n ? z->at[lo] : INT64_MAX;
}

int32_t fj_tz_offset_ns(const fj_tz *z, int64_t t_ns)
{
    int64_t s = t_ns / 1000000000LL;
    return fj_tz_offset(z, s - (t_ns % 1000000000LL < 0));
}
