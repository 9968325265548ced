#!/usr/bin/env python3
"""Job CPU against /proc, the long forms: every job shape of tests/integration/jobcpu_truth.py
(one steady process, two threads, a parent forking 1 s children, one forking 0.1 s children, a
three-level tree, an idle job) works SECONDS seconds under fjord-push and Sonar's envelopes,
sampled every INTERVAL seconds, against a real fjord of each build given; prints a table of truth
against fjord per shape and producer, and checks the targets of issue 29 (cpu_avg, CPU-seconds and
cpu_time_s within 2 % plus the 1 s of cpu_time's rounding, cpu_peak within 5 % over 120 s windows).

    tests/bench/job_cpu_truth.sh [BASELINE]   (the wrapper: builds a baseline as baseline.sh does)
    tests/bench/job_cpu_truth.py --build build [--build OTHER ...] [--seconds 240] [--interval 10]
                                 [--backend sqlite|postgres] [--one-at-a-time]

The shapes run at the same time unless --one-at-a-time (then one after the other, each with the
cores to itself: six times as long). Exit status 0 whatever the figures: a baseline is expected to
miss the targets; the table says by how much."""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", required=True, help="a build folder with fjord and pusher/fjord-push")
    ap.add_argument("--seconds", type=float, default=240)
    ap.add_argument("--interval", type=int, default=10)
    ap.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--one-at-a-time", action="store_true")
    a = ap.parse_args()
    if a.backend == "postgres":
        os.environ["FJ_TEST_DB"] = "postgres"
    os.environ.setdefault("FJORD_BIN", os.path.join(a.build[0], "fjord"))
    import harness
    import jobcpu_truth
    for build in a.build:
        build = os.path.abspath(build)
        harness.FJORD = os.path.join(build, "fjord")
        jobcpu_truth.PUSH = os.path.join(build, "pusher", "fjord-push")
        version = harness.run_cli("version").stdout.strip()
        f = harness.Fjord()
        try:
            token = f.token(jobcpu_truth.CLUSTER)
            reader = f.token("reader", "--read-only")
            f.start()
            groups = [[s] for s in jobcpu_truth.SHAPES] if a.one_at_a_time else [list(jobcpu_truth.SHAPES)]
            results = []
            for g in groups:
                results += jobcpu_truth.run(g, a.seconds, a.interval, f, token, reader, log=lambda m: None)
        finally:
            f.cleanup()
        print("\n%s (%s), %s, %g s of work, samples every %d s%s:\n" % (
            build, version, a.backend, a.seconds, a.interval, ", one shape at a time" if a.one_at_a_time else ""))
        print(jobcpu_truth.table(results))
        before = harness._checks["failed"]
        for r in results:
            jobcpu_truth.judge(r)
        missed = harness._checks["failed"] - before
        print("targets: %s" % ("all met" if not missed else "%d missed (FAIL lines above)" % missed))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
