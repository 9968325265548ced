#!/usr/bin/env bash
# Checks fjord-push's per-process GPU figures on a machine with an NVIDIA GPU against nvidia-smi
# (not run by CI). Starts two PyTorch loads on GPU 0 (one busy, one at half duty), then for a few
# rounds runs `fjord-push --once --stdout` next to `nvidia-smi pmon -c 1 -s um` and
# `nvidia-smi --query-compute-apps=pid,used_memory`, while the fjord-push daemon samples every 5 s
# into a capture server on 127.0.0.1; prints everything and a comparison table (compare.py).
#   check_gpu.sh [BUNDLE_DIR] [--selftest]
# BUNDLE_DIR is what tests/gpu/bundle.sh made (default: this script's directory). --selftest runs
# the same steps without a GPU: the bundle's fake NVML, a stand-in nvidia-smi, loads that sleep.
# Bounded: every step has a timeout, a watchdog stops the script after 150 s, and every process it
# started is ended by its PID on the way out.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bundle=$here
selftest=0
for a in "$@"; do
  case "$a" in
    --selftest) selftest=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) bundle=$(cd "$a" && pwd) ;;
  esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/fjord-gpu-check.XXXXXX")
started=()   # PIDs of everything started here, ended on exit

cleanup() {
  for p in "${started[@]}"; do kill -TERM "$p" 2>/dev/null; done
  [ -s "$work/watchdog.pid" ] && kill -TERM "$(cat "$work/watchdog.pid")" 2>/dev/null
  sleep 1
  for p in "${started[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  echo "== work files kept in $work"
}
trap cleanup EXIT
trap 'echo "== interrupted"; exit 130' INT TERM
( sleep 150 & echo $! >"$work/watchdog.pid"; wait $!; echo "== watchdog: 150 s passed, stopping"; kill -TERM $$ ) &
started+=($!)
# A pause that a signal interrupts at once (a foreground sleep would delay the trap to its end).
nap() { sleep "$1" & wait $!; }

say() { echo; echo "== $*"; }
say "fjord GPU check $(date -u +%FT%TZ) on ${HOSTNAME:-$(uname -n)}, bundle $bundle, work $work, selftest=$selftest"

# --- how to start fjord-push: the system's glibc, else the bundle's own loader and glibc ---------
loader=$(ls "$bundle"/glibc/ld-linux* 2>/dev/null | head -1)
push_mode=system
if ! LD_LIBRARY_PATH="$bundle/lib" timeout 10 "$bundle/fjord-push" --version >"$work/version.txt" 2>&1; then
  cat "$work/version.txt"
  push_mode=bundled-glibc
fi
[ "${FJ_GPU_CHECK_GLIBC:-}" = bundled ] && push_mode=bundled-glibc   # to try that path anywhere
# Replaces the calling shell with fjord-push: call it only in $(...) or with &, so that $! is
# fjord-push's own PID.
push_exec() {
  if [ "$push_mode" = system ]; then
    LD_LIBRARY_PATH="$bundle/lib" exec "$bundle/fjord-push" "$@"
  else
    exec "$loader" --library-path "$bundle/lib:$bundle/glibc" "$bundle/fjord-push" "$@"
  fi
}
echo "fjord-push: $(push_exec --version 2>&1) (started with the $push_mode glibc)"

# --- the GPU's tools, or their stand-ins ---------------------------------------------------------
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
fi
echo "NVML: $nvml"
say "nvidia-smi"
timeout 20 "$smi" -L
timeout 20 "$smi" --query-gpu=index,name,driver_version,utilization.gpu,memory.used --format=csv
if [ "$selftest" = 0 ]; then
  timeout 60 python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' ||
    { echo "python3 cannot use torch with CUDA here"; exit 2; }
fi

# --- the loads: one busy, one at half duty; each ends by itself after 80 s -----------------------
say "starting the loads"
timeout -s KILL 95 python3 "$bundle/gpu_load.py" 80 1.0 "$work/busy.pid" $loadflag >"$work/busy.log" 2>&1 &
started+=($!)
timeout -s KILL 95 python3 "$bundle/gpu_load.py" 80 0.5 "$work/half.pid" $loadflag >"$work/half.log" 2>&1 &
started+=($!)
for _ in $(seq 1 120); do
  [ -s "$work/busy.pid" ] && [ -s "$work/half.pid" ] && break
  nap 0.5
done
busy=$(cat "$work/busy.pid" 2>/dev/null || true)
half=$(cat "$work/half.pid" 2>/dev/null || true)
[ -n "$busy" ] && started+=("$busy")
[ -n "$half" ] && started+=("$half")
if [ -z "$busy" ] || [ -z "$half" ]; then
  echo "the loads did not start within 60 s:"; cat "$work/busy.log" "$work/half.log"; exit 1
fi
echo "busy load pid $busy, half-duty load pid $half"
echo "busy $busy" >"$work/loads.txt"
echo "half $half" >>"$work/loads.txt"
if [ "$selftest" = 1 ]; then
  # The fake driver keeps fresh samples for both, as a real one does for busy processes.
  export FJ_FAKE_NVML="gpu uuid=GPU-selftest mem_total=85520809984 util=100 mem_used=15032385536;
    proc gpu=0 pid=$busy mem=7455375360 sm=97 live=1 age_ms=300;
    proc gpu=0 pid=$half mem=1073741824 sm=45 live=1 age_ms=300"
  export FJ_SELFTEST_PROCS="$busy:97:7110 $half:45:1024"
fi
nap 3   # let NVML gather a few samples of both

# --- the daemon: a sample every 5 s into the capture server ---------------------------------------
say "daemon: every 5 s for 35 s, to a capture server on 127.0.0.1"
zstdlib=$(ls "$bundle"/lib/libzstd.so* 2>/dev/null | head -1)
timeout -s KILL 60 python3 "$bundle/capture.py" "$work/port" "$work/daemon.jsonl" "${zstdlib:-libzstd.so.1}" 45 \
  >"$work/capture.log" 2>&1 &
started+=($!)
for _ in $(seq 1 20); do [ -s "$work/port" ] && break; sleep 0.25; done
port=$(cat "$work/port" 2>/dev/null || true)
if [ -n "$port" ]; then
  push_exec --url "http://127.0.0.1:$port/ingest" --cluster gpucheck --node "${HOSTNAME:-$(uname -n)}" --auth-type none \
    --spool-dir "" --sample-interval 5s --send-jitter 0s --processes gpu --no-amd --nvml-library "$nvml" \
    --level info >"$work/daemon.log" 2>&1 &
  daemon=$!
  started+=($daemon)
else
  echo "the capture server did not start:"; cat "$work/capture.log"
fi

# --- rounds: fjord-push --once next to nvidia-smi ------------------------------------------------
for r in 1 2 3 4 5; do
  d=$work/round-$r
  mkdir -p "$d"
  date +%s.%N >"$d/time"
  push_exec --once --stdout --only sample --processes gpu --no-amd --nvml-library "$nvml" >"$d/push.jsonl" 2>"$d/push.err" &
  pp=$!
  timeout 20 "$smi" pmon -c 1 -s um >"$d/pmon.txt" 2>&1
  timeout 20 "$smi" --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$d/apps.csv" 2>&1
  timeout 20 "$smi" --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits >"$d/gpus.csv" 2>&1
  for _ in $(seq 1 40); do kill -0 $pp 2>/dev/null || break; sleep 0.5; done
  kill -KILL $pp 2>/dev/null   # still running after 20 s: stuck
  wait $pp; echo "rc $?" >>"$d/push.err"
  say "round $r"
  echo "-- nvidia-smi pmon -c 1 -s um"; cat "$d/pmon.txt"
  echo "-- nvidia-smi --query-compute-apps=pid,used_memory"; cat "$d/apps.csv"
  echo "-- fjord-push --once --stdout, its GPUs and GPU processes (stderr: $(tr '\n' ' ' <"$d/push.err"))"
  python3 "$bundle/compare.py" --brief "$d/push.jsonl"
  nap 4
done
nap 8   # the daemon's last samples
[ -n "${daemon:-}" ] && kill -TERM "$daemon" 2>/dev/null
say "daemon log"; cat "$work/daemon.log" 2>/dev/null
say "daemon captures ($(wc -l <"$work/daemon.jsonl" 2>/dev/null || echo 0) documents), their GPUs and GPU processes"
python3 "$bundle/compare.py" --brief "$work/daemon.jsonl"

say "comparison"
timeout 30 python3 "$bundle/compare.py" "$work"
rc=$?
exit $rc
