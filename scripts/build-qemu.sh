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

use_ccache
qemu_configure qemu cc c++ "--target-list=$TARGETS $QEMU_FEATURES" "QEMU ($TARGETS, lean, ccache)"

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
