#!/usr/bin/env bash
# npm-smoke.sh checks the npm packages as a user gets them: it packs the
# main package and this machine's platform package (scripts/npm-pack.sh),
# installs the two tarballs into an empty project without the network, and
# runs the installed editguard command:
#
#   - the platform package's bin/editguard and bin/editguard-hook are
#     executable;
#   - "npx --no-install editguard --version" prints what the binary prints;
#   - an unknown command exits with the binary's status;
#   - "npx --no-install editguard --root DIR serve" answers an MCP
#     initialize on stdin with editguard's name and version;
#   - SIGTERM sent to the launcher reaches the server, which stops.
#
# Everything is built and installed in a temporary directory, removed at the
# end (KEEP=1 keeps it).
#
# Usage: scripts/npm-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
start=$(date +%s)

fail() {
	echo "npm-smoke: FAIL: $*" >&2
	exit 1
}

# step prints a step's title with the seconds since the start.
step() {
	echo "== [$(($(date +%s) - start)) s] $*"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/editguard-npm-smoke.XXXXXX")
launcher_pid=
cleanup() {
	if [ -n "$launcher_pid" ]; then kill -KILL "$launcher_pid" 2>/dev/null || true; fi
	if [ "${KEEP:-}" = 1 ]; then
		echo "npm-smoke: kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT

version=0.0.0-smoke
platform=$(node -p 'process.platform + "-" + process.arch')

step "pack $version for $platform"
NPM_OUT=$tmp/npm NPM_PLATFORMS=$platform EDITGUARD_ALLOW_VERSION_MISMATCH=1 \
	scripts/npm-pack.sh "$version"
main_tgz=$tmp/npm/editguard-$version.tgz
platform_tgz=$tmp/npm/editguard-$platform-$version.tgz
[ -f "$main_tgz" ] || fail "no $main_tgz"
[ -f "$platform_tgz" ] || fail "no $platform_tgz"

step "install the tarballs offline"
proj=$tmp/project
mkdir -p "$proj"
printf '{ "name": "editguard-npm-smoke", "version": "0.0.0", "private": true }\n' >"$proj/package.json"
# A cache of its own: nothing is read from or left in the user's.
(cd "$proj" && npm install --offline --no-audit --no-fund --loglevel=error \
	--cache "$tmp/npm-cache" "$platform_tgz" "$main_tgz")

pkgdir=$proj/node_modules/@editguard/$platform
for cmd in editguard editguard-hook; do
	[ -x "$pkgdir/bin/$cmd" ] || fail "$pkgdir/bin/$cmd is not an executable file"
done
bin=$pkgdir/bin/editguard
cd "$proj"

step "npx --no-install editguard --version"
got=$(npx --no-install editguard --version)
want=$("$bin" --version)
echo "$got"
[ "$got" = "$want" ] || fail "npx editguard --version printed \"$got\", the binary \"$want\""
case $got in
"editguard "*) ;;
*) fail "unexpected version line \"$got\"" ;;
esac

step "exit status passed through"
set +e
npx --no-install editguard no-such-command >/dev/null 2>&1
got_rc=$?
"$bin" no-such-command >/dev/null 2>&1
want_rc=$?
set -e
echo "npx editguard no-such-command: exit $got_rc (binary: $want_rc)"
[ "$want_rc" != 0 ] || fail "the binary accepted no-such-command"
[ "$got_rc" = "$want_rc" ] || fail "exit status $got_rc, the binary's is $want_rc"

step "MCP initialize through npx --no-install editguard serve"
ws=$tmp/workspace
mkdir -p "$ws"
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"npm-smoke","version":"0"}}}'
# serve answers the requests it read before its input ended, then exits.
answer=$(printf '%s\n' "$init" | npx --no-install editguard --root "$ws" serve)
echo "$answer"
node - "$answer" "${want#editguard }" <<'EOF'
const [answer, versionLine] = process.argv.slice(2);
const want = versionLine.split(" ")[0];
const msg = JSON.parse(answer.split("\n")[0]);
const r = msg.result;
if (msg.id !== 1 || !r) throw new Error("no result for the initialize request: " + answer);
if (r.serverInfo.name !== "editguard") throw new Error("serverInfo.name is " + r.serverInfo.name);
if (r.serverInfo.version !== want) throw new Error("serverInfo.version is " + r.serverInfo.version + ", --version says " + want);
if (!r.protocolVersion) throw new Error("no protocolVersion");
if (!r.capabilities || !r.capabilities.tools) throw new Error("no tools capability");
console.log("initialize: " + r.serverInfo.name + " " + r.serverInfo.version + ", protocol " + r.protocolVersion);
EOF

step "SIGTERM reaches the server"
mkfifo "$tmp/in"
node "$proj/node_modules/.bin/editguard" --root "$ws" serve <"$tmp/in" >/dev/null 2>"$tmp/serve.err" &
launcher_pid=$!
exec 3>"$tmp/in" # the server's stdin stays open: only the signal stops it
child=
for _ in $(seq 100); do
	child=$(pgrep -P "$launcher_pid" || true)
	[ -n "$child" ] && break
	sleep 0.05
done
[ -n "$child" ] || fail "the launcher started no server"
sleep 0.2
kill -TERM "$launcher_pid"
rc=
for _ in $(seq 100); do
	if ! kill -0 "$launcher_pid" 2>/dev/null; then
		set +e
		wait "$launcher_pid"
		rc=$?
		set -e
		break
	fi
	sleep 0.05
done
exec 3>&-
if [ -z "$rc" ]; then
	cat "$tmp/serve.err" >&2
	fail "the launcher did not exit within 5 s of SIGTERM"
fi
launcher_pid=
if kill -0 "$child" 2>/dev/null; then
	kill -KILL "$child" 2>/dev/null || true
	fail "the server (pid $child) outlived the launcher"
fi
[ "$rc" = 0 ] || { cat "$tmp/serve.err" >&2; fail "the launcher exited $rc after SIGTERM; serve stops with 0"; }
echo "launcher and server stopped, exit 0"

cd "$root"
echo "npm-smoke: ok in $(($(date +%s) - start)) s"
