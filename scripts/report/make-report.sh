#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build the standalone tree and write the contention-simulator report:
# build/report/report.md and its SVG plots (docs/simulation.rst, "Report").
#
#   VIOMMU_SIM=path/to/viommu-sim   use this binary instead of building
#   REPORT_FULL=1                   sweeps over 1..64 CPUs and every configuration
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
case ${1:-} in
-h|--help) sed -n '3,7s/^# \{0,1\}//p' "$0"; exit 0 ;;
'') ;;
*) echo "make-report: takes no arguments ('$1'; --help)" >&2; exit 2 ;;
esac
case ${REPORT_FULL:-} in
1) full=--full ;;
''|0) full= ;;
*) echo "make-report: REPORT_FULL must be 1 (or 0, or unset), not '$REPORT_FULL'" >&2; exit 2 ;;
esac
build=${BUILD:-$top/build}
if [ -z "${VIOMMU_SIM:-}" ]; then
    bash "$top/scripts/build-standalone.sh"
    VIOMMU_SIM=$build/standalone/guest/sim/viommu-sim
fi
[ -f "$VIOMMU_SIM" ] && [ -x "$VIOMMU_SIM" ] ||
    { echo "make-report: no viommu-sim at $VIOMMU_SIM" >&2; exit 1; }
exec python3 "$top/scripts/report/make_report.py" --sim "$VIOMMU_SIM" --out "$build/report" $full
