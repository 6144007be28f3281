#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Smoke test of guest workload profiling (scripts/profile/profile.py), TAP.
#
# One guest boot: memcached behind viommu-vtd, a few seconds of memcaslap traffic
# between two network namespaces over two IOMMU-translated virtio-net NICs.
# Asserts behaviour only: traffic flowed, the server saw it, the guest's DMA
# NICs are in translated IOMMU domains, the vIOMMU's counters rose, perf sampled the
# guest kernel; and that bad input fails at once with a clear message.
# No throughput figure is asserted.  Logs: build/profile/smoke/.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

prof=$TOP/scripts/profile/profile.py
out=$BUILD/profile/smoke
DURATION=${DURATION:-4}
qemu=${QEMU:-$BUILD/qemu-system-x86_64}

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1 # $2"; }
check() {  # check NAME REASON-IF-FAILED COMMAND...
    local name=$1 why=$2; shift 2
    if "$@"; then ok "$name"; else notok "$name" "$why"; fi
}


iommu=viommu-vtd policy=lazy label=viommu-vtd
# This tree's QEMU has viommu-vtd: one without it is a broken build, not a
# reason to profile something else.
if [ ! -x "$qemu" ] || ! "$qemu" -device help 2>/dev/null | grep -q 'name "viommu-vtd"'; then
    echo "1..1"
    echo "not ok 1 - viommu-vtd in $qemu # no executable QEMU, or no viommu-vtd device in it"
    exit 1
fi
# The recording checks (profile.py --record, scripts/profile/replay.py).
NREC=10
echo "1..$((27 + NREC))"

# Bad input: refused before anything boots, with a sentence naming the cause.
bad() {  # bad PATTERN ARGS...
    local pat=$1; shift
    local msg rc=0
    msg=$(timeout 60 python3 "$prof" "$@" 2>&1) || rc=$?
    [ "$rc" != 0 ] && grep -q -- "$pat" <<< "$msg"
}
check "unknown workload is refused with a message naming it" "no error naming 'redis'" \
    bad "unknown workload 'redis'" --workload redis
check "unknown option is refused" "no error for --frobnicate" \
    bad "unrecognized arguments: --frobnicate" --frobnicate
check "unknown IOMMU in --compare is refused" "no error for smmu" \
    bad "bad configuration 'smmu:lazy'" --compare none:lazy,smmu:lazy
check "a ramp step that is not a number is refused" "no error naming 'x'" \
    bad "--ramp: 'x' is not a number" --ramp 8,x
check "a ramp step given twice is refused" "no error naming the repeated 64" \
    bad "--ramp: 64 connections twice" --ramp 64,128,64
check "ramp rounds out of range are refused" "no error for --ramp-rounds 0" \
    bad "--ramp-rounds must be between 1 and 20" --ramp 64 --ramp-rounds 0
# The ramp's plateau: held against the best step below, not the one before.
plateau() {
    python3 - "$prof" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("prof", sys.argv[1])
p = importlib.util.module_from_spec(spec); spec.loader.exec_module(p)
st = lambda *a: [{"conns": c, "ops_per_s": v} for c, v in a]
ok = (p.ramp_plateau(st((64, 1613), (128, 1379), (256, 1552), (512, 1422)))[0] == 64
      and p.ramp_plateau(st((32, 100), (64, 200), (128, 204)))[0] == 64
      and p.ramp_plateau(st((32, 1512), (64, 1324), (128, 1591), (256, 2044))) is None
      and p.ramp_plateau(st((256, 110), (64, 100), (128, 120)))[0] == 128
      and p.ramp_plateau(st((64, 100))) is None)
sys.exit(0 if ok else 1)
PY
}
check "the ramp's plateau is where no step with more connections adds 5% over the best below it" \
    "ramp_plateau gave another answer" plateau
# Rounds: every other one reversed; each concurrency's median over them.
rounds() {
    python3 - "$prof" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("prof", sys.argv[1])
p = importlib.util.module_from_spec(spec); spec.loader.exec_module(p)
steps = p.ramp_steps([64, 128, 256], 3)
figs = dict(zip(range(9), (100, 90, 130, 120, 95, 105, 110, 80, 140)))
by = p.ramp_by_conns([{"conns": c, "ops_per_s": figs[i]} for i, c in enumerate(steps)]
                     + [{"conns": 512, "ops_per_s": None}])
ok = (steps == [64, 128, 256, 256, 128, 64, 64, 128, 256]
      and by == [(64, 105, 100, 110, 3), (128, 90, 80, 95, 3), (256, 130, 120, 140, 3), (512, None, None, None, 0)]
      and p.ramp_steps([8], 2) == [8, 8])
sys.exit(0 if ok else 1)
PY
}
check "a ramp of several rounds runs every other round in reverse and takes each concurrency's median" \
    "ramp_steps or ramp_by_conns gave another answer" rounds
# memaslap's log2 buckets: e holds (2^(e-1), 2^e] us; percentiles at most the maximum.
percentiles() {
    python3 - "$prof" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("prof", sys.argv[1])
p = importlib.util.module_from_spec(spec); spec.loader.exec_module(p)
out = '''Total Statistics (35975 events)
   Min:      2546
   Max:    342099
   Avg:     72423
   Log2 Dist:
      12:        1       11      574     5558
      16:    13298    12794     3567      172
'''
r = p.parse_memcaslap(out)
ok = (r["lat_p50_us"] == 65536 and r["lat_p90_us"] == 262144 and r["lat_p99_us"] == 262144
      and r["lat_p99_9_us"] == 342099)
sys.exit(0 if ok else 1)
PY
}
check "memaslap's latency percentiles are the upper edges of its log2 buckets, at most the maximum" \
    "parse_memcaslap gave other percentiles" percentiles
check "--record without an IOMMU is refused" "no error for --record with --iommu none" \
    bad "--record needs a run behind an IOMMU" --iommu none --record /tmp/never.trace
check "--record into a directory that does not exist is refused" "no error for /nonexistent/dir" \
    bad "its directory does not exist" --record /nonexistent/dir/f.trace
check "a negative --top is refused" "no error for --top -1" bad "--top must be between" --top -1
check "-smp among --qemu-arg is refused in favour of --vcpus" "no error for --qemu-arg=-smp" \
    bad "--qemu-arg -smp: set the guest's vCPUs with --vcpus" --qemu-arg=-smp --qemu-arg=4
# replay.py: bad input refused before any replay, in one sentence.
badr() {  # badr PATTERN ARGS...
    local pat=$1; shift
    local msg rc=0
    msg=$(cd "$tmp" && timeout 60 python3 "$TOP/scripts/profile/replay.py" "$@" 2>&1) || rc=$?
    [ "$rc" != 0 ] && grep -q -- "$pat" <<< "$msg" && ! grep -q Traceback <<< "$msg"
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo '[]' > "$tmp/list.json"
echo '{"record": {"trace": "t.vtrace", "guest_counts": {"events": {}, "sizes": {}, "per_cpu": {}}}}' > "$tmp/novcpus.json"
printf 'viommu-trace 1\n0 0 map size=4096 iova=0x1000\n1 0 unmap size=4096 iova=0x1000\nend 2\n' > "$tmp/t.vtrace"
check "replay.py --check of JSON that is not a result object is refused" "no one-sentence error for []" \
    badr "list.json is not the result.json of a profile.py --record run: it holds an array" --check list.json
check "replay.py --check of a result without vcpus names it" "no error naming \"vcpus\"" \
    badr 'novcpus.json is not the result.json of a profile.py --record run: no "vcpus"' --check novcpus.json
check "replay.py --cpus above viommu-sim's 256 is refused up front" "no error for --cpus 300" \
    badr "--cpus: '300' is not a CPU count (a list of whole numbers from 1 to 256" t.vtrace --cpus 2,300
check "replay.py --allocators with no name is refused" "no error for --allocators ," \
    badr "--allocators: an empty name" t.vtrace --allocators ,
# Killed mid-run (a timeout, a CI job's end), profile.py stops the guest it
# started: QEMU has a process group of its own and would outlive it.  The
# kill waits for QEMU however long profile.py takes to get there (on a fresh
# cache it builds the profiling image first, minutes); profile.py returns
# only once its QEMU has exited.
killed() {
    local name="profile.py killed with SIGTERM stops its QEMU" d=$BUILD/profile/smoke-killed pid
    rm -rf "$d"; mkdir -p "$BUILD/profile"
    python3 "$prof" --iommu "$iommu" --duration 2 --out "$d" --quiet >"$d.log" 2>&1 &
    pid=$!
    until [ -s "$d/qemu.cmd" ] && pgrep -f -- "$d/console.log" >/dev/null; do
        if ! kill -0 "$pid" 2>/dev/null; then
            notok "$name" "profile.py exited before its QEMU ran (log: $d.log)"
            return
        fi
        sleep 0.1
    done
    kill -TERM "$pid"
    wait "$pid" || true
    if pgrep -f -- "$d/console.log" >/dev/null; then
        notok "$name" "QEMU still running after profile.py was killed and exited"
    else
        ok "$name"
    fi
}
killed

echo "# profiling memcached behind $iommu for ${DURATION}s (one guest boot under TCG, about 2 minutes)" >&2
rm -rf "$out"; mkdir -p "$BUILD/profile"
rc=0
python3 "$prof" --workload memcached --iommu "$iommu" --policy "$policy" --vcpus 2 \
    --duration "$DURATION" --conns 64 --freq 100 --out "$out" --record "$out/memcached.trace" \
    --ramp 8 --ramp-rounds 2 --ramp-duration 1 \
    --trace-kb 16384 --quiet > "$out.log" 2>&1 || rc=$?
sed 's/^/# /' "$out.log"
res=$out/result.json
get() {  # get PYTHON-EXPRESSION-ON-r -> value or empty
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); v=$1; print('' if v is None else v)" "$res" 2>/dev/null
}
gt0() { local v; v=$(get "$1"); [ -n "$v" ] && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$v"; }

if [ "$rc" = 0 ] && [ -f "$res" ]; then
    ok "$label: guest booted, ran memcached and memcaslap and reported (logs in $out)"
else
    notok "$label: guest booted, ran memcached and memcaslap and reported" \
        "profile.py exited $rc; $(get "r.get('error')" || true) (console log: $out/console.log)"
fi
check "$label: load generator completed transactions" "transactions: $(get "r['load'].get('ops')")" \
    gt0 "r['load'].get('ops')"
check "$label: a ramp of two rounds at one concurrency reported both steps" "ramp: $(get "r.get('ramp')")" \
    test "$(get "[(s['step'], s['round'], s['conns'], (s['ops_per_s'] or 0) > 0) for s in r.get('ramp') or []]")" \
    = "[(0, 0, 8, True), (1, 1, 8, True)]"
# The idle share itself is reported, not asserted: under TCG it depends on
# how much of the host the vCPU threads get (docs/profiling.rst).
check "$label: the guest's idle share over its elapsed time during the load is reported" \
    "guest_cpu: $(get "r.get('guest_cpu')")" \
    python3 -c "import json,sys; g=json.load(open(sys.argv[1])).get('guest_cpu') or {}; i=g.get('idle'); sys.exit(0 if i is not None and 0 <= i <= 1 and g.get('per_cpu') and g.get('elapsed_s', 0) > 0 and 0 < g.get('tick_coverage', 0) <= 1.1 else 1)" "$res"
echo "# guest idle $(get "'%.1f%% over %.1f s, busy ticks covering %.0f%% of it' % (100 * r['guest_cpu']['idle'], r['guest_cpu']['elapsed_s'], 100 * r['guest_cpu']['tick_coverage'])"); host: $(get "', '.join('%s on a CPU %.0f%% / waiting %.0f%%' % (n, 100 * v['run'], 100 * v['wait']) for n, v in sorted(r['host']['sched'].items()))") (report only)" >&2
check "$label: memcached saw requests during the load" "server requests: $(get "r['server'].get('requests')")" \
    gt0 "r['server'].get('requests')"
if [ "$policy" = strict ]; then want=DMA; else want=DMA-FQ; fi
check "$label: both NICs sit in translated $want IOMMU domains" "guest said: $(get "r['iommu_setup'][:2]")" \
    test "$(get "sum(('type=%s' % '$want') in l.split() for l in r['iommu_setup'])")" = 2
check "viommu-vtd: DMA translations rose during the load (QMP stats)" \
    "translate.requests delta: $(get "(r['viommu'] or {}).get('delta', {}).get('translate.requests')")" \
    gt0 "(r['viommu'] or {}).get('delta', {}).get('translate.requests')"
check "viommu-vtd: IOTLB invalidations and wait descriptors rose during the load (QMP stats)" \
    "$(get "{k: v for k, v in (r['viommu'] or {}).get('delta', {}).items() if k.startswith(('invalidations.iotlb', 'queue.waits.total'))}")" \
    gt0 "min(sum(v for k, v in (r['viommu'] or {}).get('delta', {}).items() if k.startswith('invalidations.iotlb.') and k != 'invalidations.iotlb.entries_dropped'), (r['viommu'] or {}).get('delta', {}).get('queue.waits.total', 0))"
check "$label: perf sampled the guest kernel and the report was classified" \
    "samples: $(get "r['perf'].get('samples')")" gt0 "r['perf'].get('samples') if r['perf'].get('paths') else 0"


# The recording: the guest's ftrace of its DMA map/unmap stream, converted to
# the trace format, then replayed by viommu-sim at the guest's vCPU count
# (it must agree with the guest's own counts and viommu-vtd's) and at 64 CPUs.
skip() {  # skip COUNT REASON
    local i
    for ((i = 0; i < $1; i++)); do n=$((n + 1)); echo "ok $n - recording check # SKIP $2"; done
}
rec_err=$(get "(r.get('record') or {}).get('error') or (r.get('record') or {}).get('convert_error')")

if [ ! -x "$TOP/scripts/trace/viommu-trace" ]; then
    skip $NREC "no trace converter (scripts/trace/viommu-trace) in this tree"
else
    check "recording: the guest's ftrace was fetched and converted to a trace" "${rec_err:-no trace}" \
        test -s "$out/memcached.trace"
    crc=0
    python3 "$TOP/scripts/profile/replay.py" --check "$res" --json "$out/replay-check.json" \
        > "$out/replay-check.log" 2>&1 || crc=$?
    sed 's/^/# /' "$out/replay-check.log"
    if [ -s "$out/replay-check.json" ]; then
        while IFS='|' read -r okv name detail; do
            if [ "$okv" = 1 ]; then ok "recording: $name"; else notok "recording: $name" "$detail"; fi
        done < <(python3 -c "
import json, sys
for c in json.load(open(sys.argv[1]))['checks']:
    print('%d|%s|%s' % (c['ok'], c['name'], ', '.join('%s %s' % (k, v) for k, v in c.items() if k not in ('name', 'ok'))))
" "$out/replay-check.json")
    else
        for ((i = 0; i < NREC - 2; i++)); do notok "recording: replay checks" "replay.py --check exited $crc: $(tail -n 1 "$out/replay-check.log")"; done
    fi
    rrc=0
    python3 "$TOP/scripts/profile/replay.py" "$out/memcached.trace" --cpus 64 --allocators linux-5.13 \
        --json "$out/replay-64.json" > "$out/replay-64.log" 2>&1 || rrc=$?
    sed 's/^/# /' "$out/replay-64.log"
    check "recording: its replay at 64 simulated CPUs ran and moved DMA" "replay.py exited $rrc" \
        python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r and (r[0]['ops_per_s'] or 0) > 0 else 1)" "$out/replay-64.json"
fi

echo "# $((n - failed)) passed, $failed failed" >&2
[ "$failed" = 0 ]
