//! The terminal report (docs/report.md): a headline block, one line per
//! finding, worst first; the capture's facts; each finding's evidence and
//! what to change; the flows with the most retransmissions. Paragraphs are
//! wrapped to a width (the terminal's), or left whole for a pipe.
//!
//! Also `report --json`'s object: `summary.json` plus the flows' rows
//! (`report/json.rs`).

use std::fmt::Write;

use super::date::fmt_utc;
use super::transports;
use crate::analyze::{Analysis, Finding, FlowRow, FrameCounts};
use crate::render::{fmt_count, fmt_duration, fmt_gbps, fmt_ip, fmt_pct, fmt_pfc};
use crate::render::{fmt_delay, fmt_flow_end, fmt_ns};

mod json;
pub use json::{flow_json, render_json};

/// Findings' flows listed by id before "…".
const FLOW_IDS_SHOWN: usize = 20;
/// Rows of the top-flows table.
const TOP_FLOWS: usize = 10;
/// Findings of one id shown before the rest are summed up in one line
/// (a report stays readable however many times one finding is raised;
/// `report --json` has them all).
pub const SHOWN_PER_ID: usize = 5;

/// The findings shown (the first [`SHOWN_PER_ID`] of each id, in order)
/// and, per id, how many more there are.
pub fn shown_findings(list: &[Finding]) -> (Vec<&Finding>, Vec<(&'static str, usize)>) {
    let mut shown = Vec::new();
    let mut more: Vec<(&'static str, usize)> = Vec::new();
    for f in list {
        let seen = shown.iter().filter(|s: &&&Finding| s.id == f.id).count();
        if seen < SHOWN_PER_ID {
            shown.push(f);
        } else if let Some(m) = more.iter_mut().find(|(id, _)| *id == f.id) {
            m.1 += 1;
        } else {
            more.push((f.id, 1));
        }
    }
    (shown, more)
}

/// "… and 12 more pfc-congestion-tree findings (report --json lists them all)".
pub fn more_findings(id: &str, n: usize) -> String {
    format!(
        "… and {n} more {id} {} (report --json lists them all)",
        if n == 1 { "finding" } else { "findings" }
    )
}

/// A finding's impact as the report and the HTML page print it:
/// `impact 20.04 %`.
pub fn impact_words(f: &Finding) -> String {
    format!("impact {}", fmt_pct(f.impact))
}

/// The frame counts every command prints the same way: what was read, what
/// was decoded into records (by kind) and what was neither.
pub fn frames_line(frames_read: u64, f: &FrameCounts) -> String {
    // Another transport is named only when it had frames: RoCE captures
    // read as before.
    let others: String = f
        .beyond_roce_by_transport()
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(t, n)| format!(", {n} {}", t.entry().label))
        .collect();
    format!(
        "{} read: {} decoded ({} RoCE{others}, {} CNP, {} PFC, {} 802.3x PAUSE, {} malformed), {} other",
        fmt_count(frames_read, "frame"),
        f.total,
        f.roce,
        f.cnp,
        f.pfc,
        f.pause,
        f.malformed,
        frames_read.saturating_sub(f.total)
    )
}

/// Holds a number to its unit (`100.2 µs`) and a name to its number
/// (`QP 514`, `priority 3`) while a paragraph is wrapped: textwrap breaks
/// at ASCII spaces only, and this is none.
const GLUE: char = '\u{a0}';

fn glue(text: &str) -> String {
    const UNITS: [&str; 8] = ["ns", "µs", "ms", "s", "%", "Gb/s", "Mb/s", "min"];
    const NAMES: [&str; 5] = ["QP", "priority", "PSN", "flow", "T"];
    let words: Vec<&str> = text.split(' ').collect();
    let mut out = String::with_capacity(text.len());
    for (i, w) in words.iter().enumerate() {
        out.push_str(w);
        let Some(next) = words.get(i + 1) else {
            break;
        };
        let unit = next.trim_end_matches([',', ';', '.', ')', ':']);
        let number_before = w.ends_with(|c: char| c.is_ascii_digit());
        let number_after = next.starts_with(|c: char| c.is_ascii_digit());
        let glued = (number_before && UNITS.contains(&unit))
            || (number_after && NAMES.contains(&w.trim_start_matches('(')));
        out.push(if glued { GLUE } else { ' ' });
    }
    out
}

/// Lays paragraphs out at a width, or unwrapped.
struct Page {
    out: String,
    width: Option<usize>,
}

impl Page {
    /// `text` with `first` before its first line and `rest` before the
    /// others, wrapped at spaces (never inside a word: an address, an id or
    /// a file name longer than the line stays whole).
    fn para(&mut self, first: &str, rest: &str, text: &str) {
        match self.width {
            Some(w) => {
                let opts = textwrap::Options::new(w)
                    .initial_indent(first)
                    .subsequent_indent(rest)
                    .break_words(false)
                    .word_splitter(textwrap::WordSplitter::NoHyphenation);
                let glued = glue(text);
                for line in textwrap::wrap(&glued, opts) {
                    let _ = writeln!(self.out, "{}", line.trim_end().replace(GLUE, " "));
                }
            }
            None => {
                let _ = writeln!(self.out, "{first}{text}");
            }
        }
    }

    /// Each line of `text` a paragraph of its own, indented by `indent`.
    fn lines(&mut self, indent: &str, text: &str) {
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            self.para(indent, &format!("{indent}  "), line);
        }
    }

    fn blank(&mut self) {
        self.out.push('\n');
    }
}

/// The report, `width` columns wide (`None`: one line per paragraph).
/// `frames_read` is every frame of the captures, decoded or not.
pub fn render_text(a: &Analysis, frames_read: u64, width: Option<usize>) -> String {
    let s = &a.summary;
    let t = &s.totals;
    let mut p = Page {
        out: String::new(),
        width: width.map(|w| w.max(20)),
    };

    headline(&mut p, &s.findings);
    p.blank();

    p.para("", "", "Capture");
    match s.first_ts_ns {
        Some(first) => p.para(
            "  ",
            "    ",
            &format!(
                "{} to {} ({}); times below are t+ from its first frame",
                fmt_utc(first),
                fmt_utc(s.last_ts_ns.unwrap_or(first)),
                fmt_duration(s.duration_ns)
            ),
        ),
        None => p.para("  ", "    ", "empty: no frame was decoded"),
    }
    p.para("  ", "    ", &frames_line(frames_read, &s.frames));
    // RoCE's flow and ECN lines (its totals) are left out of a capture of
    // other transports alone: zeros there would read as RoCE traffic that
    // did nothing.
    let roce = s.frames.beyond_roce() == 0 || s.frames.roce > 0 || s.frames.cnp > 0;
    if roce {
        p.para(
        "  ",
        "    ",
        &format!(
            "{}{} ({} request, {} paired); {}, {} retransmitted ({}); {} ({} NAK, {} RNR, {} timeout), {} spurious, {}",
            // The totals are RoCE's: said so when another transport's
            // frames are beside them.
            if s.frames.beyond_roce() > 0 { "RoCE: " } else { "" },
            fmt_count(t.flows, "flow"),
            t.request_flows,
            t.paired_flows,
            fmt_count(t.data_packets, "data packet"),
            t.retrans_packets,
            fmt_pct(t.retrans_rate),
            fmt_count(t.rewinds, "rewind"),
            t.rewinds_nak,
            t.rewinds_rnr,
            t.rewinds_timeout,
            t.spurious_retrans,
            fmt_count(t.gaps, "gap")
        ),
    );
    }
    for line in transports::totals_lines(s) {
        p.para("  ", "    ", &line);
    }
    let g = &t.gaps_resolved;
    if t.gaps > 0 || s.frames.mirror_copies > 0 {
        p.para(
            "  ",
            "    ",
            &format!(
                "{}issing PSNs: {} late (reordered), {} lost before the tap, {} NAKed, {} missed by the capture, {} unresolved; {} left out",
                if s.beyond_roce() { "RoCE's m" } else { "M" },
                g.late,
                g.lost_before_tap,
                g.nak_lost,
                g.capture_lost,
                g.unresolved,
                fmt_count(s.frames.mirror_copies, "mirror copy")
            ),
        );
    }
    let mut ecn = format!(
        "ECN: {}, {} attributed to flows, {} unattributed",
        fmt_count(t.ce, "CE-marked packet"),
        fmt_count(t.cnps, "CNP"),
        t.cnps_unattributed
    );
    if let Some(r) = &s.ce_to_cnp {
        let us = |x: f64| fmt_duration((x * 1e3).round() as u64);
        let _ = write!(
            ecn,
            "; CE→CNP reaction {} min, {} mean, {} max",
            us(r.min_us),
            us(r.mean_us),
            us(r.max_us)
        );
    }
    if roce {
        p.para("  ", "    ", &ecn);
    }
    for line in transports::ecn_lines(s) {
        p.para("  ", "    ", &line);
    }
    for pfc in &s.pfc {
        p.para(
            "  ",
            "    ",
            &format!(
                "PFC on {}, {}",
                fmt_pfc(&s.iface_name(pfc.iface), pfc),
                fmt_count(pfc.storms, "storm")
            ),
        );
    }
    for fact in &s.capture_facts {
        p.para("  ", "    ", &format!("Note: {fact}"));
    }

    findings(&mut p, &s.findings);
    hops(&mut p, a);
    nics(&mut p, a);
    top_flows(&mut p, a);
    p.out
}

/// Most hop rows the text shows (all are in `hops.parquet`).
const SHOWN_HOPS: usize = 12;

/// Clock offsets and per-hop delays (`docs/report.md`, "Hops").
fn hops(p: &mut Page, a: &Analysis) {
    let s = &a.summary;
    if s.clock_offsets.is_empty() && a.hops.is_empty() {
        return;
    }
    p.blank();
    p.para("", "", "Hops (frames matched across taps)");
    for c in &s.clock_offsets {
        let how = match (c.source, c.uncertainty_ns) {
            (crate::analyze::hops::OffsetSource::Estimated, Some(u)) => {
                format!("estimated from traffic both ways, ± {}", fmt_ns(u))
            }
            (crate::analyze::hops::OffsetSource::Agree, Some(u)) => format!(
                "estimated {} ± {} from traffic both ways; every delay was at least 0 without it: not corrected",
                fmt_ns(c.estimate_ns.unwrap_or(0)),
                fmt_ns(u)
            ),
            (crate::analyze::hops::OffsetSource::Imposed, _) => {
                "imposed (--clock-offset)".to_string()
            }
            _ => "not estimated (traffic one way only): taken as 0".to_string(),
        };
        // The clock ahead first.
        let (ahead, behind, off) = if c.offset_ns < 0 {
            (&c.tap_a_name, &c.tap_b_name, -c.offset_ns)
        } else {
            (&c.tap_b_name, &c.tap_a_name, c.offset_ns)
        };
        p.para(
            "  ",
            "    ",
            &format!(
                "Clock {ahead} − {behind}: {} ({how}; {})",
                fmt_ns(off),
                fmt_count(c.matched, "matched frame")
            ),
        );
    }
    let mut rows: Vec<_> = a.hops.iter().collect();
    rows.sort_by_key(|h| std::cmp::Reverse(h.frames_up + h.down_only));
    for h in rows.iter().take(SHOWN_HOPS) {
        p.para(
            "  ",
            "    ",
            &format!(
                "{} → {}: {} → {} QP {}: {} upstream, {} matched, {} missing downstream, {} downstream only; one-way delay min {}, p50 {}, p99 {}, max {}",
                s.iface_name(h.up_iface),
                s.iface_name(h.down_iface),
                fmt_ip(&h.src_ip),
                fmt_ip(&h.dst_ip),
                h.dest_qp,
                h.frames_up,
                h.matched,
                h.missing_down,
                h.down_only,
                fmt_delay(h.delay_min_ns),
                fmt_delay(h.delay_p50_ns),
                fmt_delay(h.delay_p99_ns),
                fmt_delay(h.delay_max_ns)
            ),
        );
    }
    if rows.len() > SHOWN_HOPS {
        p.para(
            "  ",
            "    ",
            &format!("… {} more in hops.parquet", rows.len() - SHOWN_HOPS),
        );
    }
}

/// How fast each NIC reacts (`docs/report.md`, "NIC reaction latencies").
fn nics(p: &mut Page, a: &Analysis) {
    let lines = super::nics::nic_lines(a);
    if lines.is_empty() {
        return;
    }
    p.blank();
    p.para(
        "",
        "",
        "NIC reaction latencies at the tap (p50, p99, max, samples)",
    );
    for l in &lines {
        p.para("  ", "    ", l);
    }
}

/// The headline: what an on-call engineer reads first, one line per
/// finding (they come worst first).
fn headline(p: &mut Page, list: &[Finding]) {
    if list.is_empty() {
        p.para("", "", "No findings: nothing looks wrong in this capture.");
    }
    let (shown, more) = shown_findings(list);
    for (i, f) in shown.iter().enumerate() {
        p.para(
            &format!("{:<9}", f.severity.as_str().to_uppercase()),
            &" ".repeat(9),
            &f.title,
        );
        // The rest of an id, counted under its last line shown.
        let last_of_id = shown[i + 1..].iter().all(|g| g.id != f.id);
        if let Some((id, n)) = more
            .iter()
            .find(|(id, _)| *id == f.id)
            .filter(|_| last_of_id)
        {
            p.para(&" ".repeat(9), &" ".repeat(11), &more_findings(id, *n));
        }
    }
}

/// Each finding: its evidence (a paragraph per fact), what to change, its flows.
fn findings(p: &mut Page, list: &[Finding]) {
    if !list.is_empty() {
        p.blank();
        p.para("", "", "Findings");
    }
    let (shown, more) = shown_findings(list);
    for (i, f) in shown.into_iter().enumerate() {
        p.blank();
        p.para(
            "  ",
            "     ",
            &format!(
                "{}. {} ({}, {}): {}",
                i + 1,
                f.severity.as_str().to_uppercase(),
                f.id,
                impact_words(f),
                f.title
            ),
        );
        p.lines("     ", &f.detail);
        p.para("     → ", "       ", &f.recommendation);
        if !f.flows.is_empty() {
            let ids: Vec<String> = f
                .flows
                .iter()
                .take(FLOW_IDS_SHOWN)
                .map(u32::to_string)
                .collect();
            let more = if f.flows.len() > FLOW_IDS_SHOWN {
                ", …"
            } else {
                ""
            };
            let label = if f.flows.len() == 1 { "Flow" } else { "Flows" };
            p.para(
                "     ",
                "       ",
                &format!("{label}: {}{more}", ids.join(", ")),
            );
        }
        if let Some(line) = f.wireshark.as_ref().and_then(|w| w.report_line(f.id)) {
            p.para("     ", "       ", &line);
        }
    }
    for (id, n) in more {
        p.blank();
        p.para("  ", "    ", &more_findings(id, n));
    }
}

/// The headline and the findings, unwrapped: for other commands'
/// reports (`counters`).
pub fn render_findings(o: &mut String, list: &[Finding]) {
    let mut p = Page {
        out: String::new(),
        width: None,
    };
    headline(&mut p, list);
    findings(&mut p, list);
    o.push_str(&p.out);
}

/// The flows with the most retransmissions: a table where it fits the
/// width, else one wrapped paragraph per flow.
fn top_flows(p: &mut Page, a: &Analysis) {
    let s = &a.summary;
    let mut top: Vec<&FlowRow> = a.flows.iter().filter(|r| r.retrans_packets > 0).collect();
    top.sort_by_key(|r| (std::cmp::Reverse(r.retrans_packets), r.flow_id));
    top.truncate(TOP_FLOWS);
    if top.is_empty() {
        return;
    }
    p.blank();
    p.para("", "", "Top flows by retransmissions");
    let ends: Vec<String> = top
        .iter()
        .map(|r| {
            format!(
                "{} → {} {}",
                fmt_ip(&r.src_ip),
                fmt_ip(&r.dst_ip),
                fmt_flow_end(r)
            )
        })
        .collect();
    let head = [
        "flow",
        "iface",
        "src → dst",
        "data",
        "retrans",
        "rate",
        "rewinds n/r/t",
        "depth",
        "spurious",
        "gaps",
        "Gb/s",
    ];
    let rows: Vec<[String; 11]> = top
        .iter()
        .zip(&ends)
        .map(|(r, ends)| {
            [
                r.flow_id.to_string(),
                s.iface_name(r.iface),
                ends.clone(),
                r.data_packets.to_string(),
                r.retrans_packets.to_string(),
                fmt_pct(r.retrans_rate),
                format!("{}/{}/{}", r.rewinds_nak, r.rewinds_rnr, r.rewinds_timeout),
                r.max_rewind_depth.to_string(),
                r.spurious_retrans.to_string(),
                r.gaps.to_string(),
                format!("{:.2}", r.gbps),
            ]
        })
        .collect();
    let mut widths = head.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let total = 2 + widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
    if p.width.is_none_or(|w| total <= w) {
        // Names and addresses left-aligned, numbers right-aligned.
        let line = |cells: &[String]| {
            let mut l = String::from(" ");
            for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
                let pad = w - c.chars().count();
                l.push(' ');
                if matches!(i, 1 | 2) {
                    l.push_str(c);
                    l.push_str(&" ".repeat(pad));
                } else {
                    l.push_str(&" ".repeat(pad));
                    l.push_str(c);
                }
                l.push(' ');
            }
            l.trim_end().to_string()
        };
        let _ = writeln!(p.out, "{}", line(&head.map(String::from)));
        for row in &rows {
            let _ = writeln!(p.out, "{}", line(row));
        }
        return;
    }
    for (r, ends) in top.iter().zip(&ends) {
        p.para(
            "  ",
            "    ",
            &format!(
                "flow {} on {}, {}: {}, {} retransmitted ({}); rewinds {} NAK, {} RNR, {} timeout, deepest {}; {} spurious, {}; {}",
                r.flow_id,
                s.iface_name(r.iface),
                ends,
                fmt_count(r.data_packets, "data packet"),
                r.retrans_packets,
                fmt_pct(r.retrans_rate),
                r.rewinds_nak,
                r.rewinds_rnr,
                r.rewinds_timeout,
                r.max_rewind_depth,
                r.spurious_retrans,
                fmt_count(r.gaps, "gap"),
                fmt_gbps(r.gbps)
            ),
        );
    }
}
