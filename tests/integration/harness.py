"""Starts a real fjord on 127.0.0.1 with a temporary database and talks HTTP to it.

Used by the integration tests: each test gets a fresh server, stops it with SIGTERM and checks it
exits 0. Only the standard library is used, so the tests run wherever python3 does.

With FJ_TEST_DB=postgres in the environment every Fjord() gets a fresh PostgreSQL database instead
of a SQLite file, on a PostgreSQL server started once per test script (pgserver.py) and stopped
when the script exits; row_counts, query and execute then go through psql.
"""
import atexit
import base64
import gzip
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

FJORD = os.environ.get("FJORD_BIN", "build/fjord")
SOURCE = os.environ.get("FJ_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SHARED = os.environ.get("FJ_SHARED_DIR", os.path.join(SOURCE, "..", "shared"))
PG = os.environ.get("FJ_TEST_DB", "sqlite") == "postgres"
_pg = []


def pg_server():
    """The script's PostgreSQL server (started on first use, stopped at exit)."""
    if not _pg:
        import pgserver
        server = pgserver.PgServer().start()
        atexit.register(server.stop)
        _pg.append(server)
    return _pg[0]


def fresh_db(tmp, name="fjord.db"):
    """A new empty database: the file name in tmp, or a new PostgreSQL database's URL."""
    if PG:
        return pg_server().create_db()
    return os.path.join(tmp, name)


def _pg_dbname(url):
    return url.rsplit("/", 1)[1].split("?", 1)[0]


def _sql_literal(v):
    if v is None:
        return "NULL"
    if isinstance(v, (int, float)):
        return repr(v)
    return "'" + str(v).replace("'", "''") + "'"


def _typed(v):
    if v is None:
        return None
    try:
        return int(v)
    except ValueError:
        return v


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nats_publish(port, msgs):
    """Publishes (subject, payload bytes) pairs to a NATS server on 127.0.0.1:port with the plain
    text protocol, and returns once the server has answered a PING after them (all received)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.recv(4096)  # INFO
        s.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\n')
        for subject, payload in msgs:
            s.sendall(b"PUB %s %d\r\n%s\r\n" % (subject.encode(), len(payload), payload))
        s.sendall(b"PING\r\n")
        buf = b""
        while b"PONG" not in buf:
            buf += s.recv(4096)


class Failure(Exception):
    pass


_checks = {"passed": 0, "failed": 0}


def check(cond, what):
    """Records one assertion; a failure is reported and counted, and the test goes on."""
    if cond:
        _checks["passed"] += 1
    else:
        _checks["failed"] += 1
        print("FAIL: " + what, flush=True)


def finish():
    """Prints the closing line and exits non-zero on any failure."""
    print("%d passed, %d failed" % (_checks["passed"], _checks["failed"]), flush=True)
    sys.exit(1 if _checks["failed"] else 0)


def run_cli(*args, db=None, check_rc=True):
    cmd = [FJORD] + list(args)
    if db:
        cmd += ["--db", db]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if check_rc and p.returncode != 0:
        raise Failure("%s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr))
    return p


class Response:
    def __init__(self, status, body, headers):
        self.status = status
        self.body = body
        self.headers = headers

    def json(self):
        return json.loads(self.body)


class Fjord:
    """A fjord server process on a free loopback port with its own temporary database."""

    def __init__(self, *extra, db=None, tmp=None):
        self.tmp = tmp or tempfile.mkdtemp(prefix="fjord-test-")
        self.db = db or fresh_db(self.tmp)
        self.port = free_port()
        self.extra = list(extra)
        self.proc = None
        self.log = os.path.join(self.tmp, "server-%d.log" % self.port)

    def start(self):
        args = [FJORD, "serve", "--listen", "127.0.0.1:%d" % self.port, "--db", self.db] + self.extra
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise Failure("fjord exited with %d: %s" % (self.proc.returncode, open(self.log).read()))
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise Failure("fjord did not start listening")

    def stop(self, timeout=30):
        """SIGTERM and wait; returns the exit code."""
        if not self.proc:
            return 0
        self.proc.terminate()
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        return rc

    def token(self, cluster, *extra):
        # --create: a test may add credentials before the server has made the database
        return run_cli("token", "add", cluster, "--create", *extra, db=self.db).stdout.strip()

    def request(self, method, path, body=None, headers=None, auth=None, timeout=30):
        url = "http://127.0.0.1:%d%s" % (self.port, path)
        h = dict(headers or {})
        if isinstance(auth, tuple):
            h["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % auth).encode()).decode()
        elif isinstance(auth, str):
            h["Authorization"] = "Bearer " + auth
        if isinstance(body, str):
            body = body.encode()
        req = urllib.request.Request(url, data=body, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return Response(r.status, r.read().decode(), dict(r.headers))
        except urllib.error.HTTPError as e:
            return Response(e.code, e.read().decode(), dict(e.headers))

    def post(self, path, body, **kw):
        h = kw.pop("headers", {}) or {}
        h.setdefault("Content-Type", "application/json")
        return self.request("POST", path, body, headers=h, **kw)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def row_counts(self):
        """Rows per table, read straight from the database."""
        if self.db.startswith("postgres"):
            names = [r[0] for r in self.query(
                "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
                "AND relkind IN ('r', 'p') AND NOT relispartition")]
            if not names:
                return {}
            rows = self.query(" UNION ALL ".join("SELECT '%s', count(*) FROM \"%s\"" % (n, n) for n in names))
            return {r[0]: r[1] for r in rows}
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True)
        try:
            names = [r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
            return {n: con.execute('SELECT count(*) FROM "%s"' % n).fetchone()[0] for n in names}
        finally:
            con.close()

    def query(self, sql, *args):
        """Rows of a query with ? placeholders (values are inlined as literals for PostgreSQL)."""
        if self.db.startswith("postgres"):
            parts = sql.split("?")
            if len(parts) != len(args) + 1:
                raise Failure("query: %d placeholders, %d values" % (len(parts) - 1, len(args)))
            text = parts[0] + "".join(_sql_literal(a) + p for a, p in zip(args, parts[1:]))
            return [tuple(_typed(v) for v in row) for row in pg_server().psql(text, _pg_dbname(self.db))]
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True)
        try:
            return con.execute(sql, args).fetchall()
        finally:
            con.close()

    def execute(self, sql):
        """Runs statements that change the database (tests that fake an old schema and the like)."""
        if self.db.startswith("postgres"):
            pg_server().psql(sql, _pg_dbname(self.db))
            return
        con = sqlite3.connect(self.db)
        try:
            con.executescript(sql)
            con.commit()
        finally:
            con.close()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


def split_envelopes(text):
    """The JSON objects of a file written as concatenated or line-delimited envelopes."""
    dec = json.JSONDecoder()
    out, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        obj, i = dec.raw_decode(text, i)
        out.append(obj)


def sonar_files():
    """Every real and reference Sonar file under shared/data/sonar."""
    base = os.path.join(SHARED, "data", "sonar")
    files = []
    for sub in ("real", "formats-testdata"):
        d = os.path.join(base, sub)
        files += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".json")]
    d = os.path.join(base, "sonar-0.19-output")
    files += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.startswith("head-") and f.endswith(".json")]
    return files


def envelope_cluster(env):
    """The cluster an envelope names, or None (an error envelope may name none)."""
    if "data" in env:
        return env["data"]["attributes"]["cluster"]
    return env["errors"][0].get("cluster")


def gzip_bytes(b):
    return gzip.compress(b)


def zstd_bytes(b):
    return subprocess.run(["zstd", "-q", "-c"], input=b, capture_output=True, check=True).stdout
