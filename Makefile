# The two commands of the README: `make demo` (the main job) and `make test` (every check CI runs).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo

.PHONY: test demo demo-kwok fuzz control-plane-bin capi-managers-bin containerd-bin network-policies-bin moto images providers node-prerequisites prerequisites bin

prerequisites:
	@command -v $(CARGO) >/dev/null || { echo "make: cargo not found; install Rust (rustup) 1.95 or newer" >&2; exit 1; }
	@command -v go >/dev/null || { echo "make: go not found; install Go 1.26 or newer (the control-plane binaries are built from Go modules)" >&2; exit 1; }
	@command -v python3 >/dev/null || { echo "make: python3 not found; install Python 3 (the node's images and the providers' profiles are written by scripts in hack/)" >&2; exit 1; }

# The binaries alone, release build, without the control plane (no Go, no Kubernetes build): into
# target/release/ (or $CARGO_TARGET_DIR/release/). `make bin BINARIES=manifests-gen` for one of them.
BINARIES ?= manifests-gen capi-installer capi-controllers
bin:
	@command -v $(CARGO) >/dev/null || { echo "make: cargo not found; install Rust (rustup) 1.95 or newer" >&2; exit 1; }
	$(CARGO) build --release --locked $(addprefix -p ,$(BINARIES))

# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and kwok from the Go modules
# pinned in tools/control-plane, once; later runs find them in the cache and return at once.
control-plane-bin: prerequisites
	@tools/control-plane/build.sh >/dev/null

# The real node's distribution packages (runc, CNI plugins, iptables, zstd), installed when missing.
node-prerequisites:
	@hack/node-prerequisites.sh

# The real node's containerd 2 (containerd, ctr, the runc shim) from the Go module pinned in
# tools/containerd, once (cached like the control-plane binaries).
containerd-bin: prerequisites
	@tools/containerd/build.sh >/dev/null

# The real Cluster API core and AWS managers and the pod sandbox, from the Go modules pinned in
# tools/capi-managers, once (cached like the control-plane binaries).
capi-managers-bin: prerequisites
	@tools/capi-managers/build.sh >/dev/null

# The real node's NetworkPolicy agent (kube-network-policies, pinned in tools/network-policies), once
# (cached like the control-plane binaries).
network-policies-bin: prerequisites
	@tools/network-policies/build.sh >/dev/null

# The emulated EC2 of the machine tests (moto, from PyPI) in a cached venv (tools/moto/build.sh).
moto:
	@tools/moto/build.sh >/dev/null

# The providers' parts of the release payload (transport ConfigMaps, image-based profiles) made from
# the core and AWS providers' pinned modules with the overlays in providers/ (hack/providers.sh), into
# $(CARGO_TARGET_DIR)/providers.
providers: prerequisites
	@hack/providers.sh >/dev/null

# The real node's images (the project's, the managers', the sandbox) as an OCI layout in
# $(CARGO_TARGET_DIR)/images (hack/images.sh).
images: capi-managers-bin
	@hack/images.sh >/dev/null

# The Go builds (the control plane and the managers: minutes each, the first time; containerd; the
# NetworkPolicy agent; kustomize) and moto's install run in the background beside the Rust checks and
# builds, so the cores are never idle while one of them links; build.sh's lock makes the later calls
# wait for them (and fail with their output if they failed). hack/images.sh waits for the managers the same way, the real node
# for containerd.
test: prerequisites node-prerequisites
	@mkdir -p target
	@tools/capi-managers/build.sh >target/capi-managers-build.log 2>&1 &
	@tools/control-plane/build.sh >target/control-plane-build.log 2>&1 &
	@tools/containerd/build.sh >target/containerd-build.log 2>&1 &
	@tools/network-policies/build.sh >target/network-policies-build.log 2>&1 &
	@tools/moto/build.sh >target/moto-build.log 2>&1 &
	@tools/kustomize/build.sh >target/kustomize-build.log 2>&1 &
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) test --workspace --locked --no-run -q
	@tools/control-plane/build.sh >/dev/null || { cat target/control-plane-build.log >&2; exit 1; }
	@tools/network-policies/build.sh >/dev/null || { cat target/network-policies-build.log >&2; exit 1; }
	@tools/kustomize/build.sh >/dev/null || { cat target/kustomize-build.log >&2; exit 1; }
	IMAGES_BUILT=1 hack/images.sh >/dev/null
	DEMO_ONCE=1 hack/demo.sh
	@tools/containerd/build.sh >/dev/null || { cat target/containerd-build.log >&2; exit 1; }
	@tools/moto/build.sh >/dev/null || { cat target/moto-build.log >&2; exit 1; }
	CAPI_CONTROL_PLANE_BIN_DIR="$$(tools/control-plane/build.sh)" CAPI_MOTO_BIN_DIR="$$(tools/moto/build.sh)" hack/test.sh

# The main job on a real node (hack/demo-node.sh): the release payload applied as the cluster-version
# operator would, the installer and the real providers running as pods, core and aws installed from
# the profiles in their images (image volumes). DEMO_ONCE=1 to exit at the end; DEMO_SOURCE=transport
# to install from the transport ConfigMaps instead. The script builds what it runs, side by side (the
# Go builds, moto and one cargo build at once), and prints each build's time.
demo: prerequisites node-prerequisites
	hack/demo-node.sh

# The demo on KWOK (a simulated node: no container runs, the providers' webhooks are dropped); quicker.
# PLATFORM=GCP to change the platform; DEMO_ONCE=1 to exit after the status table.
demo-kwok: control-plane-bin
	hack/demo.sh

# Longer fuzzing of the untrusted-input readers (transport ConfigMap decoder, YAML reader) than the
# 128 cases per target that `make test` runs: FUZZ_CASES cases per target, release build. A panic or a
# heap peak over the budget's memory bound fails (crates/manifests/tests/fuzz.rs).
FUZZ_CASES ?= 20000
fuzz: prerequisites
	FUZZ_CASES=$(FUZZ_CASES) $(CARGO) test --release --locked -p capi-manifests --test fuzz
