# attack: sqlite only (reads on the HTTP layer and the metrics engine, not a backend's SQL)
"""Reads must not take the server down: with small limits set in the configuration, a query that
would need gigabytes (GROUP BY time(1ms), * over 2,000 series) and a request of many statements get
InfluxDB's per-statement error naming the limit, the server stays up and its memory bounded; while
six heavy queries from a read credential run and are abandoned by their clients, another cluster's
line-protocol writes keep flowing; the server's CPU drops once those clients are gone; SIGTERM with
a runaway query exits promptly. docs/security.md, "Reads".

The server runs in a cgroup v2 with a memory limit when this host lets root make one (else it says
so and runs without). Every request goes to 127.0.0.1 with a timeout; the whole test takes well
under a minute. Figures are printed; the bounds asserted are generous, for a loaded 2-core host."""
import http.client
import json
import os
import socket
import statistics
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import FJORD, Fjord, check, finish  # noqa: E402

SERIES = 2000
POINTS = 30                 # a point a minute over the last half hour
QUERY_MEMORY_MB = 32
QUERY_MEMORY_TOTAL_MB = 96
QUERY_TIMEOUT_S = 8
CGROUP_MAX_MB = 1024        # far below what the unbounded queries took (15 GB), far above the limits
HEAVY = "SELECT mean(value) FROM m0 WHERE time > now()-30m GROUP BY time(1ms), * fill(none)"
GROUPED = ";".join(["SELECT last(value) FROM m0 GROUP BY *"] * 1000)  # its answer: hundreds of MB
MANY = ";".join(["SELECT count(value) FROM m0"] * 1000)  # small answer, ~16 s of a core unbounded
CLK_TCK = os.sysconf("SC_CLK_TCK")


def sanitized():
    """Whether the binary is the AddressSanitizer build, whose quarantine keeps up to 256 MB of
    freed memory resident."""
    with open(FJORD, "rb") as fh:
        return b"__asan_init" in fh.read()


RSS_SLACK_MB = 150 + (320 if sanitized() else 0)  # glibc's per-thread arenas keep what they freed


# --- the cgroup ------------------------------------------------------------------------------------

class Cgroup:
    """A cgroup v2 with memory.max for the server, or None and the reason it could not be made."""

    ROOT = "/sys/fs/cgroup"

    def __init__(self):
        self.path = None
        self.why = None
        try:
            controllers = open(os.path.join(self.ROOT, "cgroup.controllers")).read().split()
        except OSError:
            self.why = "no cgroup v2 hierarchy at %s" % self.ROOT
            return
        if "memory" not in controllers:
            self.why = "cgroup v2 at %s has no memory controller" % self.ROOT
            return
        path = os.path.join(self.ROOT, "fjord-attack-reads-%d" % os.getpid())
        try:
            with open(os.path.join(self.ROOT, "cgroup.subtree_control"), "w") as fh:
                fh.write("+memory")
            os.mkdir(path)
            with open(os.path.join(path, "memory.max"), "w") as fh:
                fh.write(str(CGROUP_MAX_MB << 20))
        except OSError as e:
            self.why = "cannot make a cgroup with memory.max (%s)" % e
            return
        self.path = path

    def add(self, pid):
        if not self.path:
            return False
        try:
            with open(os.path.join(self.path, "cgroup.procs"), "w") as fh:
                fh.write(str(pid))
            return True
        except OSError as e:
            self.why = "cannot move the server into the cgroup (%s)" % e
            return False

    def oom_kills(self):
        try:
            for line in open(os.path.join(self.path, "memory.events")):
                k, v = line.split()
                if k == "oom_kill":
                    return int(v)
        except OSError:
            pass
        return 0

    def remove(self):
        if self.path:
            try:
                os.rmdir(self.path)
            except OSError:
                pass


# --- the server's figures ---------------------------------------------------------------------------

def rss_mb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def cpu_s(pid):
    """utime + stime of the whole process, seconds."""
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


# --- requests ------------------------------------------------------------------------------------------

def influx_query(port, token, q, db="c1", timeout=60):
    """POST /query with a form body: (status, parsed answer or text)."""
    body = urllib.parse.urlencode({"q": q, "db": db})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", "/query", body=body, headers={"Authorization": "Bearer " + token,
                                                       "Content-Type": "application/x-www-form-urlencoded"})
        r = c.getresponse()
        data = r.read().decode()
    finally:
        c.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, data


def write_lines(port, token, db, lines, timeout=20):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", "/write?db=%s&precision=s" % db, body=lines.encode(),
                  headers={"Authorization": "Bearer " + token, "Content-Type": "text/plain"})
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def abandoned_query(port, token, q, hold_s):
    """Sends a query and walks away after hold_s without reading the answer."""
    body = urllib.parse.urlencode({"q": q, "db": "c1"}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"POST /query HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token.encode() +
              b"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: " +
              str(len(body)).encode() + b"\r\n\r\n" + body)
    return s, time.time() + hold_s


def prom(f, token):
    """GET /metrics as {"name{labels}": value}."""
    c = http.client.HTTPConnection("127.0.0.1", f.port, timeout=10)
    try:
        c.request("GET", "/metrics", headers={"Authorization": "Bearer " + token})
        text = c.getresponse().read().decode()
    finally:
        c.close()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def moved(before, after, name):
    return after.get(name, 0) - before.get(name, 0)


def errors_of(answer):
    if not isinstance(answer, dict):
        return []
    return [r.get("error", "") for r in answer.get("results", [])]


# --- the cases ------------------------------------------------------------------------------------------

def load_data(f, c1, c2):
    now = int(time.time())
    lines = []
    for s in range(SERIES):
        for p in range(POINTS):
            lines.append("m0,host=h%04d value=%d %d" % (s, (s + p) % 97, now - 60 * (POINTS - p)))
    st = write_lines(f.port, c1, "c1", "\n".join(lines) + "\n", timeout=120)
    check(st == 204, "the reads' data is written (%s)" % st)
    check(write_lines(f.port, c2, "c2", "cpu,host=n1 value=1 %d\n" % now) == 204, "c2 writes")


def memory_limits(f, reader, rss0):
    t0 = time.time()
    st, ans = influx_query(f.port, reader, HEAVY)
    errs = errors_of(ans)
    print("heavy GROUP BY time(1ms), *: %s in %.1f s: %s" % (st, time.time() - t0, errs[:1]), flush=True)
    check(st == 200 and len(errs) == 1 and errs[0].startswith("query-memory limit exceeded"),
          "GROUP BY time(1ms), * over %d series gets the query-memory error in its result (%s %s)"
          % (SERIES, st, str(ans)[:300]))
    st, ans = influx_query(f.port, reader, HEAVY + ";SHOW MEASUREMENTS")
    errs = errors_of(ans)
    check(st == 200 and len(errs) == 2 and errs[1] == "not executed",
          "the statement after the one stopped is 'not executed', as InfluxDB says (%s)" % errs[:2])
    st, ans = influx_query(f.port, reader, GROUPED)
    errs = errors_of(ans)
    stopped = [i for i, e in enumerate(errs) if e.startswith("query-memory limit exceeded")]
    print("1,000 x last(value) GROUP BY * in one request: %s, stopped at statement %s" % (st, stopped[:1]), flush=True)
    check(st == 200 and len(errs) == 1000 and len(stopped) == 1 and all(e == "not executed" for e in errs[stopped[0] + 1:])
          if stopped else False,
          "1,000 grouped statements in one request: the one that passes query-memory (its answer included) gets "
          "the error, the rest 'not executed' (%s)" % str(errs[:3]))
    # Several at once: together they pass query-memory-total before each passes its own limit.
    answers = []
    ths = [threading.Thread(target=lambda: answers.append(influx_query(f.port, reader, HEAVY)))
           for _ in range(4)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(60)
    limited = sum(1 for st, a in answers if st == 200 and any("limit exceeded" in e for e in errors_of(a)))
    total = sum(1 for st, a in answers if any(e.startswith("query-memory-total") for e in errors_of(a)))
    print("four heavy queries at once: %d stopped by a limit, %d of them by query-memory-total" % (limited, total),
          flush=True)
    check(limited == 4, "four heavy queries at once each get a limit's error (%d of 4)" % limited)
    rss1 = rss_mb(f.proc.pid)
    print("RSS: %.0f MB before the heavy queries, %.0f MB after (query-memory-total %d MB)"
          % (rss0, rss1, QUERY_MEMORY_TOTAL_MB), flush=True)
    check(rss1 - rss0 < QUERY_MEMORY_TOTAL_MB + RSS_SLACK_MB,
          "RSS grew by less than query-memory-total + %d MB (%.0f MB)" % (RSS_SLACK_MB, rss1 - rss0))
    r = f.get("/api/v1/health")
    check(r.status == 200, "the server is alive after the heavy queries (%d)" % r.status)


def writes_while_abandoned(f, reader, c2):
    """Six heavy reads (1,000 statements each, CPU rather than memory) held 3 s then abandoned;
    another cluster writes every 100 ms throughout, and for a few seconds after. /metrics shows the
    read pool busy meanwhile: four running (read-threads), two queued."""
    cpu0 = cpu_s(f.proc.pid)
    socks = [abandoned_query(f.port, reader, MANY, 3.0) for _ in range(6)]
    time.sleep(0.5)
    busy_figures = prom(f, reader)
    print("/metrics while six heavy reads run: running %s, queued %s"
          % (busy_figures.get("fjord_reads_running"), busy_figures.get("fjord_reads_queued")), flush=True)
    check(busy_figures.get("fjord_reads_running") == 4 and busy_figures.get("fjord_reads_queued") == 2,
          "/metrics: 4 reads running on the 4 read threads, 2 queued (%s, %s)"
          % (busy_figures.get("fjord_reads_running"), busy_figures.get("fjord_reads_queued")))
    check(busy_figures.get("fjord_query_memory_bytes", 0) > 0,
          "/metrics: the running reads hold query memory (%s bytes)" % busy_figures.get("fjord_query_memory_bytes"))
    lat, failed = [], 0
    t_end = time.time() + 3.0
    n = 0
    while time.time() < t_end:
        t0 = time.time()
        try:
            st = write_lines(f.port, c2, "c2", "cpu,host=n1 value=%d %d\n" % (n, int(t0)), timeout=20)
        except OSError:
            st = None
        if st == 204:
            lat.append(time.time() - t0)
        else:
            failed += 1
        n += 1
        time.sleep(max(0.0, 0.1 - (time.time() - t0)))
    busy = cpu_s(f.proc.pid) - cpu0
    for s, _ in socks:
        s.close()
    gone = time.time()
    print("server CPU while the six heavy reads ran (3 s): %.2f s" % busy, flush=True)
    check(busy > 1.0, "the heavy reads really worked meanwhile (%.2f CPU-s)" % busy)
    med = statistics.median(lat) if lat else float("inf")
    print("c2 writes while six heavy reads ran: %d answered, %d failed, median %.1f ms, max %.1f ms"
          % (len(lat), failed, med * 1000, (max(lat) if lat else 0) * 1000), flush=True)
    check(failed == 0 and lat, "no write of another cluster fails while heavy reads run (%d failed)" % failed)
    check(med < 1.0, "their median latency is under 1 s (%.3f s)" % med)
    return gone


def cpu_after_clients_left(f, gone):
    time.sleep(max(0.0, gone + 1.0 - time.time()))  # the reads stop within a second of their clients
    c0, t0 = cpu_s(f.proc.pid), time.time()
    time.sleep(3.0)
    used = cpu_s(f.proc.pid) - c0
    print("server CPU in the 3 s from 1 s after the clients left: %.2f s" % used, flush=True)
    check(used < 0.6, "the server stops working for clients that left (%.2f CPU-s in 3 s)" % used)
    r = f.get("/api/v1/health")
    check(r.status == 200, "alive after the abandoned reads (%d)" % r.status)


def timeout_answers(f, reader):
    t0 = time.time()
    st, ans = influx_query(f.port, reader, MANY, timeout=60)
    took = time.time() - t0
    errs = [e for e in errors_of(ans) if e]
    print("a read longer than query-timeout (%d s): answered in %.1f s: %s"
          % (QUERY_TIMEOUT_S, took, errs[:1]), flush=True)
    check(st == 200 and errs and errs[0].startswith("query-timeout limit exceeded"),
          "a read past query-timeout gets the query-timeout error (%s %s)" % (st, str(ans)[:200]))
    check(took < QUERY_TIMEOUT_S + 3, "and is stopped within 3 s of its deadline (%.1f s)" % took)


def sigterm_with_runaway(f, reader):
    s, _ = abandoned_query(f.port, reader, MANY, 60)
    time.sleep(1.0)
    t0 = time.time()
    rc = f.stop(timeout=30)
    took = time.time() - t0
    try:
        s.settimeout(2)
        answer = s.recv(65536).decode(errors="replace")
    except OSError:
        answer = ""
    s.close()
    print("SIGTERM with a runaway read: exit %d in %.1f s" % (rc, took), flush=True)
    check(rc == 0, "fjord exits 0 on SIGTERM with a read running (%d)" % rc)
    check(took < 5, "within 5 s (%.1f s)" % took)
    check(answer == "" or "shutting down" in answer,
          "the runaway read is answered 'shutting down' or closed (%s)" % answer[-200:])


def main():
    cg = Cgroup()
    f = Fjord("--query-memory", "%dM" % QUERY_MEMORY_MB, "--query-memory-total", "%dM" % QUERY_MEMORY_TOTAL_MB,
              "--query-timeout", str(QUERY_TIMEOUT_S), "--read-threads", "4")
    c1, c2 = f.token("c1"), f.token("c2")
    reader = f.token("reader", "--read-only")
    f.start()
    if cg.add(f.proc.pid):
        print("server in cgroup %s with memory.max %d MB" % (cg.path, CGROUP_MAX_MB), flush=True)
    else:
        print("running WITHOUT a memory limit: %s" % cg.why, flush=True)
    try:
        load_data(f, c1, c2)
        rss0 = rss_mb(f.proc.pid)
        p0 = prom(f, reader)
        memory_limits(f, reader, rss0)
        p1 = prom(f, reader)
        own = moved(p0, p1, 'fjord_reads_refused_total{limit="query-memory"}')
        pool = moved(p0, p1, 'fjord_reads_refused_total{limit="query-memory-total"}')
        print("/metrics after the heavy queries: refused by query-memory %d, by query-memory-total %d; "
              "query memory held %s" % (own, pool, p1.get("fjord_query_memory_bytes")), flush=True)
        check(own >= 3 and own + pool == 7,
              "/metrics counts the 7 reads a memory limit stopped, 3 or more by query-memory (%d, %d)" % (own, pool))
        check(p1.get("fjord_query_memory_bytes") == 0, "no query memory is held once the reads are answered (%s)"
              % p1.get("fjord_query_memory_bytes"))
        gone = writes_while_abandoned(f, reader, c2)
        cpu_after_clients_left(f, gone)
        p2 = prom(f, reader)
        left = moved(p1, p2, 'fjord_reads_cancelled_total{reason="client_gone"}')
        check(left == 6, "/metrics counts the 6 reads cancelled when their clients left (%d)" % left)
        timeout_answers(f, reader)
        p3 = prom(f, reader)
        late = moved(p2, p3, 'fjord_reads_cancelled_total{reason="deadline"}')
        check(late == 1, "/metrics counts the read cancelled at its deadline (%d)" % late)
        sigterm_with_runaway(f, reader)
    finally:
        if f.proc:
            f.stop()
        if cg.path:
            check(cg.oom_kills() == 0, "no OOM kill in the cgroup (%d)" % cg.oom_kills())
        cg.remove()
    finish()


if __name__ == "__main__":
    main()
