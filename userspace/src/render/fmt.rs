//! Values as the report, the findings, the events' `detail` and the HTML
//! page print them: durations, flows, addresses, offsets, rates, counts,
//! shares, delays, how a pause ended.

use crate::addr::{Ip, Mac};
use crate::analyze::tree::PauseNode;
use crate::analyze::{FlowRow, PauseEnd, PfcSummary};

/// A value scaled to the unit its size calls for: ns below 1 µs, µs below
/// 1 ms, ms below 1 s, s above, with `decimals[i]` decimals in unit `i`
/// (a value that rounds up to 1000 of a unit moves to the next one).
fn scaled(ns: u64, decimals: [usize; 4]) -> String {
    const UNITS: [(&str, f64); 4] = [("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)];
    let x = ns as f64;
    let mut i = UNITS
        .iter()
        .rposition(|&(_, scale)| x >= scale)
        .unwrap_or(0);
    // 999.96 µs is 1.00 ms, not "1000.0 µs".
    if i < 3 {
        let shown = format!("{:.*}", decimals[i], x / UNITS[i].1);
        if shown.parse::<f64>().is_ok_and(|v| v >= 1000.0) {
            i += 1;
        }
    }
    let (unit, scale) = UNITS[i];
    format!("{:.*} {unit}", decimals[i], x / scale)
}

/// A duration for a person, in the unit its size calls for: `850 ns`,
/// `100.3 µs`, `249.81 ms`, `12.50 s`. Every duration the report, the
/// findings and the events' `detail` print goes through here.
pub fn fmt_duration(ns: u64) -> String {
    scaled(ns, [0, 1, 2, 2])
}

/// How a pause interval ended (`pfc.parquet`'s `ended_by`), in words.
pub fn fmt_ended_by(ended_by: PauseEnd) -> &'static str {
    match ended_by {
        PauseEnd::Xon => "ended by an XON",
        PauseEnd::Expiry => "ran out without a refresh",
        PauseEnd::CaptureEnd => "still paused when the capture ended",
    }
}

/// A flow as findings name it: `flow 3 (10.0.0.1 → 10.0.0.2 QP 17, leaf0)`.
pub fn fmt_flow(id: u32, src: &[u8; 16], dst: &[u8; 16], qp: u32, iface: &str) -> String {
    format!(
        "flow {id} ({} → {} QP {qp}, {iface})",
        fmt_ip(src),
        fmt_ip(dst)
    )
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn fmt_mac(m: &[u8; 6]) -> String {
    Mac(*m).to_string()
}

/// An address in its usual form (IPv4-mapped addresses as IPv4).
pub fn fmt_ip(a: &[u8; 16]) -> String {
    Ip(*a).to_string()
}

/// What names a flow between its two addresses: a QP's destination QP
/// (`QP 17`), a UET PDC direction's sending PDC id (`PDC 256`).
pub fn fmt_flow_end(r: &FlowRow) -> String {
    r.transport_end()
        .unwrap_or_else(|| format!("QP {}", r.dest_qp))
}

/// A time since the capture's first frame, to the microsecond:
/// `t+700.5 µs`, `t+124.568 ms`, `t+12.345678 s`.
pub fn fmt_offset(ns: u64) -> String {
    format!("t+{}", scaled(ns, [0, 1, 3, 6]))
}

/// A rate in Gb/s (`119.19 Gb/s`; below 1 Gb/s, Mb/s).
pub fn fmt_gbps(gbps: f64) -> String {
    if gbps > 0.0 && gbps < 1.0 {
        format!("{:.1} Mb/s", gbps * 1e3)
    } else {
        format!("{gbps:.2} Gb/s")
    }
}

/// `n` and the noun, plural unless `n` is 1: `1 flow`, `2 flows`,
/// `3 copies`, `1 CNP`, `0 NAKs`.
pub fn fmt_count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        return format!("1 {noun}");
    }
    let plural = match noun.strip_suffix('y') {
        Some(stem) if !stem.ends_with(['a', 'e', 'o', 'u']) => format!("{stem}ies"),
        _ => format!("{noun}s"),
    };
    format!("{n} {plural}")
}

/// A fraction as a percentage with two decimals: `20.04 %`.
pub fn fmt_pct(x: f64) -> String {
    format!("{:.2} %", x * 100.0)
}

/// A signed delay (a clock offset may leave one below 0).
pub fn fmt_ns(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", fmt_duration(ns.unsigned_abs()))
    } else {
        fmt_duration(ns as u64)
    }
}

/// A hop's delay, or a dash when none of its frames could be timed.
pub fn fmt_delay(ns: Option<i64>) -> String {
    ns.map_or_else(|| "–".into(), fmt_ns)
}

/// A port and priority's PFC in one phrase: `leaf0 priority 3: 8 PFC
/// frames (2 XON), paused 200.3 µs = 20.04 % of the capture`.
pub fn fmt_pfc(iface: &str, p: &PfcSummary) -> String {
    format!(
        "{iface} priority {}: {} ({} XON), paused {} = {} of the capture",
        p.priority,
        fmt_count(p.frames, "PFC frame"),
        p.xon_frames,
        fmt_duration(p.paused_ns),
        fmt_pct(p.fraction)
    )
}

/// A pause tree node's sender as findings name it: its MAC, after its
/// device when the topology file names it (`r0 [02:00:00:02:00:01]`).
pub fn fmt_pause_sender(node: &PauseNode) -> String {
    match &node.device {
        Some(d) => format!("{d} [{}]", node.src_mac),
        None => node.src_mac.clone(),
    }
}

/// A pause tree node's tap as findings name it: the interface, and its
/// place when the topology file gives it (`leaf1-r0-both [leaf1 Ethernet0]`).
pub fn fmt_pause_tap(node: &PauseNode) -> String {
    match &node.place {
        Some(p) => format!("{} [{p}]", node.iface_name),
        None => node.iface_name.clone(),
    }
}
