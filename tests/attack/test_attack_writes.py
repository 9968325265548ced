"""Cross-cluster writes: with cluster alpha's upload credential, every write path is tried with data
that names cluster beta (in the URL, a tag, an envelope, a job payload, a snapshot's metadata, a NATS
line); each must be refused and leave beta's data as it was. Each refusal has a control: the same
request naming alpha is accepted, so a refusal for another reason would not pass.

A body that mixes alpha's lines with one naming beta is refused whole (401, nothing stored): a
credential's refusal is not a bad line that a partial write could skip (docs/security.md)."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import Fjord, SHARED, check, finish, free_port, nats_publish  # noqa: E402

START = json.load(open(os.path.join(SHARED, "data", "cc", "cc-backend_startJobPayload.json")))
SAMPLE = os.path.join(SHARED, "data", "sonar", "real", "0+sample-ml1.hpc.uio.no.json")
PACKET = os.path.join(SHARED, "data", "chimbuko", "synthetic-v2", "pserver-packet-idle.json")
TXT = {"Content-Type": "text/plain; charset=utf-8"}
YAML = {"Content-Type": "application/x-yaml"}
T = 1764000000


def lp_job(tags, payload, ts=T, measurement="job"):
    esc = json.dumps(payload).replace("\\", "\\\\").replace('"', '\\"')
    return ('%s%s event="%s" %d\n' % (measurement, tags, esc, ts)).encode()


def start_payload(cluster, job_id, start=T - 600):
    return dict(START, cluster=cluster, jobId=job_id, startTime=start)


def cc_jobs(f, cluster):
    return f.query("SELECT job_id, state, stop_time FROM cc_jobs c JOIN clusters k ON k.id=c.cluster_id "
                   "WHERE k.name=? ORDER BY job_id", cluster)


def series(f, cluster):
    return f.query("SELECT count(*) FROM ts_series WHERE cluster=?", cluster)[0][0]


def messages(f, cluster):
    return f.query("SELECT count(*) FROM cc_messages m JOIN clusters k ON k.id=m.cluster_id WHERE k.name=?",
                   cluster)[0][0]


def refused(r, what, path=None):
    ok = r.status == 401
    if ok and path:
        e = r.json()["error"]  # InfluxDB's paths (/write) answer one string, "<path>: <message>"
        ok = e.startswith(path + ": ") if isinstance(e, str) else e.get("path") == path
    check(ok, "%s: refused with 401%s (%d %s)" % (what, " at " + path if path else "", r.status, r.body[:300]))


def beta_untouched(f, before, what):
    now = (cc_jobs(f, "beta"), series(f, "beta"), messages(f, "beta"))
    check(now == before, "%s: beta's jobs, series and events unchanged (%s -> %s)" % (what, before, now))


def line_protocol(f, alpha, beta):
    # beta's own job, running: the target of the stop attempts
    r = f.post("/api/jobs/start_job/", json.dumps(start_payload("beta", 777)), auth=beta)
    check(r.status == 201, "beta starts its own job: %d %s" % (r.status, r.body))
    before = (cc_jobs(f, "beta"), series(f, "beta"), messages(f, "beta"))
    check(before[0] == [(777, "running", None)], "beta's job is running: %s" % before[0])

    start_b = start_payload("beta", 4242)
    stop_b = {"jobId": 777, "cluster": "beta", "stopTime": T, "jobState": "failed"}
    routes = [("/api/write?cluster=alpha", {}), ("/api/write", {}), ("/write?db=alpha", {}),
              ("/api/v2/write?org=o&bucket=alpha", {}), ("/ingest?cluster=alpha", {})]
    for path, _ in routes:
        for form, body in [
            ("job,function=start_job", lp_job(",function=start_job,hostname=f1", start_b)),
            ("job,function=stop_job", lp_job(",function=stop_job,hostname=f1", stop_b)),
            ("measurement start_job", lp_job(",hostname=f1", start_b, measurement="start_job")),
            ("measurement stop_job", lp_job(",hostname=f1", stop_b, measurement="stop_job")),
            ("job line tagged alpha, payload beta", lp_job(",function=start_job,cluster=alpha,hostname=f1", start_b)),
            ("metric tagged beta", b"cpu_load,cluster=beta,hostname=b1,type=node value=1 %d\n" % T),
            ("event tagged beta", b'slurm,cluster=beta,hostname=b1 event="x" %d\n' % T),
            ("log tagged beta", b'ccmc,cluster=beta,hostname=b1,loglevel=warn log="x" %d\n' % T),
            ("control tagged beta", b'ctl,cluster=beta,hostname=b1,method=GET control="x" %d\n' % T),
            ("generic line tagged beta", b"cpu,cluster=beta,host=b1,cpu=cpu0 usage_user=3 %d\n" % T),
        ]:
            r = f.post(path, body, headers=TXT, auth=alpha)
            refused(r, "%s on %s" % (form, path), "line 1")
    beta_untouched(f, before, "every line-protocol form")

    # A mixed body: alpha's lines stored nowhere, the whole request refused, the line named.
    a_series = series(f, "alpha")
    body = (b"mixed_a,hostname=a1,type=node value=1 %d\nmixed_a,hostname=a2,type=node value=2 %d\n" % (T, T) +
            lp_job(",function=stop_job,hostname=f1", stop_b))
    r = f.post("/api/write?cluster=alpha", body, headers=TXT, auth=alpha)
    refused(r, "mixed body with a job of beta on line 3", "line 3")
    check("beta" in r.body and "nothing stored" in r.body, "the refusal names the cluster: %s" % r.body[:300])
    check(series(f, "alpha") == a_series, "nothing of the mixed body stored")
    beta_untouched(f, before, "mixed body")

    # Controls: the same forms naming alpha are accepted, and the stop works on alpha's job.
    r = f.post("/api/write?cluster=alpha", lp_job(",function=start_job,hostname=f1", start_payload("alpha", 4242)),
               headers=TXT, auth=alpha)
    check(r.status == 200, "control: start_job line of alpha: %d %s" % (r.status, r.body))
    r = f.post("/api/write?cluster=alpha", lp_job(",function=stop_job,hostname=f1",
                                                   dict(stop_b, cluster="alpha", jobId=4242)), headers=TXT, auth=alpha)
    check(r.status == 200, "control: stop_job line of alpha: %d %s" % (r.status, r.body))
    check(cc_jobs(f, "alpha") == [(4242, "failed", T)], "control: alpha's job started and stopped: %s" % cc_jobs(f, "alpha"))
    body_a = body.split(b"\n")[0] + b"\n" + body.split(b"\n")[1] + b"\n" + lp_job(
        ",function=start_job,hostname=f1", start_payload("alpha", 4243))
    r = f.post("/api/write?cluster=alpha", body_a, headers=TXT, auth=alpha)
    check(r.status == 200 and r.json().get("lines") == 3, "control: the same body naming alpha: %d %s"
          % (r.status, r.body[:300]))
    check(series(f, "alpha") == a_series + 2, "control: its points are stored")

    # cc-backend's REST job API (held before; kept in the suite)
    r = f.post("/api/jobs/start_job/", json.dumps(start_payload("beta", 4244)), auth=alpha)
    refused(r, "REST start_job of beta")
    r = f.post("/api/jobs/stop_job/", json.dumps(stop_b), auth=alpha)
    refused(r, "REST stop_job of beta")
    beta_untouched(f, before, "REST job API")


def sonar(f, alpha):
    env = json.load(open(SAMPLE))
    env["data"]["attributes"]["cluster"] = "beta"
    for path in ("/api/v1/insert/sample", "/ingest", "/api/v1/ingest/sonar"):
        r = f.post(path, json.dumps(env), auth=alpha)
        check(r.status == 401, "Sonar envelope of beta on %s: 401 (%d %s)" % (path, r.status, r.body[:200]))
    check(not f.query("SELECT 1 FROM nodes n JOIN clusters c ON c.id=n.cluster_id WHERE c.name='beta'"),
          "no node of beta stored")
    # A bulk body with one envelope of each: alpha's is stored, beta's refused and named.
    env_a = json.load(open(SAMPLE))
    env_a["data"]["attributes"]["cluster"] = "alpha"
    r = f.post("/api/v1/ingest/sonar", json.dumps(env_a) + "\n" + json.dumps(env), auth=alpha)
    check(r.status != 200 and "beta" in r.body, "bulk with an envelope of beta is not a 200: %d %s" % (r.status, r.body[:300]))
    check(not f.query("SELECT 1 FROM nodes n JOIN clusters c ON c.id=n.cluster_id WHERE c.name='beta'"),
          "still no node of beta")
    r = f.post("/api/v1/insert/sample", json.dumps(env_a), auth=alpha)
    check(r.status == 200, "control: the envelope of alpha: %d %s" % (r.status, r.body[:200]))


def chimbuko_and_measurements(f, alpha):
    packet = open(PACKET, "rb").read()
    r = f.post("/api/anomalydata?cluster=beta", packet, auth=alpha)
    refused(r, "Chimbuko packet for beta")
    r = f.post("/api/v1/ingest/chimbuko/metadata?cluster=beta",
               open(os.path.join(SHARED, "data", "chimbuko", "synthetic-v2", "metadata-records.json"), "rb").read(),
               auth=alpha)
    refused(r, "Chimbuko records for beta")
    r = f.post("/api/anomalydata?cluster=alpha", packet, auth=alpha)
    check(r.status == 200, "control: Chimbuko packet of alpha: %d %s" % (r.status, r.body[:200]))

    snap = {"kind": "Snapshot", "apiVersion": "aicr.nvidia.com/v1alpha1",
            "metadata": {"source-node": "n5", "timestamp": "2026-01-02T03:04:05Z", "cluster": "beta"},
            "measurements": [{"type": "NetworkTopology", "subtypes": [
                {"subtype": "capabilities", "data": {"rdma": True}}]}]}
    for path in ("/api/v1/ingest/measurements?cluster=beta&node=n5", "/api/v1/ingest/measurements",
                 "/api/v1/ingest/measurements?cluster=alpha&node=n5", "/ingest?cluster=alpha"):
        r = f.post(path, json.dumps(snap), auth=alpha)
        refused(r, "aicr snapshot naming beta via %s" % path)
    check(not f.query("SELECT 1 FROM measurement_snapshots s JOIN clusters c ON c.id=s.cluster_id "
                      "WHERE c.name='beta'"), "no snapshot stored for beta")
    snap["metadata"]["cluster"] = "alpha"
    r = f.post("/api/v1/ingest/measurements?cluster=alpha&node=n5", json.dumps(snap), auth=alpha)
    check(r.status == 200, "control: snapshot of alpha: %d %s" % (r.status, r.body[:200]))


def nats():
    """NATS: a message may write only its subject's cluster."""
    server = shutil.which("nats-server") or "/usr/sbin/nats-server"
    if not os.path.exists(server):
        print("nats-server not installed (scripts/install-deps.sh test): the NATS part is not run")
        return
    nport = free_port()
    proc = subprocess.Popen([server, "-a", "127.0.0.1", "-p", str(nport)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    f = Fjord("--nats", "nats://127.0.0.1:%d" % nport)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", nport), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        f.start()
        time.sleep(0.3)
        nats_publish(nport, [
            ("alpha.metrics", b"cpu_load,cluster=beta,hostname=b1,type=node value=1 %d\n" % T),
            ("alpha.events.slurm", lp_job(",function=start_job,hostname=f1", start_payload("beta", 9))),
            ("alpha.metrics", b"mix,hostname=a1,type=node value=1 %d\n" % T +
             lp_job(",function=start_job,hostname=f1", start_payload("beta", 10))),
            # the control, last: once it is stored, the ones before were handled
            ("alpha.metrics", b"cpu_load,hostname=a9,type=node value=1 %d\n" % T),
        ])
        for _ in range(100):
            if f.query("SELECT count(*) FROM ts_series WHERE host='a9'")[0][0]:
                break
            time.sleep(0.1)
        check(f.query("SELECT count(*) FROM ts_series WHERE host='a9'")[0][0] == 1, "NATS control stored")
        check(series(f, "beta") == 0 and cc_jobs(f, "beta") == [], "NATS: nothing of beta stored")
        check(f.query("SELECT count(*) FROM ts_series WHERE metric='mix'")[0][0] == 0,
              "NATS: a message naming beta on one line is dropped whole")
        f.stop()
        log = open(f.log).read()
        check("names cluster 'beta'" in log, "NATS: the drop is logged: %s" % log[-500:])
    finally:
        f.cleanup()
        proc.terminate()
        proc.wait(timeout=10)


def main():
    f = Fjord()
    try:
        alpha = f.token("alpha")
        beta = f.token("beta")
        f.start()
        line_protocol(f, alpha, beta)
        sonar(f, ("alpha", alpha))
        chimbuko_and_measurements(f, ("alpha", alpha))
        check(f.stop() == 0, "clean stop")
    finally:
        f.cleanup()
    nats()
    finish()


if __name__ == "__main__":
    main()
