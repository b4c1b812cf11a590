//! The terminal report.

use std::fmt::Write;

use super::{Analysis, fmt_ip, fmt_us, fmt_utc};

/// Capture facts, findings with their numbers, PFC per priority and the
/// flows with the most retransmissions.
pub fn render_text(a: &Analysis) -> String {
    let s = &a.summary;
    let t = &s.totals;
    let mut o = String::new();
    let _ = writeln!(o, "rocescope report");
    let _ = writeln!(o);
    match s.first_ts_ns {
        Some(first) => {
            let _ = writeln!(
                o,
                "Capture: {} .. {} ({} ms); times below are t+ from its first frame",
                fmt_utc(first),
                fmt_utc(s.last_ts_ns.unwrap_or(first)),
                s.duration_ns as f64 / 1e6
            );
        }
        None => {
            let _ = writeln!(o, "Capture: empty");
        }
    }
    let f = &s.frames;
    let _ = writeln!(
        o,
        "Frames: {} (RoCE {}, CNP {}, PFC {}, 802.3x PAUSE {}, malformed {})",
        f.total, f.roce, f.cnp, f.pfc, f.pause, f.malformed
    );
    let _ = writeln!(
        o,
        "Flows: {} ({} request, {} paired); {} data packets, {} retransmitted ({:.4} %), {} rewinds (NAK {}, RNR {}, timeout {}), {} spurious, {} gaps",
        t.flows,
        t.request_flows,
        t.paired_flows,
        t.data_packets,
        t.retrans_packets,
        t.retrans_rate * 100.0,
        t.rewinds,
        t.rewinds_nak,
        t.rewinds_rnr,
        t.rewinds_timeout,
        t.spurious_retrans,
        t.gaps
    );
    let g = &t.gaps_resolved;
    if t.gaps > 0 || f.mirror_copies > 0 {
        let _ = writeln!(
            o,
            "Missing PSNs: {} late (reordered), {} lost before the tap, {} NAKed, {} missed by the capture, {} unresolved; {} mirror copies left out",
            g.late, g.lost_before_tap, g.nak_lost, g.capture_lost, g.unresolved, f.mirror_copies
        );
    }
    for fact in &s.capture_facts {
        let _ = writeln!(o, "Note: {fact}");
    }
    let _ = writeln!(
        o,
        "ECN: {} CE-marked, {} CNPs attributed, {} unattributed{}",
        t.ce,
        t.cnps,
        t.cnps_unattributed,
        s.ce_to_cnp
            .as_ref()
            .map(|r| format!(
                "; CE→CNP {:.1}/{:.1}/{:.1} µs min/mean/max",
                r.min_us, r.mean_us, r.max_us
            ))
            .unwrap_or_default()
    );
    if !s.pfc.is_empty() {
        let _ = writeln!(o, "PFC:");
        for p in &s.pfc {
            let _ = writeln!(
                o,
                "  {} priority {}: {} frames ({} XON), paused {} µs = {:.2} %, {} storms",
                s.iface_name(p.iface),
                p.priority,
                p.frames,
                p.xon_frames,
                fmt_us(p.paused_ns),
                p.fraction * 100.0,
                p.storms
            );
        }
    }
    let _ = writeln!(o);
    render_findings(&mut o, &s.findings);
    let mut top: Vec<_> = a.flows.iter().filter(|r| r.retrans_packets > 0).collect();
    top.sort_by_key(|r| (std::cmp::Reverse(r.retrans_packets), r.flow_id));
    if !top.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(o, "Top flows by retransmissions:");
        let shown: Vec<_> = top.iter().take(10).collect();
        let ends: Vec<String> = shown
            .iter()
            .map(|r| {
                format!(
                    "{} → {} QP {}",
                    fmt_ip(&r.src_ip),
                    fmt_ip(&r.dst_ip),
                    r.dest_qp
                )
            })
            .collect();
        let iw = shown
            .iter()
            .map(|r| s.iface_name(r.iface).chars().count())
            .max()
            .unwrap_or(0)
            .max(5);
        let ew = ends
            .iter()
            .map(|e| e.chars().count())
            .max()
            .unwrap_or(0)
            .max(12);
        let _ = writeln!(
            o,
            "  {:>5}  {:<iw$}  {:<ew$} {:>9} {:>8} {:>8} {:>13} {:>6} {:>8} {:>5} {:>7}",
            "flow",
            "iface",
            "src → dst",
            "data",
            "retrans",
            "rate %",
            "rewinds n/r/t",
            "depth",
            "spurious",
            "gaps",
            "Gb/s"
        );
        for (r, ends) in shown.iter().zip(&ends) {
            let _ = writeln!(
                o,
                "  {:>5}  {:<iw$}  {:<ew$} {:>9} {:>8} {:>8.3} {:>13} {:>6} {:>8} {:>5} {:>7.2}",
                r.flow_id,
                s.iface_name(r.iface),
                ends,
                r.data_packets,
                r.retrans_packets,
                r.retrans_rate * 100.0,
                format!("{}/{}/{}", r.rewinds_nak, r.rewinds_rnr, r.rewinds_timeout),
                r.max_rewind_depth,
                r.spurious_retrans,
                r.gaps,
                r.gbps
            );
        }
    }
    o
}

/// The findings block of a report (`Findings:` and one entry per finding),
/// shared by the capture report and `rocescope counters report`.
pub fn render_findings(o: &mut String, findings: &[super::Finding]) {
    if findings.is_empty() {
        let _ = writeln!(o, "Findings: none");
    } else {
        let _ = writeln!(o, "Findings:");
        for fd in findings {
            let _ = writeln!(
                o,
                "  [{}] {}: {}",
                fd.severity.to_uppercase(),
                fd.id,
                fd.title
            );
            let _ = writeln!(o, "      {}", fd.detail);
            let _ = writeln!(o, "      → {}", fd.recommendation);
            if !fd.flows.is_empty() {
                let ids: Vec<String> = fd.flows.iter().take(20).map(|i| i.to_string()).collect();
                let more = if fd.flows.len() > 20 { ", …" } else { "" };
                let _ = writeln!(o, "      flows: {}{more}", ids.join(", "));
            }
            if let Some(line) = fd.wireshark.as_ref().and_then(|w| w.report_line(fd.id)) {
                let _ = writeln!(o, "      {line}");
            }
        }
    }
}
