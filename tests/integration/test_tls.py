#!/usr/bin/env python3
"""HTTPS: a real fjord with listen-tls on 127.0.0.1, certificates made here with openssl (a site CA,
server certificates, client certificates, a second CA that signs nothing fjord trusts), talked to
with curl, Python's ssl module and fjord-push.

Checks: TLS 1.1 refused, 1.2 and 1.3 accepted, a non-AEAD cipher refused; plain HTTP still served
beside HTTPS; fjord-push delivers with the right CA and refuses (and spools, with a log line
naming the certificate problem) with a wrong one; a certificate swapped and SIGHUP'd while a client
keeps posting over new and kept-alive connections: no request fails and new handshakes get the new
certificate (its SHA-256 fingerprint); a bad reload (key of another certificate) keeps the old one
and logs why; client-certificate mode refuses a client without a certificate or with one from
another CA and accepts one signed by the site CA."""
import hashlib
import http.client
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

from harness import Fjord, SOURCE, check, finish, free_port

PUSH = os.environ.get("FJORD_PUSH_BIN") or os.path.join(os.path.dirname(os.path.abspath(
    os.environ.get("FJORD_BIN", "build/fjord"))), "pusher", "fjord-push")
FAKE = os.environ.get("FJ_FAKE_NVML_LIB") or os.path.join(os.path.dirname(PUSH), "fake_nvml", "libnvidia-ml.so.1")
ROOT = os.path.join(SOURCE, "tests", "data", "pusher", "node-x86")


def sh(*cmd):
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)


class Pki:
    """A site CA, another CA, and certificates signed by them, in a temporary directory."""

    def __init__(self, d):
        self.d = d
        self.ca = self.make_ca("site-ca")
        self.other_ca = self.make_ca("other-ca")

    def p(self, name):
        return os.path.join(self.d, name)

    def make_ca(self, name):
        sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
           "-keyout", self.p(name + ".key"), "-out", self.p(name + ".pem"), "-days", "2", "-subj", "/CN=" + name)
        return name

    def issue(self, name, ca, server=True, rsa=False):
        key = ["rsa:2048"] if rsa else ["ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
        sh("openssl", "req", "-newkey", *key, "-nodes", "-keyout", self.p(name + ".key"),
           "-out", self.p(name + ".csr"), "-subj", "/CN=" + ("127.0.0.1" if server else name))
        ext = self.p(name + ".ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n" if server
                    else "extendedKeyUsage=clientAuth\n")
        sh("openssl", "x509", "-req", "-in", self.p(name + ".csr"), "-CA", self.p(ca + ".pem"),
           "-CAkey", self.p(ca + ".key"), "-CAcreateserial", "-out", self.p(name + ".pem"), "-days", "2",
           "-extfile", ext)
        return self.p(name + ".pem"), self.p(name + ".key")


def fingerprint(pem_path):
    with open(pem_path) as f:
        der = ssl.PEM_cert_to_DER_cert(f.read())
    return hashlib.sha256(der).hexdigest()


def served_fingerprint(port, cafile):
    ctx = ssl.create_default_context(cafile=cafile)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
            return hashlib.sha256(t.getpeercert(binary_form=True)).hexdigest()


def curl(url, *args):
    p = subprocess.run(["curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", *args, url],
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def wait_port(port):
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def start_tls(pki, cert, key, *extra):
    tls_port = free_port()
    f = Fjord("--listen-tls", "127.0.0.1:%d" % tls_port, "--tls-cert", cert, "--tls-key", key, *extra).start()
    f.tls_port = tls_port
    check(wait_port(tls_port), "the HTTPS listener is up")
    return f


def test_versions_and_plain(pki, cert, key):
    f = start_tls(pki, cert, key)
    try:
        url = "https://127.0.0.1:%d/api/v1/health" % f.tls_port
        ca = pki.p(pki.ca + ".pem")
        rc, code, err = curl(url, "--cacert", ca, "--tlsv1.1", "--tls-max", "1.1")
        check(rc != 0 and code == "000", "TLS 1.1 refused: rc %d code %s %s" % (rc, code, err.strip()))
        rc, code, _ = curl(url, "--cacert", ca, "--tlsv1.2", "--tls-max", "1.2")
        check(rc == 0 and code == "200", "TLS 1.2 accepted: rc %d code %s" % (rc, code))
        rc, code, _ = curl(url, "--cacert", ca, "--tlsv1.3")
        check(rc == 0 and code == "200", "TLS 1.3 accepted: rc %d code %s" % (rc, code))
        rc, code, _ = curl(url, "--cacert", ca, "--tlsv1.2", "--tls-max", "1.2", "--ciphers", "AES128-SHA")
        check(rc != 0, "a CBC cipher without forward secrecy refused: rc %d code %s" % (rc, code))
        rc, code, err = curl(url, "--cacert", pki.p(pki.other_ca + ".pem"))
        check(rc == 60, "curl refuses the server's certificate against another CA: rc %d %s" % (rc, err.strip()))
        check(f.get("/api/v1/health").status == 200, "plain HTTP still served on listen")
        rc, code, _ = curl("http://127.0.0.1:%d/api/v1/health" % f.tls_port)
        check(code != "200", "plain HTTP on the HTTPS port is not served: code %s" % code)
    finally:
        check(f.stop() == 0, "fjord exits 0")


def push(f, auth_file, ca, spool, *extra):
    env = dict(os.environ)
    env["FJ_FAKE_NVML"] = "gpus 1"
    cmd = [PUSH, "--once", "--url", "https://127.0.0.1:%d/ingest" % f.tls_port, "--auth-file", auth_file,
           "--ca-file", ca, "--root", ROOT, "--nvml-library", FAKE, "--node", "n1", "--cluster", "c1",
           "--timeout", "10s", "--spool-dir", spool] + list(extra)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def test_pusher(pki, cert, key):
    if not os.path.exists(PUSH):
        check(False, "fjord-push is built next to fjord (%s)" % PUSH)
        return
    f = start_tls(pki, cert, key)
    try:
        secret = f.token("c1")
        auth_file = os.path.join(f.tmp, "push.secret")
        with open(auth_file, "w") as fh:
            fh.write("c1:%s\n" % secret)
        wrong_spool = os.path.join(f.tmp, "spool-wrong")
        r = push(f, auth_file, pki.p(pki.other_ca + ".pem"), wrong_spool)
        check(r.returncode != 0, "fjord-push with a wrong CA fails: rc %d" % r.returncode)
        check("certificate is not trusted" in r.stderr and pki.other_ca in r.stderr,
              "its log says the server's certificate is not trusted, against which CA: %s" % r.stderr[-600:])
        spooled = os.listdir(wrong_spool) if os.path.isdir(wrong_spool) else []
        check(len(spooled) > 0, "what it could not send is in the spool: %r" % spooled)
        check(f.get("/api/v1/nodes?cluster=c1", auth=("c1", secret)).body.count('"n1"') == 0,
              "nothing reached fjord")
        r = push(f, auth_file, pki.p(pki.ca + ".pem"), wrong_spool)
        check(r.returncode == 0, "fjord-push with the site CA delivers (and drains the spool): rc %d %s"
              % (r.returncode, r.stderr[-600:]))
        check(not [n for n in os.listdir(wrong_spool) if not n.startswith(".")], "the spool is empty after")
        r = f.get("/api/v1/nodes?cluster=c1", auth=("c1", secret))
        check(r.status == 200 and '"n1"' in r.body, "the node arrived over HTTPS: %d %s" % (r.status, r.body[:200]))
    finally:
        check(f.stop() == 0, "fjord exits 0")


def test_reload(pki):
    cert1, key1 = pki.issue("srv-a", pki.ca)
    cert2, key2 = pki.issue("srv-b", pki.ca, rsa=True)
    cur_cert, cur_key = pki.p("current.pem"), pki.p("current.key")
    shutil.copy(cert1, cur_cert)
    shutil.copy(key1, cur_key)
    f = start_tls(pki, cur_cert, cur_key)
    ca = pki.p(pki.ca + ".pem")
    try:
        secret = f.token("c1")
        check(served_fingerprint(f.tls_port, ca) == fingerprint(cert1), "the first certificate is served")
        ctx = ssl.create_default_context(cafile=ca)
        auth = {"Authorization": "Bearer " + secret, "Content-Type": "text/plain"}
        stop = threading.Event()
        results = {"ok": 0, "failed": []}
        kept = http.client.HTTPSConnection("127.0.0.1", f.tls_port, context=ctx, timeout=10)

        def post(conn, i):
            body = "reload,hostname=h%d value=%d %d\n" % (i % 7, i, 1700000000 + i)
            conn.request("POST", "/api/write?cluster=c1", body=body, headers=auth)
            r = conn.getresponse()
            r.read()
            return r.status

        def client():
            i = 0
            while not stop.is_set() and i < 5000:
                i += 1
                try:
                    if i % 2:  # a new connection (a new handshake) every other request
                        c = http.client.HTTPSConnection("127.0.0.1", f.tls_port, context=ctx, timeout=10)
                        st = post(c, i)
                        c.close()
                    else:      # and one connection kept alive across the swap
                        st = post(kept, i)
                    if st == 204 or st == 200:
                        results["ok"] += 1
                    else:
                        results["failed"].append(st)
                except Exception as e:  # noqa: BLE001 (any failure is what the test counts)
                    results["failed"].append(repr(e))

        t = threading.Thread(target=client)
        t.start()
        time.sleep(1.0)
        # A bad reload first: the key of another certificate. The old certificate stays.
        shutil.copy(cert2, cur_cert)
        f.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        check(served_fingerprint(f.tls_port, ca) == fingerprint(cert1), "after a bad reload the old one is served")
        # Then the whole swap.
        shutil.copy(key2, cur_key)
        f.proc.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        check(served_fingerprint(f.tls_port, ca) == fingerprint(cert2), "after SIGHUP the new certificate is served")
        time.sleep(0.5)
        stop.set()
        t.join(60)
        kept.close()
        check(results["ok"] > 20 and not results["failed"],
              "no request failed across the swap: %d ok, failed %r" % (results["ok"], results["failed"][:5]))
        log = open(f.log).read()
        check("keeping the certificate in force" in log and "is not the key of the certificate" in log,
              "the bad reload is logged with why")
        check(log.count("tls: certificate reloaded") == 1, "the good reload is logged once")
    finally:
        check(f.stop() == 0, "fjord exits 0")


def test_client_certs(pki, cert, key):
    good_cert, good_key = pki.issue("node-1", pki.ca, server=False)
    bad_cert, bad_key = pki.issue("node-x", pki.other_ca, server=False)
    ca = pki.p(pki.ca + ".pem")
    f = start_tls(pki, cert, key, "--tls-client-ca", ca)
    try:
        secret = f.token("c1")
        url = "https://127.0.0.1:%d/api/v1/clusters" % f.tls_port
        base = ["--cacert", ca, "-H", "Authorization: Bearer " + secret]
        rc, code, _ = curl(url, *base)
        check(code == "403", "without a client certificate: 403, got rc %d code %s" % (rc, code))
        rc, code, _ = curl(url, *base, "--cert", bad_cert, "--key", bad_key)
        check(code in ("403", "000"), "a client certificate from another CA is refused: rc %d code %s" % (rc, code))
        rc, code, _ = curl(url, *base, "--cert", good_cert, "--key", good_key)
        check(code == "200", "a client certificate signed by the site CA is accepted: rc %d code %s" % (rc, code))
        check(f.get("/api/v1/clusters", auth=secret).status == 200, "plain HTTP (loopback) asks no certificate")
        log = open(f.log).read()
        check("reason=client_certificate" in log, "the refusal is in the refusal log")
    finally:
        check(f.stop() == 0, "fjord exits 0")


def test_config_errors(pki, cert, key):
    from harness import run_cli
    r = run_cli("serve", "--listen", "127.0.0.1:0", "--listen-tls", "127.0.0.1:0", "--tls-cert", cert,
                "--db", ":memory:", check_rc=False)
    check(r.returncode != 0 and "tls-key" in r.stderr, "listen-tls without tls-key refused: %s" % r.stderr)
    other_cert, _ = pki.issue("srv-other", pki.ca)
    r = run_cli("serve", "--listen", "127.0.0.1:0", "--listen-tls", "127.0.0.1:0", "--tls-cert", other_cert,
                "--tls-key", key, "--db", ":memory:", check_rc=False)
    check(r.returncode != 0 and "is not the key of the certificate" in r.stderr,
          "a key that does not match the certificate refused at start: %s" % r.stderr)
    r = run_cli("serve", "--listen", "127.0.0.1:0", "--listen-tls", "0.0.0.0:0", "--tls-cert", cert, "--tls-key", key,
                "--dev-mode", "--db", ":memory:", check_rc=False)
    check(r.returncode != 0 and "dev-mode" in r.stderr, "dev-mode with a non-loopback HTTPS listener refused")


def main():
    d = os.path.join(os.environ.get("TMPDIR", "/tmp"), "fjord-tls-%d" % os.getpid())
    os.makedirs(d)
    try:
        pki = Pki(d)
        cert, key = pki.issue("srv", pki.ca)
        test_versions_and_plain(pki, cert, key)
        test_config_errors(pki, cert, key)
        test_client_certs(pki, cert, key)
        test_reload(pki)
        test_pusher(pki, cert, key)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
