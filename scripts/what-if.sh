#!/usr/bin/env bash
# The ghost-drop article's before/after table, as the model produces it:
# `rocescope synth` runs ghost-drop (short minimum RTO, ECN above PFC) and
# ghost-drop-fixed (the article's fix: min RTO 1.05 ms, ECN 180 KB / 800 KB /
# 10 %, PFC XOFF/XON 2800 KB / 2200 KB), captures the victim's sender port (tap 0), and
# `rocescope report --json` measures it; goodput and NIC timeouts come from
# the model's truth. Prints a markdown table (tests/synth.rs asserts it).
#
#   scripts/what-if.sh [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
seed=${1:-1}
cargo build --release --locked -q -p rocescope
bin=${CARGO_TARGET_DIR:-target}/release/rocescope
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for s in ghost-drop ghost-drop-fixed; do
  "$bin" synth "$s" --out "$tmp/$s.pcapng" --seed "$seed" --tap 0 >/dev/null
  "$bin" report "$tmp/$s.pcapng" --json --link-speed 400G >"$tmp/$s.summary.json"
done
python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
def load(s):
    summary = json.load(open(f"{tmp}/{s}.summary.json"))
    truth = json.load(open(f"{tmp}/{s}.truth.json"))
    t = summary["totals"]
    victim = truth["qps"][2]
    return {
        "retrans": t["retrans_rate"],
        "pause": sum(p["fraction"] for p in summary["pfc"]),
        "timeout_rewinds": t["rewinds_timeout"],
        "spurious": t["spurious_retrans"],
        "nic_timeouts": sum(q["stats"]["timeouts"] for q in truth["qps"]),
        "victim_goodput": victim["goodput_gbps"],
        "goodput": sum(q["goodput_gbps"] for q in truth["qps"]),
        "drops": truth["fabric"]["switch_drops"],
        "ce": sum(q["stats"]["ce_received"] for q in truth["qps"]),
        "cnps": sum(q["stats"]["cnps_sent"] for q in truth["qps"]),
    }
b, a = load("ghost-drop"), load("ghost-drop-fixed")
pct = lambda x: f"{100 * x:.4g} %"
def ratio(x, y):
    if y == 0:
        return "to zero" if x > 0 else "–"
    return f"{x / y:.3g}×"
rows = [
    ("Retransmission rate (victim's tap)", pct(b["retrans"]), pct(a["retrans"]), ratio(b["retrans"], a["retrans"])),
    ("PFC pause time (victim's tap, % of capture)", pct(b["pause"]), pct(a["pause"]), ratio(b["pause"], a["pause"])),
    ("Timeout (ghost) rewinds at the victim's tap", b["timeout_rewinds"], a["timeout_rewinds"], ratio(b["timeout_rewinds"], a["timeout_rewinds"])),
    ("Spurious resends (already ACKed)", b["spurious"], a["spurious"], ratio(b["spurious"], a["spurious"])),
    ("NIC retransmission timeouts (all QPs, model)", b["nic_timeouts"], a["nic_timeouts"], ratio(b["nic_timeouts"], a["nic_timeouts"])),
    ("Victim goodput, s2 → r1 (model)", f"{b['victim_goodput']:.1f} Gb/s", f"{a['victim_goodput']:.1f} Gb/s", f"{a['victim_goodput'] / b['victim_goodput']:.2f}× up"),
    ("Goodput, all QPs (model)", f"{b['goodput']:.1f} Gb/s", f"{a['goodput']:.1f} Gb/s", f"{a['goodput'] / b['goodput']:.2f}× up"),
    ("CE-marked arrivals / CNPs sent, all QPs (model)", f"{b['ce']} / {b['cnps']}", f"{a['ce']} / {a['cnps']}", ""),
    ("Switch discards", b["drops"], a["drops"], ""),
]
print("| metric | ghost-drop (before) | ghost-drop-fixed (after) | change |")
print("|---|---:|---:|---|")
for r in rows:
    print("| " + " | ".join(str(c) for c in r) + " |")
PY
