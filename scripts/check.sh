#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make check: set up, build, run every suite, print one summary line.
#
#   SUITES="unit qtest glue guest profile"   which suites to run (default: all)
#
# The unit suite also runs the multi-threaded tests built with ThreadSanitizer
# (build/standalone-tsan); they are reported on a line of their own ("tsan").
#
# Each suite's results are counted case by case (GoogleTest cases, TAP lines);
# the last line is "N passed, N failed" (", N skipped" when any were skipped),
# and the exit status is non-zero when anything failed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

all_suites="unit qtest glue guest profile"
SUITES=${SUITES:-$all_suites}
[ -n "${SUITES//[[:space:]]/}" ] || die "SUITES names no suite (known: $all_suites)."
set -f  # SUITES is a word list, not a pattern
for s in $SUITES; do
    case " $all_suites " in *" $s "*) ;; *) die "unknown suite '$s' in SUITES (known: $all_suites)." ;; esac
done
set +f
wants() { case " $SUITES " in *" $1 "*) return 0 ;; esac; return 1; }

logs=$BUILD/check-logs
rm -rf "$logs"; mkdir -p "$logs"
passed=0 failed=0 skipped=0
declare -a report

# A suite whose runner exited non-zero failed, whatever its log says (a
# runner that died, a meson that matched no test): one failure if its
# cases showed none.
count() {  # count SUITE KIND STATUS FILE...
    local suite=$1 kind=$2 status=$3; shift 3
    local p=0 f=1 s=0 note=
    read -r p f s < <(python3 "$TOP/scripts/tally.py" "$kind" "$@") ||
        { p=0 f=1 s=0 note=" (tally.py failed)"; }
    if [ "$status" != 0 ] && [ "$f" = 0 ]; then
        f=1 note=" (its runner exited with status $status)"
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    report+=("$(printf '  %-7s %5d passed, %d failed, %d skipped%s' "$suite" "$p" "$f" "$s" "$note")")
}

# meson writes its logs only when some test ran: last run's must not count.
clear_meson_logs() {  # clear_meson_logs BUILD-DIR
    rm -f "$1"/meson-logs/testlog.junit.xml "$1"/meson-logs/testlog.json
}

fail_setup() {  # a suite that could not even start counts as one failure
    say "$1"
    failed=$((failed + 1))
    report+=("$(printf '  %-7s setup failed: %s' "$2" "$1")")
}

level=standalone
if wants qtest || wants glue; then level=qemu; fi
if wants guest || wants profile; then level=guest; fi
bash "$TOP/scripts/setup-host.sh" "$level" || exit 1

if wants unit; then
    say "unit tests: building the standalone tree (engine, allocator, simulator)"
    if bash "$TOP/scripts/build-standalone.sh"; then
        say "unit tests: running"
        # A gtest program that dies leaves last run's XML, which meson would read.
        rm -f "$BUILD"/standalone/*.xml
        clear_meson_logs "$BUILD/standalone"
        meson test -C "$BUILD/standalone" --no-rebuild --print-errorlogs --no-suite bench \
            >"$logs/unit.log" 2>&1
        rc=$?
        tail -n 12 "$logs/unit.log" | sed 's/^/    /'
        count unit junit "$rc" "$BUILD/standalone/meson-logs/testlog.junit.xml"
    else
        fail_setup "the standalone build failed (see above)" unit
    fi
    # The multi-threaded tests again under ThreadSanitizer: any report fails
    # the test (halt_on_error); TSan slows them 5-20x, hence the multiplier.
    say "unit tests: building the multi-threaded tests with ThreadSanitizer (build/standalone-tsan)"
    if bash "$TOP/scripts/build-standalone.sh" tsan; then
        say "unit tests: running them under ThreadSanitizer"
        rm -f "$BUILD"/standalone-tsan/*.xml
        clear_meson_logs "$BUILD/standalone-tsan"
        # shellcheck disable=SC2046  # a word list of test names
        TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" \
            meson test -C "$BUILD/standalone-tsan" --no-rebuild --print-errorlogs \
            --timeout-multiplier 5 $(bash "$TOP/scripts/build-standalone.sh" --tsan-tests) \
            >"$logs/unit-tsan.log" 2>&1
        rc=$?
        tail -n 8 "$logs/unit-tsan.log" | sed 's/^/    /'
        count tsan junit "$rc" "$BUILD/standalone-tsan/meson-logs/testlog.junit.xml"
    else
        fail_setup "the ThreadSanitizer build failed (see above)" tsan
    fi
fi

if wants qtest || wants glue || wants guest || wants profile; then
    # The qtest targets are known only once QEMU is configured: build twice.
    if bash "$TOP/scripts/fetch-qemu.sh" && bash "$TOP/scripts/build-qemu.sh" \
        && bash "$TOP/scripts/build-qemu.sh" $(bash "$TOP/scripts/qtest-targets.sh"); then
        qemu_ok=1
    else
        qemu_ok=0
    fi
fi

if wants qtest; then
    if [ "$qemu_ok" = 1 ]; then
        if [ -n "$(bash "$TOP/scripts/qtest-targets.sh")" ]; then
            say "qtests: running suite viommu"
            clear_meson_logs "$BUILD/qemu"
            "$BUILD/qemu/pyvenv/bin/meson" test -C "$BUILD/qemu" --no-rebuild --print-errorlogs --suite viommu \
                >"$logs/qtest.log" 2>&1
            rc=$?
            tail -n 12 "$logs/qtest.log" | sed 's/^/    /'
            count qtest junit "$rc" "$BUILD/qemu/meson-logs/testlog.junit.xml"
        else
            fail_setup "no qtest is registered in suite viommu" qtest
        fi
    else
        fail_setup "the QEMU build failed (see above)" qtest
    fi
fi

run_tap_suite() {  # run_tap_suite NAME SCRIPT
    local name=$1 script=$2
    if [ "$qemu_ok" != 1 ]; then fail_setup "the QEMU build failed (see above)" "$name"; return; fi
    if [ ! -f "$script" ]; then fail_setup "$script is missing" "$name"; return; fi
    say "$name tests: running $(basename "$(dirname "$script")")/$(basename "$script")"
    bash "$script" 2>&1 | tee "$logs/$name.tap" | sed 's/^/    /'
    count "$name" tap "${PIPESTATUS[0]}" "$logs/$name.tap"
}
wants glue && run_tap_suite glue "$TOP/tests/glue/run.sh"
wants guest && run_tap_suite guest "$TOP/tests/guest/run.sh"
# Four of those boots against a second guest kernel (6.12 on bookworm).
wants guest && run_tap_suite kernel2 "$TOP/tests/guest/second-kernel.sh"
# Live migration of a guest behind viommu-vtd (about a minute under TCG).
wants guest && run_tap_suite migrate "$TOP/tests/glue/guest-migrate.sh"
wants profile && run_tap_suite profile "$TOP/tests/profile/smoke.sh"

say "summary (logs in build/check-logs):"
printf '%s\n' "${report[@]}"
line="$passed passed, $failed failed"
[ "$skipped" -gt 0 ] && line="$line, $skipped skipped"
echo "$line"
[ "$failed" -eq 0 ]
