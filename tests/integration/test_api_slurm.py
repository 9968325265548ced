"""Slurm jobs, partitions and node states, error records, clusters, nodes with their sysinfo, a
node's sysinfo history and topology, over the real Sonar envelopes; figures computed here from
the envelopes (node ranges expanded independently)."""
import base64
import copy
import re

from api_common import Api, envelope, epoch
from harness import check, finish


def expand(r):
    """Slurm host ranges, the simple forms the data uses: a[1-3,5], zero padding kept."""
    m = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", r)
    if not m:
        return [r]
    pre, body, post = m.groups()
    out = []
    for item in body.split(","):
        lo, _, hi = item.partition("-")
        hi = hi or lo
        for v in range(int(lo), int(hi) + 1):
            out += expand("%s%0*d%s" % (pre, len(lo), v, post))
    return out


def main():
    api = Api()
    try:
        # --- Slurm jobs: the latest value of each field, per job and step -----------------------
        env = envelope("real/0+job-srl-login3.ex3.simula.no.json")
        recs = env["data"]["attributes"].get("slurm_jobs") or env["data"]["attributes"]["jobs"]
        keys = sorted({(j["job_id"], j.get("job_step", "")) for j in recs})
        doc = api.json("/api/v1/slurm/jobs?cluster=ex3.simula.no")
        rows = doc.get("jobs", [])
        check([(r["job_id"], r["step"]) for r in rows] == keys, "jobs and steps in order: %s" % [(r["job_id"], r["step"]) for r in rows][:6])
        check(doc.get("next", "absent") is None, "one page")
        by = {(r["job_id"], r["step"]): r for r in rows}
        for j in recs:
            r = by.get((j["job_id"], j.get("job_step", "")))
            if not r:
                continue
            state = j["job_state"].split()[0]
            check(r["state"] == state, "%s state %s vs %s" % (j["job_id"], r["state"], state))
            if state != j["job_state"]:
                check(r["state_raw"] == j["job_state"], "raw state kept: %s" % r["state_raw"])
            if j.get("user_name"):
                check(r["user"] == j["user_name"], "user of %s" % j["job_id"])
            if j.get("submit_time"):
                check(epoch(r["submit_time"]) == epoch(j["submit_time"]), "submit time of %s" % j["job_id"])
            check(r["start_time"] is None if not j.get("start_time") else epoch(r["start_time"]) == epoch(j["start_time"]),
                  "start time of %s (empty is null)" % j["job_id"])
        pend = api.json("/api/v1/slurm/jobs?cluster=ex3.simula.no&state=PENDING").get("jobs", [])
        check([r["job_id"] for r in pend] == [j["job_id"] for j in recs if j["job_state"] == "PENDING"], "state filter")
        run = api.json("/api/v1/slurm/jobs?cluster=ex3.simula.no&running=true").get("jobs", [])
        check({r["state"] for r in run} <= {"PENDING", "RUNNING"} and len(run) == len(pend), "running=true: pending and running")
        nost = api.json("/api/v1/slurm/jobs?cluster=ex3.simula.no&steps=false").get("jobs", [])
        check(all(r["step"] == "" for r in nost) and len(nost) == len({k[0] for k in keys}), "steps=false: jobs only")
        u4 = api.json("/api/v1/slurm/jobs?cluster=ex3.simula.no&user=user-4").get("jobs", [])
        check([r["job_id"] for r in u4] == [934986], "user filter (steps carry the job's user only when sent): %s" % u4)
        acc = api.json("/api/v1/slurm/jobs?cluster=ex3.simula.no&account=user-4").get("jobs", [])
        check(len(acc) == 2, "account filter: job and step")
        arr = api.json("/api/v1/slurm/jobs?cluster=ex3.simula.no&array=935016").get("jobs", [])
        check([r["job_id"] for r in arr] == [935018] and arr[0]["array_job_id"] == 935016, "array filter")
        check(api.json("/api/v1/slurm/jobs?cluster=ex3.simula.no&het=1").get("jobs") == [], "het filter")
        ids = api.json("/api/v1/slurm/jobs?cluster=ex3.simula.no&job=934801,935008").get("jobs", [])
        check(sorted({r["job_id"] for r in ids}) == [934801, 935008], "job filter")
        desc = api.json("/api/v1/slurm/jobs?cluster=ex3.simula.no&order=desc").get("jobs", [])
        check([(r["job_id"], r["step"]) for r in desc] == keys[::-1], "order=desc")
        seen, cursor, n = [], None, 0
        while n < 50:
            d = api.json("/api/v1/slurm/jobs?cluster=ex3.simula.no&limit=4" + ("&cursor=" + cursor if cursor else ""))
            seen += [(r["job_id"], r["step"]) for r in d.get("jobs", [])]
            cursor, n = d.get("next"), n + 1
            if not cursor:
                break
        check(seen == keys and n == (len(keys) + 3) // 4, "pages of 4: %d pages" % n)
        fox = api.json("/api/v1/slurm/jobs?cluster=fox.educloud.no").get("jobs", [])
        check(len(fox) == 1 and fox[0]["nodes"] == "c1-[10-20],bigmem-1" and fox[0]["requested_cpus"] == 22
              and fox[0]["max_rss_kb"] is not None, "fox job with sacct fields: %s" % fox)
        hostf = api.json("/api/v1/slurm/jobs?cluster=fox.educloud.no&host=c1-15").get("jobs", [])
        check(len(hostf) == 1, "host filter over the expanded Slurm nodes")
        check(api.json("/api/v1/slurm/jobs?cluster=fox.educloud.no&host=c1-30").get("jobs") == [], "no job on c1-30")
        rows = api.csv("/api/v1/slurm/jobs?cluster=ex3.simula.no")
        check(len(rows) == len(keys) and rows[0]["job_id"] == str(keys[0][0]), "Slurm jobs as CSV")
        api.bad("/api/v1/slurm/jobs?cluster=ex3.simula.no&array=x", "array")
        api.bad("/api/v1/slurm/jobs?cluster=ex3.simula.no&steps=maybe", "steps")
        api.bad("/api/v1/slurm/jobs?cluster=ex3.simula.no&sort=start", "sort", "unknown")

        # --- partitions and node states of the latest cluster envelope ---------------------------
        cl = envelope("real/4+cluster.fox.educloud.no.json")["data"]["attributes"]
        parts = api.json("/api/v1/slurm/partitions?cluster=fox.educloud.no").get("partitions", [])
        want = {p["name"]: sorted(h for r in p["nodes"] for h in expand(r)) for p in cl["partitions"]}
        check({p["partition"]: p["hosts"] for p in parts} == want, "partitions and their nodes")
        check(all(p["nodes"] == len(p["hosts"]) for p in parts), "node counts")
        check(all(epoch(p["time"]) == epoch(cl["time"]) for p in parts), "time of the envelope")
        old = api.json("/api/v1/slurm/partitions?cluster=ex3.simula.no&at=2025-12-31T00:00:00Z").get("partitions", [])
        new = api.json("/api/v1/slurm/partitions?cluster=ex3.simula.no").get("partitions", [])
        check([p["partition"] for p in old] == ["dgx2q"] and [p["partition"] for p in new] == ["a100q"], "at picks the envelope")
        states = api.json("/api/v1/slurm/nodes?cluster=ex3.simula.no&host=g00[1-3]").get("nodes", [])
        check([(s["node"], s["states"]) for s in states] == [("g001", ["ALLOCATED"]), ("g002", ["MIXED"]), ("g003", ["MIXED"])],
              "latest node states: %s" % states)
        states = api.json("/api/v1/slurm/nodes?cluster=ex3.simula.no&host=g00[1-3]&at=2025-12-31T00:00:00Z").get("nodes", [])
        check([(s["node"], s["states"]) for s in states] == [("g001", ["MIXED"]), ("g002", ["MIXED"])], "states at a time: %s" % states)
        api.bad("/api/v1/slurm/nodes?cluster=ex3.simula.no&at=later", "at")

        # --- errors ------------------------------------------------------------------------------
        errs = api.json("/api/v1/errors?cluster=fox.educloud.no").get("errors", [])
        check(sorted(e["detail"] for e in errs) == ["No can do", "Node not cooperating"], "error records: %s" % errs)
        check(all(e["source"] == "envelope" for e in errs), "from error envelopes")
        p1 = api.json("/api/v1/errors?cluster=fox.educloud.no&limit=1")
        p2 = api.json("/api/v1/errors?cluster=fox.educloud.no&limit=1&cursor=%s" % p1.get("next"))
        check(p1.get("errors", [None])[0] == errs[0] and p2.get("errors", [None])[0] == errs[1] and p2.get("next") is None,
              "errors paged one by one")
        check(api.json("/api/v1/errors?cluster=fox.educloud.no&source=sample").get("errors") == [], "source filter")
        api.bad("/api/v1/errors?cluster=fox.educloud.no&cursor=%s" % api.json("/api/v1/jobs?cluster=test.local&limit=1")["next"],
                "cursor")

        # --- clusters, nodes, sysinfo, topology -------------------------------------------------
        cls = api.json("/api/v1/clusters").get("clusters", [])
        names = [c["cluster"] for c in cls]
        check(set(api.tokens) <= set(names) and names == sorted(names), "every cluster, by name: %s" % names)
        fox = [c for c in cls if c["cluster"] == "fox.educloud.no"]
        check(fox and fox[0]["slurm"] is True and fox[0]["partitions"] == sorted(want), "fox cluster: %s" % fox)
        own = api.f.get("/api/v1/clusters", auth=("mlx.hpc.uio.no", api.tokens["mlx.hpc.uio.no"])).json()
        check([c["cluster"] for c in own["clusters"]] == ["mlx.hpc.uio.no"], "a cluster credential sees its cluster")
        si = envelope("real/0+sysinfo-ml1.hpc.uio.no.json")["data"]["attributes"]
        nodes = api.json("/api/v1/nodes?cluster=mlx.hpc.uio.no&host=ml1").get("nodes", [])
        n = [x for x in nodes if x["node"] == "ml1"]
        check(len(n) == 1, "ml1 listed")
        if n:
            n = n[0]
            check(n["cpu_model"] == si["cpu_model"] and n["memory_kb"] == si["memory"] and n["sockets"] == si["sockets"]
                  and n["cores"] == si["sockets"] * si["cores_per_socket"] * si["threads_per_core"], "ml1 sysinfo: %s" % n)
            check(n["gpus"] == len(si["cards"]) and [c["model"] for c in n["gpu_cards"]] == [c["model"] for c in si["cards"]]
                  and n["gpu_cards"][0]["memory_kb"] == si["cards"][0]["memory"], "ml1 GPU cards")
            check(n["distances"] == si.get("distances"), "NUMA distances")
            check(epoch(n["sysinfo_time"]) == epoch(si["time"]), "sysinfo time")
            s = envelope("real/0+sample-ml1.hpc.uio.no.json")["data"]["attributes"]
            check(epoch(n["last_seen"]) == max(epoch(s["time"]), epoch(si["time"])), "last seen")
        g = api.json("/api/v1/nodes?cluster=ex3.simula.no&host=g001").get("nodes", [])
        check(g and g[0]["states"] == ["ALLOCATED"] and g[0]["partitions"] == [], "state and partitions from cluster data: %s"
              % [(x["states"], x["partitions"]) for x in g])
        h = api.json("/api/v1/nodes/ml1/sysinfo?cluster=mlx.hpc.uio.no").get("sysinfo", [])
        check(len(h) == 1 and h[0]["cpu_model"] == si["cpu_model"], "sysinfo history of ml1")
        h = api.json("/api/v1/nodes/g001/sysinfo?cluster=ex3.simula.no&to=2025-01-01T00:00:00Z").get("sysinfo", [])
        check(h == [], "window before any record")
        # the real sysinfo records carry empty topologies: a later one with both renderings
        g2env = copy.deepcopy(envelope("real/0+sysinfo-g002.ex3.simula.no.json"))
        g2 = g2env["data"]["attributes"]
        g2["time"] = "2025-12-09T12:16:34+01:00"
        svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>Machine (256GB) Package L#0</text></svg>\n' * 50
        g2["topo_svg"] = base64.b64encode(svg.encode()).decode()
        g2["topo_text"] = base64.b64encode(b"Machine (256GB total)\n  Package L#0\n").decode()
        api.post(g2env)
        r = api.get("/api/v1/nodes/g002/topology?cluster=ex3.simula.no")
        check(r.status == 200 and r.headers.get("Content-Type") == "image/svg+xml"
              and r.body.encode() == base64.b64decode(g2["topo_svg"]), "topology SVG decoded: %d %s" % (r.status, r.body[:80]))
        check(epoch(r.headers.get("Fjord-Time", "1970-01-01T00:00:00Z")) == epoch(g2["time"]), "topology time header")
        # a producer's SVG is a download in a sandbox, never a page of this origin
        check(r.headers.get("Content-Disposition") == 'attachment; filename="topology-g002.svg"'
              and r.headers.get("Content-Security-Policy") == "default-src 'none'; sandbox"
              and r.headers.get("X-Content-Type-Options") == "nosniff", "topology SVG's headers: %s" % r.headers)
        r = api.get("/api/v1/nodes/g002/topology?cluster=ex3.simula.no&kind=text")
        check(r.status == 200 and r.body.encode() == base64.b64decode(g2["topo_text"]), "topology text")
        r = api.get("/api/v1/nodes/ml1/topology?cluster=mlx.hpc.uio.no")
        check(r.status == 404 and r.json()["error"]["path"] == "node", "no topology: 404 naming node")
        r = api.get("/api/v1/nodes/nosuch/sysinfo?cluster=mlx.hpc.uio.no")
        check(r.status == 404 and "no node" in r.body, "unknown node: %d %s" % (r.status, r.body[:100]))
        r = api.get("/api/v1/nodes/ml1/nonsense?cluster=mlx.hpc.uio.no")
        check(r.status == 404 and "no such endpoint" in r.body, "unknown node sub-resource")
        r = api.get("/api/v1/nodes/ml1/measurements?cluster=mlx.hpc.uio.no")
        check(r.status in (200, 404) and "no such endpoint" not in r.body, "measurements still served: %d %s" % (r.status, r.body[:100]))
        api.bad("/api/v1/nodes/ml1/topology?cluster=mlx.hpc.uio.no&kind=png", "kind")
        api.bad("/api/v1/nodes?cluster=mlx.hpc.uio.no&limit=5", "limit", "unknown")
    finally:
        api.close()
    finish()


if __name__ == "__main__":
    main()
