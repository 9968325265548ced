#!/usr/bin/env bash
# Copies a built fjord-push, the shared libraries it needs and the GPU check into one directory, to
# carry to a GPU machine that has no compiler toolchain for fjord's dependencies and no network.
#   tests/gpu/bundle.sh OUTDIR [BUILD_DIR]        (BUILD_DIR defaults to build)
# OUTDIR/lib    every library ldd names except glibc's own (used with LD_LIBRARY_PATH)
# OUTDIR/glibc  glibc's libraries and loader, for a machine whose glibc is older than this one's
#               (check_gpu.sh then starts fjord-push through this loader)
# OUTDIR/fake   the fake NVML, for check_gpu.sh --selftest on a machine without a GPU
# NVML itself is never copied: the GPU machine's own driver library must be the one measured.
set -euo pipefail
out=${1:?usage: bundle.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/pusher/fjord-push
fake=$build/pusher/fake_nvml/libnvidia-ml.so.1
[ -x "$bin" ] || { echo "bundle.sh: no $bin (build fjord-push first)" >&2; exit 1; }

mkdir -p "$out/lib" "$out/glibc" "$out/fake"
cp -f "$bin" "$out/fjord-push"
[ -e "$fake" ] && cp -f "$fake" "$out/fake/libnvidia-ml.so.1"
for f in check_gpu.sh gpu_load.py capture.py compare.py fake-nvidia-smi README.md energy_gpu.sh energy_sampler.py; do
  cp -f "$here/$f" "$out/$f"
done

# glibc's own libraries go apart: they must come from one glibc together with its loader.
is_glibc() {
  case "$1" in
    ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|libutil.so*|libanl.so*) return 0 ;;
  esac
  return 1
}
ldd "$bin" | while read -r name arrow path _; do
  if [ "$arrow" != "=>" ]; then path=$name; fi       # the loader's line: "/lib64/ld-linux-x86-64.so.2 (0x...)"
  [ -f "$path" ] || continue
  base=$(basename "$path")
  real=$(readlink -f "$path")
  if is_glibc "$base"; then
    cp -fL "$real" "$out/glibc/$base"
  else
    cp -fL "$real" "$out/lib/$base"
  fi
done
# NVML links glibc's compatibility stubs; with the bundled glibc they must come from it too.
libcdir=$(dirname "$(ldd "$bin" | awk '$1 == "libc.so.6" {print $3}')")
for stub in libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1; do
  [ -e "$libcdir/$stub" ] && cp -fL "$libcdir/$stub" "$out/glibc/$stub"
done
loader=$(ls "$out"/glibc/ld-linux* 2>/dev/null | head -1)
[ -n "$loader" ] || { echo "bundle.sh: ldd named no loader" >&2; exit 1; }
chmod +x "$out/fjord-push" "$out/check_gpu.sh" "$out/energy_gpu.sh" "$out/fake-nvidia-smi" "$loader"
echo "bundle: $out"
echo "  fjord-push $("$out/fjord-push" --version 2>/dev/null || echo '(version not printable here)')"
echo "  lib/:   $(ls "$out/lib" | wc -l) libraries, $(du -sh "$out/lib" | cut -f1)"
echo "  glibc/: $(ls "$out/glibc" | tr '\n' ' ')"
echo "  needs glibc >= $(objdump -T "$out/fjord-push" "$out"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1) (else check_gpu.sh uses glibc/)"
