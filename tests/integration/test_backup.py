"""`fjord backup DEST` copies a running SQLite database: the copy opens, passes integrity_check
and holds every sample acknowledged before the backup began, while ingest goes on beside it."""
import json
import os
import sqlite3
import threading
import time

from harness import Fjord, SHARED, PG, check, finish, run_cli

SAMPLE = os.path.join(SHARED, "data", "sonar", "real", "0+sample-ml1.hpc.uio.no.json")
CLUSTER = "mlx.hpc.uio.no"


def envelope(template, minute):
    """The real sample with its time moved, so each one is a new row."""
    env = json.loads(json.dumps(template))
    env["data"]["attributes"]["time"] = "2025-11-25T%02d:%02d:00Z" % (minute // 60, minute % 60)
    return json.dumps(env)


def test_backup_while_ingesting():
    template = json.load(open(SAMPLE))
    f = Fjord().start()
    try:
        secret = f.token(CLUSTER)
        acked = []  # minutes whose envelope was answered 2xx, in order
        stop = threading.Event()

        def ingest():
            minute = 0
            while not stop.is_set() and minute < 1440:
                r = f.post("/api/v1/insert/sample", envelope(template, minute), auth=(CLUSTER, secret))
                if r.status // 100 == 2:
                    acked.append(minute)
                minute += 1

        t = threading.Thread(target=ingest)
        t.start()
        deadline = time.time() + 20
        while len(acked) < 50 and time.time() < deadline:
            time.sleep(0.02)
        before = list(acked)  # acknowledged before the backup began
        dest = os.path.join(f.tmp, "backup.db")
        r = run_cli("backup", dest, db=f.db, check_rc=False)
        during = len(acked)
        time.sleep(0.2)
        stop.set()
        t.join(timeout=60)
        check(r.returncode == 0 and "consistent" in r.stdout, "backup succeeds: %r %r" % (r.stdout, r.stderr))
        check(len(acked) > during or during > len(before), "ingest went on while the backup ran (%d, %d, %d)"
              % (len(before), during, len(acked)))
        copy = sqlite3.connect(dest)
        check(copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "the copy passes integrity_check")
        times = {row[0] for row in copy.execute("SELECT time FROM samples")}
        missing = [m for m in before if (1764028800 + m * 60) not in times]
        check(len(before) >= 50 and not missing,
              "every sample acknowledged before the backup is in the copy (%d acked, missing %r)"
              % (len(before), missing[:5]))
        check(copy.execute("SELECT count(*) FROM tokens").fetchone()[0] == 1, "credentials are in the copy")
        copy.close()
        # The copy is a working fjord database: a server starts on it and answers from it.
        g = Fjord(db=dest, tmp=f.tmp).start()
        r = g.get("/api/v1/jobs?cluster=" + CLUSTER, auth=(CLUSTER, secret))
        check(r.status == 200 and json.loads(r.body), "a server on the restored copy answers: %d" % r.status)
        g.stop()
        r = run_cli("backup", dest, db=f.db, check_rc=False)
        check(r.returncode != 0 and "exists" in r.stderr, "an existing file is never overwritten: %r" % r.stderr)
        check(not os.path.exists(dest + ".partial"), "no partial file left behind")
    finally:
        f.cleanup()


def test_backup_postgres_refused():
    f = Fjord()
    try:
        run_cli("migrate", "up", db=f.db)
        r = run_cli("backup", os.path.join(f.tmp, "x.db"), db=f.db, check_rc=False)
        check(r.returncode == 1 and "pg_dump" in r.stderr, "PostgreSQL is pointed to its own tools: %r" % r.stderr)
    finally:
        f.cleanup()


if PG:
    test_backup_postgres_refused()
else:
    test_backup_while_ingesting()
finish()
