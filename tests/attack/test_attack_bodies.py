# attack: sqlite only (the HTTP layer, not storage)
"""Bodies where no credential is checked: a body on a route that takes none (the open health and
OpenAPI routes) or on a refused request is answered from the headers, at once, and the connection
closed without the body being read or decoded; the memory of all bodies in flight is bounded
(body-memory). cc-backend's GET /api/query and GET /api/healthcheck with JSON bodies keep working.
docs/security.md, "Request bodies".
"""
import gzip
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import Fjord, check, finish  # noqa: E402

MIB = 1 << 20


def vm(pid, field):
    """VmHWM / VmRSS of pid in MiB."""
    for line in open("/proc/%d/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def read_answer(s, timeout):
    """Status of the answer on s and whether the server then closed it (within timeout)."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        return (int(data.split()[1]) if data.startswith(b"HTTP/") else None), False, data
    except ConnectionResetError:
        pass
    return (int(data.split()[1]) if data.startswith(b"HTTP/") else None), True, data


def headers_only(port, head, timeout=3):
    """Sends the request head alone (its body never follows): the answer must not wait for it."""
    s = socket.create_connection(("127.0.0.1", port))
    t0 = time.time()
    s.sendall(head)
    status, closed, data = read_answer(s, timeout)
    s.close()
    return status, closed, time.time() - t0, data


def big_bodies(port, n, size, path, extra=""):
    """n clients at once, each announcing and pushing up to size bytes to path without a
    credential; the statuses they got back."""
    out = []
    lock = threading.Lock()

    def one():
        s = socket.create_connection(("127.0.0.1", port))
        status = None
        try:
            s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n%s\r\n" % (path, size, extra)).encode())
            chunk = b"A" * (1 << 20)
            s.settimeout(5)
            sent = 0
            try:
                while sent < size:
                    sent += s.send(chunk[: min(len(chunk), size - sent)])
            except OSError:
                pass  # the server closed it: expected
            status, _, _ = read_answer(s, 5)
        finally:
            s.close()
        with lock:
            out.append(status)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def main():
    f = Fjord("--body-memory", "3M", "--max-body", "1M", "--max-decoded", "64M").start()
    try:
        pid = f.proc.pid
        token = f.token("c1")
        check(f.get("/api/v1/health").status == 200, "health without a body: 200")
        base = vm(pid, "VmHWM")

        # A body announced on an open route: 413 from the headers alone, connection closed.
        for path in ("/api/v1/health", "/api/v1/openapi.json", "/", "/ui/assets/app.js"):
            st, closed, took, _ = headers_only(
                f.port, ("GET %s HTTP/1.1\r\nHost: x\r\nContent-Length: 61865984\r\n\r\n" % path).encode())
            check(st == 413 and closed, "%s with a 59 MiB body announced: 413 and closed at once (%s, %s, %.2f s)"
                  % (path, st, closed, took))
            st, closed, took, _ = headers_only(
                f.port, ("GET %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" % path).encode())
            check(st == 413 and closed, "%s with a chunked body: 413 and closed at once (%s, %s)" % (path, st, closed))

        # A refused request's body is not read either: 401 before it is sent.
        st, closed, took, _ = headers_only(
            f.port, b"POST /api/write?cluster=c1 HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
        check(st == 401 and closed, "unauthenticated upload: 401 and closed before its body (%s, %s, %.2f s)"
              % (st, closed, took))
        st, closed, took, _ = headers_only(
            f.port, b"POST /api/write?cluster=c1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n"
                    b"Content-Length: 1000000\r\n\r\n")
        check(st == 401 and closed, "wrong credential with an upload: 401 and closed before its body (%s, %s)"
              % (st, closed))

        # 100 unauthenticated clients pushing 59 MiB each at the health route: memory stays flat.
        statuses = big_bodies(f.port, 100, 59 * MIB, "/api/v1/health")
        grown = vm(pid, "VmHWM") - base
        print("100 x 59 MiB to /api/v1/health: statuses %s, peak RSS grew %.1f MiB"
              % (sorted(set(map(str, statuses))), grown), flush=True)
        check(all(s in (413, None) for s in statuses) and statuses.count(413) >= 50,
              "every 59 MiB body to health answered 413 (or cut) (%s)" % statuses.count(413))
        check(grown < 64, "peak RSS grew under 64 MiB (%.1f MiB)" % grown)

        # A gzip bomb to an open route is not decoded.
        bomb = gzip.compress(b"\0" * (300 * MIB), 9)
        base = vm(pid, "VmHWM")
        s = socket.create_connection(("127.0.0.1", f.port))
        s.sendall(("GET /api/v1/health HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
                   % len(bomb)).encode())
        try:
            s.sendall(bomb)
        except OSError:
            pass
        st, _, _ = read_answer(s, 5)
        s.close()
        grown = vm(pid, "VmHWM") - base
        print("gzip bomb (%d KiB -> 300 MiB) to /api/v1/health: %s, peak RSS grew %.1f MiB"
              % (len(bomb) // 1024, st, grown), flush=True)
        check(st == 413, "gzip bomb to health: 413 (%s)" % st)
        check(grown < 32, "gzip bomb not decoded: peak RSS grew under 32 MiB (%.1f MiB)" % grown)

        # cc-backend's GET with a JSON body is legitimate on the routes that take one.
        q = json.dumps({"cluster": "c1", "from": 0, "to": 10, "queries": []})
        r = f.request("GET", "/api/query", q, headers={"Content-Type": "application/json"}, auth=token)
        check(r.status == 200, "GET /api/query with a JSON body: 200 (%d %s)" % (r.status, r.body[:200]))
        r = f.request("GET", "/api/healthcheck", json.dumps({"cluster": "c1", "nodes": ["n1"]}),
                      headers={"Content-Type": "application/json"}, auth=token)
        check(r.status == 200, "GET /api/healthcheck with a JSON body: 200 (%d %s)" % (r.status, r.body[:200]))
        r = f.request("GET", "/api/v1/clusters", "{}", auth=token)
        check(r.status == 413, "a body on an authenticated GET route that takes none: 413 (%d)" % r.status)

        # body-memory (3 MiB here): three uploads of 1 MiB announced (bodies held back) take it
        # all; a fourth is refused at once.
        held = []
        results = []
        for i in range(3):
            s = socket.create_connection(("127.0.0.1", f.port))
            s.sendall(("POST /api/write?cluster=c1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                       "Content-Length: 1048576\r\n\r\n" % token).encode())
            held.append(s)
        time.sleep(0.3)
        for s in held:
            s.setblocking(False)
            try:
                results.append(s.recv(4096))
            except BlockingIOError:
                results.append(b"")
        answered = [d for d in results if d.startswith(b"HTTP/1.1 503")]
        check(len(answered) == 0, "three 1 MiB uploads fit in 3 MiB (%d answered 503)" % len(answered))
        s = socket.create_connection(("127.0.0.1", f.port))
        s.sendall(("POST /api/write?cluster=c1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Length: 1048576\r\n\r\n" % token).encode())
        st, closed, data = read_answer(s, 3)
        s.close()
        check(st == 503 and b"Retry-After" in data, "a fourth over body-memory: 503 with Retry-After (%s)" % st)
        for s in held:
            s.close()
        time.sleep(0.3)
        r = f.request("POST", "/api/write?cluster=c1", "cpu_load,hostname=n1,type=node value=1 1700000000\n",
                      headers={"Content-Type": "text/plain"}, auth=token)
        check(r.status in (200, 204), "the budget is released when those connections go (%d %s)" % (r.status, r.body))
    finally:
        rc = f.stop()
    check(rc == 0, "fjord exits 0 (%d)" % rc)
    log = open(f.log).read()
    check("reason=too_large" in log and "path=/api/v1/health" in log, "the refusal log has the health bodies")
    finish()


if __name__ == "__main__":
    main()
