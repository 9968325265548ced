"""jobs.last_day, the day of a job's latest sample (SQLite migration 0012, PostgreSQL 0013): the
job list and the problem-jobs report find a window's jobs through it, and on PostgreSQL a job's
row is updated in place (HOT) at its samples of one day.

- Node h-late samples the real ml1 envelope every minute until 23:59 of a day, node h-next
  until 00:09 of the next: a window from 00:00 of the next day lists h-next's jobs and not
  h-late's; from 23:59, both; from 23:59:01, h-next's only (the problem-jobs report's window is
  written the same way: tests/integration/test_api_problems.py).
- Every job row's last_day is its last_seen / 86400.
- PostgreSQL: of the updates of jobs in those samples, at least 80 % were HOT (read from
  pg_stat_user_tables once the writer's statistics arrive; 93 % measured, none before 0013): no
  indexed column changes within a day.
"""
import datetime
import json
import os
import time

from harness import Fjord, check, finish
from test_postgres import SAMPLE, CLUSTER

DAY = 86400
MIDNIGHT = int(datetime.datetime(2026, 3, 3, tzinfo=datetime.timezone.utc).timestamp())
N_SAMPLES = 10


def sample(template, node, t):
    env = json.loads(template)
    a = env["data"]["attributes"]
    a["node"] = node
    a["time"] = datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return json.dumps(env)


def main():
    pg = os.environ.get("FJ_TEST_DB", "").startswith("postgres")
    template = open(SAMPLE).read()
    f = Fjord()
    secret = f.token(CLUSTER)
    reader = f.token("reader", "--read-only")
    f.start()
    try:
        auth = (CLUSTER, secret)
        # h-late: 23:50 .. 23:59; h-next: 00:00 .. 00:09 of the next day, after 23:59 of this one
        for i in range(N_SAMPLES):
            for node, t in (("h-late", MIDNIGHT - 600 + 60 * i), ("h-next", MIDNIGHT + 60 * i)):
                r = f.post("/api/v1/ingest/sonar", sample(template, node, t), auth=auth)
                check(r.status == 200, "sample of %s at %d: %d %s" % (node, t, r.status, r.body[:200]))
        rows = f.query("SELECT last_seen, last_day FROM jobs")
        check(len(rows) > 10, "jobs stored: %d" % len(rows))
        wrong = [r for r in rows if r[1] != r[0] // DAY]
        check(not wrong, "last_day is last_seen / 86400: %s" % wrong[:4])

        if pg:
            upd = hot = 0
            for _ in range(60):  # a backend sends its statistics when idle, within about 10 s
                upd, hot = f.query("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'jobs'")[0]
                if upd >= (N_SAMPLES - 1) * len(rows):
                    break
                time.sleep(0.5)
            check(upd >= (N_SAMPLES - 1) * len(rows), "updates of jobs counted: %d" % upd)
            # with the index on last_seen (before 0013) none was; a full page forces a few
            check(hot >= 0.8 * upd, "updates of jobs in place (HOT): %d of %d" % (hot, upd))
        r = f.post("/api/v1/ingest/sonar", sample(template, "h-next", MIDNIGHT - 60), auth=auth)
        check(r.status == 200, "h-next's sample before midnight: %d" % r.status)

        def hosts(frm):
            r = f.get("/api/v1/jobs?cluster=%s&from=%d&limit=100000" % (CLUSTER, frm), auth=("reader", reader))
            check(r.status == 200, "job list from %d: %d %s" % (frm, r.status, r.body[:200]))
            return sorted({h for j in r.json().get("jobs", []) for h in j.get("hosts", [])})

        check(hosts(MIDNIGHT) == ["h-next"], "from midnight: only h-next's jobs: %s" % hosts(MIDNIGHT))
        check(hosts(MIDNIGHT - 60) == ["h-late", "h-next"], "from 23:59: both nodes' jobs: %s" % hosts(MIDNIGHT - 60))
        check(hosts(MIDNIGHT - 59) == ["h-next"], "from 23:59:01: only h-next's jobs: %s" % hosts(MIDNIGHT - 59))
    finally:
        f.stop()
    finish()


if __name__ == "__main__":
    main()
