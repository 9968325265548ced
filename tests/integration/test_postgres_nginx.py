"""PostgreSQL only (FJ_TEST_DB=postgres; exits 77, skipped, otherwise): Debian's nginx in front of two
fjord servers on one database, run from deploy/nginx-fjord.conf (docs/deploy.md, "Several fjord
behind nginx"). Everything is started here on 127.0.0.1 and stopped by PID.

- The configuration is the deploy file itself, with only what a site changes replaced: the two
  upstream servers, the listen addresses (loopback ports instead of 443 and 80), the certificate
  (self-signed, made here with openssl). Each replacement must find its line, so the file cannot
  drift from what is tested.
- TLS ends at nginx; a client connecting from 127.0.0.2 is the client fjord logs and counts
  (trusted-proxies = 127.0.0.1, X-Forwarded-For), while a client's own X-Forwarded-For is not
  believed.
- Upstream connections are kept alive (fjord holds idle ones from nginx between requests), and
  nginx's idle timeout for them is shorter than fjord's keepalive-timeout, so nginx never sends a
  request on a connection fjord is closing.
- Ingest through nginx while one fjord is killed (SIGKILL): the producer retries on an error;
  every acknowledged point is then read back through nginx, once; nginx stops sending to the dead
  one (its access log names the upstream of each request).
- A rolling restart of both servers (SIGTERM, start, one after the other) under a fixed set of
  requests, writes and reads: none fails.
"""
import base64
import http.client
import json
import os
import re
import shutil
import socket
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import harness
from harness import Fjord, check, finish, free_port

DEPLOY = os.path.join(harness.SOURCE, "deploy", "nginx-fjord.conf")
CLUSTER = "c1"
T0 = int(time.time()) // 60 * 60 - 3600
CLIENT_ADDR = "127.0.0.2"
FAIL_TIMEOUT = [10]  # nginx's, from the deploy file


def nginx_binary():
    for p in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if p and os.access(p, os.X_OK):
            return p
    return None


def make_cert(d):
    key, cert = os.path.join(d, "key.pem"), os.path.join(d, "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", cert],
                   check=True, capture_output=True)
    return key, cert


def replace_line(text, pattern, new, count=None):
    """Replaces every line matching pattern (a regex on the stripped line); count: how many must match."""
    out, n = [], 0
    for line in text.splitlines():
        if re.fullmatch(pattern, line.strip()):
            n += 1
            if new is not None:
                indent = line[:len(line) - len(line.lstrip())]
                out.extend(indent + x for x in new.splitlines())
        else:
            out.append(line)
    check(n > 0 and (count is None or n == count), "deploy/nginx-fjord.conf has the line /%s/ (%d)" % (pattern, n))
    return "\n".join(out) + "\n"


def nginx_conf(d, upstreams, tls_port, http_port, key, cert):
    """The deploy file with the site's values replaced, inside the main context nginx needs."""
    text = open(DEPLOY).read()
    m = re.search(r"# server \S+ (max_fails=\d+ fail_timeout=\d+s);", text)
    check(m is not None, "deploy/nginx-fjord.conf names max_fails and fail_timeout for several servers")
    text = replace_line(text, r"server 127\.0\.0\.1:8077(\s.*)?;(\s*#.*)?",
                        "\n".join("server 127.0.0.1:%d %s;" % (p, m.group(1)) for p in upstreams), 1)
    FAIL_TIMEOUT[0] = int(re.search(r"fail_timeout=(\d+)s", m.group(1)).group(1))
    text = replace_line(text, r"listen 443 ssl;.*", "listen 127.0.0.1:%d ssl;" % tls_port, 1)
    text = replace_line(text, r"listen \[::\]:\d+( ssl)?;.*", None, 2)
    text = replace_line(text, r"listen 80;.*", "listen 127.0.0.1:%d;" % http_port, 1)
    text = replace_line(text, r"ssl_certificate\s+/.*;", "ssl_certificate %s;" % cert, 1)
    text = replace_line(text, r"ssl_certificate_key\s+/.*;", "ssl_certificate_key %s;" % key, 1)
    main = """daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 512; }}
http {{
    log_format fjordtest '$msec $status $request_method $uri up=$upstream_addr upstatus=$upstream_status';
    access_log {d}/access.log fjordtest;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
{body}}}
""".format(d=d, body=text)
    path = os.path.join(d, "nginx.conf")
    with open(path, "w") as f:
        f.write(main)
    return path


class Nginx:
    def __init__(self, binary, d, conf):
        self.binary, self.d, self.conf, self.proc = binary, d, conf, None

    def start(self, port):
        r = subprocess.run([self.binary, "-t", "-p", self.d, "-c", self.conf, "-e", os.path.join(self.d, "error.log")],
                           capture_output=True, text=True)
        check(r.returncode == 0, "nginx -t accepts the generated configuration: %s" % r.stderr[-600:])
        if r.returncode:
            raise harness.Failure("nginx configuration refused")
        self.proc = subprocess.Popen([self.binary, "-p", self.d, "-c", self.conf, "-e",
                                      os.path.join(self.d, "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise harness.Failure("nginx did not start: %s" % open(os.path.join(self.d, "error.log")).read()[-600:])

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGQUIT)  # graceful: the master ends its workers
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def access(self):
        path = os.path.join(self.d, "access.log")
        return open(path).read().splitlines() if os.path.exists(path) else []


class Client:
    """HTTPS through nginx on one kept-alive connection from CLIENT_ADDR, reconnecting after an error."""

    def __init__(self, port, cafile, cred):
        self.port = port
        self.ctx = ssl.create_default_context(cafile=cafile)
        self.auth = "Basic " + base64.b64encode(("%s:%s" % cred).encode()).decode()
        self.conn = None

    def request(self, method, path, body=None, headers=None):
        h = {"Authorization": self.auth}
        h.update(headers or {})
        try:
            if self.conn is None:
                self.conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=30,
                                                        source_address=(CLIENT_ADDR, 0))
            self.conn.request(method, path, body=body, headers=h)
            r = self.conn.getresponse()
            data = r.read()
            if r.getheader("Connection", "").lower() == "close":
                self.close()
            return r.status, data
        except (OSError, http.client.HTTPException) as e:
            self.close()
            return None, str(e).encode()

    def close(self):
        if self.conn:
            self.conn.close()
            self.conn = None


def lp_body(k, n=10):
    return "".join("ing,cluster=%s,hostname=h%02d,type=node value=%d.5 %d\n" % (CLUSTER, j, k, T0 + k)
                   for j in range(n)).encode()


def write(c, body):
    return c.request("POST", "/api/write?cluster=%s" % CLUSTER, body, {"Content-Type": "text/plain"})


def points_read(c):
    """{(host, t): value} of measurement ing through /query."""
    q = urllib.parse.urlencode({"db": CLUSTER, "epoch": "s", "q": "SELECT value FROM ing WHERE time >= %ds GROUP BY hostname"
                                % (T0 - 60)})
    st, data = c.request("GET", "/query?" + q)
    if st != 200:
        return None
    out = {}
    for s in json.loads(data)["results"][0].get("series", []):
        for t, v in s["values"]:
            out[(s["tags"]["hostname"], t)] = v
    return out


def connections_open(f):
    r = f.get("/metrics", auth=f.metrics_auth)
    m = re.search(r"^fjord_connections_open (\d+)", r.body, re.M)
    return int(m.group(1)) if m else -1


def kill9(f):
    """SIGKILL to the server's PID (never by name)."""
    if f.proc:
        os.kill(f.proc.pid, signal.SIGKILL)
        f.proc.wait()
        f.proc = None


def main():
    binary = nginx_binary()
    check(binary is not None, "Debian's nginx is installed (scripts/install-deps.sh test)")
    if not binary:
        finish()
    tmp = tempfile.mkdtemp(prefix="fjord-nginx-")
    os.chmod(tmp, 0o755)  # nginx's workers run as nobody
    key, cert = make_cert(tmp)
    proxy = ("--trusted-proxies", "127.0.0.1", "--forwarded-header", "X-Forwarded-For", "--log-requests",
             "--metrics-token", "t" * 24)
    a = Fjord(*proxy, "--instance", "a")
    b = Fjord(*proxy, "--instance", "b", db=a.db)
    for f in (a, b):
        f.metrics_auth = "t" * 24
    tls_port, http_port = free_port(), free_port()
    conf = nginx_conf(tmp, [a.port, b.port], tls_port, http_port, key, cert)
    ngx = Nginx(binary, tmp, conf)
    try:
        a.start()
        b.start()
        cred = (CLUSTER, a.token(CLUSTER))
        ngx.start(tls_port)
        c = Client(tls_port, cert, cred)

        # the deploy file's own values: nginx drops idle upstream connections before fjord does
        text = open(DEPLOY).read()
        m = re.search(r"upstream fjord \{[^}]*keepalive_timeout (\d+)s;", text)
        check(m and int(m.group(1)) < 60,
              "the upstream's keepalive_timeout is below fjord's keepalive-timeout (60 s): %s" % (m and m.group(1)))

        # TLS at nginx, the client's address through trusted-proxies, a forged one not believed
        st, data = c.request("GET", "/api/v1/health")
        check(st == 200, "GET /api/v1/health through nginx over TLS: %s %s" % (st, data[:200]))
        st, data = c.request("GET", "/api/v1/clusters", headers={"X-Forwarded-For": "203.0.113.9"})
        check(st == 200, "a read through nginx: %s" % st)
        time.sleep(0.3)
        logs = open(a.log).read() + open(b.log).read()
        check("client=%s" % CLIENT_ADDR in logs, "fjord logs the client's address (%s), not nginx's" % CLIENT_ADDR)
        check("203.0.113.9" not in logs, "a client's own X-Forwarded-For is replaced by nginx, not believed")

        # kept-alive upstream connections: after requests, fjord still holds idle ones from nginx
        for _ in range(20):
            c.request("GET", "/api/v1/health")
        held = connections_open(a) + connections_open(b) - 2  # less the /metrics requests' own
        check(held >= 1, "fjord holds nginx's kept-alive connections between requests: %d" % held)

        # ingest while A is killed: retry on error; nothing acknowledged is lost
        acked, errors, n_bodies = set(), [], 300
        killed_at = [None]

        def producer():
            pc = Client(tls_port, cert, cred)
            for k in range(n_bodies):
                for attempt in range(50):
                    st, data = write(pc, lp_body(k))
                    if st == 200:
                        acked.add(k)
                        break
                    errors.append((k, st, data[:120]))
                    time.sleep(0.1)
                time.sleep(0.005)
            pc.close()

        th = threading.Thread(target=producer)
        th.start()
        while len(acked) < n_bodies // 3 and th.is_alive():
            time.sleep(0.01)
        killed_at[0] = time.time()
        kill9(a)
        th.join(timeout=300)
        check(len(acked) == n_bodies, "every body acknowledged in the end (retries): %d of %d; errors %s"
              % (len(acked), n_bodies, errors[:3]))
        print("ingest with a server killed: %d errors seen by the producer, retried: %s" % (len(errors), errors[:3]))
        after = [ln for ln in ngx.access() if float(ln.split()[0]) > killed_at[0] + 0.5 and "/api/write" in ln]
        to_a = [ln for ln in after if ("127.0.0.1:%d" % a.port) in ln]
        check(len(after) > 50 and len(to_a) <= 3,
              "nginx stops sending to the killed server: %d of %d later writes tried it" % (len(to_a), len(after)))
        check(all(" 200 " in ln for ln in after), "every later write answered 200 through nginx")

        a.start()  # replays its log: what it acknowledged before the kill
        want = {("h%02d" % j, T0 + k): k + 0.5 for k in acked for j in range(10)}
        deadline, got = time.time() + 15, None
        while time.time() < deadline:
            got = points_read(c)
            if got == want:
                break
            time.sleep(0.5)
        check(got == want, "every acknowledged point read back through nginx, once: %d of %d"
              % (len(got or {}), len(want)))

        # rolling restart: a fixed set of requests, none may fail. A restarted server is back in
        # nginx's rotation once fail_timeout has passed since it refused a connection: the next one
        # is stopped only then (docs/deploy.md)
        N_STEADY = 1000
        results, done = [], threading.Event()

        def steady():
            sc = Client(tls_port, cert, cred)
            for k in range(N_STEADY):
                if k % 3 == 2:
                    st, data = sc.request("GET", "/query?" + urllib.parse.urlencode(
                        {"db": CLUSTER, "q": "SELECT count(value) FROM ing"}))
                else:
                    st, data = write(sc, lp_body(1000 + k, 2))
                results.append((k, st, data[:120]))
                time.sleep(0.02)
            sc.close()
            done.set()

        th = threading.Thread(target=steady)
        th.start()
        time.sleep(0.5)
        restarts = 0
        for f in (a, b):
            if done.is_set():
                break
            check(f.stop() == 0, "server on %d stops cleanly (SIGTERM)" % f.port)
            f.start()
            restarts += 1
            time.sleep(FAIL_TIMEOUT[0] + 1)
        th.join(timeout=300)
        bad = [r for r in results if r[1] not in (200, 204)]
        check(restarts == 2 and len(results) == N_STEADY, "both servers restarted while the %d requests ran (%d, %d)"
              % (N_STEADY, restarts, len(results)))
        check(not bad, "no request failed during the rolling restart: %d failed, %s" % (len(bad), bad[:3]))
        c.close()
        check(a.stop() == 0 and b.stop() == 0, "both servers exit 0")
    finally:
        ngx.stop()
        for f in (a, b):
            f.stop()
        a.cleanup()
        b.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


if __name__ == "__main__":
    if not harness.PG:
        print("PostgreSQL only: run with FJ_TEST_DB=postgres (skipped)")
        sys.exit(77)
    main()
