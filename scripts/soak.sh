#!/usr/bin/env bash
# Soak test of the live tap: `rocescope live` on one end of a veth pair (in a
# network namespace of its own) for SECONDS while `rocescope replay` sends a
# capture into the other end at a steady PPS, over and over. The live
# process's RSS and open file descriptors are sampled every SOAK_INTERVAL
# seconds; the run fails if RSS keeps growing (the second half's peak more
# than 25 % + 16 MiB above the first half's) or the open-file count grows by
# more than 3 (packets, events and timeline are opened when their first
# batch is written, which may come late).
#
#   scripts/soak.sh [SECONDS] [PPS]        (defaults: 600 s, 5000 frames/s)
#
# Needs root and iproute2. Not part of the default test run. Environment:
#   ROCESCOPE      the binary (default: cargo build --release, then that one)
#   SOAK_CAPTURE   what to replay (default: pcaps/ghost-drop.pcapng)
#   SOAK_INTERVAL  seconds between samples (default 10)
#   SOAK_KEEP      a directory to keep the tables, samples and logs in
set -euo pipefail

secs="${1:-600}"
pps="${2:-5000}"
interval="${SOAK_INTERVAL:-10}"
for n in "$secs" "$pps" "$interval"; do
    case "$n" in '' | *[!0-9]*) echo "soak: numbers only, got '$n'" >&2; exit 2 ;; esac
done
[ "$(id -u)" = 0 ] || { echo "soak: needs root (network namespace, XDP)" >&2; exit 2; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${ROCESCOPE:-}"
if [ -z "$bin" ]; then
    (cd "$root" && cargo build --release --locked -p rocescope >&2)
    bin="${CARGO_TARGET_DIR:-$root/target}/release/rocescope"
fi
cap="${SOAK_CAPTURE:-$root/pcaps/ghost-drop.pcapng}"

id="$$"
ns="rocescope-soak-$id"
a="rsoa$id"
b="rsob$id"
work="$(mktemp -d)"
live_pid=""
replay_pid=""
cleanup() {
    touch "$work/stop"
    [ -n "$replay_pid" ] && kill "$replay_pid" 2>/dev/null || true
    [ -n "$live_pid" ] && kill "$live_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    ip netns delete "$ns" 2>/dev/null || true
    if [ -n "${SOAK_KEEP:-}" ]; then
        mkdir -p "$SOAK_KEEP" && cp -a "$work"/. "$SOAK_KEEP"/
    fi
    rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$ns"
ip -n "$ns" link add "$a" type veth peer name "$b"
for dev in "$a" "$b"; do
    ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"
    ip -n "$ns" link set "$dev" up
done

# `ip netns exec` execs the binary: $! is rocescope's pid.
ip netns exec "$ns" "$bin" live --iface "$b" --out "$work/out" --duration "${secs}s" \
    >"$work/live.out" 2>"$work/live.err" &
live_pid=$!
for _ in $(seq 1 600); do
    grep -q "XDP attached" "$work/live.err" 2>/dev/null && break
    kill -0 "$live_pid" 2>/dev/null || { cat "$work/live.err" >&2; exit 1; }
    sleep 0.1
done

(
    while [ ! -e "$work/stop" ]; do
        ip netns exec "$ns" "$bin" replay "$cap" --iface "$a" --pps "$pps" >>"$work/replay.out" 2>&1 || break
    done
) &
replay_pid=$!

echo "soak: live on $b for ${secs}s, replaying $(basename "$cap") at $pps frames/s; sampling every ${interval}s" >&2
echo "t_s rss_kib fds threads" >"$work/samples.txt"
start=$(date +%s)
while kill -0 "$live_pid" 2>/dev/null; do
    now=$(( $(date +%s) - start ))
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$live_pid/status" 2>/dev/null || true)
    thr=$(awk '/^Threads:/ {print $2}' "/proc/$live_pid/status" 2>/dev/null || true)
    fds=$(ls "/proc/$live_pid/fd" 2>/dev/null | wc -l)
    [ -n "$rss" ] && echo "$now $rss $fds $thr" | tee -a "$work/samples.txt" >&2
    sleep "$interval"
done
set +e
wait "$live_pid"
rc=$?
set -e
live_pid=""
touch "$work/stop"
wait "$replay_pid" 2>/dev/null || true
replay_pid=""
[ "$rc" = 0 ] || { echo "soak: live failed ($rc):" >&2; cat "$work/live.err" >&2; exit 1; }
cat "$work/live.out"

python3 - "$work/samples.txt" "$work/out/summary.json" <<'EOF'
import json, sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]).read().splitlines()[1:] if l.strip()]
if len(rows) < 4:
    sys.exit("soak: too few samples")
half = len(rows) // 2
first, second = rows[:half], rows[half:]
peak1 = max(r[1] for r in first)
peak2 = max(r[1] for r in second)
fds = [r[2] for r in rows]
live = json.load(open(sys.argv[2]))["input"]["live"]
print(f"soak: {len(rows)} samples over {rows[-1][0]} s; RSS first half peak {peak1} KiB, "
      f"second half peak {peak2} KiB, last {rows[-1][1]} KiB; open files {fds[0]} at start, "
      f"{min(fds)}-{max(fds)}, {fds[-1]} at the end; "
      f"frames {live['frames']}, records {live['records']}, ring-full drops {live['ring_full_drops']}")
ok = peak2 <= peak1 * 1.25 + 16 * 1024 and max(fds) <= fds[0] + 3
print("soak: " + ("flat: no growth" if ok else "GROWTH"))
sys.exit(0 if ok else 1)
EOF
