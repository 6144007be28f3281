#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Configure (once) and build the standalone tree: engine, allocator, simulator,
# their tests and benchmarks.  Needs no QEMU.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dir=$BUILD/standalone
if [ ! -f "$dir/build.ninja" ]; then
    say "configuring the standalone build in build/standalone"
    meson setup "$dir" "$TOP" >/dev/null || die "meson setup of the standalone build failed."
fi
ninja -C "$dir" >"$dir/ninja.log" 2>&1 \
    || { grep -E -m 20 'error' "$dir/ninja.log" >&2 || tail -20 "$dir/ninja.log" >&2; die "standalone build failed; the full log is build/standalone/ninja.log."; }
