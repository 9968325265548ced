"""The differential test of InfluxQL: the same line protocol written to fjord and to a real
InfluxDB 1.6.7 (Debian's influxd, started here in a temporary directory on loopback ports, reporting
off, stopped by its PID), then every request of corpus.iql run against both and the answers
compared value by value (floats to 1e-9 relative; errors: both must fail). A difference is a bug
or a departure documented in docs/metrics.md ("InfluxQL"), listed in DEPARTURES below with why.

Run by CTest in the normal pass only (not under the sanitizers), against SQLite and PostgreSQL."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
from harness import Fjord, check, finish, free_port  # noqa: E402

S = 1700000000
HOSTS = ["n1", "n2", "n3", "n4"]

# Requests whose answers differ by design (docs/metrics.md, "InfluxQL: departures"):
DEPARTURES = {
    # InfluxDB lists its own _internal database too; fjord lists clusters only.
    "SHOW DATABASES",
    # fjord refuses time compared inside OR; InfluxDB 1.6 quietly answers as if the OR were not
    # there (its own documentation calls such conditions unsupported).
    "SELECT mean(value) FROM cpu_load WHERE time > now() - 1h OR hostname = 'n1'",
    # GROUP BY time(0s): InfluxDB ignores it; fjord refuses a zero interval.
    "SELECT mean(value) FROM cpu_load GROUP BY time(0s)",
    # fjord refuses every statement that writes or administers (InfluxDB runs DROP).
    "DROP MEASUREMENT nosuch_measurement",
    # mode() among equally frequent values: InfluxDB's choice follows the order its unstable sort
    # leaves them in; fjord answers the smallest.
    "SELECT mode(n_users) FROM system WHERE time >= 1700000000s AND time < 1700003600s GROUP BY time(10m)",
    "SELECT mode(num_threads) FROM procstat WHERE time >= 1700000000s AND time < 1700003600s GROUP BY time(5m)",
    "SELECT mode(n_users), mean(load1) FROM system WHERE time >= 1700000000s AND time < 1700003600s GROUP BY time(30m), host",
    # integral() grouped by tags: InfluxDB answers the series in the order its reducers finish
    # (the last bucket of each series apart, in no fixed order); fjord in tag order, one series
    # each (the values agree).
    "SELECT integral(value) FROM cpu_load WHERE time >= 1700000000s AND time < 1700003600s GROUP BY time(20m), hostname",
    "SELECT integral(value, 1h) FROM mem_used WHERE time >= 1700000000s AND time < 1700003600s GROUP BY hostname",
    "SELECT integral(uptime, 1d) FROM system WHERE time >= 1700000000s AND time < 1700003600s GROUP BY host",
    # a request of empty statements: InfluxDB answers {}; fjord 400 (no statement).
    "  ;  ",
}


# sample() chooses at random (in both): each such request is checked for its shape (series, columns,
# rows a series) and each row fjord chose for being a point of the raw request beside it, as
# InfluxDB answers that one.
SAMPLES = {
    "SELECT sample(value, 3) FROM cpu_load WHERE hostname = 'n1' AND time >= 1700000000s AND time < 1700003600s":
        "SELECT value FROM cpu_load WHERE hostname = 'n1' AND time >= 1700000000s AND time < 1700003600s",
    "SELECT sample(value, 2) FROM cpu_load WHERE hostname = 'n1' AND time >= 1700000000s AND time < 1700003600s GROUP BY time(20m)":
        "SELECT value FROM cpu_load WHERE hostname = 'n1' AND time >= 1700000000s AND time < 1700003600s",
    "SELECT sample(value, 2), hostname FROM cpu_load WHERE time >= 1700000000s AND time < 1700003600s GROUP BY time(30m)":
        "SELECT value, hostname FROM cpu_load WHERE time >= 1700000000s AND time < 1700003600s",
    "SELECT sample(value, 4) FROM mem_used WHERE time >= 1700000000s AND time < 1700003600s GROUP BY hostname":
        "SELECT value FROM mem_used WHERE time >= 1700000000s AND time < 1700003600s GROUP BY hostname",
    "SELECT sample(message, 2) FROM syslog WHERE host = 'n1'": "SELECT message FROM syslog WHERE host = 'n1'",
    "SELECT sample(n_users, 5) FROM system WHERE host = 'n2' AND time >= 1700000000s AND time < 1700000300s":
        "SELECT n_users FROM system WHERE host = 'n2' AND time >= 1700000000s AND time < 1700000300s",
    "SELECT sample(running, 1000) FROM procstat_lookup WHERE host = 'n2' AND time >= 1700000000s AND time < 1700003600s":
        "SELECT running FROM procstat_lookup WHERE host = 'n2' AND time >= 1700000000s AND time < 1700003600s",
}


def sample_differences(a, b, raw):
    """Where sample answer b (fjord) departs from a (InfluxDB) in shape, or has a row that is no
    point of raw (InfluxDB's answer to the raw request), or None."""
    if errored(a) != errored(b):
        return "error: influxdb %r, fjord %r" % (a, b)
    if errored(a):
        return None
    sa, sb = a["results"][0].get("series", []), b["results"][0].get("series", [])
    if len(sa) != len(sb):
        return "%d series against %d" % (len(sa), len(sb))
    points = {}
    for s in raw["results"][0].get("series", []):
        points.setdefault(json.dumps(s.get("tags"), sort_keys=True), set()).update(json.dumps(r) for r in s["values"])
    for p, q in zip(sa, sb):
        for key in ("name", "tags", "columns"):
            if p.get(key) != q.get(key):
                return "%s %r against %r" % (key, p.get(key), q.get(key))
        if len(p["values"]) != len(q["values"]):
            return "%d rows against %d" % (len(p["values"]), len(q["values"]))
        if [r[0] for r in q["values"]] != sorted(r[0] for r in q["values"]):
            return "rows not in time order: %r" % q["values"]
        have = points.get(json.dumps(q.get("tags"), sort_keys=True), set())
        for r in q["values"]:
            if json.dumps(r) not in have:
                return "row %r is no point of the raw answer" % r
    return None


def errored(doc):
    """Whether an answer failed: as a whole or in one of its statements."""
    return "error" in doc or any("error" in r for r in doc.get("results", []))


def lcg(seed):
    x = seed
    while True:
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        yield (x >> 33) / float(1 << 31)


def data(now_s):
    """One hour at 10 s of ClusterCockpit metric lines and Telegraf-style generic lines for four
    hosts, with gaps; and a little recent data for now()-relative queries."""
    rnd = lcg(42)
    lines = []
    for k in range(360):
        t = (S + 10 * k) * 10**9
        for h in HOSTS:
            if h == "n3" and 60 <= k < 120:
                continue  # a 10-minute gap
            lines.append("cpu_load,cluster=t,hostname=%s,type=node value=%.4f %d" % (h, 100 * next(rnd), t))
            if k % 3 == 0 or h != "n3":
                lines.append("mem_used,cluster=t,hostname=%s,type=node value=%.2f %d" % (h, 1000 * next(rnd), t))
            for s in ("0", "1"):
                lines.append("flops_any,cluster=t,hostname=%s,type=socket,type-id=%s value=%.3f %d" % (h, s, 50 * next(rnd), t))
            if h in ("n1", "n2"):
                for c in ("cpu0", "cpu1"):
                    extra = ",usage_idle=%.3f" % (100 * next(rnd)) if k % 2 == 0 else ""
                    lines.append("cpu,cluster=t,cpu=%s,host=%s usage_user=%.3f,usage_system=%.3f%s %d"
                                 % (c, h, 50 * next(rnd), 20 * next(rnd), extra, t))
            if k % 6 == 0:
                lines.append("disk,cluster=t,device=sda1,host=%s,path=/ used_percent=%.2f %d" % (h, 100 * next(rnd), t))
            if k % 30 == 0:
                # names: dots in measurements (plain and ClusterCockpit's), escaped commas, `=`
                # and spaces in tags and measurements; collectd's lines (a `type` that is no
                # ClusterCockpit scope, a `value` field)
                lines.append("node.temp,cluster=t,host=%s,sensor=s0 celsius=%.2f %d" % (h, 40 + 20 * next(rnd), t))
                lines.append("ib.rcv_bytes,cluster=t,hostname=%s,type=node value=%d %d" % (h, int(1e6 * next(rnd)), t))
                for path in ("/scratch/a\\,b", "/x\\=y", "/with\\ space", "C:\\dir"):
                    lines.append("fs,cluster=t,host=%s,path=%s used=%.1f %d" % (h, path, 100 * next(rnd), t))
                lines.append("my\\ meas\\,x,cluster=t,host=%s v=%.1f %d" % (h, next(rnd), t))
                for inst in ("0", "1"):
                    for ti in ("user", "system"):
                        lines.append("cpu_value,cluster=t,host=%s,instance=%s,type=cpu,type_instance=%s value=%.3f %d"
                                     % (h, inst, ti, 100 * next(rnd), t))
    for k in range(30):
        t = (now_s - 3600 + 60 * k) * 10**9
        for h in HOSTS[:2]:
            lines.append("recent,cluster=t,hostname=%s,type=node value=%d %d" % (h, k, t))
    lines += typed_lines(rnd)
    # hourly points across the two DST changes of 2026 in Europe (and Newfoundland's autumn one),
    # for tz(): buckets of local days and weeks across a change
    for start in (1774483200, 1792627200):  # 2026-03-26, 2026-10-22 00:00 UTC
        for k in range(24 * 12):
            lines.append("tzm,cluster=t,hostname=n%d,type=node value=%d %d" % (1 + k % 2, k, (start + 3600 * k) * 10**9))
    return "\n".join(lines) + "\n"


def lp_string(v):
    """A line-protocol string field value: quotes and backslashes escaped."""
    return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')


def uptime_format(up):
    """Telegraf's system input's uptime_format: "D days, HH:MM" (" 0:05" under a day)."""
    d, r = divmod(up, 86400)
    return "%d day%s, %2d:%02d" % (d, "" if d == 1 else "s", r // 3600, r % 3600 // 60) if d else "%2d:%02d" % (
        r // 3600, r % 3600 // 60)


SYSLOG = ["Started Session 42 of user root.", 'pam_unix(sshd:session): session opened for user "ola" by (uid=0)',
          "kernel: EXT4-fs (sda1): mounted, opts: (null)", "cron[123]: (root) CMD (run-parts /etc/cron.hourly)",
          "smartd: Device: /dev/sda, temperature 38 °C, Ærø, Tromsø", "path C:\\tmp\\x = 1, a=b", ""]


def typed_lines(rnd):
    """Telegraf-shaped lines with InfluxDB's four field types: the system input (uptime_format a
    string, counts integers), procstat (integers and floats), a lookup with a `running` boolean, and
    syslog (message a string, codes integers), every 30 s for two hosts; syslog now and then, the
    second host's a second later (InfluxDB orders rows of equal time by its series ids, which
    follow no order a client sees)."""
    lines = []
    for k in range(0, 360, 3):
        t = (S + 10 * k) * 10**9
        for h in ("n1", "n2"):
            up = 3 * 86400 - 1800 + 10 * k + (86400 * 4 + 7 if h == "n2" else 0)
            lines.append("system,cluster=t,host=%s load1=%.2f,n_cpus=64i,n_users=%di,uptime=%di,uptime_format=%s %d"
                         % (h, 4 * next(rnd), k % 5, up, lp_string(uptime_format(up)), t))
            for proc in ("slurmd", "sshd"):
                lines.append("procstat,cluster=t,host=%s,process_name=%s cpu_usage=%.3f,memory_rss=%di,"
                             "num_threads=%di,pid=%di %d" % (h, proc, 10 * next(rnd), int(5e7 * next(rnd)) + 1000,
                                                             1 + k % 7, 4000 + len(proc), t))
            running = not (h == "n2" and 120 <= k < 150)
            lines.append("procstat_lookup,cluster=t,host=%s,pattern=slurmd pid_count=%di,running=%s %d"
                         % (h, int(running), "true" if running else "FALSE" if k % 2 else "f", t))
            if k % 9 == 0:
                sev = (k // 9) % 8
                lines.append("syslog,appname=%s,cluster=t,facility=daemon,host=%s,severity=%s facility_code=3i,"
                             "message=%s,severity_code=%di,timestamp=%di,version=1i %d"
                             % ("cron" if k % 2 else "sshd", h, ["emerg", "alert", "crit", "err", "warning", "notice",
                                                                  "info", "debug"][sev],
                                lp_string(SYSLOG[(k // 9) % len(SYSLOG)]), sev, t, t + (h == "n2") * 10**9))
    return lines


# A write each refuses for a field type conflict: uptime is an integer, this one a float; the
# other line is stored (by both: InfluxDB's partial write).
CONFLICT = ("system,cluster=t,host=n1 uptime=1.5 %d\nsystem,cluster=t,host=n1 load1=9.5 %d\n"
            % ((S + 3595) * 10**9, (S + 3595) * 10**9)).encode()


class Influxd:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="influxd-")
        self.port = free_port()
        self.bind = free_port()
        conf = os.path.join(self.tmp, "influxd.conf")
        with open(conf, "w") as f:
            f.write('reporting-disabled = true\nbind-address = "127.0.0.1:%d"\n'
                    '[meta]\n  dir = "%s/meta"\n[data]\n  dir = "%s/data"\n  wal-dir = "%s/wal"\n'
                    '  query-log-enabled = false\n[http]\n  bind-address = "127.0.0.1:%d"\n  log-enabled = false\n'
                    '[monitor]\n  store-enabled = false\n[continuous_queries]\n  enabled = false\n'
                    % (self.bind, self.tmp, self.tmp, self.tmp, self.port))
        self.log = open(os.path.join(self.tmp, "influxd.log"), "w")
        self.proc = subprocess.Popen(["influxd", "run", "-config", conf], stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/ping" % self.port, timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("influxd did not start")

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        shutil.rmtree(self.tmp, ignore_errors=True)


def http(port, path, params=None, body=None, method="GET"):
    url = "http://127.0.0.1:%d%s" % (port, path)
    if params:
        url += "?" + urllib.parse.urlencode(params)
    req = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def close(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b and isinstance(a, bool) and isinstance(b, bool)
    if isinstance(a, int) and isinstance(b, float):
        return False  # an integer answered as a float (JSON text with a point or an exponent)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    return a == b


def differences(a, b):
    """Where answer b (fjord) departs from answer a (InfluxDB), or None."""
    if errored(a) != errored(b):
        return "error: influxdb %r, fjord %r" % (a, b)
    if errored(a):
        return None
    ra, rb = a.get("results", []), b.get("results", [])
    if len(ra) != len(rb):
        return "%d results against %d" % (len(ra), len(rb))
    for i, (x, y) in enumerate(zip(ra, rb)):
        if ("error" in x) != ("error" in y):
            return "statement %d: error influxdb %r, fjord %r" % (i, x.get("error"), y.get("error"))
        sa, sb = x.get("series", []), y.get("series", [])
        if len(sa) != len(sb):
            return "statement %d: %d series against %d" % (i, len(sa), len(sb))
        for j, (p, q) in enumerate(zip(sa, sb)):
            for key in ("name", "tags", "columns"):
                if p.get(key) != q.get(key):
                    return "statement %d series %d: %s %r against %r" % (i, j, key, p.get(key), q.get(key))
            va, vb = p.get("values", []), q.get("values", [])
            if len(va) != len(vb):
                return "statement %d series %d: %d rows against %d" % (i, j, len(va), len(vb))
            for k, (r1, r2) in enumerate(zip(va, vb)):
                if len(r1) != len(r2) or not all(close(u, v) for u, v in zip(r1, r2)):
                    return "statement %d series %d row %d: %r against %r" % (i, j, k, r1, r2)
    return None


def main():
    now_s = int(time.time()) // 3600 * 3600  # recent data well inside now() - 2h, whatever the minute
    lp = data(now_s).encode()
    influx = Influxd()
    f = Fjord()
    try:
        f.start()
        token = f.token("t")
        http(influx.port, "/query", {"q": "CREATE DATABASE t"}, method="POST")
        st, body = http(influx.port, "/write", {"db": "t"}, lp, "POST")
        check(st == 204, "influxd took the data (%d %s)" % (st, body[:200]))
        st, body = http(f.port, "/write", {"db": "t", "u": "t", "p": token}, lp, "POST")
        check(st == 204, "fjord took the data (%d %s)" % (st, body[:200]))
        sa, ba = http(influx.port, "/write", {"db": "t"}, CONFLICT, "POST")
        sb, bb = http(f.port, "/write", {"db": "t", "u": "t", "p": token}, CONFLICT, "POST")
        check(sa == 400 and "field type conflict" in ba, "influxd refuses the conflict (%d %s)" % (sa, ba[:300]))
        check(sb == 400 and "field type conflict: input field \\\"uptime\\\" on measurement \\\"system\\\" is type float, "
              "already exists as type integer dropped=1" in bb and '"path":"line 1"' in bb,
              "fjord refuses the conflict as influxd, naming the line (%d %s)" % (sb, bb[:400]))
        corpus = [l.rstrip("\n") for l in open(os.path.join(HERE, "corpus.iql"))]
        corpus = [l for l in corpus if l.strip() and not l.startswith("--")]
        check(len(corpus) >= 300, "the corpus has at least 300 requests (%d)" % len(corpus))
        for epoch in (None, "s"):
            for q in corpus:
                if epoch and not q.startswith("SELECT"):
                    continue
                params = {"db": "t", "q": q}
                if epoch:
                    params["epoch"] = epoch
                sa, ba = http(influx.port, "/query", params)
                sb, bb = http(f.port, "/query", dict(params, u="t", p=token))
                if q in SAMPLES:
                    raw = json.loads(http(influx.port, "/query", dict(params, q=SAMPLES[q]))[1])
                    diff = sample_differences(json.loads(ba), json.loads(bb), raw)
                    check(sa == sb and diff is None, "%s%s: %s" % (q, " (epoch=%s)" % epoch if epoch else "", diff))
                    continue
                if q in DEPARTURES:
                    try:
                        doc = json.loads(bb)
                    except ValueError:
                        doc = {}
                    check(sb in (200, 400) and ("results" in doc or "error" in doc),
                          "fjord answers the departure %s in InfluxDB's shape: %d %s" % (q, sb, bb[:200]))
                    continue
                try:
                    a, b = json.loads(ba), json.loads(bb)
                except ValueError:
                    check(False, "%s: not JSON: %r / %r" % (q, ba[:200], bb[:200]))
                    continue
                diff = differences(a, b)
                check((sa == sb or (errored(a) and errored(b))) and diff is None, "%s%s: status %d/%d %s\n  influxdb: %s\n  fjord:    %s"
                      % (q, " (epoch=%s)" % epoch if epoch else "", sa, sb, diff or "", ba[:600], bb[:600]))
    finally:
        rc = f.stop()
        influx.stop()
    check(rc == 0, "fjord exits 0")
    finish()


if __name__ == "__main__":
    main()
