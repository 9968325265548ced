#!/usr/bin/env python3
"""The second half of the energy check (docs/energy.md "Checked on a GPU"), run where fjord is
built: feeds the envelopes energy_gpu.sh captured on the GPU machine into a real local fjord (a
fresh SQLite database, 127.0.0.1) and prints fjord's energy for the job of the known load against
NVML's energy counter read every 100 ms and against nvidia-smi's power.draw sampled every 100 ms,
each over the same span: the job's intervals, from the daemon's sample before the job's first to
its last (docs/energy.md: an interval belongs to the samples that end it).
  energy_compare.py OUTDIR [--fjord PATH]        (default: build/fjord of this checkout)
fjord is given the envelopes twice: as sent (the card's counter preferred) and with the counter
taken out (power integrated at the daemon's cadence), as two clusters. Exit 0 when fjord's figure
from the counter is within 2 % of NVML's counter over the span and from the power within 10 %;
the table is printed either way."""
import json
import os
import sys
import time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))


def parse_args():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        sys.exit(__doc__)
    out, fjord = args[0], os.path.join(ROOT, "build", "fjord")
    if "--fjord" in args:
        fjord = os.path.abspath(args[args.index("--fjord") + 1])
    return out, fjord


def epoch(ts):
    return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp())


def envelopes(out):
    docs = []
    for line in open(os.path.join(out, "daemon.jsonl")):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict) and d.get("data", {}).get("type") in ("sample", "sysinfo"):
            docs.append(d)
    return docs


def the_job(docs, pid):
    """(job, epoch, times of the node's samples, times of the samples holding the load)."""
    job, times, held = None, [], []
    for d in docs:
        a = d["data"]["attributes"]
        if d["data"]["type"] != "sample":
            continue
        t = epoch(a["time"])
        times.append(t)
        for j in a.get("jobs", []):
            if any(p.get("pid") == pid for p in j.get("processes", [])):
                job = (j["job"], j.get("epoch", 0))
                held.append(t)
    return job, sorted(set(times)), sorted(set(held))


def interp(series, t):
    """The value of a [(t, v)] series (time order) at t, linear between readings."""
    for (t0, v0), (t1, v1) in zip(series, series[1:]):
        if t0 <= t <= t1:
            return v0 + (v1 - v0) * (t - t0) / (t1 - t0) if t1 > t0 else v1
    return None


def trapezoid(series, a, b):
    """The integral of a [(t, watts)] series over [a, b], linear between readings."""
    total = 0.0
    for (t0, p0), (t1, p1) in zip(series, series[1:]):
        lo, hi = max(t0, a), min(t1, b)
        if hi <= lo or t1 <= t0:
            continue
        s = (p1 - p0) / (t1 - t0)
        total += (p0 + s * (lo - t0) + p0 + s * (hi - t0)) / 2 * (hi - lo)
    return total


def smi_power(out):
    rows = []
    for line in open(os.path.join(out, "power.csv")):
        f = [x.strip() for x in line.split(",")]
        if len(f) < 2:
            continue
        try:
            t = datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()
            rows.append((t, float(f[1])))
        except ValueError:
            continue  # "[N/A]", "[Not Supported]"
    return sorted(rows)


def main():
    out, fjord = parse_args()
    os.environ["FJORD_BIN"] = fjord
    from harness import Fjord  # after FJORD_BIN is set

    docs = envelopes(out)
    pid = int(open(os.path.join(out, "load.pid")).read().split()[0])
    job, times, held = the_job(docs, pid)
    if not job or not held:
        sys.exit("energy_compare: no sample holds the load's process %d (%d envelopes)" % (pid, len(docs)))
    # the job's intervals start at the daemon's sample before its first (none: at its first, as the
    # card has no reading before it)
    before = [t for t in times if t < held[0]]
    a, b = (before[-1] if before else held[0]), held[-1]
    nvml = [json.loads(x) for x in open(os.path.join(out, "nvml.jsonl")) if x.strip()]
    counter = [(r["t"], r["mj"] / 1000.0) for r in nvml if r.get("mj") is not None]
    nvml_power = [(r["t"], r["mw"] / 1000.0) for r in nvml if r.get("mw") is not None]
    smi = smi_power(out)
    sent_counter = any("energy_mj" in g for d in docs if d["data"]["type"] == "sample"
                       for g in d["data"]["attributes"].get("system", {}).get("gpus", []))

    f = Fjord()
    clusters = {"counter": "gpuenergy", "power": "gpuenergy-power"}
    tokens = {c: f.token(c) for c in clusters.values()}
    reader = f.token("reader", "--read-only")
    f.start()
    figures = {}
    try:
        for kind, cluster in clusters.items():
            for d in docs:
                d = json.loads(json.dumps(d))
                d["data"]["attributes"]["cluster"] = cluster
                if kind == "power":
                    for g in d["data"]["attributes"].get("system", {}).get("gpus", []):
                        g.pop("energy_mj", None)
                r = f.post("/api/v1/ingest/sonar", json.dumps(d), auth=(cluster, tokens[cluster]))
                if r.status != 200:
                    sys.exit("energy_compare: fjord refused an envelope: %d %s" % (r.status, r.body[:300]))
            r = f.get("/api/v1/jobs?cluster=%s&job=%d&from=%d&to=%d" % (cluster, job[0], a - 3600, b + 3600),
                      auth=("reader", reader))
            rows = [j for j in json.loads(r.body).get("jobs", []) if j.get("epoch") == job[1]] if r.status == 200 else []
            if len(rows) != 1:
                sys.exit("energy_compare: fjord has %d jobs %s in %s: %d %s" % (len(rows), job, cluster, r.status,
                                                                                 r.body[:300]))
            figures[kind] = rows[0]
    finally:
        f.stop()
        f.cleanup()

    c_a, c_b = interp(counter, a), interp(counter, b)
    ref = c_b - c_a if c_a is not None and c_b is not None else None
    env_counter = {}
    for d in docs:
        if d["data"]["type"] == "sample":
            for g in d["data"]["attributes"].get("system", {}).get("gpus", []):
                if g.get("index", 0) == 0 and "energy_mj" in g:
                    env_counter[epoch(d["data"]["attributes"]["time"])] = g["energy_mj"] / 1000.0
    rows = [
        ("fjord, the card's counter preferred (energy_how.joules)", figures["counter"]["energy_how"].get("joules"),
         figures["counter"]["energy_how"].get("gpu_from")),
        ("fjord, the power only (counter taken out)", figures["power"]["energy_how"].get("joules"),
         figures["power"]["energy_how"].get("gpu_from")),
        ("fjord-push's counter in the envelopes, difference", env_counter[b] - env_counter[a]
         if a in env_counter and b in env_counter else None, "2 s samples"),
        ("NVML total energy counter, read every 100 ms", ref, "reference"),
        ("NVML power, every 100 ms, trapezoid", trapezoid(nvml_power, a, b) if nvml_power else None, ""),
        ("nvidia-smi power.draw -lms 100, trapezoid", trapezoid(smi, a, b) if smi else None, ""),
    ]
    meta = json.load(open(os.path.join(out, "meta.json"))) if os.path.exists(os.path.join(out, "meta.json")) else {}
    print("GPU: %s on %s%s" % (meta.get("smi", "?"), meta.get("host", "?"), " (selftest)" if meta.get("selftest") else ""))
    print("the load: pid %d, fjord job %d (epoch %d), %d samples on the card" % (pid, job[0], job[1], len(held)))
    print("span: %s .. %s (%d s: the daemon's sample before the job's first, to its last)"
          % (time.strftime("%H:%M:%S", time.gmtime(a)), time.strftime("%H:%M:%S", time.gmtime(b)), b - a))
    print("fjord-push sent the counter: %s" % ("yes" if sent_counter else "no (the card has none)"))
    print()
    print("| source | J | Wh | vs NVML counter |")
    print("|---|---:|---:|---:|")
    for name, j, note in rows:
        if j is None:
            print("| %s | - | - | - |" % name)
            continue
        diff = "%+.2f %%" % (100.0 * (j - ref) / ref) if ref else "-"
        print("| %s%s | %.1f | %.3f | %s |" % (name, " (%s)" % note if note else "", j, j / 3600.0, diff))
    if counter:
        whole = counter[-1][1] - counter[0][1]
        print()
        print("whole run, %.1f s: NVML counter %.1f J, nvidia-smi power %.1f J, NVML power %.1f J"
              % (counter[-1][0] - counter[0][0], whole, trapezoid(smi, counter[0][0], counter[-1][0]) if smi else 0,
                 trapezoid(nvml_power, counter[0][0], counter[-1][0]) if nvml_power else 0))
    ok = True
    fc, fp = rows[0][1], rows[1][1]
    if ref and sent_counter:
        ok &= fc is not None and abs(fc - ref) <= 0.02 * ref
    if ref:
        ok &= fp is not None and abs(fp - ref) <= 0.10 * ref
    print()
    print("energy check: %s" % ("PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
