# attack: sqlite only (the HTTP layer, not storage)
"""The HTTP edge (docs/security.md, "Answers", "Request bodies", "Connections and slow clients"):
every answer but the dashboard's pages carries Content-Security-Policy: default-src 'none';
sandbox and X-Content-Type-Options: nosniff; a request with both Content-Length and
Transfer-Encoding is refused 400 and its connection closed; a refused request whose client is
still sending a large body gets its answer, not a connection reset (the lingering close), 200
times over under load; a kept-alive connection idle between requests is closed at
keepalive-timeout without a refusal line, while one that began a request and stalled is a
header_deadline refusal.

Every connection goes to 127.0.0.1 from loopback addresses, each with a timeout."""
import concurrent.futures
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import SHARED, Fjord, check, finish  # noqa: E402

SAMPLE = os.path.join(SHARED, "data", "sonar", "real", "0+sample-ml1.hpc.uio.no.json")
SANDBOX = "default-src 'none'; sandbox"


def connect(port, source="127.0.0.1", timeout=10):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))


def read_answer(s):
    """One answer from s: (status, headers dict with lower-case names, body), or (None, {}, why)."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                return None, {}, "closed before an answer (%r)" % data[:200]
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
        n = int(headers.get("content-length", "0"))
        while len(body) < n:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
        return int(lines[0].split(" ")[1]), headers, body.decode(errors="replace")
    except (socket.timeout, OSError) as e:
        return None, {}, "no answer: %s" % e


def closed_by_server(s, within=10):
    """True when the server closes s (end of file or reset) within `within` seconds."""
    s.settimeout(within)
    try:
        while True:
            if not s.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except (socket.timeout, OSError):
        return False


def edge_headers(f, token):
    env = json.load(open(SAMPLE))
    env["data"]["attributes"]["cluster"] = "alpha"
    r = f.post("/api/v1/insert/sample", json.dumps(env), auth=("alpha", token))
    check(r.status == 200, "a sample of alpha: %d %s" % (r.status, r.body[:200]))
    auth = ("Authorization", "Bearer " + token)
    window = "from=2025-11-01T00:00:00Z&to=2025-12-01T00:00:00Z"
    for what, path, headers, status in [
            ("a JSON answer", "/api/v1/clusters", [auth], 200),
            ("a CSV answer", "/api/v1/jobs?cluster=alpha&format=csv&" + window, [auth], 200),
            ("an error answer", "/api/v1/no-such-endpoint", [auth], 404),
            ("a 401", "/api/v1/clusters", [("Authorization", "Bearer wrong")], 401),
            ("a 401 to a script", "/api/v1/clusters", [("X-Requested-With", "fetch")], 401)]:
        r = f.get(path, headers=dict(headers))
        h = {k.lower(): v for k, v in r.headers.items()}
        check(r.status == status, "%s: status %d (%d %s)" % (what, status, r.status, r.body[:200]))
        check(h.get("content-security-policy") == SANDBOX, "%s carries CSP sandbox: %s" % (what, h))
        check(h.get("x-content-type-options") == "nosniff", "%s carries nosniff: %s" % (what, h))
    # the dashboard's page keeps its own policy (scripts from the bundle), not the sandbox
    r = f.get("/")
    h = {k.lower(): v for k, v in r.headers.items()}
    csp = h.get("content-security-policy", "")
    check(r.status == 200 and "script-src 'self'" in csp and "sandbox" not in csp,
          "the dashboard's page keeps its CSP: %d %s" % (r.status, csp))
    check(h.get("x-content-type-options") == "nosniff", "the dashboard's page: nosniff")


def framing(f, token):
    auth = b"Authorization: Bearer " + token.encode() + b"\r\n"
    line = b"alpha_test,cluster=alpha,hostname=n1 v=1 1764000000000000000\n"
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(line), line)
    for what, extra in [("Content-Length and Transfer-Encoding", b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n"
                         % len(chunked)),
                        ("Transfer-Encoding then Content-Length", b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n"),
                        ("a transfer coding other than chunked", b"Transfer-Encoding: gzip, chunked\r\n")]:
        with connect(f.port) as s:
            s.sendall(b"POST /api/write?db=alpha HTTP/1.1\r\nHost: x\r\n" + auth + extra + b"\r\n" + chunked)
            st, h, body = read_answer(s)
            check(st == 400 and "Transfer-Encoding" in body, "%s: 400 (%s %s)" % (what, st, body[:200]))
            check(h.get("connection", "").lower() == "close", "%s: Connection: close (%s)" % (what, h))
            check(closed_by_server(s), "%s: the server closes the connection" % what)
    # control: chunked alone is read, answered and the connection kept for the next request
    with connect(f.port) as s:
        s.sendall(b"POST /api/write?db=alpha HTTP/1.1\r\nHost: x\r\n" + auth + b"Transfer-Encoding: chunked\r\n\r\n" + chunked)
        st, h, body = read_answer(s)
        check(st == 204 or st == 200, "control: a chunked body alone is taken (%s %s)" % (st, body[:200]))
        s.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        st, h, body = read_answer(s)
        check(st == 200, "control: the connection is kept for a second request (%s %s)" % (st, body[:200]))


def lingering(f, big):
    """200 uploads of a body larger than the socket buffers with a wrong secret and no Expect:
    each must end with curl reading the 401 (exit 0), never curl exit 55 (connection reset)."""
    url = "http://127.0.0.1:%d/api/v1/ingest/chimbuko/anomalies?cluster=alpha" % f.port

    def one(i):
        p = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-m", "30", "-H", "Expect:",
                            "-H", "Content-Type: application/json", "--data-binary", "@" + big,
                            "-u", "alpha:wrong-%d" % i, url], capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr.strip()

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        results = list(ex.map(one, range(200)))
    bad = [r for r in results if r[:2] != (0, "401")]
    check(not bad, "200 large uploads with a wrong secret each got their 401: %d did not, e.g. %s"
          % (len(bad), bad[:3]))
    # the server is still itself: no socket left lingering past its limits, requests served
    r = f.get("/api/v1/health")
    check(r.status == 200, "health after the uploads: %d" % r.status)


def keepalive(port, log):
    """header-timeout 2 s, keepalive-timeout 4 s; each case from its own address, so the log
    lines can be told apart."""
    get = b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
    # kept alive past header-timeout: still served; the answer announces the idle limit
    a = connect(port, "127.0.0.21")
    a.sendall(get)
    st, h, _ = read_answer(a)
    check(st == 200 and h.get("keep-alive") == "timeout=4", "the answer announces Keep-Alive: timeout=4 (%s)" % h)
    time.sleep(3)
    a.sendall(get)
    st, _, _ = read_answer(a)
    check(st == 200, "a connection idle 3 s (past header-timeout, within keepalive-timeout) serves (%s)" % st)
    # idle past keepalive-timeout: closed, quietly
    check(closed_by_server(a, 15), "a connection idle past keepalive-timeout is closed")
    a.close()
    # a kept-alive connection that began a request and stalled: a header_deadline refusal
    b = connect(port, "127.0.0.22")
    b.sendall(get)
    read_answer(b)
    b.sendall(b"GET /api/v1/hea")
    check(closed_by_server(b, 15), "a stalled request on a kept-alive connection is closed")
    b.close()
    # a new connection that sends nothing: closed at header-timeout, quietly; one that sends a
    # part of a request: a header_deadline refusal
    c = connect(port, "127.0.0.23")
    d = connect(port, "127.0.0.24")
    d.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
    check(closed_by_server(c, 15), "a silent new connection is closed")
    check(closed_by_server(d, 15), "a new connection with half a request is closed")
    c.close()
    d.close()
    return {"127.0.0.21": False, "127.0.0.22": True, "127.0.0.23": False, "127.0.0.24": True}


def main():
    big = tempfile.NamedTemporaryFile(prefix="fjord-big-", suffix=".json", delete=False)
    big.write(b"[" + b"0," * (12 << 20) + b"0]")  # 24 MiB: more than loopback's socket buffers hold
    big.close()
    f = Fjord("--auth-fail-burst", "100000", "--auth-fail-rate", "0")
    try:
        token = f.token("alpha")
        f.start()
        edge_headers(f, token)
        framing(f, token)
        lingering(f, big.name)
        check(f.stop() == 0, "clean stop")
    finally:
        f.cleanup()
        os.unlink(big.name)
    k = Fjord("--header-timeout", "2", "--keepalive-timeout", "4")
    try:
        k.start()
        expect = keepalive(k.port, k.log)
        check(k.stop() == 0, "clean stop (keep-alive)")
        log = open(k.log).read()
        for addr, refused in expect.items():
            line = "client=%s " % addr
            lines = [l for l in log.splitlines() if line in l]
            if refused:
                check(any("reason=header_deadline" in l for l in lines),
                      "%s began a request and stalled: a header_deadline line (%s)" % (addr, lines))
            else:
                check(not lines, "%s was only idle: no refusal line (%s)" % (addr, lines))
    finally:
        k.cleanup()
    finish()


if __name__ == "__main__":
    main()
