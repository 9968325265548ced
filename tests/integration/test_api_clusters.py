"""GET /api/v1/clusters lists every cluster fjord holds data of, not only Sonar's: a cluster that sends
only line protocol is listed (0 nodes, its metrics' hosts counted from what was sent), and a cluster
with only Chimbuko data says it has Chimbuko data. Over a real fjord with the real Sonar envelopes."""
import os

from api_common import Api
from harness import SHARED, check, finish

LP = os.path.join(SHARED, "data", "lineproto", "cc-synthetic-fritz-2nodes-1interval.lp")
CHIMBUKO = os.path.join(SHARED, "data", "chimbuko", "synthetic-v2", "pserver-packet-full.json")


def main():
    api = Api(extra_clusters=("fritz", "hpc1"))
    try:
        lp = open(LP, "rb").read()
        # the hosts the file names, counted here from its lines (hostname=...)
        hosts = {t.split("=", 1)[1] for line in lp.decode().splitlines() if line and not line.startswith("#")
                 for t in line.split(" ", 1)[0].split(",")[1:] if t.startswith("hostname=")}
        r = api.f.post("/api/write?cluster=fritz", lp, headers={"Content-Type": "text/plain"},
                       auth=("fritz", api.tokens["fritz"]))
        check(r.status in (200, 204), "line protocol stored: %d %s" % (r.status, r.body[:200]))
        r = api.f.post("/api/anomalydata", open(CHIMBUKO).read(), auth=("hpc1", api.tokens["hpc1"]))
        check(r.status == 200, "Chimbuko packet stored: %d %s" % (r.status, r.body[:200]))

        cls = api.json("/api/v1/clusters").get("clusters", [])
        by = {c["cluster"]: c for c in cls}
        names = [c["cluster"] for c in cls]
        check(names == sorted(names, key=lambda n: n.encode()), "by name, byte-wise: %s" % names)
        fritz = by.get("fritz")
        check(fritz is not None, "a line-protocol-only cluster is listed: %s" % names)
        if fritz:
            check(fritz["nodes"] == 0 and fritz["last_seen"] is None and fritz["partitions"] == []
                  and fritz["chimbuko"] is False, "fritz has no Sonar nodes: %s" % fritz)
            check(fritz["metrics_hosts"] == len(hosts) and len(hosts) == 2, "fritz's metric hosts %s, sent %s"
                  % (fritz["metrics_hosts"], sorted(hosts)))
        hpc = by.get("hpc1", {})
        check(hpc.get("chimbuko") is True and hpc.get("nodes") == 0 and hpc.get("metrics_hosts") == 0,
              "a Chimbuko-only cluster says so: %s" % hpc)
        mlx = by.get("mlx.hpc.uio.no", {})
        check(mlx.get("nodes", 0) > 0 and mlx.get("metrics_hosts") == 0 and mlx.get("chimbuko") is False,
              "a Sonar cluster: %s" % mlx)
        # a cluster's own credential still sees only its own cluster, line protocol or not
        own = api.f.get("/api/v1/clusters", auth=("fritz", api.tokens["fritz"])).json()
        check([c["cluster"] for c in own.get("clusters", [])] == ["fritz"], "fritz's credential sees fritz: %s" % own)
        own = api.f.get("/api/v1/clusters", auth=("mlx.hpc.uio.no", api.tokens["mlx.hpc.uio.no"])).json()
        check([c["cluster"] for c in own.get("clusters", [])] == ["mlx.hpc.uio.no"], "mlx's credential sees mlx only")
        rows = api.csv("/api/v1/clusters", accept=True)
        check(any(r["cluster"] == "fritz" and r["metrics_hosts"] == "2" for r in rows), "CSV lists fritz too")
    finally:
        api.close()
    finish()


if __name__ == "__main__":
    main()
