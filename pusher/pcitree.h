/* pcitree.h — the PCI tree of a node (host bridges, bridges, functions) and the GPU–NIC proximity
 * classes nvidia-smi and NVML use, computed from it:
 *   PIX  the path crosses at most one PCIe switch (or none: functions of one device)
 *   PXB  it crosses several switches but not a host bridge
 *   PHB  it crosses the host bridge (same root complex, different root ports)
 *   NODE different host bridges on the same NUMA node
 *   SYS  different NUMA nodes (the SMP interconnect)
 * Switches are recognised by shape: below a root port, bridges alternate upstream port (even
 * depth) and downstream ports (odd depth), so a downstream port belongs to its parent's switch.
 * Built from sysfs (root/sys/devices/pci*) or from an hwloc topology (XML exports in tests).
 * Plain data: the caller owns the tree, nothing is shared. */
#ifndef FJ_PUSH_PCITREE_H
#define FJ_PUSH_PCITREE_H

#include "fj_status.h"

#include <stddef.h>

struct hwloc_topology;

typedef enum { FJ_PROX_PIX, FJ_PROX_PXB, FJ_PROX_PHB, FJ_PROX_NODE, FJ_PROX_SYS } fj_prox;
const char *fj_prox_name(fj_prox p);

typedef struct fj_pcidev {
    char addr[32];      /* "0000:34:00.0" (lower case); host bridges: "pci0000:00" or "hostbridge[2b-3b]" */
    unsigned vendor, device, class_code; /* class_code is base<<8 | subclass, e.g. 0x0302 */
    int parent;         /* index of the parent node, -1 for a host bridge */
    int hostbridge;     /* index of the host bridge above (itself for a host bridge) */
    int depth;          /* 0 host bridge, 1 root port or integrated device, ... */
    int is_bridge, is_vf;
    int numa;           /* NUMA node, -1 unknown */
    char sysfs[512];    /* root-relative sysfs directory, "" when built from hwloc */
    char netdev[32], rdma[32]; /* from hwloc OS devices (sysfs readers fill these later) */
    char model[128];    /* GPU model from hwloc (GPUModel info) */
} fj_pcidev;

typedef struct fj_pcitree {
    fj_pcidev *devs;
    size_t n, cap;
} fj_pcitree;

fj_status fj_pcitree_from_sysfs(const char *root, fj_pcitree *t);
fj_status fj_pcitree_from_hwloc(struct hwloc_topology *topo, fj_pcitree *t);

/* Appends a node (tests use it to plug a device into a free slot); returns its index or -1.
 * parent's hostbridge and depth are inherited; numa too when d->numa is -1. */
int fj_pcitree_add(fj_pcitree *t, const fj_pcidev *d, int parent);

/* Index of the node with this address (case-insensitive), or -1. */
int fj_pcitree_find(const fj_pcitree *t, const char *addr);

fj_prox fj_pcitree_proximity(const fj_pcitree *t, int a, int b);

/* NVIDIA GPUs (vendor 0x10de, display class 0x03xx), in PCI address order: GPU0, GPU1... as NVML
 * numbers them. Fills idx (capacity max) and returns the count. */
size_t fj_pcitree_nvidia_gpus(const fj_pcitree *t, int *idx, size_t max);

void fj_pcitree_free(fj_pcitree *t);

#endif
