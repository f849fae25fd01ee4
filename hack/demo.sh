#!/usr/bin/env bash
# The main job: a local control plane (etcd, kube-apiserver, controller-manager, scheduler, KWOK) with
# the OpenShift config CRDs, Infrastructure/cluster on PLATFORM (default AWS), the release payload's
# core CRD manifest and transport ConfigMaps (core and aws made from their pinned modules by
# hack/providers.sh, gcp from examples/providers), and the installer installing the providers, shown
# phase by phase, then the controllers pod creating the InfraCluster, Cluster, kubeconfig and user data. Ctrl-C
# tears everything down. DEMO_ONCE=1: non-interactive, exits 0 after the status table, or
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
# The providers' namespace and the installer's, as the release payload names them.
ns=$(sed -n 's/^  name: *//p' manifests/0000_30_capi-installer_00_providers-namespace.yaml | head -1)
installer_ns=$(sed -n 's/^  name: *//p' manifests/0000_30_capi-installer_00_namespace.yaml | head -1)

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

say "building (cargo build -p control-plane -p capi-installer -p capi-controllers -p manifests-gen)"
cargo build --locked -q -p control-plane -p capi-installer -p capi-controllers -p manifests-gen
cargo build --locked -q -p capi-cluster-controllers --example without_webhooks
cp_bin="$(tools/control-plane/build.sh)"
export CAPI_CONTROL_PLANE_BIN_DIR="$cp_bin"
kubectl="$cp_bin/kubectl"

installer_pid=""
controllers_pid=""
teardown() {
  trap - EXIT INT TERM
  say "tearing down"
  for pid in $controllers_pid $installer_pid; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
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
# What the controllers pod derives from: the infrastructure name, the internal API endpoint and the
# platform's region (and project on GCP).
case "$PLATFORM" in
  AWS) platform_status='"aws":{"region":"us-east-1"}' ;;
  GCP) platform_status='"gcp":{"region":"us-central1","projectID":"demo-project"}' ;;
  *) platform_status='' ;;
esac
k patch infrastructure cluster --subresource=status --type=merge \
  -p "{\"status\":{\"platform\":\"$PLATFORM\",\"platformStatus\":{\"type\":\"$PLATFORM\"${platform_status:+,$platform_status}},\"infrastructureName\":\"demo\",\"apiServerInternalURI\":\"https://api-int.demo.example.com:6443\"}}" >/dev/null
for n in "$ns" "$installer_ns"; do
  k create namespace "$n" --dry-run=client -o yaml | k apply --server-side --field-manager=cluster-version-operator -f - >/dev/null
done
# Each provider's identity and its RBAC ceiling, as the release ships them: the installer writes each
# provider's objects as that identity (impersonated; here from the demo's administrator credentials).
say "the providers' identities (manifests/0000_30_capi-installer_03_ceiling.yaml)"
k apply --server-side --field-manager=cluster-version-operator -f "$root/manifests/0000_30_capi-installer_03_ceiling.yaml" >/dev/null

payload="$DEMO_DIR/payload"
mkdir -p "$payload"
say "release payload: core and aws made from their pinned modules by hack/providers.sh (kustomize, the overlays in providers/, manifests-gen); gcp from examples/providers/gcp"
# manifests-gen is built above (IMAGES_BUILT: hack/providers.sh builds nothing of this tree).
providers="$(IMAGES_BUILT=1 hack/providers.sh)"
cp "$providers"/transport/*.yaml "$payload/"
# A small example for a second platform (no GCP manager is pinned here): PLATFORM=GCP installs it.
# shellcheck disable=SC1091
source examples/providers/gcp/provider.env
mkdir -p "$DEMO_DIR/gcp"
"$bin/manifests-gen" --base-path "$DEMO_DIR/gcp" --manifests-path "$payload" \
  --provider-name "$NAME" --provider-type "$TYPE" --provider-version "$VERSION" \
  --components examples/providers/gcp/components.yaml --metadata examples/providers/gcp/metadata.yaml \
  2>"$DEMO_DIR/gcp/manifests-gen.log" || { cat "$DEMO_DIR/gcp/manifests-gen.log" >&2; exit 1; }
# KWOK runs no containers: nothing would answer the providers' admission webhooks, and with
# failurePolicy Fail every Cluster and InfraCluster would be refused. The demo's payload goes without them.
say "removing the providers' admission webhooks from the payload (no webhook server runs under KWOK)"
"$target/debug/examples/without_webhooks" "$payload"/*_cm.*.yaml
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
  --namespace "$ns" --installer-namespace "$installer_ns" --instance capi-installer-demo --http-addr 127.0.0.1:0 --metrics-addr 127.0.0.1:0 >"$DEMO_DIR/installer.log" 2>&1 &
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

say "the controllers pod: its ServiceAccounts, RBAC and admission policies (manifests/0000_31_capi-controllers_0[0125]_*)"
k create namespace openshift-machine-api --dry-run=client -o yaml | k apply --server-side --field-manager=cluster-version-operator -f - >/dev/null
for f in manifests/0000_31_capi-controllers_0[0125]_*.yaml; do
  k apply --server-side --field-manager=cluster-version-operator -f "$f" >/dev/null
done
say "what OpenShift's installer leaves: the Machine API CRDs (github.com/openshift/api), a control-plane Machine, the worker user data"
for f in "$(tools/openshift-api/build.sh)"/machine-api/*.yaml; do
  k apply --server-side --field-manager=cluster-version-operator -f "$f" >/dev/null
done
k wait --for=condition=Established --timeout=60s crd/machines.machine.openshift.io >/dev/null
case "$PLATFORM" in
  AWS) provider_spec='{"loadBalancers":[{"name":"demo-int","type":"network"},{"name":"demo-ext","type":"network"}]}'; infra_kind=awsclusters ;;
  GCP) provider_spec='{"projectID":"demo-project","networkInterfaces":[{"network":"demo-network"}]}'; infra_kind=gcpclusters ;;
  *) provider_spec='{}'; infra_kind="" ;;
esac
k apply --server-side --field-manager=openshift-installer -f - >/dev/null <<EOF
apiVersion: machine.openshift.io/v1beta1
kind: Machine
metadata:
  name: demo-master-0
  namespace: openshift-machine-api
  labels:
    machine.openshift.io/cluster-api-machine-role: master
    machine.openshift.io/cluster-api-machine-type: master
spec:
  providerSpec:
    value: $provider_spec
EOF
k -n openshift-machine-api create secret generic worker-user-data \
  --from-literal=userData='{"ignition":{"version":"3.2.0"}}' --dry-run=client -o yaml \
  | k apply --server-side --field-manager=machine-config-operator -f - >/dev/null

# The controllers run as their own ServiceAccount, with exactly the RBAC shipped in manifests/.
controllers_kubeconfig="$DEMO_DIR/kubeconfig-capi-controllers"
cp "$KUBECONFIG" "$controllers_kubeconfig"
token="$(k -n "$ns" create token capi-controllers --duration=24h)"
KUBECONFIG="$controllers_kubeconfig" "$kubectl" config set-credentials capi-controllers --token="$token" >/dev/null
KUBECONFIG="$controllers_kubeconfig" "$kubectl" config set-context --current --user=capi-controllers >/dev/null
say "starting the controllers as ServiceAccount capi-controllers (log: $DEMO_DIR/controllers.log)"
"$bin/capi-controllers" run --kubeconfig "$controllers_kubeconfig" --instance capi-controllers-demo \
  --http-addr 127.0.0.1:0 --metrics-addr 127.0.0.1:0 >"$DEMO_DIR/controllers.log" 2>&1 &
controllers_pid=$!
start=$(date +%s)
seen=0
while :; do
  if ! kill -0 "$controllers_pid" 2>/dev/null; then
    echo "the controllers exited; their log:" >&2
    tail -n 30 "$DEMO_DIR/controllers.log" >&2
    exit 1
  fi
  # Each object written and each controller that degrades, from the controllers' log.
  lines=$(grep -c ' applied\| degraded' "$DEMO_DIR/controllers.log" || true)
  if (( lines > seen )); then
    grep ' applied\| degraded' "$DEMO_DIR/controllers.log" | tail -n +$((seen + 1)) \
      | sed -E 's/\x1b\[[0-9;]*m//g; s/^[^ ]+ +[A-Z]+ [^ ]+: //' | sed 's/^/   /'
    seen=$lines
  fi
  available=0
  for c in InfraCluster CoreCluster Kubeconfig SecretSync; do
    if [[ "$(condition "${c}ControllerAvailable" status)" == True ]]; then available=$((available + 1)); fi
  done
  if (( available == 4 )); then break; fi
  if (( $(date +%s) - start > TIMEOUT )); then
    echo "the controllers are not all Available after ${TIMEOUT}s:" >&2
    k get clusteroperator cluster-api -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' >&2 || true
    exit 1
  fi
  sleep 1
done
say "Cluster API sees this cluster as its own workload cluster (in $(( $(date +%s) - start ))s)"
k -n "$ns" get ${infra_kind:+$infra_kind,}clusters.cluster.x-k8s.io
k -n "$ns" get secrets demo-kubeconfig worker-user-data
echo
"$bin/capi-installer" status --kubeconfig "$KUBECONFIG"
echo
say "reach the cluster"
echo "   export KUBECONFIG=$KUBECONFIG"
echo "   $kubectl get deployments,validatingwebhookconfigurations -A -l app.kubernetes.io/managed-by=capi-installer"
echo "   $kubectl -n $ns get clusters.cluster.x-k8s.io,secrets -l app.kubernetes.io/managed-by=capi-controllers"
echo "   metrics: curl $(grep -o 'addr=[0-9.:]*' "$DEMO_DIR/installer.log" | head -1 | cut -d= -f2)/metrics"

if [[ -n "$DEMO_ONCE" ]]; then
  exit 0
fi
say "running; Ctrl-C tears everything down"
wait "$installer_pid" "$controllers_pid"
