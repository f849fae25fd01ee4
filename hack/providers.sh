#!/usr/bin/env bash
# The release payload's provider parts, made from the providers' own sources as a provider's release
# pipeline makes them (docs/maintainers/overlay.md), into $CARGO_TARGET_DIR/providers (printed on
# stdout):
#
#   transport/0000_30_cluster-api_04_cm.<core|infrastructure>-<name>.yaml   the transport ConfigMaps
#   transport/0000_30_cluster-api_04_crd.core-cluster-api.yaml             the IPAM CRDs the payload
#                                                                           applies itself
#   profiles/<provider>/{manifests,metadata}.yaml                           the image-based profiles
#                                                                           the provider images carry
#
# For each provider of providers/ (core, aws): the kustomize tree (config/, metadata.yaml) of its Go
# module, at the version tools/capi-managers pins (the manager the demo runs), copied beside the
# provider's OpenShift overlay (providers/<provider>/, as openshift/); rendered by kustomize
# (tools/kustomize) and customized by this project's manifests-gen (target/debug/manifests-gen) into the
# transport ConfigMap; the profile from it (hack/profile_from_transport.py). Takes seconds; nothing is
# cached but the Go builds.
# IMAGES_BUILT=1: manifests-gen is built already (by `make test`'s `cargo test --workspace --no-run`, or
# hack/demo.sh's build): no cargo build here, which would compile its dependencies again with other
# features.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
out="$target/providers"
work="$target/providers-work"
fail() { echo "providers: $*" >&2; exit 1; }
# The one line of a tool's log that says what went wrong (manifests-gen's `error: ...`, kustomize's
# `Error: ...`), else its last line.
last_error() {
  { grep -m1 -i '^error: ' "$1" || tail -n 1 "$1"; } | sed 's/^[Ee]rror: //'
}

command -v go >/dev/null || fail "go not found; install Go 1.26 or newer (kustomize and the providers' sources are Go modules)"
command -v python3 >/dev/null || fail "python3 not found; install Python 3"
kustomize_bin="$(tools/kustomize/build.sh)" || fail "kustomize could not be built (tools/kustomize/build.sh, output above)"
if [[ -z "${IMAGES_BUILT:-}" ]]; then
  cargo build --locked -q -p manifests-gen
fi
manifests_gen="$target/debug/manifests-gen"
[[ -x "$manifests_gen" ]] || fail "$manifests_gen is not built (cargo build -p manifests-gen)"

# The release names of the provider images (the images ConfigMap's `key: image` lines).
image_of() {
  sed -n "s/^  $1: *\([^ ]*\)\$/\1/p" manifests/0000_30_capi-installer_02_images-configmap.yaml
}
# Where the Go module cache holds MODULE at the version tools/capi-managers pins, and that version
# (downloaded through the module proxy when missing, checked against go.sum).
module_dir() {
  local json
  json="$(cd tools/capi-managers && go mod download -json "$1" 2>&1)" ||
    fail "the Go module proxy did not give $1 ($(printf '%s' "$json" | python3 -c 'import json,sys
try: print(json.load(sys.stdin).get("Error", "no detail"))
except Exception: print("no detail")'); GOPROXY=$(go env GOPROXY))"
  printf '%s' "$json" | python3 -c 'import json, sys; m = json.load(sys.stdin); print(m["Dir"], m["Version"])'
}

rm -rf "$out" "$work"
mkdir -p "$out/transport" "$out/profiles"
start=$(date +%s)
for provider in core aws; do
  (
    # shellcheck disable=SC1090
    source "providers/$provider/provider.env"
    info="$(module_dir "$MODULE")"
    read -r dir version <<<"$info"
    [[ -d "$dir/config" && -f "$dir/metadata.yaml" ]] || fail "$MODULE@$version has no config/ or metadata.yaml at $dir"
    # The module's tree is read-only in the module cache, and kustomize reads only below the
    # kustomization's root's parent: a writable copy with the overlay beside config/, as a fork has it.
    tree="$work/$provider"
    mkdir -p "$tree"
    cp -r "$dir/config" "$dir/metadata.yaml" "$tree/"
    cp -r "providers/$provider" "$tree/openshift"
    chmod -R u+w "$tree"
    if ! PATH="$kustomize_bin:$PATH" "$manifests_gen" --base-path "$tree" --kustomize-dir openshift \
      --manifests-path "$out/transport" --provider-name "$NAME" --provider-type "$TYPE" \
      --provider-version "$version" --metadata "$tree/metadata.yaml" 2>"$tree/manifests-gen.log"; then
      fail "$provider ($MODULE@$version with providers/$provider/) does not render: $(last_error "$tree/manifests-gen.log"); mend providers/$provider/ (log: $tree/manifests-gen.log)"
    fi
    if [[ -d "providers/$provider/ipam" ]]; then
      "$kustomize_bin/kustomize" build "$tree/openshift/ipam" \
        -o "$out/transport/0000_30_cluster-api_04_crd.core-cluster-api.yaml" 2>"$tree/ipam.log" ||
        fail "providers/$provider/ipam does not render: $(last_error "$tree/ipam.log"); mend providers/$provider/ipam/"
    fi
    kind=infrastructure
    [[ "$TYPE" == CoreProvider ]] && kind=core
    mkdir -p "$out/profiles/$provider"
    python3 hack/profile_from_transport.py "$out/transport/0000_30_cluster-api_04_cm.$kind-$NAME.yaml" \
      "$(image_of "$IMAGE_KEY")" ${PLATFORM:+"$PLATFORM"} "$out/profiles/$provider"
    echo "providers: $provider from $MODULE@$version" >&2
  )
done
echo "providers: wrote $out in $(( $(date +%s) - start ))s" >&2
echo "$out"
