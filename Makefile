# The two commands of the README: `make demo` (the main job) and `make test` (every check CI runs).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo
DEMO_DIR ?= $(CURDIR)/target/demo

.PHONY: test demo control-plane-bin prerequisites fmt lint unit

prerequisites:
	@command -v $(CARGO) >/dev/null || { echo "make: cargo not found; install Rust (rustup) 1.95 or newer" >&2; exit 1; }
	@command -v go >/dev/null || { echo "make: go not found; install Go 1.26 or newer (the control-plane binaries are built from Go modules)" >&2; exit 1; }

# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and kwok from the Go modules
# pinned in tools/control-plane, once; later runs find them in the cache and return at once.
control-plane-bin: prerequisites
	@tools/control-plane/build.sh >/dev/null

test: control-plane-bin
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	CAPI_CONTROL_PLANE_BIN_DIR="$$(tools/control-plane/build.sh)" $(CARGO) test --workspace --locked

demo: control-plane-bin
	$(CARGO) build --locked --release -p control-plane
	@mkdir -p "$(DEMO_DIR)"
	CAPI_CONTROL_PLANE_BIN_DIR="$$(tools/control-plane/build.sh)" target/release/control-plane down --dir "$(DEMO_DIR)" >/dev/null 2>&1 || true
	CAPI_CONTROL_PLANE_BIN_DIR="$$(tools/control-plane/build.sh)" target/release/control-plane up --dir "$(DEMO_DIR)" --with-workloads
	@echo "Use the cluster:  export KUBECONFIG=$(DEMO_DIR)/kubeconfig; $$(tools/control-plane/build.sh)/kubectl get nodes"
	@echo "Stop it:          target/release/control-plane down --dir $(DEMO_DIR)"
