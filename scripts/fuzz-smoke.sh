#!/usr/bin/env bash
# Fuzz smoke test: runs each cargo-fuzz target of userspace/fuzz for a while.
#
#   scripts/fuzz-smoke.sh [SECONDS] [TARGET...]
#
# SECONDS defaults to 60 per target; TARGETs default to every target
# (reader, decompress, decode, infiniband, analyzer, etherparse). Needs the nightly toolchain; installs cargo-fuzz
# if it is missing. A crash leaves its input in userspace/fuzz/artifacts/TARGET/
# (ignored by git) and makes this script fail; the corpus grows in
# userspace/fuzz/corpus/TARGET/, which is committed: minimise it before
# committing (cd userspace && cargo +nightly fuzz cmin TARGET). The real
# captures in tests/data/ (or the folder FUZZ_SEEDS, else ROCESCOPE_CAPTURES,
# names) seed the reader's corpus.
set -euo pipefail

secs="${1:-60}"
shift || true
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    targets=(reader decompress decode infiniband analyzer etherparse)
fi
case "$secs" in
    '' | *[!0-9]*) echo "fuzz-smoke: SECONDS must be a number, got '$secs'" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fuzz_dir="$root/userspace/fuzz"

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz-smoke: the nightly toolchain is missing: rustup toolchain install nightly" >&2
    exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz-smoke: installing cargo-fuzz" >&2
    cargo +nightly install cargo-fuzz --locked
fi

seeds="${FUZZ_SEEDS:-${ROCESCOPE_CAPTURES:-$root/tests/data}}"
for target in "${targets[@]}"; do
    corpus="$fuzz_dir/corpus/$target"
    mkdir -p "$corpus"
    if [ "$target" = reader ] && [ -d "$seeds" ]; then
        for f in "$seeds"/*.pcap "$seeds"/*.pcapng; do
            [ -f "$f" ] && cp -n "$f" "$corpus/" || true
        done
    fi
    echo "fuzz-smoke: $target for ${secs}s" >&2
    (cd "$root/userspace" && cargo +nightly fuzz run "$target" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1)
done
echo "fuzz-smoke: no crash in ${targets[*]}" >&2
