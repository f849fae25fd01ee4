#!/usr/bin/env bash
# Builds kustomize (pinned in go.mod as a tool) as a static binary into a cache outside the work tree,
# in a folder named by the version and a digest of every file here. Prints the bin folder on stdout;
# does nothing when it is built.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { echo "kustomize build: $*" >&2; }
command -v go >/dev/null || { log "go not found; install Go 1.26 or newer (kustomize is built from its Go module)"; exit 1; }

version=$(cd "$here" && go list -m -f '{{.Version}}' sigs.k8s.io/kustomize/kustomize/v5) ||
  { log "cannot resolve sigs.k8s.io/kustomize/kustomize/v5 in $here/go.mod (is the Go module proxy reachable?)"; exit 1; }
digest=$(cd "$here" && find . -type f \( -name go.mod -o -name go.sum -o -name build.sh \) \
  | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
cache_root="${CAPI_KUSTOMIZE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/capi-installer/kustomize}"
out="$cache_root/kustomize-${version}_${digest}"
bin="$out/bin"

built() { [[ -x "$bin/kustomize" ]]; }
if built; then
  echo "$bin"
  exit 0
fi

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
log "building kustomize $version"
(cd "$here" && go build -ldflags "-s -w" -o "$staging/kustomize" sigs.k8s.io/kustomize/kustomize/v5) ||
  { log "the build of kustomize $version failed (see above)"; exit 1; }

# Publish atomically so an interrupted build never looks complete.
rm -rf "$bin"
mv "$staging" "$bin"
log "built in $(( $(date +%s) - start ))s into $bin"
echo "$bin"
