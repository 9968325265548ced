#!/usr/bin/env bash
# Builds fjord and starts `fjord serve` on the embedded SQLite default (127.0.0.1:8077), with its
# database in the checkout (fjord.db at its root) wherever the script is started from, so that
# `build/fjord token add` run from the root finds it. Installs the build dependencies first.
# Extra arguments go to `fjord serve`; one that names --db or --config chooses the database instead.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh" build
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFJ_TESTS=OFF >/dev/null
cmake --build "$root/build" -j"$(nproc 2>/dev/null || echo 2)" --target fjord
db=(--db "$root/fjord.db")
for a in "$@"; do
  case "$a" in --db|--db=*|--config|--config=*) db=() ;; esac
done
exec "$root/build/fjord" serve "${db[@]}" "$@"
