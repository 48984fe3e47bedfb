# Build, test and run the sink coordinator (guest component + wasmtime host).
# Everything uses the release profile, so wasmtime is compiled once.
#
#   make build                  host + component (host/build.rs builds the guest)
#   make test                   every test of the workspace
#   make wasm                   the embedded component's path and size
#   make -s replay TRACE=FILE   the result document of a trace, through the component
#   make -s replay TRACE=FILE NATIVE=1   ... through the native Rust core

CARGO ?= cargo
WASM_TARGET := wasm32-unknown-unknown
SINKCOORD := target/release/sinkcoord

.PHONY: build test wasm replay wasm-target

build: wasm-target
	$(CARGO) build --release -p sink-coordinator-host

test: wasm-target
	$(CARGO) test --release --workspace --no-fail-fast

wasm: build
	@$(SINKCOORD) wasm

# Cargo's progress goes to stderr (and -q silences it): stdout carries only
# the document. Precompiled components are cached under target/ (trusted).
replay: wasm-target
	@test -n "$(TRACE)" || { echo "usage: make -s replay TRACE=FILE [NATIVE=1]" >&2; exit 2; }
	@$(CARGO) build -q --release -p sink-coordinator-host
	@SINKCOORD_CACHE_DIR="$(CURDIR)/target/cwasm-cache" $(SINKCOORD) replay $(if $(NATIVE),--native) "$(TRACE)"

# The guest is built for wasm32-unknown-unknown; rustup does not fetch the
# target by itself (RUSTUP_AUTO_INSTALL=0).
wasm-target:
	@rustup target list --installed | grep -qx '$(WASM_TARGET)' || rustup target add $(WASM_TARGET) >&2
