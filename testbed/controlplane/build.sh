#!/usr/bin/env bash
# Builds kube-apiserver, kube-scheduler and kube-controller-manager from Debian bookworm's
# `kubernetes` source package (1.20.2, with its vendor/ tree), offline apart from apt, and caches
# the binaries under ~/.cache/kube-rdma/k8s-<source version>/ so that a machine builds them once.
# Prints the cache directory on its last line. Run as root (it adds a deb-src entry and installs
# golang-go, etcd-server and the Go packages the vendored copies are swapped for).
set -euo pipefail

CACHE_ROOT="${KUBE_RDMA_CACHE:-$HOME/.cache/kube-rdma}"
BINARIES=(kube-apiserver kube-scheduler kube-controller-manager)
PACKAGES=(golang-go etcd-server rsync make dpkg-dev
          golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev)
SOURCES=/etc/apt/sources.list.d/kube-rdma-bookworm-src.sources

log() { echo "build.sh: $*" >&2; }

have_all() {
    local dir=$1 name
    for name in "${BINARIES[@]}"; do [[ -x $dir/$name ]] || return 1; done
    command -v etcd >/dev/null
}

# A cache hit needs neither apt nor the network: the version is read from the cached marker.
if [[ -f $CACHE_ROOT/current ]]; then
    cached="$CACHE_ROOT/$(cat "$CACHE_ROOT/current")"
    if have_all "$cached"; then log "cached binaries in $cached"; echo "$cached"; exit 0; fi
fi

[[ $(id -u) == 0 ]] || { log "run as root: it installs packages with apt-get"; exit 1; }
if [[ ! -f $SOURCES ]]; then
    cat > "$SOURCES" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
log "apt-get update and install: ${PACKAGES[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${PACKAGES[@]}" >/dev/null

version=$(apt-cache showsrc kubernetes | sed -n 's/^Version: //p' | head -n1)
[[ -n $version ]] || { log "apt-cache showsrc kubernetes found no source: is deb-src enabled?"; exit 1; }
out="$CACHE_ROOT/k8s-$version"
if have_all "$out"; then echo "k8s-$version" > "$CACHE_ROOT/current"; echo "$out"; exit 0; fi

work="$CACHE_ROOT/src-$version"
mkdir -p "$work"
if [[ ! -d $work/source ]]; then
    log "apt-get source kubernetes=$version into $work"
    (cd "$work" && apt-get source -qq "kubernetes=$version" >/dev/null)
    mv "$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | head -n1)" "$work/source"
fi
src="$work/source"

# Go 1.18+ crashes in the vendored reflect2 1.0.1 / json-iterator 1.1.10 at the first admission
# webhook call (SIGSEGV in reflect2.(*UnsafeMapType).UnsafeIterate); Debian's newer copies work.
for pkg in github.com/modern-go/reflect2 github.com/json-iterator/go; do
    rsync -a --delete --exclude '*_test.go' "/usr/share/gocode/src/$pkg/" "$src/vendor/$pkg/"
done

# GOPATH mode: module mode fails with "updates to go.mod needed".
export GOPATH="$work/gopath" GO111MODULE=off CGO_ENABLED=0
export GOCACHE="$CACHE_ROOT/gocache"
mkdir -p "$GOPATH/src/k8s.io"
ln -sfn "$src" "$GOPATH/src/k8s.io/kubernetes"
cd "$GOPATH/src/k8s.io/kubernetes"
if [[ ! -s pkg/generated/openapi/zz_generated.openapi.go ]]; then
    # A failed earlier attempt leaves an empty openapi-gen that make would take as built.
    [[ -s _output/bin/openapi-gen ]] || rm -f _output/bin/openapi-gen
    log "make gen_openapi"
    make gen_openapi >&2
fi
# The version the binaries report (/version, User-Agent), as hack/lib/version.sh stamps it.
upstream=${version#*really}
upstream=v${upstream%%-*}
major=${upstream#v}; major=${major%%.*}
minor=${upstream#v*.}; minor=${minor%%.*}
ldflags=""
for pkg in vendor/k8s.io/client-go/pkg/version vendor/k8s.io/component-base/version; do
    for pair in "gitVersion=$upstream" "gitMajor=$major" "gitMinor=$minor" "gitTreeState=clean"; do
        ldflags+=" -X k8s.io/kubernetes/$pkg.$pair"
    done
done
mkdir -p "$out.partial"
for name in "${BINARIES[@]}"; do
    log "go build $name ($upstream)"
    go build -ldflags "$ldflags" -o "$out.partial/$name" "./cmd/$name"
done
rm -rf "$out" && mv "$out.partial" "$out"
echo "k8s-$version" > "$CACHE_ROOT/current"
log "built in $out"
echo "$out"
