#!/usr/bin/env bash
# Builds the real Cluster API managers that the real-node tests and `make demo` run as pods: the core
# manager (sigs.k8s.io/cluster-api), the AWS provider manager (main.go in aws/ over
# sigs.k8s.io/cluster-api-provider-aws/v2), both pinned in go.mod, and the pod sandbox's pause process,
# as static binaries into a cache outside the work tree, in a folder named by the versions and a digest
# of every file here. Prints the bin folder on stdout; does nothing when that set is built.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

pinned() { (cd "$here" && go list -m -f '{{.Version}}' "$1"); }
capi_version=$(pinned sigs.k8s.io/cluster-api)
capa_version=$(pinned sigs.k8s.io/cluster-api-provider-aws/v2)
digest=$(cd "$here" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum -o -name build.sh \) \
  | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
cache_root="${CAPI_MANAGERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/capi-installer/capi-managers}"
out="$cache_root/capi-${capi_version}_capa-${capa_version}_${digest}"
bin="$out/bin"
binaries=(cluster-api-manager aws-manager pause)

built() {
  for b in "${binaries[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
}
if built; then
  echo "$bin"
  exit 0
fi

log() { echo "capi-managers build: $*" >&2; }
mkdir -p "$out"
# One build at a time: parallel callers wait for the first one's result.
exec 9>"$out/.lock"
if ! flock -n 9; then
  log "another build of this set is running; waiting for it"
  flock 9
  if built; then
    echo "$bin"
    exit 0
  fi
fi
staging="$out/bin.partial"
rm -rf "$staging"
mkdir -p "$staging"

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:-} -mod=readonly -trimpath"
start=$(date +%s)
log "building the Cluster API core manager $capi_version, the AWS provider manager $capa_version and pause"
# One invocation over one module: the packages both managers link are compiled once, and the Go
# command spreads the two builds over the cores together instead of one after the other.
version_flags="-X sigs.k8s.io/cluster-api/version.gitVersion=$capi_version"
version_flags+=" -X sigs.k8s.io/cluster-api-provider-aws/v2/version.gitVersion=$capa_version"
(cd "$here" && go build -ldflags "-s -w $version_flags" -o "$staging/" sigs.k8s.io/cluster-api ./aws ./pause)
mv "$staging/cluster-api" "$staging/cluster-api-manager"
mv "$staging/aws" "$staging/aws-manager"

# Publish atomically so an interrupted build never looks complete.
rm -rf "$bin"
mv "$staging" "$bin"
log "built in $(( $(date +%s) - start ))s into $bin"
echo "$bin"
