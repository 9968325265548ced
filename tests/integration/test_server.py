"""The server's contract beyond the happy path: credentials, limits, bad input answered with what
and where, nothing partial stored, dev mode, draining on SIGTERM, schema checks."""
import glob
import json
import os
import threading

from harness import Fjord, SOURCE, SHARED, check, finish, run_cli, FJORD, gzip_bytes, fresh_db

SAMPLE = os.path.join(SHARED, "data", "sonar", "real", "0+sample-ml1.hpc.uio.no.json")


def test_auth():
    f = Fjord().start()
    try:
        body = open(SAMPLE).read()
        secret = f.token("mlx.hpc.uio.no")
        other = f.token("other.cluster")
        reader = f.token("analysts", "--read-only")
        check(len(secret) == 64, "generated secret is 64 hex characters")
        r = f.post("/api/v1/insert/sample", body)
        check(r.status == 401, "no credential: %d" % r.status)
        check("WWW-Authenticate" in r.headers, "401 names the scheme")
        r = f.post("/api/v1/insert/sample", body, auth=("mlx.hpc.uio.no", "wrong"))
        check(r.status == 401, "wrong secret: %d" % r.status)
        r = f.post("/api/v1/insert/sample", body, auth=("other.cluster", other))
        check(r.status == 401, "user differs from cluster in data: %d %s" % (r.status, r.body))
        check(sum(f.row_counts().get(t, 0) for t in f.row_counts() if "sample" in t or "proc" in t) == 0,
              "nothing stored after refusals")
        r = f.post("/api/v1/insert/sample", body, auth=reader)
        check(r.status == 403, "read-only credential cannot write: %d" % r.status)
        r = f.post("/api/v1/insert/sample", body, headers={"Authorization": "Token " + secret})
        check(r.status == 200, "InfluxDB-style Token scheme: %d %s" % (r.status, r.body[:200]))
        r = f.get("/api/v1/jobs?cluster=mlx.hpc.uio.no", auth=reader)
        check(r.status == 200, "read-only credential reads: %d" % r.status)
        r = f.get("/api/v1/health")
        check(r.status == 200 and r.json()["status"] == "ok", "health without credentials")
        run_cli("token", "revoke", "mlx.hpc.uio.no", db=f.db)
        listing = run_cli("token", "list", db=f.db).stdout
        check("mlx.hpc.uio.no" not in listing and "analysts\tread-only" in listing, "token list: %r" % listing)
        check(secret not in listing, "token list never shows secrets")
        import time
        time.sleep(2.5)  # the server re-reads credentials every 2 s
        r = f.post("/api/v1/insert/sample", body, auth=("mlx.hpc.uio.no", secret))
        check(r.status == 401, "revoked credential refused: %d" % r.status)
        check(f.stop() == 0, "SIGTERM exits 0")
    finally:
        f.cleanup()


def test_bad_inputs():
    cases = sorted(glob.glob(os.path.join(SOURCE, "tests", "data", "bad", "*.json")))
    check(len(cases) >= 40, "at least 40 bad-input cases: %d" % len(cases))
    f = Fjord().start()
    try:
        clusters = set()
        parsed = []
        for c in cases:
            case = json.load(open(c))
            body = case["body"] if isinstance(case["body"], str) else json.dumps(case["body"])
            parsed.append((c, case, body))
        secret = f.token("bad.test")
        before = f.row_counts()
        for c, case, body in parsed:
            r = f.post(case["path"], body, auth=("bad.test", secret), headers=case.get("headers"))
            name = os.path.basename(c)
            check(r.status == case["status"], "%s: status %d, want %d: %s" % (name, r.status, case["status"], r.body[:300]))
            if r.status >= 400:
                try:
                    err = r.json()["error"] if "error" in r.json() else r.json()["items"][0]["error"]
                except Exception:
                    err = {}
                check(err.get("message"), "%s: error has a message" % name)
                want = case.get("error_path")
                if want:
                    check(err.get("path", "").startswith(want), "%s: error path %r, want %r" % (name, err.get("path"), want))
        after = f.row_counts()
        stored = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0) and k not in ("tokens",)}
        check(not stored or all("error" in k or "note" in k or k in ("clusters", "nodes") for k in stored),
              "bad input stored no data rows: %s" % stored)
        check(f.stop() == 0, "SIGTERM exits 0")
    finally:
        f.cleanup()


def test_limits_and_bulk():
    f = Fjord("--max-body", "64k", "--max-decoded", "128k").start()
    try:
        secret = f.token("mlx.hpc.uio.no")
        auth = ("mlx.hpc.uio.no", secret)
        big = open(SAMPLE).read()
        r = f.post("/api/v1/ingest/sonar", big * 3, auth=auth)
        check(r.status == 413, "body over max-body: 413, got %d" % r.status)
        bomb = gzip_bytes(b" " * (1 << 20) + big.encode())
        r = f.post("/ingest", bomb, headers={"Content-Encoding": "gzip"}, auth=auth)
        check(r.status == 413, "decoded body over max-decoded: 413, got %d %s" % (r.status, r.body[:200]))
        r = f.post("/ingest", b"garbage", headers={"Content-Encoding": "br"}, auth=auth)
        check(r.status == 415, "unknown encoding: 415, got %d" % r.status)
        r = f.post("/ingest", b"\x1f\x8bnot really gzip", headers={"Content-Encoding": "gzip"}, auth=auth)
        check(r.status == 400, "corrupt gzip: 400, got %d" % r.status)
        # Bulk: one good envelope, one bad: the good one is committed, the answer lists the bad one.
        env = json.loads(big)
        bad = json.loads(big)
        bad["data"]["attributes"]["time"] = "2025-02-30T00:00:00Z"
        body = json.dumps(env) + "\n" + json.dumps(bad) + "\n"
        r = f.post("/api/v1/ingest/sonar", body, auth=auth)
        check(r.status == 400, "bulk with a bad envelope: 400, got %d" % r.status)
        j = r.json()
        check(j.get("accepted") == 1 and j.get("rejected") == 1, "bulk counts: %s" % r.body[:300])
        check(j["items"][1]["error"]["path"] == "data.attributes.time", "bulk error path: %s" % j["items"][1])
        r = f.post("/api/v1/insert/sample", body, auth=auth)
        check(r.status == 400, "insert path takes one envelope: %d" % r.status)
        r = f.post("/api/v1/insert/unknown", big, auth=auth)
        check(r.status == 404, "unknown topic: %d" % r.status)
        r = f.post("/api/v1/insert/myprefix.sample", big, auth=auth)
        check(r.status == 200, "<prefix>.<type> topic: %d %s" % (r.status, r.body[:200]))
        r = f.get("/api/v1/insert/sample", auth=auth)
        check(r.status == 405, "GET on an ingest path: %d" % r.status)
        r = f.get("/no/such/path", auth=auth)
        check(r.status == 404 and "error" in r.json(), "unknown path: %d" % r.status)
        r = f.get("/api/v1/jobs?cluster=mlx.hpc.uio.no&from=yesterday", auth=auth)
        check(r.status == 400 and r.json()["error"].get("path") == "from", "bad parameter named: %s" % r.body)
        check(f.stop() == 0, "SIGTERM exits 0")
    finally:
        f.cleanup()


def test_dev_mode_and_drain():
    f = Fjord("--dev-mode").start()
    try:
        body = open(SAMPLE).read()
        results = []

        def send():
            results.append(f.post("/api/v1/insert/sample", body).status)

        threads = [threading.Thread(target=send) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(results.count(200) == 8, "dev mode accepts unauthenticated uploads: %s" % results)
        check(f.stop() == 0, "SIGTERM after load exits 0")
        procs = [k for k in f.row_counts() if "proc" in k]
        check(any(f.row_counts()[k] > 0 for k in procs), "data committed before exit")
    finally:
        f.cleanup()
    r = run_cli("serve", "--dev-mode", "--listen", "0.0.0.0:0", "--db", ":memory:", check_rc=False)
    check(r.returncode != 0 and "loopback" in r.stderr, "dev mode refused off loopback: %s" % r.stderr.strip())


def test_every_2xx_is_committed_across_sigterm():
    """Uploads race a SIGTERM: every envelope answered 200 is in the database afterwards."""
    f = Fjord("--dev-mode").start()
    answered = {}
    lock = threading.Lock()
    try:
        env = json.loads(open(SAMPLE).read())

        def sender(k):
            for i in range(400):
                env_k = json.loads(json.dumps(env))
                node = "race-%d-%d" % (k, i)
                env_k["data"]["attributes"]["node"] = node
                try:
                    st = f.post("/api/v1/insert/sample", json.dumps(env_k), timeout=10).status
                except Exception:
                    st = None  # connection refused or reset after the listener closed
                with lock:
                    answered[node] = st
                if st is None:
                    return

        threads = [threading.Thread(target=sender, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        import time
        time.sleep(1.0)
        rc = f.stop()
        for t in threads:
            t.join()
        check(rc == 0, "SIGTERM under load exits 0 (got %d)" % rc)
        ok = {n for n, st in answered.items() if st == 200}
        stored = {r[0] for r in f.query("SELECT n.name FROM samples s JOIN nodes n ON n.id = s.node_id")}
        check(len(ok) > 0, "some uploads were acknowledged before the stop: %d" % len(ok))
        check(ok <= stored, "acknowledged but not stored: %s" % sorted(ok - stored)[:5])
        other = {st for st in answered.values() if st != 200}
        check(other <= {None, 503}, "other answers are 503 or a closed connection: %s" % other)
    finally:
        f.cleanup()


def test_queue_full_is_503():
    f = Fjord("--dev-mode", "--queue-max", "0").start()
    try:
        r = f.post("/api/v1/insert/sample", open(SAMPLE).read())
        check(r.status == 503 and r.headers.get("Retry-After"), "full write queue: 503 with Retry-After, got %d" % r.status)
        check(f.stop() == 0, "SIGTERM exits 0")
    finally:
        f.cleanup()


def test_schema():
    f = Fjord()
    try:
        run_cli("migrate", "up", db=f.db)
        out = run_cli("migrate", "status", db=f.db).stdout
        check("up to date" in out, "migrate status after migrate up on a new db: %r" % out)
        latest = f.query("SELECT max(version) FROM schema_migrations")[0][0]
        f.execute("DELETE FROM schema_migrations WHERE version = %d" % latest)
        r = run_cli("serve", "--db", f.db, "--listen", "127.0.0.1:0", check_rc=False)
        check(r.returncode != 0 and "fjord migrate up" in r.stderr, "older schema refused, naming the command: %r" % r.stderr)
        other = fresh_db(f.tmp, "other.db")
        r = run_cli("import", SAMPLE, "--create", db=other)
        check("1 envelopes" in r.stdout, "import loads a directory-sink file: %r" % r.stdout)
        r = run_cli("import", SAMPLE, db=other)
        check("0 rows added" in r.stdout, "import twice adds nothing: %r" % r.stdout)
        r = run_cli("version")
        check(r.stdout.startswith("fjord "), "version prints: %r" % r.stdout)
    finally:
        f.cleanup()


if __name__ == "__main__":
    test_auth()
    test_bad_inputs()
    test_limits_and_bulk()
    test_dev_mode_and_drain()
    test_every_2xx_is_committed_across_sigterm()
    test_queue_full_is_503()
    test_schema()
    finish()
