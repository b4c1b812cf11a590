#!/usr/bin/env bash
# What reading a compressed capture costs `rocescope report`, against the
# plain file and against the decompressor alone.
#
#   scripts/bench-decompress.sh [FRAMES] [ROUNDS]
#
# Writes a synth capture of FRAMES frames (default 2 000 000), compresses it
# with gzip, zstd and lz4 (their default levels), then times, ROUNDS times
# (default 5) interleaved: `rocescope report` on the plain file, the
# decompressor alone (`TOOL -dc FILE > /dev/null`), and `rocescope report`
# on the compressed file. Prints the medians. Needs a release build
# (`cargo build --release`; the binary is taken from $ROCESCOPE or
# target/release/rocescope) and the gzip, zstd and lz4 tools.
set -euo pipefail

frames="${1:-2000000}"
rounds="${2:-5}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${ROCESCOPE:-${CARGO_TARGET_DIR:-$root/target}/release/rocescope}"
[ -x "$bin" ] || { echo "bench-decompress: no release binary at $bin (cargo build --release)" >&2; exit 2; }
for tool in gzip zstd lz4; do
    command -v "$tool" >/dev/null || { echo "bench-decompress: $tool is missing (scripts/setup.sh --test)" >&2; exit 2; }
done

dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cap="$dir/cap.pcapng"
"$bin" synth healthy --packets "$frames" --out "$cap" >/dev/null
gzip -c "$cap" > "$cap.gz"
zstd -q -c "$cap" > "$cap.zst"
lz4 -q -c "$cap" > "$cap.lz4"

# Seconds of wall clock of a command (output discarded).
secs() {
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A runs
for _ in $(seq "$rounds"); do
    runs[plain]+="$(secs "$bin" report "$cap")"$'\n'
    for c in gz zst lz4; do
        case $c in gz) tool=gzip ;; zst) tool=zstd ;; lz4) tool=lz4 ;; esac
        runs[$c-alone]+="$(secs sh -c "$tool -dc '$cap.$c' > /dev/null")"$'\n'
        runs[$c]+="$(secs "$bin" report "$cap.$c")"$'\n'
    done
done

size() { stat -c %s "$1"; }
plain=$(printf '%s' "${runs[plain]}" | median)
printf 'capture: %s frames, %s bytes; %s rounds, medians in seconds\n' "$frames" "$(size "$cap")" "$rounds"
printf '%-6s %12s %10s %18s %14s %10s\n' format bytes report "decompressor alone" "report - plain" "ratio"
printf '%-6s %12s %10.3f\n' plain "$(size "$cap")" "$plain"
for c in gz zst lz4; do
    alone=$(printf '%s' "${runs[$c-alone]}" | median)
    with=$(printf '%s' "${runs[$c]}" | median)
    extra=$(echo "$with - $plain" | bc)
    printf '%-6s %12s %10.3f %18.3f %14.3f %10.2f\n' "$c" "$(size "$cap.$c")" "$with" "$alone" "$extra" \
        "$(echo "scale=4; $extra / $alone" | bc)"
done
