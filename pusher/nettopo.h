/* nettopo.h — the node's network topology as an NVIDIA aicr Measurement of type NetworkTopology
 * (subtypes identity, capabilities, pfs, kernel-modules), read the way NVIDIA's collectors do it:
 * Mellanox/NVIDIA physical functions (vendor 0x15b3, no virtual functions) from the PCI tree, their
 * netdev, RDMA device, PSID (infiniband/<dev>/board_id), part number and model (PCI VPD), NUMA node,
 * and the proximity class to the nearest NVIDIA GPU. Stateless. */
#ifndef FJ_PUSH_NETTOPO_H
#define FJ_PUSH_NETTOPO_H

#include "buf.h"
#include "fj_status.h"
#include "pcitree.h"

typedef struct fj_nettopo_in {
    const char *root;          /* sysfs/proc prefix for NIC details and /proc/modules */
    const fj_pcitree *tree;
    const char *node;
    const char *machine_type;  /* DMI product name; NULL to read root/sys/class/dmi/id/product_name */
    const char *gpu_type;      /* GPU model (from NVML or hwloc); NULL when unknown */
    const char *node_selector; /* NULL: kubernetes.io/hostname=<node> */
    const char *north_south;   /* comma-separated netdev/rdma names forced north-south, or NULL */
    const char *east_west;     /* comma-separated netdev/rdma names forced east-west, or NULL */
} fj_nettopo_in;

/* Appends the Measurement object ({"type":"NetworkTopology","subtypes":[...]}) to out.
 * FJ_ENOTFOUND (nothing appended) when the node has no such NIC. */
fj_status fj_nettopo_measurement(const fj_nettopo_in *in, fj_buf *out);

/* Parses a PCI VPD image: the identifier string (model) and the read-only PN keyword. */
void fj_vpd_parse(const unsigned char *vpd, size_t len, char *model, size_t mn, char *pn, size_t pn_n);

#endif
