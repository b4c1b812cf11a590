#!/usr/bin/env bash
# Sets up a machine and runs rocescope on the bundled sample capture.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
sample=${1:-pcaps/sample.pcapng}
out=${2:-out}
cargo build --release --locked -p rocescope
target/release/rocescope analyze "$sample" --out "$out"
echo
target/release/rocescope report "$sample"
