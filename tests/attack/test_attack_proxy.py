#!/usr/bin/env python3
"""Forwarded client addresses (trusted-proxies) against a real fjord on loopback addresses.

127.0.0.1 plays the trusted proxy; 127.0.0.2 and 127.0.0.3 are clients that are not proxies.
Checks: brute-force 429s are counted per forwarded client (one client behind the proxy limited,
another behind the same proxy not), the refusal log names the forwarded client and the proxy
(via=); X-Forwarded-For from an untrusted address is ignored (its 429s stay on its own address,
the log names it); the rightmost untrusted hop is the client; Forwarded (RFC 7239) in its mode;
max-per-ip counts a direct client's connections but not the proxy's, and counts a forwarded
client's requests in progress; dev-mode refuses relayed requests without credentials and refuses
to start with trusted-proxies."""
# attack: sqlite only
import base64
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import Fjord, check, finish, run_cli  # noqa: E402


def req(port, path, src="127.0.0.1", headers=None, user=None, timeout=10):
    """One GET on a fresh connection from src; returns the status (0 when closed unanswered)."""
    h = {"Host": "x", "Connection": "close"}
    if user:
        h["Authorization"] = "Basic " + base64.b64encode(("%s:wrong-secret" % user).encode()).decode()
    h.update(headers or {})
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(("GET %s HTTP/1.1\r\n" % path + "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n").encode())
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
        return int(m.group(1)) if m else 0
    except OSError:
        return 0
    finally:
        s.close()


def log_lines(f, client):
    return [l for l in open(f.log).read().splitlines() if "refused client=%s " % client in l]


def test_forwarded_bruteforce():
    f = Fjord("--trusted-proxies", "127.0.0.1, 10.8.0.0/16", "--auth-fail-burst", "3", "--auth-fail-rate", "1",
              "--auth-fail-delay-ms", "1", "--refusal-log-burst", "0").start()
    try:
        f.token("c1")
        path = "/api/v1/clusters"
        # Client A behind the proxy: its failures are its own (each under a new user name, so the
        # per-name buckets stay out of it).
        got = [req(f.port, path, headers={"X-Forwarded-For": "203.0.113.7"}, user="a%d" % i) for i in range(6)]
        check(got[:3] == [401] * 3 and got[-1] == 429, "client A through the proxy is limited: %r" % got)
        got = req(f.port, path, headers={"X-Forwarded-For": "203.0.113.8"}, user="b0")
        check(got == 401, "client B through the same proxy is not: %d" % got)
        a = log_lines(f, "203.0.113.7")
        check(len(a) >= 6 and all("via=127.0.0.1" in l for l in a) and any("reason=rate_limited" in l for l in a),
              "the log names client A and the proxy: %r" % a[-2:])
        check(not log_lines(f, "127.0.0.1"), "the proxy itself is named as no request's client")
        # Rightmost untrusted hop: 10.8.0.9 is a trusted proxy, 198.51.100.4 the client, 192.0.2.1
        # whatever the client wrote.
        req(f.port, path, headers={"X-Forwarded-For": "192.0.2.1, 198.51.100.4, 10.8.0.9"}, user="c0")
        check(len(log_lines(f, "198.51.100.4")) == 1, "the rightmost untrusted hop is the client")
        check(not log_lines(f, "192.0.2.1"), "a hop left of it is not believed")
        # Two header lines are one list.
        s = socket.create_connection(("127.0.0.1", f.port), timeout=10)
        s.sendall(b"GET /api/v1/clusters HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                  b"X-Forwarded-For: 192.0.2.55\r\nX-Forwarded-For: 198.51.100.5\r\n\r\n")
        s.recv(100)
        s.close()
        time.sleep(0.2)
        check(len(log_lines(f, "198.51.100.5")) == 1, "the last header line's hop is the client")
        # From an address that is not a trusted proxy the header is ignored.
        got = [req(f.port, path, src="127.0.0.2", headers={"X-Forwarded-For": "203.0.113.%d" % (50 + i)},
                   user="d%d" % i) for i in range(6)]
        check(got[:3] == [401] * 3 and got[-1] == 429, "a spoofing client is limited on its own address: %r" % got)
        spoof = log_lines(f, "127.0.0.2")
        check(len(spoof) >= 6 and not any("via=" in l for l in spoof), "the log names its real address")
        check(not any(log_lines(f, "203.0.113.%d" % (50 + i)) for i in range(6)), "and none of the spoofed ones")
    finally:
        check(f.stop() == 0, "fjord exits 0")


def test_forwarded_header_mode():
    f = Fjord("--trusted-proxies", "127.0.0.1", "--forwarded-header", "Forwarded", "--refusal-log-burst", "0").start()
    try:
        f.token("c1")
        req(f.port, "/api/v1/clusters", headers={"Forwarded": 'for="[2001:db8::17]:4711";proto=https'}, user="x")
        check(len(log_lines(f, "2001:db8::17")) == 1, "Forwarded for= (IPv6 with a port) names the client")
        req(f.port, "/api/v1/clusters", headers={"X-Forwarded-For": "198.51.100.9"}, user="y")
        check(not log_lines(f, "198.51.100.9") and len(log_lines(f, "127.0.0.1")) == 1,
              "X-Forwarded-For is not read in Forwarded mode: the proxy is named")
        req(f.port, "/api/v1/clusters", headers={"Forwarded": "for=unknown"}, user="z")
        check(len(log_lines(f, "127.0.0.1")) == 2, "for=unknown: the proxy is named")
    finally:
        check(f.stop() == 0, "fjord exits 0")


def hold(port, src, xff=None):
    """A request whose body never comes: it stays in progress."""
    s = socket.socket()
    s.settimeout(10)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    head = "POST /api/v1/ingest/sonar HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nContent-Type: application/json\r\n"
    if xff:
        head += "X-Forwarded-For: %s\r\n" % xff
    s.sendall((head + "Authorization: Bearer %s\r\n\r\n" % hold.secret).encode())
    return s


def test_per_ip():
    f = Fjord("--trusted-proxies", "127.0.0.1", "--max-per-ip", "2", "--dev-mode", "false").start()
    try:
        hold.secret = f.token("c1")
        time.sleep(0.2)
        direct = [hold(f.port, "127.0.0.3"), hold(f.port, "127.0.0.3")]
        time.sleep(0.3)
        check(req(f.port, "/api/v1/health", src="127.0.0.3") == 0, "a direct client's third connection is refused")
        proxy = [hold(f.port, "127.0.0.1", "198.51.100.20"), hold(f.port, "127.0.0.1", "198.51.100.20")]
        time.sleep(0.3)
        check(req(f.port, "/api/v1/health") == 200, "the proxy's third connection is served (not limited)")
        check(req(f.port, "/api/v1/health", headers={"X-Forwarded-For": "198.51.100.20"}) == 429,
              "a forwarded client's third request in progress is refused 429")
        check(req(f.port, "/api/v1/health", headers={"X-Forwarded-For": "198.51.100.21"}) == 200,
              "another forwarded client is served")
        for s in direct + proxy:
            s.close()
        time.sleep(0.3)
        check(req(f.port, "/api/v1/health", headers={"X-Forwarded-For": "198.51.100.20"}) == 200,
              "once its requests end the forwarded client is served again")
        check(any("reason=per_ip_limit" in l for l in open(f.log).read().splitlines()), "per_ip_limit is logged")
    finally:
        check(f.stop() == 0, "fjord exits 0")


def test_dev_mode():
    f = Fjord("--dev-mode").start()
    try:
        check(req(f.port, "/api/v1/clusters") == 200, "dev-mode: a request from this host needs no credential")
        for h in ({"X-Forwarded-For": "203.0.113.1"}, {"Forwarded": "for=203.0.113.1"}, {"X-Real-IP": "203.0.113.1"}):
            check(req(f.port, "/api/v1/clusters", headers=h) == 401, "dev-mode: a relayed request needs one: %r" % h)
    finally:
        check(f.stop() == 0, "fjord exits 0")
    r = run_cli("serve", "--dev-mode", "--trusted-proxies", "127.0.0.1", "--listen", "127.0.0.1:0", "--db",
                ":memory:", check_rc=False)
    check(r.returncode != 0 and "trusted-proxies" in r.stderr, "dev-mode with trusted-proxies refused: %s" % r.stderr)
    r = run_cli("serve", "--trusted-proxies", "10.0.0.0/33", "--listen", "127.0.0.1:0", "--db", ":memory:",
                check_rc=False)
    check(r.returncode != 0 and "/33" in r.stderr, "a bad range is refused naming it: %s" % r.stderr)


def main():
    test_forwarded_bruteforce()
    test_forwarded_header_mode()
    test_per_ip()
    test_dev_mode()
    finish()


if __name__ == "__main__":
    main()
