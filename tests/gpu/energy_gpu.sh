#!/usr/bin/env bash
# The GPU half of the energy check (not run by CI; docs/energy.md "Checked on a GPU"): on a machine
# with an NVIDIA GPU, python3 and PyTorch, runs a known load on GPU 0 (matrix products for ~30 s
# between idle stretches) while
#   - the fjord-push daemon samples every 2 s into a capture server on 127.0.0.1 (its envelopes,
#     with each card's power and NVML energy counter, go to OUTDIR/daemon.jsonl),
#   - NVML's total energy counter and power are read every 100 ms (energy_sampler.py: before,
#     during, after; OUTDIR/nvml.jsonl),
#   - nvidia-smi --query-gpu=power.draw is sampled every 100 ms (-lms 100; OUTDIR/power.csv),
# and leaves everything in OUTDIR for energy_compare.py, which feeds the envelopes into a real fjord
# on another machine and prints fjord's job energy against the counter and the integrated power.
#   energy_gpu.sh OUTDIR [BUNDLE_DIR] [--selftest]
# BUNDLE_DIR is what tests/gpu/bundle.sh made (default: this script's directory). --selftest runs
# the same steps without a GPU: the bundle's fake NVML (a card of constant power with a counter),
# the stand-in nvidia-smi, a load that sleeps. About 60 s on a GPU; a watchdog stops it after
# 170 s; every process it started is ended by its PID.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bundle=$here
selftest=0
out=
for a in "$@"; do
  case "$a" in
    --selftest) selftest=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) if [ -z "$out" ]; then out=$a; else bundle=$(cd "$a" && pwd); fi ;;
  esac
done
[ -n "$out" ] || { echo "usage: energy_gpu.sh OUTDIR [BUNDLE_DIR] [--selftest]" >&2; exit 2; }
mkdir -p "$out" && out=$(cd "$out" && pwd)
rm -f "$out"/daemon.jsonl "$out"/nvml.jsonl "$out"/power.csv "$out"/stop "$out"/load.pid "$out"/port
LOAD_S=${FJ_ENERGY_LOAD_S:-30}   # the matrix-multiply stretch
DUTY=${FJ_ENERGY_DUTY:-1.0}      # its duty: below 1 the load sleeps between products (power varies)
IDLE_S=6                         # idle before and after it
started=()

cleanup() {
  for p in "${started[@]}"; do kill -TERM "$p" 2>/dev/null; done
  [ -s "$out/watchdog.pid" ] && kill -TERM "$(cat "$out/watchdog.pid")" 2>/dev/null
  sleep 1
  for p in "${started[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  echo "== files in $out: $(ls "$out" | tr '\n' ' ')"
}
trap cleanup EXIT
trap 'echo "== interrupted"; exit 130' INT TERM
( sleep 170 & echo $! >"$out/watchdog.pid"; wait $!; echo "== watchdog: 170 s passed, stopping"; kill -TERM $$ ) &
started+=($!)
nap() { sleep "$1" & wait $!; }
say() { echo; echo "== $(date -u +%T) $*"; }
mark() { echo "$1 $(date +%s.%N)" >>"$out/phases.txt"; }
: >"$out/phases.txt"

say "fjord energy GPU check on ${HOSTNAME:-$(uname -n)}, bundle $bundle, out $out, selftest=$selftest"

# --- fjord-push: the system's glibc, else the bundle's loader (as check_gpu.sh) -------------------
loader=$(ls "$bundle"/glibc/ld-linux* 2>/dev/null | head -1)
push_mode=system
LD_LIBRARY_PATH="$bundle/lib" timeout 10 "$bundle/fjord-push" --version >/dev/null 2>&1 || push_mode=bundled-glibc
push_exec() {
  if [ "$push_mode" = system ]; then
    LD_LIBRARY_PATH="$bundle/lib" exec "$bundle/fjord-push" "$@"
  else
    exec "$loader" --library-path "$bundle/lib:$bundle/glibc" "$bundle/fjord-push" "$@"
  fi
}
echo "fjord-push: $(push_exec --version 2>&1) ($push_mode glibc)"

if [ "$selftest" = 1 ]; then
  smi=$bundle/fake-nvidia-smi
  nvml=$bundle/fake/libnvidia-ml.so.1
  loadflag=--selftest
else
  smi=$(command -v nvidia-smi || true)
  [ -n "$smi" ] || { echo "no nvidia-smi: is this a GPU machine? (--selftest runs without one)"; exit 2; }
  nvml=$( (ldconfig -p 2>/dev/null || true) | awk '/libnvidia-ml\.so\.1 /{print $NF; exit}')
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/nvidia/lib64 /usr/lib/aarch64-linux-gnu; do
    [ -n "$nvml" ] || { [ -e "$d/libnvidia-ml.so.1" ] && nvml=$d/libnvidia-ml.so.1; }
  done
  [ -n "$nvml" ] || nvml=libnvidia-ml.so.1
  loadflag=
  timeout 60 python3 -c 'import torch; assert torch.cuda.is_available(); print("torch", torch.__version__)' ||
    { echo "python3 cannot use torch with CUDA here"; exit 2; }
fi
echo "NVML: $nvml"
timeout 20 "$smi" --query-gpu=index,name,driver_version,power.draw,power.limit --format=csv
{
  echo "{\"host\": \"${HOSTNAME:-$(uname -n)}\", \"selftest\": $selftest, \"load_s\": $LOAD_S, \"idle_s\": $IDLE_S,"
  echo " \"smi\": \"$(timeout 20 "$smi" --query-gpu=name,driver_version --format=csv,noheader | head -1)\"}"
} >"$out/meta.json"

start_load() { # the known load, in a process group of its own (fjord-push's job without Slurm)
  timeout -s KILL $((LOAD_S + 60)) $(command -v setsid) python3 "$bundle/gpu_load.py" "$LOAD_S" "$DUTY" "$out/load.pid" $loadflag \
    >"$out/load.log" 2>&1 &
  started+=($!)
  loadwrap=$!
}

if [ "$selftest" = 1 ]; then
  # the fake driver needs the load's pid before fjord-push loads it: start the (sleeping) load first
  start_load
  for _ in $(seq 1 40); do [ -s "$out/load.pid" ] && break; nap 0.25; done
  export FJ_FAKE_NVML="gpu uuid=GPU-selftest mem_total=85520809984 util=100 power_mw=350000 energy_mj=123456789;
    proc gpu=0 pid=$(cat "$out/load.pid") mem=1073741824 sm=97 live=1 age_ms=300"
  export FJ_FAKE_SMI_WATTS=350.00
fi

# --- what measures: the capture server and the daemon, NVML's counter, nvidia-smi's power ---------
say "capture server, fjord-push daemon every 2 s, NVML every 100 ms, nvidia-smi -lms 100"
zstdlib=$(ls "$bundle"/lib/libzstd.so* 2>/dev/null | head -1)
timeout -s KILL 160 python3 "$bundle/capture.py" "$out/port" "$out/daemon.jsonl" "${zstdlib:-libzstd.so.1}" 150 \
  >"$out/capture.log" 2>&1 &
started+=($!)
for _ in $(seq 1 20); do [ -s "$out/port" ] && break; nap 0.25; done
port=$(cat "$out/port" 2>/dev/null || true)
[ -n "$port" ] || { echo "the capture server did not start:"; cat "$out/capture.log"; exit 1; }
timeout -s KILL 160 python3 "$bundle/energy_sampler.py" "$nvml" "$out/nvml.jsonl" "$out/stop" 150 \
  >"$out/sampler.log" 2>&1 &
started+=($!)
sampler=$!
TZ=UTC timeout -s KILL 160 "$smi" --query-gpu=timestamp,power.draw --format=csv,noheader,nounits -i 0 -lms 100 \
  >"$out/power.csv" 2>"$out/power.err" &
started+=($!)
smipid=$!
push_exec --url "http://127.0.0.1:$port/ingest" --cluster gpuenergy --node "${HOSTNAME:-$(uname -n)}" \
  --auth-type none --spool-dir "" --sample-interval 2s --send-jitter 0s --processes gpu --no-amd \
  --nvml-library "$nvml" --level info >"$out/daemon.log" 2>&1 &
started+=($!)
daemon=$!
mark measuring

# --- idle, the load, idle ------------------------------------------------------------------------
say "idle ${IDLE_S} s"
nap "$IDLE_S"
if [ "$selftest" = 0 ]; then
  say "load: matrix products on GPU 0 for ${LOAD_S} s"
  start_load
  for _ in $(seq 1 120); do [ -s "$out/load.pid" ] && break; nap 0.5; done
  [ -s "$out/load.pid" ] || { echo "the load did not start within 60 s:"; cat "$out/load.log"; exit 1; }
else
  say "load (selftest: it sleeps, the fake card draws 350 W throughout) for ${LOAD_S} s"
fi
mark load_running
wait "$loadwrap" 2>/dev/null
mark load_done
cat "$out/load.log"
say "idle ${IDLE_S} s"
nap "$IDLE_S"
nap 2.5   # one more daemon sample after the idle stretch
mark stopping
touch "$out/stop"
for _ in $(seq 1 20); do kill -0 "$sampler" 2>/dev/null || break; nap 0.25; done
kill -TERM "$smipid" "$daemon" 2>/dev/null
nap 1

say "what was recorded"
echo "envelopes captured: $(wc -l <"$out/daemon.jsonl" 2>/dev/null || echo 0)"
echo "NVML readings: $(wc -l <"$out/nvml.jsonl" 2>/dev/null || echo 0) (first: $(head -1 "$out/nvml.jsonl"), last: $(tail -1 "$out/nvml.jsonl"))"
echo "nvidia-smi power readings: $(wc -l <"$out/power.csv" 2>/dev/null || echo 0) ($(head -1 "$out/power.csv"))"
grep -c energy_mj "$out/daemon.jsonl" >/dev/null 2>&1 && echo "fjord-push sent the card's energy counter" ||
  echo "fjord-push sent no energy counter (the card or driver has none): fjord integrates power"
tail -5 "$out/daemon.log"
ok=1
[ "$(wc -l <"$out/daemon.jsonl" 2>/dev/null || echo 0)" -ge 5 ] || { echo "too few envelopes"; ok=0; }
[ "$(wc -l <"$out/nvml.jsonl" 2>/dev/null || echo 0)" -ge 10 ] || { echo "too few NVML readings"; cat "$out/sampler.log"; ok=0; }
[ "$ok" = 1 ] && echo "== done: copy $out back and run tests/gpu/energy_compare.py $out there"
[ "$ok" = 1 ]
