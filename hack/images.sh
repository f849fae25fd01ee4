#!/usr/bin/env bash
# Builds the images the real node runs, without a container engine or a registry, into one OCI image
# layout ($CARGO_TARGET_DIR/images, printed on stdout) that the node's registry serves to containerd:
#
#   registry.ci.openshift.org/openshift:capi-installer       this repository: the installer and the
#                                                            controllers pod (what the Containerfile builds)
#   <the images ConfigMap's cluster-capi-controllers>        the real Cluster API core manager
#   <the images ConfigMap's aws-cluster-api-controllers>     the real AWS provider manager
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
# A static Go manager: /manager, run as the non-root user the provider Deployments ask for.
manager_image() {
  cat <<EOF
{"name": "$1", "config": {"User": "65532:65532", "Entrypoint": ["/manager"]},
 "layers": [{"comment": "$3", "files": [["/manager", "$managers/$2", 493]]}]},
EOF
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
$(manager_image "$core_image" cluster-api-manager "the Cluster API core manager")
$(manager_image "$aws_image" aws-manager "the Cluster API AWS provider manager")
{"name": "$pause_image", "config": {"Entrypoint": ["/pause"]},
 "layers": [{"comment": "the pod sandbox", "files": [["/pause", "$managers/pause", 493]]}]}
]
EOF
start=$(date +%s)
python3 hack/oci_images.py "$out" <"$specs"
rm -rf "$work"
log "wrote $out in $(( $(date +%s) - start ))s"
echo "$out"
