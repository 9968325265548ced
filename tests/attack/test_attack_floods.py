# attack: sqlite only (the HTTP layer, not storage)
"""Slow clients at the connection limit: while an attacker holds or keeps opening 1,500 idle,
slowloris (one header byte every 5 s) or slow-body (1 byte/s) connections from 30 loopback
addresses, an authenticated client on another loopback address is answered within 1 s (median
under 50 ms). docs/security.md, "Connections and slow clients".

Each flood lasts FLOOD_S seconds and opens at most MAX_OPENS connections; every socket is closed
before the next one starts. Medians are printed; the thresholds are the targets of the issue.
"""
import http.client
import os
import resource
import selectors
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import Fjord, check, finish  # noqa: E402

CONNS = 1500
ADDRS = ["127.0.0.%d" % i for i in range(2, 32)]  # 30 attacker addresses, 50 connections each
CLIENT_ADDR = "127.0.0.200"
FLOOD_S = 14          # longer than header-timeout (10 s): the deadlines act during the flood
MAX_OPENS = 12000     # per flood, re-opens included


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, n) if hard != resource.RLIM_INFINITY else n
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


class Flood:
    """CONNS attacker sockets, kept at that number (a shed one is replaced), driven by one thread.
    kind: "idle" (connect, send nothing), "slowloris" (one header byte every 5 s), "slowbody"
    (complete headers of an authenticated upload, then one body byte a second)."""

    def __init__(self, port, kind, auth_header):
        self.port, self.kind, self.auth = port, kind, auth_header
        self.sel = selectors.DefaultSelector()
        self.socks = {}  # sock -> [bytes to trickle, next send time, address]
        self.opens = 0
        self.refused = 0
        self.stop = threading.Event()
        self.ready = threading.Event()

    def payload(self):
        if self.kind == "idle":
            return b""
        if self.kind == "slowloris":
            return b"GET /api/v1/clusters HTTP/1.1\r\nHost: x\r\n" + b"X-a: b\r\n" * 64
        return b"x" * 100000

    def open_one(self, addr):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind((addr, 0))
            s.connect_ex(("127.0.0.1", self.port))
        except OSError:
            s.close()
            self.refused += 1
            return
        self.opens += 1
        if self.kind == "slowbody":
            head = ("POST /api/write?cluster=c1 HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n"
                    "Content-Type: text/plain\r\nContent-Length: 100000\r\n\r\n" % self.auth).encode()
            self.socks[s] = [head, 0.0, addr, True]
        else:
            self.socks[s] = [self.payload(), time.time() + 5, addr, False]
        self.sel.register(s, selectors.EVENT_READ)

    def drop(self, s):
        self.sel.unregister(s)
        addr = self.socks.pop(s)[2]
        s.close()
        return addr

    def run(self):
        for i in range(CONNS):
            self.open_one(ADDRS[i % len(ADDRS)])
        self.ready.set()
        while not self.stop.is_set():
            for key, _ in self.sel.select(timeout=0.05):
                s = key.fileobj
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                if not data:  # shed or refused: keep opening, as an attacker would
                    addr = self.drop(s)
                    if self.opens < MAX_OPENS:
                        self.open_one(addr)
            now = time.time()
            for s, st in list(self.socks.items()):
                if st[1] > now or not st[0]:
                    continue
                n = len(st[0]) if st[3] else 1  # headers of the slow body go at once
                try:
                    s.send(st[0][:n])
                    st[0] = st[0][n:]
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    continue
                st[3] = False
                st[1] = now + (5 if self.kind == "slowloris" else 1)
        for s in list(self.socks):
            self.drop(s)
        self.sel.close()


def normal_requests(port, token, n, spacing):
    """n authenticated GETs from CLIENT_ADDR, each on a new connection; seconds per answer
    (None when there was no 200 within 5 s)."""
    out = []
    for _ in range(n):
        t0 = time.time()
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5, source_address=(CLIENT_ADDR, 0))
            c.request("GET", "/api/v1/clusters", headers={"Authorization": "Bearer " + token})
            r = c.getresponse()
            r.read()
            c.close()
            out.append(time.time() - t0 if r.status == 200 else None)
        except OSError:
            out.append(None)
        time.sleep(spacing)
    return out


def flood_case(f, token, kind):
    fl = Flood(f.port, kind, "Bearer " + token)
    th = threading.Thread(target=fl.run, daemon=True)
    th.start()
    fl.ready.wait(30)
    time.sleep(1.0)  # the attacker's connections are in
    times = normal_requests(f.port, token, 24, (FLOOD_S - 2) / 24.0)
    fl.stop.set()
    th.join(30)
    ok = [t for t in times if t is not None]
    med = statistics.median(ok) if ok else float("inf")
    worst = max(ok) if ok else float("inf")
    print("%s flood: %d connections opened (%d not), normal client %d/%d answered, median %.1f ms, max %.1f ms"
          % (kind, fl.opens, fl.refused, len(ok), len(times), med * 1000, worst * 1000), flush=True)
    check(len(ok) == len(times), "%s: every normal request answered 200 (%d of %d)" % (kind, len(ok), len(times)))
    check(worst < 1.0, "%s: every normal request within 1 s (max %.3f s)" % (kind, worst))
    check(med < 0.05, "%s: median under 50 ms (%.1f ms)" % (kind, med * 1000))
    check(fl.opens >= CONNS, "%s: the attacker really opened %d connections (%d)" % (kind, CONNS, fl.opens))
    time.sleep(1.5)  # the server closes what is left before the next flood


def main():
    raise_nofile(CONNS * 2 + 512)
    f = Fjord().start()
    try:
        token = f.token("c1")
        r = f.get("/api/v1/clusters", auth=token)
        check(r.status == 200, "baseline request (%d)" % r.status)
        for kind in ("idle", "slowloris", "slowbody"):
            flood_case(f, token, kind)
    finally:
        rc = f.stop()
    check(rc == 0, "fjord exits 0 after the floods (%d)" % rc)
    log = open(f.log).read()
    for reason in ("shed_oldest_idle", "header_deadline", "body_too_slow"):
        check("reason=%s" % reason in log, "the log names connections closed for %s" % reason)
    finish()


if __name__ == "__main__":
    main()
