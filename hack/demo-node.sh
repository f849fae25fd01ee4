#!/usr/bin/env bash
# `make demo` on a real node: a control plane and a node (containerd 2, kubelet, kube-proxy, in
# namespaces of their own) with the images built here; the release payload applied as the
# cluster-version operator would (manifests/, webhooks included, the images ConfigMap's references
# pinned to the images' digests as the release tooling pins them); the deployer keeping the installer's
# Deployment with every release image mounted as an image volume, the installer installing core and aws
# from the profiles in those images, and recording the revision in ClusterAPI/cluster; the controllers
# pod running; the real Cluster API core and AWS managers running beside them, answering their webhooks
# through their Services; then a worker machine: a MachineSet shaped like OpenShift's scaled to one, its
# instance made by the AWS provider in an emulated EC2 (moto, tools/moto, inside the node), and back to
# zero. Ctrl-C tears everything down.
# DEMO_ONCE=1: non-interactive, exits 0 once everything is shown, non-zero on a timeout.
# DEMO_SOURCE=transport: the earlier generation instead: the transport ConfigMaps (hack/providers.sh
# makes them with the profiles, from the same sources) in the payload and the deployer told to mount no
# image (--without-image-volumes).
# Everything comes from this repository and the pinned Go modules (tools/): the providers' sources
# (hack/providers.sh), the OpenShift CRDs (tools/openshift-api), the binaries.
# No fixed port on the host: etcd, the API server, the registry and moto listen inside the node's network
# namespace; the one host socket, the API server's proxy, is a free loopback port the kernel picks. Two
# demos (of two work trees) can run at once.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
DEMO_DIR="${DEMO_DIR:-$root/target/demo-node}"
DEMO_ONCE="${DEMO_ONCE:-}"
DEMO_SOURCE="${DEMO_SOURCE:-profiles}"
case "$DEMO_SOURCE" in profiles | transport) ;; *)
  echo "demo: DEMO_SOURCE is profiles (the default) or transport, not $DEMO_SOURCE" >&2
  exit 2
  ;;
esac
TIMEOUT="${DEMO_TIMEOUT:-420}"
target="${CARGO_TARGET_DIR:-$root/target}"
bin="$target/debug"
# The providers' namespace and the installer's, as the release payload names them.
ns=$(sed -n 's/^  name: *//p' manifests/0000_30_capi-installer_00_providers-namespace.yaml | head -1)
installer_ns=$(sed -n 's/^  name: *//p' manifests/0000_30_capi-installer_00_namespace.yaml | head -1)

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
elapsed() { echo "$(( $(date +%s) - start ))s"; }
# Minutes and seconds from $1 to $2 (epoch seconds; $2 now when not given).
since() { local s=$(( ${2:-$(date +%s)} - $1 )); if (( s >= 60 )); then echo "$((s / 60))m$((s % 60))s"; else echo "${s}s"; fi; }
t0=$(date +%s)

command -v go >/dev/null || { echo "demo: go not found; install Go 1.26 or newer (the binaries, kustomize and the providers' sources come from Go modules)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "demo: python3 not found; install Python 3 (hack/ writes the images and the profiles with it)" >&2; exit 1; }
hack/node-prerequisites.sh

# The builds, side by side. Everything below needs them all before the node starts (the control plane,
# the node's containerd and NetworkPolicy agent, the images with the managers and the profiles, the
# OpenShift CRDs), moto seconds after; on an empty 2-core machine one after another they left a core
# idle through every download, link and single-threaded step (23.5 minutes, issue 47). Each is its own
# process group, so that a failure or Ctrl-C ends every one of them (go and cargo children included).
# The Rust binaries the demo runs in one `cargo build`: one feature set for their shared dependencies,
# compiled once (hack/images.sh and hack/providers.sh take them with IMAGES_BUILT=1). Nothing else is
# built: no tests, no other binary. The tools' caches each hold their own lock, so a `make test` or
# another work tree building the same set waits for it instead of building it twice.
builds="$target/demo-builds"
rm -rf "$builds"
mkdir -p "$builds"
declare -A build_pid build_start build_what
build_order=()
build() {
  local name="$1" what="$2"
  shift 2
  build_start[$name]=$(date +%s)
  build_what[$name]="$what"
  build_order+=("$name")
  # The exit code and the end time into NAME.rc when it ends; a failure signals this script at once
  # (USR1), whichever build it is waiting for.
  setsid bash -c '"$@" >"$0.out" 2>"$0.log"; rc=$?; echo "$rc $(date +%s)" >"$0.rc"
    if [ "$rc" != 0 ]; then kill -USR1 '"$$"'; fi' "$builds/$name" "$@" </dev/null &
  build_pid[$name]=$!
}
ticker_pid=""
stop_builds() {
  local name
  if [[ -n "$ticker_pid" ]]; then kill "$ticker_pid" 2>/dev/null || true; wait "$ticker_pid" 2>/dev/null || true; ticker_pid=""; fi
  for name in "${build_order[@]}"; do
    if [[ ! -e "$builds/$name.rc" ]]; then kill -- "-${build_pid[$name]}" 2>/dev/null || true; fi
  done
  for name in "${build_order[@]}"; do wait "${build_pid[$name]}" 2>/dev/null || true; done
}
# A failed build: the other builds ended, its log's tail, one line naming what failed and what to do,
# exit 1.
build_failed() {
  local name="$1" rc="$2"
  stop_builds
  echo "--- the last lines of $builds/$name.log:" >&2
  tail -n 25 "$builds/$name.log" >&2
  echo "demo: building $name failed (${build_what[$name]}, exit $rc); the log's tail is above, the whole log in $builds/$name.log: mend what it names (a missing tool, the network or the module proxy) and run make demo again" >&2
  exit 1
}
# The first failed build, when one signals (USR1).
on_failure() {
  local name rc end
  for name in "${build_order[@]}"; do
    if read -r rc end 2>/dev/null <"$builds/$name.rc" && [[ "$rc" != 0 ]]; then build_failed "$name" "$rc"; fi
  done
}
# Waits for one build; its folder (the build's stdout) into the variable named $2.
await() {
  local name="$1" rc end
  wait "${build_pid[$name]}" 2>/dev/null || true
  read -r rc end 2>/dev/null <"$builds/$name.rc" || { rc=1; end=$(date +%s); }
  if [[ "$rc" != 0 ]]; then build_failed "$name" "$rc"; fi
  printf '   built %-16s in %s\n' "$name" "$(since "${build_start[$name]}" "$end")"
  if [[ -n "${2:-}" ]]; then printf -v "$2" '%s' "$(tail -n 1 "$builds/$name.out")"; fi
}
# Every 30 s while builds run: which are still running and for how long.
progress() {
  local name running tick=""
  trap '[[ -n "$tick" ]] && kill "$tick" 2>/dev/null; exit 0' TERM
  while true; do
    sleep 30 &
    tick=$!
    wait "$tick"
    running=""
    for name in "${build_order[@]}"; do
      [[ -e "$builds/$name.rc" ]] || running+="${running:+, }$name ($(since "${build_start[$name]}"))"
    done
    [[ -n "$running" ]] && echo "   still building: $running"
  done
}
trap 'stop_builds' EXIT
trap 'exit 130' INT TERM
trap on_failure USR1
say "building what the demo runs, side by side (logs: $builds/): the Rust binaries, Kubernetes, the managers, containerd, the NetworkPolicy agent, kustomize, the OpenShift CRDs, moto"
build cargo "cargo build -p control-plane -p capi-installer -p capi-controllers -p manifests-gen" \
  cargo build --locked -p control-plane -p capi-installer -p capi-controllers -p manifests-gen
build control-plane "tools/control-plane/build.sh --without-kwok: Kubernetes and etcd" tools/control-plane/build.sh --without-kwok
build capi-managers "tools/capi-managers/build.sh: the Cluster API core and AWS managers" tools/capi-managers/build.sh
build containerd "tools/containerd/build.sh" tools/containerd/build.sh
build network-policies "tools/network-policies/build.sh" tools/network-policies/build.sh
build kustomize "tools/kustomize/build.sh" tools/kustomize/build.sh
build openshift-api "tools/openshift-api/build.sh: the OpenShift CRDs from github.com/openshift/api" tools/openshift-api/build.sh
build moto "tools/moto/build.sh: moto from PyPI" tools/moto/build.sh
progress &
ticker_pid=$!
# In the order the next steps need them; the images need the managers, kustomize and the Rust binaries.
await kustomize
await openshift-api openshift_crds
await cargo
await capi-managers
phase=$(date +%s)
images="$(IMAGES_BUILT=1 hack/images.sh 2>"$builds/images.log")" || {
  stop_builds
  cat "$builds/images.log" >&2
  echo "demo: hack/images.sh failed (output above; log: $builds/images.log)" >&2
  exit 1
}
echo "   made the images and the providers' profiles (hack/images.sh, hack/providers.sh) in $(since "$phase")"
providers="$target/providers"
await containerd CAPI_CONTAINERD_BIN_DIR
await network-policies CAPI_NETWORK_POLICIES_BIN_DIR
await control-plane cp_bin
await moto moto_bin
stop_builds
trap - EXIT INT TERM USR1
say "built everything in $(since "$t0")"
export CAPI_CONTAINERD_BIN_DIR CAPI_NETWORK_POLICIES_BIN_DIR
kubectl="$cp_bin/kubectl"
export CAPI_CONTROL_PLANE_BIN_DIR="$cp_bin"
export CAPI_OPENSHIFT_CRDS_DIR="$openshift_crds"

node_pid=""
ec2_pid=""
teardown() {
  trap - EXIT INT TERM
  say "tearing down (every process, mount and network device of the node goes with it)"
  if [[ -n "$ec2_pid" ]]; then kill -- "-$ec2_pid" 2>/dev/null || true; wait "$ec2_pid" 2>/dev/null || true; fi
  if [[ -n "$node_pid" ]]; then kill "$node_pid" 2>/dev/null || true; wait "$node_pid" 2>/dev/null || true; fi
}
rm -rf "$DEMO_DIR"
mkdir -p "$DEMO_DIR"
trap teardown EXIT
trap 'exit 130' INT TERM

start=$(date +%s)
say "starting the control plane and a real node in $DEMO_DIR (log: $DEMO_DIR/control-plane.log)"
"$bin/control-plane" run --dir "$DEMO_DIR" --with-node --images "$images" >"$DEMO_DIR/control-plane.log" 2>&1 &
node_pid=$!
until grep -q '^kubeconfig:' "$DEMO_DIR/control-plane.log" 2>/dev/null; do
  if ! kill -0 "$node_pid" 2>/dev/null; then cat "$DEMO_DIR/control-plane.log" >&2; exit 1; fi
  sleep 1
done
export KUBECONFIG="$DEMO_DIR/kubeconfig"
k() { "$kubectl" "$@"; }
apply() { k apply --server-side --force-conflicts --field-manager="$1" -f "$2" >/dev/null; }
k get nodes -o wide
say "node ready in $(elapsed)"

# The emulated EC2 (moto) inside the node's namespaces, on the node's own address at an AWS endpoint's
# port, where the AWS manager's pod reaches it (docs/maintainers/machines.md); its own process group,
# so that the teardown reaches it through nsenter.
region=us-east-1
infra_id=demo
node_ns_pid="$(sed -n 's/^node pid: //p' "$DEMO_DIR/control-plane.log")"
node_ip="$(k get node -o jsonpath='{.items[0].status.addresses[?(@.type=="InternalIP")].address}')"
[[ -n "$node_ns_pid" && -n "$node_ip" ]] || { echo "demo: the control plane named no node pid or address" >&2; exit 1; }
ec2_endpoint="http://$node_ip:443"
in_node() { /usr/bin/nsenter --target="$node_ns_pid" --net --mount --pid -- "$@"; }
ec2() { in_node "$moto_bin/python" "$root/tools/moto/ec2.py" "$@" --endpoint "$ec2_endpoint" --region "$region"; }
mkdir -p "$DEMO_DIR/logs"
setsid /usr/bin/nsenter --target="$node_ns_pid" --net --mount --pid -- \
  "$moto_bin/moto_server" -H "$node_ip" -p 443 >"$DEMO_DIR/logs/moto.log" 2>&1 &
ec2_pid=$!
ec2 wait --timeout 120 >/dev/null
ami="$(ec2 seed --infra-id "$infra_id" --zones a,b,c | python3 -c 'import json, sys; print(json.load(sys.stdin)["ami"])')"
say "the emulated EC2 at $ec2_endpoint (inside the node), with the AWS account OpenShift's installer leaves for $infra_id (image $ami)"

say "what OpenShift leaves: Infrastructure/cluster on AWS, the Machine API and the worker user data"
k apply --server-side --field-manager=openshift-installer -f - >/dev/null <<EOF
apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata:
  name: cluster
spec:
  platformSpec:
    type: AWS
EOF
k patch infrastructure cluster --subresource=status --type=merge -p '{"status":{"platform":"AWS","platformStatus":{"type":"AWS","aws":{"region":"'"$region"'"}},"infrastructureName":"'"$infra_id"'","apiServerURL":"https://api.demo.example.com:6443","apiServerInternalURI":"https://api-int.demo.example.com:6443"}}' >/dev/null
for f in "$openshift_crds"/machine-api/*.yaml; do apply cluster-version-operator "$f"; done
k create namespace openshift-machine-api --dry-run=client -o yaml | apply cluster-version-operator -
# The Cloud Credential Operator's namespace, where the payload's CredentialsRequests go (the operator
# itself is not here: a stand-in below mints the Secret aws's request names).
k create namespace openshift-cloud-credential-operator --dry-run=client -o yaml | apply cluster-version-operator -
k wait --for=condition=Established --timeout=60s crd/machines.machine.openshift.io >/dev/null
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
    value: {"loadBalancers":[{"name":"demo-int","type":"network"}]}
EOF
k -n openshift-machine-api create secret generic worker-user-data \
  --from-literal=userData='{"ignition":{"version":"3.4.0"}}' --dry-run=client -o yaml | apply machine-config-operator -

say "the release payload, in file order, as the cluster-version operator applies it (webhooks included; providers from: $DEMO_SOURCE)"
payload=("$root"/manifests/0000_30_capi-installer_*.yaml)
if [[ "$DEMO_SOURCE" == transport ]]; then
  payload+=("$providers"/transport/0000_30_cluster-api_04_crd.core-cluster-api.yaml
    "$providers"/transport/0000_30_cluster-api_04_cm.core-cluster-api.yaml
    "$providers"/transport/0000_30_cluster-api_04_cm.infrastructure-aws.yaml)
fi
payload+=("$root"/manifests/0000_31_capi-controllers_*.yaml)
# The release tooling pins every image reference to its digest (image-references): here, the images
# ConfigMap's values to the digests of the images the node serves.
digest_of() {
  python3 -c 'import json, sys
for m in json.load(open(sys.argv[1] + "/index.json"))["manifests"]:
    if m["annotations"]["org.opencontainers.image.ref.name"] == sys.argv[2]:
        print(m["digest"])' "$images" "$1"
}
pin_images() {
  local line key ref digest
  while IFS= read -r line; do
    if [[ "$line" =~ ^\ \ ([a-z0-9-]+):\ (registry\.ci\.openshift\.org/openshift):[a-z0-9-]+$ ]]; then
      key="${BASH_REMATCH[1]}"
      ref="${line#*: }"
      digest="$(digest_of "$ref")"
      [[ -n "$digest" ]] || { echo "demo: the node serves no image $ref" >&2; exit 1; }
      line="  $key: ${BASH_REMATCH[2]}@$digest"
    fi
    printf '%s\n' "$line"
  done <"$1"
}
for f in "${payload[@]}"; do
  echo "   $(basename "$f")"
  if grep -q '^    release.openshift.io/delete: "true"' "$f"; then
    # A manifest of removal: the cluster-version operator deletes what it names (on an upgrade;
    # on this new cluster there is nothing to delete).
    k delete --ignore-not-found --wait=false -f "$f" >/dev/null
  elif grep -q '^    release.openshift.io/create-only: "true"' "$f"; then
    # Created when missing, never written again (ClusterAPI/cluster: its status is the installer's).
    k create -f "$f" >/dev/null 2>&1 || k get -f "$f" >/dev/null
  elif [[ "$(basename "$f")" == 0000_30_capi-installer_02_images-configmap.yaml ]]; then
    pin_images "$f" | apply cluster-version-operator -
  elif [[ "$DEMO_SOURCE" == transport && "$(basename "$f")" == 0000_30_capi-installer_04_deployer.yaml ]]; then
    # The transport ConfigMaps are the providers' source: the deployer is told to mount no image,
    # so that the installer does not find core and aws a second time in their images' profiles.
    sed 's|^        - --installer-image=|        - --without-image-volumes\n        - --installer-image=|' "$f" |
      apply cluster-version-operator -
  else
    apply cluster-version-operator "$f"
  fi
  if [[ "$(basename "$f")" == 0000_30_capi-installer_10_credentials-requests.yaml ]]; then
    # The Cloud Credential Operator's part, played here: the Secret aws's request names, where it names
    # it, its shared credentials file's profile pointing the AWS SDK at the emulated EC2.
    request=(k -n openshift-cloud-credential-operator get credentialsrequest openshift-cluster-api-aws -o)
    secret_ns="$("${request[@]}" jsonpath='{.spec.secretRef.namespace}')"
    secret_name="$("${request[@]}" jsonpath='{.spec.secretRef.name}')"
    echo "   (the Cloud Credential Operator's stand-in: Secret $secret_ns/$secret_name)"
    k -n "$secret_ns" create secret generic "$secret_name" \
      --from-literal=aws_access_key_id=demo --from-literal=aws_secret_access_key=demo \
      --from-literal=credentials=$'[default]\naws_access_key_id = demo\naws_secret_access_key = demo\nendpoint_url = '"$ec2_endpoint"$'\n' \
      --dry-run=client -o yaml | apply cloud-credential-operator -
  fi
done

say "installing: the deployer keeps Deployment capi-installer, whose pods (registry.ci.openshift.org/openshift:capi-installer) install"
condition() {
  k get clusteroperator cluster-api -o jsonpath="{.status.conditions[?(@.type==\"$1\")].$2}" 2>/dev/null || true
}
last=""
until [[ "$(condition Available status)" == True ]]; do
  progress="$(condition Progressing message)"
  if [[ "$progress" != "$last" && -n "$progress" ]]; then printf '   [%5s] %s\n' "$(elapsed)" "$progress"; last="$progress"; fi
  if (( $(date +%s) - start > TIMEOUT )); then
    echo "ClusterOperator cluster-api is not Available after ${TIMEOUT}s:" >&2
    k get clusteroperator cluster-api -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' >&2 || true
    k -n "$installer_ns" get pods -o wide >&2 || true
    k -n "$ns" get pods -o wide >&2 || true
    exit 1
  fi
  sleep 2
done
say "Available in $(elapsed) after the node started, $(since "$t0") after the demo started: $(condition Available message)"
k -n "$installer_ns" get deployments,pods -o wide
k -n "$ns" get deployments,pods -o wide
if [[ "$DEMO_SOURCE" == profiles ]]; then
  say "the installer's image volumes (the deployer's): every release image, by digest"
  k -n "$installer_ns" get deployment capi-installer \
    -o jsonpath='{range .spec.template.spec.volumes[?(@.image)]}{"   "}{.name}{"  "}{.image.reference}{"\n"}{end}'
  say "ClusterAPI/cluster: the revisions the installer recorded (each profile by its image's digest)"
  until [[ -n "$(k get clusterapi cluster -o jsonpath='{.status.currentRevision}' 2>/dev/null)" ]]; do
    if (( $(date +%s) - start > TIMEOUT )); then echo "no current revision after ${TIMEOUT}s" >&2; exit 1; fi
    sleep 2
  done
  k get clusterapi cluster -o jsonpath='{"   current: "}{.status.currentRevision}{"\n"}{range .status.revisions[*]}{"   "}{.name} (revision {.revision}, contentID {.contentID}){"\n"}{range .components[*]}{"     "}{.name}: {.image.ref} profile {.image.profile}{"\n"}{end}{end}'
fi

say "the controllers pod's work, accepted by the real webhooks and reconciled by the real core controller"
until [[ "$(k -n "$ns" get cluster.cluster.x-k8s.io demo -o jsonpath='{.status.conditions[?(@.type=="InfrastructureReady")].status}' 2>/dev/null)" == True ]]; do
  if (( $(date +%s) - start > TIMEOUT )); then echo "the Cluster is not InfrastructureReady after ${TIMEOUT}s" >&2; exit 1; fi
  sleep 2
done
k -n "$ns" get awsclusters,clusters.cluster.x-k8s.io
k -n "$ns" get secrets demo-kubeconfig capi-webhook-service-cert capa-webhook-service-cert
echo "   the Cluster read at v1beta1 (through the core conversion webhook): $(k -n "$ns" get clusters.v1beta1.cluster.x-k8s.io demo -o jsonpath='{.apiVersion}')"

say "an invalid Cluster, refused by the core validating webhook"
k create namespace demo --dry-run=client -o yaml | apply demo -
k apply -f - <<'EOF' 2>&1 | sed 's/^/   /' || true
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: invalid
  namespace: demo
spec:
  clusterNetwork:
    pods:
      cidrBlocks: ["not-a-cidr"]
EOF
say "an Ignition-based AWSMachine, accepted by the AWS webhook (EXP_BOOTSTRAP_FORMAT_IGNITION=true by default)"
k apply -f - <<'EOF' | sed 's/^/   /'
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSMachine
metadata:
  name: ignition
  namespace: demo
spec:
  instanceType: m6i.xlarge
  ignition:
    version: "3.4"
    storageType: UnencryptedUserData
EOF
say "a worker machine: a MachineSet as OpenShift makes one (AWSMachineTemplate, Ignition user data), scaled to one"
zone="${region}a"
machineset="$infra_id-worker-$zone"
machine_start=$(date +%s)
k apply --server-side --field-manager=demo -f - >/dev/null <<EOF
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSMachineTemplate
metadata:
  name: $machineset
  namespace: $ns
spec:
  template:
    spec:
      ami: {id: $ami}
      instanceType: m6i.xlarge
      iamInstanceProfile: $infra_id-worker-profile
      ignition: {version: "3.4", storageType: UnencryptedUserData}
      uncompressedUserData: true
      subnet: {filters: [{name: "tag:Name", values: [$infra_id-subnet-private-$zone]}]}
      additionalSecurityGroups:
      - filters: [{name: "tag:Name", values: [$infra_id-node]}]
      - filters: [{name: "tag:Name", values: [$infra_id-lb]}]
      rootVolume: {size: 120, type: gp3, encrypted: true}
      instanceMetadataOptions: {httpTokens: required, httpEndpoint: enabled, httpPutResponseHopLimit: 1, instanceMetadataTags: disabled}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineSet
metadata:
  name: $machineset
  namespace: $ns
  labels: {cluster.x-k8s.io/cluster-name: $infra_id}
spec:
  clusterName: $infra_id
  replicas: 1
  selector:
    matchLabels: {cluster.x-k8s.io/cluster-name: $infra_id, cluster.x-k8s.io/set-name: $machineset}
  template:
    metadata:
      labels: {cluster.x-k8s.io/cluster-name: $infra_id, cluster.x-k8s.io/set-name: $machineset}
    spec:
      clusterName: $infra_id
      bootstrap: {dataSecretName: worker-user-data}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSMachineTemplate, name: $machineset}
      failureDomain: $zone
EOF
machines() { k -n "$ns" get machines.cluster.x-k8s.io -l "cluster.x-k8s.io/set-name=$machineset" "$@"; }
machine_timeout=$((machine_start + TIMEOUT))
# No kubelet runs on the emulated instance: the Node it would register (named as a kubelet on AWS names
# itself, with the Machine's providerID) is created here once the Machine has its address.
until [[ "$(machines -o jsonpath='{.items[*].status.phase}')" == Running ]]; do
  for m in $(machines -o jsonpath='{.items[*].metadata.name}'); do
    provider_id="$(k -n "$ns" get machine.cluster.x-k8s.io "$m" -o jsonpath='{.spec.providerID}')"
    ip="$(k -n "$ns" get machine.cluster.x-k8s.io "$m" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')"
    if [[ -n "$provider_id" && -n "$ip" ]]; then
      node="ip-${ip//./-}.$region.compute.internal"
      k get node "$node" >/dev/null 2>&1 || k apply --server-side --field-manager=demo -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $node
  labels: {node-role.kubernetes.io/worker: "", capi-installer.demo/worker: "true"}
spec:
  providerID: $provider_id
EOF
    fi
  done
  if (( $(date +%s) > machine_timeout )); then
    echo "demo: the Machine is not Running after ${TIMEOUT}s:" >&2
    machines -o wide >&2 || true
    k -n "$ns" get awsmachines -o jsonpath='{range .items[*]}{.metadata.name}{": "}{range .status.conditions[*]}{.type}={.status} {.reason} {.message}; {end}{"\n"}{end}' >&2 || true
    exit 1
  fi
  sleep 2
done
say "Machine Running in $(( $(date +%s) - machine_start ))s"
machines -o custom-columns='MACHINE:.metadata.name,PHASE:.status.phase,PROVIDERID:.spec.providerID,NODE:.status.nodeRef.name'
ec2 instances | python3 -c 'import json, sys
for i in json.load(sys.stdin):
    print("   instance %s: %s in %s, %s, image %s, Name %s" % (i["id"], i["state"], i["zone"], i["type"], i["image"], i["tags"].get("Name")))'

say "scaled back to zero: the Machine deleted, its instance terminated"
k -n "$ns" scale machineset.cluster.x-k8s.io "$machineset" --replicas=0 >/dev/null
until [[ -z "$(machines -o jsonpath='{.items[*].metadata.name}')" ]]; do
  if (( $(date +%s) > machine_timeout )); then echo "demo: the Machine is not gone after ${TIMEOUT}s" >&2; exit 1; fi
  sleep 2
done
# OpenShift's cloud node lifecycle controller removes a terminated instance's Node; none runs here.
k delete node -l capi-installer.demo/worker=true --wait=false >/dev/null
ec2 instances | python3 -c 'import json, sys
left = [i["id"] for i in json.load(sys.stdin) if i["state"] != "terminated"]
print("   instances left:", ", ".join(left) if left else "none (every instance terminated)")
sys.exit(1 if left else 0)'
say "the machine step took $(( $(date +%s) - machine_start ))s"

echo
"$bin/capi-installer" status --kubeconfig "$KUBECONFIG" || true
echo
say "reach the cluster"
echo "   export KUBECONFIG=$KUBECONFIG"
echo "   $kubectl -n $installer_ns get pods -o wide   # the installer"
echo "   $kubectl -n $ns get pods -o wide   # the providers and the controllers pod"
echo "   $kubectl -n $ns logs deploy/capa-controller-manager"
echo "   node logs: $DEMO_DIR/logs/ (kubelet, containerd, kube-proxy, ...; moto.log: the emulated EC2's requests)"
echo
if [[ -n "$DEMO_ONCE" ]]; then
  say "done in $(elapsed)"
  exit 0
fi
say "running; Ctrl-C tears everything down"
wait "$node_pid"
