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
echo "== notebooks, dataset layout and HTML report (pytest)"
# The binary cargo test just built; pytest builds it itself when run alone.
target=$(cargo metadata --format-version 1 --no-deps --locked | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
rc=0
ROCESCOPE_BIN="$target/debug/rocescope" python3 -m pytest -q -p no:cacheprovider tests/test_notebooks.py || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "test.sh: pytest collected no tests from tests/test_notebooks.py" >&2
  exit 1
fi
exit "$rc"
