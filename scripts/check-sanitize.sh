#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make check-sanitize: the viommu qtest suite, the glue suite, ten guest
# boots (SANITIZE_GUEST_BOOTS) and the guest migrations (tests/glue/
# guest-migrate.sh) against QEMU built with AddressSanitizer and
# UndefinedBehaviorSanitizer (build/qemu-fuzz, clang; scripts/build-qemu-fuzz.sh).
# Any sanitizer report fails the case it happened in: UBSan halts, ASan aborts.  Leak detection is off: QEMU itself
# leaves allocations behind at exit.  Logs: build/check-logs/sanitize-*.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

obj=$BUILD/qemu-fuzz
logs=$BUILD/check-logs
mkdir -p "$logs"
bash "$TOP/scripts/fetch-qemu.sh"
bash "$TOP/scripts/build-qemu-fuzz.sh" qemu-system-x86_64
qtests=$(BUILD_QEMU=$obj bash "$TOP/scripts/qtest-targets.sh")
[ -n "$qtests" ] || die "no qtest is registered in suite viommu in build/qemu-fuzz"
bash "$TOP/scripts/build-qemu-fuzz.sh" qemu-system-x86_64 $qtests

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# Linux guests behind the unit: DMA through virtio rings, pass-through
# default domains, MSIs through interrupt remapping, a user-space driver's
# mappings and faults through VFIO, devices removed while the guest runs, a
# warm reset and a wake-up from S3 with the unit on; and map-race, whose
# memory-map changes under a running vCPU exercise patch 0003's references.
SANITIZE_GUEST_BOOTS=${SANITIZE_GUEST_BOOTS:-dma-lazy,dma-pt,sm-fs-lazy,vfio,vfio-sm,hotplug,hotplug-sm,map-race,reboot,suspend}
status=0
tally() {  # as make check counts a TAP log: planned cases not reported fail
    local p f s
    read -r p f s < <(python3 "$TOP/scripts/tally.py" tap "$1") || { p=0 f=1 s=0; }
    echo "    $p passed, $f failed, $s skipped"
    [ "$f" = 0 ] || status=1
}
say "sanitize: qtest suite viommu (ASan+UBSan)"
"$obj/pyvenv/bin/meson" test -C "$obj" --no-rebuild --print-errorlogs --suite viommu \
    > "$logs/sanitize-qtest.log" 2>&1 || status=1
grep -E '^(Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout):' "$logs/sanitize-qtest.log" | sed 's/^/    /'
say "sanitize: glue suite (ASan+UBSan)"
QEMU=$obj/qemu-system-x86_64 bash "$TOP/tests/glue/run.sh" > "$logs/sanitize-glue.tap" 2>&1 || status=1
tally "$logs/sanitize-glue.tap"
say "sanitize: guest boots $SANITIZE_GUEST_BOOTS (ASan+UBSan QEMU, TCG)"
GUEST_TESTS_WORK=$BUILD/guest-tests/sanitize QEMU=$obj/qemu-system-x86_64 \
    bash "$TOP/tests/guest/run.sh" --only "$SANITIZE_GUEST_BOOTS" > "$logs/sanitize-guest.tap" 2>&1 || status=1
tally "$logs/sanitize-guest.tap"
say "sanitize: guest migrations (ASan+UBSan QEMU, TCG)"
QEMU=$obj/qemu-system-x86_64 bash "$TOP/tests/glue/guest-migrate.sh" > "$logs/sanitize-migrate.tap" 2>&1 || status=1
tally "$logs/sanitize-migrate.tap"
grep -h -m5 -E 'runtime error|AddressSanitizer' "$logs/sanitize-qtest.log" "$logs/sanitize-glue.tap" \
    "$logs/sanitize-migrate.tap" "$obj"/meson-logs/testlog.txt "$BUILD"/guest-tests/sanitize/*.stderr 2>/dev/null | sed 's/^/    /' || true
[ $status = 0 ] || die "a sanitizer run failed; logs in build/check-logs/sanitize-*."
say "sanitize: qtest and glue suites, the guest boots and migrations passed under ASan+UBSan"
