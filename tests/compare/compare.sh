#!/usr/bin/env bash
# Compares two recordings of record.sh: lists every request whose answer differs (or that only one
# recording has) with the first lines of the difference, and exits 1 on any difference.
#
#   tests/compare/compare.sh DIR_A DIR_B
#
# DIR_A and DIR_B are OUTDIRs of record.sh (or one backend's or one dataset's folder of each).
# DIFF_LINES sets how many lines of each difference are shown (default 12).
set -euo pipefail
if [ $# -ne 2 ] || [ ! -d "$1" ] || [ ! -d "$2" ]; then
  echo "usage: $0 DIR_A DIR_B (two recordings of record.sh)" >&2
  exit 2
fi
a=$1
b=$2
lines=${DIFF_LINES:-12}
differ=0
only=0
same=0
while IFS= read -r -d '' rel; do
  rel=${rel#./}
  case $rel in */INDEX|INDEX) continue ;; esac
  if [ ! -f "$b/$rel" ]; then
    echo "only in $a: $rel ($(head -1 "$a/$rel"))"
    only=$((only + 1))
  elif cmp -s "$a/$rel" "$b/$rel"; then
    same=$((same + 1))
  else
    echo "DIFFERS: $rel"
    echo "  $(head -1 "$a/$rel")"
    diff <(sed 's/\([,;{}]\)/\1\n/g' "$a/$rel") <(sed 's/\([,;{}]\)/\1\n/g' "$b/$rel") | head -n "$lines" |
      sed 's/^/    /' || true
    differ=$((differ + 1))
  fi
done < <(cd "$a" && find . -type f -print0 | sort -z)
while IFS= read -r -d '' rel; do
  rel=${rel#./}
  case $rel in */INDEX|INDEX) continue ;; esac
  if [ ! -f "$a/$rel" ]; then
    echo "only in $b: $rel ($(head -1 "$b/$rel"))"
    only=$((only + 1))
  fi
done < <(cd "$b" && find . -type f -print0 | sort -z)
echo "$same answers identical, $differ differ, $only in one recording only"
[ "$differ" -eq 0 ] && [ "$only" -eq 0 ] && [ "$same" -gt 0 ]
