#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make bench: every benchmark, reported (never pass/fail).  Figures are ratios
# against baselines measured in the same run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bash "$TOP/scripts/setup-host.sh" standalone
bash "$TOP/scripts/build-standalone.sh"
say "standalone benchmarks (engine, allocator, simulator)"
meson test -C "$BUILD/standalone" --no-rebuild --benchmark --verbose
