#!/usr/bin/env bash
# End-to-end figures, each a ratio against a baseline measured in the same run:
#   analyze (every table) vs. tshark -T fields extracting BTH/AETH/ECN/PFC fields,
#   report (no per-packet table) vs. merely reading the capture.
# Usage: scripts/bench-analyze.sh [FRAMES] (default 500000)
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-500000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release --locked -p rocescope --quiet
bin=target/release/rocescope
cap="$work/bench.pcapng"
$bin synth ghost-drop --out "$cap" --packets "$frames" --snaplen 128 --duration 10s >/dev/null
size=$(stat -c %s "$cap")
echo "capture: $frames frames (ghost-drop, snaplen 128), $((size / 1000000)) MB"

seconds() { # run a command, print its wall time in seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }' 
}

t_read=$(seconds cat "$cap")
t_analyze=$(seconds $bin analyze "$cap" --out "$work/out")
t_report=$(seconds $bin report "$cap")
t_tshark=$(seconds tshark -n -r "$cap" -T fields -E separator=/t \
  -e frame.number -e frame.time_epoch -e ip.src -e ip.dst -e ip.dsfield.dscp -e ip.dsfield.ecn \
  -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.bth.a \
  -e infiniband.aeth.syndrome -e infiniband.aeth.msn -e macc.cbfc.enbv \
  -e macc.cbfc.pause_time.c3)

rate() { awk -v n="$frames" -v t="$1" 'BEGIN { printf "%.0f", n / t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
printf '%-34s %8.2f s %12s frames/s\n' "tshark -T fields (baseline)" "$t_tshark" "$(rate "$t_tshark")"
printf '%-34s %8.2f s %12s frames/s  %6sx tshark\n' "rocescope analyze (all tables)" "$t_analyze" "$(rate "$t_analyze")" "$(ratio "$t_tshark" "$t_analyze")"
printf '%-34s %8.2f s %12s frames/s  %6sx tshark\n' "rocescope report" "$t_report" "$(rate "$t_report")" "$(ratio "$t_tshark" "$t_report")"
printf '%-34s %8.2f s\n' "cat (page-cache read)" "$t_read"
