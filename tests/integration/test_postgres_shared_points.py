"""PostgreSQL only (FJ_TEST_DB=postgres; exits 77, skipped, otherwise): two fjord servers on one
database, each seeing what the other took (docs/metrics.md, "Every server sees every point").

- Line protocol written through A is read through B's /query (InfluxQL) and /api/query
  (cc-metric-store) within 5 s of A's acknowledgement, over 300 points in 12 rounds: new series
  (a new host each round, a metric new to the database among them) and new points of series
  that already hold some, ClusterCockpit and Telegraf-style lines; each point checked by value
  against what was sent. And the other way round (B writes, A reads).
- B lists the series A made (SHOW TAG VALUES, SHOW MEASUREMENTS) within the same bound.
- A Sonar envelope acknowledged by A is read through B at once (committed before the answer).
- A re-sent body adds nothing; a restart of A finds every point (the shared rows are ordinary
  checkpoints, deleted when their buffer seals).
- A server alone on the database shares nothing: a series written every round over several share
  intervals is at most one chunk row (its checkpoint), not a piece per share. When B starts, the
  points A acknowledged before are read through B within BOUND of B's start (one maintenance tick
  plus the share interval); when B stops, A stops sharing again.
"""
import json
import os
import sys
import time
import urllib.parse

import harness
from harness import Fjord, check, finish
from test_postgres import SAMPLE, sample

CLUSTER = "c1"
BOUND = 5.0
ROUNDS, PER_ROUND = 12, 25
NOW = int(time.time()) // 60 * 60
T0 = NOW - 3 * 3600
API_READS = [0]


def write(f, cred, body):
    return f.post("/api/write?cluster=%s" % CLUSTER, body.encode(), auth=cred,
                  headers={"Content-Type": "text/plain"})


def influx(f, cred, q):
    r = f.get("/query?" + urllib.parse.urlencode({"db": CLUSTER, "q": q, "epoch": "s"}), auth=cred)
    if r.status != 200:
        return None
    return r.json()["results"][0]


def influx_points(f, cred, measurement, field, host_tag, host):
    """{time: value} of one series through /query."""
    res = influx(f, cred, 'SELECT "%s" FROM "%s" WHERE "%s" = \'%s\' AND time >= %ds'
                 % (field, measurement, host_tag, host, T0 - 60))
    out = {}
    for s in (res or {}).get("series", []):
        for t, v in s["values"]:
            out[t] = v
    return out


def api_points(f, cred, metric, host):
    """{time: value} of one node-level series through /api/query at the points' own spacing."""
    body = {"cluster": CLUSTER, "from": T0 - 60, "to": NOW + 60, "with-stats": False, "with-padding": True,
            "queries": [{"metric": metric, "host": host, "resolution": 60}]}
    r = f.request("POST", "/api/query", json.dumps(body), headers={"Content-Type": "application/json"}, auth=cred)
    if r.status != 200:
        return {}
    out = {}
    for res in r.json()["results"][0]:
        t0, step = res["from"], res["resolution"]
        for i, v in enumerate(res.get("data") or []):
            if v is not None:
                out[t0 + i * step] = v
    return out


class Sent:
    """What was written: per series (metric, field, host tag, host) the points {time: value}."""

    def __init__(self):
        self.series = {}

    def lines(self, rnd):
        """PER_ROUND points of round rnd: a new host's series and new points of older ones."""
        out = []
        t = T0 + rnd * 60
        new_host = "n%02d" % rnd
        for m in range(5):  # ClusterCockpit metric lines of a host new this round
            out.append(("cc_m%d" % m, "value", "hostname", new_host, t, rnd * 100 + m + 0.25))
        out.append(("cc_new_r%d" % rnd, "value", "hostname", new_host, t, 7.5 + rnd))  # a new metric
        out.append(("cc_solo", "value", "hostname", "solo", t, rnd + 0.75))  # only A, every round
        for k in range(rnd):  # the older hosts' series, a new point each (up to the round's size)
            if len(out) >= PER_ROUND - 4:
                break
            out.append(("cc_m0", "value", "hostname", "n%02d" % k, t, rnd * 10 + k + 0.5))
        for fld in ("usage_user", "usage_system"):  # Telegraf-style lines (measurement.field series)
            for h in ("t1", new_host):
                if len(out) < PER_ROUND:
                    out.append(("tcpu", fld, "host", h, t, rnd + (1 if fld == "usage_user" else 2) / 4))
        while len(out) < PER_ROUND:
            out.append(("cc_m1", "value", "hostname", "n%02d" % (len(out) % (rnd + 1)), t + 30, len(out) + 0.125))
        body = []
        for meas, fld, tag, host, ts, v in out:
            if fld == "value":
                body.append("%s,cluster=%s,%s=%s,type=node value=%r %d" % (meas, CLUSTER, tag, host, v, ts))
            else:
                body.append("%s,cluster=%s,%s=%s %s=%r %d" % (meas, CLUSTER, tag, host, fld, v, ts))
            self.series.setdefault((meas, fld, tag, host), {})[ts] = v
        return "\n".join(body) + "\n", out


def wait_visible(reader, cred, points, use_api, allpts):
    """Seconds until every point is read through reader with its value; None past 3 x BOUND."""
    start = time.monotonic()
    want = {}
    for meas, fld, tag, host, ts, v in points:
        want.setdefault((meas, fld, tag, host), {})[ts] = v
    while time.monotonic() - start < 3 * BOUND:
        missing = 0
        for (meas, fld, tag, host), pts in want.items():
            # /api/query averages into minutes: only for series whose every point is on a minute
            if use_api and fld == "value" and all(t % 60 == 0 for t in allpts[(meas, fld, tag, host)]):
                got = api_points(reader, cred, meas, host)
                API_READS[0] += 1
                ok = all(t in got and abs(got[t] - v) < 1e-9 for t, v in pts.items())
            else:
                got = influx_points(reader, cred, meas, fld, tag, host)
                ok = all(t in got and got[t] == v for t, v in pts.items())
            if not ok:
                missing += 1
                break
        if not missing:
            return time.monotonic() - start
        time.sleep(0.1)
    return None


def lone_rounds(f, cred, sent, host, rounds):
    """Points of series (cc_lone_m0..2, host) written in rounds 1.2 s apart, longer than the share
    interval: a sharing server would store a piece of each series per round."""
    pts = []
    for rnd in range(rounds):
        t = T0 + rnd * 60
        out = [("cc_lone_m%d" % m, "value", "hostname", host, t, rnd * 10 + m + 0.375) for m in range(3)]
        body = "".join("%s,cluster=%s,hostname=%s,type=node value=%r %d\n" % (meas, CLUSTER, h, v, ts)
                       for meas, _, _, h, ts, v in out)
        r = write(f, cred, body)
        check(r.status == 200 and r.json().get("points") == len(out),
              "%s round %d taken: %d %s" % (host, rnd, r.status, r.body[:200]))
        for meas, fld, tag, h, ts, v in out:
            sent.series.setdefault((meas, fld, tag, h), {})[ts] = v
        pts += out
        time.sleep(1.2)
    return pts


def chunk_rows(f, host):
    """[(metric, chunk rows)] of host's series."""
    return f.query("SELECT s.metric, count(c.series_id) FROM ts_series s LEFT JOIN ts_chunk c ON c.series_id = s.id"
                   " WHERE s.cluster = 'c1' AND s.host = '%s' GROUP BY 1 ORDER BY 1" % host)


def log_of(f):
    with open(f.log) as fh:
        return fh.read()


def main():
    a = Fjord("--instance", "server-a").start()
    b = Fjord("--instance", "server-b", db=a.db)
    try:
        cred = (CLUSTER, a.token(CLUSTER))
        sent = Sent()
        # A alone: nothing shared, whatever the share interval (a checkpoint replaces the last)
        lone = lone_rounds(a, cred, sent, "lone", 4)
        time.sleep(1.0)
        rows = chunk_rows(a, "lone")
        check(len(rows) == 3 and all(n <= 1 for _, n in rows),
              "a lone server stores no pieces: at most one chunk row per series over 4 share intervals: %s" % rows)
        check("sharing" not in log_of(a), "a lone server does not share: %s" % log_of(a)[-500:])
        # B starts: what A acknowledged before is read through B within the bound
        b.start()
        took = wait_visible(b, cred, lone, False, sent.series)
        check(took is not None and took < BOUND,
              "points A took alone are read through B within %.0f s of B's start: %s" % (BOUND, took))
        print("from B's start to B reading A's earlier points: %.2f s" % (took or -1))
        check("sharing the open buffers" in log_of(a), "A says it shares: %s" % log_of(a)[-500:])
        worst = 0.0
        for rnd in range(ROUNDS):
            body, pts = sent.lines(rnd)
            r = write(a, cred, body)
            check(r.status == 200 and r.json().get("points") == PER_ROUND,
                  "round %d: A takes %d points: %d %s" % (rnd, PER_ROUND, r.status, r.body[:200]))
            took = wait_visible(b, cred, pts, rnd % 2 == 0, sent.series)
            check(took is not None and took < BOUND,
                  "round %d: B reads A's %d points (%s) within %.0f s: %s" % (
                      rnd, len(pts), "/api/query" if rnd % 2 == 0 else "/query", BOUND, took))
            worst = max(worst, took or 3 * BOUND)
        check(API_READS[0] >= ROUNDS, "series were read through /api/query too: %d reads" % API_READS[0])
        print("worst time from A's acknowledgement to B's answer: %.2f s" % worst)

        res = influx(b, cred, 'SHOW TAG VALUES FROM "cc_m0" WITH KEY = "hostname"')
        hosts = sorted(v[1] for s in (res or {}).get("series", []) for v in s["values"])
        check(hosts == ["n%02d" % k for k in range(ROUNDS)], "B lists every host A made: %s" % hosts)
        res = influx(b, cred, "SHOW MEASUREMENTS")
        names = {v[0] for s in (res or {}).get("series", []) for v in s["values"]}
        check({"cc_new_r%d" % k for k in range(ROUNDS)} | {"tcpu"} <= names,
              "B lists every measurement A made: %s" % sorted(names))

        # the other way round: B writes, A reads
        body = "".join("rev,cluster=%s,hostname=r%d,type=node value=%d.5 %d\n" % (CLUSTER, k, k, NOW - 60)
                       for k in range(20))
        r = write(b, cred, body)
        check(r.status == 200, "B takes 20 points: %d %s" % (r.status, r.body[:200]))
        took = wait_visible(a, cred, [("rev", "value", "hostname", "r%d" % k, NOW - 60, k + 0.5) for k in range(20)],
                            False, {})
        check(took is not None and took < BOUND, "A reads B's points within %.0f s: %s" % (BOUND, took))

        # Sonar: committed before the answer, so read through B at once
        template = open(SAMPLE).read()
        env = sample(template, "sonar-shared-1", 0)
        sonar_cluster = json.loads(env)["data"]["attributes"]["cluster"]
        scred = (sonar_cluster, a.token(sonar_cluster))
        r = a.post("/api/v1/insert/sample", env, auth=scred)
        check(r.status == 200, "A takes a Sonar sample: %d %s" % (r.status, r.body[:200]))
        r = b.get("/api/v1/nodes?cluster=%s" % urllib.parse.quote(sonar_cluster), auth=scred)
        check(r.status == 200 and "sonar-shared-1" in r.body,
              "B lists the Sonar node right after A's answer: %d %s" % (r.status, r.body[:300]))

        # re-sending adds nothing: the same body again through B, then every series as sent
        body = "".join(ln + "\n" for ln in Sent().lines(ROUNDS - 1)[0].splitlines() if "solo" not in ln)
        r = write(b, cred, body)
        check(r.status == 200, "the last round re-sent through B: %d" % r.status)
        time.sleep(BOUND)
        counts = {}
        for (meas, fld, tag, host), pts in sent.series.items():
            got = influx_points(b, cred, meas, fld, tag, host)
            own = influx_points(a, cred, meas, fld, tag, host)  # A: its buffers, its pieces left out
            counts[(meas, fld, host)] = (len(got), got == pts and own == pts)
        bad = {k: v for k, v in counts.items() if not v[1]}
        check(not bad, "after the re-send every series reads exactly as sent through B and A (%d series): %s"
              % (len(counts), list(bad.items())[:3]))

        # A's series written every round are stored in pieces, one per share (not rewritten whole)
        solo = a.query("SELECT count(*), sum(c.count) FROM ts_series s JOIN ts_chunk c ON c.series_id = s.id"
                       " WHERE s.cluster = 'c1' AND s.host = 'solo'")[0]
        check(solo[0] >= 2 and solo[1] == ROUNDS,
              "a series A wrote every round is in several pieces holding each point once: %s" % (solo,))

        # A stops (seals) and starts again: every point still there, none twice
        check(a.stop() == 0, "A exits 0")
        a.start()
        total = 0
        for (meas, fld, tag, host), pts in sent.series.items():
            got = influx_points(a, cred, meas, fld, tag, host)
            check(got == pts, "after A's restart %s %s %s reads as sent" % (meas, fld, host))
            total += len(got)
        check(total == sum(len(p) for p in sent.series.values()), "every point once: %d" % total)
        # a series only A wrote has one chunk after A's seal: its shared copies were deleted with it
        resent = {(m, fl, h) for m, fl, _, h, _, _ in Sent().lines(ROUNDS - 1)[1] if h != "solo"}
        rows = a.query("SELECT s.metric, s.host, count(*) FROM ts_series s JOIN ts_chunk c ON c.series_id = s.id"
                       " WHERE s.cluster = 'c1' GROUP BY 1, 2")
        only_a = [(m, h, n) for m, h, n in rows if not m.startswith("rev") and
                  not any((m == mm or m == mm + "." + fl) and h == hh for mm, fl, hh in resent)]
        check(len(only_a) > 20 and all(n == 1 for _, _, n in only_a) and ("cc_solo", "solo", 1) in only_a,
              "each series only A wrote is one chunk after A's seal (%d series): %s"
              % (len(only_a), [x for x in only_a if x[2] != 1][:5]))

        # B stops: A, alone again, stops sharing (B's lock went with its session)
        check(b.stop() == 0, "B exits 0")
        deadline = time.monotonic() + BOUND
        while "sharing stops" not in log_of(a) and time.monotonic() < deadline:
            time.sleep(0.2)
        check("sharing stops" in log_of(a), "A stops sharing once B is gone: %s" % log_of(a)[-500:])
        lone_rounds(a, cred, sent, "after", 3)
        rows = chunk_rows(a, "after")
        check(len(rows) == 3 and all(n <= 1 for _, n in rows),
              "alone again, A stores no pieces: %s" % rows)
        check(a.stop() == 0 and b.stop() == 0, "both servers exit 0")
    finally:
        a.stop()
        b.stop()
        a.cleanup()
        b.cleanup()
    finish()


if __name__ == "__main__":
    if not harness.PG:
        print("PostgreSQL only: run with FJ_TEST_DB=postgres (skipped)")
        sys.exit(77)
    main()
