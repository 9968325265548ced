#!/usr/bin/env python3
"""The comparison table of check_gpu.sh: per round and load process, nvidia-smi's figures next to
fjord-push's (--once and the daemon's nearest sample).
  compare.py WORKDIR
  compare.py --brief FILE     the GPU part of each sample envelope in FILE (JSON lines), compactly
pmon's sm is the process's share of the card's SM time over pmon's last interval; fjord-push's
gpu_util is NVML's per-process SM utilisation, the same quantity. Memory: query-compute-apps
used_memory (MiB) against fjord-push's gpu_memory (KiB). Exit 1 when the busy load's gpu_util is 0
in every --once round or its memory differs by more than 2 MiB; the figures are printed either way."""
import json
import os
import sys



def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def pmon(text):
    """{pid: {column: value}} from `nvidia-smi pmon` (columns named by its first header line)."""
    cols, rows = None, {}
    for line in text.splitlines():
        if line.startswith("#"):
            if cols is None:
                cols = line.lstrip("#").split()
            continue
        f = line.split()
        if not cols or len(f) < 3 or not f[1].isdigit():
            continue
        rows[int(f[1])] = dict(zip(cols, f))
    return rows


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def apps(text):
    out = {}
    for line in text.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) >= 2 and f[0].isdigit():
            out[int(f[0])] = num(f[1])
    return out


def samples(text):
    """[(time, {pid: gpu entry}, [card states])] of every sample envelope in JSON lines."""
    out = []
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        a = doc.get("data", {}).get("attributes", {})
        if doc.get("data", {}).get("type") != "sample":
            continue
        procs = {}
        for job in a.get("jobs", []):
            for p in job.get("processes", []):
                for g in p.get("gpus", []):
                    if g.get("index") == 0:
                        procs[p["pid"]] = g
        out.append((a.get("time", ""), procs, a.get("system", {}).get("gpus", []), a.get("errors", [])))
    return out


def fmt(v, w=8):
    return ("%*s" % (w, "-")) if v is None else ("%*.0f" % (w, v))


def brief(path):
    for line in read(path).splitlines():
        try:
            a = json.loads(line).get("data", {})
        except ValueError:
            print("  (not JSON) " + line[:200])
            continue
        if a.get("type") != "sample":
            print("  %s document" % a.get("type"))
            continue
        a = a["attributes"]
        print("  sample %s" % a.get("time"))
        for g in a.get("system", {}).get("gpus", []):
            print("    gpu %s" % json.dumps(g, separators=(",", ":")))
        for job in a.get("jobs", []):
            for p in job.get("processes", []):
                if p.get("gpus"):
                    print("    pid %s %s cpu_time %s gpus %s" % (p.get("pid"), p.get("cmd"), p.get("cpu_time"),
                                                          json.dumps(p["gpus"], separators=(",", ":"))))
        for e in a.get("errors", []):
            print("    error %s" % e.get("detail"))


if sys.argv[1] == "--brief":
    brief(sys.argv[2])
    sys.exit(0)
work = sys.argv[1]
loads = {}
for line in read(os.path.join(work, "loads.txt")).splitlines():
    name, pid = line.split()
    loads[int(pid)] = name

daemon = samples(read(os.path.join(work, "daemon.jsonl")))
print("per round (GPU 0):")
print("round  load  pid       pmon_sm push_util pmon_fbMiB apps_MiB push_MiB | smi_card_util push_ce_util")
busy_util, mem_ok, rounds = [], True, 0
for r in range(1, 100):
    d = os.path.join(work, "round-%d" % r)
    if not os.path.isdir(d):
        break
    rounds += 1
    pm = pmon(read(os.path.join(d, "pmon.txt")))
    ap = apps(read(os.path.join(d, "apps.csv")))
    once = samples(read(os.path.join(d, "push.jsonl")))
    procs, cards, errs = (once[0][1], once[0][2], once[0][3]) if once else ({}, [], [])
    gq = read(os.path.join(d, "gpus.csv")).splitlines()
    card_util = num(gq[0].split(",")[1]) if gq and len(gq[0].split(",")) > 1 else None
    ce = cards[0].get("ce_util") if cards else None
    for pid, name in sorted(loads.items(), key=lambda x: x[1]):
        g = procs.get(pid, {})
        util = g.get("gpu_util")
        kib = g.get("gpu_memory")
        mib = None if kib is None else kib / 1024.0
        if name == "busy":
            busy_util.append(util or 0)
            if mib is None or ap.get(pid) is None or abs(mib - ap[pid]) > 2:
                mem_ok = False
        print("%5d  %-4s %-8d %8s %9s %10s %8s %8s | %13s %12s" % (
            r, name, pid, fmt(num(pm.get(pid, {}).get("sm"))), fmt(util), fmt(num(pm.get(pid, {}).get("fb"))),
            fmt(ap.get(pid)), fmt(mib), fmt(card_util), fmt(ce)))
    for e in errs:
        print("       sample error: %s" % e.get("detail"))

print("\ndaemon samples, every 5 s (gpu_util of each load on GPU 0):")
for t, procs, cards, errs in daemon:
    cells = ["%s %s" % (loads[p], fmt(procs.get(p, {}).get("gpu_util"), 4)) for p in sorted(loads, key=loads.get)]
    print("  %s  %s  card ce_util %s%s" % (t, "  ".join(cells), fmt(cards[0].get("ce_util") if cards else None, 4),
                                         "  errors: %s" % [e.get("detail") for e in errs] if errs else ""))

ok = rounds > 0 and any(u > 0 for u in busy_util) and mem_ok
print("\nverdict: busy load gpu_util over --once rounds %s; memory %s; %s" % (
    busy_util, "matches query-compute-apps within 2 MiB" if mem_ok else "DIFFERS (or missing)",
    "OK" if ok else "FAILED"))
sys.exit(0 if ok else 1)
