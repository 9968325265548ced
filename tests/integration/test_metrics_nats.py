"""The NATS subscriber (--nats): a real nats-server on 127.0.0.1, messages published on
<cluster>.metrics, <cluster>.events.<class> and <cluster>.log.<component> (NATS's text protocol,
spoken directly), stored as metrics, events and logs of the subject's cluster."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time

from harness import Fjord, check, finish, free_port, nats_publish


def main():
    server = shutil.which("nats-server") or "/usr/sbin/nats-server"
    if not os.path.exists(server):
        print("nats-server not installed (scripts/install-deps.sh test): skipped")
        print("0 passed, 0 failed")
        return
    nport = free_port()
    nats = subprocess.Popen([server, "-a", "127.0.0.1", "-p", str(nport)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    f = Fjord()
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", nport), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        token = f.token("fritz")
        f.extra = ["--nats", "nats://127.0.0.1:%d" % nport]
        f.start()
        time.sleep(0.3)  # subscriptions are set up before fjord listens; give the server a moment
        t = 1700000040
        nats_publish(nport, [
            ("fritz.metrics", b"cpu_load,hostname=f1,type=node value=1.5 %d\ncpu_load,hostname=f2,type=node value=2.5 %d\n" % (t, t)),
            ("alex.metrics", b"cpu_load,hostname=a1,type=node value=7 %d\n" % t),
            ("fritz.events.slurm", b'slurm,hostname=m1 event="drain f1" %d\n' % t),
            ("fritz.log.ccmc", b'ccmc,hostname=f1,loglevel=warn log="collector slow" %d\n' % t),
            ("fritz.metrics", b"this is not line protocol\n"),
            ("other.subject", b"cpu_load,hostname=x value=1 %d\n" % t),
        ])
        ok = False
        for _ in range(100):
            rows = f.query("SELECT cluster, host FROM ts_series ORDER BY cluster, host")
            evs = f.query("SELECT kind FROM cc_messages ORDER BY kind")
            if len(rows) >= 3 and len(evs) >= 2:
                ok = True
                break
            time.sleep(0.1)
        check(ok, "messages were stored: %s %s" % (rows, evs))
        check(rows == [("alex", "a1"), ("fritz", "f1"), ("fritz", "f2")], "subject's cluster, no stray subjects: %s" % rows)
        check(evs == [("event",), ("log",)], "events and logs stored: %s" % evs)
        r = f.request("POST", "/api/query", json.dumps({"cluster": "fritz", "from": t, "to": t + 60,
                                                        "queries": [{"metric": "cpu_load", "host": "f2"}]}), auth=token)
        check(r.status == 200 and r.json()["results"][0][0]["avg"] == 2.5, "queryable: %s" % r.body)
        check(f.query("SELECT count(*) FROM request_log")[0][0] >= 1, "NATS messages are in the request log too")
        check(f.stop() == 0, "clean stop with a NATS connection")
        nats.terminate()
        nats.wait(timeout=10)
        f.extra = ["--nats", "nats://127.0.0.1:%d" % nport]
        p = subprocess.run([os.environ.get("FJORD_BIN", "build/fjord"), "serve", "--listen", "127.0.0.1:%d" % free_port(),
                            "--db", f.db] + f.extra, capture_output=True, text=True, timeout=60)
        check(p.returncode != 0 and "NATS" in p.stderr, "no NATS server: fjord refuses to start (%s)" % p.stderr.strip())
    finally:
        f.cleanup()
        if nats.poll() is None:
            nats.terminate()
            nats.wait(timeout=10)
    finish()


if __name__ == "__main__":
    main()
