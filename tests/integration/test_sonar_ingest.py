"""Every real Sonar file, posted to a real fjord exactly as Sonar's HTTP sink would, is stored;
re-sending adds nothing; the jobs and nodes can be read back."""
import json
import os

from harness import Fjord, check, finish, sonar_files, split_envelopes, envelope_cluster, gzip_bytes, zstd_bytes

TOPIC = {"sample": "sample", "sysinfo": "sysinfo", "job": "job", "jobs": "job", "cluster": "cluster"}


def topic_of(env):
    if "data" in env:
        return TOPIC[env["data"]["type"]]
    return None


def post_all(f, tokens, files):
    """Each envelope on the path its DataType names (insert API); error envelopes in bulk."""
    sent = 0
    for path in files:
        cluster = None
        for env in split_envelopes(open(path).read()):
            # An error envelope that names no cluster is sent with the file's cluster credential.
            cluster = envelope_cluster(env) or cluster
            body = json.dumps(env, separators=(",", ":")) + "\n"
            topic = topic_of(env)
            route = "/api/v1/insert/%s" % topic if topic else "/api/v1/ingest/sonar"
            r = f.post(route, body, auth=(cluster, tokens[cluster]))
            check(r.status == 200, "%s %s: %d %s" % (os.path.basename(path), route, r.status, r.body[:300]))
            if topic and r.status == 200:
                j = r.json()
                check(j["cluster"] == cluster and j["topic"] == topic, "answer names cluster and topic: %s" % r.body)
            sent += 1
    return sent


def main():
    files = sonar_files()
    clusters = sorted({envelope_cluster(e) for p in files for e in split_envelopes(open(p).read())} - {None})
    f = Fjord().start()
    try:
        tokens = {c: f.token(c) for c in clusters}
        sent = post_all(f, tokens, files)
        check(sent >= 20, "posted %d envelopes" % sent)
        counts = f.row_counts()
        total = sum(counts.values())
        check(total > 1000, "rows stored: %d" % total)

        # Re-sending the same data adds no rows and is still 2xx.
        post_all(f, tokens, files)
        again = f.row_counts()
        check(again == counts, "re-send added rows: %s" % {k: (counts.get(k), v) for k, v in again.items() if counts.get(k) != v})

        # The same envelope through /ingest, gzip and zstd: accepted, counted as duplicates.
        ml1 = open(os.path.join(os.path.dirname(files[0]), "0+sample-ml1.hpc.uio.no.json")).read().encode()
        for enc, body in (("gzip", gzip_bytes(ml1)), ("zstd", zstd_bytes(ml1))):
            r = f.post("/ingest", body, headers={"Content-Encoding": enc}, auth=("mlx.hpc.uio.no", tokens["mlx.hpc.uio.no"]))
            check(r.status == 200, "/ingest with %s: %d %s" % (enc, r.status, r.body[:200]))
            if r.status == 200:
                j = r.json()
                check(j.get("inserted") == 0 and j.get("duplicates", 0) > 0, "%s re-send counted as duplicates: %s" % (enc, r.body))
        check(f.row_counts() == counts, "compressed re-send added rows")

        # Bearer works as well as Basic.
        r = f.get("/api/v1/jobs?cluster=mlx.hpc.uio.no", auth=tokens["mlx.hpc.uio.no"])
        check(r.status == 200, "jobs with bearer: %d %s" % (r.status, r.body[:200]))
        jobs = r.json()["jobs"] if r.status == 200 else []
        check(len(jobs) > 0, "mlx jobs listed")
        for j in jobs:
            for k in ("cluster", "job", "epoch", "node", "user", "first_seen", "last_seen", "hosts"):
                check(k in j, "job has %s: %s" % (k, j))
                break

        # Chosen values: ml1's sample has a job whose processes we can sum here independently.
        env = split_envelopes(ml1.decode())[0]
        a = env["data"]["attributes"]
        want = {}
        for job in a.get("jobs", []):
            key = (job["job"], job.get("epoch", 0))
            want[key] = sum(p.get("resident_memory", 0) for p in job.get("processes", []))
        got = {}
        for j in jobs:
            if j.get("node") in ("ml1", None, "") or "ml1" in j.get("hosts", []):
                got[(j["job"], j["epoch"])] = j
        for key, mem in want.items():
            if key in got:
                check(got[key].get("mem_peak_kb") == mem or got[key].get("mem_peak_kb", 0) >= mem,
                      "job %s peak memory %s >= %s" % (key, got[key].get("mem_peak_kb"), mem))

        r = f.get("/api/v1/nodes?cluster=ex3.simula.no", auth=("ex3.simula.no", tokens["ex3.simula.no"]))
        check(r.status == 200, "nodes: %d %s" % (r.status, r.body[:200]))
        if r.status == 200:
            names = {n["node"] for n in r.json()["nodes"]}
            check({"g001", "g002"} <= names or any(n.startswith("g001") for n in names), "ex3 nodes listed: %s" % sorted(names)[:10])

        # A credential for one cluster cannot read another.
        r = f.get("/api/v1/jobs?cluster=ex3.simula.no", auth=("mlx.hpc.uio.no", tokens["mlx.hpc.uio.no"]))
        check(r.status == 403, "cross-cluster read refused: %d" % r.status)
        check(f.stop() == 0, "SIGTERM exits 0")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
