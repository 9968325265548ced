"""The SQLite file across fjord versions. Migrations that fill new columns from rows already stored
must fill them as the writer would have: the real Sonar envelopes are stored by a running fjord, the columns a migration adds
are dropped again (the database as an older fjord left it), `fjord migrate up` runs, and the rows
and the answers that read them must be the same as before.

Migration 0007 copies each job_samples row's node, time and process range (from samples and
sample_jobs) into the row; job profiles and job details read them. `fjord migrate compact` turns a
file made before incremental vacuum into one that gives freed pages back."""
import json
import sqlite3

from api_common import Api
from harness import check, finish, run_cli
from test_job_cpu_migrate import LATER

PLACE = ("node_id", "time", "proc_first", "n_procs")


def answers(api, jobs):
    """What the reads that use job_samples answer, per job: detail, profile, profile by host."""
    out = {}
    for cluster, jid in jobs:
        q = "cluster=%s" % cluster
        out[(cluster, jid)] = (
            api.get("/api/v1/jobs/%d?%s" % (jid, q)).body,
            api.get("/api/v1/jobs/%d/profile?%s&bucket=60" % (jid, q)).body,
            api.get("/api/v1/jobs/%d/profile?%s&by=host" % (jid, q)).body,
        )
    return out


def job_samples(db):
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT rjob_id, sample_id, %s FROM job_samples ORDER BY 1, 2" % ", ".join(PLACE)).fetchall()
    finally:
        con.close()


def test_job_samples_place():
    api = Api()
    f = api.f
    try:
        clusters = [c["cluster"] for c in api.json("/api/v1/clusters").get("clusters", [])]
        jobs = []
        for c in clusters:
            doc = api.json("/api/v1/jobs?cluster=%s&limit=1000" % c)
            jobs += [(c, j["id"], j["job"]) for j in doc.get("jobs", [])]
        check(len(jobs) >= 20, "enough jobs to compare: %d" % len(jobs))
        check({j[2] == 0 for j in jobs} == {True, False}, "jobs of processes (job 0) and batch jobs both")
        jobs = [j[:2] for j in jobs]
        before = answers(api, jobs)
        profiles = sum(1 for a in before.values() if json.loads(a[1]).get("profile"))
        check(profiles >= 10, "profiles with series: %d" % profiles)
        check(f.stop() == 0, "SIGTERM exits 0")

        stored = job_samples(f.db)
        check(len(stored) > 100, "job_samples rows: %d" % len(stored))
        check(all(r[2] is not None and r[3] is not None and r[5] is not None for r in stored),
              "the writer fills node, time and process count in every row")
        check(any(r[4] is not None for r in stored), "and the process range where there are processes")
        # The writer's values are the sample's and its sample_jobs row's.
        con = sqlite3.connect(f.db)
        wrong = con.execute(
            "SELECT count(*) FROM job_samples js JOIN samples s ON s.id = js.sample_id"
            " JOIN jobs j ON j.id = js.rjob_id"
            " JOIN sample_jobs sj ON sj.sample_id = js.sample_id AND sj.job = j.job AND sj.epoch = j.epoch"
            " WHERE js.node_id IS NOT s.node_id OR js.time IS NOT s.time"
            " OR js.proc_first IS NOT sj.proc_first OR js.n_procs IS NOT sj.n_procs").fetchone()[0]
        check(wrong == 0, "rows whose place differs from their sample's: %d" % wrong)
        version = con.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
        con.close()
        check(version >= 7, "schema version %d" % version)

        # The database as fjord left it before 0007 (and any later migration: 0008's index on
        # job_samples names node_id and time; 0009 retention's columns; 0010's job_activity and
        # 0011's job_gpu_activity, their triggers and index, which name job_samples' columns too;
        # 0012's jobs.last_day; 0013's job_samples key; 0014's stored last_day; 0015's series key
        # index; 0017's view; 0018's alloc_gpus, 0019's energy_mj, 0020's field types, 0021's load_daily: LATER undoes
        # them first).
        # job_activity as readers see it (0017's view: last_time from job_samples while they exist)
        activity = con_rows(f.db, "SELECT * FROM job_activity_now ORDER BY rjob_id, node_id")
        check(len(activity) > 10, "job_activity rows written by the writer: %d" % len(activity))
        cards = con_rows(f.db, "SELECT * FROM job_gpu_activity ORDER BY rjob_id, node_id, card")
        check(len(cards) > 10 and any(c[5] > 0 for c in cards),
              "job_gpu_activity rows written by the triggers, cards used: %s" % cards[:4])
        # the triggers' rows against the raw rows, read another way: per process, not per node-sample
        truth = con_rows(f.db, "SELECT js.rjob_id, js.node_id, g.idx, min(js.time), max(js.time)"
                         " FROM job_samples js JOIN jobs j ON j.id = js.rjob_id"
                         " JOIN sample_jobs sj ON sj.sample_id = js.sample_id AND sj.job = j.job AND sj.epoch = j.epoch"
                         " JOIN sample_proc_gpus g ON g.proc_id BETWEEN sj.proc_first AND sj.proc_first + sj.n_procs - 1"
                         " WHERE j.job <> 0 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3")
        check([c[:5] for c in cards] == truth, "job_gpu_activity: the cards and times of the raw rows")
        daily = con_rows(f.db, "SELECT * FROM load_daily ORDER BY node_id, day")
        check(len(daily) > 0, "the writer kept daily load roll-ups")
        f.execute(LATER["sqlite"])
        f.execute("DROP INDEX job_samples_time; DROP TABLE job_cpu_todo;"
                  "ALTER TABLE job_samples DROP COLUMN cpu_win_m; ALTER TABLE jobs DROP COLUMN cpu_win_peak_m;" +
                  "".join("ALTER TABLE job_samples DROP COLUMN %s;" % c for c in PLACE) +
                  "DELETE FROM schema_migrations WHERE version >= 7;")
        r = run_cli("serve", "--db", f.db, "--listen", "127.0.0.1:0", check_rc=False)
        check(r.returncode != 0 and "fjord migrate up" in r.stderr, "the older schema is refused: %r" % r.stderr[-200:])
        out = run_cli("migrate", "up", db=f.db).stdout
        check("applied 15 migrations" in out, "migrate up applies 0007 to 0021: %r" % out)
        check(job_samples(f.db) == stored, "the migration fills job_samples as the writer did")
        again = con_rows(f.db, "SELECT * FROM load_daily ORDER BY node_id, day")
        check(len(again) == len(daily) and all(a[:2] == b[:2] and all(abs(x - y) <= 1e-9 * max(1, abs(y))
                                                                     for x, y in zip(a[2:], b[2:]))
                                               for a, b in zip(again, daily)),
              "0021 fills load_daily from load_hourly as the writer did: %s" % sorted(set(again) ^ set(daily))[:4])
        refilled = con_rows(f.db, "SELECT * FROM job_activity_now ORDER BY rjob_id, node_id")
        check(refilled == activity, "0010 fills job_activity from job_samples as the writer did: %s" %
              sorted(set(refilled) ^ set(activity))[:6])
        refilled = con_rows(f.db, "SELECT * FROM job_gpu_activity ORDER BY rjob_id, node_id, card")
        check(refilled == cards, "0011 fills job_gpu_activity from the raw rows as the triggers did: %s" %
              sorted(set(refilled) ^ set(cards))[:6])

        f.start()
        after = answers(api, jobs)
        same = sum(1 for k in jobs if after[k] == before[k])
        check(same == len(jobs), "answers unchanged after the migration: %d of %d" % (same, len(jobs)))
    finally:
        api.close()


def con_rows(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def pragma(db, name):
    con = sqlite3.connect(db)
    try:
        return con.execute("PRAGMA %s" % name).fetchone()[0]
    finally:
        con.close()


def test_compact():
    """`fjord migrate compact` on a file made before incremental vacuum (auto_vacuum NONE, as such a
    fjord left it) with free pages: rewritten once, smaller, the same rows, and incremental from
    then on; a second run only releases free pages."""
    api = Api()
    f = api.f
    try:
        check(f.stop() == 0, "SIGTERM exits 0")
        counts = f.row_counts()
        # The older file: no auto_vacuum, and pages freed by a deleted table (as a trimmed request
        # log leaves them).
        con = sqlite3.connect(f.db)
        con.execute("PRAGMA auto_vacuum=NONE")
        con.execute("VACUUM")
        con.execute("CREATE TABLE scratch (b BLOB)")
        con.executemany("INSERT INTO scratch VALUES (zeroblob(4000))", [()] * 2000)
        con.commit()
        con.execute("DROP TABLE scratch")
        con.commit()
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        check(pragma(f.db, "auto_vacuum") == 0, "the older file has no auto_vacuum")
        free = pragma(f.db, "freelist_count")
        check(free > 1500, "and free pages: %d" % free)

        out = run_cli("migrate", "compact", db=f.db).stdout
        check(out.startswith("rewritten:"), "compact rewrites the older file: %r" % out)
        before, after = [int(w) for w in out.replace(",", " ").split() if w.isdigit()][:2]
        check(after < before - 1500 * 4096, "the file shrank by the free pages: %d -> %d" % (before, after))
        check(pragma(f.db, "auto_vacuum") == 2, "auto_vacuum is INCREMENTAL after compact")
        check(pragma(f.db, "freelist_count") == 0, "no free pages left")
        check(f.row_counts() == counts, "every table keeps its rows")

        out = run_cli("migrate", "compact", db=f.db).stdout
        check(out.startswith("free pages released:"), "a second compact only releases pages: %r" % out)
        f.start()
        check(api.json("/api/v1/jobs?cluster=test.local").get("jobs"), "the server reads the compacted file")
    finally:
        api.close()


if __name__ == "__main__":
    test_job_samples_place()
    test_compact()
    finish()
