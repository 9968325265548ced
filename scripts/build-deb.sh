#!/usr/bin/env bash
# Builds the Debian packages `fjord` (the server and its CLI) and `fjord-push` (the node agent)
# from this checkout: binaries installed under /usr, systemd units, a sysusers.d entry creating
# each service user, a tmpfiles.d entry for the server's state directory, example configurations
# as conffiles under /etc/fjord, and the docs. docs/deploy.md says how to install and upgrade.
#
# Usage: scripts/build-deb.sh [OUTDIR] [BUILDDIR]
#   OUTDIR   where the .deb files go (default: dist/ in the checkout)
#   BUILDDIR an existing build tree to package (default: a Release build in build-deb/)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)
build=${2:-}

"$root/scripts/install-deps.sh" build
command -v dpkg-shlibdeps >/dev/null || {
  [ "$(id -u)" -eq 0 ] && SUDO="" || SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends dpkg-dev
}
if [ -z "$build" ]; then
  build="$root/build-deb"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFJ_TESTS=OFF >/dev/null
  cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target fjord fjord-push
fi
version=$(sed -n 's/^project(fjord VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
arch=$(dpkg --print-architecture)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# stage PACKAGE: an empty tree for one package, with its docs folder and copyright note.
stage() {
  local d="$work/$1"
  mkdir -p "$d/DEBIAN" "$d/usr/bin" "$d/usr/share/doc/$1" "$d/lib/systemd/system" "$d/usr/lib/sysusers.d" \
           "$d/usr/lib/tmpfiles.d" "$d/etc/fjord"
  cat >"$d/usr/share/doc/$1/copyright" <<EOT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: fjord
Comment: Built from the fjord source tree; see its README.md.
EOT
  echo "$d"
}

# control PACKAGE DESCRIPTION: the control file, with the shared libraries the binaries need as
# dependencies (dpkg-shlibdeps reads them off the ELF files) and the conffiles under /etc.
control() {
  local pkg=$1 desc=$2 d="$work/$1"
  mkdir -p "$work/shlib/debian"
  printf 'Source: fjord\n\nPackage: %s\nArchitecture: any\n' "$pkg" >"$work/shlib/debian/control"
  local deps
  deps=$(cd "$work/shlib" && dpkg-shlibdeps -O "$d"/usr/bin/* 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
  cat >"$d/DEBIAN/control" <<EOT
Package: $pkg
Version: $version
Architecture: $arch
Maintainer: fjord maintainers <fjord@localhost>
Section: admin
Priority: optional
Depends: $deps, systemd | adduser
Installed-Size: $(du -sk "$d" | cut -f1)
Description: $desc
EOT
  (cd "$d" && find etc -type f -printf '/%p\n') >"$d/DEBIAN/conffiles"
  # Binaries, units and docs owned by root; the state directory comes from tmpfiles/systemd.
  dpkg-deb --root-owner-group --build "$d" "$out/${pkg}_${version}_${arch}.deb" >/dev/null
  echo "$out/${pkg}_${version}_${arch}.deb"
}

# Maintainer scripts: the user (sysusers.d, or adduser where systemd is absent), the state
# directory, the unit known to systemd. They honour DPKG_ROOT, so a test can install into a
# throwaway root. Nothing is started: an operator configures first (docs/deploy.md).
scripts() {
  local d=$1 user=$2
  cat >"$d/DEBIAN/postinst" <<EOT
#!/bin/sh
set -e
if [ "\$1" = configure ]; then
  if command -v systemd-sysusers >/dev/null 2>&1; then
    systemd-sysusers --root="\${DPKG_ROOT:-/}" $user.conf
  elif ! getent passwd $user >/dev/null; then
    adduser --system --group --home /var/lib/$user --no-create-home $user
  fi
  if [ -f "\${DPKG_ROOT:-}/usr/lib/tmpfiles.d/$user.conf" ] && command -v systemd-tmpfiles >/dev/null 2>&1; then
    systemd-tmpfiles --root="\${DPKG_ROOT:-/}" --create $user.conf || true
  fi
  if [ -z "\${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
  fi
fi
EOT
  cat >"$d/DEBIAN/prerm" <<EOT
#!/bin/sh
set -e
if [ "\$1" = remove ] && [ -z "\${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
  systemctl stop $user.service || true
fi
EOT
  chmod 755 "$d/DEBIAN/postinst" "$d/DEBIAN/prerm"
}

# fjord: the server
d=$(stage fjord)
install -s -m 755 "$build/fjord" "$d/usr/bin/fjord"
sed 's#/usr/local/bin/#/usr/bin/#g; s#Install the binary as /usr/bin/fjord, the config as#Installed by the fjord package; the config is#' \
  "$root/deploy/fjord.service" >"$d/lib/systemd/system/fjord.service"
cp "$root/deploy/fjord.ini" "$d/etc/fjord/fjord.ini"
echo 'u fjord - "fjord monitoring-data server" /var/lib/fjord' >"$d/usr/lib/sysusers.d/fjord.conf"
echo 'd /var/lib/fjord 0750 fjord fjord -' >"$d/usr/lib/tmpfiles.d/fjord.conf"
cp "$root/README.md" "$root"/docs/*.md "$d/usr/share/doc/fjord/"
scripts "$d" fjord
control fjord "HPC monitoring-data server for Sonar and ClusterCockpit
 fjord takes Sonar JSON envelopes and ClusterCockpit/InfluxDB line protocol from compute nodes,
 works out which records belong to which job, stores them in SQLite or PostgreSQL and answers
 analysts over a REST API."

# fjord-push: the node agent
d=$(stage fjord-push)
install -s -m 755 "$build/pusher/fjord-push" "$d/usr/bin/fjord-push"
sed 's#/usr/local/bin/#/usr/bin/#g' "$root/deploy/fjord-push.service" >"$d/lib/systemd/system/fjord-push.service"
cp "$root/deploy/fjord-push.ini" "$d/etc/fjord/fjord-push.ini"
echo 'u fjord-push - "fjord-push node agent" /var/lib/fjord-push' >"$d/usr/lib/sysusers.d/fjord-push.conf"
rm -f "$d/usr/lib/tmpfiles.d"/* && rmdir "$d/usr/lib/tmpfiles.d"
cp "$root/docs/pusher.md" "$d/usr/share/doc/fjord-push/"
scripts "$d" fjord-push
control fjord-push "fjord node agent: GPU, process and topology data for fjord
 fjord-push samples a compute node's processes, GPUs (NVIDIA through NVML, AMD through sysfs)
 and topology and sends them to a fjord server, spooling what it cannot send."
