"""PostgreSQL only (FJ_TEST_DB=postgres; exits 77, skipped, otherwise): with synchronous_standby_names
set and no standby connected, PostgreSQL holds every commit until one comes. fjord answers such a
write 503 with Retry-After once `commit-timeout` has passed, instead of holding the request (and the
writer) forever (docs/postgres.md, "Synchronous standbys").

- Before: a Sonar sample and a line-protocol body are answered 200.
- With synchronous_standby_names naming a standby that is not there: both are answered 503 with a
  Retry-After header within commit-timeout (2 s here) and a few seconds, fjord's log naming the
  synchronous standby; reads still answer.
- The standby requirement lifted: the same requests re-sent are 200 and add nothing beyond one copy
  (what the 503'd commit stored on the primary is found again, as a re-send finds it).
"""
import sys
import time

import harness
from harness import Fjord, check, finish
from test_postgres import SAMPLE, CLUSTER, sample

TIMEOUT = 2


def set_sync(server, names):
    server.psql("ALTER SYSTEM SET synchronous_commit = 'on'")
    server.psql("ALTER SYSTEM SET synchronous_standby_names = '%s'" % names)
    server.psql("SELECT pg_reload_conf()")
    time.sleep(0.5)


def lp(f, cred, t):
    body = "sync_m,cluster=%s,hostname=n1,type=node value=%d.5 %d\n" % (CLUSTER, t % 1000, t)
    return f.post("/api/write?cluster=%s" % CLUSTER, body.encode(), auth=cred,
                  headers={"Content-Type": "text/plain"}, timeout=60)


def main():
    server = harness.pg_server()
    template = open(SAMPLE).read()
    f = Fjord("--commit-timeout", str(TIMEOUT)).start()
    try:
        cred = (CLUSTER, f.token(CLUSTER))
        t0 = int(time.time()) - 600
        r = f.post("/api/v1/insert/sample", sample(template, "sync-1", 0), auth=cred)
        check(r.status == 200, "a sample before: %d %s" % (r.status, r.body[:200]))
        check(lp(f, cred, t0).status == 200, "a line-protocol body before")

        set_sync(server, "fjord_absent_standby")
        for name, send in (("a Sonar sample", lambda: f.post("/api/v1/insert/sample", sample(template, "sync-1", 1),
                                                               auth=cred, timeout=60)),
                           ("a line-protocol body", lambda: lp(f, cred, t0 + 60))):
            start = time.monotonic()
            r = send()
            took = time.monotonic() - start
            check(r.status == 503 and "Retry-After" in r.headers,
                  "%s without its synchronous standby: 503 with Retry-After: %d %s %s"
                  % (name, r.status, r.headers.get("Retry-After"), r.body[:200]))
            check("retry later" in r.body, "the answer says to retry: %s" % r.body[:300])
            check(TIMEOUT - 0.5 <= took < TIMEOUT + 8, "%s answered after the commit timeout, not held: %.1f s"
                  % (name, took))
        check("not confirmed by a synchronous standby" in open(f.log).read(), "fjord's log says why")
        r = f.get("/api/v1/nodes?cluster=%s" % CLUSTER, auth=cred)
        check(r.status == 200, "reads still answer: %d" % r.status)

        set_sync(server, "")
        r = f.post("/api/v1/insert/sample", sample(template, "sync-1", 1), auth=cred)
        check(r.status == 200, "the sample re-sent once a commit needs no standby: %d %s" % (r.status, r.body[:200]))
        check(lp(f, cred, t0 + 60).status == 200, "the line-protocol body re-sent: 200")
        rows = f.query("SELECT count(*) FROM samples s JOIN nodes n ON n.id = s.node_id WHERE n.name = 'sync-1'")[0][0]
        check(rows == 2, "each sample stored once: %d" % rows)
        r = f.get("/query?db=%s&epoch=s&q=SELECT+value+FROM+sync_m" % CLUSTER, auth=cred)
        vals = r.json()["results"][0]["series"][0]["values"] if r.status == 200 else []
        check([v[0] for v in vals] == [t0, t0 + 60], "each point once: %s" % vals)
        check(f.stop() == 0, "fjord exits 0")
    finally:
        set_sync(server, "")
        f.stop()
        f.cleanup()
    finish()


if __name__ == "__main__":
    if not harness.PG:
        print("PostgreSQL only: run with FJ_TEST_DB=postgres (skipped)")
        sys.exit(77)
    main()
