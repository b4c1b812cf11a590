#!/usr/bin/env bash
# What reading a compressed capture costs `rocescope report`, against the
# plain file and against the decompressor alone.
#
#   scripts/bench-decompress.sh [FRAMES] [ROUNDS]
#
# Writes a synth capture of FRAMES frames (default 2 000 000, ghost-drop,
# snaplen 128), compresses it
# with gzip, zstd and lz4 (their default levels), then times, ROUNDS times
# (default 5) interleaved: `rocescope report` on the plain file, the
# decompressor alone (`TOOL -dc FILE > /dev/null`), and `rocescope report`
# on the compressed file. Prints the medians of CPU and wall-clock time; a
# ratio (report's extra CPU over the decompressor's own) at most 1 is the
# budget. Needs a release build
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
command -v python3 >/dev/null || { echo "bench-decompress: python3 is missing" >&2; exit 2; }

dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cap="$dir/cap.pcapng"
# The ghost-drop fabric with its two flows sending without end, cut to 128
# bytes per frame as a mirror port's snaplen would.
"$bin" synth ghost-drop --packets "$frames" --duration 10s --snaplen 128 \
    --set flows.0.messages=null --set flows.1.messages=null --out "$cap" >/dev/null
gzip -c "$cap" > "$cap.gz"
zstd -q -c "$cap" > "$cap.zst"
lz4 -q -c "$cap" > "$cap.lz4"
echo "capture: $frames frames (ghost-drop, snaplen 128), $(stat -c %s "$cap") bytes"

# Interleaved rounds; medians of CPU time (user + system, all threads: what
# the machine pays, steady under load) and wall clock.
python3 - "$bin" "$cap" "$rounds" <<'PY'
import os, statistics, subprocess, sys, time
bin, cap, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])

def run(cmd):
    t = time.time()
    p = subprocess.Popen(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"bench-decompress: {cmd} failed")
    return ru.ru_utime + ru.ru_stime, time.time() - t

tools = {"gz": "gzip", "zst": "zstd", "lz4": "lz4"}
runs = {}
for _ in range(rounds):
    runs.setdefault("plain", []).append(run(f"'{bin}' report '{cap}'"))
    for ext, tool in tools.items():
        runs.setdefault(ext + " alone", []).append(run(f"{tool} -dc '{cap}.{ext}' > /dev/null"))
        runs.setdefault(ext, []).append(run(f"'{bin}' report '{cap}.{ext}'"))
med = lambda k, i: statistics.median(r[i] for r in runs[k])
size = lambda ext: os.stat(cap + ext).st_size
print(f"{rounds} rounds, medians; CPU = user + system of all threads")
print(f"{'input':6} {'bytes':>11} {'report CPU s':>12} {'wall s':>7} {'decompressor alone CPU s':>24} {'report CPU - plain':>18} {'ratio':>6}")
print(f"{'plain':6} {size(''):11} {med('plain', 0):12.3f} {med('plain', 1):7.3f}")
for ext in tools:
    extra = med(ext, 0) - med("plain", 0)
    alone = med(ext + " alone", 0)
    print(f"{ext:6} {size('.' + ext):11} {med(ext, 0):12.3f} {med(ext, 1):7.3f} {alone:24.3f} {extra:18.3f} {extra / alone:6.2f}")
PY
