#!/usr/bin/env bash
# npm-pack.sh builds editguard and editguard-hook for each platform the npm
# packages cover, puts them into the platform packages (npm/<os>-<cpu>),
# sets every package's version, and packs each package with "npm pack".
# Nothing is published.
#
# Usage: scripts/npm-pack.sh [VERSION]
#
# VERSION is the npm version (1.2.3; a leading "v" is dropped), and the one
# place the packages' versions come from: the package.json files under npm/
# hold 0.0.0, and every package, and the main package's optionalDependencies,
# get VERSION. Without it, the tag at HEAD (v1.2.3) gives it.
#
# The binaries report the version Go records from git when it builds them
# (see "editguard version"): v1.2.3 at a clean checkout of tag v1.2.3. The
# script refuses to pack binaries that report another version, unless
# EDITGUARD_ALLOW_VERSION_MISMATCH=1 (a test build).
#
# Environment:
#   NPM_PLATFORMS  the platform packages to build, among linux-x64,
#                  linux-arm64, darwin-x64 and darwin-arm64 (default all),
#                  or "host" for this machine's alone
#   NPM_OUT        where the tarballs go (default dist/npm); the packages
#                  are assembled in NPM_OUT/stage
set -euo pipefail
cd "$(dirname "$0")/.."

all_platforms="linux-x64 linux-arm64 darwin-x64 darwin-arm64"

die() {
	echo "npm-pack: $*" >&2
	exit 1
}

version=${1:-}
if [ -z "$version" ]; then
	version=$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null) ||
		die "no VERSION given and no tag v* at HEAD; usage: scripts/npm-pack.sh VERSION"
fi
version=${version#v}
if ! printf '%s\n' "$version" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'; then
	die "VERSION $version is not a semantic version such as 1.2.3 or 1.2.3-rc.1"
fi

goarch_of() {
	case $1 in
	x64) echo amd64 ;;
	arm64) echo arm64 ;;
	*) return 1 ;;
	esac
}

platforms=${NPM_PLATFORMS:-$all_platforms}
if [ "$platforms" = host ]; then
	hostos=$(go env GOHOSTOS)
	case $(go env GOHOSTARCH) in
	amd64) hostcpu=x64 ;;
	arm64) hostcpu=arm64 ;;
	*) hostcpu=$(go env GOHOSTARCH) ;;
	esac
	platforms="$hostos-$hostcpu"
fi
for p in $platforms; do
	case " $all_platforms " in
	*" $p "*) ;;
	*) die "no npm package for platform $p (packages: $all_platforms)" ;;
	esac
done

out=${NPM_OUT:-dist/npm}
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$out/stage
rm -rf "$stage"
mkdir -p "$stage"

# setversion FILE: set the package's version, and the versions of the
# platform packages among its optionalDependencies, to $version.
setversion() {
	node - "$1" "$version" <<'EOF'
const fs = require("fs");
const [file, version] = process.argv.slice(2);
const pkg = JSON.parse(fs.readFileSync(file, "utf8"));
pkg.version = version;
for (const name of Object.keys(pkg.optionalDependencies || {})) {
  if (name.startsWith("@editguard/")) pkg.optionalDependencies[name] = version;
}
fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n");
EOF
}

# pack DIR: npm pack DIR into $out, printing the tarball's name.
pack() {
	(cd "$1" && npm pack --ignore-scripts --pack-destination "$out" --loglevel=error)
}

mismatch=0
for p in $platforms; do
	goos=${p%-*}
	goarch=$(goarch_of "${p#*-}")
	dir=$stage/$p
	cp -R "npm/$p" "$dir"
	mkdir -p "$dir/bin"
	cp LICENSE "$dir/"
	for cmd in editguard editguard-hook; do
		echo "npm-pack: building $cmd for $goos/$goarch"
		# -buildvcs=auto overrides a -buildvcs=false in GOFLAGS: the
		# version editguard reports comes from git.
		CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch \
			go build -trimpath -buildvcs=auto -ldflags='-s -w' -o "$dir/bin/$cmd" "./cmd/$cmd"
		chmod 0755 "$dir/bin/$cmd"
	done
	built=$(go version -m "$dir/bin/editguard" | awk '$1 == "mod" { print $3; exit }')
	if [ "$built" != "v$version" ]; then
		echo "npm-pack: the $p binaries report version ${built:-(none)}, not v$version" >&2
		mismatch=1
	fi
	setversion "$dir/package.json"
done
if [ "$mismatch" = 1 ]; then
	if [ "${EDITGUARD_ALLOW_VERSION_MISMATCH:-}" != 1 ]; then
		die "build at a clean checkout of tag v$version, or set EDITGUARD_ALLOW_VERSION_MISMATCH=1 for a test build"
	fi
	echo "npm-pack: packing anyway (EDITGUARD_ALLOW_VERSION_MISMATCH=1)" >&2
fi

cp -R npm/editguard "$stage/editguard"
cp README.md LICENSE "$stage/editguard/"
setversion "$stage/editguard/package.json"

echo "npm-pack: packing into $out"
for p in $platforms; do
	pack "$stage/$p"
done
pack "$stage/editguard"
