/* nettopo.c — NetworkTopology measurement. Rails number the east-west PFs in PCI address order;
 * traffic is east-west for PFs close to a GPU (PIX/PXB) or on InfiniBand, north-south otherwise;
 * the north_south and east_west lists override that guess (a SKU decides it on some machines); connectedGPU is the nearest GPU when the class is PIX, PXB
 * or PHB, preferring GPUs not yet taken by an earlier PF, as k8s-launch-kit's presets do. */
#include "nettopo.h"

#include "procfs.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_PF = 128, MAX_GPU = 64 };

typedef struct pf {
    int dev;
    char netdev[32], rdma[32], psid[64], pn[64], model[128], link[16];
    int sriov, numa, gpu, rail;
    fj_prox prox;
    int have_prox, north_south;
} pf;

void fj_vpd_parse(const unsigned char *vpd, size_t len, char *model, size_t mn, char *pn, size_t pn_n)
{
    if (mn)
        model[0] = '\0';
    if (pn_n)
        pn[0] = '\0';
    size_t i = 0;
    while (i < len) {
        unsigned char tag = vpd[i];
        if (!(tag & 0x80)) { /* small resource: 0x78 is the end tag */
            if ((tag >> 3) == 0x0f)
                return;
            i += 1 + (tag & 7u);
            continue;
        }
        if (i + 3 > len)
            return;
        size_t rlen = (size_t)vpd[i + 1] | ((size_t)vpd[i + 2] << 8);
        const unsigned char *body = vpd + i + 3;
        if (i + 3 + rlen > len)
            return;
        if (tag == 0x82 && mn) { /* identifier string */
            size_t n = rlen < mn - 1 ? rlen : mn - 1;
            memcpy(model, body, n);
            model[n] = '\0';
            while (n && (model[n - 1] == ' ' || model[n - 1] == '\0'))
                model[--n] = '\0';
        } else if (tag == 0x90 && pn_n) { /* read-only keywords */
            size_t k = 0;
            while (k + 3 <= rlen) {
                size_t klen = body[k + 2];
                if (k + 3 + klen > rlen)
                    break;
                if (body[k] == 'P' && body[k + 1] == 'N') {
                    size_t n = klen < pn_n - 1 ? klen : pn_n - 1;
                    memcpy(pn, body + k + 3, n);
                    pn[n] = '\0';
                    while (n && (pn[n - 1] == ' ' || pn[n - 1] == '\0'))
                        pn[--n] = '\0';
                }
                k += 3 + klen;
            }
        }
        i += 3 + rlen;
    }
}

/* First directory entry (not . or ..) of root/rel/sub into out. */
static int first_entry(const char *root, const char *rel, const char *sub, char *out, size_t n)
{
    char path[4096], r[1024];
    snprintf(r, sizeof r, "%s/%s", rel, sub);
    if (!fj_rootpath(path, sizeof path, root, r))
        return 0;
    DIR *d = opendir(path);
    if (!d)
        return 0;
    struct dirent *e;
    char best[256] = "";
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && (!best[0] || strcmp(e->d_name, best) < 0))
            snprintf(best, sizeof best, "%s", e->d_name);
    closedir(d);
    if (!best[0])
        return 0;
    snprintf(out, n, "%s", best);
    return 1;
}

static void read_pf_sysfs(const char *root, const fj_pcidev *d, pf *p)
{
    char rel[1200], line[128];
    if (!p->netdev[0])
        first_entry(root, d->sysfs, "net", p->netdev, sizeof p->netdev);
    if (!p->rdma[0])
        first_entry(root, d->sysfs, "infiniband", p->rdma, sizeof p->rdma);
    if (p->rdma[0]) {
        snprintf(rel, sizeof rel, "%s/infiniband/%s/board_id", d->sysfs, p->rdma);
        if (fj_readline(root, rel, p->psid, sizeof p->psid))
            for (char *c = p->psid; *c; c++)
                *c = (char)tolower((unsigned char)*c);
        snprintf(rel, sizeof rel, "%s/infiniband/%s/ports/1/link_layer", d->sysfs, p->rdma);
        fj_readline(root, rel, p->link, sizeof p->link);
    }
    if (!p->link[0] && p->netdev[0]) {
        snprintf(rel, sizeof rel, "%s/net/%s/type", d->sysfs, p->netdev);
        if (fj_readline(root, rel, line, sizeof line))
            snprintf(p->link, sizeof p->link, "%s", atoi(line) == 32 ? "InfiniBand" : "Ethernet");
    }
    snprintf(rel, sizeof rel, "%s/sriov_totalvfs", d->sysfs);
    if (fj_readline(root, rel, line, sizeof line))
        p->sriov = atoi(line) > 0;
    /* VPD is readable by root only on most kernels; without it partNumber and model stay empty. */
    snprintf(rel, sizeof rel, "%s/vpd", d->sysfs);
    fj_buf b;
    fj_buf_init(&b, 1 << 15);
    if (fj_readfile(root, rel, &b) == FJ_OK)
        fj_vpd_parse((const unsigned char *)b.data, b.len, p->model, sizeof p->model, p->pn, sizeof p->pn);
    fj_buf_free(&b);
}

static int in_list(const char *list, const char *name)
{
    if (!list || !name || !*name)
        return 0;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        while (*p == ',' || *p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ')
            e++;
        if ((size_t)(e - p) == n && !strncmp(p, name, n))
            return 1;
        p = e;
    }
    return 0;
}

static fj_status kv_str(fj_buf *o, int *first, const char *k, const char *v)
{
    fj_status st = fj_buf_puts(o, *first ? "" : ",");
    *first = 0;
    if (st == FJ_OK)
        st = fj_buf_json_str(o, k);
    if (st == FJ_OK)
        st = fj_buf_puts(o, ":");
    return st == FJ_OK ? fj_buf_json_str(o, v) : st;
}

static fj_status kv_raw(fj_buf *o, int *first, const char *k, const char *v)
{
    fj_status st = fj_buf_puts(o, *first ? "" : ",");
    *first = 0;
    if (st == FJ_OK)
        st = fj_buf_json_str(o, k);
    return st == FJ_OK ? fj_buf_printf(o, ":%s", v) : st;
}

static void slug(const char *in, char *out, size_t n, int lower)
{
    size_t j = 0;
    int dash = 0;
    for (const char *p = in; *p && j + 1 < n; p++) {
        unsigned char c = (unsigned char)*p;
        if (isalnum(c) || (!lower && (c == '_' || c == '.'))) {
            if (dash && j)
                out[j++] = '-';
            dash = 0;
            if (j + 1 < n)
                out[j++] = (char)(lower ? tolower(c) : c);
        } else {
            dash = 1;
        }
    }
    out[j] = '\0';
}

static fj_status kernel_modules(const char *root, fj_buf *o, int *any)
{
    static const char *storage[] = {"nvme_rdma", "nvmet_rdma", "rpcrdma", "svcrdma", "xprtrdma",
                                    "ib_srp", "ib_srpt", "ib_iser", "ib_isert", "smbdirect"};
    static const char *third[] = {"nvidia_peermem", "nv_peer_mem", "gdrdrv", "ko2iblnd", "mmfs26", "beegfs"};
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    *any = 0;
    fj_status st = FJ_OK;
    if (fj_readfile(root, "/proc/modules", &b) != FJ_OK) {
        fj_buf_free(&b);
        return FJ_OK;
    }
    int first = 1;
    for (int kind = 0; kind < 2 && st == FJ_OK; kind++) {
        const char **set = kind ? third : storage;
        size_t nset = kind ? sizeof third / sizeof *third : sizeof storage / sizeof *storage;
        int k = 0;
        for (size_t i = 0; i < nset && st == FJ_OK; i++) {
            size_t n = strlen(set[i]);
            int loaded = 0;
            for (const char *p = b.data; p && *p && !loaded; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                loaded = !strncmp(p, set[i], n) && p[n] == ' ';
            if (!loaded)
                continue;
            char key[32];
            snprintf(key, sizeof key, "%s.%d", kind ? "thirdParty" : "storage", k++);
            if (first)
                st = fj_buf_puts(o, ",{\"subtype\":\"kernel-modules\",\"data\":{");
            if (st == FJ_OK)
                st = kv_str(o, &first, key, set[i]);
            *any = 1;
        }
    }
    if (st == FJ_OK && *any)
        st = fj_buf_puts(o, "}}");
    fj_buf_free(&b);
    return st;
}

fj_status fj_nettopo_measurement(const fj_nettopo_in *in, fj_buf *out)
{
    const fj_pcitree *t = in->tree;
    static pf pfs[MAX_PF]; /* 128 x ~500 bytes: off the stack; callers are one thread */
    size_t npf = 0;
    for (size_t i = 0; i < t->n && npf < MAX_PF; i++) {
        const fj_pcidev *d = &t->devs[i];
        unsigned base = d->class_code >> 8;
        if (d->vendor != 0x15b3 || d->is_vf || d->is_bridge || !(base == 0x02 || d->class_code == 0x0c06))
            continue;
        pf *p = &pfs[npf++];
        memset(p, 0, sizeof *p);
        p->dev = (int)i;
        p->gpu = -1;
        p->rail = -1;
        snprintf(p->netdev, sizeof p->netdev, "%s", d->netdev);
        snprintf(p->rdma, sizeof p->rdma, "%s", d->rdma);
        if (d->sysfs[0])
            read_pf_sysfs(in->root, d, p);
        else if (p->netdev[0])
            snprintf(p->link, sizeof p->link, "%s", !strncmp(p->netdev, "ib", 2) ? "InfiniBand" : "Ethernet");
        p->numa = d->numa >= 0 ? d->numa : (t->devs[d->hostbridge].numa >= 0 ? t->devs[d->hostbridge].numa : 0);
    }
    if (!npf)
        return FJ_ENOTFOUND;
    /* PCI address order (the tree is depth-first). */
    for (size_t i = 1; i < npf; i++)
        for (size_t j = i; j > 0 && strcmp(t->devs[pfs[j - 1].dev].addr, t->devs[pfs[j].dev].addr) > 0; j--) {
            pf tmp = pfs[j];
            pfs[j] = pfs[j - 1];
            pfs[j - 1] = tmp;
        }

    /* The PSID is the card's: a port without an RDMA device (so no board_id) shares its sibling's. */
    for (size_t i = 0; i < npf; i++)
        for (size_t j = 0; j < npf && !pfs[i].psid[0]; j++) {
            const char *a = t->devs[pfs[i].dev].addr, *b = t->devs[pfs[j].dev].addr;
            size_t dev_len = strcspn(a, ".");
            if (j != i && pfs[j].psid[0] && !strncmp(a, b, dev_len) && b[dev_len] == '.')
                memcpy(pfs[i].psid, pfs[j].psid, sizeof pfs[i].psid); /* j != i: distinct entries */
        }

    int gpus[MAX_GPU];
    size_t ngpu = fj_pcitree_nvidia_gpus(t, gpus, MAX_GPU);
    int taken[MAX_GPU] = {0};
    for (size_t i = 0; i < npf; i++) {
        pf *p = &pfs[i];
        if (!ngpu)
            continue;
        fj_prox best = FJ_PROX_SYS;
        for (size_t g = 0; g < ngpu; g++) {
            fj_prox c = fj_pcitree_proximity(t, p->dev, gpus[g]);
            if (c < best)
                best = c;
        }
        p->prox = best;
        p->have_prox = 1;
        int pick = -1;
        for (size_t g = 0; g < ngpu; g++) {
            if (fj_pcitree_proximity(t, p->dev, gpus[g]) != best)
                continue;
            if (pick < 0)
                pick = (int)g;
            if (!taken[g]) {
                pick = (int)g;
                break;
            }
        }
        int local_gpus = 0, only = -1;
        for (size_t g = 0; g < ngpu; g++)
            if (t->devs[gpus[g]].numa == p->numa || t->devs[gpus[g]].numa < 0) {
                local_gpus++;
                only = (int)g;
            }
        if (best <= FJ_PROX_PHB)
            p->gpu = pick;
        else if (best == FJ_PROX_NODE && local_gpus == 1)
            p->gpu = only; /* a single GPU on the NUMA node is everyone's GPU (DGX Spark) */
        if (p->gpu >= 0)
            taken[p->gpu] = 1;
    }
    int rails = 0, n_ib = 0, n_eth = 0, sriov = 0, rdma = 0;
    for (size_t i = 0; i < npf; i++) {
        pf *p = &pfs[i];
        if (in_list(in->north_south, p->netdev) || in_list(in->north_south, p->rdma))
            p->north_south = 1;
        else if (in_list(in->east_west, p->netdev) || in_list(in->east_west, p->rdma))
            p->north_south = 0;
        else
            p->north_south = !((p->have_prox && p->prox <= FJ_PROX_PXB) || !strcmp(p->link, "InfiniBand"));
        if (!p->north_south)
            p->rail = rails++;
        n_ib += !strcmp(p->link, "InfiniBand");
        n_eth += !strcmp(p->link, "Ethernet");
        sriov |= p->sriov;
        rdma |= p->rdma[0] != '\0';
    }

    char machine[128] = "", mt[128], ident[128], gpu_type[128] = "", sel[320];
    if (in->machine_type)
        snprintf(machine, sizeof machine, "%s", in->machine_type);
    else
        fj_readline(in->root, "/sys/class/dmi/id/product_name", machine, sizeof machine);
    slug(machine, mt, sizeof mt, 0);
    slug(machine[0] ? machine : in->node, ident, sizeof ident, 1);
    if (in->gpu_type)
        slug(in->gpu_type, gpu_type, sizeof gpu_type, 0);
    if (in->node_selector && *in->node_selector)
        snprintf(sel, sizeof sel, "%s", in->node_selector);
    else
        snprintf(sel, sizeof sel, "kubernetes.io/hostname=%s", in->node);
    const char *link = n_ib == (int)npf ? "InfiniBand" : n_eth == (int)npf ? "Ethernet" : "";

    fj_status st = fj_buf_puts(out, "{\"type\":\"NetworkTopology\",\"subtypes\":[{\"subtype\":\"identity\",\"context\":{");
    int first = 1;
    if (st == FJ_OK) st = kv_str(out, &first, "identifier", ident);
    if (st == FJ_OK) st = kv_str(out, &first, "machineType", mt);
    if (st == FJ_OK) st = kv_str(out, &first, "gpuType", gpu_type);
    if (st == FJ_OK) st = kv_str(out, &first, "linkType", link);
    if (st == FJ_OK) st = kv_str(out, &first, "nodeSelector", sel);
    if (st == FJ_OK) st = fj_buf_printf(out, "},\"data\":{\"pf-count\":%zu,\"rail-count\":%d}}", npf, rails);
    if (st == FJ_OK)
        st = fj_buf_printf(out,
                           ",{\"subtype\":\"capabilities\",\"data\":{\"sriov\":%s,\"rdma\":%s,\"ib\":%s}}"
                           ",{\"subtype\":\"pfs\",\"items\":[",
                           sriov ? "true" : "false", rdma ? "true" : "false", n_ib ? "true" : "false");
    for (size_t i = 0; i < npf && st == FJ_OK; i++) {
        const pf *p = &pfs[i];
        const fj_pcidev *d = &t->devs[p->dev];
        char devid[8], gname[16], num[32];
        snprintf(devid, sizeof devid, "%04x", d->device);
        st = fj_buf_puts(out, i ? ",{\"context\":{" : "{\"context\":{");
        first = 1;
        if (st == FJ_OK) st = kv_str(out, &first, "pciAddress", d->addr);
        if (st == FJ_OK) st = kv_str(out, &first, "deviceID", devid);
        if (st == FJ_OK) st = kv_str(out, &first, "psid", p->psid);
        if (st == FJ_OK) st = kv_str(out, &first, "partNumber", p->pn);
        if (st == FJ_OK) st = kv_str(out, &first, "rdmaDevice", p->rdma);
        if (st == FJ_OK) st = kv_str(out, &first, "networkInterface", p->netdev);
        if (st == FJ_OK && p->model[0]) st = kv_str(out, &first, "model", p->model);
        if (st == FJ_OK && p->gpu >= 0) {
            snprintf(gname, sizeof gname, "GPU%d", p->gpu);
            st = kv_str(out, &first, "connectedGPU", gname);
        }
        if (st == FJ_OK && p->have_prox) st = kv_str(out, &first, "gpuProximity", fj_prox_name(p->prox));
        if (st == FJ_OK) st = fj_buf_puts(out, "},\"data\":{");
        first = 1;
        if (st == FJ_OK && p->rail >= 0) {
            snprintf(num, sizeof num, "%d", p->rail);
            st = kv_raw(out, &first, "rail", num);
        }
        snprintf(num, sizeof num, "%d", p->numa);
        if (st == FJ_OK) st = kv_raw(out, &first, "numaNode", num);
        if (st == FJ_OK) st = kv_str(out, &first, "traffic", p->north_south ? "north-south" : "east-west");
        if (st == FJ_OK) st = fj_buf_puts(out, "}}");
    }
    if (st == FJ_OK)
        st = fj_buf_puts(out, "]}");
    int any;
    if (st == FJ_OK)
        st = kernel_modules(in->root, out, &any);
    if (st == FJ_OK)
        st = fj_buf_puts(out, "]}");
    return st;
}
