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

# verify_source DIR: DIR holds one .dsc and every file it names, each with
# the SHA-256 the .dsc gives.
verify_source() {
    local dsc
    dsc=$(ls "$1"/*.dsc 2>/dev/null) || return 1
    [ "$(wc -l <<<"$dsc")" = 1 ] || return 1
    awk '/^Checksums-Sha256:/ {f = 1; next} /^[^ ]/ {f = 0} f && NF == 3 {print $1 "  " $3; n++}
         END {exit n == 0}' "$dsc" | (cd "$1" && sha256sum -c --quiet --status -)
}

extracted=0
# The tree is extracted afresh when the version or what our patches change
# does (their descriptions do not count): a changed patch cannot be applied
# over its previous version.
patch_sum=$(for p in "$TOP"/patches/qemu/*.patch; do [ -f "$p" ] && sed -n '/^--- /,$p' "$p"; done | sha256sum | cut -c1-16)
want="$version patches $patch_sum"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    say "QEMU source $version already in build/qemu-src"
else
    dl=$CACHE/qemu-$version
    as_root mkdir -p "$CACHE"
    # One download at a time per cache (checkouts share it); what is there
    # counts only when every file the .dsc names has its checksum, so an
    # interrupted download is fetched again, into a directory of its own.
    exec 9>"$CACHE/.qemu-download.lock"
    flock -w 900 9 || die "another run held $CACHE/.qemu-download.lock for 15 minutes."
    if ! verify_source "$dl"; then
        say "downloading QEMU source package $version (about 45 MB)"
        as_root rm -rf "$dl.partial"
        as_root mkdir -p "$dl.partial"
        (cd "$dl.partial" && as_root apt-get source -q --download-only "qemu=$version" >/dev/null) \
            || die "apt-get source qemu=$version failed: is Debian's archive reachable?"
        verify_source "$dl.partial" || die "the downloaded QEMU source in $dl.partial does not match its .dsc's checksums."
        as_root rm -rf "$dl"
        as_root mv "$dl.partial" "$dl"
    fi
    exec 9>&-
    [ -d "$src" ] && say "build/qemu-src was made from another version or other patches: extracting it again"
    say "extracting QEMU $version with Debian's patches into build/qemu-src"
    rm -rf "$src" "$src.tmp"
    mkdir -p "$BUILD"
    dpkg-source --no-check -q -x "$dl"/qemu_*.dsc "$src.tmp" >/dev/null \
        || die "dpkg-source could not extract $dl; delete that directory to download it again."
    mv "$src.tmp" "$src"
    extracted=1
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
# Written once the patches are in: a run cut short extracts again.
[ "$extracted" = 0 ] || echo "$want" > "$stamp"
say "QEMU source ready: $version"
