#!/usr/bin/env python3
"""Writes the image-based profile of a provider whose manager the real node runs, from the transport
ConfigMap of the same version (hack/providers.sh makes that ConfigMap with manifests-gen from the
provider's pinned module, the version tools/capi-managers builds; the image-based generation of the
reference reads a fork's newer overlay, of newer versions whose flags and feature gates those managers
refuse). The profile is what the provider image of that version would carry: OUT/manifests.yaml (the
components, the provider's image placeholder replaced by its selfImageRef) and OUT/metadata.yaml
(name, installOrder, ocpPlatform, selfImageRef, attributes), as the reference's generator writes them.

usage: profile_from_transport.py CONFIGMAP.yaml SELF_IMAGE_REF [OCP_PLATFORM] OUT_DIR
"""

import base64
import re
import subprocess
import sys

# The transport format's image placeholder of an infrastructure provider (the installer replaces it by
# the images ConfigMap's <provider>-cluster-api-controllers).
PLACEHOLDER = "to.be/replaced:v99"


def field(text, key, source):
    """The one-line value of `key` in the ConfigMap (the transport format's labels and binaryData are
    single lines; only the standard library here, no YAML reader)."""
    found = re.search(r"^ +" + re.escape(key) + r": *(\S+)$", text, re.MULTILINE)
    if not found:
        sys.exit(f"{source}: no {key}")
    return found.group(1).strip("'\"")


def components(text, source):
    """The components of the zstd form (core's and aws's ConfigMaps are over 950,000 bytes)."""
    packed = field(text, "components-zstd", source)
    return subprocess.run(
        ["zstd", "-d", "-c"], input=base64.b64decode(packed), check=True, capture_output=True
    ).stdout.decode()


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    source, self_image = sys.argv[1], sys.argv[2]
    platform = sys.argv[3] if len(sys.argv) == 5 else None
    out = sys.argv[-1]
    with open(source) as f:
        cm = f.read()
    kind = field(cm, "provider.cluster.x-k8s.io/type", source)
    name = field(cm, "provider.cluster.x-k8s.io/name", source)
    version = field(cm, "provider.cluster.x-k8s.io/version", source)
    text = components(cm, source).replace(PLACEHOLDER, self_image)
    if self_image not in text:
        sys.exit(f"{source}: no image {self_image} or {PLACEHOLDER} in the components")
    # The reference's generator's fields, in its order; installOrder as the reference's: core 10,
    # infrastructure 20.
    metadata = (
        f"attributes:\n  type: {kind}\n  version: {version}\n"
        f"installOrder: {10 if kind == 'core' else 20}\n"
        f"name: {name if kind == 'core' else 'cluster-api-provider-' + name}\n"
        + (f"ocpPlatform: {platform}\n" if platform else "")
        + f"selfImageRef: {self_image}\n"
    )
    with open(f"{out}/manifests.yaml", "w") as f:
        f.write(text)
    with open(f"{out}/metadata.yaml", "w") as f:
        f.write(metadata)


if __name__ == "__main__":
    main()
