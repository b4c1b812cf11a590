#!/usr/bin/env bash
# Soak test of the live tap as an always-on monitor (docs/live.md, "Soak"):
# `rocescope live` on one end of a veth pair (in a network namespace of its
# own) for SECONDS while the other end gets, over and over, a flowgen
# capture of short RC QPs at a steady PPS — QPs keep starting and going
# idle, and retire after --flow-idle 2s — and, after each pass, a sample
# tap with retransmissions (pcaps/ghost-drop.pcapng), so findings start and
# end. The tap runs as a long run would: --metrics, --dataset without the
# packets table, --findings, --report-interval.
#
# Every SOAK_INTERVAL seconds the live process's RSS and open files are
# sampled and /metrics scraped. The replay stops 5 s before the end; a last
# scrape, then SIGTERM. The run fails unless
#   * RSS after the warm-up (SOAK_WARMUP seconds) stays within 10 %
#     (largest sample <= 1.10 x smallest), and the open files within 4;
#   * frames = records + ring-full drops (summary.json; nothing else is on
#     the wire) and the last scrape's tap counters equal summary.json's;
#   * the findings lines equal the dataset's findings rows (per id and
#     state), rocescope_findings_active in the last scrape (before SIGTERM)
#     equals the instances whose last line written before it is not `end`,
#     and the stop ended every instance (its last line `end`; those active
#     at the scrape with reason `stopped`).
#
#   scripts/soak.sh [SECONDS] [PPS]        (defaults: 1800 s, 600 frames/s)
#
# Needs root and iproute2. Environment:
#   ROCESCOPE      the binary (default: cargo build --release, then that one)
#   FLOWGEN        the flowgen example binary (default: built beside it)
#   SOAK_INTERVAL  seconds between samples (default 60)
#   SOAK_WARMUP    seconds before RSS must be flat (default SECONDS / 3: the
#                  tables' writers fill their first 64k-row groups first)
#   SOAK_ROTATE    the dataset files' --rotate (default 10m)
#   SOAK_KEEP      a directory to keep the tables, samples and logs in
set -euo pipefail

secs="${1:-1800}"
pps="${2:-600}"
interval="${SOAK_INTERVAL:-60}"
warmup="${SOAK_WARMUP:-$((secs / 3))}"
for n in "$secs" "$pps" "$interval" "$warmup"; do
    case "$n" in '' | *[!0-9]*) echo "soak: numbers only, got '$n'" >&2; exit 2 ;; esac
done
[ "$secs" -ge 30 ] || { echo "soak: at least 30 s" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "soak: needs root (network namespace, XDP)" >&2; exit 2; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${ROCESCOPE:-}"
flowgen="${FLOWGEN:-}"
if [ -z "$bin" ] || [ -z "$flowgen" ]; then
    (cd "$root" && cargo build --release --locked -p rocescope --bin rocescope --example flowgen >&2)
    bin="${bin:-${CARGO_TARGET_DIR:-$root/target}/release/rocescope}"
    flowgen="${flowgen:-${CARGO_TARGET_DIR:-$root/target}/release/examples/flowgen}"
fi

id="$$"
ns="rocescope-soak-$id"
a="rsoa$id"
b="rsob$id"
work="$(mktemp -d)"
live_pid=""
replay_pid=""
cleanup() {
    touch "$work/stop"
    [ -n "$replay_pid" ] && { pkill -TERM -P "$replay_pid"; kill "$replay_pid"; } 2>/dev/null || true
    [ -n "$live_pid" ] && kill "$live_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    ip netns delete "$ns" 2>/dev/null || true
    if [ -n "${SOAK_KEEP:-}" ]; then
        mkdir -p "$SOAK_KEEP" && cp -a "$work"/. "$SOAK_KEEP"/
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# A pass of 20 s at PPS: PPS/3 QPs a second (three frames each), each active
# a second; the next pass sends the same QPs again, long retired by then.
qps_per_s=$((pps / 3))
"$flowgen" --qps $((qps_per_s * 20)) --rate "$qps_per_s" --active 1 --hosts 512 \
    --out "$work/churn.pcap" >/dev/null
ghost="$root/pcaps/ghost-drop.pcapng"

ip netns add "$ns"
ip -n "$ns" link add "$a" type veth peer name "$b"
ip -n "$ns" link set lo up
for dev in "$a" "$b"; do
    ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"
    ip -n "$ns" link set "$dev" up
done

metrics=127.0.0.1:9464
scrape() { ip netns exec "$ns" curl -sf "http://$metrics/metrics"; }

# `ip netns exec` execs the binary: $! is rocescope's pid.
ip netns exec "$ns" "$bin" live --iface "$b" --out "$work/out" --duration "$((secs + 60))s" --ring-size 4MiB \
    --flow-idle 2s --metrics "$metrics" --dataset "$work/dataset" --rotate "${SOAK_ROTATE:-10m}" \
    --tables events,timeline,flows,findings --findings "$work/findings.jsonl" \
    --report-interval 10s --dup-window 0 \
    >"$work/live.out" 2>"$work/live.err" &
live_pid=$!
for _ in $(seq 1 600); do
    grep -q "XDP attached" "$work/live.err" 2>/dev/null && break
    kill -0 "$live_pid" 2>/dev/null || { cat "$work/live.err" >&2; exit 1; }
    sleep 0.1
done

(
    while [ ! -e "$work/stop" ]; do
        ip netns exec "$ns" "$bin" replay "$work/churn.pcap" --iface "$a" --pps "$pps" \
            >>"$work/replay.out" 2>&1 || break
        ip netns exec "$ns" "$bin" replay "$ghost" --iface "$a" --pps "$pps" \
            >>"$work/replay.out" 2>&1 || break
    done
) &
replay_pid=$!

echo "soak: live on $b for ${secs}s, churning QPs at $pps frames/s; sampling every ${interval}s, warm-up ${warmup}s" >&2
echo "t_s rss_kib fds threads" >"$work/samples.txt"
start=$(date +%s)
end=$((start + secs))
while kill -0 "$live_pid" 2>/dev/null; do
    now=$(( $(date +%s) - start ))
    if [ -e "$work/stop" ] || [ $(( $(date +%s) + 5 )) -ge "$end" ]; then
        break
    fi
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$live_pid/status" 2>/dev/null || true)
    thr=$(awk '/^Threads:/ {print $2}' "/proc/$live_pid/status" 2>/dev/null || true)
    fds=$(ls "/proc/$live_pid/fd" 2>/dev/null | wc -l)
    [ -n "$rss" ] && echo "$now $rss $fds $thr" | tee -a "$work/samples.txt" >&2
    scrape >"$work/metrics-$now.txt" || true
    # Wake up in time to stop the replay 5 s before the end.
    left=$((end - 5 - $(date +%s)))
    [ "$left" -gt 0 ] && sleep "$(( left < interval ? left : interval ))"
done
# The replay stops, the tap settles (its flush and report interval), a last scrape.
touch "$work/stop"
pkill -TERM -P "$replay_pid" 2>/dev/null || true
wait "$replay_pid" 2>/dev/null || true
replay_pid=""
sleep 3
scrape >"$work/metrics-last.txt"
kill -TERM "$live_pid"
set +e
wait "$live_pid"
rc=$?
set -e
live_pid=""
[ "$rc" = 0 ] || { echo "soak: live failed ($rc):" >&2; cat "$work/live.err" >&2; exit 1; }
cat "$work/live.out"

python3 - "$work" "$warmup" <<'EOF'
import glob, json, os, re, sys
from datetime import datetime, timezone
from collections import Counter
import polars as pl

work, warmup = sys.argv[1], int(sys.argv[2])
rows = [list(map(int, l.split())) for l in open(f"{work}/samples.txt").read().splitlines()[1:] if l.strip()]
after = [r for r in rows if r[0] >= warmup]
if len(after) < 2:
    sys.exit(f"soak: too few samples after the warm-up ({len(after)})")
rss = [r[1] for r in after]
fds = [r[2] for r in after]
growth = max(rss) / min(rss) - 1
failures = []
if growth > 0.10:
    failures.append(f"RSS after warm-up varies {growth:.1%} (> 10 %)")
if max(fds) - min(fds) > 4:
    failures.append(f"open files after warm-up {min(fds)}-{max(fds)}")

summary = json.load(open(f"{work}/out/summary.json"))
live = summary["input"]["live"]
if live["frames"] != live["records"] + live["ring_full_drops"]:
    failures.append(f"frames {live['frames']} != records {live['records']} + drops {live['ring_full_drops']}")

def metrics(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r'^([a-z_]+?)(?:_total)?(\{[^}]*\})? (\S+)$', line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            labels.pop("iface", None)
            out[(m.group(1), tuple(sorted(labels.items())))] = float(m.group(3))
    return out
last = metrics(open(f"{work}/metrics-last.txt").read())
for name, key in [("rocescope_tap_frames", "frames"), ("rocescope_tap_records", "records"),
                  ("rocescope_tap_ring_full_drops", "ring_full_drops")]:
    if last.get((name, ())) != live[key]:
        failures.append(f"/metrics {name} {last.get((name, ()))} != summary.json {live[key]}")
if last.get(("rocescope_frames", (("kind", "roce"),))) != summary["frames"]["roce"]:
    failures.append("/metrics rocescope_frames{kind=roce} != summary.json frames.roce")

lines = [json.loads(l) for l in open(f"{work}/findings.jsonl")] if glob.glob(f"{work}/findings.jsonl") else []
files = glob.glob(f"{work}/dataset/findings/**/*.parquet", recursive=True)
table = pl.concat([pl.read_parquet(f) for f in files]) if files else pl.DataFrame()
by_line = Counter((l["id"], l["state"]) for l in lines)
by_row = Counter(zip(table["id"].to_list(), table["state"].to_list())) if len(table) else Counter()
if by_line != by_row:
    failures.append(f"findings lines {dict(by_line)} != table rows {dict(by_row)}")
# The instances active at the last scrape: the lines written before it
# (the stop's last interval and its `stopped` ends come after).
scraped = os.path.getmtime(f"{work}/metrics-last.txt")
def written(l):
    return datetime.strptime(l["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
open_now = {}
for l in lines:
    if written(l) <= scraped:
        open_now[(l["id"], l["subject"])] = (l["severity"], l["state"] != "end")
last_line = {}
for l in lines:
    last_line[(l["id"], l["subject"])] = l["state"]
left_open = sorted(k for k, s in last_line.items() if s != "end")
if left_open:
    failures.append(f"instances the stop did not end: {left_open}")
# What was active at the last scrape ended after it: cleared by the
# stop's last interval, or `stopped` by the stop itself.
ended_after = {(l["id"], l["subject"]) for l in lines if l["state"] == "end" and written(l) > scraped}
was_open = {k for k, (_, on) in open_now.items() if on}
if not was_open <= ended_after:
    failures.append(f"active at the last scrape, not ended after it: {sorted(was_open - ended_after)}")
active = Counter()
for (i, _), (sev, on) in open_now.items():
    active[(i, sev)] += on
for (i, sev), n in active.items():
    got = last.get(("rocescope_findings_active", (("id", i), ("severity", sev))))
    if got != n:
        failures.append(f"rocescope_findings_active{{id={i},severity={sev}}} {got} != {n}")
packets = glob.glob(f"{work}/dataset/packets/**/*.parquet", recursive=True)
if packets:
    failures.append("a packets table although --tables left it out")
if os.path.exists(f"{work}/out/packets.parquet"):
    failures.append("--out has packets.parquet although --tables left it out")

print(f"soak: {len(rows)} samples over {rows[-1][0]} s; after the {warmup} s warm-up RSS "
      f"{min(rss)}-{max(rss)} KiB ({growth:.1%}), open files {min(fds)}-{max(fds)}; "
      f"frames {live['frames']}, records {live['records']}, ring-full drops {live['ring_full_drops']}; "
      f"flows {summary['totals']['flows']}, retired {summary.get('retirement', {}).get('retired_flows', 0)}, "
      f"peak live {summary.get('retirement', {}).get('peak_live_flows', 0)}; "
      f"findings lines {len(lines)} ({dict(Counter(l['state'] for l in lines))}), table rows {len(table)}")
for f in failures:
    print("soak: FAIL: " + f)
print("soak: " + ("ok" if not failures else "FAILED"))
sys.exit(1 if failures else 0)
EOF
