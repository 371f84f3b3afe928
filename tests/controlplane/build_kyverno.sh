#!/usr/bin/env bash
# Opt-in: builds Kyverno's admission controller (github.com/kyverno/kyverno cmd/kyverno, the release pinned in
# tests/controlplane/kyverno/go.mod) from the Go module proxy, for the admission benchmark's Kyverno peer (issue 41).
# Not part of build.sh, CI or any default test run: its module graph is ~1,200 modules (2.4 GB in the module cache).
# The binary goes to ${XDG_CACHE_HOME:-$HOME/.cache}/gpudra/kyverno/<version>/bin/kyverno, keyed by a hash of the
# module files, this script and the Go version, so a warm run does not start the Go toolchain.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mod="$here/kyverno"
if ! command -v go >/dev/null 2>&1; then
  echo "build_kyverno.sh: Go is not installed; install Go >= 1.26.6" >&2
  exit 1
fi
version="$(sed -n 's/^[[:space:]]*\(require \)\{0,1\}github.com\/kyverno\/kyverno \(v[0-9.]*\).*$/\2/p' "$mod/go.mod")"
if [ -z "$version" ]; then
  echo "build_kyverno.sh: $mod/go.mod names no github.com/kyverno/kyverno release" >&2
  exit 1
fi
hash="$(cat "$mod/go.mod" "$mod/go.sum" "$0" <(go env GOVERSION) | sha256sum | cut -c1-16)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/gpudra/kyverno/$version"
bin="$cache/bin"
if [ -x "$bin/kyverno" ] && [ "$(cat "$cache/kyverno.stamp" 2>/dev/null)" = "$hash" ]; then
  echo "build_kyverno.sh: kyverno $version up to date ($hash): $bin/kyverno"
  exit 0
fi
mkdir -p "$bin"
export GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
t0=$(date +%s)
echo "build_kyverno.sh: downloading the modules of kyverno $version ..."
(cd "$mod" && go mod download)
echo "build_kyverno.sh: downloaded in $(($(date +%s) - t0))s; building ..."
tmp="$(mktemp -d "$cache/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
(cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$tmp/" tool)
[ -x "$tmp/kyverno" ] || { echo "build_kyverno.sh: kyverno was not produced" >&2; exit 1; }
mv -f "$tmp/kyverno" "$bin/kyverno"
echo "$hash" >"$cache/kyverno.stamp"
echo "build_kyverno.sh: built kyverno $version in $(($(date +%s) - t0))s: $bin/kyverno"
