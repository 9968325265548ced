"""PostgreSQL only (FJ_TEST_DB=postgres; exits 77, skipped, otherwise): a read's statement is stopped
inside PostgreSQL, not at its next row (docs/security.md, "Reads").

A read waits in one statement for as long as PostgreSQL takes to answer it; libpq hands back nothing
before the whole result. The test makes such a statement without gigabytes of data: a session of its
own holds an ACCESS EXCLUSIVE lock on `clusters`, which every query of the API reads first, so the
read's statement waits inside PostgreSQL (pg_stat_activity: active, waiting on a Lock) until the lock
goes, the statement is cancelled or lock_timeout (5 s) ends it.

- Client gone: the client closes its connection 0.5 s after sending; within 1 s of that no statement
  of fjord's is active in pg_stat_activity any more, and the server answers again.
- Deadline: with query-timeout 2 s a read that waits is answered 503 `query_timeout` within a second of
  its deadline (before lock_timeout could end it).
- /metrics counts both (fjord_reads_cancelled_total).
- SIGTERM while a read waits: the drain cancels its statement and fjord exits 0 within 2 s.
"""
import http.client
import os
import socket
import subprocess
import sys
import time

import harness
from harness import Fjord, check, finish

LOCKER = "fjord-test-locker"
QUERY_TIMEOUT_S = 2


def fjord_waiting(f):
    """fjord's sessions whose statement is active and waiting for a lock."""
    return f.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'fjord' AND state = 'active' "
                   "AND wait_event_type = 'Lock'")[0][0]


def hold_lock(f):
    """A psql session (application_name LOCKER) holding clusters locked for up to 30 s."""
    pg = harness.pg_server()
    db = f.db.rsplit("/", 1)[1]
    env = dict(os.environ, PGAPPNAME=LOCKER)
    p = subprocess.Popen(["psql", "-X", "-q", "-d", pg.url(db), "-c",
                          "BEGIN; LOCK TABLE clusters IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(30); COMMIT;"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if f.query("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                   "WHERE a.application_name = ? AND l.mode = 'AccessExclusiveLock' AND l.granted", LOCKER)[0][0]:
            return p
        time.sleep(0.1)
    p.kill()
    p.wait()
    raise harness.Failure("the locking session did not get its lock")


def release_lock(f, p):
    f.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ?", LOCKER)
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def send_read(f, token):
    s = socket.create_connection(("127.0.0.1", f.port), timeout=10)
    s.sendall(b"GET /api/v1/jobs?cluster=c1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token.encode() +
              b"\r\n\r\n")
    return s


def wait_for(cond, limit_s):
    """Seconds until cond() held, or None after limit_s."""
    t0 = time.time()
    while time.time() - t0 < limit_s:
        if cond():
            return time.time() - t0
        time.sleep(0.05)
    return None


def client_gone(f, token):
    p = hold_lock(f)
    try:
        s = send_read(f, token)
        waited = wait_for(lambda: fjord_waiting(f) >= 1, 3)
        check(waited is not None, "the read waits inside PostgreSQL on the lock (pg_stat_activity)")
        time.sleep(0.5)
        s.close()
        stopped = wait_for(lambda: fjord_waiting(f) == 0, 3)
        print("client left: fjord's statement ended %s s later" % ("%.2f" % stopped if stopped is not None else "no"))
        check(stopped is not None and stopped < 1.0,
              "the statement of a read whose client left is stopped within 1 s (%s)" % stopped)
    finally:
        release_lock(f, p)


def past_deadline(f, token):
    p = hold_lock(f)
    try:
        t0 = time.time()
        c = http.client.HTTPConnection("127.0.0.1", f.port, timeout=30)
        c.request("GET", "/api/v1/jobs?cluster=c1", headers={"Authorization": "Bearer " + token})
        r = c.getresponse()
        body = r.read().decode()
        took = time.time() - t0
        c.close()
        print("a read past query-timeout (%d s): %d in %.2f s: %s" % (QUERY_TIMEOUT_S, r.status, took, body[:200]))
        check(r.status == 503 and '"query_timeout"' in body and '"path":"query-timeout"' in body,
              "a waiting read past its deadline is answered the deadline error (%d %s)" % (r.status, body[:200]))
        check(took < QUERY_TIMEOUT_S + 1.0, "within a second of its deadline (%.2f s), before lock_timeout" % took)
        check(fjord_waiting(f) == 0, "and no statement of fjord's waits on after it")
    finally:
        release_lock(f, p)


def sigterm_while_waiting(f, token):
    """The drain stops a statement in flight: fjord exits at once, not when lock_timeout ends it."""
    p = hold_lock(f)
    try:
        s = send_read(f, token)
        check(wait_for(lambda: fjord_waiting(f) >= 1, 3) is not None, "a read waits inside PostgreSQL again")
        t0 = time.time()
        rc = f.stop()
        took = time.time() - t0
        s.close()
        print("SIGTERM with a read waiting inside PostgreSQL: exit %d in %.2f s" % (rc, took))
        check(rc == 0 and took < 2.0, "fjord drains and exits 0 within 2 s (%d, %.2f s)" % (rc, took))
    finally:
        release_lock(f, p)


def counter(f, token, name, label):
    r = f.get("/metrics", auth=("reader", token))
    for line in r.body.splitlines():
        if line.startswith('%s{%s}' % (name, label)):
            return float(line.split()[1])
    return None


def main():
    f = Fjord("--query-timeout", str(QUERY_TIMEOUT_S))
    c1 = f.token("c1")
    reader = f.token("reader", "--read-only")
    try:
        f.start()
        r = f.post("/api/write?cluster=c1", "m,cluster=c1,hostname=h1 value=1 1700000000\n", auth=("c1", c1),
                   headers={"Content-Type": "text/plain"})
        check(r.status in (200, 204), "c1 exists (%d)" % r.status)
        client_gone(f, reader)
        r = f.get("/api/v1/jobs?cluster=c1", auth=("reader", reader))
        # c1 has metrics only, no Sonar data: the query API answers 404 for it, from the database
        check(r.status == 404 and "no data for cluster" in r.body,
              "reads are answered again once the lock is gone (%d %s)" % (r.status, r.body[:200]))
        past_deadline(f, reader)
        gone = counter(f, reader, "fjord_reads_cancelled_total", 'reason="client_gone"')
        late = counter(f, reader, "fjord_reads_cancelled_total", 'reason="deadline"')
        check(gone is not None and gone >= 1 and late is not None and late >= 1,
              "/metrics counts the read cancelled for its client and the one for its deadline (%s, %s)" % (gone, late))
        sigterm_while_waiting(f, reader)
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    if not harness.PG:
        print("PostgreSQL only: run with FJ_TEST_DB=postgres (skipped)")
        sys.exit(77)
    main()
