#!/usr/bin/env bash
# Records every answer of fjord's read API over three datasets (the API benchmark database, the
# integration tests' inputs, the Sonar real-data import) into OUTDIR/<backend>/<dataset>/, one file
# per request; compare.sh tells two recordings apart. See tests/compare/README.md.
#
#   tests/compare/record.sh BUILD_DIR OUTDIR [sqlite|postgres|both]     (default both)
#
# BUILD_DIR holds the fjord and api_gen binaries to record; the scripts and data come from this
# checkout. With both, the two backends record at the same time.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 BUILD_DIR OUTDIR [sqlite|postgres|both]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
out=$2
which=${3:-both}
case $which in
  sqlite|postgres) backends=$which ;;
  both) backends="sqlite postgres" ;;
  *) echo "$0: backend must be sqlite, postgres or both" >&2; exit 2 ;;
esac
[ -x "$build/fjord" ] || { echo "$0: no fjord in $build" >&2; exit 2; }
mkdir -p "$out"

pids=()
for b in $backends; do
  rm -rf "${out:?}/$b"
  python3 "$here/record.py" --build "$build" --out "$out/$b" --backend "$b" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
  wait "$p" || rc=1
done
exit $rc
