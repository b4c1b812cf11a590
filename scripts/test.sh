#!/usr/bin/env bash
# Sets up a machine and runs every test rocescope has. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
echo "== no import cycles between modules (docs/build.md)"
python3 scripts/module-cycles.py userspace/src ebpf/rocescope-ebpf/src ebpf/rocescope-common/src
echo "== cargo test (workspace)"
cargo test --workspace --locked 2>&1
# The binary cargo test just built (`cargo run` would rebuild arrow and
# parquet: without dev-dependencies their features unify differently).
target=$(cargo metadata --format-version 1 --no-deps --locked | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
bin="$target/debug/rocescope"
echo "== offline build, library and binary unit tests (--no-default-features) without nightly or bpf-linker"
# Only the stable cargo and rustc on PATH, and no directory holding rustup
# (the way to nightly) or bpf-linker: analysing captures must not need the
# eBPF toolchain (docs/build.md). A target dir of its own keeps $bin the
# default build.
offline_path=$(dirname "$(rustup which --toolchain stable cargo)")
IFS=: read -ra path_dirs <<<"$PATH"
for d in "${path_dirs[@]}"; do
  [ -e "$d/rustup" ] || [ -e "$d/bpf-linker" ] || offline_path+=":$d"
done
offline() {
  env PATH="$offline_path" CARGO_TARGET_DIR="$target/no-live" \
    cargo "$@" -p rocescope --locked --no-default-features 2>&1
}
offline build
offline test --lib --bins
echo "== table contract read back with polars"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The real captures: tests/data/ (provenance in tests/data/README.md), or
# the folder ROCESCOPE_CAPTURES names (the Rust tests honour it too).
captures=${ROCESCOPE_CAPTURES:-tests/data}
"$bin" analyze "$captures/oferby-proxy-roce.pcap" --out "$out" >/dev/null
python3 tests/check_tables.py "$out"
echo "== notebooks, the dataset read by DuckDB, polars, pyarrow/pandas and Spark, HTML report (pytest)"
rc=0
ROCESCOPE_BIN="$bin" python3 -m pytest -q -p no:cacheprovider tests/test_notebooks.py tests/test_dataset.py || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "test.sh: pytest collected no tests from tests/test_notebooks.py tests/test_dataset.py" >&2
  exit 1
fi
exit "$rc"
