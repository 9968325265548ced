#!/usr/bin/env bash
# pusher_bench.sh — CPU time and peak RSS per sample of fjord-push with 8 (fake) GPUs and no
# process collection. Not a test: it prints figures to compare with the targets
# (< 2 ms CPU per sample, < 8 MB peak RSS).
#   1. pusher_bench: one collector, SAMPLES samples in a loop (collection, JSON, zstd): CPU per sample.
#   2. the real daemon, sending to a local HTTP server on 127.0.0.1 every second for SECONDS
#      seconds (sysinfo and topology at start, then samples; zstd, spool, libcurl POSTs): its
#      VmHWM over the whole run (the peak RSS), its RSS split and its CPU time per sample.
# Usage: tests/bench/pusher_bench.sh [BUILD_DIR] [SAMPLES] [SECONDS]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build-push}
n=${2:-2000}
secs=${3:-20}
bench=$build/pusher/pusher_bench
fake=$build/pusher/fake_nvml/libnvidia-ml.so.1
bin=$build/pusher/fjord-push
for f in "$bench" "$fake" "$bin"; do
  [ -e "$f" ] || { echo "missing $f: build with cmake --build $build" >&2; exit 1; }
done
export FJ_FAKE_NVML="gpus 8"
echo "== steady state: one collector, $n samples (8 GPUs, processes=none, JSON + zstd) on this machine's /proc"
"$bench" "$n" --nvml-library "$fake" --processes none --amd=false --cluster bench --node bench-node
echo
echo "== the daemon for ${secs}s: samples every second, sent to a local HTTP server (peak RSS = VmHWM)"
python3 - "$bin" "$fake" "$secs" <<'PY'
import http.server, os, signal, subprocess, sys, tempfile, threading, time

binary, fake, secs = sys.argv[1], sys.argv[2], int(sys.argv[3])
posts = []

class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real server

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        posts.append((self.path, len(body)))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *a):
        pass

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
threading.Thread(target=srv.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{srv.server_address[1]}/ingest"


def status(pid):
    with open(f"/proc/{pid}/status") as f:
        return {l.split(":")[0]: l.split(":")[1].strip() for l in f if ":" in l}


def rollup(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return {l.split(":")[0]: l.split(":")[1].strip() for l in f.readlines()[1:]}


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


with tempfile.TemporaryDirectory() as spool:
    p = subprocess.Popen([binary, "--url", url, "--cluster", "bench", "--node", "bench-node",
                          "--nvml-library", fake, "--processes", "none", "--amd=false",
                          "--sample-interval", "1s", "--send-jitter", "0s", "--spool-dir", spool],
                         stderr=subprocess.DEVNULL)
    try:
        time.sleep(2.5)  # startup, sysinfo, topology and the first samples are done
        c0, n0 = cpu_s(p.pid), sum(1 for path, _ in posts if path == "/ingest")
        time.sleep(secs)
        c1, n1 = cpu_s(p.pid), sum(1 for path, _ in posts if path == "/ingest")
        st, ru = status(p.pid), rollup(p.pid)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
srv.shutdown()
samples = n1 - n0
print(f"documents_received {len(posts)}")
print(f"samples_in_window {samples}")
if samples:
    print(f"daemon_cpu_ms_per_sample {1000 * (c1 - c0) / samples:.2f} (collection + zstd + spool + POST)")
print(f"peak_rss_kb {st['VmHWM'].split()[0]}  (VmHWM over the whole run)")
print(f"rss_now_kb {st['VmRSS'].split()[0]}  RssAnon {st['RssAnon']}  RssFile {st['RssFile']}")
print(f"pss_kb {ru['Pss'].split()[0]}  private_kb {int(ru['Private_Clean'].split()[0]) + int(ru['Private_Dirty'].split()[0])}"
      "  (pages not shared with other processes)")
PY
