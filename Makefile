# Build, test and run the sink coordinator (guest component + wasmtime host).
# Everything uses the release profile, so wasmtime is compiled once.
#
#   make help                   this list (the lines of this block that start with `make`)
#   make build                  the `sinkcoord` CLI (embeds the committed dist/ component)
#   make test                   check-dist, spec-check, repro-check, doc, then every test of the workspace and the other hosts
#   make run                    the main job: a simulated job with faults on an Apache Paimon table (./demo-table), read back by pypaimon
#   make component              rebuild dist/sink-coordinator-<version>.wasm (+ .wit, .sha256) from guest/ (rustc, then wasm-opt -Oz)
#   make check-dist             fail if dist/ differs from what the sources build
#   make repro-check            build the component in a second checkout with another CARGO_HOME; compare bytes
#   make spec-check             fail if spec/ differs from ../shared/spec (when that is beside the checkout)
#   make abi-layout             regenerate the hosts' canonical-ABI layouts from wit/ (hosts/abi/layout.json, one constants file per language)
#   make abi-check              fail if those layout files are stale, or the committed core module exports other post-returns
#   make binaryen               the pinned wasm-opt (binaryen from npm) into target/binaryen
#   make wasm-target            rustup target add wasm32-unknown-unknown, if it is missing
#   make wasm                   the embedded component's name, size and sha256
#   make -s replay TRACE=FILE   the result document of a trace, through the component
#   make -s replay TRACE=FILE NATIVE=1   ... through the native Rust core
#   make soak SEEDS=N           N simulation seeds, native core
#   make soak PROFILE=P         ... with the profile flip147 (most writers finish early) or late (events often late); default: default
#   make bench                  issue 10's table: native vs component, callgrind, size (BENCHMARKS.md)
#   make doc                    rustdoc of the library crates; a missing doc comment or a broken link fails
#   make build-graph-check      a package built alone (CLI, Flink library, examples) compiles no second wasmtime
#   make oracle-test            the independent Python oracle (tests/oracle) against the native core
#   make paimon-test            Paimon tables written by the core, read by pypaimon and Paimon's Java reader
#   make paimon-rust-test       the same, also read by the paimon crate (a long first build: ~300 crates)
#   make hosts-setup            the Node and Python packages, installed the way a user would (hosts/setup.sh)
#   make hosts-test             Node (jco), Python (wasmtime-py), the JVM (Chicory) and Go (wazero) replay every trace
#   make jvm-test               the Java binding on Chicory (hosts/jvm, Maven): unit tests and every trace
#   make go-test                the Go module on wazero (hosts/go): go test ./... (every trace, fuzz corpora), the example
#   make flink-test             the Flink 2.3 connector end to end in MiniClusters and on a standalone cluster (hosts/flink)
#   make moto-setup             moto[server] from PyPI into target/moto-venv (the S3 API server of the S3 tests)
#   make model-check            exhaustive model check of the native core (stateright, full scope; MODEL_SCOPE=large: P = 3)
#   make fuzz FUZZ_SECONDS=N    each fuzz target N seconds (cargo fuzz, stable Rust; fuzz/README.md)
#   make fuzz-regress           each fuzz target over its committed corpus once

CARGO ?= cargo
WASM_TARGET := wasm32-unknown-unknown
SINKCOORD := target/release/sinkcoord
XTASK := $(CARGO) run --release -q -p xtask --

# The component is versioned with its WIT package (wit/coordinator.wit):
# engines pin the file name and check the digest.
VERSION := $(shell sed -n 's/^package sink:coordinator@\(.*\);/\1/p' wit/coordinator.wit)
COMPONENT := dist/sink-coordinator-$(VERSION).wasm

.PHONY: help abi-layout abi-check build-graph-check paimon-test paimon-rust-test spec-check binaryen doc moto-setup oracle-test build test wasm component check-dist repro-check replay wasm-target run soak bench hosts-setup hosts-test jvm-test go-test flink-test fuzz fuzz-regress model-check

# The CLI needs no wasm32 target: it embeds the committed dist/ artifact.
build:
	$(CARGO) build --release -p sinkcoord

# `make help`: the targets documented in the comment block at the top of this
# file, one line each (that block is the one source).
help:
	@sed -n 's/^#   \(make .*\)$$/\1/p' $(firstword $(MAKEFILE_LIST))

# Every public item of the library crates has a doc comment, and every
# intra-doc link resolves (rustdoc's warnings are errors).
doc:
	RUSTDOCFLAGS="-D missing_docs -D warnings" $(CARGO) doc --release --no-deps -p sink-coordinator -p sink-coordinator-trace -p sink-coordinator-host -p sink-coordinator-testkit

# The committed artifact first (a stale dist/ fails fast, with the fix),
# then the Rust tests, then the other runtimes replay the same traces and
# must print the same bytes.
test: check-dist
	$(MAKE) --no-print-directory spec-check
	$(MAKE) --no-print-directory abi-check
	$(MAKE) --no-print-directory repro-check
	$(MAKE) --no-print-directory doc
	$(MAKE) --no-print-directory moto-setup
	$(CARGO) test --release --workspace --no-fail-fast
	$(MAKE) --no-print-directory build-graph-check
	$(MAKE) --no-print-directory fuzz-regress
	$(MAKE) --no-print-directory oracle-test
	$(MAKE) --no-print-directory paimon-rust-test
	$(MAKE) --no-print-directory hosts-test
	$(MAKE) --no-print-directory flink-test

# One build graph: the workspace-hack crate (cargo-hakari; .config/hakari.toml) gives
# every host-side crate the same features, so a package built alone after the workspace
# (the CLI, the Flink library, the examples, xtask) compiles no second wasmtime. After a
# dependency change: `cargo hakari generate && cargo hakari manage-deps`.
build-graph-check:
	python3 tests/build-graph/check.py $(CARGO)

# Tables that Apache Paimon reads (issue 22, docs/paimon.md): the core's
# Coordinator and the format crate write Paimon append tables, which pypaimon
# 2.1.0 (a venv in target/paimon-venv, from PyPI), Paimon's Java reader
# 1.3.1 (jars from Maven Central) read back, each row exactly once;
# paimon-rust-test (the one `make test` runs) also with the `paimon` crate 0.4.0
# (tests/paimon/rust-reader, its own Cargo.lock; a cold build of ~300 crates: the whole
# target took 3m50s so on 2 cores).
paimon-test:
	CARGO_TARGET_DIR=$(CURDIR)/target tests/paimon/run.sh

paimon-rust-test:
	PAIMON_RUST_READER=1 CARGO_TARGET_DIR=$(CURDIR)/target tests/paimon/run.sh

# spec/ is a copy of the contract (SEMANTICS, TRACE-FORMAT) so that a clone
# can read it; where the steering repository's ../shared/spec is beside the
# checkout, the copies must be identical.
spec-check:
	@if [ -d ../shared/spec ]; then \
	  for f in SEMANTICS.md TRACE-FORMAT.md; do \
	    cmp -s ../shared/spec/$$f spec/$$f || { echo "spec/$$f differs from ../shared/spec/$$f: copy it again" >&2; exit 1; }; \
	  done; echo "spec/ matches ../shared/spec"; \
	else echo "spec-check: no ../shared/spec beside the checkout, nothing to compare"; fi

# The record offsets, return areas and post-returns the Go, JVM, Python and
# Node hosts use when they speak the canonical ABI to the core module: one
# description generated from wit/ with wit-parser (xtask/src/abi_layout.rs),
# hosts/README.md "Canonical-ABI layouts".
abi-layout:
	$(XTASK) abi-layout

abi-check:
	$(XTASK) abi-check

# The independent Python oracle of SEMANTICS v2 (tests/oracle/) against the
# native core: every conformance and regression trace, and 2,000 fixed-seed
# random traces (differential; traces whose result depends on the number of
# hint puts, which is implementation-defined, are skipped).
oracle-test: build
	python3 tests/oracle/compare.py tests/conformance tests/regressions
	python3 tests/oracle/fuzz.py 5000 7000

run: build
	$(SINKCOORD) simulate --writers 8 --checkpoints 60 --seed 1 --faults medium \
	  --table-format paimon --table demo-table/db.db/events --paimon-expect demo-table/expect.json
	@tests/paimon/demo.sh

SEEDS ?= 100000
PROFILE ?= default
soak: build
	$(SINKCOORD) simulate --native --seeds $(SEEDS) --writers 6 --checkpoints 30 --faults high --memory --profile $(PROFILE)

# Criterion first (target/criterion), then the table with the goals; the
# instruction rows need valgrind (apt-get install valgrind), else they say so.
# Then the JVM rows (JMH through Chicory, and through the JNI library), Go's and
# the Paimon commits', each ÷ criterion's Rust-wasmtime medians. Each part's
# output is kept in target/bench/; tests/bench/table.py prints every row in one
# table, target/bench/table.md.
bench-part = $(1) > target/bench/$(2).md && cat target/bench/$(2).md
bench: hosts-setup
	$(CARGO) bench -p sink-coordinator-testkit --bench perf
	@mkdir -p target/bench
	$(call bench-part,$(CARGO) run --release -q -p sink-coordinator-testkit --example bench_table,1-core)
	$(call bench-part,MVN=$(MVN) hosts/jvm/bench.sh,2-jvm)
	$(call bench-part,MVN=$(MVN) hosts/flink/bench.sh,3-jni)
	$(call bench-part,(cd hosts/go && $(GO) run ./cmd/sinkcoord-go-bench --core $(CURDIR)/$(CORE_MODULE) --criterion $(CURDIR)/target/criterion),4-go)
	$(call bench-part,PAIMON_BENCH_S3=1 tests/paimon/bench.sh,5-paimon)
	python3 tests/bench/table.py target/bench/[1-5]-*.md > target/bench/table.md; s=$$?; cat target/bench/table.md; exit $$s

hosts-setup:
	bash hosts/setup.sh

# The S3 tests (testkit/tests/s3.rs, cli/tests/storage_conformance.rs, ...)
# start moto's S3 API server on a loopback port (tests/s3/moto_server.py);
# a test that cannot start it fails with the reason.
moto-setup:
	@bash tests/s3/setup.sh

# flink-test: the Flink connector's Maven build (hosts/flink/pom.xml, Flink from Maven Central,
# the JVM binding installed into ~/.m2 first): JUnit 5 on MiniClusterExtension, on Chicory and on
# JNI (the library hosts/flink/native, built here, bundled in the jar and extracted at load);
# the S3 tables' tests on moto (moto-setup). Then a standalone Flink cluster of separate processes
# (hosts/flink/cluster: a JobManager and two TaskManagers, kill -9 of each, the table on S3), on the
# connector installed into ~/.m2 by the step before.
flink-test: moto-setup
	$(CARGO) build --release -p sink-coordinator-flink
	$(MVN) -B -q -f hosts/jvm/pom.xml install -DskipTests
	$(MVN) -B -q -f hosts/flink/pom.xml install
	$(MVN) -B -q -f hosts/flink/cluster/pom.xml verify

# The JVM binding (hosts/jvm): Maven fetches Chicory, JUnit and Jackson from Maven Central
# into ~/.m2 on first use; the core module of the WIT version is taken from dist/ at build
# time. Its tests replay every trace through the CLI and run S3Storage on moto (moto-setup);
# compare.sh then runs its ScriptRunner.
MVN ?= mvn
jvm-test: build moto-setup
	$(MVN) -B -q -f hosts/jvm/pom.xml verify -Dsinkcoord=$(CURDIR)/$(SINKCOORD)

# The Go module (hosts/go): wazero comes from the Go module proxy (go.sum committed) on first
# use; `go test ./...` replays every trace through the CLI, replays the fuzz corpora and runs
# both examples (the pipeline is also run on its own, for its output); compare.sh then runs
# its script runner (cmd/sinkcoord-go-run) on the core module dist/…-<version>.core.wasm.
GO ?= go
CORE_MODULE := dist/sink-coordinator-$(VERSION).core.wasm
go-test: build
	cd hosts/go && $(GO) mod download && $(GO) vet ./...
	cd hosts/go && SINKCOORD=$(CURDIR)/$(SINKCOORD) $(GO) test -count=1 ./...
	cd hosts/go && $(GO) run ./examples/pipeline -core $(CURDIR)/$(CORE_MODULE)

hosts-test: build hosts-setup moto-setup jvm-test go-test
	node --test hosts/node/test/
	target/python-package/venv/bin/python hosts/python/tests/test_package.py
	hosts/python/typecheck.sh
	node hosts/raw-abi/example.mjs $(COMPONENT)
	hosts/compare.sh --component $(COMPONENT) tests/conformance tests/regressions

wasm: build
	@$(SINKCOORD) wasm

# The release artifact (xtask/src/build.rs): guest/ for wasm32 with the
# `wasm` profile, --locked, paths remapped, encoded by wit-component.
# A change to guest/ or wit/ is committed with the regenerated dist/.
component: wasm-target binaryen
	$(XTASK) component

check-dist: wasm-target binaryen
	$(XTASK) check-dist

# The pinned wasm-opt of the component build (xtask/binaryen/package-lock.json,
# binaryen from npm) into target/binaryen; nothing to do once installed.
binaryen:
	@bash xtask/binaryen/setup.sh

# Reproducibility across checkout paths and cargo homes (about 1.5 minutes
# on 2 cores: a fresh CARGO_HOME downloads the guest's crates from the
# registry, and the guest is compiled again in the copy).
repro-check: wasm-target binaryen
	bash xtask/repro-check.sh

# Cargo's progress goes to stderr (and -q silences it): stdout carries only
# the document. Precompiled components are cached under target/ (trusted).
replay:
	@test -n "$(TRACE)" || { echo "usage: make -s replay TRACE=FILE [NATIVE=1] [FORMAT=paimon]" >&2; exit 2; }
	@$(CARGO) build -q --release -p sinkcoord
	@SINKCOORD_CACHE_DIR="$(CURDIR)/target/cwasm-cache" $(SINKCOORD) replay $(if $(NATIVE),--native) $(if $(FORMAT),--table-format $(FORMAT)) "$(TRACE)"

# The component (make component, check-dist) is built for
# wasm32-unknown-unknown; rustup does not fetch the target by itself
# (RUSTUP_AUTO_INSTALL=0).
wasm-target:
	@rustup target list --installed | grep -qx '$(WASM_TARGET)' || rustup target add $(WASM_TARGET) >&2

# Fuzzing (issue 11): libFuzzer through cargo-fuzz on stable Rust
# (`--sanitizer none`; the address sanitizer needs nightly). New inputs go to
# fuzz/work/<target> (not committed); crashes to fuzz/artifacts/<target>.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := state_decode writer_restore table_decode table_walk trace_parse calls
fuzz: SHELL := /bin/bash
fuzz:
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked --version 0.13.2
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p fuzz/work/$$t && \
	  $(CARGO) fuzz run --fuzz-dir fuzz --sanitizer none --features libfuzzer $$t \
	    fuzz/work/$$t fuzz/corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    2>&1 | grep -E '^(Done|stat::number_of_executed_units|==|SUMMARY|thread)' | sed "s/^/$$t: /"; \
	  test $${PIPESTATUS[0]} -eq 0 || exit 1; \
	done

# Regression mode: every committed corpus file through its target once (< 1 min).
fuzz-regress:
	$(CARGO) test --release --manifest-path fuzz/Cargo.toml

# Exhaustive model checking of the native core (model/, stateright): every
# host schedule of the scope (SEMANTICS v2.1 host moves, savepoints, one
# abort, one storage fault); prints states explored and time, writes a
# TRACE-FORMAT trace per counterexample to target/model-findings.
# MODEL_SCOPE: full (default), large (four checkpoints), or any suite or
# scope that `cargo run --release -p sink-coordinator-model -- --help` lists.
# `make test` runs a reduced scope (model/tests/model_check.rs).
MODEL_SCOPE ?= full
model-check:
	$(CARGO) run --release -p sink-coordinator-model -- --scope $(MODEL_SCOPE)
