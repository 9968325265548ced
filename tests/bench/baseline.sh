# tests/bench/baseline.sh — the one way every benchmark here takes a baseline (sourced, not run).
#
# A benchmark compares the head with a baseline in the same run, alternating, so that the machine's
# speed of the day cancels out; docs/benchmarks.md names the baseline of record for each figure.
# BASELINE is either
#   a build directory holding a `fjord` binary (used as it is), or
#   anything git names as a commit of this repository (a hash, a tag, HEAD~3): its tree is taken
#   with `git archive` into a cache folder and its `fjord` built there once (RelWithDebInfo, tests
#   off), $BASELINE_CACHE (default: a folder per commit under ${TMPDIR:-/tmp}), reused by later runs.
#
#   . tests/bench/baseline.sh
#   base_build=$(fj_baseline_build "$BASELINE")     # a directory with fjord in it
#   fj_start_db "$base_build/fjord" DB              # the database made and migrated as that build does
#
# Older builds lack options newer ones have (`token add --create`): fj_token_add makes the database
# with `migrate up` first, which every release has.

fj_baseline_build() { # REF-or-DIR -> prints a build directory
  local ref=$1 root sha dir
  if [ -x "$ref/fjord" ]; then
    (cd "$ref" && pwd)
    return
  fi
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  sha=$(git -C "$root" rev-parse --verify --quiet "$ref^{commit}") || {
    echo "baseline: '$ref' is neither a build directory with fjord nor a commit" >&2
    return 2
  }
  dir=${BASELINE_CACHE:-${TMPDIR:-/tmp}/fjord-baseline-${sha:0:12}}
  if [ ! -x "$dir/build/fjord" ]; then
    echo "baseline: building fjord of ${sha:0:12} in $dir" >&2
    rm -rf "$dir/src"
    mkdir -p "$dir/src"
    git -C "$root" archive "$sha" | tar -x -C "$dir/src"
    cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFJ_TESTS=OFF >/dev/null
    cmake --build "$dir/build" -j"$(nproc 2>/dev/null || echo 2)" --target fjord >/dev/null
  fi
  echo "$dir/build"
}

# Prints a new upload credential of CLUSTER for database DB (a path or URL), made with the given
# fjord binary; the database is created and migrated first.
fj_token_add() { # FJORD CLUSTER DB
  "$1" migrate up --db "$3" >/dev/null
  "$1" token add "$2" --db "$3"
}

# Prints a TCP port free on 127.0.0.1 now (the kernel's pick), for a server a benchmark starts.
fj_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
