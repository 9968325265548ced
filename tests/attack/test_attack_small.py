"""Request shapes and secrets: a NUL byte in the path or a query parameter (400 naming it), more
query parameters than a connection's memory holds (an answer, 414, not silence), the CSV form of an
answer with a 30 MB command, Basic credentials with a NUL in the user or the password (401), and a
database password that never appears in a log line or an answer: with a real PostgreSQL that asks
for it, in every URL form, while the database is up, down, and at a closed port.

Every request goes to 127.0.0.1, each with a timeout."""
import base64
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import FJORD, PG, Fjord, SHARED, check, finish, free_port, run_cli  # noqa: E402

SAMPLE = os.path.join(SHARED, "data", "sonar", "real", "0+sample-ml1.hpc.uio.no.json")
WINDOW = "from=2025-11-01T00:00:00Z&to=2025-12-01T00:00:00Z"


def raw_get(port, target, headers=b"", timeout=10):
    """One GET as written, on its own connection: (status, body) or (None, why)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + headers + b"\r\n")
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            return None, "no answer within %d s" % timeout
    if not data:
        return None, "connection closed without an answer"
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body.decode(errors="replace")


def error_of(body):
    try:
        return json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return {}


def nul_bytes(f, token):
    auth = b"Authorization: Bearer " + token.encode() + b"\r\n"
    st, body = raw_get(f.port, b"/api/v1/jobs?cluster=alpha&" + WINDOW.encode(), auth)
    check(st == 200 and json.loads(body)["jobs"], "control: alpha's job list is not empty (%s %s)" % (st, body[:200]))
    for target, path in [(b"/api/v1/jobs/%00/profile?cluster=alpha&" + WINDOW.encode(), "path"),
                         (b"/api/v1/jobs/1%00x?cluster=alpha", "path"),
                         (b"/api/v1/jobs?cluster=alpha%00junk&" + WINDOW.encode(), "cluster"),
                         (b"/api/v1/jobs?clu%00ster=alpha", "clu"),
                         (b"/api/v1/jobs?cluster=alpha&user=%00", "user"),
                         (b"/write?db=alpha&u=alpha&p=x%00y", "p")]:
        st, body = raw_get(f.port, target, auth)
        e = error_of(body)
        check(st == 400 and e.get("path") == path and "NUL" in e.get("message", ""),
              "%s: 400 naming %s (%s %s)" % (target.decode(), path, st, body[:200]))


def many_parameters(f, token):
    auth = b"Authorization: Bearer " + token.encode() + b"\r\n"
    for n, value in [(1000, "1"), (5000, "1"), (9268, "x"), (200, "v" * 250)]:
        q = "&".join("a%d=%s" % (i, value) for i in range(n)).encode()
        t0 = time.monotonic()
        st, body = raw_get(f.port, b"/api/v1/jobs?cluster=alpha&" + q, auth)
        # fjord's 414 names the query; a request line longer than the connection's memory gets
        # libmicrohttpd's own 414 before fjord sees it
        check(st == 414 and (error_of(body).get("path") == "query" or "Request too big" in body),
              "%d parameters of %d bytes: answered 414 (%s %s, %.1f s)" % (n, len(value), st, body[:200],
                                                                         time.monotonic() - t0))
    q = "&".join("a%d=1" % i for i in range(50)).encode()
    st, body = raw_get(f.port, b"/api/v1/jobs?cluster=alpha&" + q, auth)
    check(st == 400 and error_of(body).get("path") == "a0", "control: 50 parameters reach the handler (%s %s)"
          % (st, body[:200]))


def csv_big_command(f, token):
    env = json.load(open(SAMPLE))
    attrs = env["data"]["attributes"]
    attrs["cluster"] = "alpha"
    attrs["time"] = "2025-11-25T11:52:00+01:00"  # a later sample of the job shapes() stored
    command = "c" * (30 << 20)
    attrs["jobs"][0]["processes"][0]["cmd"] = command
    r = f.post("/api/v1/insert/sample", json.dumps(env), auth=("alpha", token), timeout=120)
    check(r.status == 200, "a sample with a 30 MB command: %d %s" % (r.status, r.body[:200]))
    r = f.get("/api/v1/jobs?cluster=alpha&" + WINDOW, auth=token, timeout=120)
    jobs = r.json().get("jobs", []) if r.status == 200 else []
    jid = [j["id"] for j in jobs if j["job"] == attrs["jobs"][0]["job"]]
    check(len(jid) == 1, "the job is listed: %d %s" % (r.status, r.body[:200]))
    if not jid:
        return
    for path in ("/api/v1/jobs?cluster=alpha&" + WINDOW, "/api/v1/jobs/%d/profile?cluster=alpha" % jid[0]):
        js = f.get(path, auth=token, timeout=120)
        cs = f.get(path + "&format=csv", auth=token, timeout=120)
        check(js.status == 200 and command in js.body, "JSON of %s holds the command: %d" % (path, js.status))
        check(cs.status == 200 and command in cs.body, "CSV of %s holds the command: %d %s" % (path, cs.status,
                                                                                            cs.body[:200]))


def basic_nul(f, token):
    def basic(user, password):
        cred = base64.b64encode(user + b":" + password)
        return raw_get(f.port, b"/api/v1/clusters", b"Authorization: Basic " + cred + b"\r\n")
    st, body = basic(b"alpha", token.encode())
    check(st == 200, "control: Basic alpha with its secret: %s %s" % (st, body[:200]))
    for user, password, what in [(b"alpha\x00x", token.encode(), "NUL in the user"),
                                 (b"alpha", token.encode() + b"\x00junk", "NUL after the password"),
                                 (b"alpha", b"\x00" + token.encode(), "NUL before the password")]:
        st, body = basic(user, password)
        check(st == 401 and error_of(body).get("path") == "Authorization", "%s: 401 (%s %s)" % (what, st, body[:200]))


def shapes():
    f = Fjord()
    try:
        token = f.token("alpha")
        f.start()
        env = json.load(open(SAMPLE))
        env["data"]["attributes"]["cluster"] = "alpha"
        r = f.post("/api/v1/insert/sample", json.dumps(env), auth=("alpha", token))
        check(r.status == 200, "a sample of alpha: %d %s" % (r.status, r.body[:200]))
        nul_bytes(f, token)
        many_parameters(f, token)
        basic_nul(f, token)
        csv_big_command(f, token)
        check(f.stop() == 0, "clean stop")
    finally:
        f.cleanup()


SECRET = "S3cret-7yQ"  # the role's password; in the URLs below in every form libpq reads


def leaks(text, where):
    check(SECRET not in text, "the password is not in %s: %s" % (where, text[-400:] if SECRET in text else "ok"))


def db_password_pg():
    import harness
    pg = harness.pg_server()
    role = "fjpw_%d" % os.getpid()
    url = pg.add_password_role(role, SECRET)
    # userinfo, ?password= and a percent-encoded parameter name, as libpq reads them all
    forms = [url.replace("://%s@" % role, "://%s:%s@" % (role, SECRET)),
             url + "?password=" + SECRET,
             url + "?sslmode=disable&pass%77ord=" + SECRET]
    p = run_cli("migrate", "up", db=forms[0], check_rc=False)
    check(p.returncode == 0, "migrate with the password: %s" % p.stderr)
    leaks(p.stdout + p.stderr, "migrate's output")
    for i, db in enumerate(forms):
        f = Fjord(db=db)
        try:
            token = f.token("alpha") if i == 0 else run_cli("token", "add", "alpha%d" % i, db=db).stdout.strip()
            cluster = "alpha" if i == 0 else "alpha%d" % i
            f.start()
            r = f.get("/api/v1/clusters", auth=token)
            check(r.status == 200, "form %d: the server works with the password (%d %s)" % (i, r.status, r.body[:200]))
            if i == 0:
                # the database goes away under a running server: clients learn only that it is unavailable
                pg.stop_server("immediate")
                try:
                    answers = [f.get("/api/v1/jobs?cluster=%s" % cluster, auth=token),
                               f.post("/api/v1/insert/sample", open(SAMPLE).read().replace(
                                   '"mlx.hpc.uio.no"', '"%s"' % cluster), auth=(cluster, token)),
                               f.post("/api/write?cluster=%s" % cluster, b"x,hostname=h value=1\n",
                                      headers={"Content-Type": "text/plain"}, auth=token)]
                finally:
                    pg.start_server()
                for a in answers:
                    e = error_of(a.body)
                    check(a.status == 503 and e.get("message") == "the database is unavailable; retry later",
                          "database down: 503 that says only that (%d %s)" % (a.status, a.body[:300]))
                    for detail in (SECRET, role, str(pg.port), "127.0.0.1", "postgres"):
                        check(detail not in a.body, "the 503 does not name %r: %s" % (detail, a.body[:300]))
                time.sleep(1)
            check(f.stop() == 0, "form %d: clean stop" % i)
            log = open(f.log).read()
            leaks(log, "the server's log (form %d)" % i)
            if i == 0:
                check("http: answered" in log and "cannot connect to postgres://%s:***@" % role in log,
                      "the log has the detail the clients did not get: %s" % log[-600:])
        finally:
            f.cleanup()
    # a closed port: fjord refuses to start and says why, without the password
    for db in forms:
        closed = db.replace(":%d/" % pg.port, ":%d/" % free_port())
        p = subprocess.run([FJORD, "serve", "--listen", "127.0.0.1:%d" % free_port(), "--db", closed],
                           capture_output=True, text=True, timeout=60)
        check(p.returncode != 0 and "cannot connect" in p.stderr, "closed port: refused to start (%s)" % p.stderr)
        leaks(p.stdout + p.stderr, "the refusal to start")


def db_password_sqlite():
    # A mistyped PostgreSQL URL goes to SQLite, which shows it in its error: redacted there too.
    typo = "postgresq://fj:%s@127.0.0.1:1/fj?password=%s" % (SECRET, SECRET)
    p = subprocess.run([FJORD, "serve", "--listen", "127.0.0.1:%d" % free_port(), "--db", typo],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode != 0 and "postgresq://fj:***@" in p.stderr, "mistyped URL refused, shown redacted: %s" % p.stderr)
    leaks(p.stdout + p.stderr, "the mistyped URL's error")


def main():
    shapes()
    if PG:
        db_password_pg()
    else:
        db_password_sqlite()
        print("the PostgreSQL password checks run in this script's PostgreSQL variant")
    finish()


if __name__ == "__main__":
    main()
