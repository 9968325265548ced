/* pcitree.c — PCI tree construction (sysfs, hwloc) and proximity classes. */
#include "pcitree.h"

#include "alloc.h"
#include "procfs.h"

#include <hwloc.h>

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

const char *fj_prox_name(fj_prox p)
{
    static const char *names[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};
    return (unsigned)p < 5 ? names[p] : "SYS";
}

static int push(fj_pcitree *t, const fj_pcidev *d)
{
    if (t->n == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 64;
        fj_pcidev *v = fj_realloc(t->devs, ncap * sizeof *v);
        if (!v)
            return -1;
        t->devs = v;
        t->cap = ncap;
    }
    t->devs[t->n] = *d;
    return (int)t->n++;
}

int fj_pcitree_add(fj_pcitree *t, const fj_pcidev *d, int parent)
{
    fj_pcidev x = *d;
    x.parent = parent;
    if (parent >= 0 && (size_t)parent < t->n) {
        x.hostbridge = t->devs[parent].hostbridge;
        x.depth = t->devs[parent].depth + 1;
        if (x.numa < 0)
            x.numa = t->devs[parent].numa;
    } else {
        x.parent = -1;
        x.depth = 0;
        x.is_bridge = 1;
    }
    int i = push(t, &x);
    if (i >= 0 && x.parent < 0)
        t->devs[i].hostbridge = i;
    return i;
}

int fj_pcitree_find(const fj_pcitree *t, const char *addr)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcasecmp(t->devs[i].addr, addr))
            return (int)i;
    return -1;
}

void fj_pcitree_free(fj_pcitree *t)
{
    fj_free(t->devs);
    t->devs = NULL;
    t->n = t->cap = 0;
}

/* --- sysfs --------------------------------------------------------------------------------- */

static int is_bdf(const char *s)
{
    unsigned dom, bus, dev, fn;
    char tail;
    return strlen(s) == 12 && sscanf(s, "%4x:%2x:%2x.%1x%c", &dom, &bus, &dev, &fn, &tail) == 4;
}

static unsigned read_hex(const char *root, const char *dir, const char *file)
{
    char rel[640], line[64];
    snprintf(rel, sizeof rel, "%s/%s", dir, file);
    return fj_readline(root, rel, line, sizeof line) ? (unsigned)strtoul(line, NULL, 0) : 0;
}

static fj_status walk(const char *root, fj_pcitree *t, const char *rel, int parent)
{
    char full[4096];
    if (!fj_rootpath(full, sizeof full, root, rel))
        return FJ_OK;
    DIR *d = opendir(full);
    if (!d)
        return FJ_OK;
    /* Collect names first, sorted, so the tree order is the address order. */
    char names[256][16];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256)
        if (is_bdf(e->d_name))
            snprintf(names[n++], sizeof names[0], "%.15s", e->d_name);
    closedir(d);
    qsort(names, n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    for (size_t i = 0; i < n; i++) {
        fj_pcidev x;
        memset(&x, 0, sizeof x);
        snprintf(x.addr, sizeof x.addr, "%.15s", names[i]);
        for (char *p = x.addr; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        if (snprintf(x.sysfs, sizeof x.sysfs, "%s/%s", rel, names[i]) >= (int)sizeof x.sysfs)
            continue;
        x.vendor = read_hex(root, x.sysfs, "vendor");
        x.device = read_hex(root, x.sysfs, "device");
        x.class_code = read_hex(root, x.sysfs, "class") >> 8;
        x.is_bridge = x.class_code == 0x0604;
        char line[32], rel2[640];
        snprintf(rel2, sizeof rel2, "%s/numa_node", x.sysfs);
        x.numa = fj_readline(root, rel2, line, sizeof line) ? atoi(line) : -1;
        struct stat sb;
        snprintf(rel2, sizeof rel2, "%s/physfn", x.sysfs);
        if (fj_rootpath(full, sizeof full, root, rel2) && lstat(full, &sb) == 0)
            x.is_vf = 1;
        int idx = fj_pcitree_add(t, &x, parent);
        if (idx < 0)
            return FJ_ENOMEM;
        char sub[640];
        snprintf(sub, sizeof sub, "%s", t->devs[idx].sysfs);
        fj_status st = walk(root, t, sub, idx);
        if (st != FJ_OK)
            return st;
    }
    return FJ_OK;
}

fj_status fj_pcitree_from_sysfs(const char *root, fj_pcitree *t)
{
    memset(t, 0, sizeof *t);
    char full[4096];
    if (!fj_rootpath(full, sizeof full, root, "/sys/devices"))
        return FJ_EINVAL;
    DIR *d = opendir(full);
    if (!d)
        return FJ_ENOTFOUND;
    char names[128][32];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 128) {
        unsigned dom, bus;
        char tail;
        if (sscanf(e->d_name, "pci%4x:%2x%c", &dom, &bus, &tail) == 2)
            snprintf(names[n++], sizeof names[0], "%.31s", e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    for (size_t i = 0; i < n; i++) {
        fj_pcidev hb;
        memset(&hb, 0, sizeof hb);
        snprintf(hb.addr, sizeof hb.addr, "%.31s", names[i]);
        snprintf(hb.sysfs, sizeof hb.sysfs, "/sys/devices/%.31s", names[i]);
        hb.numa = -1;
        int idx = fj_pcitree_add(t, &hb, -1);
        if (idx < 0)
            return FJ_ENOMEM;
        fj_status st = walk(root, t, hb.sysfs, idx);
        if (st != FJ_OK)
            return st;
        /* A host bridge is on the NUMA node its devices report. */
        for (size_t k = (size_t)idx + 1; k < t->n; k++)
            if (t->devs[k].hostbridge == idx && t->devs[k].numa >= 0) {
                t->devs[idx].numa = t->devs[k].numa;
                break;
            }
    }
    return FJ_OK;
}

/* --- hwloc --------------------------------------------------------------------------------- */

static int obj_numa(hwloc_topology_t topo, hwloc_obj_t o)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, o);
    if (!anc || !anc->nodeset)
        return -1;
    /* A host bridge attached above a single NUMA node is local to it; above several, unknown. */
    return hwloc_bitmap_weight(anc->nodeset) == 1 ? hwloc_bitmap_first(anc->nodeset) : -1;
}

static fj_status hw_rec(hwloc_topology_t topo, fj_pcitree *t, hwloc_obj_t o, int parent)
{
    for (; o; o = o->next_sibling) {
        fj_pcidev x;
        memset(&x, 0, sizeof x);
        x.numa = -1;
        if (o->type == HWLOC_OBJ_BRIDGE) {
            x.is_bridge = 1;
            if (o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
                snprintf(x.addr, sizeof x.addr, "hostbridge[%02x-%02x]", o->attr->bridge.downstream.pci.secondary_bus,
                         o->attr->bridge.downstream.pci.subordinate_bus);
                x.numa = obj_numa(topo, o);
            } else {
                const struct hwloc_pcidev_attr_s *p = &o->attr->bridge.upstream.pci;
                snprintf(x.addr, sizeof x.addr, "%04x:%02x:%02x.%x", p->domain, p->bus, p->dev, p->func);
                x.vendor = p->vendor_id;
                x.device = p->device_id;
                x.class_code = p->class_id;
            }
        } else if (o->type == HWLOC_OBJ_PCI_DEVICE) {
            const struct hwloc_pcidev_attr_s *p = &o->attr->pcidev;
            snprintf(x.addr, sizeof x.addr, "%04x:%02x:%02x.%x", p->domain, p->bus, p->dev, p->func);
            x.vendor = p->vendor_id;
            x.device = p->device_id;
            x.class_code = p->class_id;
            for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
                if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name)
                    continue;
                if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !x.rdma[0])
                    snprintf(x.rdma, sizeof x.rdma, "%s", c->name);
                else if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && !x.netdev[0])
                    snprintf(x.netdev, sizeof x.netdev, "%s", c->name);
                const char *m = hwloc_obj_get_info_by_name(c, "GPUModel");
                if (m && !x.model[0])
                    snprintf(x.model, sizeof x.model, "%s", m);
            }
        } else {
            continue; /* OS devices are read with their PCI device */
        }
        int idx;
        if (parent < 0 && !(o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)) {
            /* A PCI object without a host bridge above (some exports): give it a synthetic one. */
            fj_pcidev hb;
            memset(&hb, 0, sizeof hb);
            snprintf(hb.addr, sizeof hb.addr, "hb-%.28s", x.addr);
            hb.numa = obj_numa(topo, o);
            int h = fj_pcitree_add(t, &hb, -1);
            if (h < 0)
                return FJ_ENOMEM;
            idx = fj_pcitree_add(t, &x, h);
        } else {
            idx = fj_pcitree_add(t, &x, parent);
        }
        if (idx < 0)
            return FJ_ENOMEM;
        fj_status st = hw_rec(topo, t, o->io_first_child, idx);
        if (st != FJ_OK)
            return st;
    }
    return FJ_OK;
}

static fj_status hw_walk(hwloc_topology_t topo, fj_pcitree *t, hwloc_obj_t o)
{
    fj_status st = FJ_OK;
    if (o->io_first_child)
        st = hw_rec(topo, t, o->io_first_child, -1);
    for (unsigned i = 0; i < o->arity && st == FJ_OK; i++)
        st = hw_walk(topo, t, o->children[i]);
    for (hwloc_obj_t m = o->memory_first_child; m && st == FJ_OK; m = m->next_sibling)
        st = hw_walk(topo, t, m);
    return st;
}

fj_status fj_pcitree_from_hwloc(struct hwloc_topology *topo, fj_pcitree *t)
{
    memset(t, 0, sizeof *t);
    return hw_walk(topo, t, hwloc_get_root_obj(topo));
}

/* --- proximity ------------------------------------------------------------------------------ */

/* The switch a bridge belongs to, or -1 for host bridges and root ports. */
static int switch_of(const fj_pcitree *t, int i)
{
    const fj_pcidev *d = &t->devs[i];
    if (d->depth < 2)
        return -1;
    return d->depth % 2 == 0 ? i : d->parent;
}

fj_prox fj_pcitree_proximity(const fj_pcitree *t, int a, int b)
{
    const fj_pcidev *da = &t->devs[a], *db = &t->devs[b];
    if (da->hostbridge != db->hostbridge) {
        int na = t->devs[da->hostbridge].numa, nb = t->devs[db->hostbridge].numa;
        if (na < 0)
            na = da->numa;
        if (nb < 0)
            nb = db->numa;
        return na >= 0 && nb >= 0 && na != nb ? FJ_PROX_SYS : FJ_PROX_NODE;
    }
    /* Lowest common ancestor: walk the deeper one up, then both. */
    int x = da->parent, y = db->parent;
    while (x >= 0 && y >= 0 && x != y) {
        if (t->devs[x].depth >= t->devs[y].depth)
            x = t->devs[x].parent;
        else
            y = t->devs[y].parent;
    }
    int lca = x;
    if (lca < 0 || t->devs[lca].depth == 0)
        return FJ_PROX_PHB;
    /* Distinct switches on the path a .. lca .. b. */
    int sw[64];
    int nsw = 0;
    for (int side = 0; side < 2; side++) {
        for (int i = side ? db->parent : da->parent;; i = t->devs[i].parent) {
            int s = switch_of(t, i);
            int seen = s < 0;
            for (int k = 0; k < nsw && !seen; k++)
                seen = sw[k] == s;
            if (!seen && nsw < 64)
                sw[nsw++] = s;
            if (i == lca)
                break;
        }
    }
    return nsw <= 1 ? FJ_PROX_PIX : FJ_PROX_PXB;
}

size_t fj_pcitree_nvidia_gpus(const fj_pcitree *t, int *idx, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n && n < max; i++)
        if (t->devs[i].vendor == 0x10de && (t->devs[i].class_code >> 8) == 0x03 && !t->devs[i].is_vf)
            idx[n++] = (int)i;
    /* Tree order is depth-first; NVML numbers GPUs by bus address. */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(t->devs[idx[j - 1]].addr, t->devs[idx[j]].addr) > 0; j--) {
            int tmp = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = tmp;
        }
    return n;
}
