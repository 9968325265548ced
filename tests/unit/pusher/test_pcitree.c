/* test_pcitree.c — proximity classes from real PCI trees (hwloc XML exports in shared/data) and
 * from a generated sysfs tree.
 *
 * DGX-2 (nvidiaDGX2.xml): each socket has two host bridges ([2b-3b], [4e-67] on package 0;
 * [ae-c7], [d7-e7] on package 1). Below each root port sits a PLX switch whose downstream ports
 * lead to two more PLX switches, each holding two V100s. So:
 *   GPU0 34:00.0 and GPU1 36:00.0 share switch 32:00.0            -> PIX
 *   GPU0 and GPU2 39:00.0 meet at switch 2c:00.0 through 3 switches -> PXB
 *   GPU0 and GPU4 57:00.0: other host bridge, same NUMA node        -> NODE
 *   GPU0 and GPU8 b7:00.0: other socket                             -> SYS
 * The export holds no NIC. Bus 35 under switch 32:00.0 (range [33-36], only 34 and 36 used) is
 * where a DGX-2 has its InfiniBand card next to GPU0/GPU1; plugged in there, a NIC must see
 * PIX to GPU0-1, PXB to GPU2-3, NODE to GPU4-7 and SYS to GPU8-15 — nvidia-smi topo -m's answer
 * for mlx5_0 on a DGX-2.
 *
 * 24em64t-2n6c2t-pci.xml: a ConnectX-2 (15b3:6746, mlx4_0) on root port 00:05.0 and a Tesla on
 * root port 00:07.0 of the same host bridge -> PHB; the two other Teslas are on socket 1 -> SYS. */
#include "hwtopo.h"
#include "nettopo.h"
#include "pcitree.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define XML(f) FJ_SHARED_DIR "/data/hwloc-xml/" f

static fj_hwtopo *load(const char *path, fj_pcitree *t)
{
    char why[160];
    fj_hwtopo *h = fj_hwtopo_load(path, why);
    cr_assert_not_null(h, "%s", why);
    cr_assert_eq(fj_pcitree_from_hwloc(fj_hwtopo_raw(h), t), FJ_OK);
    return h;
}

Test(pcitree, dgx2_gpu_classes)
{
    fj_pcitree t;
    fj_hwtopo *h = load(XML("nvidiaDGX2.xml"), &t);
    int g[32];
    size_t n = fj_pcitree_nvidia_gpus(&t, g, 32);
    cr_assert_eq(n, 16); /* the 12 NVSwitches (class 0x0680) are not GPUs */
    cr_assert_str_eq(t.devs[g[0]].addr, "0000:34:00.0");
    cr_assert_str_eq(t.devs[g[15]].addr, "0000:e7:00.0");
    cr_assert_str_eq(t.devs[g[0]].model, "Tesla V100-SXM3-32GB-H");
    cr_assert_eq(fj_pcitree_proximity(&t, g[0], g[1]), FJ_PROX_PIX);
    cr_assert_eq(fj_pcitree_proximity(&t, g[0], g[2]), FJ_PROX_PXB);
    cr_assert_eq(fj_pcitree_proximity(&t, g[0], g[3]), FJ_PROX_PXB);
    cr_assert_eq(fj_pcitree_proximity(&t, g[2], g[3]), FJ_PROX_PIX);
    for (int i = 4; i < 8; i++)
        cr_assert_eq(fj_pcitree_proximity(&t, g[0], g[i]), FJ_PROX_NODE, "GPU0-GPU%d", i);
    for (int i = 8; i < 16; i++)
        cr_assert_eq(fj_pcitree_proximity(&t, g[0], g[i]), FJ_PROX_SYS, "GPU0-GPU%d", i);
    cr_assert_eq(fj_pcitree_proximity(&t, g[8], g[9]), FJ_PROX_PIX);
    cr_assert_eq(fj_pcitree_proximity(&t, g[12], g[15]), FJ_PROX_PXB);
    cr_assert_eq(fj_pcitree_proximity(&t, g[12], g[8]), FJ_PROX_NODE);
    for (size_t i = 0; i < t.n; i++)
        cr_assert_neq(t.devs[i].vendor, 0x15b3, "the export has no Mellanox device");
    fj_pcitree_free(&t);
    fj_hwtopo_free(h);
}

Test(pcitree, dgx2_nic_in_the_free_slot)
{
    fj_pcitree t;
    fj_hwtopo *h = load(XML("nvidiaDGX2.xml"), &t);
    int sw = fj_pcitree_find(&t, "0000:32:00.0");
    cr_assert_geq(sw, 0);
    fj_pcidev port = {.addr = "0000:33:08.0", .vendor = 0x10b5, .device = 0x9781, .class_code = 0x0604,
                      .is_bridge = 1, .numa = -1};
    int p = fj_pcitree_add(&t, &port, sw);
    fj_pcidev nic = {.addr = "0000:35:00.0", .vendor = 0x15b3, .device = 0x1019, .class_code = 0x0207,
                     .numa = -1, .netdev = "ib0", .rdma = "mlx5_0"};
    int x = fj_pcitree_add(&t, &nic, p);
    int g[32];
    fj_pcitree_nvidia_gpus(&t, g, 32);
    const fj_prox want[16] = {FJ_PROX_PIX,  FJ_PROX_PIX,  FJ_PROX_PXB,  FJ_PROX_PXB,  FJ_PROX_NODE, FJ_PROX_NODE,
                              FJ_PROX_NODE, FJ_PROX_NODE, FJ_PROX_SYS,  FJ_PROX_SYS,  FJ_PROX_SYS,  FJ_PROX_SYS,
                              FJ_PROX_SYS,  FJ_PROX_SYS,  FJ_PROX_SYS,  FJ_PROX_SYS};
    for (int i = 0; i < 16; i++)
        cr_assert_eq(fj_pcitree_proximity(&t, x, g[i]), want[i], "mlx5_0-GPU%d: %s", i,
                     fj_prox_name(fj_pcitree_proximity(&t, x, g[i])));
    fj_buf out;
    fj_buf_init(&out, 1 << 20);
    fj_nettopo_in in = {.root = "/nonexistent", .tree = &t, .node = "dgx2-01", .machine_type = "NVIDIA DGX-2H",
                        .gpu_type = "Tesla V100-SXM3-32GB-H"};
    cr_assert_eq(fj_nettopo_measurement(&in, &out), FJ_OK);
    cr_assert(strstr(out.data, "\"pciAddress\":\"0000:35:00.0\",\"deviceID\":\"1019\""), "%s", out.data);
    cr_assert(strstr(out.data, "\"rdmaDevice\":\"mlx5_0\",\"networkInterface\":\"ib0\",\"connectedGPU\":\"GPU0\","
                               "\"gpuProximity\":\"PIX\"},\"data\":{\"rail\":0,\"numaNode\":0,\"traffic\":\"east-west\"}"),
              "%s", out.data);
    cr_assert(strstr(out.data, "\"identifier\":\"nvidia-dgx-2h\",\"machineType\":\"NVIDIA-DGX-2H\","
                               "\"gpuType\":\"Tesla-V100-SXM3-32GB-H\",\"linkType\":\"InfiniBand\","
                               "\"nodeSelector\":\"kubernetes.io/hostname=dgx2-01\"},\"data\":{\"pf-count\":1,\"rail-count\":1}"),
              "%s", out.data);
    fj_buf_free(&out);
    fj_pcitree_free(&t);
    fj_hwtopo_free(h);
}

Test(pcitree, em64t_connectx2_and_teslas)
{
    fj_pcitree t;
    fj_hwtopo *h = load(XML("24em64t-2n6c2t-pci.xml"), &t);
    int g[8];
    cr_assert_eq(fj_pcitree_nvidia_gpus(&t, g, 8), 3);
    cr_assert_str_eq(t.devs[g[0]].addr, "0000:06:00.0");
    cr_assert_str_eq(t.devs[g[1]].addr, "0000:11:00.0");
    cr_assert_str_eq(t.devs[g[2]].addr, "0000:14:00.0");
    int x = fj_pcitree_find(&t, "0000:05:00.0");
    cr_assert_geq(x, 0);
    cr_assert_str_eq(t.devs[x].rdma, "mlx4_0");
    cr_assert_eq(fj_pcitree_proximity(&t, x, g[0]), FJ_PROX_PHB);
    cr_assert_eq(fj_pcitree_proximity(&t, x, g[1]), FJ_PROX_SYS);
    cr_assert_eq(fj_pcitree_proximity(&t, x, g[2]), FJ_PROX_SYS);
    cr_assert_eq(fj_pcitree_proximity(&t, g[1], g[2]), FJ_PROX_PHB);
    fj_buf out;
    fj_buf_init(&out, 1 << 20);
    fj_nettopo_in in = {.root = "/nonexistent", .tree = &t, .node = "n1", .machine_type = ""};
    cr_assert_eq(fj_nettopo_measurement(&in, &out), FJ_OK);
    cr_assert(strstr(out.data, "\"pciAddress\":\"0000:05:00.0\",\"deviceID\":\"6746\",\"psid\":\"\",\"partNumber\":\"\","
                               "\"rdmaDevice\":\"mlx4_0\",\"networkInterface\":\"eth2\",\"connectedGPU\":\"GPU0\","
                               "\"gpuProximity\":\"PHB\"},\"data\":{\"numaNode\":0,\"traffic\":\"north-south\"}"),
              "%s", out.data);
    fj_buf_free(&out);
    fj_pcitree_free(&t);
    fj_hwtopo_free(h);
}

Test(pcitree, no_nic_no_measurement)
{
    fj_pcitree t;
    fj_hwtopo *h = load(XML("96em64t-4n4d3ca2co-pci.xml"), &t);
    fj_buf out;
    fj_buf_init(&out, 1 << 20);
    fj_nettopo_in in = {.root = "/nonexistent", .tree = &t, .node = "n1"};
    cr_assert_eq(fj_nettopo_measurement(&in, &out), FJ_ENOTFOUND);
    cr_assert_eq(out.len, 0);
    fj_buf_free(&out);
    fj_pcitree_free(&t);
    fj_hwtopo_free(h);
}

/* --- a generated sysfs tree: root port, a switch with a GPU and a dual-port NIC (+ a VF) ----- */

static void put(const char *root, const char *rel, const char *text)
{
    char p[1024], cmd[1200];
    snprintf(p, sizeof p, "%s%s", root, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", p);
    cr_assert_eq(system(cmd), 0);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static void dev(const char *root, const char *path, const char *vendor, const char *device, const char *class_,
                const char *numa)
{
    char rel[512];
    snprintf(rel, sizeof rel, "/sys/devices/%s/vendor", path);
    put(root, rel, vendor);
    snprintf(rel, sizeof rel, "/sys/devices/%s/device", path);
    put(root, rel, device);
    snprintf(rel, sizeof rel, "/sys/devices/%s/class", path);
    put(root, rel, class_);
    snprintf(rel, sizeof rel, "/sys/devices/%s/numa_node", path);
    put(root, rel, numa);
}

Test(pcitree, sysfs_tree_and_nic_details)
{
    char root[] = "/tmp/fj-pcitree-XXXXXX";
    cr_assert_not_null(mkdtemp(root));
    const char *rp = "pci0000:80/0000:80:01.0";
    const char *up = "pci0000:80/0000:80:01.0/0000:81:00.0";
    const char *gpu = "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0";
    const char *nic0 = "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:04.0/0000:84:00.0";
    const char *nic1 = "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:04.0/0000:84:00.1";
    const char *vf = "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:04.0/0000:84:00.2";
    dev(root, rp, "0x8086", "0x2030", "0x060400", "1");
    dev(root, up, "0x10b5", "0x9781", "0x060400", "1");
    dev(root, "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0", "0x10b5", "0x9781", "0x060400", "1");
    dev(root, "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:04.0", "0x10b5", "0x9781", "0x060400", "1");
    dev(root, gpu, "0x10de", "0x2330", "0x030200", "1");
    dev(root, nic0, "0x15b3", "0x1021", "0x020700", "1");
    dev(root, nic1, "0x15b3", "0x1021", "0x020700", "1");
    dev(root, vf, "0x15b3", "0x101e", "0x020700", "1");
    char rel[512];
    snprintf(rel, sizeof rel, "/sys/devices/%s/physfn/vendor", vf); /* a VF points at its PF */
    put(root, rel, "0x15b3");
    snprintf(rel, sizeof rel, "/sys/devices/%s/net/ibp132s0/type", nic0);
    put(root, rel, "32\n");
    snprintf(rel, sizeof rel, "/sys/devices/%s/infiniband/mlx5_0/board_id", nic0);
    put(root, rel, "MT_0000000838\n");
    snprintf(rel, sizeof rel, "/sys/devices/%s/infiniband/mlx5_0/ports/1/link_layer", nic0);
    put(root, rel, "InfiniBand\n");
    snprintf(rel, sizeof rel, "/sys/devices/%s/sriov_totalvfs", nic0);
    put(root, rel, "8\n");
    snprintf(rel, sizeof rel, "/sys/devices/%s/net/eth9/type", nic1);
    put(root, rel, "1\n");
    /* VPD: identifier string, then read-only keywords PN and EC, then the end tag. */
    static const unsigned char vpd[] = {0x82, 10, 0, 'C', 'o', 'n', 'n', 'e', 'c', 't', 'X', '-', '7',
                                        0x90, 18, 0, 'P', 'N', 9, 'M', 'C', 'X', '7', '5', '3', '1', '0', '5',
                                        'E', 'C', 3, 'A', '1', ' ', 0x78};
    char p[1024];
    snprintf(p, sizeof p, "%s/sys/devices/%s/vpd", root, nic0);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    fwrite(vpd, 1, sizeof vpd, f);
    fclose(f);
    put(root, "/proc/modules", "nvme_rdma 45056 0 - Live 0x0\nnvidia_peermem 16384 0 - Live 0x0\nib_core 1 2 x Live 0\n");

    fj_pcitree t;
    cr_assert_eq(fj_pcitree_from_sysfs(root, &t), FJ_OK);
    cr_assert_eq(t.n, 9);
    int x = fj_pcitree_find(&t, "0000:84:00.0"), y = fj_pcitree_find(&t, "0000:84:00.1");
    int g = fj_pcitree_find(&t, "0000:83:00.0"), v = fj_pcitree_find(&t, "0000:84:00.2");
    cr_assert(x >= 0 && y >= 0 && g >= 0 && v >= 0);
    cr_assert(t.devs[v].is_vf);
    cr_assert_eq(t.devs[x].depth, 4);
    cr_assert_eq(fj_pcitree_proximity(&t, x, g), FJ_PROX_PIX);
    cr_assert_eq(fj_pcitree_proximity(&t, x, y), FJ_PROX_PIX);
    fj_buf out;
    fj_buf_init(&out, 1 << 20);
    fj_nettopo_in in = {.root = root, .tree = &t, .node = "n1", .machine_type = "Test Box", .node_selector = "rack=7"};
    cr_assert_eq(fj_nettopo_measurement(&in, &out), FJ_OK);
    cr_assert(strstr(out.data, "{\"context\":{\"pciAddress\":\"0000:84:00.0\",\"deviceID\":\"1021\",\"psid\":\"mt_0000000838\","
                               "\"partNumber\":\"MCX753105\",\"rdmaDevice\":\"mlx5_0\",\"networkInterface\":\"ibp132s0\","
                               "\"model\":\"ConnectX-7\",\"connectedGPU\":\"GPU0\",\"gpuProximity\":\"PIX\"},"
                               "\"data\":{\"rail\":0,\"numaNode\":1,\"traffic\":\"east-west\"}}"),
              "%s", out.data);
    /* the second port: no RDMA device (the card's PSID still), Ethernet, PIX to the only GPU */
    cr_assert(strstr(out.data, "\"pciAddress\":\"0000:84:00.1\",\"deviceID\":\"1021\",\"psid\":\"mt_0000000838\",\"partNumber\":\"\","
                               "\"rdmaDevice\":\"\",\"networkInterface\":\"eth9\",\"connectedGPU\":\"GPU0\",\"gpuProximity\":\"PIX\"},"
                               "\"data\":{\"rail\":1,\"numaNode\":1,\"traffic\":\"east-west\"}"),
              "%s", out.data);
    cr_assert_null(strstr(out.data, "0000:84:00.2"), "virtual functions are not PFs");
    cr_assert(strstr(out.data, "\"capabilities\",\"data\":{\"sriov\":true,\"rdma\":true,\"ib\":true}"), "%s", out.data);
    cr_assert(strstr(out.data, "\"nodeSelector\":\"rack=7\""));
    cr_assert(strstr(out.data, "{\"subtype\":\"kernel-modules\",\"data\":{\"storage.0\":\"nvme_rdma\","
                               "\"thirdParty.0\":\"nvidia_peermem\"}}"),
              "%s", out.data);
    /* north_south wins over the guess */
    fj_buf_reset(&out);
    in.north_south = "eth9";
    cr_assert_eq(fj_nettopo_measurement(&in, &out), FJ_OK);
    cr_assert(strstr(out.data, "\"networkInterface\":\"eth9\",\"connectedGPU\":\"GPU0\",\"gpuProximity\":\"PIX\"},"
                               "\"data\":{\"numaNode\":1,\"traffic\":\"north-south\"}"),
              "%s", out.data);
    cr_assert(strstr(out.data, "\"rail-count\":1"));
    fj_buf_free(&out);
    fj_pcitree_free(&t);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
}

Test(pcitree, vpd_parser_is_bounded)
{
    char model[32], pn[32];
    static const unsigned char truncated[] = {0x82, 50, 0, 'X'};
    fj_vpd_parse(truncated, sizeof truncated, model, sizeof model, pn, sizeof pn);
    cr_assert_str_eq(model, "");
    cr_assert_str_eq(pn, "");
    static const unsigned char bad_kw[] = {0x90, 4, 0, 'P', 'N', 200, 'x', 0x78};
    fj_vpd_parse(bad_kw, sizeof bad_kw, model, sizeof model, pn, sizeof pn);
    cr_assert_str_eq(pn, "");
}
