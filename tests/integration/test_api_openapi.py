"""GET /api/v1/openapi.json matches the implementation: every route of app/routes.c is in it,
every path in it is served (probed over HTTP), every documented query parameter is accepted, and
the rows the endpoints answer have exactly the documented columns. Endpoints whose parameters
fjord's query layer parses (x-fjord-strict-parameters) accept every documented parameter and refuse
any other."""
import json
import os
import re

from api_common import Api
from harness import SOURCE, check, finish

SAMPLE = {"node": "vm", "id": None, "topic": "sample", "collection": "anomalies"}


def routes():
    """(methods, path) of every entry of the route table in app/routes.c."""
    text = open(os.path.join(SOURCE, "app", "routes.c")).read()
    return re.findall(r'\{\s*"([A-Z,]+)"\s*,\s*"([^"]+)"\s*,\s*FJ_ACCESS_\w+\s*,\s*FJ_(?:NO_)?BODY\s*,\s*\w+\s*,\s*FJ_ERRORS_\w+\s*\}', text)


def covers(route, path):
    """Does route table entry `route` serve the OpenAPI path template `path`?"""
    if route.endswith("*"):
        return path.startswith(route[:-1]) and len(path) > len(route) - 1
    return path == route


def example(p):
    name, s = p["name"], p.get("schema", {})
    if name == "cluster":
        return "test.local"
    if name in ("from", "to", "at"):
        return "now"
    if name in ("bucket", "interval", "min_runtime"):
        return "1h"
    if name == "host":
        return "vm"
    if "enum" in s:
        return s["enum"][0]
    t = s.get("type")
    if t in ("integer", "number"):
        return "1"
    if t == "boolean":
        return "true"
    if t == "array":
        return "1" if s.get("items", {}).get("type") == "integer" else "x"
    return "x"


def props(schema):
    return set(schema.get("properties", {}))


def main():
    api = Api()
    try:
        r = api.f.get("/api/v1/openapi.json")  # no credential needed
        check(r.status == 200 and r.headers.get("Content-Type", "").startswith("application/json"), "openapi.json: %d" % r.status)
        doc = json.loads(r.body)
        check(doc.get("openapi", "").startswith("3."), "an OpenAPI 3 document")
        paths = doc.get("paths", {})
        check(len(paths) > 15, "%d paths" % len(paths))

        # every route is documented, with its methods
        table = routes()
        check(len(table) >= 15, "routes parsed from app/routes.c: %d" % len(table))
        for methods, route in table:
            docd = [p for p in paths if covers(route, p)]
            check(docd, "route %s %s is in the OpenAPI document" % (methods, route))
            for m in methods.lower().split(","):
                check(any(m in paths[p] for p in docd), "route %s documents method %s" % (route, m))
        # every documented path is a route
        for p, item in paths.items():
            for m in item:
                check(any(covers(route, p) and m.upper() in methods.split(",") for methods, route in table),
                      "documented %s %s is in the route table" % (m.upper(), p))

        # every documented path is served: probed with sample values
        jid = api.json("/api/v1/jobs?cluster=test.local&limit=1")["jobs"][0]["id"]
        SAMPLE["id"] = str(jid)
        for p, item in paths.items():
            url = re.sub(r"\{(\w+)\}", lambda m: SAMPLE.get(m.group(1), "x"), p)
            for m, op in item.items():
                q = "?cluster=test.local" if any(x["name"] == "cluster" for x in op.get("parameters", [])) else ""
                if m == "get":
                    r = api.get(url + q)
                elif m == "head":
                    r = api.f.request("HEAD", url + q)
                else:
                    r = api.f.post(url, "{}", auth=("test.local", api.tokens["test.local"]))
                served = r.status != 405 and not (r.status == 404 and "no such endpoint" in r.body)
                check(served, "%s %s is served: %d %s" % (m.upper(), url, r.status, r.body[:120]))
                if m != "get" or not op.get("x-fjord-strict-parameters"):
                    continue  # parameters of other handlers are theirs to check
                # every documented query parameter is accepted (never "unknown")
                for prm in op.get("parameters", []):
                    if prm.get("in") != "query" or prm["name"] in ("cluster",):
                        continue
                    sep = "&" if q else "?"
                    r = api.get(url + q + sep + "%s=%s" % (prm["name"], example(prm)))
                    unknown = r.status == 400 and "unknown" in r.json().get("error", {}).get("message", "")
                    check(not unknown, "%s accepts %s: %s" % (p, prm["name"], r.body[:160]))
                # and an undocumented one is refused
                if op.get("parameters"):
                    r = api.get(url + q + ("&" if q else "?") + "zzz=1")
                    check(r.status == 400 and r.json()["error"]["path"] == "zzz", "%s refuses an unknown parameter" % p)

        # answers have exactly the documented columns
        def schema_of(path, member):
            s = paths[path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["properties"][member]
            return s.get("items", s)

        cases = [("/api/v1/jobs", "jobs", "/api/v1/jobs?cluster=test.local"),
                 ("/api/v1/nodes", "nodes", "/api/v1/nodes?cluster=test.local"),
                 ("/api/v1/clusters", "clusters", "/api/v1/clusters"),
                 ("/api/v1/slurm/jobs", "jobs", "/api/v1/slurm/jobs?cluster=ex3.simula.no"),
                 ("/api/v1/slurm/partitions", "partitions", "/api/v1/slurm/partitions?cluster=fox.educloud.no"),
                 ("/api/v1/slurm/nodes", "nodes", "/api/v1/slurm/nodes?cluster=ex3.simula.no"),
                 ("/api/v1/uptime", "uptime", "/api/v1/uptime?cluster=test.local&from=2026-11-22T00:00:00Z&to=2026-11-22T01:00:00Z"),
                 ("/api/v1/errors", "errors", "/api/v1/errors?cluster=fox.educloud.no"),
                 ("/api/v1/load/cluster", "load", "/api/v1/load/cluster?cluster=test.local&from=2026-11-22T00:00:00Z&to=2026-11-22T01:00:00Z"),
                 ("/api/v1/load/nodes", "load", "/api/v1/load/nodes?cluster=test.local&from=2026-11-22T00:00:00Z&to=2026-11-22T01:00:00Z"),
                 ("/api/v1/load/gpus", "load", "/api/v1/load/gpus?cluster=mlx.hpc.uio.no&from=2025-11-25T00:00:00Z&to=2025-11-25T23:59:59Z"),
                 ("/api/v1/jobs/{id}/profile", "profile", "/api/v1/jobs/%d/profile?cluster=test.local" % jid),
                 ("/api/v1/jobs/{id}", "job", "/api/v1/jobs/%d?cluster=test.local" % jid),
                 ("/api/v1/jobs/{id}", "hosts", "/api/v1/jobs/%d?cluster=test.local" % jid),
                 ("/api/v1/nodes/{node}/sysinfo", "sysinfo", "/api/v1/nodes/vm/sysinfo?cluster=test.local")]
        for path, member, url in cases:
            answer = api.json(url)
            check(set(answer) == props(paths[path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]),
                  "%s: top-level members %s" % (path, sorted(answer)))
            rows = answer.get(member)
            rows = [rows] if isinstance(rows, dict) else rows or []
            check(rows, "%s answers rows" % url)
            want = props(schema_of(path, member))
            for row in rows[:3]:
                check(set(row) == want, "%s %s columns: %s" % (path, member, sorted(set(row) ^ want)))
                if "points" in row:
                    check(set(row["points"][0]) == props(schema_of(path, member)["properties"]["points"]["items"]),
                          "%s points columns" % path)
        # docs/api.md describes every query endpoint's parameters and fields (other modules'
        # endpoints have their own documents)
        md = open(os.path.join(SOURCE, "docs", "api.md")).read()
        for p, item in paths.items():
            op = item.get("get")
            if not op or not op.get("x-fjord-strict-parameters") or "/chimbuko/" in p or "/export/" in p:
                continue
            head = "### GET %s\n" % p
            check(head in md, "docs/api.md has a section for %s" % p)
            if head not in md:
                continue
            sec = md.split(head, 1)[1].split("\n### ", 1)[0]
            for prm in op.get("parameters", []):
                check("`%s`" % prm["name"] in sec or "`{%s}`" % prm["name"] in sec,
                      "docs/api.md documents %s of %s" % (prm["name"], p))
            js = op["responses"]["200"]["content"].get("application/json", {}).get("schema", {})
            for member, v in js.get("properties", {}).items():
                items = v.get("items", v)
                for col in items.get("properties", {}):
                    if col == "points":
                        continue
                    check("`%s`" % col in sec or "`points[].%s`" % col in sec or "the fields of the job list" in sec,
                          "docs/api.md documents field %s of %s" % (col, p))
    finally:
        api.close()
    finish()


if __name__ == "__main__":
    main()
