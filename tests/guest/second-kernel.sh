#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Guest tests against a second guest kernel: the VT-d driver changes from
# release to release (after 6.1 its invalidations moved to per-domain cache
# tags), and the unit must serve the newer one as well as the release's
# default.  TAP on stdout (tests/guest/run.sh's).
#
#   tests/guest/second-kernel.sh
#
# GUEST_KERNEL2_PKG   the kernel (default linux-image-6.12-amd64: on bookworm
#                     from bookworm-security)
# GUEST_KERNEL2_BOOTS the boots (default dma-strict,sm-fs-lazy,sm-ss-strict,vfio-sm)
# Skips (one TAP line) where apt offers no such kernel, or where it is the
# default guest kernel already (trixie), which the guest suite just ran.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

pkg=${GUEST_KERNEL2_PKG:-linux-image-6.12-amd64}
boots=${GUEST_KERNEL2_BOOTS:-dma-strict,sm-fs-lazy,sm-ss-strict,vfio-sm}

# The versioned image package a (meta) package resolves to.
image_of() {
    local ver dep
    ver=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
    [ -n "$ver" ] && [ "$ver" != "(none)" ] || return 0
    dep=$(apt-cache show "$1=$ver" 2>/dev/null \
          | sed -n 's/^Depends:.*\(linux-image-[0-9][^ ,]*\).*/\1/p' | head -1)
    echo "${dep:-$1} $ver"
}

skip() { echo "1..1"; echo "ok 1 - second guest kernel # SKIP $*"; exit 0; }
second=$(image_of "$pkg")
[ -n "$second" ] || skip "apt offers no $pkg on this machine"
default=$(image_of "${GUEST_KERNEL_PKG:-linux-image-amd64}")
[ "${second%% *}" != "${default%% *}" ] || skip "$pkg is the default guest kernel (${default%% *}), which the guest suite ran"
echo "# second guest kernel: ${second%% *} (${second#* }); boots $boots"
GUEST_KERNEL_PKG=$pkg GUEST_TESTS_WORK=${GUEST_TESTS_WORK:-$BUILD/guest-tests/second-kernel} \
    exec bash "$TOP/tests/guest/run.sh" --only "$boots"
