"""Checkpoints of the open buffers: the request log is trimmed while the buffers are still open, and
a SIGKILL after that loses nothing that was acknowledged.

With the default seal (720 points, 12 h) nothing seals here: 60 s of points of 60 hosts x 4
metrics stay in the engine's open buffers. Once writes pause, the writer checkpoints them (one
chunk row per series) and trims the request log, which the test waits for. Then a value is
replaced and new points come (only the request log holds those), fjord is killed with SIGKILL and
restarted: every acknowledged point reads back exactly, the replaced value included. After a clean
stop (every buffer sealed, the checkpoints deleted by the seals) the points read back once more,
with no checkpoint left beside the chunks. Before checkpoints, the log kept every point until the
buffers sealed, and the wait below failed."""
import json
import signal
import time
import urllib.request

from harness import Fjord, check, finish

HOSTS = ["n%03d" % i for i in range(60)]
METRICS = ["cpu_load", "mem_used", "ib_recv", "flops_any"]
BASE = 1700000000
N = 60


def value(i, h, m):
    return round(i * 0.5 + h * 0.01 + m * 100 + 0.125, 3)


def body(i, bump=0.0):
    t = BASE + i
    return "".join("%s,cluster=ckpt,hostname=%s,type=node value=%r %d\n" % (m, h, value(i, hi, mi) + bump, t)
                   for mi, m in enumerate(METRICS) for hi, h in enumerate(HOSTS)).encode()


def post(port, token, data):
    req = urllib.request.Request("http://127.0.0.1:%d/api/write?cluster=ckpt" % port, data=data, method="POST",
                                 headers={"Content-Type": "text/plain", "Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status


def verify(f, token, expect, what):
    """expect: {(i, mi, hi): value}; every one must read back exactly, and nothing else."""
    q = {"cluster": "ckpt", "from": BASE, "to": BASE + N + 10, "with-padding": True,
         "queries": [{"metric": m, "host": h, "resolution": 1} for m in METRICS for h in HOSTS]}
    r = f.request("POST", "/api/query", json.dumps(q), headers={"Content-Type": "application/json"}, auth=token)
    check(r.status == 200, what + ": query answered")
    if r.status != 200:
        return
    res = r.json()["results"]
    wrong = extra = 0
    k = 0
    for mi in range(len(METRICS)):
        for hi in range(len(HOSTS)):
            d = res[k][0]
            k += 1
            for idx, v in enumerate(d.get("data", [])):
                i = d["from"] + idx - BASE
                want = expect.get((i, mi, hi))
                if want is None:
                    extra += v is not None
                elif v is None or abs(v - want) > 1e-9:
                    wrong += 1
    check(wrong == 0 and extra == 0, "%s: every acknowledged point reads back exactly (%d wrong or missing, %d extra)"
          % (what, wrong, extra))


def main():
    f = Fjord("--group-commit-ms", "5")
    try:
        token = f.token("ckpt")
        f.start()
        expect = {}
        for i in range(N):
            check(post(f.port, token, body(i)) == 200, "write %d" % i)
            for mi in range(len(METRICS)):
                for hi in range(len(HOSTS)):
                    expect[(i, mi, hi)] = value(i, hi, mi)
        series = len(METRICS) * len(HOSTS)
        # the checkpoint comes once writes pause (and at most every 10 s): wait, bounded
        deadline = time.time() + 60
        logged = chunks = None
        while time.time() < deadline:
            logged = f.query("SELECT count(*) FROM request_log")[0][0]
            chunks = f.query("SELECT count(*) FROM ts_chunk")[0][0]
            if logged == 0 and chunks == series:
                break
            time.sleep(0.5)
        check(logged == 0, "the request log was trimmed while the buffers are open (%s rows left)" % logged)
        check(chunks == series, "one checkpoint per series (%s chunk rows for %d series)" % (chunks, series))

        # a replaced value and new points: only the request log holds them when fjord dies
        check(post(f.port, token, body(N - 1, bump=1000.0)) == 200, "value replaced")
        for mi in range(len(METRICS)):
            for hi in range(len(HOSTS)):
                expect[(N - 1, mi, hi)] = value(N - 1, hi, mi) + 1000.0
        for i in range(N, N + 5):
            check(post(f.port, token, body(i)) == 200, "write %d after the checkpoint" % i)
            for mi in range(len(METRICS)):
                for hi in range(len(HOSTS)):
                    expect[(i, mi, hi)] = value(i, hi, mi)
        verify(f, token, expect, "before the kill")
        f.proc.send_signal(signal.SIGKILL)
        f.proc.wait()
        f.proc = None

        f.start()
        verify(f, token, expect, "after SIGKILL and restart")
        check(f.stop() == 0, "clean stop")
        check(f.query("SELECT count(*) FROM request_log")[0][0] == 0, "nothing left to replay after a clean stop")
        f.start()
        verify(f, token, expect, "after a clean restart")
        # the checkpoint before the kill stays a chunk of its own; the clean stop's seals deleted any
        # checkpoint taken since: at most two chunk rows per series
        rows = f.query("SELECT max(n) FROM (SELECT count(*) AS n FROM ts_chunk GROUP BY series_id) x")[0][0]
        check(rows is not None and rows <= 2, "no checkpoint left beside the sealed chunks (%s rows per series)" % rows)
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
