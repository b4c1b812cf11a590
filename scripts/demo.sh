#!/usr/bin/env bash
# Sets up a machine and runs rocescope on the bundled ghost-drop sample: the
# victim's sender port in a 400G fabric whose NICs' retransmission timer is
# shorter than the PFC pauses (scripts/make-samples.sh made it).
#
#   scripts/demo.sh [CAPTURE [OUTDIR [LINK_SPEED]]]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
sample=${1:-pcaps/ghost-drop.pcapng}
out=${2:-out}
speed=${3:-400G}
cargo build --release --locked -p rocescope
bin=${CARGO_TARGET_DIR:-target}/release/rocescope
"$bin" analyze "$sample" --out "$out" --link-speed "$speed"
echo
"$bin" report "$sample" --link-speed "$speed"
