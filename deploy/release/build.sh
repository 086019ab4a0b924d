#!/usr/bin/env bash
# The release build without goreleaser: the six binaries of a runner
# release (Linux, macOS and Windows on amd64 and arm64), static (CGO off),
# stripped, with the version and commit linked in, and their SHA-256
# checksums, as .goreleaser.yaml builds them:
#
#   DIST/runner_VERSION_OS_ARCH[.exe]   six binaries
#   DIST/SHA256SUMS                     `sha256sum -c SHA256SUMS` checks them
#
# Usage: deploy/release/build.sh [DIST]     (DIST defaults to dist/)
# Environment (each optional):
#   VERSION    the version `runner --version` prints; default
#              `git describe --tags --always --dirty`
#   COMMIT     the commit it prints; default `git rev-parse HEAD`
#   PLATFORMS  OS/ARCH pairs to build, space-separated; default the six
# Run it from anywhere in a checkout; it exits non-zero on the first
# build that fails.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
dist=${1:-$root/dist}
VERSION=${VERSION:-$(git -C "$root" describe --tags --always --dirty)}
COMMIT=${COMMIT:-$(git -C "$root" rev-parse HEAD)}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
pkg=github.com/runner-dev/runner/internal/sysinfo
ldflags="-s -w -X $pkg.Version=$VERSION -X $pkg.Commit=$COMMIT"

mkdir -p "$dist"
dist=$(cd "$dist" && pwd)
names=()
for p in $PLATFORMS; do
  goos=${p%/*} goarch=${p#*/}
  if [ "$goos" = "$p" ] || [ -z "$goos" ] || [ -z "$goarch" ]; then
    echo "build.sh: PLATFORMS: $p is not OS/ARCH" >&2
    exit 2
  fi
  ext=
  if [ "$goos" = windows ]; then ext=.exe; fi
  name=runner_${VERSION}_${goos}_${goarch}${ext}
  echo "building $name" >&2
  (cd "$root" && CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch \
    go build -trimpath -ldflags "$ldflags" -o "$dist/$name" ./cmd/runner)
  names+=("$name")
done

cd "$dist"
if command -v sha256sum >/dev/null 2>&1; then
  sha256sum "${names[@]}" >SHA256SUMS
else
  shasum -a 256 "${names[@]}" >SHA256SUMS # macOS
fi
echo "wrote ${#names[@]} binaries and SHA256SUMS to $dist" >&2
