# The commands a user types. Every target installs what it is missing first
# (see scripts/toolchain.sh), so a fresh clone needs nothing but these.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
TOOLCHAIN := source scripts/toolchain.sh && ensure_tools

.PHONY: build test test-rust test-worker lint demo bench gate clean

## build: compile the Worker to build/index.js + build/index_bg.wasm (scripts/build-worker.sh)
build:
	@$(TOOLCHAIN) && bash scripts/build-worker.sh

## test: every test, native and in Miniflare
test: build lint
	@$(TOOLCHAIN) && cargo test --workspace
	@$(TOOLCHAIN) && node --test --test-concurrency=1 tests/*.test.mjs
	@echo "==> make demo, unattended (proves the walkthrough still works)"
	@$(TOOLCHAIN) && node scripts/demo.mjs < /dev/null > target/demo-run.log || { cat target/demo-run.log; exit 1; }

## lint: formatting and clippy, native and wasm32
lint:
	@$(TOOLCHAIN) && cargo fmt --all -- --check
	@$(TOOLCHAIN) && cargo clippy --workspace --all-targets -- -D warnings
	@$(TOOLCHAIN) && cargo clippy --target wasm32-unknown-unknown -p tunnel-failover -- -D warnings

## demo: a guided failover on two local origins under wrangler dev
demo: build
	@$(TOOLCHAIN) && node scripts/demo.mjs

clean:
	rm -rf build target/bench

## bench: the Worker vs the JavaScript anchor in one workerd, same origin (see bench/)
bench: build
	@$(TOOLCHAIN) && bash bench/run.sh

## gate: two real agents with fake connectors, timed end to end (see scripts/gate.sh)
gate:
	@bash scripts/gate.sh
