#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Install what viommu-lab needs from Debian's archive, idempotently.
#
#   setup-host.sh standalone   compilers, meson, GoogleTest, Google Benchmark
#   setup-host.sh qemu         + QEMU 10.0 build dependencies and deb-src entries
#   setup-host.sh guest        + guest kernel, busybox, firmware, workloads, DPDK
#   setup-host.sh fuzz         + clang and its libFuzzer runtime (make fuzz)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

level=${1:-standalone}
case $level in standalone|fuzz|qemu|guest) ;; *) die "unknown setup level '$level' (use standalone, fuzz, qemu or guest)." ;; esac

. /etc/os-release
codename=${VERSION_CODENAME:-}
case $codename in
    bookworm|trixie) ;;
    *) die "viommu-lab supports Debian bookworm and trixie; this is '${PRETTY_NAME:-unknown}'." ;;
esac

# One setup at a time on this machine (two checkouts, make run beside make
# check); apt and dpkg themselves are waited for below.
as_root mkdir -p /var/lib/viommu-lab
if { exec 7>/var/lib/viommu-lab/setup.lock; } 2>/dev/null && ! flock -n 7; then
    say "waiting for another viommu-lab setup on this machine to finish"
    flock -w 1800 7 || die "another viommu-lab setup held /var/lib/viommu-lab/setup.lock for 30 minutes."
fi
# dpkg's lock, held by another apt (unattended-upgrades on a fresh VM, say):
# wait up to 10 minutes instead of failing at once.
APT_WAIT=(-o DPkg::Lock::Timeout=600)

# The archive URI(s) of the machine's own Debian entries, never hard-coded
# (this script's own file excepted: a mirror dropped there stays dropped).
archive_uris() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        [ "$f" = /etc/apt/sources.list.d/viommu-lab.sources ] && continue
        awk 'BEGIN{RS=""; FS="\n"}
             { types=""; uris=""; suites="";
               for (i=1;i<=NF;i++) {
                 if ($i ~ /^Types:/)  types=$i;
                 if ($i ~ /^URIs:/)   uris=$i;
                 if ($i ~ /^Suites:/) suites=$i; }
               if (types ~ /deb/ && suites ~ /(bookworm|trixie)/ && suites !~ /security/) {
                 sub(/^URIs:[ \t]*/, "", uris); print uris } }' "$f"
    done
    if [ -f /etc/apt/sources.list ]; then
        awk '$1=="deb" && $0 !~ /security/ && $0 ~ /(bookworm|trixie)/ {
               for (i=2;i<=NF;i++) if ($i ~ /:\/\//) { print $i; break } }' /etc/apt/sources.list
    fi
}

apt_stamp=/var/lib/viommu-lab/apt-updated
ensure_sources() {
    local uris file=/etc/apt/sources.list.d/viommu-lab.sources tmp
    uris=$(archive_uris | tr ' ' '\n' | awk 'NF && !seen[$0]++' | tr '\n' ' ')
    [ -n "$uris" ] || die "found no Debian archive entry in /etc/apt/sources.list*; add your mirror's 'deb' entry first."
    tmp=$(mktemp)
    {
        echo "# Written by viommu-lab scripts/setup-host.sh from this machine's own entries."
        echo "Types: deb-src"
        echo "URIs: $uris"
        if [ "$codename" = bookworm ]; then
            echo "Suites: bookworm bookworm-updates bookworm-backports trixie"
        else
            echo "Suites: trixie trixie-updates"
        fi
        echo "Components: main"
        echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
        if [ "$codename" = bookworm ]; then
            echo
            echo "Types: deb"
            echo "URIs: $uris"
            echo "Suites: bookworm-backports"
            echo "Components: main"
            echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
        fi
    } > "$tmp"
    if ! cmp -s "$tmp" "$file" 2>/dev/null; then
        say "adding deb-src entries (and backports on bookworm) derived from the machine's Debian sources"
        as_root install -m 0644 "$tmp" "$file"
        as_root rm -f "$apt_stamp"
    fi
    rm -f "$tmp"
    # Package lists older than a day may name versions the archive has
    # dropped since (a point release): refresh them.
    if [ -z "$(find "$apt_stamp" -mmin -1440 2>/dev/null)" ]; then
        say "apt-get update"
        local try err
        err=$(mktemp)
        for try in 1 2 3 4 5 6; do
            as_root apt-get update -q >/dev/null 2>"$err" && break
            if grep -q 'Could not get lock' "$err" && [ "$try" -lt 6 ]; then
                say "apt's package lists are locked by another apt; waiting"
                sleep 30
                continue
            fi
            sed 's/^/    /' "$err" >&2
            rm -f "$err"
            die "apt-get update failed: is Debian's package archive reachable from this machine?"
        done
        rm -f "$err"
        as_root touch "$apt_stamp"
    fi
}

missing() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null | grep -qx installed || echo "$p"
    done
}

install_pkgs() {
    local what=$1; shift
    local need
    need=$(missing "$@")
    if [ -n "$need" ]; then
        say "installing $what: $(echo $need)"
        DEBIAN_FRONTEND=noninteractive as_root apt-get install "${APT_WAIT[@]}" -y -q --no-install-recommends $need >/dev/null \
            || die "apt-get install failed for: $(echo $need). Check the archive is reachable and the packages exist for $codename."
    fi
}

meson_ok() {
    command -v meson >/dev/null || return 1
    local v; v=$(meson --version)
    [ "$(printf '%s\n1.5.0\n' "$v" | sort -V | head -1)" = 1.5.0 ]
}

ensure_sources
install_pkgs "build tools" build-essential g++ pkg-config ninja-build ccache python3 python3-venv \
    libgtest-dev libgmock-dev googletest libbenchmark-dev dpkg-dev git clang-format
if ! meson_ok; then
    if [ "$codename" = bookworm ]; then
        say "installing meson >= 1.5 from bookworm-backports (QEMU 10.0 needs it)"
        DEBIAN_FRONTEND=noninteractive as_root apt-get install "${APT_WAIT[@]}" -y -q -t bookworm-backports meson >/dev/null \
            || die "could not install meson from bookworm-backports."
    else
        install_pkgs "meson" meson
    fi
fi
meson_ok || die "meson >= 1.5 is required; found $(meson --version 2>/dev/null || echo none)."

if [ "$level" = fuzz ]; then
    install_pkgs "clang with libFuzzer" clang libclang-rt-dev
fi
if [ "$level" = qemu ] || [ "$level" = guest ]; then
    install_pkgs "QEMU build dependencies" libglib2.0-dev libfdt-dev libslirp-dev libpixman-1-dev \
        zlib1g-dev flex bison python3-setuptools quilt
    install_pkgs "firmware" seabios ipxe-qemu qemu-system-data
fi
if [ "$level" = guest ]; then
    install_pkgs "guest image tools" cpio gzip kmod xz-utils zstd python3 util-linux coreutils debootstrap
    # The vhost-user guest scenarios' backend: dpdk-testpmd (in dpdk-dev) with
    # the vhost PMD and the ring mempool driver, both plugins of DPDK's ABI.
    case $codename in bookworm) dpdk_abi=23 ;; *) dpdk_abi=25 ;; esac
    install_pkgs "vhost-user backend (DPDK)" dpdk-dev "librte-net-vhost$dpdk_abi" "librte-mempool-ring$dpdk_abi"
fi
say "host setup ($level) complete"
