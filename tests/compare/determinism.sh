#!/usr/bin/env bash
# CTest's check that the recording stays usable: records twice with the same build and requires
# compare.sh to find no difference (an answer that changes between two runs of one build would
# hide a real change, or report a false one, when a refactor is compared).
#
#   tests/compare/determinism.sh BUILD_DIR [sqlite|postgres|both]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fjord-compare-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$here/record.sh" "$1" "$tmp/first" "${2:-both}"
"$here/record.sh" "$1" "$tmp/second" "${2:-both}"
"$here/compare.sh" "$tmp/first" "$tmp/second"
