"""One upload credential creating series, nodes and jobs without bound (issue 30): the per-cluster
quotas refuse what is new past the limit with an error naming it, while the cluster's existing
series and nodes keep being accepted and another cluster's writes succeed. docs/security.md,
"Quotas".

The server runs with small limits so that the test is fast, in a cgroup with a memory limit when
cgroup v2 is writable here (else it says so and goes on without one); its RSS must stay bounded
while a flood of 200,000 new series is refused. After a restart the catalog is not read: the
server holds no series until they are used (/metrics' fjord_metrics_series_in_memory).
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import PG, SHARED, Fjord, check, finish  # noqa: E402

CAP = 2000
RATE = 1000
T0 = 1700000000
SAMPLE = os.path.join(SHARED, "data", "sonar", "real", "0+sample-ml1.hpc.uio.no.json")  # 52 jobs
MAX_NODES = 5
JOBS_RATE = 120


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# (hierarchy root, the file that caps memory, the file of its events): cgroup v2, then v1's memory
# controller. A directory made under a root that is no cgroup file system would be a plain one:
# the cap file must appear by itself, as the kernel makes it, or the group is not used.
CGROUPS = [("/sys/fs/cgroup", "memory.max", "memory.events"),
           ("/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.failcnt")]


def cgroup_limit(pid, limit_bytes):
    """Moves pid into a new memory cgroup capped at limit_bytes: (path, events file), or None."""
    why = []
    for root, cap, events in CGROUPS:
        path = os.path.join(root, "fjord-attack-series-%d" % os.getpid())
        try:
            os.mkdir(path)
        except OSError as e:
            why.append("%s: %s" % (root, e.strerror))
            continue
        if not os.path.exists(os.path.join(path, cap)):
            why.append("%s: not a cgroup file system with a memory controller" % root)
            os.rmdir(path)
            continue
        try:
            with open(os.path.join(path, cap), "w") as f:
                f.write(str(limit_bytes))
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(pid))
            print("server in cgroup %s, %s = %d" % (path, cap, limit_bytes))
            return path, events
        except OSError as e:
            why.append("%s: %s" % (path, e.strerror))
            os.rmdir(path)
    print("no cgroup memory limit (%s); RSS is still checked" % "; ".join(why))
    return None


def cgroup_remove(group):
    if not group:
        return
    path, events = group
    try:
        with open(os.path.join(path, events)) as f:
            print("cgroup %s: %s" % (events, " ".join(f.read().split())))
        os.rmdir(path)  # the server has exited: the group is empty
    except OSError as e:
        print("cgroup %s left: %s" % (path, e.strerror))


def lines(cluster, hosts, metrics, t, prefix="m"):
    return "".join("%s%d,cluster=%s,hostname=h%d,type=node value=%d %d\n" % (prefix, m, cluster, h, m, t)
                   for h in hosts for m in range(metrics))


def write(f, cred, body):
    return f.post("/api/write?cluster=" + cred[0], body, auth=cred, headers={"Content-Type": "text/plain"})


def series_of(f, cluster):
    return f.query("SELECT count(*) FROM ts_series WHERE cluster=?", cluster)[0][0]


def gauge(f, name):
    r = f.get("/metrics", auth=("admin", f.admin))
    for line in r.body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def cap_phase(f, c1, c2):
    """max-series-per-cluster: a flood past the cap is dropped, existing series stay writable."""
    r = write(f, c1, lines("c1", range(10), 100, T0))  # 1,000 series: within the cap
    check(r.status == 200, "1,000 series within the cap: %d %s" % (r.status, r.body[:200]))
    before = rss_kib(f.proc.pid)
    refused = 0
    last = None
    for i in range(40):  # 40 x 5,000 new series: 200,000, of which 1,000 fit
        r = write(f, c1, lines("c1", range(1000 + 50 * i, 1050 + 50 * i), 100, T0, prefix="flood"))
        if r.status == 400:
            refused += 1
            last = r
    after = rss_kib(f.proc.pid)
    check(refused >= 39, "the flood is refused past the cap: %d of 40 requests" % refused)
    if last:
        body = last.json()
        msg = body["error"]["message"]
        check(msg.startswith("partial write: max-series-per-cluster limit exceeded: (%d) dropped=5000" % CAP),
              "the error names the limit, InfluxDB's way: %r" % msg)
        check(body["error"]["path"] == "max-series-per-cluster" and body["dropped"] == 5000 and
              body["stored_points"] == 0, "the answer counts what was dropped: %s" % last.body[:300])
    check(series_of(f, "c1") == CAP, "cluster c1 holds exactly the cap: %d" % series_of(f, "c1"))
    with open("/proc/%d/maps" % f.proc.pid) as m:
        sanitized = "libasan" in m.read()  # ASan keeps freed memory in quarantine (256 MB)
    if sanitized:
        print("AddressSanitizer build: the RSS bound is not checked")
    else:
        check(after - before < 64 * 1024, "RSS grew by %d KiB during the refused flood (bound 64 MiB)" % (after - before))
    print("cap: RSS %d -> %d KiB over 200,000 attempted series" % (before, after))

    # A request mixing existing series and new ones: the existing are stored, the new dropped.
    r = write(f, c1, lines("c1", range(10), 100, T0 + 60) + lines("c1", [99999], 7, T0 + 60, prefix="new"))
    body = r.json() if r.status == 400 else {}
    check(r.status == 400 and body.get("stored_points") == 1000 and body.get("dropped") == 7,
          "existing series stored beside dropped new ones: %d %s" % (r.status, r.body[:300]))
    stored = f.query("SELECT count(*) FROM ts_series s WHERE cluster='c1' AND host='h0'")[0][0]
    check(stored == 100, "h0's series are still the 100 it had: %d" % stored)
    r = write(f, c1, lines("c1", range(10), 100, T0 + 120))
    check(r.status == 200, "existing series alone: 200 (%d %s)" % (r.status, r.body[:200]))
    # Another cluster is not held back by c1's cap.
    r = write(f, c2, lines("c2", range(10), 100, T0))
    check(r.status == 200 and series_of(f, "c2") == 1000, "cluster c2 writes 1,000 new series: %d" % r.status)


def rate_phase(f, c1, c2):
    """max-new-series-per-minute: past the bucket 429 with Retry-After; existing ones go on."""
    r = write(f, c1, lines("c1", range(200000, 200015), 100, T0))  # 1,500 new: 1,000 fit the bucket
    check(r.status == 429, "new series past the minute's bucket: 429 (%d %s)" % (r.status, r.body[:200]))
    if r.status == 429:
        body = r.json()
        check(body["error"]["message"].startswith(
            "partial write: max-new-series-per-minute limit exceeded: (%d) dropped=500" % RATE),
            "the error names the rate limit: %r" % body["error"]["message"])
        check(int(r.headers.get("Retry-After", "0")) >= 1, "with Retry-After: %r" % r.headers.get("Retry-After"))
    r = write(f, c1, lines("c1", range(10), 100, T0 + 180))
    check(r.status == 200, "c1's existing series still accepted: %d %s" % (r.status, r.body[:200]))
    r = write(f, c2, lines("c2", range(10, 19), 100, T0))  # 900 new for c2: its own bucket
    check(r.status == 200, "c2's new series are not limited by c1's bucket: %d %s" % (r.status, r.body[:200]))


def lazy_phase(f, c1):
    """After a restart no series is read until used."""
    held = gauge(f, "fjord_metrics_series_in_memory")
    total = f.query("SELECT count(*) FROM ts_series")[0][0]
    check(held is not None and held < total / 10,
          "after a restart the engine holds %s of %d series (the catalog is read on first use)" % (held, total))
    r = write(f, c1, lines("c1", range(3), 100, T0 + 240))
    check(r.status == 200, "existing series after the restart: %d %s" % (r.status, r.body[:200]))
    twice = f.query("SELECT count(*) FROM (SELECT 1 FROM ts_series WHERE cluster='c1' GROUP BY host, metric, type, "
                    "type_id, stype, stype_id HAVING count(*) > 1) AS d")[0][0]
    check(twice == 0, "a stored series used after the restart is found, not made again: %d keys twice" % twice)
    if PG:  # its engine learns series through the writer's lookup of their ids, not the catalog's
        held = gauge(f, "fjord_metrics_series_in_memory")
        check(held == 300, "the 300 series used are held, no more: %s" % held)
    else:
        loaded = gauge(f, "fjord_metrics_series_loaded")
        check(loaded == 300, "the 300 series used were loaded, no more: %s" % loaded)
    got = f.post("/api/query", json.dumps({"cluster": "c1", "from": T0 - 60, "to": T0 + 300, "queries": [
        {"metric": "m5", "host": "h7", "resolution": 60}]}), auth=("admin", f.admin))
    data = got.json()["results"][0][0]["data"] if got.status == 200 else []
    check([v for v in data if v is not None][:1] == [5], "a series not loaded is read from its chunks: %s" % got.body[:300])


def sample(cluster, node, minute, jobs=True):
    env = json.load(open(SAMPLE))
    a = env["data"]["attributes"]
    a["cluster"], a["node"], a["time"] = cluster, node, "2025-11-25T10:%02d:00+01:00" % minute
    if not jobs:
        a["jobs"] = []
    return json.dumps(env)


def nodes_of(f, cluster):
    return f.query("SELECT count(*) FROM nodes n JOIN clusters c ON c.id=n.cluster_id WHERE c.name=?", cluster)[0][0]


def sonar_phase(f, c1, c2):
    """max-new-jobs-per-minute and max-nodes-per-cluster on Sonar envelopes."""
    post = lambda cred, body: f.post("/api/v1/insert/sample", body, auth=cred)  # noqa: E731
    for node in ("n0", "n1"):  # 2 x 52 new jobs: within the minute's 120
        r = post(c1, sample("c1", node, 1))
        check(r.status == 200, "sample of %s: 200 (%d %s)" % (node, r.status, r.body[:200]))
    r = post(c1, sample("c1", "n2", 1))  # 52 more: past the bucket
    check(r.status == 429 and "max-new-jobs-per-minute limit exceeded: (%d)" % JOBS_RATE in r.body and
          int(r.headers.get("Retry-After", "0")) >= 1,
          "new jobs past the minute's bucket: 429 naming the limit (%d %s)" % (r.status, r.body[:300]))
    check(nodes_of(f, "c1") == 2, "the refused envelope stored nothing, not even its node: %d" % nodes_of(f, "c1"))
    r = post(c1, sample("c1", "n0", 2))  # the same jobs again: none new
    check(r.status == 200, "existing node and jobs still accepted: %d %s" % (r.status, r.body[:200]))
    r = post(c2, sample("c2", "n0", 1))
    check(r.status == 200, "another cluster's new jobs are its own: %d %s" % (r.status, r.body[:200]))

    refused = []
    for i in range(10):  # node names without jobs: only the node cap counts
        r = post(c1, sample("c1", "flood%d" % i, 3, jobs=False))
        if r.status != 200:
            refused.append(r)
    check(len(refused) == 10 - (MAX_NODES - 2), "nodes past the cap refused: %d of 10" % len(refused))
    check(nodes_of(f, "c1") == MAX_NODES, "c1 holds exactly the cap: %d nodes" % nodes_of(f, "c1"))
    if refused:
        r = refused[-1]
        check(r.status == 400 and "max-nodes-per-cluster limit exceeded: (%d)" % MAX_NODES in r.body,
              "the refusal names the node cap: %d %s" % (r.status, r.body[:300]))
    r = post(c1, sample("c1", "n1", 4, jobs=False))
    check(r.status == 200, "an existing node past the cap: 200 (%d %s)" % (r.status, r.body[:200]))
    bulk = sample("c1", "n0", 5, jobs=False) + "\n" + sample("c1", "flood99", 5, jobs=False)
    r = f.post("/api/v1/ingest/sonar", bulk, auth=c1)
    items = r.json().get("items", []) if r.status in (200, 400) else []
    check([i["status"] for i in items] == ["accepted", "rejected"] and
          items[1]["error"]["path"] == "max-nodes-per-cluster",
          "bulk: the known node's envelope stored, the new one's rejected by name: %s" % r.body[:400])
    r = post(c2, sample("c2", "other", 3, jobs=False))
    check(r.status == 200, "another cluster adds nodes: %d %s" % (r.status, r.body[:200]))


def main():
    f = Fjord("--max-series-per-cluster", str(CAP), "--max-new-series-per-minute", "0",
              "--metrics-flush-interval", "1s")
    c1 = ("c1", f.token("c1"))
    c2 = ("c2", f.token("c2"))
    f.admin = f.token("admin", "--read-only")
    group = None
    try:
        f.start()
        group = cgroup_limit(f.proc.pid, 512 << 20)
        cap_phase(f, c1, c2)
        check(f.stop() == 0, "clean stop")
        cgroup_remove(group)
        f.extra = ["--max-series-per-cluster", "0", "--max-new-series-per-minute", str(RATE)]
        f.start()
        lazy_phase(f, c1)
        rate_phase(f, c1, c2)
        check(f.stop() == 0, "clean stop")
        f.extra = ["--max-nodes-per-cluster", str(MAX_NODES), "--max-new-jobs-per-minute", str(JOBS_RATE)]
        f.start()
        sonar_phase(f, c1, c2)
        check(f.stop() == 0, "clean stop")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
