/* spool.c — an index of (id, kind, size[, data]) in id order over a directory or memory. File names
 * are <16 hex digits id>.<sonar|meas>.zst; ids grow, so the name order is the queue order. */
#include "spool.h"

#include "alloc.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct entry {
    uint64_t id;
    fj_item_kind kind;
    size_t len;
    char *data; /* memory spool only */
} entry;

struct fj_spool {
    char *dir; /* NULL for memory */
    uint64_t cap, bytes, next_id, dropped;
    entry *v;
    size_t n, alloc, head; /* live entries are v[head .. n) */
};

static const char *kind_name(fj_item_kind k)
{
    return k == FJ_ITEM_MEASUREMENT ? "meas" : "sonar";
}

static void path_of(const fj_spool *s, const entry *e, char *out, size_t n)
{
    snprintf(out, n, "%s/%016" PRIx64 ".%s.zst", s->dir, e->id, kind_name(e->kind));
}

static int cmp_entry(const void *a, const void *b)
{
    uint64_t x = ((const entry *)a)->id, y = ((const entry *)b)->id;
    return x < y ? -1 : x > y;
}

static fj_status append(fj_spool *s, const entry *e)
{
    if (s->head && s->head == s->n) /* empty: reuse the array from the start */
        s->head = s->n = 0;
    if (s->n == s->alloc) {
        if (s->head) { /* compact before growing */
            memmove(s->v, s->v + s->head, (s->n - s->head) * sizeof *s->v);
            s->n -= s->head;
            s->head = 0;
        }
        if (s->n == s->alloc) {
            size_t na = s->alloc ? s->alloc * 2 : 64;
            entry *v = fj_realloc(s->v, na * sizeof *v);
            if (!v)
                return FJ_ENOMEM;
            s->v = v;
            s->alloc = na;
        }
    }
    s->v[s->n++] = *e;
    s->bytes += e->len;
    return FJ_OK;
}

fj_status fj_spool_open(const char *dir, uint64_t cap, fj_spool **out, fj_err *err)
{
    *out = NULL;
    fj_spool *s = fj_calloc(1, sizeof *s);
    if (!s)
        return FJ_ENOMEM;
    s->cap = cap;
    s->next_id = 1;
    if (!dir || !*dir) {
        *out = s;
        return FJ_OK;
    }
    s->dir = fj_strdup(dir);
    if (!s->dir) {
        fj_free(s);
        return FJ_ENOMEM;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        fj_status st = fj_err_set(err, FJ_EIO, dir, "cannot create spool directory: %s", strerror(errno));
        fj_spool_close(s);
        return st;
    }
    DIR *d = opendir(dir);
    if (!d || access(dir, W_OK) != 0) {
        fj_status st = fj_err_set(err, FJ_EIO, dir, "spool directory not usable: %s", strerror(errno));
        if (d)
            closedir(d);
        fj_spool_close(s);
        return st;
    }
    struct dirent *de;
    fj_status st = FJ_OK;
    while (st == FJ_OK && (de = readdir(d))) {
        entry e;
        memset(&e, 0, sizeof e);
        char kind[8];
        int off = 0;
        if (sscanf(de->d_name, "%16" SCNx64 ".%5[a-z].zst%n", &e.id, kind, &off) != 2 || de->d_name[off] != '\0')
            continue;
        if (!strcmp(kind, "meas"))
            e.kind = FJ_ITEM_MEASUREMENT;
        else if (strcmp(kind, "sonar"))
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat sb;
        if (stat(p, &sb) != 0)
            continue;
        e.len = (size_t)sb.st_size;
        st = append(s, &e);
        if (e.id >= s->next_id)
            s->next_id = e.id + 1;
    }
    closedir(d);
    if (st != FJ_OK) {
        fj_spool_close(s);
        return st;
    }
    if (s->n > 1)
        qsort(s->v, s->n, sizeof *s->v, cmp_entry);
    if (s->n)
        fj_info("spool %s: %zu unsent documents (%" PRIu64 " bytes)", dir, s->n, s->bytes);
    *out = s;
    return FJ_OK;
}

void fj_spool_close(fj_spool *s)
{
    if (!s)
        return;
    for (size_t i = s->head; i < s->n; i++)
        fj_free(s->v[i].data);
    fj_free(s->v);
    fj_free(s->dir);
    fj_free(s);
}

static void drop_oldest(fj_spool *s)
{
    entry *e = &s->v[s->head];
    if (s->dir) {
        char p[4096];
        path_of(s, e, p, sizeof p);
        unlink(p);
    }
    fj_free(e->data);
    s->bytes -= e->len;
    s->head++;
    s->dropped++;
}

fj_status fj_spool_put(fj_spool *s, fj_item_kind kind, const void *data, size_t len)
{
    if (len > s->cap)
        return FJ_ETOOBIG;
    size_t before = s->n - s->head;
    while (s->head < s->n && s->bytes + len > s->cap)
        drop_oldest(s);
    if (before != s->n - s->head)
        fj_warn("spool full (cap %" PRIu64 " bytes): dropped %zu oldest documents", s->cap, before - (s->n - s->head));
    entry e = {.id = s->next_id++, .kind = kind, .len = len, .data = NULL};
    if (s->dir) {
        char tmp[4096], p[4096];
        path_of(s, &e, p, sizeof p);
        snprintf(tmp, sizeof tmp, "%s/.tmp-%016" PRIx64, s->dir, e.id);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
            return FJ_EIO;
        const char *q = data;
        size_t left = len;
        while (left) {
            ssize_t w = write(fd, q, left);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                close(fd);
                unlink(tmp);
                return FJ_EIO;
            }
            q += w;
            left -= (size_t)w;
        }
        if (close(fd) != 0 || rename(tmp, p) != 0) {
            unlink(tmp);
            return FJ_EIO;
        }
    } else {
        e.data = fj_malloc(len ? len : 1);
        if (!e.data)
            return FJ_ENOMEM;
        memcpy(e.data, data, len);
    }
    fj_status st = append(s, &e);
    if (st != FJ_OK)
        fj_free(e.data);
    return st;
}

fj_status fj_spool_peek(fj_spool *s, uint64_t *id, fj_item_kind *kind, char **data, size_t *len)
{
    while (s->head < s->n) {
        entry *e = &s->v[s->head];
        *id = e->id;
        *kind = e->kind;
        *len = e->len;
        *data = fj_malloc(e->len ? e->len : 1);
        if (!*data)
            return FJ_ENOMEM;
        if (!s->dir) {
            memcpy(*data, e->data, e->len);
            return FJ_OK;
        }
        char p[4096];
        path_of(s, e, p, sizeof p);
        FILE *f = fopen(p, "rb");
        size_t got = f ? fread(*data, 1, e->len, f) : 0;
        if (f)
            fclose(f);
        if (f && got == e->len)
            return FJ_OK;
        /* Vanished or truncated behind our back: forget it and go on. */
        fj_warn("spool: cannot read %s, skipping it", p);
        fj_free(*data);
        *data = NULL;
        s->bytes -= e->len;
        s->head++;
    }
    return FJ_ENOTFOUND;
}

void fj_spool_remove(fj_spool *s, uint64_t id)
{
    for (size_t i = s->head; i < s->n; i++) {
        if (s->v[i].id != id)
            continue;
        if (s->dir) {
            char p[4096];
            path_of(s, &s->v[i], p, sizeof p);
            unlink(p);
        }
        fj_free(s->v[i].data);
        s->bytes -= s->v[i].len;
        if (i == s->head) { /* the usual case: the oldest was delivered */
            s->head++;
            return;
        }
        memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof *s->v);
        s->n--;
        return;
    }
}

size_t fj_spool_count(const fj_spool *s)
{
    return s->n - s->head;
}

uint64_t fj_spool_bytes(const fj_spool *s)
{
    return s->bytes;
}

uint64_t fj_spool_dropped(const fj_spool *s)
{
    return s->dropped;
}
