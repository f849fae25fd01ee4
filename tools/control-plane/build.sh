#!/usr/bin/env bash
# Builds the control-plane binaries (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
# kubelet, kube-proxy, etcd, kwok) from the Go modules pinned in this folder, into a cache outside the
# work tree so that CI's fresh clones reuse them. Prints the bin folder on stdout; does nothing when the pinned set is built.
# --without-kwok: everything but kwok (what the real node runs: `make demo` asks for no more, so a
# first demo does not compile kwok's own Kubernetes libraries); a later call without it adds kwok.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
with_kwok=true
case "${1:-}" in
  "") ;;
  --without-kwok) with_kwok=false ;;
  *) echo "control-plane build: unknown argument $1 (--without-kwok or nothing)" >&2; exit 2 ;;
esac

pinned() { (cd "$here/$1" && go list -m -f '{{.Version}}' "$2"); }
k8s_version=$(pinned . k8s.io/kubernetes)
etcd_version=$(pinned etcd go.etcd.io/etcd/server/v3)
kwok_version=$(pinned kwok sigs.k8s.io/kwok)
# The folder name carries the versions for people and a digest of the module files for correctness:
# any change to a pin or a checksum selects a new folder.
digest=$(cat "$here"/go.mod "$here"/go.sum "$here"/etcd/go.mod "$here"/etcd/go.sum "$here"/kwok/go.mod \
  "$here"/kwok/go.sum "$here/build.sh" | sha256sum | cut -c1-12)
cache_root="${CAPI_CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/capi-installer/control-plane}"
out="$cache_root/k8s-${k8s_version}_etcd-${etcd_version}_kwok-${kwok_version}_${digest}"
bin="$out/bin"
kubernetes=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)
binaries=("${kubernetes[@]}" etcd)
$with_kwok && binaries+=(kwok)
# Each binary is moved into bin/ whole once built (a rename), so that one there is complete.
missing() { local b; for b in "$@"; do [[ -x "$bin/$b" ]] || return 0; done; return 1; }

if ! missing "${binaries[@]}"; then
  echo "$bin"
  exit 0
fi

log() { echo "control-plane build: $*" >&2; }
mkdir -p "$out"
# One build at a time: several work trees (or test runs) asking at once wait for the first one's
# result instead of building into the same staging folder.
exec 9>"$out/.lock"
if ! flock -n 9; then
  log "another build of this set is running; waiting for it"
  flock 9
  if ! missing "${binaries[@]}"; then
    echo "$bin"
    exit 0
  fi
fi
staging="$out/bin.partial"
rm -rf "$staging"
mkdir -p "$staging"

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:-} -mod=readonly -trimpath"
minor=${k8s_version#v1.}; minor=${minor%%.*}
version_pkg=k8s.io/component-base/version
client_version_pkg=k8s.io/client-go/pkg/version
ldflags="-s -w"
for pkg in $version_pkg $client_version_pkg; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

start=$(date +%s)
mkdir -p "$bin"
if missing "${kubernetes[@]}"; then
  log "building Kubernetes $k8s_version (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet, kube-proxy); the first build takes several minutes"
  (cd "$here" && go build -ldflags "$ldflags" -o "$staging/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)
fi
if missing etcd; then
  log "building etcd $etcd_version"
  (cd "$here/etcd" && go build -ldflags "-s -w" -o "$staging/etcd" go.etcd.io/etcd/server/v3)
fi
if $with_kwok && missing kwok; then
  log "building kwok $kwok_version"
  (cd "$here/kwok" && go build -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$kwok_version" \
    -o "$staging/kwok" sigs.k8s.io/kwok/cmd/kwok)
fi

# Publish each binary whole (a rename within the folder) so an interrupted build never looks complete.
for f in "$staging"/*; do
  if [[ -e "$f" ]]; then mv -f "$f" "$bin/"; fi
done
rmdir "$staging"
log "built in $(( $(date +%s) - start ))s into $bin"
echo "$bin"
