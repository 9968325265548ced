#!/usr/bin/env python3
"""fjord-push --once against a scripted HTTP server on 127.0.0.1 (no fjord server needed).

Checks: headers (Content-Type, Content-Encoding: zstd, Basic/Bearer credentials from the auth file),
the zstd bodies are Sonar envelopes / an aicr snapshot, 503 + Retry-After is honoured and retried,
a server outage leaves the documents in the spool directory and the next run delivers them, a 400
drops the document and fails the run. Every server call is bounded in time."""
import ctypes
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.environ.get("FJORD_PUSH_BIN", "build-push/pusher/fjord-push")
FAKE = os.environ.get("FJ_FAKE_NVML_LIB", "build-push/pusher/fake_nvml/libnvidia-ml.so.1")
SRC = os.environ.get("FJ_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
ROOT = os.path.join(SRC, "tests", "data", "pusher", "node-x86")

_zstd = ctypes.CDLL("libzstd.so.1")
_zstd.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
_zstd.ZSTD_decompress.restype = ctypes.c_size_t
_zstd.ZSTD_isError.restype = ctypes.c_uint


def unzstd(data: bytes) -> bytes:
    n = _zstd.ZSTD_getFrameContentSize(data, len(data))
    assert n < (1 << 40), "no content size in the zstd frame"
    out = ctypes.create_string_buffer(int(n) + 1)
    r = _zstd.ZSTD_decompress(out, int(n) + 1, data, len(data))
    assert not _zstd.ZSTD_isError(r), "bad zstd frame"
    return out.raw[:r]


class Server:
    """Records every request; answers from a script of (status, headers) popped in order, then 200."""

    def __init__(self):
        self.requests = []
        self.script = []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body,
                                       "t": time.monotonic()})
                status, extra = outer.script.pop(0) if outer.script else (200, {})
                payload = b'{"ok":true}' if status < 300 else b'{"error":{"code":"x","message":"scripted"}}'
                self.send_response(status)
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def run(args, env_extra=None, timeout=60):
    env = dict(os.environ)
    env["FJ_FAKE_NVML"] = "gpus 2; proc gpu=0 pid=5000 mem=1048576 sm=30"
    env.update(env_extra or {})
    cmd = [BIN, "--nvml-library", FAKE, "--root", ROOT, "--node", "c1-7", "--cluster", "fox.example",
           "--fake-time", "1698400000", "--timeout", "5s"] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


passed = failed = 0


def check(name, fn):
    global passed, failed
    try:
        fn()
        passed += 1
        print(f"ok {name}")
    except Exception as e:  # noqa: BLE001 - report and go on
        failed += 1
        print(f"FAIL {name}: {e!r}")


def test_basic_auth_and_bodies():
    s = Server()
    d = tempfile.mkdtemp()
    try:
        secret = os.path.join(d, "secret")
        with open(secret, "w") as f:
            f.write("fox.example:s3cret\n")
        r = run(["--once", "--url", f"http://127.0.0.1:{s.port}/ingest", "--auth-file", secret,
                 "--spool-dir", "", "--only", "sysinfo,sample"])
        assert r.returncode == 0, r.stderr
        assert len(s.requests) == 2, s.requests
        kinds = []
        for q in s.requests:
            h = q["headers"]
            assert q["path"] == "/ingest", q["path"]
            assert h["Content-Type"] == "application/json", h
            assert h["Content-Encoding"] == "zstd", h
            assert h["Authorization"] == "Basic Zm94LmV4YW1wbGU6czNjcmV0", h
            assert q["body"][:4] == b"\x28\xb5\x2f\xfd", "zstd magic"
            doc = json.loads(unzstd(q["body"]))
            assert doc["meta"]["producer"] == "fjord-push"
            a = doc["data"]["attributes"]
            assert a["cluster"] == "fox.example" and a["node"] == "c1-7", a
            kinds.append(doc["data"]["type"])
            if doc["data"]["type"] == "sample":
                g = a["system"]["gpus"]
                assert len(g) == 2 and g[0]["performance_state"] == 2, g  # P0 written as 0+2
                assert a["jobs"][0]["job"] == 4242 and a["jobs"][0]["processes"][0]["gpus"][0]["gpu_memory"] == 1024
        assert kinds == ["sysinfo", "sample"], kinds
    finally:
        s.close()
        shutil.rmtree(d)


def test_bearer_and_retry_after():
    s = Server()
    d = tempfile.mkdtemp()
    try:
        secret = os.path.join(d, "token")
        with open(secret, "w") as f:
            f.write("tok-123\n")
        s.script = [(503, {"Retry-After": "2"}), (429, {"Retry-After": "1"})]
        t0 = time.monotonic()
        r = run(["--once", "--url", f"http://127.0.0.1:{s.port}/ingest", "--auth-file", secret,
                 "--spool-dir", "", "--only", "sample"])
        took = time.monotonic() - t0
        assert r.returncode == 0, r.stderr
        assert len(s.requests) == 3, len(s.requests)
        assert s.requests[0]["headers"]["Authorization"] == "Bearer tok-123"
        gap1 = s.requests[1]["t"] - s.requests[0]["t"]
        gap2 = s.requests[2]["t"] - s.requests[1]["t"]
        assert gap1 >= 1.9, f"Retry-After 2 not honoured: {gap1:.2f}s"
        assert gap2 >= 0.9, f"Retry-After 1 not honoured: {gap2:.2f}s"
        assert took < 30, took
        assert unzstd(s.requests[0]["body"]) == unzstd(s.requests[2]["body"]), "the same document is retried"
    finally:
        s.close()
        shutil.rmtree(d)


def test_outage_spools_then_delivers():
    d = tempfile.mkdtemp()
    try:
        spool = os.path.join(d, "spool")
        s = Server()
        port = s.port
        s.close()  # nothing listens: connection refused
        r = run(["--once", "--url", f"http://127.0.0.1:{port}/ingest", "--spool-dir", spool,
                 "--only", "sysinfo,sample", "--auth-type", "none"], timeout=120)
        assert r.returncode == 1, (r.returncode, r.stderr)
        files = sorted(os.listdir(spool))
        assert len(files) == 2 and all(f.endswith(".sonar.zst") for f in files), files
        # The server is back (a new one on another port): the next run sends the old ones first.
        s2 = Server()
        try:
            r = run(["--once", "--url", f"http://127.0.0.1:{s2.port}/ingest", "--spool-dir", spool,
                     "--only", "sample", "--auth-type", "none"])
            assert r.returncode == 0, r.stderr
            assert os.listdir(spool) == [], os.listdir(spool)
            types = [json.loads(unzstd(q["body"]))["data"]["type"] for q in s2.requests]
            assert types == ["sysinfo", "sample", "sample"], types
            assert "Authorization" not in s2.requests[0]["headers"]
        finally:
            s2.close()
    finally:
        shutil.rmtree(d)


def test_refused_document_is_dropped():
    s = Server()
    d = tempfile.mkdtemp()
    try:
        spool = os.path.join(d, "spool")
        s.script = [(400, {})]
        r = run(["--once", "--url", f"http://127.0.0.1:{s.port}/ingest", "--spool-dir", spool,
                 "--only", "sysinfo,sample", "--auth-type", "none"])
        assert r.returncode == 1, "a refused document fails the run"
        assert "refused" in r.stderr, r.stderr
        assert len(s.requests) == 2, "the next document is still sent"
        assert os.listdir(spool) == [], "nothing left to retry"
    finally:
        s.close()
        shutil.rmtree(d)


def test_measurements_endpoint():
    s = Server()
    try:
        xml = os.path.join(os.environ.get("FJ_SHARED_DIR", os.path.join(SRC, "..", "shared")),
                           "data", "hwloc-xml", "24em64t-2n6c2t-pci.xml")
        r = run(["--once", "--url", f"http://127.0.0.1:{s.port}/ingest", "--only", "topology",
                 "--hwloc-xml", xml, "--spool-dir", "", "--auth-type", "none", "--cluster", "a b"])
        assert r.returncode == 0, r.stderr
        assert len(s.requests) == 1
        q = s.requests[0]
        assert q["path"] == "/api/v1/ingest/measurements?cluster=a%20b&node=c1-7", q["path"]
        snap = json.loads(unzstd(q["body"]))
        assert snap["kind"] == "Snapshot"
        m = snap["measurements"][0]
        assert m["type"] == "NetworkTopology"
        assert [x["subtype"] for x in m["subtypes"]][:3] == ["identity", "capabilities", "pfs"]
    finally:
        s.close()


def test_daemon_cadence():
    """The daemon: sysinfo at start, samples on clock-aligned 2 s ticks, sending after the jitter."""
    s = Server()
    d = tempfile.mkdtemp()
    try:
        env = dict(os.environ)
        env["FJ_FAKE_NVML"] = "gpus 1"
        cmd = [BIN, "--nvml-library", FAKE, "--root", ROOT, "--node", "c1-7", "--cluster", "fox.example",
               "--url", f"http://127.0.0.1:{s.port}/ingest", "--auth-type", "none", "--spool-dir",
               os.path.join(d, "spool"), "--sample-interval", "2s", "--send-jitter", "1s"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        time.sleep(7.5)
        p.terminate()
        out, err = p.communicate(timeout=20)
        assert p.returncode == 0, err
        docs = [json.loads(unzstd(q["body"])) for q in s.requests]
        types = [x["data"]["type"] for x in docs]
        assert types[0] == "sysinfo", types
        samples = [x["data"]["attributes"]["time"] for x in docs if x["data"]["type"] == "sample"]
        assert 2 <= len(samples) <= 4, types
        secs = [int(t[17:19]) for t in samples]
        assert all(x % 2 == 0 for x in secs), f"samples not clock-aligned: {samples}"
    finally:
        s.close()
        shutil.rmtree(d)


def test_stdout_needs_no_server():
    r = run(["--once", "--stdout", "--only", "sample,sysinfo"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().split("\n")
    assert [json.loads(x)["data"]["type"] for x in lines] == ["sysinfo", "sample"]


for name, fn in list(globals().items()):
    if name.startswith("test_") and callable(fn):
        check(name, fn)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
