#!/usr/bin/env bash
# Builds the real node's container runtime from the Go module pinned here (containerd 2: the daemon, ctr
# and the runc shim, github.com/containerd/containerd/v2) as static binaries into a cache outside the
# work tree, in a folder named by the version and a digest of every file here. Prints the bin folder on
# stdout; does nothing when that set is built. runc and the CNI plugins stay Debian's
# (hack/node-prerequisites.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

version=$(cd "$here" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
digest=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-12)
cache_root="${CAPI_CONTAINERD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/capi-installer/containerd}"
out="$cache_root/containerd-${version}_${digest}"
bin="$out/bin"
binaries=(containerd ctr containerd-shim-runc-v2)

built() {
  for b in "${binaries[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
}
if built; then
  echo "$bin"
  exit 0
fi

log() { echo "containerd build: $*" >&2; }
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

# Static, without cgo: no btrfs snapshotter (its cgo library) and no generated CLI docs; the shim talks
# ttrpc only (no_grpc), as containerd's own release build makes it.
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:-} -mod=readonly -trimpath"
pkg=github.com/containerd/containerd/v2
ldflags="-s -w -X $pkg/version.Version=${version#v} -X $pkg/version.Revision=$version -X $pkg/version.Package=$pkg"
start=$(date +%s)
log "building containerd $version (containerd, ctr, containerd-shim-runc-v2)"
(cd "$here" && go build -tags 'no_btrfs urfave_cli_no_docs' -ldflags "$ldflags" -o "$staging/" \
  $pkg/cmd/containerd $pkg/cmd/ctr)
(cd "$here" && go build -tags 'no_btrfs urfave_cli_no_docs no_grpc' -ldflags "$ldflags" -o "$staging/" \
  $pkg/cmd/containerd-shim-runc-v2)

# Publish atomically so an interrupted build never looks complete.
rm -rf "$bin"
mv "$staging" "$bin"
log "built in $(( $(date +%s) - start ))s into $bin"
echo "$bin"
