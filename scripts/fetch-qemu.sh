#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Obtain QEMU 10.0's source from Debian (patches applied) and join our overlay to it.
#
# The source package is pinned; if the archive no longer serves that version we take the
# newest 10.0.x it does serve and say so.  Tarballs are cached in $CACHE so a fresh clone
# does not download them again; the extracted tree lives in build/qemu-src.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

QEMU_PIN=${QEMU_PIN:-1:10.0.13+ds-0+deb13u1}
src=$BUILD/qemu-src
stamp=$src/.viommu-lab-version

available=$(apt-cache showsrc qemu 2>/dev/null | awk '/^Version:/ {print $2}' | sort -u)
[ -n "$available" ] || die "apt-cache knows no qemu source package; run scripts/setup-host.sh qemu (it adds deb-src entries)."
if grep -qxF "$QEMU_PIN" <<<"$available"; then
    version=$QEMU_PIN
else
    version=$(grep -E '^1:10\.0\.' <<<"$available" | sort -V | tail -1 || true)
    [ -n "$version" ] || die "no QEMU 10.0.x source package is served by the configured archive (have: $(echo $available))."
    say "pinned QEMU $QEMU_PIN is not served any more; using $version instead"
fi

# The tree is extracted afresh when the version or what our patches change
# does (their descriptions do not count): a changed patch cannot be applied
# over its previous version.
patch_sum=$(for p in "$TOP"/patches/qemu/*.patch; do [ -f "$p" ] && sed -n '/^--- /,$p' "$p"; done | sha256sum | cut -c1-16)
want="$version patches $patch_sum"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    say "QEMU source $version already in build/qemu-src"
else
    upstream=${version#*:}; upstream=${upstream%-*}
    dl=$CACHE/qemu-$version
    as_root mkdir -p "$dl"
    if ! ls "$dl"/*.dsc >/dev/null 2>&1; then
        say "downloading QEMU source package $version (about 45 MB)"
        (cd "$dl" && as_root apt-get source -q --download-only "qemu=$version" >/dev/null) \
            || die "apt-get source qemu=$version failed: is Debian's archive reachable?"
    fi
    [ -d "$src" ] && say "build/qemu-src was made from another version or other patches: extracting it again"
    say "extracting QEMU $version with Debian's patches into build/qemu-src"
    rm -rf "$src" "$src.tmp"
    mkdir -p "$BUILD"
    dpkg-source --no-check -q -x "$dl"/qemu_*.dsc "$src.tmp" >/dev/null
    mv "$src.tmp" "$src"
    echo "$want" > "$stamp"
fi

# Overlay: our directories appear inside QEMU's tree as symlinks; patches/qemu
# holds the hooks into QEMU's build files (0001) and fixes to QEMU itself.
link() {  # link TARGET LINKNAME
    if [ "$(readlink "$2" 2>/dev/null)" != "$1" ]; then
        rm -rf "$2"; ln -s "$1" "$2"
    fi
}
link "$TOP/hw/viommu" "$src/hw/viommu"
link "$TOP/include/viommu" "$src/include/viommu"
link "$TOP/qtest" "$src/tests/qtest/viommu"

for p in "$TOP"/patches/qemu/*.patch; do
    [ -f "$p" ] || continue
    if patch -d "$src" -p1 -R --dry-run -s -f < "$p" >/dev/null 2>&1; then
        continue    # already applied
    fi
    say "applying $(basename "$p")"
    patch -d "$src" -p1 -s -f --no-backup-if-mismatch < "$p" || die "patch $(basename "$p") does not apply to QEMU $version."
done
say "QEMU source ready: $version"
