#!/usr/bin/env bash
# The main job: a local control plane (etcd, kube-apiserver, controller-manager, scheduler, KWOK) with
# the OpenShift config CRDs, Infrastructure/cluster on PLATFORM (default AWS), the release payload's
# core CRD manifest and transport ConfigMaps, and the installer installing the providers, shown phase by
# phase. Ctrl-C tears everything down. DEMO_ONCE=1: non-interactive, exits 0 after the status table, or
# non-zero when the ClusterOperator is not Available within 3 minutes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
PLATFORM="${PLATFORM:-AWS}"
DEMO_DIR="${DEMO_DIR:-$root/target/demo}"
DEMO_ONCE="${DEMO_ONCE:-}"
TIMEOUT="${DEMO_TIMEOUT:-180}"
target="${CARGO_TARGET_DIR:-$root/target}"
bin="$target/debug"
ns=openshift-cluster-api

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

say "building (cargo build -p control-plane -p capi-installer -p manifests-gen)"
cargo build --locked -q -p control-plane -p capi-installer -p manifests-gen
cp_bin="$(tools/control-plane/build.sh)"
export CAPI_CONTROL_PLANE_BIN_DIR="$cp_bin"
kubectl="$cp_bin/kubectl"

installer_pid=""
teardown() {
  trap - EXIT INT TERM
  say "tearing down"
  if [[ -n "$installer_pid" ]]; then kill "$installer_pid" 2>/dev/null || true; wait "$installer_pid" 2>/dev/null || true; fi
  "$bin/control-plane" down --dir "$DEMO_DIR" >/dev/null 2>&1 || true
}
"$bin/control-plane" down --dir "$DEMO_DIR" >/dev/null 2>&1 || true
rm -rf "$DEMO_DIR"
mkdir -p "$DEMO_DIR"
trap teardown EXIT
trap 'exit 130' INT TERM

say "starting the control plane with workloads in $DEMO_DIR"
"$bin/control-plane" up --dir "$DEMO_DIR" --with-workloads
export KUBECONFIG="$DEMO_DIR/kubeconfig"
k() { "$kubectl" "$@"; }

say "Infrastructure/cluster: platform $PLATFORM"
k apply --server-side --field-manager=openshift-installer -f - >/dev/null <<EOF
apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata:
  name: cluster
spec:
  platformSpec:
    type: $PLATFORM
EOF
k patch infrastructure cluster --subresource=status --type=merge \
  -p "{\"status\":{\"platform\":\"$PLATFORM\",\"platformStatus\":{\"type\":\"$PLATFORM\"},\"infrastructureName\":\"demo\"}}" >/dev/null
k create namespace "$ns" --dry-run=client -o yaml | k apply --server-side --field-manager=cluster-version-operator -f - >/dev/null

fixtures="${DEMO_FIXTURES:-$root/../shared/fixtures/transport-configmaps}"
payload="$DEMO_DIR/payload"
mkdir -p "$payload"
if [[ -d "$fixtures" ]]; then
  say "release payload: transport ConfigMaps from ../shared/fixtures/transport-configmaps"
  cp "$fixtures"/*.yaml "$payload/"
else
  say "release payload: ../shared/fixtures is absent; generating ConfigMaps from examples/providers with manifests-gen"
  for p in core aws gcp; do
    # shellcheck disable=SC1090
    source "examples/providers/$p/provider.env"
    "$bin/manifests-gen" --base-path "examples/providers/$p" --manifests-path "$payload" \
      --provider-name "$NAME" --provider-type "$TYPE" --provider-version "$VERSION" \
      --components "examples/providers/$p/components.yaml" --metadata "examples/providers/$p/metadata.yaml"
  done
  rm -rf examples/providers/*/openshift
fi
# CRDs the payload applies directly come first, as CVO would apply them.
for f in "$payload"/*_crd.*.yaml; do [[ -e "$f" ]] && k apply --server-side --field-manager=cluster-version-operator -f "$f" >/dev/null; done
for f in "$payload"/*_cm.*.yaml; do k apply --server-side --field-manager=cluster-version-operator -f "$f" >/dev/null; done
k get configmaps -n "$ns" -L provider.cluster.x-k8s.io/name,provider.cluster.x-k8s.io/type,provider.cluster.x-k8s.io/version

images="$DEMO_DIR/images.json"
cat > "$images" <<'EOF'
{
  "cluster-capi-controllers": "quay.io/openshift/origin-cluster-capi-controllers:4.21",
  "aws-cluster-api-controllers": "quay.io/openshift/origin-aws-cluster-api-controllers:4.21",
  "gcp-cluster-api-controllers": "quay.io/openshift/origin-gcp-cluster-api-controllers:4.21",
  "azure-cluster-api-controllers": "quay.io/openshift/origin-azure-cluster-api-controllers:4.21",
  "vsphere-cluster-api-controllers": "quay.io/openshift/origin-vsphere-cluster-api-controllers:4.21",
  "openstack-cluster-api-controllers": "quay.io/openshift/origin-openstack-cluster-api-controllers:4.21",
  "ibmcloud-cluster-api-controllers": "quay.io/openshift/origin-ibmcloud-cluster-api-controllers:4.21",
  "baremetal-cluster-api-controllers": "quay.io/openshift/origin-baremetal-cluster-api-controllers:4.21",
  "kube-rbac-proxy": "quay.io/openshift/origin-kube-rbac-proxy:4.21"
}
EOF

say "starting the installer (log: $DEMO_DIR/installer.log)"
RELEASE_VERSION=4.21.0-demo "$bin/capi-installer" run --kubeconfig "$KUBECONFIG" --images-json "$images" \
  --leader-elect=false --http-addr 127.0.0.1:0 --metrics-addr 127.0.0.1:0 >"$DEMO_DIR/installer.log" 2>&1 &
installer_pid=$!

say "installing (progress from ClusterOperator cluster-api and the installer's log)"
condition() {
  k get clusteroperator cluster-api -o jsonpath="{.status.conditions[?(@.type==\"$1\")].$2}" 2>/dev/null || true
}
start=$(date +%s)
last=""
seen=0
while :; do
  if ! kill -0 "$installer_pid" 2>/dev/null; then
    echo "the installer exited; its log:" >&2
    tail -n 30 "$DEMO_DIR/installer.log" >&2
    exit 1
  fi
  # Phase-by-phase progress: each apply the installer logs, then the ClusterOperator's message.
  lines=$(grep -c ' applied\| pruned\|provider failed' "$DEMO_DIR/installer.log" || true)
  if (( lines > seen )); then
    grep ' applied\| pruned\|provider failed' "$DEMO_DIR/installer.log" | tail -n +$((seen + 1)) \
      | sed -E 's/\x1b\[[0-9;]*m//g; s/^[^ ]+ +[A-Z]+ [^ ]+: //' | sed 's/^/   /'
    seen=$lines
  fi
  progress="$(condition Progressing status) $(condition Progressing message)"
  if [[ "$progress" != "$last" ]]; then
    printf '   [%3ss] Progressing=%s\n' "$(( $(date +%s) - start ))" "$progress"
    last="$progress"
  fi
  if [[ "$(condition Available status)" == True && "$(condition Progressing status)" == False ]]; then
    break
  fi
  if (( $(date +%s) - start > TIMEOUT )); then
    echo "ClusterOperator cluster-api is not Available after ${TIMEOUT}s:" >&2
    k get clusteroperator cluster-api -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' >&2 || true
    exit 1
  fi
  sleep 1
done

say "installed in $(( $(date +%s) - start ))s"
"$bin/capi-installer" status --kubeconfig "$KUBECONFIG"
echo
say "reach the cluster"
echo "   export KUBECONFIG=$KUBECONFIG"
echo "   $kubectl get deployments,validatingwebhookconfigurations -A -l app.kubernetes.io/managed-by=capi-installer"
echo "   metrics: curl $(grep -o 'addr=[0-9.:]*' "$DEMO_DIR/installer.log" | head -1 | cut -d= -f2)/metrics"

if [[ -n "$DEMO_ONCE" ]]; then
  exit 0
fi
say "running; Ctrl-C tears everything down"
wait "$installer_pid"
