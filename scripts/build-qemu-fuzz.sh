#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Configure (once) and build QEMU with viommu-lab's overlay for fuzzing and
# sanitizer runs: clang, --enable-fuzzing (libFuzzer; QEMU's generic-fuzz
# harness as qemu-fuzz-x86_64) and --enable-asan --enable-ubsan (AddressSanitizer and
# UndefinedBehaviorSanitizer, also in qemu-system-x86_64 and the qtests).
# build/qemu-fuzz is separate from build/qemu; the source tree and overlay are
# the same (scripts/fetch-qemu.sh).  Idempotent.
#
#   build-qemu-fuzz.sh [NINJA-TARGET...]   default: qemu-fuzz-x86_64
#   NINJA_JOBS=2                           parallel jobs (a shared 2-core machine)
#   NICE=10                                niceness of the build
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mkdir -p "$BUILD"
exec 9>"$BUILD/.qemu-fuzz-build.lock"
flock 9

src=$BUILD/qemu-src
obj=$BUILD/qemu-fuzz
[ -d "$src" ] || die "no QEMU source in build/qemu-src; run scripts/fetch-qemu.sh first."
command -v clang >/dev/null || die "clang is missing; run scripts/setup-host.sh fuzz."

use_ccache
# The same lean feature set as build-qemu.sh, with clang, libFuzzer and the sanitizers.
# QEMU applies its sanitizer and fuzzer flags to C only (C++ is a Windows-only
# language in its meson.build), so the engine's C++ and every executable
# linked by clang++ (all of them: the engine is C++) get them through
# --extra-cxxflags, which configure puts in cpp_args and cpp_link_args.
qemu_configure qemu-fuzz clang clang++ \
    "--target-list=x86_64-softmmu $QEMU_FEATURES --enable-fuzzing --enable-asan --enable-ubsan --extra-cxxflags=-fsanitize=address,undefined,fuzzer-no-link" \
    "QEMU for fuzzing (clang, libFuzzer, ASan+UBSan)"

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(qemu-fuzz-x86_64)
[ -f "$obj/qemu-fuzz-x86_64" ] || say "building ${targets[*]} in build/qemu-fuzz (a first build takes 30 minutes or more on 2 cores)"
nice -n "${NICE:-10}" ninja -j "${NINJA_JOBS:-2}" -C "$obj" "${targets[@]}" > "$obj/ninja.log" 2>&1 \
    || { grep -E 'error|Error' -m 20 "$obj/ninja.log" >&2 || tail -20 "$obj/ninja.log" >&2; die "QEMU fuzz build failed; the full log is build/qemu-fuzz/ninja.log."; }
say "QEMU fuzz build ready: build/qemu-fuzz (${targets[*]})"
