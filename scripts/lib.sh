# SPDX-License-Identifier: GPL-2.0-or-later
# Shared helpers for viommu-lab scripts: progress output and clear failures.

say()  { printf '[viommu-lab] %s\n' "$*"; }
die()  { printf '[viommu-lab] error: %s\n' "$*" >&2; exit 1; }

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

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
CACHE=${VIOMMU_CACHE:-/var/cache/viommu-lab}
