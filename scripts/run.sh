#!/usr/bin/env bash
# Builds fjord and starts `fjord serve` on the embedded SQLite default (127.0.0.1:8077,
# ./fjord.db). Installs the build dependencies first. Extra arguments go to `fjord serve`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh" build
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFJ_TESTS=OFF >/dev/null
cmake --build "$root/build" -j"$(nproc 2>/dev/null || echo 2)" --target fjord
exec "$root/build/fjord" serve "$@"
