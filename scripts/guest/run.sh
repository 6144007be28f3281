#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Boot the viommu-lab guest under TCG on q35 and run one scenario.
#
#   run.sh [options] [-- extra QEMU arguments]
#     --iommu none|intel-iommu|viommu-vtd   the IOMMU in front of PCI (default intel-iommu)
#     --mode lazy|strict|pt   guest TLB invalidation policy (strict adds iommu.strict=1);
#                             pt: pass-through default domains (iommu.passthrough=1)
#     --test NAME             guest scenario: boot, dma, fault, vfio, vhost, hotplug, reboot, suspend, shell (default boot)
#     --smp N                 vCPUs (default 2)       --mem MIB  guest RAM (default 1024)
#     --timeout S             kill QEMU after S seconds (default 300)
#     --qmp PATH              QMP server on the unix socket PATH
#     --hold                  keep QEMU up after the guest powers off, until a QMP
#                             'quit' (needs --qmp; the timeout still applies)
#     --reboot                a guest reboot resets the machine (without it QEMU exits)
#     --disk FILE             virtio-blk disk (raw) behind the IOMMU
#     --net                   virtio-net NIC (QEMU user networking) behind the IOMMU
#     --port N                host TCP port the guest reaches as 10.0.2.2:N
#     --mib N                 payload size in MiB for the dma scenario (default 4)
#     --edu                   QEMU's edu device (the fault and vfio scenarios' DMA
#                             engine), with a 64-bit DMA mask (edu clamps to 28 bits)
#     --vdma                  viommu-lab's viommu-dma device (the vfio scenario's
#                             DMA engine with viommu.vfio=vdma; unlike edu, it migrates)
#     --intremap on|off       interrupt remapping (default on for intel-iommu, off for viommu-vtd)
#     --x2apic                x2APIC guest: two vCPUs, the second placed with -device at
#                             APIC ID 256, both with x2apic; the IOMMU gets intremap=on,eim=on
#     --iommu-opts OPTS       more properties for the IOMMU device (e.g. device-iotlb=on)
#     --append ARGS           extra kernel command line
#     --log FILE              console log (default build/guest-logs/<time>-<test>-<iommu>-<mode>.log)
#     --quiet                 no progress lines, only the result
# QEMU's exit status is kept in LOG.status, its stderr in LOG.stderr, the command in LOG.cmd.
# Exit status: 0 when the guest reported "pass" and QEMU exited cleanly, 1 when
# a check failed or QEMU failed, 124 on timeout.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

iommu=intel-iommu mode=lazy test=boot smp=2 mem=1024 timeout_s=300 qmp= hold=0 reboot=0
disk= net=0 port= mib=4 edu=0 vdma=0 intremap= x2apic=0 iommu_opts= append= log= quiet=0
usage() { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; }
need() { [ $# -ge 2 ] || die "run.sh: option $1 needs a value."; }
while [ $# -gt 0 ]; do
    case $1 in
        --iommu) need "$@"; iommu=$2; shift 2 ;;
        --mode) need "$@"; mode=$2; shift 2 ;;
        --test) need "$@"; test=$2; shift 2 ;;
        --smp) need "$@"; smp=$2; shift 2 ;;
        --mem) need "$@"; mem=$2; shift 2 ;;
        --timeout) need "$@"; timeout_s=$2; shift 2 ;;
        --qmp) need "$@"; qmp=$2; shift 2 ;;
        --hold) hold=1; shift ;;
        --reboot) reboot=1; shift ;;
        --disk) need "$@"; disk=$2; shift 2 ;;
        --net) net=1; shift ;;
        --port) need "$@"; port=$2; shift 2 ;;
        --mib) need "$@"; mib=$2; shift 2 ;;
        --edu) edu=1; shift ;;
        --vdma) vdma=1; shift ;;
        --intremap) need "$@"; intremap=$2; shift 2 ;;
        --x2apic) x2apic=1; shift ;;
        --iommu-opts) need "$@"; iommu_opts=$2; shift 2 ;;
        --append) need "$@"; append=$2; shift 2 ;;
        --log) need "$@"; log=$2; shift 2 ;;
        --quiet) quiet=1; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; break ;;
        *) die "run.sh: unknown option '$1' (see --help)." ;;
    esac
done
case $iommu in none|intel-iommu|viommu-vtd) ;; *) die "run.sh: --iommu must be none, intel-iommu or viommu-vtd, not '$iommu'." ;; esac
case $mode in lazy|strict|pt) ;; *) die "run.sh: --mode must be lazy, strict or pt, not '$mode'." ;; esac
case $intremap in
    on|off) ;;
    "") if [ "$iommu" = intel-iommu ] || [ "$x2apic" = 1 ]; then intremap=on; else intremap=off; fi ;;
    *) die "run.sh: --intremap must be on or off." ;;
esac
if [ "$x2apic" = 1 ]; then
    [ "$iommu" != none ] || die "run.sh: --x2apic needs an IOMMU with interrupt remapping (eim=on)."
    [ "$intremap" = on ] || die "run.sh: --x2apic needs interrupt remapping; drop --intremap off."
    [ "$smp" = 2 ] || die "run.sh: --x2apic boots exactly two vCPUs; drop --smp."
fi
[[ $timeout_s =~ ^[0-9]+$ ]] || die "run.sh: --timeout takes whole seconds."
[ "$hold" = 0 ] || [ -n "$qmp" ] || die "run.sh: --hold needs --qmp (QEMU is then stopped with a QMP 'quit')."
[ -z "$disk" ] || [ -f "$disk" ] || die "run.sh: disk image '$disk' does not exist."
progress() { [ "$quiet" = 1 ] || say "$*"; }

qemu=${QEMU:-$BUILD/qemu-system-x86_64}
[ -x "$qemu" ] || die "no QEMU at $qemu; run 'bash scripts/fetch-qemu.sh && bash scripts/build-qemu.sh' first."
# Captured first: grep -q on a pipe could SIGPIPE QEMU and, with pipefail, fail.
devices=$("$qemu" -device help 2>/dev/null || true)
if [ "$iommu" != none ]; then
    grep -q "name \"$iommu\"" <<< "$devices" \
        || die "$qemu has no '-device $iommu'; rebuild QEMU (scripts/build-qemu.sh) or pick another --iommu."
fi
if [ "$edu" = 1 ]; then
    grep -q 'name "edu"' <<< "$devices" || die "$qemu has no '-device edu' (CONFIG_EDU)."
fi
if [ "$vdma" = 1 ]; then
    grep -q 'name "viommu-dma"' <<< "$devices" || die "$qemu has no '-device viommu-dma'; rebuild QEMU (scripts/build-qemu.sh)."
fi

img=$(bash "$TOP/scripts/guest/build-image.sh" --print) || die "building the guest image failed (see above)."
mkdir -p "$BUILD/guest-logs"
[ -n "$log" ] || log=$BUILD/guest-logs/$(date +%Y%m%d-%H%M%S)-$test-$iommu-$mode.log
mkdir -p "$(dirname "$log")"
: > "$log"

# no_timer_check: under TCG on a loaded host the IO-APIC timer check can
# miss its ticks and panic ("IO-APIC + timer doesn't work!").
cmdline="console=ttyS0 panic=-1 no_timer_check viommu.test=$test viommu.mode=$mode viommu.iommu=$iommu viommu.mib=$mib"
[ -n "$port" ] && cmdline+=" viommu.port=$port"
[ "$iommu" != none ] && cmdline+=" intel_iommu=on"
[ "$mode" = strict ] && cmdline+=" iommu.strict=1"
[ "$mode" = pt ] && cmdline+=" iommu.passthrough=1"
[ -n "$append" ] && cmdline+=" $append"

accel=$(bash "$TOP/scripts/accel.sh")
# --x2apic: APIC IDs are socket << (bits for the cores of a socket) | core,
# so with 129 cores per socket (8 bits) socket 1's first core is APIC ID 256.
# The topology offers 258 CPU slots; one boots, the second is placed in
# socket 1 with -device, and nr_cpus=2 keeps the kernel from preparing
# per-CPU state for the 256 empty slots.
if [ "$x2apic" = 1 ]; then
    smp_args=(-smp 1,sockets=2,cores=129,threads=1,maxcpus=258 -cpu qemu64,+x2apic
              -device qemu64-x86_64-cpu,id=cpu1,socket-id=1,core-id=0,thread-id=0)
    cmdline+=" nr_cpus=2"
else
    smp_args=(-smp "$smp")
fi
args=(-accel "$accel" -M q35,kernel-irqchip=split -m "$mem" "${smp_args[@]}"
      -nodefaults -display none
      -L /usr/share/seabios -L /usr/lib/ipxe/qemu -L /usr/share/qemu
      -kernel "$img/vmlinuz" -initrd "$img/initrd.img" -append "$cmdline")
if [ "$test" = shell ]; then
    args+=(-serial mon:stdio)
else
    args+=(-chardev "file,id=con0,path=$log" -serial chardev:con0)
fi
if [ -n "$qmp" ]; then
    rm -f "$qmp"
    args+=(-qmp "unix:$qmp,server=on,wait=off")
fi
[ "$hold" = 1 ] && args+=(-no-shutdown)
[ "$reboot" = 1 ] || args+=(-no-reboot)
# The IOMMU comes first, before any PCI device it translates for.
# viommu-vtd's own default (intremap=off) is left alone unless IR is wanted.
ir_opts=
if [ "$iommu" = intel-iommu ] || [ "$intremap" = on ]; then ir_opts="intremap=$intremap"; fi
if [ "$x2apic" = 1 ]; then ir_opts+=",eim=on"; fi
case $iommu in
    intel-iommu) args+=(-device "intel-iommu,$ir_opts,id=iommu0${iommu_opts:+,$iommu_opts}") ;;
    viommu-vtd)  args+=(-device "viommu-vtd,${ir_opts:+$ir_opts,}id=viommu0${iommu_opts:+,$iommu_opts}") ;;
esac
[ -n "$disk" ] && args+=(-drive "file=$disk,format=raw,if=none,id=disk0,cache=none,aio=threads"
                         -device "virtio-blk-pci,drive=disk0,iommu_platform=on,disable-legacy=on")
[ "$net" = 1 ] && args+=(-netdev "user,id=net0,restrict=off"
                         -device "virtio-net-pci,netdev=net0,iommu_platform=on,disable-legacy=on,romfile=")
[ "$edu" = 1 ] && args+=(-device edu,dma_mask=0xffffffffffffffff)
[ "$vdma" = 1 ] && args+=(-device viommu-dma)
args+=("$@")

progress "booting the guest: test=$test iommu=$iommu mode=$mode smp=$smp (TCG, about 40-60 s per boot; timeout ${timeout_s}s)"
progress "console log: $log"
printf '%q ' "$qemu" "${args[@]}" > "$log.cmd"; echo >> "$log.cmd"

rc=0
if [ "$test" = shell ]; then
    timeout -k 10 "$timeout_s" "$qemu" "${args[@]}" 2>"$log.stderr" || rc=$?
else
    timeout -k 10 "$timeout_s" "$qemu" "${args[@]}" 2>"$log.stderr" </dev/null &
    qpid=$!
    if [ "$quiet" = 0 ]; then
        # Show the guest's result lines as they arrive; tail ends with QEMU.
        tail --pid="$qpid" -n +1 -F "$log" 2>/dev/null \
            | grep --line-buffered -E '^VIOMMU-(TEST|CHECK)' | sed -u 's/^/    guest: /' || true
    fi
    wait "$qpid" || rc=$?
fi
echo "$rc" > "$log.status"
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    tail -n 15 "$log" | sed 's/^/    console: /' >&2
    say "error: the guest did not finish within ${timeout_s}s (test=$test, iommu=$iommu); console log kept in $log." >&2
    exit 124
fi
if [ "$rc" != 0 ]; then
    sed 's/^/    qemu: /' "$log.stderr" | tail -n 10 >&2
    say "error: QEMU exited with status $rc (test=$test, iommu=$iommu); console log kept in $log, QEMU's stderr in $log.stderr." >&2
    exit 1
fi
[ "$test" = shell ] && exit 0
result=$(sed -n 's/^VIOMMU-TEST: end [^ ]* \([a-z]*\).*/\1/p' "$log" | tail -1)
case $result in
    pass) progress "guest scenario '$test' passed (console log: $log)"; exit 0 ;;
    fail) say "error: guest scenario '$test' reported failed checks; console log kept in $log." >&2; exit 1 ;;
    *) tail -n 15 "$log" | sed 's/^/    console: /' >&2
       say "error: the guest powered off without reporting a result (test=$test); console log kept in $log." >&2; exit 1 ;;
esac
