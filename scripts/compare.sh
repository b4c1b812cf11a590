#!/usr/bin/env bash
# Same-run comparison of two or more builds: every command runs ROUNDS times,
# interleaved (A B A B ...), and the medians of wall clock and CPU (user +
# system, all threads) are printed with their ratio to the first build.
# Medians of interleaved runs are what a change should be judged by on a
# shared 2-core host: single best-of-N times wander by 15-25 % between runs.
#
# Usage: scripts/compare.sh ROUNDS BIN_A BIN_B [BIN...] -- ARGS...
#   e.g. scripts/compare.sh 20 /tmp/before target/release/rocescope -- analyze cap.pcapng --out /tmp/o
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 ROUNDS BIN_A BIN_B [BIN...] -- ARGS..." >&2; exit 2; }
rounds=$1; shift
bins=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do bins+=("$1"); shift; done
[ "${1:-}" = "--" ] || { echo "$0: missing -- before the arguments" >&2; exit 2; }
shift
samples=$(mktemp)
trap 'rm -f "$samples"' EXIT
TIMEFORMAT='%3R %3U %3S'
for _ in $(seq "$rounds"); do
  for i in "${!bins[@]}"; do
    t=$( { time "${bins[$i]}" "$@" >/dev/null 2>&1; } 2>&1 )
    echo "$i $t" >>"$samples"
  done
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base_wall=""; base_cpu=""
for i in "${!bins[@]}"; do
  wall=$(awk -v i="$i" '$1 == i { print $2 }' "$samples" | median)
  cpu=$(awk -v i="$i" '$1 == i { print $3 + $4 }' "$samples" | median)
  : "${base_wall:=$wall}" "${base_cpu:=$cpu}"
  awk -v b="${bins[$i]}" -v w="$wall" -v c="$cpu" -v bw="$base_wall" -v bc="$base_cpu" -v n="$rounds" 'BEGIN {
    printf "%-40s wall %7.1f ms (%.3fx)  cpu %7.1f ms (%.3fx)  median of %d\n", b, w * 1000, w / bw, c * 1000, c / bc, n }'
done
