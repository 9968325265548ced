"""End-to-end test of the web dashboard: a real fjord on 127.0.0.1 loaded with the real data of
shared/data (every Sonar envelope, the ClusterCockpit line-protocol sample, Chimbuko packets and
provenance records), then web/e2e/e2e.mjs drives headless Chromium (Debian's chromium, through
playwright-core) through every view and checks what it shows against the API's answers.

    python3 web/e2e/run_e2e.py            run the test (screenshots in web/e2e-out/ or $FJ_E2E_OUT)
    python3 web/e2e/run_e2e.py --serve    only start the loaded server and print its address and a
                                          read-only secret (for working on the dashboard); Ctrl-C stops
"""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WEB = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(os.path.dirname(WEB), "tests", "integration"))

from api_common import Api  # noqa: E402
from harness import SHARED, check, finish  # noqa: E402

LP = os.path.join(SHARED, "data", "lineproto", "cc-synthetic-fritz-2nodes-1interval.lp")
CHIMBUKO = os.path.join(SHARED, "data", "chimbuko")


def load_extra(api):
    """Line-protocol metrics (cluster fritz) and Chimbuko data (cluster hpc1) besides the Sonar data."""
    lp = open(LP, "rb").read()
    r = api.f.post("/api/write?cluster=fritz", lp, headers={"Content-Type": "text/plain"},
                   auth=("fritz", api.tokens["fritz"]))
    check(r.status in (200, 204), "line protocol stored: %d %s" % (r.status, r.body[:200]))
    hpc = ("hpc1", api.tokens["hpc1"])
    for name in ("pserver-packet-full.json", "pserver-packet-idle.json", "pserver-packet-minimal.json"):
        r = api.f.post("/api/anomalydata", open(os.path.join(CHIMBUKO, "synthetic-v2", name)).read(), auth=hpc)
        check(r.status == 200, "chimbuko %s: %d %s" % (name, r.status, r.body[:200]))
    for name, coll in (("legacy-v1-anomaly-cpu-basic.json", "anomalies"), ("legacy-v1-anomaly-gpu.json", "anomalies"),
                       ("legacy-v1-normalexec.json", "normalexecs"),
                       ("synthetic-v2/global-func_stats-records.json", "func_stats")):
        r = api.f.post("/api/v1/ingest/chimbuko/" + coll, open(os.path.join(CHIMBUKO, name)).read(), auth=hpc)
        check(r.status == 200, "chimbuko %s: %d %s" % (name, r.status, r.body[:200]))


def main():
    # SIGTERM ends the script like Ctrl-C, so the server it started is stopped too.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    api = Api(extra_clusters=("fritz", "hpc1"))
    try:
        load_extra(api)
        base = "http://127.0.0.1:%d" % api.f.port
        if "--serve" in sys.argv:
            print("%s  reader secret: %s" % (base, api.reader), flush=True)
            while True:
                time.sleep(3600)
        out = os.environ.get("FJ_E2E_OUT", os.path.join(WEB, "e2e-out"))
        env = dict(os.environ, FJ_URL=base, FJ_READER=api.reader, FJ_E2E_OUT=out,
                   FJ_WRITER_CLUSTER="mlx.hpc.uio.no", FJ_WRITER_SECRET=api.tokens["mlx.hpc.uio.no"])
        p = subprocess.run(["node", os.path.join(HERE, "e2e.mjs")], env=env, timeout=480)
        check(p.returncode == 0, "the browser test passed (exit %d)" % p.returncode)
    except KeyboardInterrupt:
        pass
    finally:
        api.close()
    finish()


if __name__ == "__main__":
    main()
