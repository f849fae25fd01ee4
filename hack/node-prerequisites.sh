#!/usr/bin/env bash
# What the real node needs from the machine, from Debian's packages, installed when missing (CI is a
# fresh machine, as root): runc runs the containers (under containerd 2, built from its Go module by
# tools/containerd/build.sh), the CNI plugins give them addresses, iptables carries kube-proxy's Service
# rules, iproute2 and util-linux make the node's namespaces, zstd unpacks the transport ConfigMaps that
# hack/images.sh makes the managers' profiles of.
set -euo pipefail
declare -A wanted=(
  [/usr/sbin/runc]=runc
  [/usr/bin/zstd]=zstd
  [/usr/lib/cni/bridge]=containernetworking-plugins
  [/usr/sbin/iptables]=iptables
  [/usr/sbin/ip]=iproute2
  [/usr/bin/nsenter]=util-linux
)
missing=()
for path in "${!wanted[@]}"; do
  [[ -e "$path" ]] || missing+=("${wanted[$path]}")
done
if (( ${#missing[@]} == 0 )); then
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "node prerequisites: missing ${missing[*]}; install them as root (apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "node prerequisites: installing ${missing[*]} (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
