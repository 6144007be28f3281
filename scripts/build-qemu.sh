#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Configure (once) and build QEMU with viommu-lab's overlay.  Idempotent: with
# nothing changed, ninja has nothing to do.
#
#   build-qemu.sh [NINJA-TARGET...]   extra ninja targets (e.g. qtest executables)
#   TARGETS="x86_64-softmmu"          target list (room for aarch64-softmmu later)
# Concurrent callers are serialized on build/.qemu-build.lock.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mkdir -p "$BUILD"
exec 9>"$BUILD/.qemu-build.lock"
flock 9

TARGETS=${TARGETS:-x86_64-softmmu}
src=$BUILD/qemu-src
obj=$BUILD/qemu
[ -d "$src" ] || die "no QEMU source in build/qemu-src; run scripts/fetch-qemu.sh first."

export CCACHE_DIR=${CCACHE_DIR:-$CACHE/ccache}
# Paths relative to the checkout, so a fresh clone elsewhere hits the same cache.
export CCACHE_BASEDIR=$TOP CCACHE_NOHASHDIR=1
as_root mkdir -p "$CCACHE_DIR"
ccache_wrap=""
command -v ccache >/dev/null && ccache_wrap="ccache "

config_line="--target-list=$TARGETS --without-default-features --enable-kvm --enable-tcg --enable-slirp --enable-vhost-user --enable-vhost-net --enable-fdt=system --disable-docs --disable-install-blobs --disable-werror --python=/usr/bin/python3"
if [ ! -f "$obj/build.ninja" ] || [ "$(cat "$obj/.viommu-lab-config" 2>/dev/null)" != "$config_line" ]; then
    say "configuring QEMU ($TARGETS, lean, ccache) in build/qemu"
    rm -rf "$obj"; mkdir -p "$obj"
    (cd "$obj" && CC="${ccache_wrap}cc" CXX="${ccache_wrap}c++" "$src/configure" $config_line >configure.log 2>&1) \
        || { tail -20 "$obj/configure.log" >&2; die "QEMU configure failed; the full log is build/qemu/configure.log."; }
    echo "$config_line" > "$obj/.viommu-lab-config"
fi

bins=()
for t in ${TARGETS//,/ }; do bins+=("qemu-system-${t%-softmmu}"); done
# ninja -n cannot tell: QEMU's version header is always regenerated and
# dry runs assume everything behind it recompiles.  Say so before a first
# build only; afterwards report what actually ran.
[ -f "$obj/${bins[0]}" ] || say "building ${bins[*]} $* (a first build takes about 5 minutes on 2 cores; ccache makes later ones faster)"
ninja -C "$obj" "${bins[@]}" "$@" > "$obj/ninja.log" 2>&1 \
    || { grep -E 'error|Error' -m 20 "$obj/ninja.log" >&2 || tail -20 "$obj/ninja.log" >&2; die "QEMU build failed; the full log is build/qemu/ninja.log."; }
for b in "${bins[@]}"; do ln -sfn "qemu/$b" "$BUILD/$b"; done
ran=$(grep -c '^\[' "$obj/ninja.log" || true)
say "QEMU ready: build/${bins[0]} ($ran build steps ran)"
