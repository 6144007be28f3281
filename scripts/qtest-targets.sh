#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Print the ninja targets (paths relative to build/qemu) of the qtests in suite
# "viommu", so they can be built without building all of QEMU's own tests.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
obj=${BUILD_QEMU:-$BUILD/qemu}
[ -f "$obj/build.ninja" ] || exit 0
meson=$obj/pyvenv/bin/meson
[ -x "$meson" ] || meson=meson
"$meson" introspect "$obj" --tests 2>/dev/null | python3 -c '
import json, os, sys
obj = sys.argv[1]
seen = set()
for t in json.load(sys.stdin):
    # meson prefixes suites with the project name ("qemu:viommu").
    if any(s.split(":")[-1] == "viommu" for s in t.get("suite", [])):
        exe = t["cmd"][0]
        if exe.startswith(obj + "/") and exe not in seen:
            seen.add(exe)
            print(os.path.relpath(exe, obj))
' "$obj"
