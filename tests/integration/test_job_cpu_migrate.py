"""Job CPU on a database an older fjord left (SQLite migration 0008, PostgreSQL 0005): synthetic
series are stored by a running fjord, then the database is put back as the older fjord left it
(no new columns, index or backfill list; every node-sample's CPU the sum of its processes'
cpu_util, the job's cpu_avg and cpu_peak from those), one job's raw process rows are deleted (as
retention would), and `fjord migrate up` runs: the jobs with raw rows get the figures the writer
gives (the synthetic truth), the job without keeps its stored ones."""
import random

from harness import Fjord, check, finish, run_cli
from pg_older import undo_jobs_last_day, undo_sample_job_sets
from test_job_cpu import N, STEP, T0, Series, envelopes_for, job_row, post_all, profile

PG_VERSION, SQLITE_VERSION = 5, 8


# What the later migrations added, latest first, undone so that the rewind below can apply them
# again: the daily load roll-ups (SQLite 0021, PostgreSQL 0018), field types (SQLite 0020, PostgreSQL 0017),
# sample_gpus.energy_mj (SQLite 0019, PostgreSQL 0016), slurm_jobs_current.alloc_gpus (SQLite 0018, PostgreSQL 0015),
# SQLite's series key index (0013), SQLite's jobs.last_day (0012; PostgreSQL's 0013 is undone in to_older), job_gpu_activity and its triggers (SQLite 0011, PostgreSQL 0010 and 0011), job_activity and its
# triggers (SQLite 0010, PostgreSQL 0009), then retention (SQLite 0009, PostgreSQL 0007). PostgreSQL's 0008 (process sets) is undone in to_older.
LATER = {
    "pg": "DROP TABLE load_daily;"  # 0018
          "DROP TABLE ts_strings, ts_string_chunk; ALTER TABLE ts_series DROP COLUMN ftype;"  # 0017
          "ALTER TABLE sample_gpus DROP COLUMN energy_mj;"  # 0016
          "ALTER TABLE slurm_jobs_current DROP COLUMN alloc_gpus;"  # 0015
          "DROP VIEW job_activity_now;"  # 0014
          "DROP TRIGGER job_gpu_activity_insert ON job_samples; DROP TRIGGER job_gpu_activity_move ON job_samples;"
          "DROP TRIGGER job_gpu_activity_job_gone ON jobs; DROP FUNCTION fj_job_gpu_activity_note();"
          "DROP FUNCTION fj_job_gpu_activity_job_gone(); DROP FUNCTION fj_job_gpu_activity_note_rows();"
          "DROP TABLE job_gpu_activity;"
          "DROP TRIGGER job_activity_insert ON job_samples; DROP TRIGGER job_activity_update ON job_samples;"
          "DROP TRIGGER job_activity_job_gone ON jobs; DROP FUNCTION fj_job_activity_note();"
          "DROP FUNCTION fj_job_activity_job_gone(); DROP FUNCTION fj_job_activity_note_rows();"
          "DROP TABLE job_activity; DROP INDEX jobs_last_seen;"
          "DROP TABLE retention_marks; DROP INDEX job_hosts_usage_todo, slurm_jobs_current_time;"
          "ALTER TABLE job_hosts DROP COLUMN usage_kept, DROP COLUMN cpu_time_s, DROP COLUMN read_kb,"
          " DROP COLUMN written_kb; DROP FUNCTION fj_drop_partitions_by;",
    # 0018's column and 0017 undone first, then 0015 (the series index of before), then 0013: job_samples keyed by (rjob_id,
    # sample_id) again, with its time index (the
    # triggers on it go with the table and are not made again: 0010 and 0011 are undone next)
    # 0017's view first (it names job_samples)
    "sqlite": "DROP TABLE load_daily;"  # 0021
              "DROP TABLE ts_strings; DROP TABLE ts_string_chunk; ALTER TABLE ts_series DROP COLUMN ftype;"  # 0020
              "ALTER TABLE sample_gpus DROP COLUMN energy_mj;"  # 0019
              "ALTER TABLE slurm_jobs_current DROP COLUMN alloc_gpus;"  # 0018
              "DROP VIEW job_activity_now; DROP INDEX ts_series_key; CREATE INDEX ts_series_host ON ts_series(cluster, host, metric);"
              "CREATE TABLE job_samples_old (rjob_id INTEGER NOT NULL, sample_id INTEGER NOT NULL,"
              " nproc INTEGER NOT NULL, cpu_m INTEGER NOT NULL, mem_kb INTEGER NOT NULL, gpu_m INTEGER NOT NULL,"
              " gpumem_kb INTEGER NOT NULL, node_id INTEGER, time INTEGER, proc_first INTEGER, n_procs INTEGER,"
              " cpu_win_m INTEGER, PRIMARY KEY (rjob_id, sample_id)) WITHOUT ROWID;"
              "INSERT INTO job_samples_old SELECT * FROM job_samples; DROP TABLE job_samples;"
              "ALTER TABLE job_samples_old RENAME TO job_samples;"
              "CREATE INDEX job_samples_time ON job_samples (rjob_id, node_id, time);"
              # 0014 undone: jobs_last_seen again, last_day no longer indexed
              "DROP INDEX jobs_last_day; CREATE INDEX jobs_last_seen ON jobs (cluster_id, last_seen);"
              "ALTER TABLE jobs DROP COLUMN last_day;"
              "DROP TRIGGER job_gpu_activity_job_gone; DROP TABLE job_gpu_activity;"
              "DROP TRIGGER job_activity_job_gone;"
              "DROP TABLE job_activity; DROP INDEX jobs_last_seen;"
              "DROP TABLE retention_marks; DROP INDEX job_hosts_usage_todo; DROP INDEX slurm_jobs_current_time;"
              "ALTER TABLE job_hosts DROP COLUMN usage_kept; ALTER TABLE job_hosts DROP COLUMN cpu_time_s;"
              "ALTER TABLE job_hosts DROP COLUMN read_kb; ALTER TABLE job_hosts DROP COLUMN written_kb;",
}


def to_older(f, pg):
    """The schema and figures of the fjord before job CPU from cpu_time."""
    if pg:
        undo_jobs_last_day(f)  # PostgreSQL 0013
        undo_sample_job_sets(f)  # PostgreSQL 0012
    f.execute(LATER["pg" if pg else "sqlite"])
    if pg:
        # before 0008 a process was a row of the table sample_procs (now a view over sample_proc_sets)
        f.execute(
            "DROP VIEW v_processes; CREATE TABLE sample_procs_rows AS SELECT * FROM sample_procs;"
            "DROP VIEW sample_procs; DROP TABLE sample_proc_sets;"
            "ALTER TABLE sample_procs_rows RENAME TO sample_procs; ALTER TABLE jobs RESET (fillfactor)")
        f.execute(
            "DROP TABLE job_cpu_todo; ALTER TABLE job_samples DROP COLUMN cpu_win_m;"
            "ALTER TABLE jobs DROP COLUMN cpu_win_peak_m;"
            "UPDATE job_samples js SET cpu_m = (SELECT coalesce(sum(p.cpu_util_m), 0) FROM sample_procs p"
            " JOIN jobs j ON j.id = js.rjob_id WHERE p.node_id = js.node_id AND p.time = js.time"
            " AND p.job = j.job AND p.epoch = j.epoch);"
            "DELETE FROM schema_migrations WHERE version >= %d;" % PG_VERSION)
    else:
        f.execute(
            "DROP INDEX job_samples_time; DROP TABLE job_cpu_todo; ALTER TABLE job_samples DROP COLUMN cpu_win_m;"
            "ALTER TABLE jobs DROP COLUMN cpu_win_peak_m;"
            "UPDATE job_samples SET cpu_m = (SELECT coalesce(sum(p.cpu_util_m), 0) FROM sample_procs p"
            " WHERE p.id >= job_samples.proc_first AND p.id < job_samples.proc_first + job_samples.n_procs);"
            "DELETE FROM schema_migrations WHERE version >= %d;" % SQLITE_VERSION)
    f.execute("UPDATE jobs SET cpu_sum_m = (SELECT sum(cpu_m) FROM job_samples WHERE rjob_id = jobs.id),"
              " cpu_peak_m = (SELECT max(cpu_m) FROM job_samples WHERE rjob_id = jobs.id)")


def expire_raw_rows(f, pg, rjob):
    if pg:
        f.execute("DELETE FROM sample_procs p USING jobs j, job_samples js WHERE j.id = %d AND js.rjob_id = j.id"
                  " AND p.node_id = js.node_id AND p.time = js.time AND p.job = j.job AND p.epoch = j.epoch" % rjob)
        # (to_older left sample_procs a table; migrate up then packs what is left into sample_proc_sets)
    else:
        f.execute("DELETE FROM sample_procs WHERE id IN (SELECT p.id FROM job_samples js JOIN sample_procs p"
                  " ON p.id >= js.proc_first AND p.id < js.proc_first + js.n_procs WHERE js.rjob_id = %d)" % rjob)


def main():
    f = Fjord()
    try:
        pg = f.db.startswith("postgres")
        tok = f.token("cpu.test")
        reader = f.token("reader", "--read-only")
        f.start()
        rng = random.Random(7)
        times = [T0 + STEP * k for k in range(N)]
        post_all(f, tok, envelopes_for("n1", 201, [Series(100, 1, "busy", 0.485, T0)], times, rng))
        post_all(f, tok, envelopes_for("n2", 202, [Series(100, 1, "busy", 0.737, T0)], times, rng))
        new = {j: job_row(f, reader, j) for j in (201, 202)}
        new_profile = profile(f, reader, new[201]["id"], "process")
        check(abs(new[201]["cpu_avg"] - 48.5) < 0.485, "the writer's figure is the truth: %s" % new[201])
        check(f.stop() == 0, "SIGTERM exits 0")

        to_older(f, pg)
        expire_raw_rows(f, pg, new[202]["id"])
        r = run_cli("serve", "--db", f.db, "--listen", "127.0.0.1:0", check_rc=False)
        check(r.returncode != 0 and "fjord migrate up" in r.stderr, "the older schema is refused: %r" % r.stderr[-200:])
        old_202 = f.query("SELECT cpu_sum_m, cpu_peak_m, n_samples FROM jobs WHERE id = ?", new[202]["id"])[0]
        old_201 = f.query("SELECT cpu_sum_m, n_samples FROM jobs WHERE id = ?", new[201]["id"])[0]
        check(abs(old_201[0] / 1000.0 / old_201[1] - 48.5) > 2, "the older figure is off: %s" % (old_201,))

        out = run_cli("migrate", "up", db=f.db).stdout
        # the job CPU migration and any later one (the rewind deleted them all)
        check("applied " in out and "up to date" in out, "migrate up applies the job CPU migration: %r" % out)
        check(f.query("SELECT count(*) FROM job_cpu_todo")[0][0] == 0, "the backfill is done")
        f.start()
        got = job_row(f, reader, 201)
        for k in ("cpu_avg", "cpu_peak"):
            check(got.get(k) == new[201].get(k), "job 201 %s after the migration: %s, writer %s"
                  % (k, got.get(k), new[201].get(k)))
        check(profile(f, reader, new[201]["id"], "process") == new_profile, "profile as the writer's")
        kept = f.query("SELECT cpu_sum_m, cpu_peak_m, n_samples FROM jobs WHERE id = ?", new[202]["id"])[0]
        check(kept == old_202, "job 202 (raw rows expired) keeps its figures: %s, before %s" % (kept, old_202))
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
