/* container.c — container detection for in_container (see container.h for the rules). */
#include "container.h"

#include "procfs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int fj_container_cgroup(const char *text)
{
    /* cgroup path pieces the runtimes create: docker (/docker/<id>, docker-<id>.scope), podman
     * (libpod-<id>.scope), kubelet (kubepods), containerd's CRI (cri-containerd-<id>), LXC. */
    static const char *const marks[] = {"/docker/", "/docker-", "/libpod-", "/libpod_parent", "/kubepods",
                                        "/cri-containerd-", "/lxc/", "/lxc.payload"};
    if (!text)
        return 0;
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (strstr(text, marks[i]))
            return 1;
    return 0;
}

static int exists(const char *root, const char *rel)
{
    char path[4096];
    return fj_rootpath(path, sizeof path, root, rel) && access(path, F_OK) == 0;
}

int fj_container_view(const char *root)
{
    if (exists(root, "/.dockerenv") || exists(root, "/run/.containerenv"))
        return 1;
    fj_buf b;
    fj_buf_init(&b, 1u << 20);
    int yes = 0;
    /* systemd-nspawn, podman and LXC set `container=` for PID 1; the file is root's only, so an
     * unprivileged agent relies on the other signs. Entries are NUL-separated. */
    if (fj_readfile(root, "/proc/1/environ", &b) == FJ_OK)
        for (size_t i = 0; i < b.len && !yes; i += strlen(b.data + i) + 1)
            yes = !strncmp(b.data + i, "container=", 10) && b.data[i + 10];
    if (!yes && fj_readfile(root, "/proc/1/cgroup", &b) == FJ_OK)
        yes = fj_container_cgroup(b.data);
    fj_buf_free(&b);
    return yes;
}

/* comm and ppid from /proc/PID/stat. 0 when unreadable. */
static int stat_of(const char *root, uint32_t pid, fj_buf *scratch, char comm[32], uint32_t *ppid)
{
    char rel[64];
    snprintf(rel, sizeof rel, "/proc/%" PRIu32 "/stat", pid);
    if (fj_readfile(root, rel, scratch) != FJ_OK)
        return 0;
    const char *lp = strchr(scratch->data, '('), *rp = strrchr(scratch->data, ')');
    if (!lp || !rp || rp < lp || rp[1] != ' ' || !rp[2])
        return 0;
    size_t n = (size_t)(rp - lp - 1);
    if (n > 31)
        n = 31;
    memcpy(comm, lp + 1, n);
    comm[n] = '\0';
    char *e;
    *ppid = (uint32_t)strtoul(rp + 4, &e, 10); /* after ") S " */
    return e != rp + 4;
}

int fj_container_ancestry(const char *root, uint32_t pid, fj_buf *scratch)
{
    char comm[32];
    uint32_t ppid;
    if (!stat_of(root, pid, scratch, comm, &ppid))
        return 0;
    /* Up the parents; the depth bound guards against a cycle in a damaged or racing /proc. */
    for (int depth = 0; depth < 64 && ppid > 1; depth++) {
        uint32_t grand;
        if (!stat_of(root, ppid, scratch, comm, &grand))
            return 0;
        if (grand == 1 && !strncmp(comm, "containerd", 10))
            return 1;
        ppid = grand;
    }
    return 0;
}
