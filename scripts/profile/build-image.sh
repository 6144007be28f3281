#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build the profiling guest: the guest kernel of scripts/guest/build-image.sh
# plus a Debian bookworm root (debootstrap --variant=minbase) carrying
# memcached, nginx-light, the load generators (memcaslap from
# libmemcached-tools, wrk), perf (linux-perf) and iproute2, packed as one
# uncompressed initramfs together with the kernel's virtio modules and
# scripts/profile/guest-init as /init.  Only Debian packages are used.
#
#   build-image.sh            build if needed; progress on stderr
#   build-image.sh --print    as above, then print the image directory on stdout
#   build-image.sh --force    rebuild even if a cached image matches
#
# Two cache levels under $VIOMMU_CACHE/profile (default /var/cache/viommu-lab):
#   rootfs/<key>.cpio   the debootstrap root, keyed by the package versions
#                       apt would install (slow: a few minutes, once)
#   image/<key>/        vmlinuz + initrd.img + manifest.txt, keyed by the rootfs,
#                       the kernel and this directory's scripts (seconds)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

image_options "profile image" 19 "$@"
say() { printf '[viommu-lab] profile image: %s\n' "$*" >&2; }

here=$(cd "$(dirname "$0")" && pwd)
pcache=$CACHE/profile
PACKAGES="memcached nginx-light libmemcached-tools wrk linux-perf iproute2 procps kmod busybox"
SUITE=bookworm

for t in debootstrap apt-cache dpkg-deb cpio depmod modprobe sha256sum flock chroot; do
    command -v "$t" >/dev/null || die "profile image: '$t' is missing; install it with 'apt-get install debootstrap cpio kmod' (the package debootstrap is needed for the profiling guest)."
done
[ "$(id -u)" = 0 ] || die "profile image: debootstrap needs root; run as root."

# The Debian archive of this machine's own apt sources (never hard-coded):
# its bookworm entry, or on a trixie host its trixie one (an archive serves
# every suite; the root is bookworm's whatever the host runs).
mirror=
for want in bookworm trixie; do
    mirror=$(awk -v want="$want" 'BEGIN{RS=""; FS="\n"}
        { t=""; u=""; s="";
          for (i=1;i<=NF;i++) { if ($i ~ /^Types:/) t=$i; if ($i ~ /^URIs:/) u=$i; if ($i ~ /^Suites:/) s=$i }
          if (t ~ /deb( |$)/ && s ~ ("(^|[ \t])" want "([ \t]|$)")) { sub(/^URIs:[ \t]*/, "", u); split(u, a, /[ \t]+/); print a[1]; exit } }' \
        /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
        mirror=$(awk -v want="$want" '$1=="deb" && $3==want {print $2; exit}' /etc/apt/sources.list)
    fi
    [ -z "$mirror" ] || break
done
[ -n "$mirror" ] || die "profile image: found no 'deb' entry for bookworm or trixie in the machine's apt sources to debootstrap from."

# The kernel: the one scripts/guest/build-image.sh unpacks (linux-image-amd64's
# dependency); it is asked for only when this image has to be (re)built.
kmeta=${GUEST_KERNEL_PKG:-linux-image-amd64}
kmeta_ver=$(apt-cache policy "$kmeta" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
kpkg=$(apt-cache show "$kmeta=$kmeta_ver" 2>/dev/null \
       | sed -n 's/^Depends:.*\(linux-image-[0-9][^ ,]*\).*/\1/p' | head -1)
kpkg_ver=$(apt-cache policy "$kpkg" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
[ -n "$kpkg" ] && [ -n "$kpkg_ver" ] || die "profile image: apt knows no version of $kmeta; run 'apt-get update'."

versions=$(for p in $PACKAGES; do
    v=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
    [ -n "$v" ] && [ "$v" != "(none)" ] || die "profile image: apt knows no version of package '$p'; run 'apt-get update' (and check the machine's Debian sources)."
    echo "$p $v"
done)
# Bump ROOTFS_RECIPE when the debootstrap/trim steps below change.
ROOTFS_RECIPE=1
rkey=$( { echo "$SUITE recipe $ROOTFS_RECIPE"; echo "$versions"; } | sha256sum | cut -c1-16)
ikey=$( { echo "$rkey $kpkg $kpkg_ver"; sha256sum "$here/guest-init" "$here/build-image.sh" | cut -c1-64; } | sha256sum | cut -c1-16)
out=$pcache/image/$ikey
mkdir -p "$pcache/rootfs" "$pcache/image" "$pcache/debs"
exec 9>"$pcache/.build.lock"
flock -w 1200 9 || die "profile image: another build held $pcache/.build.lock for 20 minutes."

if [ "$force" = 0 ] && [ -f "$out/initrd.img" ] && [ -f "$out/vmlinuz" ] && [ -f "$out/manifest.txt" ]; then
    say "cached: $out"
    [ "$print" = 1 ] && echo "$out"
    exit 0
fi

gimg=$(bash "$TOP/scripts/guest/build-image.sh" --print) || die "profile image: building the base guest image (scripts/guest/build-image.sh) failed."
grep -q "^kernel $kpkg $kpkg_ver " "$gimg/manifest.txt" \
    || die "profile image: the base guest image $gimg does not carry $kpkg $kpkg_ver."
kver=$(sed -n 's/^kernel .*(\(.*\))$/\1/p' "$gimg/manifest.txt")
[ -n "$kver" ] || die "profile image: cannot read the kernel version from $gimg/manifest.txt."
work=$(mktemp -d "$pcache/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootcpio=$pcache/rootfs/$rkey.cpio
if [ "$force" = 1 ] || [ ! -f "$rootcpio" ]; then
    say "debootstrap $SUITE (minbase + $PACKAGES): a few minutes, once; log in $pcache/debootstrap.log"
    root=$work/root
    if ! timeout 1800 debootstrap --variant=minbase --include="${PACKAGES// /,}" \
            --cache-dir="$pcache/debs" "$SUITE" "$root" "$mirror" > "$pcache/debootstrap.log" 2>&1; then
        tail -n 15 "$pcache/debootstrap.log" | sed 's/^/    /' >&2
        die "profile image: debootstrap failed (full log: $pcache/debootstrap.log)."
    fi
    for b in memcached nginx memcaslap wrk perf ip; do
        chroot "$root" sh -c "command -v $b" >/dev/null || die "profile image: '$b' is missing from the debootstrap root."
    done
    # Trim what a benchmark guest never reads: documentation, locales, apt state.
    rm -rf "$root"/usr/share/{doc,man,info,locale,lintian} "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/*
    rm -f "$root"/etc/nginx/sites-enabled/*
    { echo "suite $SUITE"; echo "$versions"; } > "$root/etc/viommu-profile-packages"
    say "packing the root ($(du -sh "$root" | cut -f1))"
    (cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) > "$work/root.cpio"
    mv "$work/root.cpio" "$rootcpio"
    rm -rf "$root"
    # Keep only the current root archive.
    find "$pcache/rootfs" -name '*.cpio' ! -name "$rkey.cpio" -delete
fi

# Kernel modules (virtio NICs) from the kernel's own .deb, with modules.dep.
kdeb=$(ls "$CACHE"/guest/debs/"${kpkg}_"*.deb 2>/dev/null | head -1 || true)
if [ -z "$kdeb" ]; then
    kdeb=$(ls "$pcache"/debs/"${kpkg}_"*.deb 2>/dev/null | head -1 || true)
fi
if [ -z "$kdeb" ]; then
    say "downloading $kpkg $kpkg_ver"
    (cd "$pcache/debs" && timeout 600 apt-get download -q "$kpkg=$kpkg_ver" >/dev/null) \
        || die "profile image: 'apt-get download $kpkg=$kpkg_ver' failed."
    kdeb=$(ls "$pcache"/debs/"${kpkg}_"*.deb | head -1)
fi
say "adding kernel $kver modules and /init"
dpkg-deb -x "$kdeb" "$work/kernel"
depmod -b "$work/kernel" "$kver" || die "profile image: depmod failed for $kver."
over=$work/overlay
# usr/lib, not lib: the root is merged-/usr and /lib must stay a symlink.
mkdir -p "$over/usr/lib/modules/$kver"
for m in virtio_pci virtio_net virtio_blk; do
    modprobe -d "$work/kernel" -S "$kver" --show-depends "$m" || die "profile image: kernel $kver has no module $m."
done | awk '$1=="insmod" {print $2}' | sort -u | while read -r path; do
    rel=${path#"$work/kernel/lib/modules/$kver/"}
    mkdir -p "$over/usr/lib/modules/$kver/$(dirname "$rel")"
    cp "$path" "$over/usr/lib/modules/$kver/$rel"
done
cp "$work/kernel/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$over/usr/lib/modules/$kver/" 2>/dev/null || true
depmod -b "$over/usr" "$kver" || die "profile image: depmod failed for $kver."
install -m 0755 "$here/guest-init" "$over/init"
(cd "$over" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) > "$work/overlay.cpio"

stage=$(mktemp -d "$pcache/image/.stage.XXXXXX")
cp "$gimg/vmlinuz" "$stage/vmlinuz"
# Two concatenated newc archives: the kernel unpacks both, the second on top.
cat "$rootcpio" "$work/overlay.cpio" > "$stage/initrd.img"
{
    echo "key $ikey (rootfs $rkey)"
    echo "kernel $kpkg $kpkg_ver ($kver)"
    echo "$versions"
    echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$stage/manifest.txt"
chmod 0755 "$stage"
rm -rf "$out"; mv "$stage" "$out"
ls -1dt "$pcache"/image/[0-9a-f]*/ 2>/dev/null | tail -n +3 | while read -r old; do rm -rf "$old"; done
say "ready: $out ($(du -h "$out/initrd.img" | cut -f1) initramfs, kernel $kver)"
[ "$print" = 1 ] && echo "$out"
exit 0
