#!/usr/bin/env python3
"""Writes container images as one OCI image layout, byte for byte the same for the same inputs.

No daemon, no registry, no base image to pull: every layer is an uncompressed tar made here with fixed
owners, modes and times, in sorted order. Each image is given as a JSON spec (on stdin, a list):

    {"name": "registry.ci.openshift.org/openshift:capi-installer",
     "config": {"User": "65532:65532", "Entrypoint": [...], "Cmd": [...], "Labels": {...}},
     "layers": [{"comment": "...", "files": [["/usr/bin/x", "/host/path", 0o755], ...],
                 "tree": [["/manifests", "/host/dir", 0o644]],
                 "text": [["/etc/passwd", "root:x:0:0::/root:/sbin/nologin\\n", 0o644]]}]}

The layout (index.json names every image by its full reference in org.opencontainers.image.ref.name)
is what crates/control-plane's registry serves to containerd on the real node.

usage: oci_images.py OUT_DIR < specs.json
"""

import hashlib
import io
import json
import os
import shutil
import sys
import tarfile

LAYER = "application/vnd.oci.image.layer.v1.tar"
CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
REF_NAME = "org.opencontainers.image.ref.name"


def put_blob(out, data):
    digest = hashlib.sha256(data).hexdigest()
    path = os.path.join(out, "blobs", "sha256", digest)
    if not os.path.exists(path):
        with open(path + ".partial", "wb") as f:
            f.write(data)
        os.replace(path + ".partial", path)
    return {"digest": "sha256:" + digest, "size": len(data)}


def entries(layer):
    """(path in the image, bytes, mode) of every file of a layer spec."""
    found = {}
    for dest, source, mode in layer.get("files", []):
        with open(source, "rb") as f:
            found[dest] = (f.read(), mode)
    for dest, source, mode in layer.get("tree", []):
        for root, dirs, names in os.walk(source):
            dirs.sort()
            for name in sorted(names):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, source)
                with open(path, "rb") as f:
                    found[os.path.join(dest, rel)] = (f.read(), mode)
    for dest, text, mode in layer.get("text", []):
        found[dest] = (text.encode(), mode)
    return found


def tar_layer(layer):
    files = entries(layer)
    dirs = set()
    for path in files:
        parent = os.path.dirname(path)
        while parent not in ("/", ""):
            dirs.add(parent)
            parent = os.path.dirname(parent)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(dirs | set(files)):
            info = tarfile.TarInfo(path.lstrip("/"))
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            if path in files:
                data, mode = files[path]
                info.mode = mode
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
    return buf.getvalue()


def write_image(out, spec):
    layers, diff_ids, history = [], [], []
    for layer in spec["layers"]:
        blob = put_blob(out, tar_layer(layer))
        layers.append({"mediaType": LAYER, **blob})
        diff_ids.append(blob["digest"])
        history.append({"created_by": layer.get("comment", "")})
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                   "WorkingDir": "/", **spec["config"]},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": history,
    }
    config_blob = put_blob(out, canonical(config))
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": {"mediaType": CONFIG, **config_blob},
        "layers": layers,
    }
    blob = put_blob(out, canonical(manifest))
    return {"mediaType": MANIFEST, **blob, "annotations": {REF_NAME: spec["name"]}}


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    specs = json.load(sys.stdin)
    partial = out + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(os.path.join(partial, "blobs", "sha256"))
    manifests = [write_image(partial, spec) for spec in specs]
    with open(os.path.join(partial, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    index = {"schemaVersion": 2, "mediaType": INDEX, "manifests": manifests}
    with open(os.path.join(partial, "index.json"), "wb") as f:
        f.write(canonical(index))
    shutil.rmtree(out, ignore_errors=True)
    os.replace(partial, out)
    for m in manifests:
        print(f"{m['annotations'][REF_NAME]} {m['digest']}", file=sys.stderr)


if __name__ == "__main__":
    main()
