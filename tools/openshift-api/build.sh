#!/usr/bin/env bash
# The OpenShift CRDs the control plane and the demos load, from the pinned Go module
# github.com/openshift/api (its generated CRD manifests; fetched through the Go module proxy and checked
# against the hash pinned here, as go.sum would), copied into a cache outside the work tree, in a folder
# named by the version and a digest of this file. Prints that folder on stdout, which holds:
#   openshift/     what the cluster-version operator and the config operator install before any
#                  operator runs: ClusterOperator, ClusterVersion, FeatureGate, Infrastructure, Proxy
#                  (config.openshift.io/v1) and ClusterAPI (operator.openshift.io/v1alpha1)
#   machine-api/   the Machine API's Machine, MachineSet (machine.openshift.io/v1beta1) and
#                  ControlPlaneMachineSet (v1)
# (the feature-set variants of the Default one). Does nothing when the folder is there.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module=github.com/openshift/api
version=v0.0.0-20260420151639-34e60874783e
sum=h1:ENxXUo0uksvseiBAoOcL9wdEWtueEpu84RE8Hm0q3uY=
openshift=(
  config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusteroperators.crd.yaml
  config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml
  config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_featuregates.crd.yaml
  config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_infrastructures-Default.crd.yaml
  config/v1/zz_generated.crd-manifests/0000_03_config-operator_01_proxies.crd.yaml
  operator/v1alpha1/zz_generated.crd-manifests/0000_30_cluster-api_01_clusterapis.crd.yaml
)
machine_api=(
  machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machines-Default.crd.yaml
  machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machinesets-Default.crd.yaml
  machine/v1/zz_generated.crd-manifests/0000_10_control-plane-machine-set_01_controlplanemachinesets-Default.crd.yaml
)
log() { echo "openshift-api: $*" >&2; }

digest=$(sha256sum "$here/build.sh" | cut -c1-12)
cache_root="${CAPI_OPENSHIFT_API_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/capi-installer/openshift-api}"
out="$cache_root/api-${version}_${digest}"
crds="$out/crds"
if [[ -d "$crds" ]]; then
  echo "$crds"
  exit 0
fi
command -v go >/dev/null || { log "go not found; install Go 1.26 or newer (the OpenShift CRDs come from a Go module)"; exit 1; }
command -v python3 >/dev/null || { log "python3 not found; install Python 3"; exit 1; }
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
if [[ -d "$crds" ]]; then
  echo "$crds"
  exit 0
fi

# Outside any module: the download is checked against the checksum database; the hash here pins it.
if ! json="$(cd "$out" && GOFLAGS=-mod=mod go mod download -json "$module@$version")"; then
  log "the Go module proxy did not give $module@$version: $(printf '%s' "$json" | python3 -c 'import json, sys
print(json.load(sys.stdin).get("Error", "no detail").splitlines()[0])' 2>/dev/null || echo "no detail") (GOPROXY=$(go env GOPROXY))"
  exit 1
fi
read -r dir got < <(printf '%s' "$json" | python3 -c 'import json, sys; m = json.load(sys.stdin); print(m["Dir"], m["Sum"])')
[[ "$got" == "$sum" ]] || { log "$module@$version has hash $got, pinned $sum"; exit 1; }

staging="$out/crds.partial"
rm -rf "$staging"
mkdir -p "$staging/openshift" "$staging/machine-api"
for f in "${openshift[@]}"; do cp "$dir/$f" "$staging/openshift/"; done
for f in "${machine_api[@]}"; do cp "$dir/$f" "$staging/machine-api/"; done
chmod -R u+w "$staging"
mv "$staging" "$crds"
log "the CRDs of $module@$version in $crds"
echo "$crds"
