#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build the viommu-lab guest from Debian packages only: the kernel of
# linux-image-amd64 and a busybox (busybox-static) initramfs that carries the
# virtio and VFIO modules, scripts/guest/init, vfio-user and map-race
# (scripts/guest/vfio-user.c and map-race.c, linked statically with the host's
# C compiler).  Nothing is installed on the host:
# packages are fetched with `apt-get download` and unpacked with `dpkg-deb -x`.
#
#   build-image.sh            build if needed; progress on stderr
#   build-image.sh --print    as above, then print the image directory on stdout
#   build-image.sh --force    rebuild even if a cached image matches
#
# The image lives in $VIOMMU_CACHE/guest/<key>/ (default
# /var/cache/viommu-lab/guest/), <key> being a hash of the package versions,
# the module list and the image scripts, so it is rebuilt only when one of
# those changes.  It holds vmlinuz, initrd.img and manifest.txt.
#
# Environment:
#   GUEST_KERNEL_PKG   kernel package: a meta package (default linux-image-amd64)
#                      or a versioned one (e.g. linux-image-6.12.NN+bpo-amd64)
#   GUEST_MODULES      modules to carry, with their dependencies
#                      (default: virtio_pci virtio_blk virtio_net vfio_pci
#                      vfio_iommu_type1)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

image_options "build-image.sh" 21 "$@"
# Progress goes to stderr so that --print leaves only the path on stdout.
say() { printf '[viommu-lab] guest image: %s\n' "$*" >&2; }

here=$(cd "$(dirname "$0")" && pwd)
GUEST_KERNEL_PKG=${GUEST_KERNEL_PKG:-linux-image-amd64}
GUEST_MODULES=${GUEST_MODULES:-virtio_pci virtio_blk virtio_net vfio_pci vfio_iommu_type1}
gcache=$CACHE/guest
debs=$gcache/debs

for t in apt-get apt-cache dpkg-deb cpio gzip depmod modprobe sha256sum flock cc; do
    command -v "$t" >/dev/null || die "guest image: '$t' is missing; run 'bash scripts/setup-host.sh guest' first."
done

candidate() {  # candidate PKG -> version apt would pick (from the local lists)
    apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}'
}

kver_meta=$(candidate "$GUEST_KERNEL_PKG")
if [ -z "$kver_meta" ] || [ "$kver_meta" = "(none)" ]; then
    # apt lists may be missing on a fresh machine: refresh once, then retry.
    say "no candidate for $GUEST_KERNEL_PKG in the apt lists; running apt-get update"
    as_root apt-get update -q >/dev/null || die "apt-get update failed: is Debian's package archive reachable?"
    kver_meta=$(candidate "$GUEST_KERNEL_PKG")
fi
[ -n "$kver_meta" ] && [ "$kver_meta" != "(none)" ] \
    || die "guest image: apt knows no version of $GUEST_KERNEL_PKG; check the machine's Debian sources."
# A meta package depends on exactly one versioned image package; a package
# that depends on none (linux-image-6.1.0-NN-amd64 itself) is taken as it is.
kpkg=$(apt-cache show "$GUEST_KERNEL_PKG=$kver_meta" 2>/dev/null \
       | sed -n 's/^Depends:.*\(linux-image-[0-9][^ ,]*\).*/\1/p' | head -1)
[ -n "$kpkg" ] || kpkg=$GUEST_KERNEL_PKG
kpkg_ver=$(candidate "$kpkg")
bb_ver=$(candidate busybox-static)
[ -n "$bb_ver" ] && [ "$bb_ver" != "(none)" ] || die "guest image: apt knows no version of busybox-static."

key=$( {
    echo "kernel $kpkg $kpkg_ver"
    echo "busybox-static $bb_ver"
    echo "modules $GUEST_MODULES"
    sha256sum "$here/build-image.sh" "$here/init" "$here/vfio-user.c" "$here/map-race.c" \
        "$here/../../include/viommu/viommu-dma.h" \
        | awk '{print $1}'
} | sha256sum | cut -c1-16)
out=$gcache/$key

as_root mkdir -p "$gcache" "$debs"
exec 8>"$gcache/.build.lock"
flock -w 900 8 || die "guest image: another build held $gcache/.build.lock for 15 minutes."

if [ "$force" = 0 ] && [ -f "$out/vmlinuz" ] && [ -f "$out/initrd.img" ] && [ -f "$out/manifest.txt" ]; then
    say "cached: $out ($kpkg $kpkg_ver, busybox-static $bb_ver)"
    touch "$out/manifest.txt"  # last used: what the pruning below keeps
    [ "$print" = 1 ] && echo "$out"
    exit 0
fi

say "building $out ($kpkg $kpkg_ver, busybox-static $bb_ver)"

fetch() {  # fetch PKG VERSION -> path of the .deb in $debs
    local pkg=$1 ver=$2 f
    f=$(ls "$debs/${pkg}_"*.deb 2>/dev/null | while read -r d; do
            [ "$(dpkg-deb -f "$d" Version)" = "$ver" ] && echo "$d"; done | head -1)
    if [ -z "$f" ]; then
        say "downloading $pkg $ver"
        (cd "$debs" && timeout 600 apt-get download -q "$pkg=$ver" >/dev/null 2>"$debs/download.err") \
            || { cat "$debs/download.err" >&2; die "guest image: 'apt-get download $pkg=$ver' failed (see above)."; }
        f=$(ls "$debs/${pkg}_"*.deb | while read -r d; do
                [ "$(dpkg-deb -f "$d" Version)" = "$ver" ] && echo "$d"; done | head -1)
        [ -n "$f" ] || die "guest image: apt-get download left no .deb for $pkg $ver in $debs."
    fi
    echo "$f"
}
kdeb=$(fetch "$kpkg" "$kpkg_ver")
bbdeb=$(fetch busybox-static "$bb_ver")

work=$(mktemp -d "$gcache/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
say "unpacking $(basename "$kdeb") and $(basename "$bbdeb")"
dpkg-deb -x "$kdeb" "$work/kernel"
dpkg-deb -x "$bbdeb" "$work/busybox"

vmlinuz=$(ls "$work"/kernel/boot/vmlinuz-* 2>/dev/null | head -1)
[ -n "$vmlinuz" ] || die "guest image: $kpkg has no /boot/vmlinuz-*."
kver=${vmlinuz##*/vmlinuz-}
config=$work/kernel/boot/config-$kver
grep -qx 'CONFIG_INTEL_IOMMU=y' "$config" || die "guest image: kernel $kver is not built with CONFIG_INTEL_IOMMU=y."
moddir=$work/kernel/lib/modules/$kver
# Debian ships no modules.dep (depmod runs at install time): make one.
depmod -b "$work/kernel" "$kver" || die "guest image: depmod failed for kernel $kver."

root=$work/root
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,mnt,etc,lib/modules/"$kver"}
install -m 0755 "$work/busybox/bin/busybox" "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done
ln -sf ../bin/busybox "$root/sbin/init"

# The modules and their dependencies, in load order, decompressed if needed
# (so busybox insmod never has to understand a compression format).
: > "$root/lib/modules/load-order"
for m in $GUEST_MODULES; do
    modprobe -d "$work/kernel" -S "$kver" --show-depends "$m" \
        || die "guest image: kernel $kver has no module '$m' (needed by GUEST_MODULES)."
done | awk '$1=="insmod" && !seen[$2]++ {print $2}' > "$work/modlist"
while read -r path; do
    rel=${path#"$work/kernel"/lib/modules/"$kver"/}
    name=$(basename "$rel"); dest=$root/lib/modules/$kver/$rel
    mkdir -p "$(dirname "$dest")"
    case $name in
        *.ko.xz)  xz -dc "$path" > "${dest%.xz}"; dest=${dest%.xz} ;;
        *.ko.zst) zstd -qdc "$path" > "${dest%.zst}"; dest=${dest%.zst} ;;
        *.ko.gz)  gzip -dc "$path" > "${dest%.gz}"; dest=${dest%.gz} ;;
        *.ko)     cp "$path" "$dest" ;;
        *) die "guest image: unexpected module file $path." ;;
    esac
    echo "/lib/modules/$kver/${dest#"$root/lib/modules/$kver/"}" >> "$root/lib/modules/load-order"
done < "$work/modlist"
[ -s "$root/lib/modules/load-order" ] || die "guest image: no module selected (GUEST_MODULES='$GUEST_MODULES')."

install -m 0755 "$here/init" "$root/init"
cc -static -O2 -Wall -Wextra -Werror -I"$here/../../include" -o "$root/bin/vfio-user" "$here/vfio-user.c" \
    || die "guest image: compiling vfio-user.c failed (static linking needs libc6-dev)."
cc -static -O2 -Wall -Wextra -Werror -o "$root/bin/map-race" "$here/map-race.c" \
    || die "guest image: compiling map-race.c failed (static linking needs libc6-dev)."
echo "viommu-guest" > "$root/etc/hostname"
{
    echo "key $key"
    echo "kernel $kpkg $kpkg_ver ($kver)"
    echo "busybox-static $bb_ver"
    echo "modules $(sed 's|.*/||' "$root/lib/modules/load-order" | tr '\n' ' ')"
    echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$work/manifest.txt"

say "packing the initramfs"
(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) | gzip -6 > "$work/initrd.img"

stage=$(mktemp -d "$gcache/.stage.XXXXXX")
cp "$vmlinuz" "$stage/vmlinuz"
cp "$work/initrd.img" "$work/manifest.txt" "$stage/"
rm -rf "$out"; mv "$stage" "$out"
chmod 0755 "$out"
# Keep the six images used last (a checkout's two kernels, another
# checkout's, a CI clone's); older ones only take space.  (Only image
# directories, named by their 16-digit key; never debs/.)
ls -1dt "$gcache"/*/manifest.txt 2>/dev/null | tail -n +7 | while read -r old; do
    old=$(dirname "$old")
    [[ $(basename "$old") =~ ^[0-9a-f]{16}$ ]] && rm -rf "$old"
done
say "ready: $out ($(du -h "$out/initrd.img" | cut -f1) initramfs, kernel $kver)"
[ "$print" = 1 ] && echo "$out"
exit 0
