"""PostgreSQL only: the writer recomputes the hourly load roll-ups of many node-hours in batches
(storage/pg/rollup.c, 256 node-hours a batch), and what it writes answers exactly as the samples do.

300 nodes post two samples each, one in each of two hours (the second hour's first CPU interval
opens at the first hour's sample), with their GPUs. Node and cluster load by whole hours are read
from the roll-ups written at ingest; then every roll-up is dropped and listed as to do, so queries
read the samples (storage/query/load.c, node by node), and those answers must be the same; then
one more sample makes the writer recompute all 601 listed node-hours in one transaction (three
batches), and the answers from the roll-ups must still be the same.
"""
import json
import os
import sys

from api_common import envelope, epoch, rfc, shifted
from harness import Fjord, check, finish

CLUSTER = "mlx.hpc.uio.no"
NODES = 300
H = epoch("2026-12-07T00:00:00Z")


def sample(ml1, node, t, step):
    """ml1's real sample as node's at time t, its counters advanced by step, without processes."""
    cpus = [c + step * (100 + 7 * i + node % 13) for i, c in enumerate(ml1["data"]["attributes"]["system"]["cpus"])]
    e = shifted(ml1, 0, cpus=cpus, used_memory=1000000 + 977 * node + step, load1=0.5 + node / 100.0 + step)
    a = e["data"]["attributes"]
    a["node"], a["time"], a["jobs"] = "rn%03d" % node, rfc(t), []
    return e


def main():
    if not os.environ.get("FJ_TEST_DB", "").startswith("postgres"):
        print("PostgreSQL only (FJ_TEST_DB=postgres)")
        sys.exit(77)
    ml1 = envelope("real/0+sample-ml1.hpc.uio.no.json")
    check(ml1["data"]["attributes"]["system"].get("gpus"), "the template sample has cards")
    f = Fjord()
    try:
        tok = f.token(CLUSTER)
        reader = f.token("reader", "--read-only")
        f.start()

        def post(e):
            r = f.post("/api/v1/ingest/sonar", json.dumps(e), auth=(CLUSTER, tok))
            check(r.status == 200, "post %s: %d %s" % (e["data"]["attributes"]["node"], r.status, r.body[:200]))

        def answers():
            q = "cluster=%s&from=%s&to=%s&bucket=3600" % (CLUSTER, rfc(H), rfc(H + 7199))
            out = {}
            for kind in ("nodes", "cluster"):
                r = f.get("/api/v1/load/%s?%s" % (kind, q), auth=("reader", reader))
                check(r.status == 200, "load/%s: %d %s" % (kind, r.status, r.body[:200]))
                out[kind] = r.json() if r.status == 200 else None
            return out

        for n in range(NODES):
            post(sample(ml1, n, H + 600 + n, 0))
            post(sample(ml1, n, H + 3600 + 600 + n, 1))
        ingest = answers()
        nodes = {p.get("node") for p in ingest["nodes"].get("load", [])} if ingest["nodes"] else set()
        check(len(nodes) == NODES, "node load of every node: %d" % len(nodes))
        check(f.query("SELECT count(*) FROM load_hourly")[0][0] == 2 * NODES, "a roll-up per node-hour")
        check(f.stop() == 0, "SIGTERM exits 0")

        f.execute("DELETE FROM load_hourly;"
                  "INSERT INTO load_hourly_todo (node_id, hour) SELECT DISTINCT node_id, time - time % 3600 FROM samples")
        f.start()
        from_samples = answers()
        check(from_samples == ingest, "the roll-ups written at ingest answer as the samples do")

        post(sample(ml1, 0, H + 7200 + 600, 2))  # the next write recomputes every listed node-hour
        check(f.query("SELECT count(*) FROM load_hourly_todo")[0][0] == 0, "the writer worked off the list")
        check(f.query("SELECT count(*) FROM load_hourly")[0][0] == 2 * NODES + 1,
              "a roll-up per node-hour, recomputed in batches")
        again = answers()
        check(again == from_samples, "the roll-ups recomputed in batches answer as the samples do")
        check(f.stop() == 0, "SIGTERM exits 0")
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
