"""Job CPU against /proc for real jobs (jobcpu_truth.py has the method): one steady process, a
multi-threaded one, a parent forking 1 s busy children, a parent forking 0.1 s children (most never
sampled), a three-level tree and an idle job, each watched by fjord-push (the daemon, sending
reaped children's time in cpu_time) and by Sonar's envelopes built from /proc, against a real fjord
(SQLite, or PostgreSQL with FJ_TEST_DB=postgres). Short forms (a few seconds of work, 1 s samples):
cpu_avg, the CPU-seconds and cpu_time_s within 2 % of the truth plus 1 s of CPU for cpu_time's
whole-second rounding at the job's two ends (and, for Sonar's forking shapes, 1 s more for the
rule's documented clamp, which weighs as much in so short a run); cpu_peak equals cpu_avg, as no job is 120 s long
(tests/bench/job_cpu_truth.py checks the 120 s windows). Every process is ended by its id."""
import os
import sys

from harness import Fjord, check, finish

PUSH_DEFAULT = os.path.join(os.path.dirname(os.path.abspath(os.environ.get("FJORD_BIN", "build/fjord"))),
                            "pusher", "fjord-push")
if not os.path.exists(os.environ.get("FJORD_PUSH_BIN", PUSH_DEFAULT)):
    # tests/CMakeLists.txt registers this test only where fjord-push is built
    print("FAIL: no fjord-push at %s\n0 passed, 1 failed" % os.environ.get("FJORD_PUSH_BIN", PUSH_DEFAULT))
    sys.exit(1)

import jobcpu_truth  # noqa: E402

SECONDS = float(os.environ.get("FJ_TRUTH_SECONDS", "8"))


def main():
    f = Fjord()
    try:
        token = f.token(jobcpu_truth.CLUSTER)
        reader = f.token("reader", "--read-only")
        f.start()
        results = []
        for shape in jobcpu_truth.SHAPES:  # one at a time: the jobs do not compete for the cores
            results += jobcpu_truth.run([shape], SECONDS, 1, f, token, reader)
        print(jobcpu_truth.table(results))
        check(len(results) == 2 * len(jobcpu_truth.SHAPES), "a result per shape and producer: %d" % len(results))
        for r in results:
            # Sonar's forking shapes: in a few seconds of work the rule's clamp (up to 1 s, once)
            # weighs as much as the rounding; the 4-minute benchmark measures it (+0.3 %)
            forks = r["producer"] == "sonar" and r["shape"] in ("fork1s", "fork01", "tree")
            jobcpu_truth.judge(r, clamp_s=1.0 if forks else 0.0)
        busy = {r["shape"]: r["truth_cpu_s"] for r in results}
        check(busy.get("fork01", 0) > 1.0 and busy.get("tree", 0) > 1.0 and busy.get("idle", 1) < 0.2,
              "the jobs did their work (truth CPU-s %s)" % busy)
        check(f.stop() == 0, "SIGTERM exits 0")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
