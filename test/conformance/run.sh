#!/usr/bin/env bash
# Runs the MCP conformance suite's server scenarios against
# `editguard serve --http` on a free local port.
#
# Scenarios that need the suite's own fixture tools, resources or prompts
# (which editguard does not have by design) are listed, each with its reason,
# in baseline.yml; every other scenario must pass. The suite itself compares
# its failures with the baseline: it exits non-zero on a failure that is not
# listed, and also on a listed scenario that now passes (a stale entry).
#
# Usage: test/conformance/run.sh [extra conformance args, e.g. --scenario ping]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

if [[ ! -d "$here/node_modules/@modelcontextprotocol/conformance" ]]; then
	(cd "$here" && npm ci --no-audit --no-fund)
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/editguard-conformance.XXXXXX")"
server_pid=""
cleanup() {
	if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# EDITGUARD_BIN runs an already built binary instead of building one.
bin="${EDITGUARD_BIN:-}"
if [[ -z "$bin" ]]; then
	bin="$work/editguard"
	(cd "$repo" && go build -o "$bin" ./cmd/editguard)
fi
mkdir "$work/ws" "$work/results"
printf 'hello\n' >"$work/ws/hello.txt"

# A port the kernel just handed out; the server binds it right after.
port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
"$bin" --root "$work/ws" serve --http "127.0.0.1:$port" >"$work/server.log" 2>&1 &
server_pid=$!

for _ in $(seq 1 100); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		break
	fi
	if ! kill -0 "$server_pid" 2>/dev/null; then
		echo "editguard serve --http exited early:" >&2
		cat "$work/server.log" >&2
		exit 1
	fi
	sleep 0.1
done

status=0
(cd "$work/results" && node "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
	server --url "http://127.0.0.1:$port/mcp" \
	--expected-failures "$here/baseline.yml" "$@") | tee "$work/suite.log" || status=$?

# Compare the summary with the baseline here too, so that the verdict does
# not rest on the suite's own bookkeeping alone.
baseline="$(sed -n 's/^  - \([a-z0-9-]*\).*/\1/p' "$here/baseline.yml" | sort)"
passed="$(sed -n 's/^✓ \([a-z0-9-]*\): .*/\1/p' "$work/suite.log" | sort)"
failed="$(sed -n 's/^✗ \([a-z0-9-]*\): .*/\1/p' "$work/suite.log" | sort)"
unexpected="$(comm -23 <(printf '%s\n' "$failed" | sed '/^$/d') <(printf '%s\n' "$baseline"))"
stale="$(comm -12 <(printf '%s\n' "$passed" | sed '/^$/d') <(printf '%s\n' "$baseline"))"
n_passed="$(printf '%s\n' "$passed" | sed '/^$/d' | wc -l)"
n_expected="$(comm -12 <(printf '%s\n' "$failed" | sed '/^$/d') <(printf '%s\n' "$baseline") | wc -l)"
n_unexpected="$(printf '%s\n' "$unexpected" | sed '/^$/d' | wc -l)"

echo
if [[ -n "$unexpected" ]]; then
	echo "conformance: unexpected failures:" $unexpected >&2
	status=1
fi
if [[ -n "$stale" ]]; then
	echo "conformance: in baseline.yml but passing now (remove them):" $stale >&2
	status=1
fi
if [[ "$n_passed" -eq 0 ]]; then
	echo "conformance: no scenario passed; the suite did not run" >&2
	status=1
fi
if [[ $status -ne 0 ]]; then
	echo "conformance: editguard server log (tail):" >&2
	tail -n 50 "$work/server.log" >&2
fi
echo "conformance: $n_expected scenarios need the suite's fixture tools, resources or prompts and failed as baseline.yml expects"
echo "conformance: $n_passed passed, $n_unexpected failed"
exit $status
