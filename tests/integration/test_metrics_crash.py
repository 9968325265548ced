"""SIGKILL in the middle of line-protocol ingest: after a restart every acknowledged point is there.

Several clients write requests of 60 hosts x 4 metrics at one second each (value = a function of
request, host and metric) while fjord seals small chunks (some points committed in chunks, the
rest only in the request log). fjord is killed with SIGKILL mid-stream, restarted (replaying the
request log), killed again before any new write and restarted again; then every point of every
acknowledged request must read back exactly through /api/query, and ingest goes on."""
import json
import signal
import threading
import time
import urllib.error
import urllib.request

from harness import Fjord, check, finish

HOSTS = ["n%03d" % i for i in range(60)]
METRICS = ["cpu_load", "mem_used", "ib_recv", "flops_any"]
BASE = 1700000000


def value(i, h, m):
    return round(i * 0.5 + h * 0.01 + m * 100 + 0.125, 3)


def body(i):
    t = BASE + i
    return "".join("%s,cluster=crash,hostname=%s,type=node value=%r %d\n" % (m, h, value(i, hi, mi), t)
                   for mi, m in enumerate(METRICS) for hi, h in enumerate(HOSTS)).encode()


def post(port, token, data):
    req = urllib.request.Request("http://127.0.0.1:%d/api/write?cluster=crash" % port, data=data, method="POST",
                                 headers={"Content-Type": "text/plain", "Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status


def writer(port, token, ids, acked, lock, stop):
    for i in ids:
        if stop.is_set():
            return
        try:
            if post(port, token, body(i)) == 200:
                with lock:
                    acked.add(i)
        except (urllib.error.URLError, ConnectionError, OSError):
            return  # the server is gone


def read_all(f, token, n):
    q = {"cluster": "crash", "from": BASE, "to": BASE + n, "with-padding": True,
         "queries": [{"metric": m, "host": h, "resolution": 1} for m in METRICS for h in HOSTS]}
    r = f.request("POST", "/api/query", json.dumps(q), headers={"Content-Type": "application/json"}, auth=token)
    if r.status != 200:
        return None
    res = r.json()["results"]
    out = {}
    k = 0
    for mi in range(len(METRICS)):
        for hi in range(len(HOSTS)):
            d = res[k][0]
            out[(mi, hi)] = (d["from"], d.get("data", []))
            k += 1
    return out


def verify(f, token, acked, n, what):
    got = read_all(f, token, n)
    check(got is not None, what + ": query answered")
    if got is None:
        return
    missing = 0
    for (mi, hi), (frm, data) in got.items():
        for i in acked:
            idx = BASE + i - frm
            if idx < 0 or idx >= len(data) or data[idx] is None or abs(data[idx] - value(i, hi, mi)) > 1e-9:
                missing += 1
    check(missing == 0, "%s: every acknowledged point of %d requests is there (%d missing)" % (what, len(acked), missing))


def main():
    f = Fjord("--metrics-seal-points", "16", "--group-commit-ms", "5")
    try:
        token = f.token("crash")
        f.start()
        n = 400
        acked, lock, stop = set(), threading.Lock(), threading.Event()
        threads = [threading.Thread(target=writer, args=(f.port, token, range(k, n, 3), acked, lock, stop))
                   for k in range(3)]
        for t in threads:
            t.start()
        deadline = time.time() + 60
        while len(acked) < 120 and time.time() < deadline:
            time.sleep(0.01)
        f.proc.send_signal(signal.SIGKILL)  # mid-stream: writers are still sending
        f.proc.wait()
        f.proc = None
        stop.set()
        for t in threads:
            t.join()
        check(120 <= len(acked) < n, "killed in the middle of ingest (%d of %d acknowledged)" % (len(acked), n))
        chunks = f.query("SELECT count(*) FROM ts_chunk")[0][0]
        logged = f.query("SELECT count(*) FROM request_log")[0][0]
        check(chunks > 0 and logged > 0, "at the kill some points were in chunks (%d) and some only logged (%d)"
              % (chunks, logged))

        f.start()
        verify(f, token, sorted(acked), n, "after restart")
        # killed again before any write: the replay must be repeatable
        f.proc.send_signal(signal.SIGKILL)
        f.proc.wait()
        f.proc = None
        f.start()
        verify(f, token, sorted(acked), n, "after a second kill and restart")
        # ingest goes on, and a clean stop seals everything
        extra = [i for i in range(n) if i not in acked][:5]
        for i in extra:
            check(post(f.port, token, body(i)) == 200, "write after restart")
        verify(f, token, sorted(acked | set(extra)), n, "with new writes")
        check(f.stop() == 0, "clean stop")
        check(f.query("SELECT count(*) FROM request_log")[0][0] == 0, "nothing left to replay after a clean stop")
        f.start()
        verify(f, token, sorted(acked | set(extra)), n, "after a clean restart")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
