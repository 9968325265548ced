#!/usr/bin/env bash
# Builds fjord and runs every test: the normal build, then an AddressSanitizer+UBSan build whose
# run fails on any sanitizer report. Installs what it needs first (Debian packages).
# Usage: scripts/test.sh            (from anywhere inside the checkout)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

"$root/scripts/install-deps.sh" test
echo "== web dashboard packages (web/package-lock.json)"
(cd "$root/web" && npm ci --no-audit --no-fund --loglevel=error)

jobs=$(nproc 2>/dev/null || echo 2)

echo "== build (release with debug info)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFJ_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
echo "== tests (the label \"long\" is run by hand: cd build && ctest -L long)"
(cd build && ctest --output-on-failure -j1 -LE long)

echo "== build (AddressSanitizer + UndefinedBehaviorSanitizer)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DFJ_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
echo "== tests under sanitizers (reports collected in one place; any report fails the run)"
export ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="log_path=$logs/ubsan:print_stacktrace=1"
status=0
(cd build-asan && ctest --output-on-failure -j1) || status=$?

echo "== fuzz harnesses (clang, libFuzzer): replay every seed corpus"
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DFJ_FUZZ=ON -DFJ_PUSHER=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzzers
(cd build-fuzz && ctest --output-on-failure -j1 -R '^fuzz_.*_corpus$') || status=$?

if compgen -G "$logs/*" >/dev/null; then
  echo "sanitizer reports:"
  cat "$logs"/*
  status=1
fi
exit $status
