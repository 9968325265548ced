#!/usr/bin/env python3
"""fjord-push's derived figures against an independently computed truth (no fjord server needed).

- cpu_time: a real process here forks a child that burns over a second of CPU, reaps it, then burns
  until its own CPU time is 0.6-0.8 s past a whole second and waits. Its /proc/PID/stat is the
  truth: cpu_time must be its own utime+stime with the reaped child's time (cutime+cstime, which
  the kernel has added to the parent) rounded to the nearest second, as Sonar computes it; the
  envelope's meta.version (0.2 or later) tells the server so.
- gpu_util: with the fake NVML answering as the H100's driver 580 was measured to (it names 72
  entries and writes one sample), the process's SM utilisation and GPU memory reach the envelope.
Every child process is ended by its PID; every run is bounded in time."""
import json
import os
import subprocess
import sys
import time

from harness import SOURCE, check, finish

PUSH = os.environ.get("FJORD_PUSH_BIN", "build/pusher/fjord-push")
FAKE = os.environ.get("FJ_FAKE_NVML_LIB", "build/pusher/fake_nvml/libnvidia-ml.so.1")
ROOT = os.path.join(SOURCE, "tests", "data", "pusher", "node-x86")
TCK = os.sysconf("SC_CLK_TCK")

# The process under test: prints its pid once its figures are settled, then sleeps on stdin.
WORKER = r"""
import os, sys, time
def fields():
    return open('/proc/self/stat').read().rsplit(')', 1)[1].split()
def own():
    f = fields()
    return int(f[11]) + int(f[12])          # utime, stime (fields 14, 15)
def kids():
    f = fields()
    return int(f[13]) + int(f[14])          # cutime, cstime (fields 16, 17)
tck = os.sysconf('SC_CLK_TCK')
child = os.fork()
if child == 0:
    t = time.process_time()
    while time.process_time() - t < 1.3:
        pass
    os._exit(0)
os.waitpid(child, 0)                          # reaped: its time is now in our cutime/cstime
while not (0.6 * tck <= (own() + kids()) % tck < 0.8 * tck):
    pass
print(os.getpid(), flush=True)
sys.stdin.read()
"""


def stat_times(pid):
    """(own ticks, reaped children's ticks) from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def run_push(*args, env=None):
    cmd = [PUSH, "--once", "--stdout", "--only", "sample", "--fake-time", str(int(time.time()))] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)


def processes(out):
    """Every process record of the sample envelope printed by --stdout."""
    for line in out.splitlines():
        doc = json.loads(line)
        if doc.get("data", {}).get("type") == "sample":
            for job in doc["data"]["attributes"].get("jobs", []):
                yield from job.get("processes", [])


def test_cpu_time_includes_reaped_children():
    w = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pid = int(w.stdout.readline())
        for attempt in range(3):
            before = stat_times(pid)
            r = run_push("--processes", "all", "--nvml-library", "none", "--no-amd")
            after = stat_times(pid)
            if before == after:  # nothing ran in between, so /proc and fjord-push saw the same counters
                break
        check(r.returncode == 0, "fjord-push --once --stdout: rc %d, %s" % (r.returncode, r.stderr[-400:]))
        own, children = before
        check(before == after, "the worker's CPU times settled: %r then %r" % (before, after))
        check(children >= TCK, "the reaped child's time is in the parent's cutime+cstime: %d ticks" % children)
        recs = [p for p in processes(r.stdout) if p["pid"] == pid]
        check(len(recs) == 1, "the worker %d is in the sample once" % pid)
        if recs:
            got = recs[0]["cpu_time"]
            want = (own + children + TCK // 2) // TCK
            check(got == want, "cpu_time %d == utime+stime+cutime+cstime %d ticks rounded (%d)"
                  % (got, own + children, want))
            check(got >= (own + TCK // 2) // TCK + 1, "cpu_time %d holds the reaped child's %d ticks" % (got, children))
            check(got == (own + children) // TCK + 1, "cpu_time %d is rounded, not truncated (%d ticks)"
                  % (got, own + children))
        metas = [json.loads(l)["meta"] for l in r.stdout.splitlines() if '"sample"' in l]
        check(metas and metas[0].get("producer") == "fjord-push" and
              tuple(int(x) for x in metas[0].get("version", "0.0").split(".")[:2]) >= (0, 2),
              "the envelope says fjord-push 0.2 or later (children's time in cpu_time): %r" % metas[:1])
    finally:
        w.kill()
        w.wait(timeout=10)


def test_gpu_util_reaches_the_envelope():
    env = dict(os.environ)
    # The measured job: one process at 97 % SM holding 7,110 MiB; a second one idle on the card.
    env["FJ_FAKE_NVML"] = ("gpu uuid=GPU-h100 mem_total=85520809984 util=100;"
                           "proc gpu=0 pid=5000 mem=7455375360 sm=97;"
                           "proc gpu=0 pid=5001 mem=1048576")
    r = run_push("--root", ROOT, "--nvml-library", FAKE, "--no-amd", "--processes", "gpu", env=env)
    check(r.returncode == 0, "fjord-push --once --stdout: rc %d, %s" % (r.returncode, r.stderr[-400:]))
    procs = {p["pid"]: p for p in processes(r.stdout)}
    busy = procs.get(5000, {}).get("gpus", [{}])[0]
    check(busy.get("uuid") == "GPU-h100", "process 5000 is on GPU-h100: %r" % busy)
    check(busy.get("gpu_util") == 97, "gpu_util of the busy process is 97: %r" % busy.get("gpu_util"))
    check(busy.get("gpu_memory") == 7455375360 // 1024, "gpu_memory in KB: %r" % busy.get("gpu_memory"))
    idle = procs.get(5001, {}).get("gpus", [{}])[0]
    check(idle.get("gpu_util") == 0, "the process without a sample is written as 0: %r" % idle)
    check("errors" not in r.stdout, "no GPU errors in the sample: %s" % r.stdout[-300:])


def main():
    test_cpu_time_includes_reaped_children()
    test_gpu_util_reaches_the_envelope()
    finish()


if __name__ == "__main__":
    main()
