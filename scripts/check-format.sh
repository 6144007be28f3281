#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The one C++ style (.clang-format): every C++ file in the tree is formatted.
# Run as a unit test (meson test "clang-format"); fix with
#   clang-format -i $(git ls-files '*.cc' '*.hpp')
set -uo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format is not installed (scripts/setup-host.sh installs it)" >&2; exit 1; }
if git rev-parse --git-dir >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files '*.cc' '*.hpp')
else
    mapfile -t files < <(find hw guest tests -name '*.cc' -o -name '*.hpp')
fi
[ ${#files[@]} -gt 0 ] || { echo "no C++ files found" >&2; exit 1; }
bad=0
for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "not formatted: $f (clang-format -i $f)"
        bad=$((bad + 1))
    fi
done
grep -lE '^#ifndef [A-Z_]+_(HPP|H)$' "${files[@]}" 2>/dev/null | sed 's/^/include guard instead of #pragma once: /' && bad=$((bad + 1))
echo "${#files[@]} C++ files checked, $bad not in the project's style"
[ "$bad" = 0 ]
