"""NVIDIA aicr snapshots through a real fjord: YAML and JSON, both spellings, compressed, through
/api/v1/ingest/measurements and /ingest; re-sending adds nothing; values read back with aicr
constraint paths (legacy, index, predicate; not found, conflict, malformed); the per-cluster
credentials apply as for Sonar."""
import json
import os
import urllib.parse

from harness import Fjord, SHARED, SOURCE, check, finish, zstd_bytes

AICR = os.path.join(SHARED, "data", "aicr")
DATA = os.path.join(SOURCE, "tests", "data", "aicr")
INGEST = "/api/v1/ingest/measurements"
YAML = {"Content-Type": "application/yaml"}


def read(path):
    with open(path, "rb") as f:
        return f.read()


def lookup(f, auth, node, path, cluster="fox"):
    q = urllib.parse.urlencode({"cluster": cluster, "path": path})
    return f.get("/api/v1/nodes/%s/measurements?%s" % (node, q), auth=auth)


def expect_value(f, auth, node, path, want, **more):
    r = lookup(f, auth, node, path)
    check(r.status == 200, "%s on %s: %d %s" % (path, node, r.status, r.body[:300]))
    if r.status != 200:
        return
    j = r.json()
    check(j["value"] == want, "%s on %s: value %r, want %r" % (path, node, j["value"], want))
    check(j["path"] == path and j["node"] == node and j["cluster"] == "fox", "answer names what it read: %s" % j)
    for k, v in more.items():
        check(j.get(k) == v, "%s on %s: %s is %r, want %r" % (path, node, k, j.get(k), v))


def expect_error(f, auth, node, path, status, code):
    r = lookup(f, auth, node, path)
    ok = r.status == status
    if ok:
        e = r.json()["error"]
        ok = e["code"] == code and e.get("path") == "path" and e["message"]
    check(ok, "%s on %s: want %d %s, got %d %s" % (path, node, status, code, r.status, r.body[:300]))


def test_ingest_and_resend(f, fox):
    doc = read(os.path.join(AICR, "m-snapshot-example-from-doc-go.yaml"))
    r = f.post(INGEST + "?cluster=fox&node=n1", doc, headers=YAML, auth=fox)
    check(r.status == 200, "YAML snapshot stored: %d %s" % (r.status, r.body[:300]))
    j = r.json() if r.status == 200 else {}
    check(j.get("cluster") == "fox" and j.get("node") == "n1" and j.get("topic") == "measurements",
          "answer names cluster, node, topic: %s" % j)
    check(j.get("time") == "2025-01-15T10:30:00Z", "time from metadata.timestamp: %s" % j)
    check(j.get("measurements") == 2 and j.get("subtypes") == 7, "counts measurements and subtypes: %s" % j)
    check(j.get("inserted") == 8 and j.get("duplicates") == 0, "snapshot + 7 subtype rows: %s" % j)
    rows = f.row_counts()
    check(rows.get("measurement_snapshots") == 1 and rows.get("measurements") == 7, "rows: %s" % rows)

    r = f.post(INGEST + "?cluster=fox&node=n1", doc, headers=YAML, auth=fox)
    check(r.status == 200 and r.json().get("inserted") == 0 and r.json().get("duplicates") == 8,
          "re-send counted as duplicates: %d %s" % (r.status, r.body[:200]))
    check(f.row_counts() == rows, "re-send added rows")

    # The same snapshot as zstd, and as JSON (the normalised form decodes to the same snapshot).
    r = f.post(INGEST + "?cluster=fox&node=n1", zstd_bytes(doc), headers=dict(YAML, **{"Content-Encoding": "zstd"}),
               auth=fox)
    check(r.status == 200 and r.json().get("inserted") == 0, "zstd re-send: %d %s" % (r.status, r.body[:200]))
    snap = f.get("/api/v1/nodes/n1/measurements?cluster=fox", auth=fox)
    check(snap.status == 200, "latest snapshot: %d %s" % (snap.status, snap.body[:200]))
    s = snap.json()["snapshot"]
    r = f.post(INGEST + "?cluster=fox&node=n1", json.dumps(s), auth=fox)
    check(r.status == 200 and r.json().get("inserted") == 0, "its own JSON re-sent is a duplicate: %d %s"
          % (r.status, r.body[:200]))
    check(f.row_counts() == rows, "compressed and JSON re-sends added rows")

    expect_value(f, fox, "n1", "K8s.server.version", "1.33.5", reading="1.33.5", **{"from": "data"})
    expect_value(f, fox, "n1", "K8s.argocd.gpu-operator.syncStatus", "Synced")
    expect_value(f, fox, "n1", "GPU.device.driver", "570.158.01")


def test_both_spellings(f, fox):
    go = read(os.path.join(DATA, "snapshot-xe9680-go.yaml"))
    oa = read(os.path.join(DATA, "snapshot-xe9680-openapi.json"))
    r = f.post(INGEST + "?cluster=fox&node=xe-go", go, headers={"Content-Type": "application/x-yaml"}, auth=fox)
    check(r.status == 200 and r.json()["inserted"] == 1 + 8, "Go-spelling YAML: %d %s" % (r.status, r.body[:300]))
    r = f.post(INGEST + "?cluster=fox&node=xe-oa", oa, auth=fox)
    check(r.status == 200 and r.json()["inserted"] == 1 + 8, "OpenAPI-spelling JSON: %d %s" % (r.status, r.body[:300]))
    for node in ("xe-go", "xe-oa"):
        expect_value(f, fox, node, "NetworkTopology.identity.pf-count", "10", reading=10)
        expect_value(f, fox, node, "NetworkTopology.capabilities.sriov", "true", reading=True)
        expect_value(f, fox, node, "NetworkTopology.pfs[0].rail", "0")
        expect_value(f, fox, node, "NetworkTopology.pfs[9].networkInterface", "eth11", **{"from": "context"})
        expect_value(f, fox, node, "NetworkTopology.pfs[rail=3].pciAddress", "0000:5e:00.0")
        expect_value(f, fox, node, "NetworkTopology.pfs[networkInterface=eth8].pciAddress", "0000:9d:00.1")
        expect_value(f, fox, node, "NetworkTopology.pfs[pciAddress=0000:9d:00.1].traffic", "north-south")
        expect_value(f, fox, node, "NetworkTopology.kernel-modules.storage.0", "nvme_rdma")
        expect_value(f, fox, node, "GPU.smi.power-limit", "700.5", reading=700.5)
        expect_value(f, fox, node, "SystemD.containerd.service.ActiveState", "active")
        expect_value(f, fox, node, "OS.sysctl./proc/sys/kernel/osrelease", "6.8.0-1028-aws")
        expect_error(f, fox, node, "NetworkTopology.pfs[traffic=east-west].rail", 422, "conflict")
        expect_error(f, fox, node, "NetworkTopology.pfs[psid=mt_0000000884].rail", 422, "conflict")
        expect_error(f, fox, node, "NetworkTopology.pfs[rail=99].pciAddress", 404, "not_found")
        expect_error(f, fox, node, "NetworkTopology.pfs[10].rail", 404, "not_found")
        expect_error(f, fox, node, "NetworkTopology.pfs[5].rail", 404, "not_found")
        expect_error(f, fox, node, "NetworkTopology.identity.machineType", 404, "not_found")
        expect_error(f, fox, node, "NetworkTopology.capabilities[0].sriov", 404, "not_found")
        expect_error(f, fox, node, "K8s.server.version", 404, "not_found")
        expect_error(f, fox, node, "NetworkTopology.pfs[0]rail", 400, "invalid")
        expect_error(f, fox, node, "NetworkTopology.pfs", 400, "invalid")
        expect_error(f, fox, node, "NetworkTopology.pfs[rail=].rail", 400, "invalid")
    # Go prints a float64 1500000 as 1.5e+06; the OpenAPI file gives it a unit.
    expect_value(f, fox, "xe-go", "GPU.smi.memory", "1.5e+06", reading=1500000.0)
    expect_value(f, fox, "xe-oa", "GPU.smi.memory", "1.5e+06", reading=1500000.0, unit="KiB")
    a = f.get("/api/v1/nodes/xe-go/measurements?cluster=fox", auth=fox).json()["snapshot"]
    b = f.get("/api/v1/nodes/xe-oa/measurements?cluster=fox", auth=fox).json()["snapshot"]
    for m in b["measurements"]:
        for st in m["subtypes"]:
            for k, v in list(st["data"].items()):
                if isinstance(v, dict):
                    st["data"][k] = v["value"]
    check(a == b, "both spellings are stored as one form (units aside)")
    check(a["measurements"][0]["type"] == "NetworkTopology" and "subtype" in a["measurements"][0]["subtypes"][0],
          "stored in the Go spelling: %s" % json.dumps(a)[:200])


def test_universal_path(f, fox):
    # YAML by Content-Type, node and cluster from the query.
    doc = read(os.path.join(AICR, "m-mock-snapshot-cuj1-training.yaml"))
    r = f.post("/ingest?cluster=fox&node=n4", doc, headers=YAML, auth=fox)
    check(r.status == 200 and r.json().get("topic") == "measurements", "/ingest YAML: %d %s" % (r.status, r.body[:300]))
    expect_value(f, fox, "n4", "OS.release.VERSION_ID", "24.04")
    # JSON with "kind":"Snapshot": node from metadata.source-node, cluster from the credential.
    snap = {"kind": "Snapshot", "apiVersion": "aicr.nvidia.com/v1alpha1",
            "metadata": {"source-node": "n5", "timestamp": "2026-01-02T03:04:05Z"},
            "measurements": [{"type": "NetworkTopology", "subtypes": [
                {"subtype": "capabilities", "data": {"sriov": False, "rdma": True, "ib": False}}]}]}
    r = f.post("/ingest", json.dumps(snap), auth=fox)
    check(r.status == 200 and r.json().get("node") == "n5" and r.json().get("cluster") == "fox",
          "/ingest JSON snapshot: %d %s" % (r.status, r.body[:300]))
    expect_value(f, fox, "n5", "NetworkTopology.capabilities.rdma", "true")
    # Sonar still goes where it went.
    r = f.post("/ingest", "{\"meta\":{}}", auth=fox)
    check(r.status == 400 and "measurements" not in r.body, "/ingest still reads Sonar: %d %s" % (r.status, r.body[:200]))
    # YAML on /ingest needs a YAML Content-Type (text/plain there is line protocol).
    r = f.post("/ingest?cluster=fox&node=n6", "measurements: []\n", headers={"Content-Type": "text/plain"}, auth=fox)
    check(r.status != 200 or r.json().get("topic") != "measurements", "text/plain YAML read as a snapshot: %d %s"
          % (r.status, r.body[:200]))
    r = f.post("/ingest?cluster=fox&node=n6", "measurements: []\n", headers={"Content-Type": "application/x-foo"},
               auth=fox)
    check(r.status == 415, "unknown Content-Type on /ingest: %d" % r.status)


def test_refusals(f, fox, bear, reader):
    doc = read(os.path.join(AICR, "m-snapshot-example-from-doc-go.yaml"))
    r = f.post(INGEST + "?cluster=fox&node=n1", doc, headers=YAML, auth=bear)
    check(r.status == 401, "another cluster's credential: %d %s" % (r.status, r.body[:200]))
    r = f.post(INGEST + "?cluster=fox&node=n1", doc, headers=YAML)
    check(r.status == 401, "no credential: %d" % r.status)
    r = f.post(INGEST + "?cluster=fox&node=n1", doc, headers=YAML, auth=reader)
    check(r.status == 403, "read-only credential: %d" % r.status)
    # Bad data: 400 naming the field.
    cases = [
        (read(os.path.join(AICR, "p-l8k-preset-PowerEdge-XE9680-topology.yaml")), "measurements"),
        (b"measurements: [{type: GPU, subtypes: [{subtype: smi, data: {x: [1]}}]}]\n",
         "measurements[0].subtypes[0].data.x"),
        (b"measurements: [{type: GPU, subtypes: [{subtype: smi}, {name: smi}]}]\n", "measurements[0].subtypes[1]"),
        (b"metadata: {timestamp: yesterday}\nmeasurements: []\n", "metadata.timestamp"),
        (b"measurements: [\n", "line 2, column 1"),
    ]
    for body, path in cases:
        r = f.post(INGEST + "?cluster=fox&node=n9", body, headers=YAML, auth=fox)
        ok = r.status == 400 and r.json()["error"].get("path") == path
        check(ok, "refused naming %s: %d %s" % (path, r.status, r.body[:300]))
    r = f.post(INGEST + "?cluster=fox&node=n9", b"measurements: []\n" + b"#" * (4 << 20), headers=YAML, auth=fox)
    check(r.status == 413, "a snapshot over 4 MiB: %d %s" % (r.status, r.body[:200]))
    r = f.post(INGEST + "?cluster=fox", b"measurements: []\n", headers=YAML, auth=fox)
    check(r.status == 400 and r.json()["error"]["path"] == "node", "no node: %d %s" % (r.status, r.body[:200]))
    r = f.post(INGEST + "?cluster=fox&node=bad_name", b"measurements: []\n", headers=YAML, auth=fox)
    check(r.status == 400 and r.json()["error"]["path"] == "node", "bad node name: %d %s" % (r.status, r.body[:200]))
    check(f.query("SELECT count(*) FROM nodes WHERE name='n9'") == [(0,)], "nothing of a refused snapshot stored")
    # Reads.
    r = f.get("/api/v1/nodes/n1/measurements?cluster=fox", auth=bear)
    check(r.status == 403, "another cluster's credential cannot read: %d" % r.status)
    r = f.get("/api/v1/nodes/n1/measurements?cluster=fox", auth=reader)
    check(r.status == 200, "read-only credential reads: %d" % r.status)
    r = f.get("/api/v1/nodes/n1/measurements", auth=fox)
    check(r.status == 400, "cluster required: %d" % r.status)
    r = f.get("/api/v1/nodes/nobody/measurements?cluster=fox", auth=fox)
    check(r.status == 404, "unknown node: %d" % r.status)
    r = f.get("/api/v1/nodes/n1/other?cluster=fox", auth=fox)
    check(r.status == 404, "only measurements under a node: %d" % r.status)


def main():
    f = Fjord().start()
    try:
        fox = ("fox", f.token("fox"))
        bear = ("bear", f.token("bear"))
        reader = ("analysts", f.token("analysts", "--read-only"))
        test_ingest_and_resend(f, fox)
        test_both_spellings(f, fox)
        test_universal_path(f, fox)
        test_refusals(f, fox, bear, reader)
        r = f.get("/api/v1/nodes?cluster=fox", auth=fox)
        names = {n["node"] for n in r.json()["nodes"]} if r.status == 200 else set()
        check({"n1", "xe-go", "xe-oa", "n4", "n5"} <= names, "nodes listed: %s" % sorted(names))
        check(f.stop() == 0, "SIGTERM exits 0")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
