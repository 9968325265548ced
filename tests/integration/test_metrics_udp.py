"""Line protocol over UDP (setting `udp`, server/udp.h; docs/metrics.md "UDP"): each port writes one
cluster and takes datagrams only from the addresses it allows. Datagrams sent here directly (good,
bad, mixed, from a source not allowed, naming another cluster) must end as the counters of
GET /metrics say and their points answer through /query; a setting without `allow=` is refused at
start; and a real collectd (Debian's collectd-core, its write_influxdb_udp plugin, started here
from a generated collectd.conf and stopped by its PID) sends cpu, load and memory values that
arrive and answer through /query."""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse

from harness import FJORD, Fjord, check, finish

S = 1700000000


def udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def send(port, data, source="127.0.0.1"):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((source, 0))
        s.sendto(data.encode(), ("127.0.0.1", port))


def q(f, cluster, tok, query):
    r = f.request("GET", "/query?" + urllib.parse.urlencode({"db": cluster, "q": query, "epoch": "s"}), auth=tok)
    if r.status != 200:
        return None
    res = r.json()["results"][0]
    return res.get("series", [])


def counters(f, tok):
    r = f.get("/metrics", auth=tok)
    check(r.status == 200, "/metrics answers (%d)" % r.status)
    return {m.group(1): int(m.group(2)) for m in re.finditer(r'fjord_udp_datagrams_total\{result="(\w+)"\} (\d+)', r.body)}


def wait_for(what, fn, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    check(False, "within %ds: %s" % (timeout, what))
    return None


def direct(f, tok, port):
    good = "cpu_value,host=c01,instance=0,type=cpu,type_instance=user value=%d %d\n"
    send(port, "".join(good % (k, S + k) for k in range(3)))
    send(port, "this is not line protocol\n")                                  # bad: no good line
    send(port, good % (3, S + 3) + "half a line=\n")                           # one good, one bad line
    send(port, good % (100, S + 100), source="127.0.0.2")                      # a source not allowed
    send(port, "cpu_value,cluster=other,host=c01,instance=0,type=cpu,type_instance=user value=7 %d\n" % (S + 7))
    want = {"accepted": 2, "refused": 2, "bad": 1, "dropped": 0, "overflowed": 0}
    got = wait_for("the datagrams counted", lambda: (lambda c: c if c == want else None)(counters(f, tok)))
    check(got == want, "datagram counters %s" % counters(f, tok))
    s = q(f, "u1", tok, "SELECT value FROM cpu_value WHERE time >= %ds GROUP BY *" % S)
    check(s and len(s) == 1 and [v[0] for v in s[0]["values"]] == [S, S + 1, S + 2, S + 3] and
          [v[1] for v in s[0]["values"]] == [0, 1, 2, 3] and s[0]["tags"]["type_instance"] == "user",
          "the accepted lines, in seconds (precision=s), and no other: %s" % s)
    check(not q(f, "other", tok, "SHOW MEASUREMENTS"), "nothing written to the cluster a line named")


def collectd(f, tok, port):
    exe = shutil.which("collectd") or "/usr/sbin/collectd"
    check(os.path.exists(exe), "collectd is installed (collectd-core, scripts/install-deps.sh test)")
    if not os.path.exists(exe):
        return
    tmp = tempfile.mkdtemp(prefix="collectd-")
    conf = os.path.join(tmp, "collectd.conf")
    with open(conf, "w") as c:
        c.write('Hostname "c01"\nFQDNLookup false\nBaseDir "%s"\nPIDFile "%s/collectd.pid"\n'
                'TypesDB "/usr/share/collectd/types.db"\nInterval 1\n'
                'LoadPlugin cpu\nLoadPlugin load\nLoadPlugin memory\nLoadPlugin write_influxdb_udp\n'
                '<Plugin write_influxdb_udp>\n  Server "127.0.0.1" "%d"\n</Plugin>\n' % (tmp, tmp, port))
    log = open(os.path.join(tmp, "collectd.log"), "w")
    proc = subprocess.Popen([exe, "-f", "-C", conf], stdout=log, stderr=log)
    started = time.time()
    try:
        def arrived():
            m = q(f, "u2", tok, "SHOW MEASUREMENTS")
            names = {v[0] for s in m or [] for v in s["values"]}
            t = q(f, "u2", tok, 'SHOW TAG VALUES FROM cpu WITH KEY = "type_instance"') if "cpu" in names else None
            states = {v[1] for v in t[0]["values"]} if t else set()
            return {"cpu", "load", "memory"} <= names and {"user", "system", "idle"} <= states
        wait_for("collectd's cpu (user, system, idle), load and memory arrive", arrived, timeout=20)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
    s = q(f, "u2", tok, 'SHOW TAG VALUES FROM cpu WITH KEY = "type_instance"')
    ti = {v[1] for v in s[0]["values"]} if s else set()
    check({"user", "system", "idle"} <= ti, "cpu's type_instance tags: %s" % sorted(ti))
    s = q(f, "u2", tok, 'SHOW TAG KEYS FROM memory')
    keys = [v[0] for v in s[0]["values"]] if s else []
    check(keys == ["cluster", "host", "type", "type_instance"], "memory's tag keys: %s" % keys)
    s = q(f, "u2", tok, "SELECT last(value) FROM memory WHERE type_instance = 'used' AND time > now() - 5m")
    check(s and s[0]["values"][0][1] > 0, "memory used answers: %s" % s)
    s = q(f, "u2", tok, "SELECT last(shortterm) FROM load WHERE host = 'c01' AND time > now() - 5m")
    t = s[0]["values"][0][0] if s else 0
    check(started - 60 < t < time.time() + 60, "load's time is now (collectd's milliseconds read as such): %s" % s)


def main():
    p1, p2 = udp_port(), udp_port()
    # a listener without allow= is refused at start, naming what is missing
    tmp = tempfile.mkdtemp(prefix="fjord-udp-")
    r = subprocess.run([FJORD, "serve", "--listen", "127.0.0.1:0", "--db", os.path.join(tmp, "x.db"),
                        "--udp", "127.0.0.1:%d cluster=u1" % p1], capture_output=True, text=True, timeout=30)
    shutil.rmtree(tmp, ignore_errors=True)
    check(r.returncode != 0 and "allow=" in r.stderr, "no allow=: refused (%d %s)" % (r.returncode, r.stderr[-300:]))
    f = Fjord("--udp", "127.0.0.1:%d cluster=u1 allow=127.0.0.1 precision=s; 127.0.0.1:%d cluster=u2 "
              "allow=127.0.0.0/30,::1 precision=ms" % (p1, p2))
    try:
        f.start()
        tok = f.token("reader", "--read-only")
        direct(f, tok, p1)
        collectd(f, tok, p2)
        check(f.stop() == 0, "fjord exits 0")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
