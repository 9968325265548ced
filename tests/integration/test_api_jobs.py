"""The job queries over the real Sonar envelopes: GET /api/v1/jobs (figures computed here from the
envelopes: peak and average memory, processes with rolled-up groups counted rolledup + 1, CPU time,
I/O, GPU use), filters, sorting, cursor pagination, CSV, Slurm fields, a job's detail and profile,
and 400 naming the bad parameter."""
import copy

from api_common import Api, envelope, epoch
from harness import check, finish

VM0 = "sonar-0.19-output/head-sample-default.json"    # test.local vm at 00:09:01
VM1 = "sonar-0.19-output/head-sample-batchless.json"  # the same node at 00:09:04


def job_figures(envs):
    """Per (job, epoch) over sample envelopes of one node: what the job list should say."""
    out = {}
    for env in envs:
        a = env["data"]["attributes"]
        t = epoch(a["time"])
        for j in a["jobs"]:
            if j["job"] == 0:
                continue
            seen, mem, nproc, cpu_time, rd, wr = set(), 0, 0, 0, 0, 0
            gpumem = 0
            for p in j["processes"]:
                key = (p.get("pid", 0), p.get("ppid", 0), p["cmd"])
                if key in seen:  # the writer keeps the first of a repeated process
                    continue
                seen.add(key)
                mem += p.get("resident_memory", 0)
                nproc += p.get("rolledup", 0) + 1
                cpu_time += p.get("cpu_time", 0)
                rd += p.get("data_read", 0)
                wr += p.get("data_written", 0)
                gpumem += sum(g.get("gpu_memory", 0) for g in p.get("gpus", []))
            f = out.setdefault((j["job"], j.get("epoch", 0)), {"mems": [], "nprocs": [], "last": None, "gpumem": []})
            f["mems"].append(mem)
            f["nprocs"].append(nproc)
            f["gpumem"].append(gpumem)
            if f["last"] is None or t >= f["last"][0]:
                f["last"] = (t, cpu_time, rd, wr)
    return out


def all_pages(api, path):
    rows, cursor, pages = [], None, 0
    while True:
        doc = api.json(path + ("&cursor=" + cursor if cursor else ""))
        rows += doc.get("jobs", [])
        pages += 1
        cursor = doc.get("next")
        if not cursor or pages > 1000:
            return rows, pages


def main():
    api = Api()
    try:
        vm = [envelope(VM0), envelope(VM1)]
        want = job_figures(vm)
        doc = api.json("/api/v1/jobs?cluster=test.local")
        jobs = doc.get("jobs", [])
        check(doc.get("next", "absent") is None, "one page: next is null")
        got = {(j["job"], j["epoch"]): j for j in jobs if j["job"] != 0}
        check(set(got) == set(want), "test.local jobs: %s vs %s" % (sorted(got)[:5], sorted(want)[:5]))
        later = {(j["job"], j.get("epoch", 0)) for j in vm[1]["data"]["attributes"]["jobs"] if j["job"]}
        for key, w in want.items():
            j = got.get(key)
            if not j:
                continue
            check(j["mem_peak_kb"] == max(w["mems"]), "job %s peak memory %s, computed %s" % (key, j["mem_peak_kb"], max(w["mems"])))
            check(j["mem_avg_kb"] == sum(w["mems"]) // len(w["mems"]), "job %s average memory" % (key,))
            check(j["processes"] == max(w["nprocs"]), "job %s processes" % (key,))
            check(j["samples"] == len(w["mems"]), "job %s samples" % (key,))
            check(j["cpu_time_s"] == w["last"][1], "job %s CPU time %s, computed %s" % (key, j["cpu_time_s"], w["last"][1]))
            check(j["read_kb"] == w["last"][2] and j["written_kb"] == w["last"][3], "job %s I/O" % (key,))
            check(j["hosts"] == ["vm"] and j["node"] == "vm" and j["cluster"] == "test.local", "job %s host" % (key,))
            check(j["running"] == (key in later), "job %s running %s" % (key, j["running"]))
            check(j["duration_s"] == epoch(j["end"]) - epoch(j["start"]), "job %s duration" % (key,))
            check(j["state"] is None and j["partition"] is None, "no Slurm fields for a local job")

        # A rolled-up group counts rolledup + 1 processes (fox: python3 rolled up 99, plus one).
        fox = envelope("real/3+sample.fox.educloud.no.json")
        fw = job_figures([fox])
        check(fw[(2926899, 0)]["nprocs"] == [101], "computed 101 processes for the rolled-up job")
        j = api.json("/api/v1/jobs?cluster=fox.educloud.no&job=2926899").get("jobs", [])
        check(len(j) == 1 and j[0]["processes"] == 101, "rolled-up job has 101 processes: %s" % [x.get("processes") for x in j])
        check(len(j) == 1 and j[0]["mem_peak_kb"] == fw[(2926899, 0)]["mems"][0], "rolled-up job memory")
        check(len(j) == 1 and j[0]["node"] is None and j[0]["epoch"] == 0, "a Slurm job has no node of its own")

        # GPU use (ex3 g001): peaks and the some/none filter.
        g001 = envelope("real/0+sample-g001.ex3.simula.no.json")
        gw = job_figures([g001])
        some = api.json("/api/v1/jobs?cluster=ex3.simula.no&gpu=some&host=g001").get("jobs", [])
        want_gpu = {k[0] for k, w in gw.items() if max(w["gpumem"]) > 0}
        check({x["job"] for x in some} >= want_gpu and want_gpu, "gpu=some has the GPU jobs %s" % sorted(want_gpu))
        for x in some:
            if (x["job"], 0) in gw:
                check(x["gpumem_peak_kb"] == max(gw[(x["job"], 0)]["gpumem"]), "job %s GPU memory peak" % x["job"])
        none = api.json("/api/v1/jobs?cluster=ex3.simula.no&gpu=none&host=g001").get("jobs", [])
        check(not ({x["job"] for x in none} & want_gpu), "gpu=none excludes them")
        check(all(x["gpu_peak"] == 0 and x["gpumem_peak_kb"] == 0 for x in none), "gpu=none: no GPU use")

        # Slurm fields join the rectified job (a job record made from a real one, for a g001 job).
        rec = envelope("real/0+job-srl-login3.ex3.simula.no.json")
        rec = copy.deepcopy(rec)
        js = rec["data"]["attributes"].get("slurm_jobs") or rec["data"]["attributes"]["jobs"]
        slurm = dict(js[0])
        slurm.update({"job_id": 928057, "job_state": "RUNNING", "partition": "a100q", "account": "acc-x",
                      "job_name": "train", "nodes": ["g001"], "start_time": "2025-11-27T08:00:00+01:00",
                      "time_limit": 7200})
        key = "slurm_jobs" if "slurm_jobs" in rec["data"]["attributes"] else "jobs"
        rec["data"]["attributes"][key] = [slurm]
        api.post(rec)
        j = api.json("/api/v1/jobs?cluster=ex3.simula.no&job=928057").get("jobs", [])
        check(len(j) == 1 and j[0]["state"] == "RUNNING" and j[0]["partition"] == "a100q"
              and j[0]["account"] == "acc-x" and j[0]["job_name"] == "train", "Slurm fields: %s" % j)
        check(len(j) == 1 and j[0]["running"] is True, "running from the Slurm state")
        f = api.json("/api/v1/jobs?cluster=ex3.simula.no&state=RUNNING&partition=a100q&account=acc-x").get("jobs", [])
        check([x["job"] for x in f] == [928057], "state/partition/account filters: %s" % [x["job"] for x in f])
        f = api.json("/api/v1/jobs?cluster=ex3.simula.no&state=COMPLETED").get("jobs", [])
        check(f == [], "no completed Slurm jobs")

        # Filters over the mlx nodes.
        ml = [envelope("real/0+sample-ml%d.hpc.uio.no.json" % i) for i in (1, 2, 3)]
        all_ml = api.json("/api/v1/jobs?cluster=mlx.hpc.uio.no&limit=100000").get("jobs", [])
        one = api.json("/api/v1/jobs?cluster=mlx.hpc.uio.no&host=ml1&limit=100000").get("jobs", [])
        check(one and all("ml1" in x["hosts"] or "ml1.hpc.uio.no" in x["hosts"] for x in one), "host=ml1 selects ml1")
        rng = api.json("/api/v1/jobs?cluster=mlx.hpc.uio.no&host=ml[1-2]&limit=100000").get("jobs", [])
        wild = api.json("/api/v1/jobs?cluster=mlx.hpc.uio.no&host=ml*&limit=100000").get("jobs", [])
        check(len(one) < len(rng) <= len(wild) == len(all_ml), "ranges and wildcards: %d < %d <= %d == %d"
              % (len(one), len(rng), len(wild), len(all_ml)))
        users = {p["user"] for e in ml for p in e["data"]["attributes"]["jobs"] if p["job"] and p.get("user")}
        u = sorted(users)[0]
        byu = api.json("/api/v1/jobs?cluster=mlx.hpc.uio.no&user=%s&limit=100000" % u).get("jobs", [])
        check(byu and all(x["user"] == u for x in byu), "user filter")
        py = api.json("/api/v1/jobs?cluster=mlx.hpc.uio.no&command=pyth*&limit=100000").get("jobs", [])
        check(py and all(any(c.startswith("pyth") for c in x["commands"]) for x in py), "command glob filter")
        big = api.json("/api/v1/jobs?cluster=mlx.hpc.uio.no&min_mem_peak_kb=1G&limit=100000").get("jobs", [])
        check(big and all(x["mem_peak_kb"] >= 1 << 20 for x in big), "min_mem_peak_kb=1G")
        check(len(big) == sum(1 for x in all_ml if x["mem_peak_kb"] >= 1 << 20), "min_mem_peak_kb selects exactly")
        low = api.json("/api/v1/jobs?cluster=mlx.hpc.uio.no&max_cpu_peak=0.5&limit=100000").get("jobs", [])
        check(len(low) == sum(1 for x in all_ml if x["cpu_peak"] <= 0.5), "max_cpu_peak selects exactly")
        check(api.json("/api/v1/jobs?cluster=test.local&min_runtime=1h").get("jobs") == [], "min_runtime")
        run = api.json("/api/v1/jobs?cluster=test.local&running=true&limit=100000").get("jobs", [])
        done = api.json("/api/v1/jobs?cluster=test.local&running=false&limit=100000").get("jobs", [])
        check(len(run) + len(done) == len(jobs) and all(x["running"] for x in run) and not any(x["running"] for x in done),
              "running true/false split the jobs")
        win = api.json("/api/v1/jobs?cluster=test.local&from=2026-11-22T00:09:03Z&limit=100000").get("jobs", [])
        check({(x["job"], x["epoch"]) for x in win if x["job"]} == later, "from: jobs that ended after it")
        check(api.json("/api/v1/jobs?cluster=test.local&to=2026-11-22T00:09:00Z").get("jobs") == [], "to before all jobs")

        # Sorting and pagination: every page in order, nothing twice, nothing lost.
        for sort, order in (("start", "asc"), ("mem_peak_kb", "desc"), ("cpu_avg", "asc"), ("duration", "desc")):
            base = "/api/v1/jobs?cluster=mlx.hpc.uio.no&sort=%s&order=%s" % (sort, order)
            whole = api.json(base + "&limit=100000").get("jobs", [])
            paged, pages = all_pages(api, base + "&limit=7")
            check([x["id"] for x in paged] == [x["id"] for x in whole], "pages of %s %s equal one page" % (sort, order))
            check(pages == (len(whole) + 6) // 7 or pages == (len(whole) + 6) // 7 + 1, "%d pages" % pages)
            field = {"start": "start", "duration": "duration_s"}.get(sort, sort)
            vals = [x[field] for x in whole]
            check(vals == sorted(vals, reverse=order == "desc"), "sorted by %s %s" % (sort, order))
        r = api.get("/api/v1/jobs?cluster=mlx.hpc.uio.no&limit=3")
        nxt = r.json()["next"]
        check(r.headers.get("Fjord-Next-Cursor") == nxt, "next cursor also in a header")
        api.bad("/api/v1/jobs?cluster=mlx.hpc.uio.no&sort=cpu_avg&cursor=" + nxt, "cursor", "not a cursor of this listing")
        api.bad("/api/v1/jobs?cluster=mlx.hpc.uio.no&cursor=garbage!", "cursor")

        # CSV: the same rows; lists in one cell; asked by parameter or Accept.
        rows = api.csv("/api/v1/jobs?cluster=test.local&limit=100000")
        rows2 = api.csv("/api/v1/jobs?cluster=test.local&limit=100000", accept=True)
        check(len(rows) == len(jobs) == len(rows2), "CSV has the JSON's rows: %d %d %d" % (len(rows), len(jobs), len(rows2)))
        byid = {str(x["id"]): x for x in jobs}
        for row in rows:
            j = byid.get(row["id"])
            check(j is not None and int(row["mem_peak_kb"]) == j["mem_peak_kb"] and row["commands"] == ",".join(j["commands"])
                  and row["start"] == j["start"] and row["running"] == ("true" if j["running"] else "false"),
                  "CSV row %s equals JSON" % row.get("id"))
        check(list(rows[0].keys())[:3] == ["id", "cluster", "job"], "CSV header names the columns")

        # One job: its row and per-host figures; the profile of its processes.
        key = max(want, key=lambda k: max(want[k]["mems"]))
        jid = got[key]["id"]
        d = api.json("/api/v1/jobs/%d?cluster=test.local" % jid)
        check(d.get("job", {}).get("id") == jid and d["job"]["mem_peak_kb"] == got[key]["mem_peak_kb"], "detail row")
        h = d.get("hosts", [])
        check(len(h) == 1 and h[0]["host"] == "vm" and h[0]["samples"] == 2 and h[0]["mem_peak_kb"] == got[key]["mem_peak_kb"],
              "detail hosts: %s" % h)
        prof = api.json("/api/v1/jobs/%d/profile?cluster=test.local&bucket=1h" % jid)
        series = prof.get("profile", [])
        procs = {}
        for e in vm:
            for j in e["data"]["attributes"]["jobs"]:
                if (j["job"], j.get("epoch", 0)) == key:
                    for p in j["processes"]:
                        procs.setdefault((p.get("pid", 0), p["cmd"]), []).append(p.get("resident_memory", 0))
        check(len(series) == len(procs), "one series per process: %d vs %d" % (len(series), len(procs)))
        for s in series:
            m = procs.get((s["pid"], s["cmd"]), [])
            pts = s["points"]
            check(len(pts) == 1 and pts[0]["samples"] == len(m) and pts[0]["mem_max_kb"] == max(m or [0])
                  and pts[0]["mem_kb"] == round(sum(m) / max(len(m), 1)), "profile of %s: %s vs %s" % (s["cmd"], pts, m))
        check(prof.get("bucket_s") == 3600, "profile says its bucket")
        byh = api.json("/api/v1/jobs/%d/profile?cluster=test.local&bucket=1h&by=host" % jid).get("profile", [])
        check(len(byh) == 1 and byh[0]["pid"] is None and byh[0]["points"][0]["mem_max_kb"] == got[key]["mem_peak_kb"],
              "by=host sums the processes: %s" % byh)
        prows = api.csv("/api/v1/jobs/%d/profile?cluster=test.local&bucket=1h" % jid)
        check(len(prows) == sum(len(s["points"]) for s in series), "profile CSV is flat")
        r = api.get("/api/v1/jobs/99999999?cluster=test.local")
        check(r.status == 404 and "no job" in r.body, "unknown job: 404 %d %s" % (r.status, r.body[:100]))
        r = api.get("/api/v1/jobs/%d/nonsense?cluster=test.local" % jid)
        check(r.status == 404, "unknown job sub-resource: %d" % r.status)

        # 400 naming the parameter, and the cluster checks.
        api.bad("/api/v1/jobs", "cluster", "required")
        api.bad("/api/v1/jobs?cluster=test.local&from=yesterday", "from", "not a time")
        api.bad("/api/v1/jobs?cluster=test.local&from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "from", "after")
        api.bad("/api/v1/jobs?cluster=test.local&limit=0", "limit")
        api.bad("/api/v1/jobs?cluster=test.local&limt=5", "limt", "did you mean 'limit'")
        api.bad("/api/v1/jobs?cluster=test.local&sort=colour", "sort", "not one of")
        api.bad("/api/v1/jobs?cluster=test.local&host=c[5-1]", "host")
        api.bad("/api/v1/jobs?cluster=test.local&min_mem_peak_kb=lots", "min_mem_peak_kb", "not a size")
        api.bad("/api/v1/jobs?cluster=test.local&running=perhaps", "running", "boolean")
        api.bad("/api/v1/jobs?cluster=test.local&job=12,x", "job")
        api.bad("/api/v1/jobs/%d/profile?cluster=test.local&bucket=0" % jid, "bucket")
        r = api.get("/api/v1/jobs?cluster=no.such.cluster")
        check(r.status == 404 and r.json()["error"]["path"] == "cluster", "unknown cluster: %d %s" % (r.status, r.body[:200]))
        r = api.get("/api/v1/jobs?cluster=ex3.simula.no", auth=("mlx.hpc.uio.no", api.tokens["mlx.hpc.uio.no"]))
        check(r.status == 403, "a cluster credential cannot read another cluster: %d" % r.status)
        r = api.get("/api/v1/jobs?cluster=mlx.hpc.uio.no", auth=("mlx.hpc.uio.no", api.tokens["mlx.hpc.uio.no"]))
        check(r.status == 200, "a cluster credential reads its own cluster: %d" % r.status)
        r = api.f.get("/api/v1/jobs?cluster=mlx.hpc.uio.no")
        check(r.status == 401, "no credential: %d" % r.status)
    finally:
        api.close()
    finish()


if __name__ == "__main__":
    main()
