#!/usr/bin/env bash
# Builds the images the real node runs, without a container engine or a registry, into one OCI image
# layout ($CARGO_TARGET_DIR/images, printed on stdout) that the node's registry serves to containerd:
#
#   registry.ci.openshift.org/openshift:capi-installer       this repository: the installer and the
#                                                            controllers pod (what the Containerfile builds)
#   every image of the images ConfigMap (manifests/), each carrying its provider's image-based profile
#   at /capi-operator-manifests/default/ as the providers' images do (the installer's pod mounts them
#   as image volumes):
#     cluster-capi-controllers, aws-cluster-api-controllers  the real Cluster API core and AWS managers,
#                                                            with the profiles hack/providers.sh makes
#                                                            from those managers' own modules (their
#                                                            kustomize trees, the overlay in providers/,
#                                                            manifests-gen)
#     the rest (no manager or profile of them here)          a stand-in: one file saying so
#   <aws-cluster-api-controllers>-next                       the same AWS manager, its profile's log level
#                                                            raised: a next release's image, for upgrades
#   registry.ci.openshift.org/openshift:pod                  the pod sandbox (containerd's sandbox_image)
#
# The Go managers come from tools/capi-managers/build.sh (cached by digest outside the work tree); the
# installer image from `cargo build` of this tree. The Containerfile stays the build for real release
# systems: this image has the same files at the same paths, the same label, user, entrypoint and command
# (crates/capi-installer/tests/manifests.rs compares them); its glibc comes from this machine instead of
# distroless, and its binaries are the debug build, stripped.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
out="$target/images"
log() { echo "images: $*" >&2; }

managers="$(tools/capi-managers/build.sh)"
# IMAGES_BUILT=1: take the binaries a `cargo test --workspace --no-run` left in target/debug (`make
# test` does; a build of just these two packages would compile their dependencies again with other
# features).
if [[ -z "${IMAGES_BUILT:-}" ]]; then
  log "cargo build -p capi-installer -p capi-controllers"
  cargo build --locked -q -p capi-installer -p capi-controllers
fi
for b in capi-installer capi-controllers; do
  [[ -x "$target/debug/$b" ]] || { log "$target/debug/$b is not built"; exit 1; }
done

work="$target/images-work"
rm -rf "$work"
mkdir -p "$work"
for b in capi-installer capi-controllers; do
  strip -o "$work/$b" "$target/debug/$b"
done

# The release names of the images: the installer's from the release's Deployment (the deployer's,
# which runs the installer in its own image), the providers' from the images ConfigMap that the
# installer reads (its data: one `key: image` line each).
installer_image=$(sed -n 's/^ *image: *\(.*capi-installer\)$/\1/p' manifests/0000_30_capi-installer_04_deployer.yaml)
image_of() {
  sed -n "s/^  $1: *\([^ ]*\)\$/\1/p" manifests/0000_30_capi-installer_02_images-configmap.yaml
}
core_image=$(image_of cluster-capi-controllers)
aws_image=$(image_of aws-cluster-api-controllers)
pause_image="${installer_image%%:*}:pod"
for v in installer_image core_image aws_image; do
  [[ -n "${!v}" ]] || { log "no $v in manifests/"; exit 1; }
done
# The profiles of the two managers built here, of their versions, from their sources.
providers="$(hack/providers.sh)"
mkdir -p "$work/profiles/aws-next"
cp -r "$providers/profiles/core" "$providers/profiles/aws" "$work/profiles/"
cp "$work/profiles/aws/metadata.yaml" "$work/profiles/aws-next/"
sed 's/--v=${CAPA_LOGLEVEL:=0}/--v=2/' "$work/profiles/aws/manifests.yaml" >"$work/profiles/aws-next/manifests.yaml"
if cmp -s "$work/profiles/aws/manifests.yaml" "$work/profiles/aws-next/manifests.yaml"; then
  log "the aws profile's log level flag moved"
  exit 1
fi

# glibc and the few libraries the Rust binaries link, as distroless/cc has them.
libs=$(ldd "$work/capi-installer" "$work/capi-controllers" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $2 ~ /^\(/ {print $1}' | sort -u)
lib_files=""
for l in $libs; do
  lib_files+="[\"$l\", \"$(readlink -f "$l")\", 493],"
done
passwd='root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n'
group='root:x:0:\nnonroot:x:65532:\n'
base_layer="{\"comment\": \"glibc and users (as distroless/cc-debian12)\", \"files\": [${lib_files%,}],
  \"text\": [[\"/etc/passwd\", \"$passwd\", 420], [\"/etc/group\", \"$group\", 420]]}"
# A profile folder as a provider image carries it.
profile_layer() {
  cat <<EOF
{"comment": "the provider's image-based profile", "files": [
   ["/capi-operator-manifests/default/metadata.yaml", "$1/metadata.yaml", 420],
   ["/capi-operator-manifests/default/manifests.yaml", "$1/manifests.yaml", 420]]}
EOF
}
# A static Go manager: /manager, run as the non-root user the provider Deployments ask for, and its
# profile.
manager_image() {
  cat <<EOF
{"name": "$1", "config": {"User": "65532:65532", "Entrypoint": ["/manager"]},
 "layers": [{"comment": "$3", "files": [["/manager", "$managers/$2", 493]]}, $(profile_layer "$4")]},
EOF
}
# Every other image of the images ConfigMap: a stand-in that says what it is (no manager, no profile:
# the installer skips an image without one).
other_images() {
  local key image
  while read -r key image; do
    case "$key" in cluster-capi-controllers | aws-cluster-api-controllers) continue ;; esac
    cat <<EOF
{"name": "$image", "config": {"Labels": {"io.capi-installer.stand-in": "no manager or profile of it is built here"}},
 "layers": [{"comment": "a stand-in", "text": [["/stand-in", "$key: a stand-in; no manager or profile of it is built here\\n", 420]]}]},
EOF
  done < <(sed -n '/^data:/,$ s/^  \([a-z0-9-]*\): *\([^ ]*\)$/\1 \2/p' manifests/0000_30_capi-installer_02_images-configmap.yaml)
}

specs="$work/specs.json"
cat >"$specs" <<EOF
[
{"name": "$installer_image",
 "config": {"User": "65532:65532", "Entrypoint": ["/usr/bin/capi-installer"], "Cmd": ["run"],
            "Labels": {"io.openshift.release.operator": "true"}},
 "layers": [$base_layer,
   {"comment": "COPY manifests /manifests", "tree": [["/manifests", "$root/manifests", 420]]},
   {"comment": "COPY capi-installer", "files": [["/usr/bin/capi-installer", "$work/capi-installer", 493]]},
   {"comment": "COPY capi-controllers", "files": [["/usr/bin/capi-controllers", "$work/capi-controllers", 493]]}]},
$(manager_image "$core_image" cluster-api-manager "the Cluster API core manager" "$work/profiles/core")
$(manager_image "$aws_image" aws-manager "the Cluster API AWS provider manager" "$work/profiles/aws")
$(manager_image "$aws_image-next" aws-manager "the Cluster API AWS provider manager" "$work/profiles/aws-next")
$(other_images)
{"name": "$pause_image", "config": {"Entrypoint": ["/pause"]},
 "layers": [{"comment": "the pod sandbox", "files": [["/pause", "$managers/pause", 493]]}]}
]
EOF
start=$(date +%s)
python3 hack/oci_images.py "$out" <"$specs"
rm -rf "$work"
log "wrote $out in $(( $(date +%s) - start ))s"
echo "$out"
