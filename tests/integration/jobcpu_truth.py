"""Job CPU against /proc, for real processes: the shared part of test_job_cpu_truth.py (short forms,
in CI) and tests/bench/job_cpu_truth.py (the 4-minute forms).

One run starts a real fjord (harness.Fjord), one job per shape (a Python process in a new process
group: its group id is the job id), and three observers of those jobs, each on its own thread:
- the truth: every TRUTH_STEP s the sum of utime+stime+cutime+cstime over the live processes of
  each job's process group, read from /proc/PID/stat here;
- fjord-push, the daemon built in this checkout, sampling every INTERVAL s (`processes = all`)
  and sending to fjord as node `push-node`;
- Sonar's envelopes, built here from /proc every INTERVAL s as Sonar 0.19 builds them
  (src/linux/procfs.rs, src/ps_newfmt.rs): cpu_time = utime+stime+cutime+cstime in whole seconds,
  rounded, and left out when 0; cpu_avg = own utime+stime over the process's age, one decimal;
  cpu_util = utime+stime+cutime+cstime over 100 ms; num_threads = threads - 1; job = process group,
  epoch = boot time - 2020-01-01; sent to fjord as node `sonar-node`.
Each job waits idle until both producers have sampled it, works for the shape's seconds, and idles
again until both have sampled it twice more, so the first and last node-samples fall in idle time
(where the truth is flat and the instant of a reading does not matter).

The comparison uses fjord's own definitions (docs/storage.md, "Job CPU") applied to the truth at
the job's node-sample times t_0 .. t_n (read from job_samples): the figure of node-sample k >= 1 is
the CPU used in (t_k-1, t_k] over its length, that of t_0 the CPU of the second before it; cpu_avg
is their mean; CPU-seconds are the sum of figure x interval; cpu_time_s is the cumulative total at
t_n; cpu_peak the largest figure over a window of at least 120 s (the average while there is none).
cpu_time's whole seconds make every counter's value uncertain by 0.5 s: at the job's first and last
node-samples they do not cancel, so 1 s of CPU is reported apart as the rounding allowance."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import base64

from api_common import rfc
from harness import FJORD, check

PUSH = os.environ.get("FJORD_PUSH_BIN") or os.path.join(os.path.dirname(os.path.abspath(FJORD)), "pusher", "fjord-push")
TCK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
TRUTH_STEP = 0.1
WINDOW_S = 120  # FJ_JCPU_WINDOW_S
CLUSTER = "truth.test"
EPOCH_BASE = 1577836800  # 2020-01-01, Sonar's epoch base

# The job: waits for GO, runs SHAPE for SECONDS, writes DONE, then idles until it is ended.
WORKER = r"""
import hashlib, os, sys, threading, time
shape, secs, go, done = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
while not os.path.exists(go):
    time.sleep(0.05)
def burn(cpu_s):
    t = time.process_time()
    while time.process_time() - t < cpu_s:
        pass
def child(cpu_s):
    pid = os.fork()
    if pid == 0:
        burn(cpu_s)
        os._exit(0)
    return pid
end = time.time() + secs
if shape == "steady":          # one process at about 50 %
    while time.time() < end:
        burn(0.05)
        time.sleep(0.05)
elif shape == "threads":       # two threads hashing (hashlib lets go of the GIL)
    def spin():
        buf = b"x" * (1 << 20)
        while time.time() < end:
            hashlib.sha256(buf).digest()
    ts = [threading.Thread(target=spin) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
elif shape == "fork1s":        # children of 1 s of CPU, one after another
    while time.time() < end:
        os.waitpid(child(1.0), 0)
        time.sleep(0.3)
elif shape == "fork01":        # children of 0.1 s: most live and die between two samples
    while time.time() < end:
        os.waitpid(child(0.1), 0)
        time.sleep(0.02)
elif shape == "tree":          # children of 2 s that fork grandchildren of 0.15 s
    while time.time() < end:
        pid = os.fork()
        if pid == 0:
            e2 = time.time() + 2.0
            while time.time() < e2:
                os.waitpid(child(0.15), 0)
            os._exit(0)
        os.waitpid(pid, 0)
open(done, "w").close()
while True:
    time.sleep(3600)
"""

SHAPES = ("steady", "threads", "fork1s", "fork01", "tree", "idle")


def read_stat(pid):
    """(pgrp, ppid, comm, state, own ticks, children's ticks, start ticks, threads) or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    lp, rp = s.find("("), s.rfind(")")
    if lp < 0 or rp < 0:
        return None
    f = s[rp + 2:].split()
    return (int(f[2]), int(f[1]), s[lp + 1:rp], f[0], int(f[11]) + int(f[12]), int(f[13]) + int(f[14]),
            int(f[19]), int(f[17]))


def all_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def boot_time():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("btime "):
                return int(line.split()[1])
    return 0


class Truth(threading.Thread):
    """Every TRUTH_STEP s: per job, (time, total ticks of its live processes)."""

    def __init__(self, pgids):
        super().__init__(daemon=True)
        self.pgids = set(pgids)
        self.series = {g: [] for g in pgids}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            t0 = time.time()
            tot = {g: 0 for g in self.pgids}
            for pid in all_pids():
                st = read_stat(pid)
                if st and st[0] in tot:
                    tot[st[0]] += st[4] + st[5]
            t1 = time.time()
            for g, v in tot.items():
                self.series[g].append(((t0 + t1) / 2, v / TCK))
            self.stop.wait(max(0.0, TRUTH_STEP - (time.time() - t0)))

    def at(self, g, t):
        """The job's cumulative CPU seconds at time t (linear between readings)."""
        s = self.series[g]
        if not s or t <= s[0][0]:
            return s[0][1] if s else 0.0
        lo, hi = 0, len(s) - 1
        if t >= s[hi][0]:
            return s[hi][1]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if s[mid][0] <= t:
                lo = mid
            else:
                hi = mid
        (ta, va), (tb, vb) = s[lo], s[hi]
        return va + (vb - va) * (t - ta) / (tb - ta)


def sonar_process(pid, st, boot, now):
    """One process record as Sonar 0.19 writes it (fields that are 0 left out)."""
    pgrp, ppid, comm, state, own, kids, start, _ = st
    if state == "Z":
        comm += " <defunct>"
    try:
        threads = len(os.listdir("/proc/%d/task" % pid))
    except OSError:
        threads = 1
    rss = 0
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    rss = int(line.split()[1])
    except OSError:
        return None
    realtime = max(1, now * TCK - (boot * TCK + start))
    r = {"cmd": comm, "pid": pid}
    if ppid:
        r["ppid"] = ppid
    if rss:
        r["resident_memory"] = rss
    if threads > 1:
        r["num_threads"] = threads - 1
    avg = round(1000.0 * own / realtime) / 10.0
    if avg:
        r["cpu_avg"] = avg
    cpu_time = (own + kids + TCK // 2) // TCK
    if cpu_time:
        r["cpu_time"] = cpu_time
    return r


class Producers(threading.Thread):
    """Sonar's envelopes for the jobs, every interval s on the clock's multiples, POSTed to fjord."""

    def __init__(self, fj, token, pgids, interval, node="sonar-node"):
        super().__init__(daemon=True)
        self.fj, self.token, self.pgids, self.interval, self.node = fj, token, set(pgids), interval, node
        self.stop = threading.Event()
        self.sent = 0
        self.errors = []
        self.boot = boot_time()

    def envelope(self, now):
        found = {}
        for pid in all_pids():
            st = read_stat(pid)
            if st and st[0] in self.pgids:
                found[pid] = st
        # cpu_util: utime+stime+cutime+cstime again 100 ms later, as Sonar measures it
        time.sleep(0.1)
        util = {}
        for pid, st in found.items():
            st2 = read_stat(pid)
            if st2:
                util[pid] = 100.0 * ((st2[4] + st2[5]) - (st[4] + st[5])) / TCK / 0.1
        jobs = {}
        for pid, st in sorted(found.items()):
            if pid not in util:
                continue  # gone meanwhile: Sonar drops it too
            r = sonar_process(pid, st, self.boot, now)
            if r is None:
                continue
            if util[pid] > 0:
                r["cpu_util"] = round(util[pid], 3)
            jobs.setdefault(st[0], []).append(r)
        return {"meta": {"producer": "sonar", "version": "0.19.0"},
                "data": {"type": "sample", "attributes": {
                    "time": rfc(now), "cluster": CLUSTER, "node": self.node,
                    "jobs": [{"job": g, "user": "root", "epoch": self.boot - EPOCH_BASE, "processes": p}
                             for g, p in sorted(jobs.items())]}}}

    def run(self):
        while not self.stop.is_set():
            now = time.time()
            nxt = (int(now) // self.interval + 1) * self.interval
            if self.stop.wait(nxt - now):
                break
            env = self.envelope(nxt)
            r = self.fj.post("/api/v1/ingest/sonar", json.dumps(env), auth=(CLUSTER, self.token))
            if r.status == 200:
                self.sent += 1
            else:
                self.errors.append("%d %s" % (r.status, r.body[:200]))


def start_pusher(fj, token, interval, tmp):
    auth = os.path.join(tmp, "push.secret")
    with open(auth, "w") as fh:
        fh.write("%s:%s\n" % (CLUSTER, token))
    log = open(os.path.join(tmp, "push.log"), "w")
    args = [PUSH, "--url", "http://127.0.0.1:%d/ingest" % fj.port, "--auth-file", auth, "--cluster", CLUSTER,
            "--node", "push-node", "--processes", "all", "--sample-interval", "%ds" % interval,
            "--send-jitter", "0s", "--nvml-library", "none", "--no-amd", "--spool-dir", "", "--timeout", "10s"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log)


def job_samples(fj, job, node, reader):
    """(job row, [(time, cpu_m)]) of the job fjord made of process group `job` on `node`."""
    r = fj.get("/api/v1/jobs?cluster=%s&job=%d&host=%s&from=%d" % (CLUSTER, job, node, int(time.time()) - 86400),
               auth=("reader", reader))
    rows = [j for j in r.json().get("jobs", []) if j.get("node") == node] if r.status == 200 else []
    if len(rows) != 1:
        return None, []
    pts = fj.query("SELECT time, cpu_m FROM job_samples WHERE rjob_id = ? ORDER BY time", rows[0]["id"])
    return rows[0], [(int(t), int(m)) for t, m in pts]


def truth_figures(truth, g, times):
    """fjord's figures applied to the truth at the node-sample times (percent of a core)."""
    figs = [100.0 * (truth.at(g, times[0]) - truth.at(g, times[0] - 1))]
    for k in range(1, len(times)):
        figs.append(100.0 * (truth.at(g, times[k]) - truth.at(g, times[k - 1])) / (times[k] - times[k - 1]))
    return figs


def window_peak(times, figs):
    """The largest figure over a window of at least WINDOW_S (fj_jcpu_window_m without the cap),
    or None when no window is that long."""
    best = None
    for k in range(len(times)):
        j = k - 1
        while j >= 0 and times[k] - times[j] < WINDOW_S:
            j -= 1
        if j < 0:
            continue
        used = sum(figs[i] * (times[i] - times[i - 1]) for i in range(j + 1, k + 1))
        v = used / (times[k] - times[j])
        best = v if best is None else max(best, v)
    return best


def run(shapes, seconds, interval, fj, token, reader, log=print):
    """Runs every shape for `seconds` under both producers; returns one result per (shape,
    producer): a dict of fjord's and the truth's figures."""
    tmp = tempfile.mkdtemp(prefix="run-", dir=fj.tmp)  # this run's GO and DONE files
    go = os.path.join(tmp, "go")
    jobs = {}
    for shape in shapes:
        done = os.path.join(tmp, "done." + shape)
        p = subprocess.Popen([sys.executable, "-c", WORKER, shape, str(seconds), go, done],
                             start_new_session=True, stdin=subprocess.DEVNULL)
        jobs[shape] = (p, done)
    pgids = [p.pid for p, _ in jobs.values()]  # a new session: its leader's pid is the group id
    time.sleep(2)  # the interpreters' start is over before the first node-sample's second
    truth = Truth(pgids)
    truth.start()
    sonar = Producers(fj, token, pgids, interval)
    sonar.start()
    push = start_pusher(fj, token, interval, tmp)
    results = []
    try:
        # idle until both producers have each job's first node-sample
        deadline = time.time() + 30 + 4 * interval
        while time.time() < deadline:
            n = [len(job_samples(fj, g, node, reader)[1]) for g in pgids for node in ("push-node", "sonar-node")]
            if min(n) >= 1:
                break
            time.sleep(0.5)
        time.sleep(interval)
        open(go, "w").close()
        log("jobs started: %s" % {s: p.pid for s, (p, _) in jobs.items()})
        deadline = time.time() + seconds * 3 + 60
        while time.time() < deadline and not all(os.path.exists(d) for _, d in jobs.values()):
            time.sleep(0.2)
        check(all(os.path.exists(d) for _, d in jobs.values()), "every job finished its work")
        time.sleep(2 * interval + 1.5)  # two more node-samples of the idle jobs, then they are sent
        check(not sonar.errors, "Sonar envelopes accepted: %s" % sonar.errors[:3])
    finally:
        push.terminate()
        try:
            push.wait(timeout=20)
        except subprocess.TimeoutExpired:
            push.kill()
            push.wait()
        sonar.stop.set()
        sonar.join(timeout=10)
        truth.stop.set()
        truth.join(timeout=10)
        for p, _ in jobs.values():
            p.kill()
            p.wait(timeout=10)
    for shape, (p, _) in jobs.items():
        for producer, node in (("fjord-push", "push-node"), ("sonar", "sonar-node")):
            row, pts = job_samples(fj, p.pid, node, reader)
            check(row is not None and len(pts) >= 3, "%s/%s: a job with node-samples: %s" % (shape, producer, row))
            if row is None or len(pts) < 3:
                continue
            times = [t for t, _ in pts]
            figs = truth_figures(truth, p.pid, times)
            span = times[-1] - times[0]
            fj_cpu_s = sum(pts[k][1] / 100000.0 * (times[k] - times[k - 1]) for k in range(1, len(pts)))
            t_avg = sum(figs) / len(figs)
            t_peak = window_peak(times, figs)
            results.append({
                "shape": shape, "producer": producer, "samples": len(pts), "span_s": span,
                "truth_avg": t_avg, "fjord_avg": row.get("cpu_avg"),
                "truth_cpu_s": truth.at(p.pid, times[-1]) - truth.at(p.pid, times[0]), "fjord_cpu_s": fj_cpu_s,
                "truth_time_s": truth.at(p.pid, times[-1]), "fjord_time_s": row.get("cpu_time_s"),
                "truth_peak": t_peak if t_peak is not None else t_avg, "fjord_peak": row.get("cpu_peak"),
                "peak_windowed": t_peak is not None,
                # 1 s of CPU (the counters' rounding at the first and last node-sample) in percent
                # of the mean over node-samples
                "rounding_avg": 100.0 * 1.0 / (span / (len(pts) - 1)) / len(pts),
            })
    return results


def judge(r, rel_avg=0.02, rel_peak=0.05, clamp_s=0.0):
    """Checks one result against the targets; the rounding allowance comes on top, and clamp_s
    seconds of CPU more where the caller allows the rule's documented clamp (docs/storage.md, "Job
    CPU": a parent's jump less a reaped child's rounded last value below zero counts 0, up to 1 s)."""
    tag = "%s/%s" % (r["shape"], r["producer"])
    tol = rel_avg * r["truth_avg"] + r["rounding_avg"] * (1.0 + clamp_s) + 0.05
    check(r["fjord_avg"] is not None and abs(r["fjord_avg"] - r["truth_avg"]) <= tol,
          "%s cpu_avg %s, truth %.2f (+- %.2f)" % (tag, r["fjord_avg"], r["truth_avg"], tol))
    tol = rel_avg * r["truth_cpu_s"] + 1.0 + clamp_s + 0.01
    check(abs(r["fjord_cpu_s"] - r["truth_cpu_s"]) <= tol,
          "%s CPU-seconds %.2f, truth %.2f (+- %.2f)" % (tag, r["fjord_cpu_s"], r["truth_cpu_s"], tol))
    tol = rel_avg * r["truth_time_s"] + 0.5 + 0.01
    check(r["fjord_time_s"] is not None and abs(r["fjord_time_s"] - r["truth_time_s"]) <= tol,
          "%s cpu_time_s %s, truth %.2f (+- %.2f)" % (tag, r["fjord_time_s"], r["truth_time_s"], tol))
    if r["peak_windowed"]:
        tol = rel_peak * r["truth_peak"] + 100.0 * 1.0 / WINDOW_S + 0.05
        check(r["fjord_peak"] is not None and abs(r["fjord_peak"] - r["truth_peak"]) <= tol,
              "%s cpu_peak %s, truth %.2f (+- %.2f)" % (tag, r["fjord_peak"], r["truth_peak"], tol))
    else:  # shorter than a window: the peak is the average
        check(r["fjord_peak"] is not None and abs(r["fjord_peak"] - r["fjord_avg"]) <= 0.01,
              "%s cpu_peak %s is the average %s while no window is %d s" % (tag, r["fjord_peak"], r["fjord_avg"],
                                                                          WINDOW_S))


def table(results):
    """Truth against fjord per shape and producer, as Markdown."""
    out = ["| shape | producer | samples | truth avg % | fjord avg % | diff | truth CPU-s | fjord CPU-s | "
           "truth cpu_time_s | fjord cpu_time_s | truth peak % | fjord peak % |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        d = (r["fjord_avg"] - r["truth_avg"]) / r["truth_avg"] * 100 if r["truth_avg"] > 0.05 else float("nan")
        out.append("| %s | %s | %d | %.2f | %.2f | %+.1f %% | %.1f | %.1f | %.1f | %s | %.2f | %s |" % (
            r["shape"], r["producer"], r["samples"], r["truth_avg"], r["fjord_avg"], d, r["truth_cpu_s"],
            r["fjord_cpu_s"], r["truth_time_s"], r["fjord_time_s"], r["truth_peak"], r["fjord_peak"]))
    return "\n".join(out)
