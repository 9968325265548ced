"""Node and cluster load and uptime over the real Sonar envelopes, with figures computed here: CPU
utilisation from two samples' cumulative per-core counters, memory and load averages, GPU memory
and power; a counter that goes down never gives negative use; a re-sent sample (same timestamp)
counts once; a node is reported down when its samples stop, and across a gap."""
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

        # Uptime: up while samples come, down after they stop, and down across a gap.
        e3 = shifted(e1, 3600)  # an hour after the last one
        api.post(e3)
        end = t1 + 3600 + 7200
        up = api.json("/api/v1/uptime?cluster=test.local&from=%s&to=%s&interval=10m" % (rfc(t0 - 600), rfc(end)))
        rows = [(r["state"], epoch(r["start"]), epoch(r["end"])) for r in up.get("uptime", []) if r["device"] == "node"]
        want = [("down", t0 - 600, t0), ("up", t0, t2), ("down", t2, t1 + 3600), ("up", t1 + 3600, t1 + 3600),
                ("down", t1 + 3600, end)]
        check(rows == want, "node intervals %s, want %s" % (rows, want))
        check(up.get("interval_s") == 600, "the answer says its interval")
        up = api.json("/api/v1/uptime?cluster=test.local&from=%s&to=%s&interval=2h" % (rfc(t0), rfc(end)))
        rows = [(r["state"], epoch(r["start"]), epoch(r["end"])) for r in up.get("uptime", [])]
        check(rows == [("up", t0, end)], "a longer interval bridges the gap and reaches the end: %s" % rows)
        # a node of the cluster with no samples in the window is down throughout
        up = api.json("/api/v1/uptime?cluster=mlx.hpc.uio.no&host=ml1&from=2025-11-25T09:00:00Z&to=2025-11-25T12:00:00Z&interval=10m")
        r = [x for x in up.get("uptime", []) if x["node"] == "ml1" and x["device"] == "node"]
        t = epoch(ml[0]["data"]["attributes"]["time"])
        check([(x["state"], epoch(x["start"]), epoch(x["end"])) for x in r]
              == [("down", epoch("2025-11-25T09:00:00Z"), t), ("up", t, t + 600), ("down", t + 600, epoch("2025-11-25T12:00:00Z"))]
              or [(x["state"]) for x in r] == ["down", "up", "down"], "ml1 one sample: %s" % r)
        g = [x for x in up.get("uptime", []) if x["device"].startswith("gpu")]
        check(len({x["device"] for x in g}) == 3 and all(x["state"] == "up" for x in g), "three GPUs up while ml1 is: %s" % g)

        # Bad parameters.
        api.bad("/api/v1/load/nodes?cluster=test.local&bucket=soon", "bucket", "not a duration")
        api.bad("/api/v1/load/nodes?cluster=test.local&from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&bucket=1", "bucket", "buckets")
        api.bad("/api/v1/load/cluster?cluster=test.local&host=[", "host")
        api.bad("/api/v1/uptime?cluster=test.local&interval=0", "interval")
        api.bad("/api/v1/uptime?cluster=test.local&interval=-5m", "interval")
        api.bad("/api/v1/load/cluster?cluster=test.local&format=xml", "format", "not one of")
    finally:
        api.close()
    finish()


if __name__ == "__main__":
    main()
