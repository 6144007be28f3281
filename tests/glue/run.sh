#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Glue checks of the viommu-vtd QEMU device, as TAP on stdout; exit status 1
# when a case failed.  QEMU=path overrides build/qemu-system-x86_64; extra
# arguments select cases whose name contains them.
set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
QEMU=${QEMU:-$TOP/build/qemu-system-x86_64}
if [ ! -x "$QEMU" ]; then
    echo "1..1"
    echo "not ok 1 - QEMU binary $QEMU exists (run scripts/build-qemu.sh)"
    exit 1
fi
export QEMU TOP
exec python3 "$TOP/tests/glue/checks.py" "$@"
