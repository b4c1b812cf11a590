#!/usr/bin/env bash
# The refactoring check (docs/build.md): two rocescope binaries must write the
# same bytes. For every capture in pcaps/, tests/data/, ../shared/captures/
# (when present) and a few synth scenarios, both binaries run
#   analyze CAPTURE --out DIR   (every table and summary.json)
#   report CAPTURE              (the text report, not wrapped: stdout is a file)
#   report --json CAPTURE
#   report --html FILE CAPTURE
# and every output file, stdout, stderr and exit status is compared byte for
# byte. The synth captures are written by both binaries too (capture, truth
# JSON and counter series compared), then analysed from the reference's copy.
#
# Normalised: nothing. No output holds a run id, a wall-clock time or a
# host name (summary.json's `input.captures` holds the paths as given, and both
# binaries get the same paths from the same directory). Should a
# run-dependent field appear, normalise it in `normalise` below and say so.
#
# Usage: scripts/compare-outputs.sh BIN_A BIN_B [WORKDIR]
#   e.g. scripts/compare-outputs.sh ./rocescope-main target/debug/rocescope
# Exit status 0 when everything is identical, 1 when anything differs (the
# differing files are listed), 2 on a usage error.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BIN_A BIN_B [WORKDIR]" >&2; exit 2; }
a=$(realpath "$1"); b=$(realpath "$2")
cd "$(dirname "$0")/.."
work=${3:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${3:-}" ] || trap 'rm -rf "$work"' EXIT

# Run-dependent text to strip before comparing a file; none today.
normalise() { :; }

diffs=0
same() { # FILE_A FILE_B
  normalise "$1"; normalise "$2"
  if ! cmp -s "$1" "$2"; then
    echo "DIFFERS: $1 $2"
    diffs=$((diffs + 1))
  fi
}
# Runs one command with both binaries: stdout, stderr and exit status kept.
both() { # NAME ARGS... (the word @OUT@ becomes the run's own output path)
  local name=$1; shift
  local side bin args arg
  for side in a b; do
    bin=$a; [ $side = b ] && bin=$b
    args=()
    for arg in "$@"; do args+=("${arg//@OUT@/$work/$side/$name.out}"); done
    set +e
    "$bin" "${args[@]}" >"$work/$side/$name.stdout" 2>"$work/$side/$name.stderr"
    echo $? >"$work/$side/$name.status"
    set -e
    # Messages name the output path, which differs only by the side's directory.
    sed -i "s#$work/$side/#$work/X/#g" "$work/$side/$name.stderr" "$work/$side/$name.stdout"
  done
  for f in stdout stderr status; do same "$work/a/$name.$f" "$work/b/$name.$f"; done
  if [ -d "$work/a/$name.out" ]; then
    for f in "$work/a/$name.out"/*; do
      # An empty directory (both runs stopped early) leaves the glob as is.
      [ -e "$f" ] || continue
      same "$f" "$work/b/$name.out/$(basename "$f")"
    done
    [ "$(ls "$work/a/$name.out")" = "$(ls "$work/b/$name.out")" ] ||
      { echo "DIFFERS: file list of $name.out"; diffs=$((diffs + 1)); }
  elif [ -e "$work/a/$name.out" ]; then
    same "$work/a/$name.out" "$work/b/$name.out"
  fi
}

rm -rf "$work/a" "$work/b" "$work/synth"
mkdir -p "$work/a" "$work/b" "$work/synth"

# Synth scenarios, with the typed options (durations, sizes, speeds,
# probabilities), ERSPAN, a sniffer, a one-tap .pcap and counter series.
# name | scenario and options
SYNTH='
ghost|ghost-drop --duration 2ms --min-rto 200us --ecn-min 40KB --ecn-max 300KB --ecn-pmax 0.2 --link-speed 400G --snaplen 128
incast|incast --packets 4000 --pfc-xoff 150KB --pfc-xon 100KB --erspan iii --seed 7
lossy|lossy-link --duration 1ms --sniffer --counters @OUT@.counters.txt
onetap|healthy --packets 1500 --tap 1 --set nic.ack_every=4 --set flows.0.messages=20
storm|pfc-storm --duration 5ms --erspan ii --counters @OUT@.counters.parquet
'
synth_caps=()
while IFS='|' read -r name options; do
  [ -n "$name" ] || continue
  ext=pcapng; [ "$name" = onetap ] && ext=pcap
  # shellcheck disable=SC2086 # options are words
  both "synth-$name" synth $options --out "@OUT@.$ext"
  for f in "$work/a/synth-$name.out".*; do
    same "$f" "$work/b/$(basename "$f")"
  done
  cp "$work/a/synth-$name.out.$ext" "$work/synth/$name.$ext"
  synth_caps+=("$work/synth/$name.$ext")
done <<<"$SYNTH"

caps=(pcaps/*.pcapng tests/data/*.pcap)
[ -d ../shared/captures ] && caps+=(../shared/captures/*.pcap*)
caps+=("${synth_caps[@]}")
for cap in "${caps[@]}"; do
  n=$(basename "$cap"); n=${n%%.*}-$(echo "$cap" | md5sum | cut -c1-6)
  both "analyze-$n" analyze "$cap" --out @OUT@
  both "report-$n" report "$cap"
  both "json-$n" report --json "$cap"
  both "html-$n" report "$cap" --html @OUT@
done
# A few option paths on one capture: per-tap speeds, DSCP map, bins, storm.
both opts-analyze analyze pcaps/pfc-storm.pcapng --out @OUT@ --link-speed 400G \
  --link-speed leaf1-r0-both=100G --dscp-map 26=3,48=6 --bin 1ms --storm 50ms --dup-window 0
both opts-report report pcaps/ghost-drop.pcapng --link-speed 400G --storm-ms 20 --width 72
both opts-bad-speed report pcaps/healthy.pcapng --link-speed 12X
both opts-bad-bin report pcaps/healthy.pcapng --bin 0
both opts-bad-rotate analyze pcaps/healthy.pcapng --dataset @OUT@ --rotate-size 12Q
both opts-bad-rto synth healthy --out @OUT@.pcapng --min-rto 5
both opts-bad-ecn synth healthy --out @OUT@.pcapng --ecn-min 1XB
both opts-bad-set synth healthy --out @OUT@.pcapng --set nic.min_rto=fast

echo "compare-outputs: ${#caps[@]} captures, $(find "$work/a" -type f | wc -l) files per binary, $diffs differing"
[ "$diffs" -eq 0 ]
