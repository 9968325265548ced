"""PostgreSQL only (FJ_TEST_DB=postgres; exits 77, skipped, otherwise): a cluster's series cap with
two fjord servers on one database, as docs/security.md ("Quotas", "On PostgreSQL") says the counts
behave: each server reads the cluster's count from the database when it first needs it (and again
once the reading is a minute old) and adds what it creates itself in between.

With max-series-per-cluster 2,000: server A makes 1,500 series; server B, reading the count only
now, may make 500 more and drops the rest; A, whose reading (0) is older than B's series, still
makes 500 more of its own, so the cluster passes the cap by exactly what B made since A read the
count (never more); then both refuse every new series, while the existing ones stay writable
through either.
"""
import sys

import harness
from harness import Fjord, check, finish

CAP = 2000
T0 = 1700000000


def lines(hosts, metrics=100, t=T0):
    return "".join("m%d,cluster=c1,hostname=h%d,type=node value=1 %d\n" % (m, h, t)
                   for h in hosts for m in range(metrics))


def write(f, cred, body):
    return f.post("/api/write?cluster=c1", body, auth=cred, headers={"Content-Type": "text/plain"})


def series(f):
    return f.query("SELECT count(*) FROM ts_series WHERE cluster='c1'")[0][0]


def main():
    limits = ("--max-series-per-cluster", str(CAP), "--max-new-series-per-minute", "0")
    a = Fjord(*limits).start()
    b = Fjord(*limits, db=a.db).start()
    try:
        cred = ("c1", a.token("c1"))
        r = write(a, cred, lines(range(15)))
        check(r.status == 200 and series(a) == 1500, "A makes 1,500 series: %d, %d stored" % (r.status, series(a)))
        r = write(b, cred, lines(range(100, 110)))
        body = r.json() if r.status == 400 else {}
        check(r.status == 400 and body.get("dropped") == 500 and body["error"]["path"] == "max-series-per-cluster",
              "B reads the count (1,500) and makes 500 of its 1,000: %d %s" % (r.status, r.body[:300]))
        check(series(a) == CAP, "the cluster holds the cap: %d" % series(a))
        r = write(a, cred, lines(range(200, 205)))
        check(r.status == 200 and series(a) == CAP + 500,
              "A's reading predates B's 500: it makes its 500 too, the cap passed by what B made (%d, %d stored)"
              % (r.status, series(a)))
        for name, srv, host in (("A", a, 300), ("B", b, 301)):
            r = write(srv, cred, lines([host], metrics=1))
            check(r.status == 400 and r.json().get("dropped") == 1,
                  "then %s refuses a new series: %d %s" % (name, r.status, r.body[:200]))
        check(series(a) == CAP + 500, "no more than that: %d" % series(a))
        for name, srv in (("A", a), ("B", b)):
            r = write(srv, cred, lines(range(15), t=T0 + 60))
            check(r.status == 200, "existing series stay writable through %s: %d %s" % (name, r.status, r.body[:200]))
        check(a.stop() == 0 and b.stop() == 0, "both servers exit 0")
    finally:
        b.stop()
        a.cleanup()
        b.cleanup()
    finish()


if __name__ == "__main__":
    if not harness.PG:
        print("PostgreSQL only: run with FJ_TEST_DB=postgres (skipped)")
        sys.exit(77)
    main()
