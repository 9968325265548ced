"""PostgreSQL only (FJ_TEST_DB=postgres; exits 77, skipped, otherwise): fjord survives losing its
database connection, and two fjord servers share one database.

- Connection loss: uploads run while PostgreSQL is stopped and started again under a running fjord.
  During the outage requests get 503 with Retry-After; afterwards they succeed again without a
  restart of fjord; every upload answered 2xx is in the database.
- Two servers: two `fjord serve` on one database ingest concurrently from different nodes, all of
  them running one shared Slurm job: nothing is lost or duplicated (natural keys, job summaries),
  and queries through either server see both servers' data.
- Line-protocol metrics through both servers (some series written through both): series ids come
  from the database, so after the flush interval either server reads every point of both exactly
  once; each server's request log is its own.
"""
import datetime
import json
import os
import socket
import sys
import threading
import time

import harness
from harness import Fjord, SHARED, check, finish, run_cli

SAMPLE = os.path.join(SHARED, "data", "sonar", "real", "0+sample-ml1.hpc.uio.no.json")
CLUSTER = "mlx.hpc.uio.no"
BASE = datetime.datetime(2026, 3, 2, 8, 0, 0, tzinfo=datetime.timezone.utc)


def sample(template, node, i):
    """The template sample as node's i-th sample (a minute apart), with Slurm job 9001 added."""
    env = json.loads(template)
    a = env["data"]["attributes"]
    a["node"] = node
    a["time"] = (BASE + datetime.timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
    a["jobs"].append({"job": 9001, "user": "alice", "epoch": 0,
                      "processes": [{"pid": 4242, "ppid": 1, "cmd": "solver", "resident_memory": 100 + i,
                                     "cpu_util": 99.5, "cpu_time": 10 + i}]})
    return json.dumps(env)


def test_connection_loss():
    pg = harness.pg_server()
    template = open(SAMPLE).read()
    f = Fjord("--dev-mode").start()
    answers = {}
    lock = threading.Lock()
    stop = threading.Event()
    try:
        def sender(k):
            i = 0
            while not stop.is_set():
                node = "loss-%d-%d" % (k, i)
                sent_at = time.time()  # a request sent before the stop may commit and answer late
                try:
                    r = f.post("/api/v1/insert/sample", sample(template, node, i), timeout=30)
                    st, retry = r.status, r.headers.get("Retry-After")
                except Exception as e:  # the server must never drop a connection here
                    st, retry = "exception %s" % e, None
                with lock:
                    answers[node] = (sent_at, st, retry)
                i += 1
                time.sleep(0.02)

        threads = [threading.Thread(target=sender, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        pg.stop_server("fast")  # every connection fjord has is cut
        down_at = time.time()   # the server is gone: nothing can commit from here on
        time.sleep(2.0)
        r = f.get("/api/v1/nodes/loss-0-0/measurements?cluster=%s" % CLUSTER)
        check(r.status == 503 and r.headers.get("Retry-After"),
              "a query during the outage: 503 with Retry-After, got %d %s" % (r.status, r.body[:200]))
        restart_at = time.time()  # uploads sent from here on may reach the restarting server
        pg.start_server()
        up_at = time.time()
        time.sleep(3.0)
        stop.set()
        for t in threads:
            t.join()
        with lock:
            items = dict(answers)
        during = [v for v in items.values() if down_at + 0.5 < v[0] < restart_at]
        after = [v for v in items.values() if v[0] > up_at + 1.5]
        other = {v[1] for v in items.values() if v[1] != 200}
        check(other <= {503}, "every failed upload is a 503: %s" % other)
        check(all(v[2] for v in items.values() if v[1] == 503), "every 503 carries Retry-After")
        check(during and all(v[1] == 503 for v in during),
              "uploads while the database is down get 503: %s" % sorted((round(v[0] - down_at, 2), v[1]) for v in during if v[1] != 503))
        check(after and all(v[1] == 200 for v in after),
              "uploads after it is back succeed without restarting fjord: %s" % sorted({v[1] for v in after}))
        ok = {n for n, v in items.items() if v[1] == 200}
        stored = {r[0] for r in f.query("SELECT n.name FROM samples s JOIN nodes n ON n.id = s.node_id")}
        # Enough uploads to mean something: about 6 s of three senders, under the sanitizers on a
        # busy machine too (17 were seen there); what matters is below: none of them is lost.
        check(len(ok) >= 10, "uploads acknowledged: %d" % len(ok))
        check(ok <= stored, "acknowledged but not stored: %s" % sorted(ok - stored)[:5])
        r = f.get("/api/v1/health")
        check(r.status == 200, "health after the outage")
        check(f.stop() == 0, "SIGTERM exits 0")
    finally:
        stop.set()
        f.cleanup()


MHOSTS = ["m%02d" % i for i in range(8)]
MBASE = 1700000000
MSTEPS = 40
FLUSH_S = 2


def lp_value(server, step, host):
    return round(step * 0.25 + host * 0.01 + (1000 if server == "b" else 0), 3)


def lp_body(server, step):
    """One step of metric points through server a or b: hosts m00-m05 through a, m02-m07 through b
    (m02-m05 through both, on distinct metrics), so both servers write series of the same hosts."""
    hosts = range(0, 6) if server == "a" else range(2, 8)
    return "".join("load_%s,cluster=%s,hostname=%s,type=node value=%r %d\n"
                   % (server, CLUSTER, MHOSTS[h], lp_value(server, step, h), MBASE + step)
                   for h in hosts).encode()


def lp_read(srv, auth, metric, host):
    q = {"cluster": CLUSTER, "from": MBASE, "to": MBASE + MSTEPS, "with-padding": True,
         "queries": [{"metric": metric, "host": host, "resolution": 1}]}
    r = srv.request("POST", "/api/query", json.dumps(q), headers={"Content-Type": "application/json"}, auth=auth)
    if r.status != 200:
        return None
    d = r.json()["results"][0][0]
    return d.get("data"), d.get("from")


def metrics_two_servers(a, b, auth):
    """Metric points through both servers: after the flush interval either server reads all of them."""
    errors = []

    def sender(srv, name):
        for step in range(MSTEPS):
            r = srv.post("/api/write?cluster=%s" % CLUSTER, lp_body(name, step),
                         headers={"Content-Type": "text/plain"}, auth=auth)
            if r.status != 200:
                errors.append((name, step, r.status, r.body[:200]))

    threads = [threading.Thread(target=sender, args=(srv, name)) for srv, name in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, "every metric write through either server succeeded: %s" % errors[:3])
    series = a.query("SELECT count(*), count(DISTINCT (cluster, host, metric, type, type_id, stype, stype_id)) "
                     "FROM ts_series")[0]
    check(series == (12, 12), "one catalog row per series, ids from the database: %s" % (series,))
    time.sleep(FLUSH_S + 2.5)  # both servers have sealed and committed their buffers
    for srv, sname in ((a, "a"), (b, "b")):
        bad = []
        for wname, hosts in (("a", range(0, 6)), ("b", range(2, 8))):
            for h in hosts:
                got = lp_read(srv, auth, "load_" + wname, MHOSTS[h])
                want = [lp_value(wname, step, h) for step in range(MSTEPS)]
                if got is None or got[1] != MBASE or got[0] is None or len(got[0]) < MSTEPS or any(
                        v is None or abs(v - w) > 1e-9 for v, w in zip(got[0], want)) or any(
                        v is not None for v in got[0][MSTEPS:]):
                    bad.append((wname, MHOSTS[h], got))
        check(not bad, "through server %s, every point of both servers, once: %s" % (sname, bad[:2]))
    chunks = a.query("SELECT count(*), count(DISTINCT seq), sum(count) FROM ts_chunk")[0]
    check(chunks[0] == chunks[1] and chunks[2] == 12 * MSTEPS,
          "chunks of both servers side by side, every point stored once: %s" % (chunks,))
    logs = a.query("SELECT count(*) FROM ts_instances")[0][0]
    check(logs == 2, "each server has its own request log and durable lsn: %d instances" % logs)
    # A third server misconfigured with a's identity must not write a's request log.
    c = Fjord("--instance", "%s:%d" % (socket.gethostname(), a.port), db=a.db)
    try:
        c.start()
        refused = ""
    except harness.Failure as e:
        refused = str(e)
    finally:
        c.cleanup()
    check("in use by another fjord server" in refused, "a second server with the same instance refuses to start: %r"
          % refused[-300:])


def test_two_servers():
    template = open(SAMPLE).read()
    flush = ("--metrics-flush-interval", "%ds" % FLUSH_S)
    a = Fjord(*flush).start()
    b = Fjord(*flush, db=a.db).start()  # the same database
    try:
        secret = a.token(CLUSTER)  # one credential table: b sees it too
        auth = (CLUSTER, secret)
        n_nodes, n_samples = 6, 15
        results = []
        lock = threading.Lock()

        def sender(server, prefix, k):
            for i in range(n_samples):
                node = "%s%d" % (prefix, k)
                r = server.post("/api/v1/insert/sample", sample(template, node, i), auth=auth)
                with lock:
                    results.append((node, i, r.status, r.json() if r.status == 200 else r.body[:200]))

        threads = [threading.Thread(target=sender, args=(srv, p, k))
                   for srv, p in ((a, "a-"), (b, "b-")) for k in range(n_nodes // 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        bad = [x for x in results if x[2] != 200]
        check(not bad, "every upload through either server succeeded: %s" % bad[:3])
        inserted = sum(x[3].get("inserted", 0) for x in results if x[2] == 200)

        # Nothing lost, nothing twice: one sample row per (node, time), one Slurm job whose summary
        # counts every node-sample once.
        rows = a.query("SELECT count(*), count(DISTINCT (node_id, time)) FROM samples")[0]
        check(rows == (n_nodes * n_samples, n_nodes * n_samples), "samples stored once each: %s" % (rows,))
        job = a.query("SELECT count(*), sum(n_samples), sum(mem_sum_kb) FROM jobs WHERE job = 9001 AND epoch = 0")[0]
        want_mem = n_nodes * sum(100 + i for i in range(n_samples))
        check(job == (1, n_nodes * n_samples, want_mem), "one Slurm job, every node-sample once: %s" % (job,))
        hosts = a.query("SELECT count(*) FROM job_hosts h JOIN jobs j ON j.id = h.rjob_id WHERE j.job = 9001")[0][0]
        check(hosts == n_nodes, "the Slurm job ran on both servers' nodes: %d" % hosts)
        dup = a.query("SELECT count(*) FROM (SELECT rjob_id, node_id, time FROM job_samples "
                      "GROUP BY 1, 2, 3 HAVING count(*) > 1) x")[0][0]
        check(dup == 0, "no node-sample counted twice")
        counts = a.row_counts()
        # sample jobs and processes are elements of sample_proc_sets' arrays, a row each in the
        # views sample_jobs and sample_procs
        counts["sample_jobs"] = a.query("SELECT count(*) FROM sample_jobs")[0][0]
        counts["sample_procs"] = a.query("SELECT count(*) FROM sample_procs")[0][0]
        check(inserted == sum(v for k, v in counts.items() if k in (
            "samples", "sample_gpus", "sample_disks", "sample_jobs", "sample_procs", "sample_proc_gpus", "errors")),
            "the answers' inserted counts add up to the rows stored")

        # A re-send through the other server is all duplicates.
        r = b.post("/api/v1/insert/sample", sample(template, "a-0", 0), auth=auth)
        check(r.status == 200 and r.json().get("inserted") == 0 and r.json().get("duplicates", 0) > 0,
              "re-send through the other server counted as duplicates: %s" % r.body[:200])

        # Either server sees both servers' data.
        want = {"%s%d" % (p, k) for p in ("a-", "b-") for k in range(n_nodes // 2)}
        for srv, name in ((a, "a"), (b, "b")):
            r = srv.get("/api/v1/nodes?cluster=%s" % CLUSTER, auth=auth)
            names = {n["node"] for n in r.json().get("nodes", [])} if r.status == 200 else set()
            check(want <= names, "nodes through server %s: %d %s" % (name, r.status, sorted(want - names)[:4]))
            r = srv.get("/api/v1/jobs?cluster=%s&limit=1000" % CLUSTER, auth=auth)
            jobs = r.json().get("jobs", []) if r.status == 200 else []
            slurm = [j for j in jobs if j.get("job") == 9001]
            check(len(slurm) == 1 and set(slurm[0].get("hosts", [])) == want,
                  "the shared Slurm job through server %s: %d %s" % (name, r.status, slurm[:1] or r.body[:200]))
        metrics_two_servers(a, b, auth)
        check(a.stop() == 0 and b.stop() == 0, "both servers exit 0")
    finally:
        b.stop()
        a.cleanup()
        b.cleanup()


if __name__ == "__main__":
    if not harness.PG:
        print("PostgreSQL only: run with FJ_TEST_DB=postgres (skipped)")
        sys.exit(77)
    test_connection_loss()
    test_two_servers()
    finish()
