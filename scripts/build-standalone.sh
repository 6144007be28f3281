#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Configure (once) and build the standalone tree: engine, allocator, simulator,
# their tests and benchmarks.  Needs no QEMU.
#
#   build-standalone.sh        build/standalone: everything
#   build-standalone.sh tsan   build/standalone-tsan: ThreadSanitizer build of
#                              the multi-threaded tests only (TSAN_TESTS)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# The multi-threaded tests: their meson test names, and the targets they run.
TSAN_TESTS="engine-concurrency engine-concurrency-stat-shards iova-threads sim-real-threads"
TSAN_TARGETS="tests/engine/engine-concurrency tests/iova/iova-threads tests/sim/sim_real_threads"

case "${1:-}" in
'')
    dir=$BUILD/standalone name=build/standalone targets=
    opts=()
    ;;
tsan)
    dir=$BUILD/standalone-tsan name=build/standalone-tsan targets=$TSAN_TARGETS
    opts=(-Db_sanitize=thread)
    ;;
--tsan-tests)  # for check.sh: the test names
    echo "$TSAN_TESTS"
    exit 0
    ;;
*) die "unknown build '$1' (known: tsan)." ;;
esac

if [ ! -f "$dir/build.ninja" ]; then
    say "configuring the standalone build in $name${opts:+ (${opts[*]})}"
    mkdir -p "$BUILD"
    log=$dir-setup.log
    meson setup "${opts[@]}" "$dir" "$TOP" >"$log" 2>&1 || {
        tail -n 20 "$log" | sed 's/^/    /' >&2
        die "meson setup of $name failed (the full log is $name-setup.log)."
    }
fi
# shellcheck disable=SC2086  # targets: a word list
ninja -C "$dir" $targets >"$dir/ninja.log" 2>&1 \
    || { grep -E -m 20 'error' "$dir/ninja.log" >&2 || tail -20 "$dir/ninja.log" >&2; die "$name build failed; the full log is $name/ninja.log."; }
