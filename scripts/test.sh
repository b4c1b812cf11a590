#!/usr/bin/env bash
# Sets up a machine and runs every test rocescope has. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
echo "== cargo test (workspace)"
cargo test --workspace --locked 2>&1
echo "== table contract read back with polars"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cargo run --quiet --locked -p rocescope -- analyze ../shared/captures/oferby-proxy-roce.pcap --out "$out" >/dev/null
python3 tests/check_tables.py "$out"
