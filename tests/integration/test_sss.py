"""The SSS Node object export through a real fjord: nodes posted as Sonar sysinfo, samples and
cluster envelopes come back as SSS Node objects in XML that Python's XML parser reads, with every
string escaped (a CPU model and a partition name holding <&>"', a control character and U+FFFE);
Range node references (node[5-23,77]) are produced by compressing host lists and are accepted
where node lists are (the host= filter); the filters and credentials apply."""
import json
import urllib.parse
import xml.etree.ElementTree as ET

from harness import Fjord, check, finish

CLUSTER = "sss.test"
NASTY = "Xeon <&>\"' \u0001 \ufffe CPU"           # what the XML must carry (escaped or replaced)
NASTY_READ = "Xeon <&>\"' \ufffd \ufffd CPU"      # what an XML parser must read back
PARTITION = "gpu&<\"'>"


def envelope(kind, attrs):
    attrs = dict(attrs, cluster=CLUSTER)
    return json.dumps({"meta": {"producer": "sonar", "version": "0.18.0"}, "data": {"type": kind, "attributes": attrs}})


def sysinfo(node, cpu_model, cards=()):
    return envelope("sysinfo", {
        "time": "2026-01-10T10:00:00Z", "node": node, "os_name": "Linux", "os_release": "6.1.0-rt<5>",
        "sockets": 2, "cores_per_socket": 8, "threads_per_core": 2, "cpu_model": cpu_model,
        "architecture": "x86_64", "memory": 64 * 1024 * 1024, "cards": list(cards)})


def card(i, model):
    return {"index": i, "uuid": "GPU-%d" % i, "manufacturer": "NVIDIA", "model": model, "memory": 40 * 1024 * 1024}


def sample(node, time, cpus, used_kb, gpus=()):
    return envelope("sample", {"time": time, "node": node, "system": {
        "boot": "2026-01-01T00:00:00Z", "cpus": cpus, "gpus": list(gpus), "used_memory": used_kb, "load1": 3.5},
        "jobs": []})


def load_data(f, auth):
    posts = [("sysinfo", sysinfo("c1-1", NASTY)),
             ("sysinfo", sysinfo("c1-2", "AMD EPYC")),
             ("sysinfo", sysinfo("gpu-01", "Xeon", [card(0, "NVIDIA A100 <40GB>"), card(1, "NVIDIA A100 <40GB>")])),
             # c1-1: two samples 60 s apart, 32 cores, 4 of them busy all the time
             ("sample", sample("c1-1", "2026-01-10T10:00:00Z", [1000] * 32, 8 * 1024 * 1024)),
             ("sample", sample("c1-1", "2026-01-10T10:01:00Z", [1060] * 4 + [1000] * 28, 16 * 1024 * 1024)),
             ("sample", sample("gpu-01", "2026-01-10T10:01:00Z", [5] * 32, 1024 * 1024,
                               [{"index": 0, "uuid": "GPU-0", "ce_util": 100, "memory": 20 * 1024 * 1024},
                                {"index": 1, "uuid": "GPU-1", "ce_util": 50, "memory": 10 * 1024 * 1024}])),
             ("cluster", envelope("cluster", {
                 "time": "2026-01-10T10:00:30Z", "slurm": True,
                 "partitions": [{"name": "normal", "nodes": ["c1-[1-3]", "node[5-7,77]"]},
                                {"name": PARTITION, "nodes": ["gpu-[01-02]"]}],
                 "nodes": [{"names": ["c1-1", "gpu-02", "node[5-7,77]"], "states": ["IDLE"]},
                           {"names": ["c1-2"], "states": ["MIXED"]},
                           {"names": ["c1-3"], "states": ["DOWN", "DRAIN"]},
                           {"names": ["gpu-01"], "states": ["ALLOCATED"]}]}))]
    for kind, body in posts:
        r = f.post("/api/v1/insert/" + kind, body, auth=auth)
        check(r.status == 200, "%s posted: %d %s" % (kind, r.status, r.body[:300]))


def get_xml(f, auth, path, **params):
    q = urllib.parse.urlencode(dict({"cluster": CLUSTER}, **params))
    r = f.get("%s?%s" % (path, q), auth=auth)
    check(r.status == 200, "%s %s: %d %s" % (path, params, r.status, r.body[:300]))
    check(r.headers.get("Content-Type", "").startswith("application/xml"), "XML content type: %s" % r.headers)
    try:
        return r.body, ET.fromstring(r.body.encode("utf-8"))
    except ET.ParseError as e:
        check(False, "well-formed XML (%s): %s" % (e, r.body[:500]))
        return r.body, None


def text(node, path):
    e = node.find(path)
    return e.text if e is not None else None


def nodes_of(root):
    return {text(n, "Id"): n for n in root.findall("./Body/Response/Data/Node")} if root is not None else {}


def test_objects(f, auth):
    body, root = get_xml(f, auth, "/api/v1/export/sss/nodes")
    if root is None:
        return
    check(root.tag == "Envelope" and text(root, "Body/Response/Status/Value") == "Success"
          and text(root, "Body/Response/Status/Code") == "000", "SSSRMAP response: %s" % root.tag)
    nodes = nodes_of(root)
    want = {"c1-1", "c1-2", "c1-3", "gpu-01", "gpu-02", "node5", "node6", "node7", "node77"}
    check(set(nodes) == want, "every node: %s" % sorted(nodes))
    check(text(root, "Body/Response/Count") == "9", "Count: %s" % text(root, "Body/Response/Count"))
    # Every string escaped: the raw text carries the entities, the parser reads the original back.
    check("Xeon &lt;&amp;&gt;&quot;&apos;" in body and "gpu&amp;&lt;&quot;&apos;&gt;" in body, "entities in the raw XML")
    check("\x01" not in body and "\ufffe" not in body, "no character XML forbids")
    c1 = nodes.get("c1-1")
    if c1 is not None:
        check(text(c1, "Name") == "c1-1" and [e.text for e in c1.findall("Feature")] == ["normal"], "c1-1 names")
        check(text(c1, "Description") == NASTY_READ, "cpu model read back: %r" % text(c1, "Description"))
        check(text(c1, "Opsys") == "Linux" and text(c1, "Arch") == "x86_64" and text(c1, "State") == "Idle",
              "c1-1 Opsys, Arch, State: %s %s %s" % (text(c1, "Opsys"), text(c1, "Arch"), text(c1, "State")))
        ext = {e.get("name"): e.text for e in c1.findall("Extension")}
        check(ext.get("Cluster") == CLUSTER and ext.get("OsRelease") == "6.1.0-rt<5>" and ext.get("SlurmState") == "IDLE",
              "extensions: %s" % ext)
        check(text(c1, "Configured/Processors") == "32", "configured processors: %s" % text(c1, "Configured/Processors"))
        mem = c1.find("Configured/Memory")
        check(mem is not None and mem.get("units") == "MB" and mem.text == "65536", "configured memory: %s" %
              ((mem.attrib, mem.text) if mem is not None else None,))
        up = c1.find("Utilized/Processors")
        check(up is not None and up.text == "4" and up.get("wallDuration") == "PT60S" and up.get("metric") == "Average",
              "utilized processors: %r" % ((up.attrib, up.text) if up is not None else None,))
        check(text(c1, "Available/Processors") == "28", "available processors: %s" % text(c1, "Available/Processors"))
        um = c1.find("Utilized/Memory")
        check(um is not None and um.text == "16384" and um.get("metric") == "Instantaneous", "utilized memory")
        check(text(c1, "Available/Memory") == "49152", "available memory: %s" % text(c1, "Available/Memory"))
    g = nodes.get("gpu-01")
    if g is not None:
        check([e.text for e in g.findall("Feature")] == [PARTITION], "partition name read back: %s" %
              [e.text for e in g.findall("Feature")])
        check(text(g, "State") == "Busy", "ALLOCATED is Busy: %s" % text(g, "State"))
        res = {(r.get("name"), r.get("type")): r.text for r in g.findall("Configured/Resource")}
        check(res.get(("GPU", "NVIDIA A100 <40GB>")) == "2" and res.get(("GPUMemory", None)) == "81920",
              "GPUs as Resource elements: %s" % res)
        used = {r.get("name"): r.text for r in g.findall("Utilized/Resource")}
        check(used.get("GPU") == "1.5" and used.get("GPUMemory") == "30720", "GPU use: %s" % used)
        check(g.find("Utilized/Processors") is None, "one sample: no CPU interval")
    check(text(nodes.get("c1-3", ET.Element("x")), "State") == "Offline", "DOWN+DRAIN is Offline")
    check(text(nodes.get("c1-2", ET.Element("x")), "State") == "Busy", "MIXED is Busy")
    n77 = nodes.get("node77")
    if n77 is not None:
        check(n77.find("Configured") is not None and n77.find("Configured/Processors") is None
              and n77.find("Utilized") is None, "a node known only from Slurm: no sysinfo, no samples")

    # One node: a Node object as the document.
    body, root = get_xml(f, auth, "/api/v1/export/sss/nodes/gpu-01")
    check(root is not None and root.tag == "Node" and text(root, "Id") == "gpu-01", "one Node object")
    r = f.get("/api/v1/export/sss/nodes/gpu-1?cluster=" + CLUSTER, auth=auth)
    check(r.status == 404, "unknown node: %d" % r.status)


def refs(f, auth, **params):
    """The node references of an aggregated answer: (aggregation, count, text) each."""
    body, root = get_xml(f, auth, "/api/v1/export/sss/nodes", **params)
    return [(n.get("aggregation"), n.get("count"), n.text) for n in root.findall("./Body/Response/Data/Node")] \
        if root is not None else []


def test_ranges(f, auth):
    # One Range reference per prefix, each in SSS's <prefix>[5-23,77] form.
    got = refs(f, auth, aggregation="Range")
    check(got == [("Range", "3", "c1-[1-3]"), ("Range", "2", "gpu-[01-02]"), ("Range", "4", "node[5-7,77]")],
          "Range references: %s" % got)
    got = refs(f, auth, aggregation="Range", state="Idle")
    check(got == [("Range", "1", "c1-1"), ("Range", "1", "gpu-02"), ("Range", "4", "node[5-7,77]")],
          "idle nodes: %s" % got)
    got = refs(f, auth, aggregation="Range", partition="normal", state="drain")
    check(got == [("Range", "1", "c1-3")], "normal and drained: %s" % got)
    got = refs(f, auth, aggregation="List", partition=PARTITION)
    check(got == [("List", "2", "gpu-01,gpu-02")], "List: %s" % got)
    body, root = get_xml(f, auth, "/api/v1/export/sss/nodes", aggregation="Range", state="nothing")
    check(root is not None and text(root, "Body/Response/Count") == "0" and
          not root.findall("./Body/Response/Data/Node"), "no node selected: empty Data")
    body, root = get_xml(f, auth, "/api/v1/export/sss/nodes", aggregation="Range", state="Idle")
    check(root is not None and text(root, "Body/Response/Count") == "6", "Count of the referenced nodes")

    # The Range form is accepted where node lists are: host= reads node[5-23,77], and the
    # references of another answer joined into one list.
    body, root = get_xml(f, auth, "/api/v1/export/sss/nodes", host="node[5-23,77]")
    check(set(nodes_of(root)) == {"node5", "node6", "node7", "node77"}, "host=node[5-23,77]: %s" % sorted(nodes_of(root)))
    idle = ",".join(t for _, _, t in refs(f, auth, aggregation="Range", state="Idle"))
    body, root = get_xml(f, auth, "/api/v1/export/sss/nodes", host=idle)
    check(set(nodes_of(root)) == {"c1-1", "gpu-02", "node5", "node6", "node7", "node77"}, "host=%s: %s"
          % (idle, sorted(nodes_of(root))))
    r = f.get("/api/v1/nodes?cluster=%s&host=%s" % (CLUSTER, urllib.parse.quote("c1-[1-3],gpu-[01-02]")), auth=auth)
    if r.status == 200:
        got = sorted(n["node"] for n in r.json().get("nodes", []))
        check(got == ["c1-1", "c1-2", "c1-3", "gpu-01", "gpu-02"], "the query API's host= reads it too: %s" % got)
    r = f.get("/api/v1/export/sss/nodes?cluster=%s&host=%s" % (CLUSTER, urllib.parse.quote("node[7-5]")), auth=auth)
    check(r.status == 400 and r.json()["error"].get("path") == "host", "bad range: %d %s" % (r.status, r.body[:200]))


def test_refusals(f, auth, other, reader):
    r = f.get("/api/v1/export/sss/nodes", auth=auth)
    check(r.status == 400, "cluster required: %d" % r.status)
    r = f.get("/api/v1/export/sss/nodes?cluster=" + CLUSTER, auth=other)
    check(r.status == 403, "another cluster's credential: %d" % r.status)
    r = f.get("/api/v1/export/sss/nodes?cluster=" + CLUSTER, auth=reader)
    check(r.status == 200, "read-only credential: %d" % r.status)
    r = f.get("/api/v1/export/sss/nodes?cluster=nowhere", auth=reader)
    check(r.status == 404, "unknown cluster: %d" % r.status)
    r = f.get("/api/v1/export/sss/nodes?cluster=%s&aggregation=Pattern" % CLUSTER, auth=auth)
    check(r.status == 400, "aggregation Pattern is not produced: %d" % r.status)
    r = f.get("/api/v1/export/sss/nodes?cluster=" + CLUSTER)
    check(r.status == 401, "no credential: %d" % r.status)


def main():
    f = Fjord().start()
    try:
        auth = (CLUSTER, f.token(CLUSTER))
        other = ("other", f.token("other"))
        reader = ("analysts", f.token("analysts", "--read-only"))
        load_data(f, auth)
        test_objects(f, auth)
        test_ranges(f, auth)
        test_refusals(f, auth, other, reader)
        check(f.stop() == 0, "SIGTERM exits 0")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
