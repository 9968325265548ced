#!/usr/bin/env bash
# Installs everything fjord needs to build, test and benchmark, from Debian's packages.
# Idempotent; run as root (or with sudo available). Usage: scripts/install-deps.sh [build|test|bench]
set -euo pipefail
what=${1:-test}

build_pkgs=(build-essential cmake pkg-config
  libmicrohttpd-dev libsqlite3-dev libpq-dev libzstd-dev zlib1g-dev libinih-dev libsodium-dev
  libgnutls28-dev libcurl4-openssl-dev libhwloc-dev libyaml-dev
  libpcre2-dev  # the regular expressions of InfluxQL (api/re.c)
  libnats-dev
  tzdata)  # InfluxQL's tz(): the zones' TZif files, read at run time
test_pkgs=(libcriterion-dev python3 sqlite3 curl zstd postgresql clang libclang-rt-14-dev prometheus
  nginx  # deploy/nginx-fjord.conf run in front of two fjord (test_postgres_nginx.py)
  nats-server openssl dpkg-dev systemd chromium
  influxdb influxdb-client python3-influxdb  # InfluxQL's differential test and real clients
  collectd-core)  # a real collectd sending line protocol to fjord's UDP listener
# The dashboard's tests (web/) need node and npm: Debian's, unless some node is installed already
# (a newer one from elsewhere is left alone).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  test_pkgs+=(nodejs npm)
fi
bench_pkgs=(victoria-metrics)

pkgs=("${build_pkgs[@]}")
case "$what" in
  build) ;;
  test) pkgs+=("${test_pkgs[@]}") ;;
  bench) pkgs+=("${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
  *) echo "usage: $0 [build|test|bench]" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
