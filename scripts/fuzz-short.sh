#!/bin/sh
# fuzz-short.sh runs every fuzz target in the module for a short time each.
# Targets are found by grepping for "func Fuzz", so new ones are included
# without editing this script. The total stays within FUZZ_BUDGET seconds
# (default 90), shared evenly between targets, at least 3 s each.
#
# Usage: scripts/fuzz-short.sh [extra go test flags...]
set -eu
cd "$(dirname "$0")/.."
budget=${FUZZ_BUDGET:-90}

targets=$(grep -rl --include='*_test.go' --exclude-dir=node_modules --exclude-dir=testdata '^func Fuzz' . |
	while read -r f; do
		pkg=$(dirname "$f")
		sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$f" | while read -r name; do
			echo "$pkg $name"
		done
	done | sort -u)
n=$(printf '%s\n' "$targets" | grep -c . || true)
if [ "$n" -eq 0 ]; then
	echo "fuzz-short: no fuzz targets"
	exit 0
fi
# Building each test binary and gathering its coverage baseline take about
# 4 s of the budget per target.
each=$(( (budget - 4 * n) / n ))
[ "$each" -ge 3 ] || each=3

status=0
printf '%s\n' "$targets" | while read -r pkg name; do
	echo "fuzz-short: $pkg $name for ${each}s"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "${each}s" "$@" "$pkg" || exit 1
done || status=1
exit $status
