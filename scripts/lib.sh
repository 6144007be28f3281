# SPDX-License-Identifier: GPL-2.0-or-later
# Shared helpers for viommu-lab scripts: progress output and clear failures.

say()  { printf '[viommu-lab] %s\n' "$*"; }
die()  { printf '[viommu-lab] error: %s\n' "$*" >&2; exit 1; }
# make run's settings, checked where they are read (scripts/run.sh, then
# scripts/profile/run-default.sh): DURATION and VCPUS, defaults set.
check_run_settings() {
    DURATION=${DURATION:-10}
    [[ $DURATION =~ ^[1-9][0-9]{0,3}$ ]] && [ "$DURATION" -le 3600 ] ||
        die "DURATION must be a whole number of seconds from 1 to 3600, not '$DURATION'."
    VCPUS=${VCPUS:-2}
    [[ $VCPUS =~ ^[1-9][0-9]?$ ]] && [ "$VCPUS" -le 64 ] ||
        die "VCPUS must be a whole number of vCPUs from 1 to 64, not '$VCPUS'."
}

# Run a command as root, or stop with one sentence saying why we cannot.
as_root() {
    if [ "$(id -u)" = 0 ]; then
        "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo -n "$@"
    else
        die "this step needs root (it runs '$1'); run make as root or configure password-less sudo."
    fi
}

# image_options WHO HELP_END ARG...: the options of an image builder:
# --print (print=1: print the image directory when done), --force
# (force=1: rebuild even if a cached image matches) and --help (lines 2 to
# HELP_END of the script's header comment); WHO names it in an error.
image_options() {
    local who=$1 help_end=$2 a
    shift 2
    print=0 force=0
    for a in "$@"; do
        case $a in
            --print) print=1 ;;
            --force) force=1 ;;
            -h|--help) sed -n "2,${help_end}p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
            *) die "$who: unknown option '$a' (use --print, --force)." ;;
        esac
    done
}

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
CACHE=${VIOMMU_CACHE:-/var/cache/viommu-lab}

# QEMU's lean feature set (configure options after --target-list), shared by
# build-qemu.sh and build-qemu-fuzz.sh.
QEMU_FEATURES="--without-default-features --enable-kvm --enable-tcg --enable-slirp --enable-vhost-user --enable-vhost-net --enable-fdt=system --disable-docs --disable-install-blobs --disable-werror --python=/usr/bin/python3"

# Compile through the shared ccache ($CACHE/ccache unless CCACHE_DIR says
# otherwise), with paths relative to the checkout, so that a rebuild in
# another worktree or a fresh clone hits the same cache.  Sets ccache_wrap:
# "ccache " where ccache is installed, else "".
use_ccache() {
    export CCACHE_DIR=${CCACHE_DIR:-$CACHE/ccache}
    export CCACHE_BASEDIR=$TOP CCACHE_NOHASHDIR=1
    as_root mkdir -p "$CCACHE_DIR"
    ccache_wrap=""
    if command -v ccache >/dev/null; then ccache_wrap="ccache "; fi
}

# qemu_configure NAME CC CXX CONFIG WHAT: configure build/qemu-src in
# build/NAME with the C and C++ compilers CC and CXX (through ccache_wrap)
# and the options CONFIG, unless it was configured with CONFIG already;
# the progress line says "configuring WHAT in build/NAME".
qemu_configure() {
    local name=$1 cc=$2 cxx=$3 config=$4 what=$5
    local src=$BUILD/qemu-src obj=$BUILD/$name
    [ -f "$obj/build.ninja" ] && [ "$(cat "$obj/.viommu-lab-config" 2>/dev/null)" = "$config" ] && return 0
    say "configuring $what in build/$name"
    rm -rf "$obj"; mkdir -p "$obj"
    # shellcheck disable=SC2086  # config: a word list
    (cd "$obj" && CC="${ccache_wrap}$cc" CXX="${ccache_wrap}$cxx" "$src/configure" $config >configure.log 2>&1) \
        || { tail -20 "$obj/configure.log" >&2; die "QEMU configure failed; the full log is build/$name/configure.log."; }
    echo "$config" > "$obj/.viommu-lab-config"
}
