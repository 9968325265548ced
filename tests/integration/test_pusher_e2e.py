#!/usr/bin/env python3
"""End to end: the built fjord-push, run --once on a fixture root (tests/data/pusher/node-x86, the
24em64t hwloc export for its PCI tree, the fake NVML with two GPUs), sends sysinfo, a sample and
its NetworkTopology snapshot to a real fjord started here; the node, its GPUs and its network
topology are then read back through the API, the topology with aicr constraint paths. A second
run of the same collection adds nothing; a later run whose topology changed becomes the latest."""
import os
import sys
import subprocess
import urllib.parse

# ctest gives test_pusher* scripts the pusher's paths; the server is built next to it.
PUSH = os.environ.get("FJORD_PUSH_BIN", "build/pusher/fjord-push")
FAKE = os.environ.get("FJ_FAKE_NVML_LIB", "build/pusher/fake_nvml/libnvidia-ml.so.1")
if "FJORD_BIN" not in os.environ:
    os.environ["FJORD_BIN"] = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(PUSH))), "fjord")
if not os.path.exists(os.environ["FJORD_BIN"]):
    print("fjord not built (%s): skipped\n0 passed, 0 failed" % os.environ["FJORD_BIN"])
    sys.exit(0)

from harness import Fjord, SHARED, SOURCE, check, finish  # noqa: E402 (FJORD_BIN must be set first)

ROOT = os.path.join(SOURCE, "tests", "data", "pusher", "node-x86")
HWLOC = os.path.join(SHARED, "data", "hwloc-xml", "24em64t-2n6c2t-pci.xml")
CLUSTER, NODE = "fox.example", "c1-7"
T0 = 1698400000  # 2023-10-27T09:46:40Z


def push(f, auth_file, fake_time, *extra):
    env = dict(os.environ)
    env["FJ_FAKE_NVML"] = "gpus 2; proc gpu=0 pid=5000 mem=1048576 sm=30"
    cmd = [PUSH, "--once", "--url", "http://127.0.0.1:%d/ingest" % f.port, "--auth-file", auth_file,
           "--root", ROOT, "--hwloc-xml", HWLOC, "--nvml-library", FAKE, "--node", NODE, "--cluster", CLUSTER,
           "--fake-time", str(fake_time), "--timeout", "10s", "--spool-dir", ""] + list(extra)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def lookup(f, auth, path):
    q = urllib.parse.urlencode({"cluster": CLUSTER, "path": path})
    return f.get("/api/v1/nodes/%s/measurements?%s" % (NODE, q), auth=auth)


def expect(f, auth, path, want):
    r = lookup(f, auth, path)
    got = r.json().get("value") if r.status == 200 else None
    check(r.status == 200 and got == want, "%s: want %r, got %d %s" % (path, want, r.status, r.body[:300]))


def main():
    f = Fjord().start()
    try:
        secret = f.token(CLUSTER)
        auth = (CLUSTER, secret)
        auth_file = os.path.join(f.tmp, "push.secret")
        with open(auth_file, "w") as fh:
            fh.write("%s:%s\n" % (CLUSTER, secret))

        r = push(f, auth_file, T0)
        check(r.returncode == 0, "fjord-push delivered everything: rc %d, %s" % (r.returncode, r.stderr[-500:]))

        # The node and its GPUs, from the sysinfo it sent.
        r = f.get("/api/v1/nodes?cluster=%s" % CLUSTER, auth=auth)
        nodes = {n["node"]: n for n in r.json()["nodes"]} if r.status == 200 else {}
        check(NODE in nodes, "node listed: %d %s" % (r.status, r.body[:300]))
        # (the listing nests the latest sysinfo under "sysinfo", or gives its fields flat with "gpu_cards")
        n = nodes.get(NODE) or {}
        si = n.get("sysinfo") or n
        check(si.get("gpus") == 2, "two GPUs from the fake NVML: %s" % si)
        if "gpu_cards" in si:
            cards = si["gpu_cards"]
            check(len(cards) == 2 and all(c.get("manufacturer") == "NVIDIA" for c in cards), "GPU cards: %s" % cards)
        check((si.get("time") or si.get("sysinfo_time")) == "2023-10-27T09:46:40Z" and
              si.get("architecture") == "x86_64", "sysinfo of the fixture: %s" % si)
        check(f.query("SELECT count(*) FROM sysinfo_gpus") == [(2,)], "two GPU cards stored")
        check(f.query("SELECT count(*) FROM samples") == [(1,)], "the sample stored")

        # Its NetworkTopology, through constraint paths.
        expect(f, auth, "NetworkTopology.pfs[0].rdmaDevice", "mlx4_0")
        expect(f, auth, "NetworkTopology.pfs[0].networkInterface", "eth2")
        expect(f, auth, "NetworkTopology.pfs[rdmaDevice=mlx4_0].pciAddress", "0000:05:00.0")
        expect(f, auth, "NetworkTopology.pfs[pciAddress=0000:05:00.0].gpuProximity", "PHB")
        expect(f, auth, "NetworkTopology.pfs[0].traffic", "north-south")
        expect(f, auth, "NetworkTopology.capabilities.rdma", "true")
        expect(f, auth, "NetworkTopology.identity.pf-count", "1")
        expect(f, auth, "NetworkTopology.identity.rail-count", "0")
        r = lookup(f, auth, "NetworkTopology.pfs[0].rail")
        check(r.status == 404, "a north-south PF has no rail: %d %s" % (r.status, r.body[:200]))
        r = f.get("/api/v1/nodes/%s/measurements?cluster=%s" % (NODE, CLUSTER), auth=auth)
        snap = r.json().get("snapshot", {}) if r.status == 200 else {}
        md = snap.get("metadata", {})
        check(md.get("producer") == "fjord-push" and md.get("source-node") == NODE, "snapshot metadata: %s" % md)
        check(r.status == 200 and r.json().get("time") == "2023-10-27T09:46:40Z", "snapshot time: %s" % r.body[:120])

        # The same collection again: delivered, and nothing added.
        rows = f.row_counts()
        r = push(f, auth_file, T0)
        check(r.returncode == 0, "second run delivered: rc %d, %s" % (r.returncode, r.stderr[-500:]))
        check(f.row_counts() == rows, "re-sent documents added rows: %s" %
              {k: (rows.get(k), v) for k, v in f.row_counts().items() if rows.get(k) != v})

        # An hour later the PF is declared east-west: it gets rail 0, and that snapshot is the latest.
        r = push(f, auth_file, T0 + 3600, "--only", "topology", "--east-west", "eth2")
        check(r.returncode == 0, "third run delivered: rc %d, %s" % (r.returncode, r.stderr[-500:]))
        expect(f, auth, "NetworkTopology.pfs[0].rail", "0")
        expect(f, auth, "NetworkTopology.pfs[rail=0].rdmaDevice", "mlx4_0")
        expect(f, auth, "NetworkTopology.pfs[traffic=east-west].pciAddress", "0000:05:00.0")
        expect(f, auth, "NetworkTopology.identity.rail-count", "1")
        check(f.query("SELECT count(*) FROM measurement_snapshots") == [(2,)], "two snapshots kept")
        check(f.stop() == 0, "SIGTERM exits 0")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
