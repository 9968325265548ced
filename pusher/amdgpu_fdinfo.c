/* amdgpu_fdinfo.c — AMD per-process GPU use from DRM fdinfo. A sample lists the processes, keeps
 * the descriptors that point into /dev/dri, parses their fdinfo, merges descriptors of one DRM
 * client, and turns engine-time deltas since the previous sample into utilisation. */
#include "amdgpu_fdinfo.h"

#include "alloc.h"
#include "procfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One DRM client (open GPU file) of one process, as read in one sample. */
typedef struct client {
    uint32_t pid;
    unsigned card; /* position in the caller's card list */
    uint64_t id;   /* drm-client-id */
    uint64_t busy_ns; /* gfx + compute engine time, each divided by its capacity */
    uint64_t vram_kb;
} client;

struct fj_amd_fdinfo {
    client *prev; /* the previous sample's clients, sorted by key */
    size_t nprev;
    int64_t prev_ns;
};

fj_amd_fdinfo *fj_amd_fdinfo_new(void)
{
    return fj_calloc(1, sizeof(fj_amd_fdinfo));
}

void fj_amd_fdinfo_free(fj_amd_fdinfo *t)
{
    if (!t)
        return;
    fj_free(t->prev);
    fj_free(t);
}

static int cmp_key(const void *a, const void *b)
{
    const client *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->card != y->card)
        return x->card < y->card ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* "123 KiB" / "4 MiB" / "4096" (bytes, no unit) in KiB. */
static uint64_t mem_kib(const char *v)
{
    char *e;
    uint64_t x = strtoull(v, &e, 10);
    while (*e == ' ' || *e == '\t')
        e++;
    if (!strncmp(e, "KiB", 3))
        return x;
    if (!strncmp(e, "MiB", 3))
        return x * 1024;
    if (!strncmp(e, "GiB", 3))
        return x * 1024 * 1024;
    return x / 1024;
}

/* Parsed fdinfo of one descriptor; ok only for an amdgpu client on a known card. */
typedef struct fdinfo {
    int amdgpu, have_id;
    char pdev[32];
    uint64_t id, engine_ns[2], capacity[2], memory_kb, resident_kb;
    int have_memory;
} fdinfo;

static const char *const engines[2] = {"gfx", "compute"};

static void parse_fdinfo(const char *text, fdinfo *f)
{
    memset(f, 0, sizeof *f);
    f->capacity[0] = f->capacity[1] = 1; /* the document's default when no capacity is given */
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[256];
        if (len < sizeof line) {
            memcpy(line, p, len);
            line[len] = '\0';
            char *colon = strchr(line, ':');
            if (colon) {
                *colon = '\0';
                char *v = colon + 1;
                while (*v == ' ' || *v == '\t')
                    v++;
                if (!strcmp(line, "drm-driver"))
                    f->amdgpu = !strcmp(v, "amdgpu");
                else if (!strcmp(line, "drm-pdev"))
                    snprintf(f->pdev, sizeof f->pdev, "%.31s", v);
                else if (!strcmp(line, "drm-client-id"))
                    f->id = strtoull(v, NULL, 10), f->have_id = 1;
                else if (!strcmp(line, "drm-memory-vram"))
                    f->memory_kb = mem_kib(v), f->have_memory = 1;
                else if (!strcmp(line, "drm-resident-vram"))
                    f->resident_kb = mem_kib(v);
                for (int k = 0; k < 2; k++) {
                    char key[48];
                    snprintf(key, sizeof key, "drm-engine-%s", engines[k]);
                    if (!strcmp(line, key))
                        f->engine_ns[k] = strtoull(v, NULL, 10);
                    snprintf(key, sizeof key, "drm-engine-capacity-%s", engines[k]);
                    if (!strcmp(line, key) && strtoull(v, NULL, 10) > 0)
                        f->capacity[k] = strtoull(v, NULL, 10);
                }
            }
        }
        p = nl ? nl + 1 : NULL;
    }
    if (!f->have_memory) /* kernels that dropped drm-memory-* for drm-resident-* */
        f->memory_kb = f->resident_kb;
}

static int card_of(const fj_amd_card_ref *cards, size_t ncards, const char *pdev)
{
    for (size_t i = 0; i < ncards; i++)
        if (!strcasecmp(cards[i].address, pdev))
            return (int)i;
    return -1;
}

/* Growable array of clients (heap: it becomes the tracker's previous reading). */
typedef struct clients {
    client *v;
    size_t n, cap;
} clients;

static fj_status add_client(clients *cs, const client *c)
{
    if (cs->n == cs->cap) {
        size_t cap = cs->cap ? cs->cap * 2 : 16;
        client *nv = fj_realloc(cs->v, cap * sizeof *nv);
        if (!nv)
            return FJ_ENOMEM;
        cs->v = nv;
        cs->cap = cap;
    }
    cs->v[cs->n++] = *c;
    return FJ_OK;
}

/* Appends the distinct amdgpu clients of one process to cs. */
static fj_status read_process(const char *root, uint32_t pid, const fj_amd_card_ref *cards, size_t ncards,
                              fj_buf *scratch, clients *cs)
{
    char rel[96], path[4096];
    snprintf(rel, sizeof rel, "/proc/%" PRIu32 "/fd", pid);
    if (!fj_rootpath(path, sizeof path, root, rel))
        return FJ_OK;
    DIR *d = opendir(path);
    if (!d)
        return FJ_OK; /* gone, or another user's process without the privilege to look */
    size_t first = cs->n;
    fj_status st = FJ_OK;
    struct dirent *e;
    while (st == FJ_OK && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char target[256];
        ssize_t tl = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
        if (tl <= 0)
            continue;
        target[tl] = '\0';
        if (strncmp(target, "/dev/dri/", 9))
            continue; /* not a GPU file: no need to read its fdinfo */
        snprintf(rel, sizeof rel, "/proc/%" PRIu32 "/fdinfo/%.20s", pid, e->d_name);
        if (fj_readfile(root, rel, scratch) != FJ_OK)
            continue;
        fdinfo f;
        parse_fdinfo(scratch->data, &f);
        int card = f.amdgpu && f.have_id ? card_of(cards, ncards, f.pdev) : -1;
        if (card < 0)
            continue;
        client c = {.pid = pid, .card = (unsigned)card, .id = f.id, .vram_kb = f.memory_kb,
                    .busy_ns = f.engine_ns[0] / f.capacity[0] + f.engine_ns[1] / f.capacity[1]};
        int dup = 0;
        for (size_t i = first; i < cs->n && !dup; i++)
            dup = cs->v[i].card == c.card && cs->v[i].id == c.id; /* dup()ed or inherited descriptor */
        if (!dup)
            st = add_client(cs, &c);
    }
    closedir(d);
    return st;
}

fj_status fj_amd_fdinfo_sample(fj_amd_fdinfo *t, const char *root, const fj_amd_card_ref *cards, size_t ncards,
                               int64_t now_ns, fj_arena *a, fj_gpu_proc **procs, size_t *n)
{
    *procs = NULL;
    *n = 0;
    if (!ncards)
        return FJ_OK;
    uint32_t *pids;
    size_t npids;
    fj_status st = fj_proc_pids(root, a, &pids, &npids);
    if (st != FJ_OK)
        return st == FJ_ENOMEM ? st : FJ_OK; /* no /proc: nothing to report */
    fj_buf scratch;
    fj_buf_init(&scratch, 64u << 10);
    clients cs = {0};
    for (size_t i = 0; i < npids && st == FJ_OK; i++)
        st = read_process(root, pids[i], cards, ncards, &scratch, &cs);
    fj_buf_free(&scratch);
    if (st != FJ_OK) {
        fj_free(cs.v);
        return st;
    }
    qsort(cs.v, cs.n, sizeof *cs.v, cmp_key);

    /* One entry per (pid, card): clients are sorted by pid then card, so runs are contiguous. */
    fj_gpu_proc *out = cs.n ? fj_arena_calloc(a, cs.n, sizeof *out) : NULL;
    if (cs.n && !out) {
        fj_free(cs.v);
        return FJ_ENOMEM;
    }
    double dt_ns = t->prev_ns && now_ns > t->prev_ns ? (double)(now_ns - t->prev_ns) : 0;
    size_t nout = 0;
    for (size_t i = 0; i < cs.n;) {
        const client *c0 = &cs.v[i];
        const fj_amd_card_ref *card = &cards[c0->card];
        fj_gpu_proc *p = &out[nout++];
        p->pid = c0->pid;
        p->index = card->index;
        p->uuid = card->uuid;
        double busy = 0;
        for (; i < cs.n && cs.v[i].pid == c0->pid && cs.v[i].card == c0->card; i++) {
            const client *c = &cs.v[i];
            p->gpu_memory_kb += c->vram_kb;
            const client *was = t->nprev ? bsearch(c, t->prev, t->nprev, sizeof *c, cmp_key) : NULL;
            if (was && c->busy_ns >= was->busy_ns)
                busy += (double)(c->busy_ns - was->busy_ns);
        }
        if (dt_ns > 0) {
            p->gpu_util = 100.0 * busy / dt_ns;
            if (p->gpu_util > 100.0) /* gfx and compute busy at once, or a late reading */
                p->gpu_util = 100.0;
        }
        if (card->vram_kb)
            p->gpu_memory_util = 100.0 * (double)p->gpu_memory_kb / (double)card->vram_kb;
    }
    fj_free(t->prev);
    t->prev = cs.v;
    t->nprev = cs.n;
    t->prev_ns = now_ns;
    *procs = out;
    *n = nout;
    return FJ_OK;
}
