#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# viommu-sim from the command line alone: setups that are none of the case
# files run deterministically (the same JSON twice), --json carries the
# keys docs/simulation.rst names, and bad parameters are one-line errors
# that name the parameter, with nothing run.
set -u
sim=$1
fail=0
check() { echo "not ok: $*"; fail=1; }

run_twice() {
    local a b
    a=$("$sim" --json "$@") || { check "run failed: $*"; return; }
    b=$("$sim" --json "$@") || { check "run failed: $*"; return; }
    [ "$a" = "$b" ] || check "two runs differ: $*"
    for k in ops_per_s relative_to_no_iommu spin_share allocator_retries cmdq_owner_share \
             cmdq_poll_ns op_latency_ns cycles; do
        case $a in *"\"$k\":"*) ;; *) check "no key $k: $*";; esac
    done
    echo "$a"
}

for q in spinlock cmpxchg fetch-add; do
    out=$(run_twice --workload map-bench --cpus 64 --iommu smmuv3 --cmdq "$q" --flush strict \
          --allocator linux-6.7 --cpu-ns-per-op 200 --ops-per-cpu 40)
    case $out in *'"cmdq_owner_share":null'*) check "map-bench $q: no cmdq figures";; esac
done
out=$(run_twice --workload block --cpus 128 --devices 12 --iodepth 128 --cpu-ns-per-op 3us \
      --device-ns-per-op 1us --ops-per-cpu 10 --warmup 0 --allocator linux-6.7)
# not SMMUv3: the command-queue keys are null
case $out in *'"cmdq_owner_share":null'*) ;; *) check "block on vtd: cmdq_owner_share not null";; esac
# a closed loop of clients, completions on two of the CPUs: deterministic too
out=$(run_twice --workload memcached --cpus 8 --irq-affinity spread --irq-cpus 2 \
      --clients-per-cpu 3 --client-rtt 40us --allocator linux-4.15 --ops-per-cpu 100)
case $out in *'"what":"client-wait","ns":0,'*) check "clients: no client-wait";; esac
# flags override the case file
out=$("$sim" --json --case nvme-smmuv3-cmdq --config mainline --cpus 2 --ops-per-cpu 50)
case $out in *'"cpus":2,'*) ;; *) check "--cpus did not override the case file";; esac

# errors: one line, naming the parameter, exit status non-zero, no output
bad() {
    local want=$1; shift
    local out err rc
    out=$("$sim" "$@" 2>/tmp/cli_test.$$)
    rc=$?
    err=$(cat /tmp/cli_test.$$)
    rm -f /tmp/cli_test.$$
    [ $rc -ne 0 ] || check "accepted: $*"
    [ -z "$out" ] || check "printed a result: $*"
    [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || check "not one line: $* -> $err"
    case $err in *"$want"*) ;; *) check "error does not name $want: $* -> $err";; esac
}
bad --iodeth --iodeth 4
bad --iodepth --iodepth
bad --iodepth --workload nic --iodepth 4
bad --cmdq --iommu vtd --cmdq spinlock
bad --cpus --cpus 4,300
bad --allocator --allocator linux-9.9
bad --page-size --page-size 8192
bad --config --config mainline
bad nope.json --case nope.json
"$sim" --help | grep -q -- "--device-ns-per-op (ns)" || check "--help lacks --device-ns-per-op"

# a what-if cost model: named in the result, and it changes the timing;
# --cost-from takes a --calibrate file's atomic, local-lock and line-transfer figures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
std=$("$sim" --json --workload nic --cpus 4 --ops-per-cpu 50)
case $std in *cost_overrides*) check "a standard run names cost overrides";; esac
slow=$(run_twice --workload nic --cpus 4 --ops-per-cpu 50 --cost line_transfer=500 --cost atomic=9)
case $slow in *'"cost_overrides":{"line_transfer":500,"atomic":9}'*) ;;
    *) check "--cost: the overrides are not in the result";; esac
[ "${std#*ops_per_s}" != "${slow#*ops_per_s}" ] || check "--cost line_transfer=500 changed nothing"
printf '%s\n' '{"provenance":{"command":"viommu-sim --calibrate"},"atomic_ns":2.4,"lock_local_ns":9.6,"line_transfer_ns":39.6,"lock_handoff_ns":119}' >"$tmp/cal.json"
out=$("$sim" --json --workload nic --cpus 4 --ops-per-cpu 50 --cost-from "$tmp/cal.json")
case $out in *'"cost_overrides":{"lock_local":10,"line_transfer":40,"atomic":2}'*) ;;
    *) check "--cost-from: not the calibration's figures: $out";; esac
printf '%s\n' '{"atomic_ns":2}' >"$tmp/other.json"
bad --cost-from --cost-from "$tmp/other.json"
bad --cost-from --cost-from "$tmp/missing.json"
bad --cost --cost line_transfer
bad --cost --cost nonsense=3
bad --cost --cost inv_poll=0
bad --cost --cost atomic=100001
bad --cost --real-threads --cost atomic=3
bad --duration --workload nic --cpu-ns-per-op 2us --duration 101s
# the = form, as every other option takes its value
eq=$("$sim" --json --workload nic --cpus 4 --ops-per-cpu 50 --cost=line_transfer=500 --cost=atomic=9)
[ "$eq" = "$slow" ] || check "--cost=FIELD=VALUE: not the run of --cost FIELD=VALUE"
out=$("$sim" --json --workload nic --cpus 4 --ops-per-cpu 50 --cost-from="$tmp/cal.json")
case $out in *'"cost_overrides":{"lock_local":10,"line_transfer":40,"atomic":2}'*) ;;
    *) check "--cost-from=FILE: not the calibration's figures: $out";; esac
bad --cost-from --cost-from=
# a calibration without its always-written figures; a directory
printf '%s\n' '{"provenance":{"command":"viommu-sim --calibrate"}}' >"$tmp/empty-cal.json"
bad "no atomic_ns" --cost-from "$tmp/empty-cal.json"
printf '%s\n' '{"provenance":{"command":"viommu-sim --calibrate"},"atomic_ns":2.4,"lock_local_ns":9.6,"line_transfer_ns":null}' >"$tmp/one-cpu.json"
"$sim" --workload nic --cpus 2 --ops-per-cpu 20 --cost-from "$tmp/one-cpu.json" >/dev/null ||
    check "--cost-from: a one-CPU calibration (line_transfer_ns null) refused"
bad "$tmp: cannot read it: Is a directory" --cost-from "$tmp"
bad "$tmp: cannot open the trace: Is a directory" --workload trace --trace "$tmp" --cpus 2
# a trace's window is bounded as --warmup is
printf 'viommu-trace 1 window=16777217\n0 0 map size=4096 iova=0x1000\nend 1\n' >"$tmp/w.vtrace"
bad "w.vtrace:1: header window='16777217'" --workload trace --trace "$tmp/w.vtrace" --cpus 1
# operations that take no time without the IOMMU: that rate is n/a, not 0
out=$("$sim" --cpus 2 --ops-per-cpu 20 --cpu-ns-per-op 0)
case $out in *"without IOMMU n/a"*) ;; *) check "--cpu-ns-per-op 0: no n/a: $out";; esac
out=$("$sim" --json --cpus 2 --ops-per-cpu 20 --cpu-ns-per-op 0)
case $out in *'"relative_to_no_iommu":null,"no_iommu_ops_per_s":null'*) ;;
    *) check "--cpu-ns-per-op 0: relative_to_no_iommu not null";; esac
# endless or huge input files are refused at a limit, not read into memory
bad "/dev/zero: cannot read the case file: larger than 1 MiB" --case /dev/zero
bad "--cost-from /dev/zero: cannot read it: larger than 1 MiB" --cost-from /dev/zero
bad "/dev/zero:1: line longer than 4096 bytes" --workload trace --trace /dev/zero --cpus 2
# a missing value is named as such, not taken from the next option
bad "--seed: needs a value (got the option --cpus)" --seed --cpus 2
bad "--json: takes no value" --json=yes
# a check failing on a value the case file set names the file
bad "--sockets 2: more sockets than --cpus 1 (--sockets from " --case memcached-16cpu-xl710 \
    --config percpu-batch --cpus 1
# the IOMMU's parameters without an IOMMU
bad "--flush strict: applies with an IOMMU only" --allocator none --flush strict
bad "--rcache-drain 1ms: applies with an IOMMU only" --allocator none --rcache-drain 1ms
"$sim" --case cx4-64k-32bit-exhausted --config no-iommu --ops-per-cpu 20 >/dev/null ||
    check "a case's no-IOMMU configuration refused for the parameters it inherits"
# setups that would hold more mappings at once than 2^25
bad "--ring-entries 1048576: 268435456 RX buffers" --cpus 256 --ring-entries 1048576
bad "--iodepth 65536: 268435456 outstanding I/Os in all" --cpus 256 --workload block \
    --devices 16 --iodepth 65536
# empty names, options that take none, modes that take no parameters
bad "--case: needs a case name or file" --case ''
bad "--config: needs a configuration name" --case memcached-16cpu-xl710 --config ''
bad "--bogus" --list --bogus
bad "--calibrate: takes no other option" --calibrate --cpus 4
bad "--cost-model: takes only --cost" --cost-model --cpus 4
"$sim" --cost-model --cost atomic=5 | grep -q '"atomic":5,' ||
    check "--cost-model does not show a --cost override"
# a recording over the trace it replays
printf 'viommu-trace 1\n0 0 map size=4096 iova=0x1000\n10 0 unmap size=4096 iova=0x1000\nend 2\n' \
    >"$tmp/in.vtrace"
cp "$tmp/in.vtrace" "$tmp/keep.vtrace"
bad "is the trace replayed" --workload trace --trace "$tmp/in.vtrace" --cpus 1 --record "$tmp/in.vtrace"
cmp -s "$tmp/in.vtrace" "$tmp/keep.vtrace" || check "--record over --trace changed the trace"
# a result that cannot be written is a failure
if [ -w /dev/full ]; then
    "$sim" --json --workload nic --cpus 2 --ops-per-cpu 10 >/dev/full 2>"$tmp/err" &&
        check "--json to a full disk exited 0"
    grep -q "writing the output failed" "$tmp/err" || check "no message for a full disk"
fi
# maps that fail drop their transaction: no throughput from them, and it says so
out=$("$sim" --json --cpus 4 --ops-per-cpu 200 --workload block --block-size 1M \
      --dma-mask-bits 32 --iodepth 2048 2>"$tmp/err")
case $out in *'"ops_per_s":0,'*'"dropped":800,'*) ;;
    *) check "failed maps counted as throughput: $out";; esac
grep -q "800 of 800 IOs dropped" "$tmp/err" || check "dropped IOs not reported: $(cat "$tmp/err")"
# the same with real threads: which transactions lose their map (if any:
# a thread whose setup ran first may hold all its slots and run every
# transaction) depends on how the threads interleave; in every interleaving
# a failed map drops its own transaction and only those are out of the
# throughput
out=$("$sim" --json --real-threads --cpus 4 --workload block --block-size 1M --dma-mask-bits 32 \
      --iodepth 2048 --ops-per-cpu 2048 --warmup 0 2>/dev/null) || check "--real-threads block failed"
printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["dropped"] <= d["failed_maps"] and (d["dropped"] > 0) == (d["failed_maps"] > 0), d
assert abs(d["throughput"] * d["wall_ns"] / 1e9 - (d["transactions"] - d["dropped"])) < 1, d
' || check "--real-threads: dropped transactions not counted apart: $out"
# a trace read from a pipe (read once, though the run builds its workload more than once)
"$sim" --workload nic --cpus 2 --ops-per-cpu 20 --record "$tmp/pipe.vtrace" >/dev/null
a=$("$sim" --workload trace --cpus 2 --trace "$tmp/pipe.vtrace" | sed 1d)
b=$("$sim" --workload trace --cpus 2 --trace <(cat "$tmp/pipe.vtrace") | sed 1d)
[ -n "$a" ] && [ "$a" = "$b" ] || check "--trace from a pipe: not the run of the file: $b"
# JSON numbers read back as the values the text prints
out=$("$sim" --json --workload nic --cpus 2 --ops-per-cpu 50)
txt=$("$sim" --workload nic --cpus 2 --ops-per-cpu 50)
v=$(printf '%s' "$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["ops_per_s"])')
case $txt in *"throughput $(printf '%.0f' "$v") "*) ;;
    *) check "JSON ops_per_s $v is not the text's: $txt";; esac

# what real threads do not model is refused
bad "--real-threads: --duration" --real-threads --cpus 1 --duration 1ms
bad "--real-threads: --device-ns-per-op" --real-threads --cpus 1 --device-ns-per-op 100us
bad "--real-threads: --iommu smmuv3" --real-threads --cpus 1 --iommu smmuv3 --cmdq spinlock
bad "--real-threads: --rcache-drain" --real-threads --cpus 1 --rcache-drain 1ms
bad "--real-threads: --dma sac-flush" --real-threads --cpus 1 --dma sac-flush
bad "--real-threads: --llc" --real-threads --cpus 1 --llc inclusive
bad "--real-threads: --spinlock" --real-threads --cpus 1 --spinlock ticket

# real threads: one per CPU online unless --cpus says otherwise, and more
# threads than CPUs online are run with a warning that says what they measure
online=$(nproc)
out=$("$sim" --json --real-threads --allocator linux-6.7 --ops-per-cpu 5 --warmup 0 2>"$tmp/err")
case $out in *"\"threads\":$online,"*) ;; *) check "--real-threads: not $online threads: $out";; esac
[ ! -s "$tmp/err" ] || check "--real-threads on the CPUs online warned: $(cat "$tmp/err")"
"$sim" --json --real-threads --allocator linux-6.7 --ops-per-cpu 2 --warmup 0 \
    --cpus $((online + 1)) >/dev/null 2>"$tmp/err" || check "--real-threads --cpus $((online + 1)) failed"
grep -q "$((online + 1)) threads on $online CPUs online" "$tmp/err" ||
    check "--real-threads over the CPUs online: no warning: $(cat "$tmp/err")"

[ $fail -eq 0 ] && echo "ok: cli"
exit $fail
