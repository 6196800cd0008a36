#!/usr/bin/env bash
# fresh-machine.sh runs the README's two set-up commands as a newcomer's
# machine would: in a clean copy of the repository, with an empty HOME and
# empty Go build and module caches (so every module is downloaded, every
# package built, and the real clients installed from npm), while a
# CPU-bound load as large as the machine runs beside them. It fails unless
# both commands succeed:
#
#   go run ./cmd/editguard --root DIR serve    answers an MCP initialize
#                                             and tools/list on stdio
#   go test -race -timeout 30m ./...          passes
#
# It prints how long each took. It needs the network for the Go module
# proxy and npm, and takes about half an hour on 2 busy cores, so CI does
# not run it (see README, "Tests on a busy machine").
#
# Usage: scripts/fresh-machine.sh [extra go test flags...]
#   LOAD=N   busy processes beside the commands (default: the number of CPUs)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/editguard-fresh.XXXXXX")"
load_pids=()
cleanup() {
	for p in "${load_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	chmod -R u+w "$work" 2>/dev/null || true # the module cache is read-only
	rm -rf "$work"
}
trap cleanup EXIT

# A clean copy: what git tracks, as a clone would have it.
mkdir "$work/src"
git -C "$repo" ls-files -z | (cd "$repo" && xargs -0 tar -cf - --no-recursion) | tar -xf - -C "$work/src"

# An empty environment but for PATH (go, node, npm) and the proxy settings.
export HOME="$work/home" GOCACHE="$work/gocache" GOMODCACHE="$work/gomodcache" GOPATH="$work/gopath"
export XDG_CACHE_HOME="$HOME/.cache" XDG_CONFIG_HOME="$HOME/.config" npm_config_cache="$HOME/.npm"
unset EDITGUARD_CLIENTS_DIR GOFLAGS
mkdir -p "$HOME" "$GOCACHE" "$GOMODCACHE" "$GOPATH"

n="${LOAD:-$(getconf _NPROCESSORS_ONLN)}"
for _ in $(seq 1 "$n"); do
	(while :; do :; done) &
	load_pids+=($!)
done
echo "fresh-machine: $n busy processes beside the commands, HOME=$HOME"

cd "$work/src"
ws="$work/project"
mkdir "$ws"
printf 'hello\n' >"$ws/hello.txt"

start=$(date +%s)
requests='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fresh-machine","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
out="$(printf '%s\n' "$requests" | go run ./cmd/editguard --root "$ws" serve)"
if ! grep -q '"read_file"' <<<"$out"; then
	echo "fresh-machine: go run ./cmd/editguard --root DIR serve did not list read_file:" >&2
	echo "$out" >&2
	exit 1
fi
echo "fresh-machine: serve answered initialize and tools/list in $(($(date +%s) - start)) s (module downloads and build included)"

start=$(date +%s)
status=0
go test -race -timeout 30m "$@" ./... 2>&1 | tee "$work/test.log" || status=$?
echo "fresh-machine: go test -race -timeout 30m ./... took $(($(date +%s) - start)) s, exit $status"
grep -E '^(ok|FAIL|---)' "$work/test.log" | grep -v '^---' || true
exit $status
