#!/usr/bin/env bash
# The release version: Cargo.toml's [workspace.package] version, which the
# Worker's status endpoint and `failover-agent --version` report. Plain awk,
# no cargo: the Worker bundle and the release notes need no Rust.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=$(awk '/^\[workspace\.package\]/ { inside = 1; next } /^\[/ { inside = 0 }
  inside && /^version *= *"/ { gsub(/^version *= *"|".*$/, ""); print; exit }' "$ROOT/Cargo.toml")
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]]; then
  echo "error: no [workspace.package] version = \"x.y.z\" in $ROOT/Cargo.toml" >&2
  exit 1
fi
echo "$version"
