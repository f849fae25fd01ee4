#!/usr/bin/env bash
# Builds the real node's NetworkPolicy agent (main.go here over sigs.k8s.io/kube-network-policies,
# pinned in go.mod) as a static binary into a cache outside the work tree, in a folder named by the
# version and a digest of every file here. Prints the bin folder on stdout; does nothing when it is built.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

version=$(cd "$here" && go list -m -f '{{.Version}}' sigs.k8s.io/kube-network-policies)
digest=$(cd "$here" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum -o -name build.sh \) \
  | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
cache_root="${CAPI_NETWORK_POLICIES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/capi-installer/network-policies}"
out="$cache_root/kube-network-policies-${version}_${digest}"
bin="$out/bin"

built() { [[ -x "$bin/network-policies" ]]; }
if built; then
  echo "$bin"
  exit 0
fi

log() { echo "network-policies build: $*" >&2; }
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
log "building kube-network-policies $version"
(cd "$here" && go build -ldflags "-s -w" -o "$staging/network-policies" .)

# Publish atomically so an interrupted build never looks complete.
rm -rf "$bin"
mv "$staging" "$bin"
log "built in $(( $(date +%s) - start ))s into $bin"
echo "$bin"
