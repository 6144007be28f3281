#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make fuzz: build every fuzz target and run each for FUZZ_TIME seconds.
#
#   engine  tests/fuzz/engine_fuzz.cc, libFuzzer, ASan+UBSan (build/fuzz)
#   iova    tests/fuzz/iova_fuzz.cc, likewise
#   trace   tests/fuzz/trace_fuzz.cc (the DMA trace parser and replay), likewise
#   qemu    QEMU's generic-fuzz harness (qemu-fuzz-x86_64, build/qemu-fuzz)
#           on a q35 machine with viommu-vtd, viommu-dma and a virtio-net NIC
#           (iommu_platform=on) behind it: MMIO/PIO, PCI config, DMA and guest
#           memory together
#   qemu-sm the same harness with viommu-vtd in scalable mode: first- and
#           second-stage tables, nested translation, requests with PASID,
#           interrupt remapping, device-IOTLB invalidations, caching mode
#
#   FUZZ_TIME=60                seconds per target
#   FUZZ_TARGETS="engine iova trace qemu qemu-sm"
#   FUZZ_OPTS=""                more libFuzzer options for engine, iova, trace
# New inputs go to build/fuzz/corpus/<target>/, crashes and failed oracles to
# build/fuzz/artifacts/<target>/; the script fails if a target left one.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# Both checked before any setup, as scripts/check.sh checks SUITES: libFuzzer
# reads -max_total_time=0 (and a non-number, as 0) as "no limit".
time=${FUZZ_TIME:-60}
[[ $time =~ ^[1-9][0-9]{0,9}$ ]] && [ "$time" -le 2147483647 ] \
    || die "FUZZ_TIME must be a whole number of seconds from 1 to 2147483647, not '$time'."
all_targets="engine iova trace qemu qemu-sm"
targets=${FUZZ_TARGETS:-$all_targets}
set -f  # a '*' in FUZZ_TARGETS is a bad name, not a file list
for t in $targets; do
    case " $all_targets " in *" $t "*) ;; *) die "unknown fuzz target '$t' in FUZZ_TARGETS (known: $all_targets)." ;; esac
done
# shellcheck disable=SC2086,SC2116  # one space between the names
targets=$(echo $targets)
set +f
[ -n "$targets" ] || die "FUZZ_TARGETS names no target (known: $all_targets)."
FUZZ_OPTS=${FUZZ_OPTS:-}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# The generic-fuzz configurations (docs/fuzzing.rst): the machine, then
# viommu-vtd's options for qemu and for qemu-sm.
qemu_machine="-M q35,kernel-irqchip=split -m 64M -nodefaults -L /usr/share/seabios -L /usr/lib/ipxe/qemu -L /usr/share/qemu"
qemu_devices="-device viommu-dma,addr=04.0 -netdev user,id=n0 -device virtio-net-pci,netdev=n0,iommu_platform=on,disable-legacy=on,addr=05.0"
QEMU_FUZZ_ARGS=${QEMU_FUZZ_ARGS:-"$qemu_machine -device viommu-vtd $qemu_devices"}
QEMU_FUZZ_SM_ARGS=${QEMU_FUZZ_SM_ARGS:-"$qemu_machine -device viommu-vtd,x-scalable-mode=on,x-flts=on,second-stage=on,x-pasid-mode=on,intremap=on,device-iotlb=on,caching-mode=on $qemu_devices,ats=on"}
QEMU_FUZZ_OBJECTS=${QEMU_FUZZ_OBJECTS:-"viommu-vtd viommu-dma* virtio*"}
export QEMU_FUZZ_ARGS QEMU_FUZZ_OBJECTS

summary() {  # summary TARGET LOG: the final libFuzzer figures
    local final rate execs
    final=$(grep -aE '^#[0-9]+' "$2" | tail -1 || true)  # none if it failed at once
    execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$2")
    rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$2")
    say "$1: ${execs:-?} executions in $time s (${rate:-?}/s), $(grep -o 'cov: [0-9]* ft: [0-9]*' <<<"$final" || echo 'no coverage line'); log build/fuzz/$1.log"
}

bash "$TOP/scripts/setup-host.sh" fuzz
case " $targets " in *" qemu "*|*" qemu-sm "*) bash "$TOP/scripts/setup-host.sh" qemu ;; esac

failed=0
run_libfuzzer() {  # run_libfuzzer NAME BINARY FIRST-ARG SEEDS [OPTION...]
    local name=$1 bin=$2 first=$3 seeds=$4; shift 4
    mkdir -p "$BUILD/fuzz/corpus/$name" "$BUILD/fuzz/artifacts/$name"
    say "fuzzing $name for $time s"
    local rc=0 execs
    "$bin" $first "$BUILD/fuzz/corpus/$name" $seeds -max_total_time="$time" -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$BUILD/fuzz/artifacts/$name/" "$@" \
        > "$BUILD/fuzz/$name.log" 2>&1 || rc=$?
    summary "$name" "$BUILD/fuzz/$name.log"
    execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$BUILD/fuzz/$name.log")
    if ls "$BUILD/fuzz/artifacts/$name/"* >/dev/null 2>&1; then
        say "$name: found something: $(ls "$BUILD/fuzz/artifacts/$name/" | head -3 | tr '\n' ' ')"
        grep -a -m3 -E 'oracle failed|ERROR|SUMMARY' "$BUILD/fuzz/$name.log" >&2 || true
        failed=1
    elif [ "$rc" != 0 ] || [ "${execs:-0}" = 0 ]; then
        # no finding, yet it did not run: it could not start (a bad
        # QEMU_FUZZ_ARGS, a binary that does not load)
        say "$name: the fuzzer exited with status $rc after ${execs:-no} executions; the end of build/fuzz/$name.log:"
        tail -n 5 "$BUILD/fuzz/$name.log" | sed 's/^/    /' >&2
        failed=1
    fi
}

for t in $targets; do
    case $t in
    engine|iova|trace)
        if [ ! -f "$BUILD/fuzz/build.ninja" ]; then
            mkdir -p "$BUILD"
            (cd "$TOP" && CC=clang CXX=clang++ meson setup "$BUILD/fuzz" . -Dfuzzing=true \
                -Db_sanitize=address,undefined -Db_lundef=false >"$BUILD/fuzz-setup.log" 2>&1) || {
                tail -n 20 "$BUILD/fuzz-setup.log" >&2
                rm -rf "$BUILD/fuzz"
                die "meson setup of build/fuzz failed (build/fuzz-setup.log)."
            }
        fi
        ninja -C "$BUILD/fuzz" "tests/fuzz/$t-fuzz" >"$BUILD/fuzz/ninja.log" 2>&1 || {
            tail -n 20 "$BUILD/fuzz/ninja.log" >&2
            die "building the $t fuzzer failed (build/fuzz/ninja.log)."
        }
        # -entropic=0 for the engine and iova: libFuzzer's entropic schedule
        # was 43 % and 69 % of their samples, and the same number of
        # executions without it reached as many library edges
        # (docs/fuzzing.rst); trace reached fewer edges without it and keeps it.
        # iova: inputs of at most 512 bytes (about 100 operations); in runs
        # of the same length they reached as many allocator edges as
        # 4096-byte ones, with three times the executions (docs/fuzzing.rst).
        opts=(-max_len=4096)
        [ "$t" = iova ] && opts=(-max_len=512)
        [ "$t" = trace ] || opts+=(-entropic=0)
        run_libfuzzer "$t" "$BUILD/fuzz/tests/fuzz/$t-fuzz" "" "$TOP/tests/fuzz/corpus/$t" "${opts[@]}" $FUZZ_OPTS
        ;;
    qemu|qemu-sm)
        bash "$TOP/scripts/fetch-qemu.sh"
        bash "$TOP/scripts/build-qemu-fuzz.sh" qemu-fuzz-x86_64
        args=$QEMU_FUZZ_ARGS
        [ "$t" = qemu ] || args=$QEMU_FUZZ_SM_ARGS
        QEMU_FUZZ_ARGS=$args run_libfuzzer "$t" "$BUILD/qemu-fuzz/qemu-fuzz-x86_64" \
            --fuzz-target=generic-fuzz ""
        ;;
    esac
done
[ $failed = 0 ] || die "a fuzz target found something or did not run; see above and build/fuzz/."
