#!/usr/bin/env python3
"""fjord-push's NetworkTopology against the k8s-launch-kit machine presets in shared/data/aicr.

For each preset a sysfs tree is generated (in a temporary directory) that has the machine's PCI
shape: every NIC that the preset calls PIX to a GPU sits behind one PCIe switch with that GPU; other
NICs and GPUs get host bridges of their own on their NUMA node. GPU addresses are chosen so that
GPU0, GPU1... are in PCI-address order, as NVML numbers them. Then
`fjord-push --once --stdout --only topology --root TREE` must reproduce the preset's pfs: address,
device ID, PSID, part number, model, RDMA device, netdev, NUMA node, connectedGPU, gpuProximity,
rail and traffic. Traffic is a SKU decision on some machines (a PIX BlueField that is north-south,
Ethernet ConnectX-7s that are east-west); those PFs are named with --north-south/--east-west, as an
operator would, and everything else comes from the PCI tree."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ.get("FJORD_PUSH_BIN", "build-push/pusher/fjord-push")
SRC = os.environ.get("FJ_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.environ.get("FJ_SHARED_DIR", os.path.join(SRC, "..", "shared"))
AICR = os.path.join(SHARED, "data", "aicr")

OVERRIDES = {
    "p-l8k-preset-PowerEdge-XE9680-topology.yaml": {"north_south": "eth7,eth8"},
    "p-l8k-preset-ThinkSystem-SR675-V3-RTX-PRO-6000-topology.yaml": {
        "north_south": "ens2f0np0,ens2f1np1", "east_west": "ens15f0np0,ens15f1np1"},
    "p-l8k-preset-NVIDIA-DGX-Spark-NVIDIA-GB10-topology.yaml": {
        "east_west": "enp1s0f0np0,enp1s0f1np1,enP2p1s0f0np0,enP2p1s0f1np1"},
    "p-l8k-preset-ThinkSystem-SR680a-V3-topology.yaml": {},
    "p-l8k-preset-UCSC-885A-M8-H22-topology.yaml": {},
}


def unquote(v):
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    return v


def parse_preset(path):
    """The presets' YAML subset: top-level scalars, a capabilities.nodes map, a pfs list of maps."""
    top, pfs, caps, section = {}, [], {}, None
    for raw in open(path):
        line = raw.split(" #")[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        s = line.strip()
        if indent == 0:
            key, _, val = s.partition(":")
            section = key
            if val.strip():
                top[key] = unquote(val)
            continue
        if section == "pfs":
            if s.startswith("- "):
                pfs.append({})
                s = s[2:]
            key, _, val = s.partition(":")
            pfs[-1][key.strip()] = unquote(val)
        elif section == "capabilities" and ":" in s and not s.endswith(":"):
            key, _, val = s.partition(":")
            caps[key.strip()] = unquote(val) == "true"
    return top, pfs, caps


def bdf(addr):
    dom, bus, rest = addr.split(":")
    dev, fn = rest.split(".")
    return int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16)


def write(path, data, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(data)


def vpd(model, pn):
    ident = model.encode()
    out = bytes([0x82, len(ident) & 0xFF, len(ident) >> 8]) + ident
    if pn:
        kw = b"PN" + bytes([len(pn)]) + pn.encode()
        out += bytes([0x90, len(kw) & 0xFF, len(kw) >> 8]) + kw
    return out + b"\x78"


def build_tree(root, top, pfs, caps):
    ngpu = 1 + max([int(p["connectedGPU"][3:]) for p in pfs if p.get("connectedGPU")] + [0])
    # Switch groups: union of NIC devices (domain:bus:dev) and the GPUs they are PIX to.
    parent = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            x = parent[x]
        return x

    for p in pfs:
        d = p["pciAddress"].rsplit(".", 1)[0]
        find(("nic", d))
        if p.get("gpuProximity") == "PIX" and p.get("connectedGPU"):
            parent[find(("nic", d))] = find(("gpu", int(p["connectedGPU"][3:])))
    groups = {}
    for key in list(parent):
        groups.setdefault(find(key), []).append(key)
    nic_numa = {p["pciAddress"].rsplit(".", 1)[0]: int(p.get("numaNode") or 0) for p in pfs}
    used = {bdf(p["pciAddress"])[1] for p in pfs}
    # GPU buses: after the last NIC of their group; lone GPUs in the gaps, keeping GPU order.
    gpu_bus, gpu_numa, gpu_group = {}, {}, {}
    for g, members in groups.items():
        gpus = sorted(k[1] for k in members if k[0] == "gpu")
        nics = [k[1] for k in members if k[0] == "nic"]
        if not gpus:
            continue
        b = max(bdf(n + ".0")[1] for n in nics) + 1 if nics else None
        for k in gpus:
            gpu_group[k] = g
            gpu_numa[k] = nic_numa[nics[0]] if nics else 0
            if b is not None:
                gpu_bus[k] = b
                used.add(b)
                b += 1
    for k in range(ngpu):
        if k in gpu_bus:
            continue
        lo = max([gpu_bus[j] for j in range(k) if j in gpu_bus] + [0])
        b = lo + 1
        while b in used:
            b += 1
        gpu_bus[k] = b
        used.add(b)
        gpu_numa[k] = 0 if k < max(1, ngpu // 2) else int(top.get("numaNodes", "1")) - 1
    assert [gpu_bus[k] for k in range(ngpu)] == sorted(gpu_bus.values()), "GPU order must be address order"

    hb_next = [0xF0]

    def host_bridge(dom):
        hb = hb_next[0]
        hb_next[0] -= 1
        return f"sys/devices/pci{dom:04x}:{hb:02x}", f"{dom:04x}:{hb:02x}:01.0"

    def bridge(path, numa):
        write(f"{path}/vendor", "0x10b5\n")
        write(f"{path}/device", "0x9781\n")
        write(f"{path}/class", "0x060400\n")
        write(f"{path}/numa_node", f"{numa}\n")

    def nic_functions(parent_dir, dev):
        for p in pfs:
            if p["pciAddress"].rsplit(".", 1)[0] != dev:
                continue
            d = f"{parent_dir}/{p['pciAddress']}"
            ib = p["networkInterface"].startswith("ib")
            numa = p.get("numaNode") or "0"
            if top.get("machineType") == "NVIDIA_DGX_Spark":
                numa = "-1"  # as the kernel reports for the GB10's integrated NICs
            write(f"{d}/vendor", "0x15b3\n")
            write(f"{d}/device", f"0x{p['deviceID']}\n")
            write(f"{d}/class", "0x020700\n" if ib else "0x020000\n")
            write(f"{d}/numa_node", f"{numa}\n")
            write(f"{d}/sriov_totalvfs", "8\n" if caps.get("sriov", True) else "0\n")
            write(f"{d}/net/{p['networkInterface']}/type", "32\n" if ib else "1\n")
            if p.get("rdmaDevice"):
                r = f"{d}/infiniband/{p['rdmaDevice']}"
                if p.get("psid"):
                    write(f"{r}/board_id", p["psid"].upper() + "\n")
                write(f"{r}/ports/1/link_layer", "InfiniBand\n" if ib else "Ethernet\n")
            if p.get("model") or p.get("partNumber"):
                write(f"{d}/vpd", vpd(p.get("model", ""), p.get("partNumber", "")), "wb")

    def gpu(parent_dir, k):
        d = f"{parent_dir}/0000:{gpu_bus[k]:02x}:00.0"
        write(f"{d}/vendor", "0x10de\n")
        write(f"{d}/device", "0x2335\n")
        write(f"{d}/class", "0x030200\n")
        write(f"{d}/numa_node", f"{gpu_numa[k]}\n")

    for g, members in groups.items():
        nics = sorted(k[1] for k in members if k[0] == "nic")
        gpus = sorted(k[1] for k in members if k[0] == "gpu")
        dom = bdf(nics[0] + ".0")[0] if nics else 0
        numa = nic_numa[nics[0]] if nics else gpu_numa[gpus[0]]
        hb, rp = host_bridge(dom)
        rpd = f"{root}/{hb}/{rp}"
        bridge(rpd, numa)
        if gpus:  # a PCIe switch: upstream port, one downstream port per device
            up = f"{rpd}/{dom:04x}:{0x40:02x}:00.0"
            bridge(up, numa)
            port = 0
            for n in nics:
                dp = f"{up}/{dom:04x}:41:{port:02x}.0"
                port += 1
                bridge(dp, numa)
                nic_functions(dp, n)
            for k in gpus:
                dp = f"{up}/{dom:04x}:41:{port:02x}.0"
                port += 1
                bridge(dp, numa)
                gpu(dp, k)
        else:
            for n in nics:
                nic_functions(rpd, n)
    for k in range(ngpu):
        if k in gpu_group:
            continue
        hb, rp = host_bridge(0)
        rpd = f"{root}/{hb}/{rp}"
        bridge(rpd, gpu_numa[k])
        gpu(rpd, k)
    write(f"{root}/sys/class/dmi/id/product_name", top["machineType"] + "\n")


def check_preset(name):
    top, pfs, caps = parse_preset(os.path.join(AICR, name))
    root = tempfile.mkdtemp(prefix="fj-topo-")
    try:
        build_tree(root, top, pfs, caps)
        ov = OVERRIDES[name]
        args = [BIN, "--once", "--stdout", "--only", "topology", "--root", root, "--nvml-library", "none",
                "--node", "n1", "--cluster", "c", "--fake-time", "1700000000"]
        for k, v in ov.items():
            args += ["--" + k.replace("_", "-"), v]
        r = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        snap = json.loads(r.stdout)
        m = snap["measurements"][0]
        subs = {s["subtype"]: s for s in m["subtypes"]}
        ident = subs["identity"]
        assert ident["context"]["machineType"] == top["machineType"], ident
        assert ident["data"]["pf-count"] == len(pfs), ident
        rails = {p["rail"] for p in pfs if p.get("rail", "") != ""}
        assert ident["data"]["rail-count"] == len(rails), (ident, rails)
        for k, v in caps.items():
            assert subs["capabilities"]["data"][k] == v, (k, subs["capabilities"])
        items = {i["context"]["pciAddress"]: i for i in subs["pfs"]["items"]}
        assert sorted(items) == sorted(p["pciAddress"] for p in pfs)
        for p in pfs:
            it = items[p["pciAddress"]]
            c, d = it["context"], it["data"]
            where = f"{name} {p['pciAddress']}"
            assert c["deviceID"] == p["deviceID"], (where, c)
            assert c["psid"] == p.get("psid", "").lower(), (where, c)
            assert c["partNumber"] == p.get("partNumber", ""), (where, c)
            assert c.get("model", "") == p.get("model", ""), (where, c)
            assert c["rdmaDevice"] == p.get("rdmaDevice", ""), (where, c)
            assert c["networkInterface"] == p["networkInterface"], (where, c)
            assert c.get("gpuProximity") == p["gpuProximity"], (where, c, p)
            assert c.get("connectedGPU", "") == p.get("connectedGPU", ""), (where, c, p)
            assert d["numaNode"] == int(p["numaNode"]), (where, d)
            assert d["traffic"] == p["traffic"], (where, d, p)
            want_rail = int(p["rail"]) if p.get("rail", "") != "" else None
            assert d.get("rail") == want_rail, (where, d, p)
    finally:
        shutil.rmtree(root)


passed = failed = 0
for preset in sorted(OVERRIDES):
    try:
        check_preset(preset)
        passed += 1
        print(f"ok {preset}")
    except Exception as e:  # noqa: BLE001
        failed += 1
        print(f"FAIL {preset}: {e!r}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
