#!/usr/bin/env bash
# wrangler with this project's toolchain: `scripts/wrangler.sh <args>` is
# `npx wrangler <args>`, except that it runs under Node >= 22.12 (wrangler
# 4.16x refuses the system Node 20 with "Wrangler requires at least Node.js
# v22.12.0") and installs what is missing first, as every make target does.
# It runs from the repository root, wherever it is called from.
# `make dev`, `make deploy`, `make secret` and `make dry-run` go through here;
# call it yourself for anything else (`scripts/wrangler.sh tail`).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/toolchain.sh"
ensure_tools
cd "$ROOT"

# wrangler runs the `[build] command` (make build) before deploy and dev.
# Without these, that make would think it is a sub-make of the one that
# called us: it would print "Entering directory" lines and, under `make -j`,
# warn that the jobserver it cannot reach through wrangler is unavailable.
unset MAKEFLAGS MFLAGS MAKELEVEL

exec wrangler "$@"
