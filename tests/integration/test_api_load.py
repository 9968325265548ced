"""Node and cluster load and uptime over the real Sonar envelopes, with figures computed here: CPU
utilisation from two samples' cumulative per-core counters, memory and load averages, GPU memory
and power; a counter that goes down never gives negative use; a re-sent sample (same timestamp)
counts once; a node is reported down when its samples stop, and across a gap. Hourly and daily
roll-ups (late samples included) give what the samples give; GPU load per card."""
from api_common import Api, envelope, epoch, rfc, shifted
from harness import check, finish

VM0 = "sonar-0.19-output/head-sample-default.json"    # test.local vm at 00:09:01
VM1 = "sonar-0.19-output/head-sample-batchless.json"  # the same node at 00:09:04


def util(a, b, dt):
    """Percent of all cores busy between two readings; a core whose counter fell counts 0."""
    n = min(len(a), len(b))
    return sum(max(0, b[i] - a[i]) for i in range(n)) / dt / n * 100, sum(max(0, b[i] - a[i]) for i in range(n)) / dt


def points(doc, node):
    for s in doc.get("load", []):
        if s["node"] == node:
            return s["points"]
    return []


def node_expect(samples, lo, hi, bucket):
    """Buckets of one node computed here from its samples {time: (cpus, mem, load1)}: intervals
    between consecutive samples (the one before lo opens the first), credited to the bucket of
    their end; a core whose counter fell counts 0."""
    out, prev = {}, None
    for t in sorted(samples):
        if t > hi:
            break
        if t >= lo:
            b = out.setdefault(t - t % bucket, {"samples": 0, "iv": [], "mem": [], "load1": []})
            b["samples"] += 1
            b["mem"].append(samples[t][1])
            b["load1"].append(samples[t][2])
            if prev is not None:
                a, c, dt = samples[prev][0], samples[t][0], t - prev
                busy = sum(max(0, c[i] - a[i]) for i in range(min(len(a), len(c))))
                b["iv"].append((busy / dt / min(len(a), len(c)) * 100, busy / dt, dt))
        prev = t
    for b in out.values():
        w = sum(x[2] for x in b["iv"])
        b["cpu_util"] = sum(x[0] * x[2] for x in b["iv"]) / w if w else None
        b["cpu_cores"] = sum(x[1] * x[2] for x in b["iv"]) / w if w else None
        b["cpu_util_max"] = max(x[0] for x in b["iv"]) if b["iv"] else None
    return out


def same_buckets(got, want, what):
    """Node-load points against node_expect's buckets."""
    check(sorted(epoch(p["time"]) for p in got) == sorted(want), "%s: buckets %s, want %s"
          % (what, [p["time"] for p in got], [rfc(t) for t in sorted(want)]))
    for p in got:
        w = want.get(epoch(p["time"]))
        if not w:
            continue
        ok = p["samples"] == w["samples"] and p["mem_kb"] == round(sum(w["mem"]) / len(w["mem"])) \
            and p["mem_max_kb"] == max(w["mem"]) and abs(p["load1"] - sum(w["load1"]) / len(w["load1"])) < 0.001
        for k in ("cpu_util", "cpu_cores", "cpu_util_max"):
            ok = ok and (p[k] is None if w[k] is None else p[k] is not None and abs(p[k] - w[k]) < 0.001)
        check(ok, "%s %s: %s, want %s" % (what, p["time"], p, {k: v for k, v in w.items() if k != "iv"}))


def rollups(api, base):
    """Buckets of whole hours inside the window come from the hourly roll-ups written at ingest;
    late samples, a re-sent one and a falling counter must leave them exactly what the samples
    give (here computed independently), for roll-ups of one hour, merged into two-hour buckets,
    and next to the cut hours of a window (read from samples)."""
    H = epoch("2026-12-01T00:00:00Z")
    samples = {}

    def send(t, cpus, mem, load1):
        e = shifted(base, 0, cpus=cpus, used_memory=mem, load1=load1)
        a = e["data"]["attributes"]
        a["node"], a["time"], a["jobs"] = "late", rfc(t), []
        api.post(e)
        samples[t] = (cpus, mem, load1)

    def verify(what):
        # whole hours (roll-ups), two-hour buckets (merged roll-ups), a window cutting its first
        # hour, a day bucket of a cut hour, a whole hour and a cut hour, two whole days (the daily
        # roll-ups), and a day cut in its first hour (its other hours from the hourly roll-ups)
        # followed by a whole one
        for frm, to, bucket in ((H, H + 7199, 3600), (H, H + 7199, 7200), (H + 1, H + 7199, 3600),
                                (H + 900, H + 7300, 86400), (H - 86400, H + 86399, 86400),
                                (H - 86400 + 1800, H + 86399, 86400)):
            q = "cluster=test.local&host=late&from=%s&to=%s&bucket=%d" % (rfc(frm), rfc(to), bucket)
            want = node_expect(samples, frm, to, bucket)
            same_buckets(points(api.json("/api/v1/load/nodes?" + q), "late"), want,
                         "%s, %s..%s by %d s" % (what, rfc(frm), rfc(to), bucket))
            c = api.json("/api/v1/load/cluster?" + q).get("load", [])
            def same(a, b):
                return a is None and b is None or a is not None and b is not None and abs(a - b) < 0.001
            check(len(c) == len(want) and all(x["nodes"] == 1 and same(x["cpu_cores"], want[epoch(x["time"])]["cpu_cores"])
                                              for x in c), "%s: cluster load %s" % (what, c))

    send(H - 600, [100, 100, 100, 100], 1000, 1.0)
    send(H + 600, [400, 250, 100, 700], 2000, 2.0)
    send(H + 1200, [500, 300, 100, 800], 2500, 2.5)  # appended to the hour's roll-up
    send(H + 3600 + 600, [1000, 900, 50, 1500], 4000, 4.0)  # a counter fell: counts 0
    send(H + 7260, [1100, 1000, 150, 1600], 4500, 4.5)
    verify("in order")
    # late: one in the first hour after the last sample of that hour (it changes the next hour's
    # interval), one before the first sample of the hour, one re-sent (counts once)
    send(H + 1800, [600, 600, 120, 900], 3000, 3.0)
    send(H + 300, [200, 150, 100, 300], 1500, 1.5)
    send(H + 600, [400, 250, 100, 700], 2000, 2.0)
    verify("late and re-sent samples")
    # a late sample before the window changes the first interval inside it
    send(H - 60, [300, 300, 300, 300], 900, 0.5)
    verify("a late sample before the window")


def gpu_cards(api, ml1):
    """GET /api/v1/load/gpus: one series per node, card index and UUID (a card swapped at an index
    is a new series), each bucket the card's average and highest figures; figures computed here
    from the envelopes (Sonar omits zero values)."""
    D = epoch("2025-11-26T00:00:00Z")
    g0 = ml1["data"]["attributes"]["system"]["gpus"]
    g1 = [dict(g, ce_util=40 + 20 * i, memory=g.get("memory", 0) + 1000 * (i + 1), power=100 + i,
               temperature=g.get("temperature", 0) + 5) for i, g in enumerate(g0)]
    g1[2]["uuid"] = "GPU-00000000-0000-0000-0000-swapped00002"
    sent = []
    for t, gpus in ((D + 3600, g0), (D + 3720, g1)):
        e = shifted(ml1, 0, gpus=gpus)
        a = e["data"]["attributes"]
        a["node"], a["time"] = "ml9", rfc(t)
        api.post(e)
        sent.append(gpus)
    want = {}
    for gpus in sent:
        for i, g in enumerate(gpus):
            want.setdefault((g.get("index", 0), g["uuid"]), []).append(g)
    q = "cluster=mlx.hpc.uio.no&host=ml9&from=%s&to=%s&bucket=1h" % (rfc(D), rfc(D + 86399))
    doc = api.json("/api/v1/load/gpus?" + q)
    series = {(s["card"], s["uuid"]): s for s in doc.get("load", []) if s["node"] == "ml9"}
    check(set(series) == set(want), "series per card and UUID: %s, want %s" % (sorted(series), sorted(want)))
    for key, gs in want.items():
        p = series.get(key, {}).get("points", [])
        check(len(p) == 1 and epoch(p[0]["time"]) == D + 3600, "%s: one bucket: %s" % (key, p))
        if len(p) != 1:
            continue
        p = p[0]

        def avg(k):
            return sum(g.get(k, 0) for g in gs) / len(gs)

        def mx(k):
            return max(g.get(k, 0) for g in gs)
        ok = p["samples"] == len(gs) and abs(p["gpu_util"] - avg("ce_util")) < 0.001 and p["gpu_util_max"] == mx("ce_util") \
            and p["gpu_mem_kb"] == round(avg("memory")) and p["gpu_mem_max_kb"] == mx("memory") \
            and abs(p["gpu_power_w"] - avg("power")) < 0.001 and p["gpu_power_max_w"] == mx("power") \
            and abs(p["gpu_temp_c"] - avg("temperature")) < 0.001 and p["gpu_temp_max_c"] == mx("temperature")
        check(ok, "card %s: %s, sent %s" % (key, p, gs))
    # the per-card figures add up to the node's
    node = points(api.json("/api/v1/load/nodes?" + q), "ml9")
    check(len(node) == 1 and node[0]["gpu_mem_max_kb"] == sum(g.get("memory", 0) for g in g1),
          "node load agrees: %s" % node)
    rows = api.csv("/api/v1/load/gpus?" + q)
    check(len(rows) == len(want) and all(r["node"] == "ml9" and r["uuid"] for r in rows), "CSV: one row per card and bucket: %s" % rows)
    api.bad("/api/v1/load/gpus?cluster=mlx.hpc.uio.no&bucket=0", "bucket")
    api.bad("/api/v1/load/gpus?cluster=mlx.hpc.uio.no&card=1", "card", "unknown")


def compact(api):
    """fields and layout=columns: the same figures as the rows answer, rearranged here."""
    q = "cluster=mlx.hpc.uio.no&from=2025-11-25T09:30:00Z&to=2025-11-25T21:30:00Z&bucket=1h"
    rows = api.json("/api/v1/load/nodes?" + q)
    cols = api.json("/api/v1/load/nodes?%s&layout=columns&fields=cpu_util,mem_kb,gpu_util" % q)
    step = rows["bucket_s"]
    base = epoch(rows["from"]) // step * step
    n = epoch(rows["to"]) // step - epoch(rows["from"]) // step + 1
    check(n == 13 and cols.get("bucket_s") == step and cols.get("from") == rows["from"], "a 12-hour window in hours: 13 slots")
    want = []
    for g in rows["load"]:
        arr = {k: [None] * n for k in ("cpu_util", "mem_kb", "gpu_util")}
        for pt in g["points"]:
            k = (epoch(pt["time"]) - base) // step
            for c in arr:
                arr[c][k] = pt[c]
        want.append(dict(node=g["node"], **arr))
    check(len(want) > 0 and cols.get("load") == want, "columns = the rows rearranged: %s" % str(cols.get("load"))[:300])
    check(any(v is not None for g in want for v in g["mem_kb"]), "some values in the grid")
    # fields alone: the rows answer with only those columns, and the node and time
    few = api.json("/api/v1/load/nodes?%s&fields=mem_kb" % q)
    check(few.get("load") == [{"node": g["node"], "points": [{"time": p["time"], "mem_kb": p["mem_kb"]} for p in g["points"]]}
                              for g in rows["load"]], "fields=mem_kb: node, time and mem_kb only")
    csv_rows = api.csv("/api/v1/load/nodes?%s&fields=cpu_util,mem_kb" % q)
    check(csv_rows and list(csv_rows[0].keys()) == ["node", "time", "cpu_util", "mem_kb"], "CSV with fields: %s"
          % (list(csv_rows[0].keys()) if csv_rows else None))
    gpus = api.json("/api/v1/load/gpus?%s&layout=columns&fields=gpu_util" % q)
    check(all(len(g["gpu_util"]) == n and "card" in g and "points" not in g for g in gpus.get("load", [])) and gpus.get("load"),
          "GPU cards by columns: %s" % str(gpus.get("load"))[:200])
    # how much smaller: the grid's bytes against the rows' bytes
    big = len(api.get("/api/v1/load/nodes?" + q).body)
    small = len(api.get("/api/v1/load/nodes?%s&layout=columns&fields=cpu_util,mem_kb,gpu_util" % q).body)
    check(small < big, "the columns answer is smaller than the rows', even this sparse (%d of %d bytes)" % (small, big))
    api.bad("/api/v1/load/nodes?%s&fields=cpu,mem_kb" % q, "fields", "'cpu' is not a column")
    api.bad("/api/v1/load/nodes?%s&layout=grid" % q, "layout", "not one of")
    api.bad("/api/v1/load/nodes?%s&layout=columns&format=csv" % q, "layout", "JSON")
    api.bad("/api/v1/load/cluster?%s&layout=columns" % q, "layout", "node and GPU load")


def main():
    api = Api()
    try:
        e0, e1 = envelope(VM0), envelope(VM1)
        s0, s1 = e0["data"]["attributes"]["system"], e1["data"]["attributes"]["system"]
        t0, t1 = epoch(e0["data"]["attributes"]["time"]), epoch(e1["data"]["attributes"]["time"])
        want_util, want_cores = util(s0["cpus"], s1["cpus"], t1 - t0)
        check(t1 > t0 and want_util > 0, "the two samples give an interval: %s %s" % (t0, t1))
        hour = "from=%s&to=%s&bucket=1h" % (rfc(t0 - t0 % 3600), rfc(t0 - t0 % 3600 + 3599))
        doc = api.json("/api/v1/load/nodes?cluster=test.local&" + hour)
        p = points(doc, "vm")
        check(len(p) == 1, "one bucket: %s" % p)
        if p:
            b = p[0]
            check(b["samples"] == 2 and b["cores"] == len(s1["cpus"]), "samples and cores: %s" % b)
            check(abs(b["cpu_util"] - round(want_util, 3)) < 0.001, "CPU utilisation %s, computed %s" % (b["cpu_util"], want_util))
            check(abs(b["cpu_cores"] - round(want_cores, 3)) < 0.001, "busy cores %s, computed %s" % (b["cpu_cores"], want_cores))
            check(abs(b["cpu_util_max"] - round(want_util, 3)) < 0.001, "one interval: its max is itself")
            mems = [s0["used_memory"], s1["used_memory"]]
            check(b["mem_kb"] == round(sum(mems) / 2) and b["mem_max_kb"] == max(mems), "memory %s vs %s" % (b, mems))
            check(abs(b["load1"] - round((s0["load1"] + s1["load1"]) / 2, 3)) < 0.001 and b["load1_max"] == max(s0["load1"], s1["load1"]),
                  "load1: %s" % b)
            check(b["gpus"] == 0 and b["gpu_util"] is None, "no GPUs on the VM")
        check(doc.get("bucket_s") == 3600 and doc.get("from") == rfc(t0 - t0 % 3600), "the answer says its window")
        c = api.json("/api/v1/load/cluster?cluster=test.local&" + hour).get("load", [])
        check(len(c) == 1 and c[0]["nodes"] == 1 and abs(c[0]["cpu_util"] - round(want_util, 3)) < 0.001
              and abs(c[0]["cpu_cores"] - round(want_cores, 3)) < 0.001, "cluster load of one node: %s" % c)

        # Re-sending a sample (duplicate timestamp) changes nothing.
        api.post(e1)
        p2 = points(api.json("/api/v1/load/nodes?cluster=test.local&" + hour), "vm")
        check(p2 == p, "a duplicate timestamp counts once")

        # A counter that went down (a reset) counts 0, never negative; the others count.
        down = [0] + [v + 60 for v in s1["cpus"][1:]]
        e2 = shifted(e1, 60, cpus=down)
        api.post(e2)
        want2 = sum(max(0, down[i] - s1["cpus"][i]) for i in range(len(down))) / 60 / len(down) * 100
        t2 = t1 + 60
        doc = api.json("/api/v1/load/nodes?cluster=test.local&from=%s&to=%s&bucket=60" % (rfc(t1 + 1), rfc(t2)))
        p = points(doc, "vm")
        check(len(p) == 1 and p[0]["samples"] == 1, "the later sample alone: %s" % p)
        if p:
            check(p[0]["cpu_util"] is not None and p[0]["cpu_util"] >= 0, "never negative: %s" % p[0]["cpu_util"])
            check(abs(p[0]["cpu_util"] - round(want2, 3)) < 0.001, "decreasing counter: %s, computed %s" % (p[0]["cpu_util"], want2))
        # the interval before the window is used: the first bucket is not empty of CPU figures
        whole = points(api.json("/api/v1/load/nodes?cluster=test.local&from=%s&to=%s&bucket=1h" % (rfc(t0 - 10), rfc(t2))), "vm")
        check(sum(x["samples"] for x in whole) == 3, "three samples in all")

        # GPUs: the mlx nodes report three cards each; memory and power are sums over cards.
        ml = [envelope("real/0+sample-ml%d.hpc.uio.no.json" % i) for i in (1, 2, 3)]
        day = "from=2025-11-25T00:00:00Z&to=2025-11-25T23:59:59Z&bucket=1d"
        doc = api.json("/api/v1/load/nodes?cluster=mlx.hpc.uio.no&host=ml[1-3]&" + day)
        for i, e in enumerate(ml, 1):
            g = e["data"]["attributes"]["system"]["gpus"]
            p = points(doc, "ml%d" % i)
            check(len(p) == 1, "ml%d one bucket" % i)
            if p:
                check(p[0]["gpus"] == len(g) and p[0]["gpu_mem_kb"] == sum(x.get("memory", 0) for x in g)
                      and abs(p[0]["gpu_power_w"] - sum(x.get("power", 0) for x in g)) < 0.001
                      and p[0]["gpu_temp_max_c"] == max(x.get("temperature", 0) for x in g),
                      "ml%d GPUs: %s" % (i, {k: v for k, v in p[0].items() if k.startswith("gpu")}))
                check(p[0]["cpu_util"] is None, "one sample: no CPU interval")
        c = api.json("/api/v1/load/cluster?cluster=mlx.hpc.uio.no&host=ml[1-3]&" + day).get("load", [])
        allg = [x for e in ml for x in e["data"]["attributes"]["system"]["gpus"]]
        check(len(c) == 1 and c[0]["nodes"] == 3 and c[0]["gpus"] == len(allg)
              and c[0]["gpu_mem_kb"] == sum(x.get("memory", 0) for x in allg)
              and c[0]["mem_kb"] == sum(e["data"]["attributes"]["system"]["used_memory"] for e in ml),
              "cluster sums over nodes: %s" % c)
        rows = api.csv("/api/v1/load/nodes?cluster=mlx.hpc.uio.no&" + day)
        check(len(rows) == sum(len(s["points"]) for s in doc.get("load", [])) and rows[0]["node"] and rows[0]["time"].endswith("Z"),
              "CSV: one row per node and bucket (%d)" % len(rows))

        # Uptime: up while samples come, down after they stop, and down across a gap; before the
        # node's first sample (t0) it was not monitored, which is neither up nor down.
        e3 = shifted(e1, 3600)  # an hour after the last one
        api.post(e3)
        end = t1 + 3600 + 7200
        up = api.json("/api/v1/uptime?cluster=test.local&from=%s&to=%s&interval=10m" % (rfc(t0 - 600), rfc(end)))
        rows = [(r["state"], epoch(r["start"]), epoch(r["end"])) for r in up.get("uptime", []) if r["device"] == "node"]
        want = [("up", t0, t2), ("down", t2, t1 + 3600), ("up", t1 + 3600, t1 + 3600),
                ("down", t1 + 3600, end)]
        check(rows == want, "node intervals %s, want %s" % (rows, want))
        check(up.get("interval_s") == 600, "the answer says its interval")
        up = api.json("/api/v1/uptime?cluster=test.local&from=%s&to=%s&interval=2h" % (rfc(t0), rfc(end)))
        rows = [(r["state"], epoch(r["start"]), epoch(r["end"])) for r in up.get("uptime", [])]
        check(rows == [("up", t0, end)], "a longer interval bridges the gap and reaches the end: %s" % rows)
        # a window wholly before the node's first sample: nothing (it was not monitored yet)
        up = api.json("/api/v1/uptime?cluster=test.local&from=%s&to=%s" % (rfc(t0 - 7 * 86400), rfc(t0 - 1)))
        check(up.get("uptime") == [], "no interval before the first sample: %s" % up.get("uptime"))
        # ml1's one sample is its first: up from it for one interval, down after; nothing before it
        up = api.json("/api/v1/uptime?cluster=mlx.hpc.uio.no&host=ml1&from=2025-11-20T09:00:00Z&to=2025-11-25T12:00:00Z&interval=10m")
        r = [x for x in up.get("uptime", []) if x["node"] == "ml1" and x["device"] == "node"]
        t = epoch(ml[0]["data"]["attributes"]["time"])
        check([(x["state"], epoch(x["start"]), epoch(x["end"])) for x in r]
              == [("up", t, t), ("down", t, epoch("2025-11-25T12:00:00Z"))], "ml1 one sample: %s" % r)
        g = [x for x in up.get("uptime", []) if x["device"].startswith("gpu")]
        check(len({x["device"] for x in g}) == 3 and all(x["state"] == "up" for x in g), "three GPUs up while ml1 is: %s" % g)
        # a window after the last sample: down throughout (monitored, and silent)
        up = api.json("/api/v1/uptime?cluster=mlx.hpc.uio.no&host=ml1&from=2025-11-26T00:00:00Z&to=2025-11-27T00:00:00Z")
        r = [(x["state"], x["start"], x["end"]) for x in up.get("uptime", []) if x["node"] == "ml1" and x["device"] == "node"]
        check(r == [("down", "2025-11-26T00:00:00Z", "2025-11-27T00:00:00Z")], "down after the samples stopped: %s" % r)

        # Bad parameters.
        api.bad("/api/v1/load/nodes?cluster=test.local&bucket=soon", "bucket", "not a duration")
        api.bad("/api/v1/load/nodes?cluster=test.local&from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&bucket=1", "bucket", "buckets")
        api.bad("/api/v1/load/cluster?cluster=test.local&host=[", "host")
        api.bad("/api/v1/uptime?cluster=test.local&interval=0", "interval")
        api.bad("/api/v1/uptime?cluster=test.local&interval=-5m", "interval")
        api.bad("/api/v1/load/cluster?cluster=test.local&format=xml", "format", "not one of")

        rollups(api, e1)
        compact(api)
        gpu_cards(api, ml[0])
    finally:
        api.close()
    finish()


if __name__ == "__main__":
    main()
