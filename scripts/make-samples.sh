#!/usr/bin/env bash
# Regenerates the sample captures in pcaps/: for every scenario of
# `rocescope synth`, pcaps/SCENARIO.pcapng and its ground truth
# pcaps/SCENARIO.truth.json. Fixed seeds and limits, frames cut to 128 bytes
# as a mirror port's truncation would: a few MB in all, byte-identical on
# every run (tests/synth.rs checks the committed files against this table).
#
#   scripts/make-samples.sh [OUTDIR]     (default: pcaps)
#
# PROFILE=debug uses the debug build (the same bytes; quicker to build,
# slower to run). A line's own --snaplen replaces the 128.
set -euo pipefail
cd "$(dirname "$0")/.."
outdir=${1:-pcaps}

# scenario        synth options besides --seed 1 (and --snaplen 128)
SAMPLES='
healthy           --packets 2000
ghost-drop        --duration 1ms --tap 0
ghost-drop-fixed  --duration 1ms --tap 0
lossy-link
lossy-spine
incast            --packets 3000
pfc-storm
ecn-broken        --packets 3000
ecmp-collision    --packets 3000
mirror-impaired   --packets 850 --snaplen 0 --set mtu=256
corruption        --packets 1800 --tap 0 --snaplen 0
nic-timeout
mtu-blackhole
mtu-mismatch      --packets 1500
qos-mismatch      --packets 3000
ecn-overmark
dcqcn-off
uet-incast
uet-spray
'

profile=${PROFILE:-release}
case $profile in
  release) cargo build --release --locked -q -p rocescope ;;
  debug) cargo build --locked -q -p rocescope ;;
  *) echo "PROFILE must be release or debug, not $profile" >&2; exit 2 ;;
esac
bin=${CARGO_TARGET_DIR:-target}/$profile/rocescope
mkdir -p "$outdir"
while read -r scenario options; do
  [ -n "$scenario" ] || continue
  case " $options " in
    *" --snaplen "*) ;;
    *) options="--snaplen 128 $options" ;;
  esac
  # shellcheck disable=SC2086 # options are words
  "$bin" synth "$scenario" --out "$outdir/$scenario.pcapng" --seed 1 $options
done <<<"$SAMPLES"
# Beside the table (tests/switches.rs checks it): a storm whose switches
# export telemetry reports to a collector (read with --telemetry-report-port
# 32766), seen at s1's port.
"$bin" synth pfc-storm --out "$outdir/pfc-storm-telemetry.pcapng" --seed 1 \
  --snaplen 128 --telemetry --tap 1 --duration 20ms
du -ch "$outdir"/*.pcapng "$outdir"/*.truth.json | tail -1
