//! `report --html FILE`: one self-contained HTML page — findings, the flow
//! table and the key plots as inline SVG drawn here (plotters, SVG backend
//! only). It fetches nothing: no scripts, style sheets, fonts or images
//! from anywhere; the page opens from a mail attachment on an air-gapped
//! laptop.
//!
//! The report is an [`Output`] of the record pipeline, so it sees the same
//! stream as the tables and keeps bounded memory:
//!
//! * PSN-vs-time points for the first [`MAX_FLOWS`] request flows, at most
//!   about [`MAX_POINTS`] per flow: retransmissions and rewinds are always
//!   kept, original sends are thinned (every 2nd, 4th, … once a flow
//!   overflows), which keeps the picture's shape;
//! * timeline rows merged into at most [`MAX_BINS`] bins per flow (the bin
//!   width doubles as needed);
//! * pause intervals and findings from the finished analysis.
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rocescope_common::PacketRecord;

use crate::Result;
use crate::addr::Mac;
use crate::analyze::{self, Analysis, Config, EventKind, FlowRow, TimelineRow, Verdict};
use crate::output::{Output, RunFacts};
use crate::render::{self, fmt_utc};
use crate::render::{fmt_count, fmt_duration, fmt_ip};

mod counters;
mod nics;
mod page;
pub(crate) mod plots;
mod series;
mod tree;

use page::{Page, top_flows_by_bytes};
pub(crate) use series::{Bin, FlowPoints, Mark, Series, plot_bin_ns};

/// Request flows whose packets are kept for PSN plots.
pub const MAX_FLOWS: usize = 512;
/// Points kept per flow (about: retransmissions beyond it are still kept).
pub const MAX_POINTS: usize = 4096;
/// Timeline bins kept per flow.
pub const MAX_BINS: usize = 1024;
/// Bins a throughput or CE/CNP plot aims for over the capture.
pub const PLOT_BINS: u64 = 200;
/// Flows drawn in a throughput plot.
const THROUGHPUT_FLOWS: usize = 6;
/// Rows of the flow table.
const TABLE_ROWS: usize = 50;

/// Collects what the report draws while the capture streams through, and
/// writes the page when the run ends.
pub struct HtmlReport {
    path: PathBuf,
    dscp_to_priority: Option<[u8; 64]>,
    points: HashMap<u32, FlowPoints>,
    timeline: HashMap<u32, Series>,
    /// A rewind event just seen, for the record that follows it.
    pending_rewind: Option<(u32, u32)>,
    /// NIC counters of the same minutes (`--counters`).
    counters: Vec<crate::counters::Series>,
}

impl HtmlReport {
    pub fn new(path: &Path, config: &Config) -> Self {
        Self {
            path: path.to_path_buf(),
            dscp_to_priority: config.dscp_to_priority,
            points: HashMap::new(),
            timeline: HashMap::new(),
            pending_rewind: None,
            counters: Vec::new(),
        }
    }

    /// Also draws these counters and reconciles them with the capture.
    pub fn with_counters(mut self, series: Vec<crate::counters::Series>) -> Self {
        self.counters = series;
        self
    }

    /// The flow's priority as the analyzer assigns it (PCP, else DSCP map).
    fn priority(&self, f: &FlowRow) -> Option<u8> {
        f.pcp.or_else(|| {
            f.dscp.map(|d| match &self.dscp_to_priority {
                Some(map) => map[usize::from(d & 63)],
                None => d >> 3,
            })
        })
    }

    /// Renders the page.
    pub fn render(&self, analysis: &Analysis, facts: &RunFacts) -> Result<String> {
        let s = &analysis.summary;
        let t0 = s.first_ts_ns.unwrap_or(0);
        let t1 = s.last_ts_ns.unwrap_or(t0).max(t0 + 1);
        let page = Page {
            report: self,
            analysis,
            t0,
            t1,
            path: &self.path,
            drawn: Default::default(),
        };

        let mut h = String::with_capacity(256 * 1024);
        h.push_str(HEAD);
        let title = match facts.captures.as_slice() {
            [one] => format!("rocescope — {one}"),
            many => format!("rocescope — {} captures", many.len()),
        };
        let _ = write!(
            h,
            "<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
            esc(&title),
            esc(&title)
        );
        let _ = writeln!(
            h,
            "<p class=facts>{} to {} ({}) · {} · {} · link {} Gb/s</p>",
            esc(&fmt_utc(t0)),
            esc(&fmt_utc(t1)),
            esc(&fmt_duration(s.duration_ns)),
            esc(&render::frames_line(facts.frames_read, &s.frames)),
            // The totals are RoCE's: said so when another transport's are
            // beside them.
            fmt_count(
                s.totals.flows,
                if s.beyond_roce() { "RoCE flow" } else { "flow" }
            ),
            s.link_speed_bps as f64 / 1e9,
        );
        // The other transports' totals and ECN, as the terminal report's
        // Capture section says them (docs/report.md).
        let lines = render::transports::totals_lines(s);
        for line in lines.iter().chain(&render::transports::ecn_lines(s)) {
            let _ = writeln!(h, "<p class=facts>{}</p>", esc(line));
        }
        if let Some(stop) = &facts.stopped_by {
            let _ = writeln!(
                h,
                "<p class=warn>Stopped early: {} (everything before it is analysed)</p>",
                esc(stop)
            );
        }

        let recon = (!self.counters.is_empty())
            .then(|| crate::counters::reconcile::reconcile(analysis, &self.counters));
        let mut findings = s.findings.clone();
        if let Some(r) = &recon {
            findings.extend(crate::counters::words::reconciled_findings(r));
            analyze::rank_findings(&mut findings);
        }
        // The headline: one line per finding, worst first, linked to its
        // section (the first few of each id; the rest counted).
        let (shown, more) = render::shown_findings(&findings);
        h.push_str("<h2>Findings</h2>\n");
        if findings.is_empty() {
            h.push_str("<p>No findings: nothing looks wrong in this capture.</p>\n");
        } else {
            h.push_str("<ul class=headline>\n");
            for (i, f) in shown.iter().enumerate() {
                let _ = writeln!(
                    h,
                    "<li><span class=\"sev {sev}\">{sev}</span> <a href=\"#finding-{i}\">{}</a></li>",
                    esc(&f.title),
                    sev = esc(f.severity.as_str()),
                );
            }
            for (id, n) in &more {
                let _ = writeln!(h, "<li>{}</li>", esc(&render::more_findings(id, *n)));
            }
            h.push_str("</ul>\n");
        }
        for (i, f) in shown.iter().enumerate() {
            page.finding(&mut h, i, f)?;
        }

        // The overview: the worst flow's PSN (unless a finding drew it),
        // throughput, CE/CNP, PFC per port.
        h.push_str("<h2>Overview</h2>\n");
        let request: Vec<&FlowRow> = analysis.flows.iter().collect();
        if let Some(worst) = self.worst_flow(&request)
            && !page.drawn(&format!("psn {}", worst.flow_id))
        {
            page.psn(&mut h, worst)?;
        }
        let top = top_flows_by_bytes(analysis, THROUGHPUT_FLOWS);
        if top.is_empty() {
            h.push_str("<p class=note>No request flow carried data.</p>\n");
        } else {
            page.throughput(
                &mut h,
                &top,
                &format!(
                    "Gb/s sent per flow (first transmissions and retransmissions), the {} busiest request flows; shaded: a PFC pause on any interface",
                    top.len()
                ),
            )?;
        }
        if s.totals.ce + s.totals.cnps > 0 && !page.drawn("ecn") {
            page.ce_cnp(&mut h)?;
        }
        if !s.pfc.is_empty() {
            if !page.drawn("pause") {
                page.pause_fraction(&mut h)?;
            }
            h.push_str("<table><tr><th>interface</th><th>priority</th><th>PFC frames</th><th>XON</th><th>paused</th><th>fraction</th><th>storms</th></tr>\n");
            for p in &s.pfc {
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2} %</td><td>{}</td></tr>",
                    esc(&p.iface_name),
                    p.priority,
                    p.frames,
                    p.xon_frames,
                    esc(&fmt_duration(p.paused_ns)),
                    p.fraction * 100.0,
                    p.storms
                );
            }
            h.push_str("</table>\n");
            let mut senders: BTreeMap<(String, u8, String), (u64, u64)> = BTreeMap::new();
            for p in &analysis.pfc {
                let e = senders
                    .entry((
                        s.iface_name(p.iface),
                        p.priority,
                        Mac(p.src_mac).to_string(),
                    ))
                    .or_default();
                e.0 += 1;
                e.1 += p.end_ns.saturating_sub(p.start_ns);
            }
            if !senders.is_empty() {
                h.push_str("<p class=note>Who sent the pauses:</p><table><tr><th>interface</th><th>priority</th><th>from MAC</th><th>intervals</th><th>paused</th></tr>\n");
                for ((iface, prio, mac), (n, ns)) in senders.iter().take(TABLE_ROWS) {
                    let _ = writeln!(
                        h,
                        "<tr><td>{}</td><td>{prio}</td><td>{mac}</td><td>{n}</td><td>{}</td></tr>",
                        esc(iface),
                        esc(&fmt_duration(*ns))
                    );
                }
                h.push_str("</table>\n");
            }
        }

        if let Some(r) = &recon {
            let pauses: Vec<(u64, u64)> = analysis
                .pfc
                .iter()
                .map(|p| (p.start_ns, p.end_ns))
                .collect();
            counters::section(&mut h, &self.counters, r, &pauses, t0, t1)
                .map_err(|e| page.err(e))?;
        }

        nics::section(&mut h, analysis);

        // The flow table, in a box of its own: wide and long, it scrolls
        // inside the page instead of widening it.
        let _ = write!(
            h,
            "<h2>Flows</h2>\n<p class=note>{}; the {} with the most retransmissions first.</p>\n",
            fmt_count(analysis.summary.totals.flows, "flow"),
            analysis.flows.len().min(TABLE_ROWS)
        );
        // The transport beside each flow once the run holds another than
        // RoCE (UET frames or flows): RoCE-only pages stay as they were.
        let transport_of = crate::tables::analysis::flow_transport;
        let roce = rocescope_common::wire::TransportId::Roce.entry().name;
        let show_transport =
            s.frames.beyond_roce() > 0 || analysis.flows.iter().any(|f| transport_of(f) != roce);
        h.push_str("<div class=scroll id=flow-table><table class=flows><thead><tr><th>id</th>");
        if show_transport {
            h.push_str("<th>transport</th>");
        }
        h.push_str("<th>interface</th><th>src → dst</th><th>QP</th><th>pair</th><th>prio</th><th>packets</th><th>retrans</th><th>rate</th><th>rewinds (nak/rnr/timeout)</th><th>spurious</th><th>gaps</th><th>CE</th><th>CNPs</th><th>Gb/s</th><th>goodput</th><th>max idle</th></tr></thead><tbody>\n");
        let mut flows: Vec<&FlowRow> = analysis.flows.iter().collect();
        flows.sort_by(|a, b| {
            b.retrans_packets
                .cmp(&a.retrans_packets)
                .then(b.bytes.cmp(&a.bytes))
                .then(a.flow_id.cmp(&b.flow_id))
        });
        for f in flows.into_iter().take(TABLE_ROWS) {
            let transport = if show_transport {
                format!("<td>{}</td>", transport_of(f))
            } else {
                String::new()
            };
            let _ = writeln!(
                h,
                "<tr><td>{}</td>{transport}<td>{}</td><td>{} → {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1} %</td><td>{} ({}/{}/{})</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td></tr>",
                f.flow_id,
                esc(&s.iface_name(f.iface)),
                fmt_ip(&f.src_ip),
                fmt_ip(&f.dst_ip),
                // The column is a QP's number; another transport's flow names
                // its own end (a PDC direction's `PDC 256`).
                f.transport_end().unwrap_or_else(|| f.dest_qp.to_string()),
                f.paired_qp.map(|q| q.to_string()).unwrap_or_default(),
                self.priority(f).map(|p| p.to_string()).unwrap_or_default(),
                f.packets,
                f.retrans_packets,
                f.retrans_rate * 100.0,
                f.rewinds,
                f.rewinds_nak,
                f.rewinds_rnr,
                f.rewinds_timeout,
                f.spurious_retrans,
                f.gaps,
                f.ce,
                f.cnps,
                f.gbps,
                f.goodput_gbps,
                esc(&fmt_duration((f.max_idle_us * 1e3).round() as u64))
            );
        }
        h.push_str("</tbody></table></div>\n");
        let _ = write!(
            h,
            "<p class=foot>rocescope {} · captures: {}</p>\n</body>\n</html>\n",
            env!("CARGO_PKG_VERSION"),
            esc(&facts.captures.join(", "))
        );
        Ok(h)
    }

    /// Of `flows`, the request flow with points with the most rewinds,
    /// then retransmissions, then data.
    fn worst_flow<'a>(&self, flows: &[&'a FlowRow]) -> Option<&'a FlowRow> {
        flows
            .iter()
            .copied()
            .filter(|f| {
                self.points
                    .get(&f.flow_id)
                    .is_some_and(|p| !p.points.is_empty())
            })
            .max_by_key(|f| {
                (
                    f.rewinds,
                    f.retrans_packets,
                    f.data_packets,
                    std::cmp::Reverse(f.flow_id),
                )
            })
    }
}

pub(crate) fn figure(h: &mut String, class: &str, svg: &str, caption: &str) {
    let _ = writeln!(
        h,
        "<figure class=\"plot {class}\">{svg}<figcaption>{}</figcaption></figure>",
        esc(caption)
    );
}

/// HTML text escaping.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const HEAD: &str = "<!DOCTYPE html>\n<html lang=en>\n<head>\n<meta charset=utf-8>\n<meta name=viewport content=\"width=device-width, initial-scale=1\">\n";

const CSS: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#222;background:#fff}
h1{font-size:1.4em;margin-bottom:4px}h2{font-size:1.15em;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}
.facts,.note,.foot{color:#555;font-size:.9em}.warn{color:#a40}
.finding{border-left:6px solid #888;background:#f7f7f7;padding:6px 12px;margin:10px 0}
.finding p{margin:4px 0}.finding.critical{border-color:#c0392b}.finding.warning{border-color:#e67e22}.finding.info{border-color:#2980b9}
.sev{display:inline-block;text-transform:uppercase;font-size:.75em;font-weight:bold;color:#fff;background:#888;padding:1px 6px;border-radius:3px}
.critical .sev,.sev.critical{background:#c0392b}.warning .sev,.sev.warning{background:#e67e22}.info .sev,.sev.info{background:#2980b9}
.headline{list-style:none;padding:0}.headline li{margin:4px 0}.finding h3{font-size:1em;margin:4px 0 8px}
.scroll{overflow:auto;max-width:100%;max-height:32em;border:1px solid #ddd}.scroll table{margin:0}.scroll thead th{position:sticky;top:0}
.rec{color:#145a32}.flows{color:#555;font-size:.85em}
figure{margin:12px 0}figure svg{max-width:100%;height:auto;display:block}figcaption{color:#555;font-size:.85em}
table{border-collapse:collapse;font-size:.82em;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 6px;text-align:right}
th{background:#f0f0f0}.flows td{white-space:nowrap}.flows td:nth-child(2),.flows td:nth-child(3){text-align:left}
";

impl analyze::Sink for HtmlReport {
    fn event(&mut self, e: &analyze::Event) {
        if let (EventKind::Rewind, Some(flow), Some(psn)) = (e.kind, e.flow_id, e.psn) {
            self.pending_rewind = Some((flow, psn));
        }
    }

    fn timeline(&mut self, row: &TimelineRow) {
        if self.timeline.len() < MAX_FLOWS * 4 || self.timeline.contains_key(&row.flow_id) {
            self.timeline.entry(row.flow_id).or_default().add(row);
        }
    }

    /// The page shows the flows the analysis kept (`Analysis::flows` and
    /// `evidence`), not every retired one.
    fn flow(&mut self, _: &analyze::FlowRow) {}
}

impl Output for HtmlReport {
    fn name_iface(&mut self, _: u16, _: &str) {}

    fn packet(&mut self, rec: &PacketRecord, verdict: Verdict) -> Result<()> {
        let pending = self.pending_rewind.take();
        let (Some(flow), Some(retrans)) = (verdict.flow_id, verdict.retrans) else {
            return Ok(());
        };
        let mark = match (retrans, pending) {
            (true, Some((f, psn))) if f == flow && psn == rec.roce().psn => Mark::Rewind,
            (true, _) => Mark::Retrans,
            (false, _) => Mark::Original,
        };
        if !self.points.contains_key(&flow) && self.points.len() >= MAX_FLOWS {
            return Ok(());
        }
        self.points
            .entry(flow)
            .or_default()
            .push(rec.ts_ns, rec.roce().psn, mark);
        Ok(())
    }

    fn close(self: Box<Self>, analysis: &Analysis, facts: &RunFacts) -> Result<()> {
        let page = self.render(analysis, facts)?;
        crate::tables::write_text(&self.path, &page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_unwraps_and_thins_but_keeps_retransmissions() {
        let mut f = FlowPoints::default();
        f.push(0, 0xff_fffe, Mark::Original);
        f.push(1, 0xff_ffff, Mark::Original);
        f.push(2, 0, Mark::Original);
        f.push(3, 0xff_fffe, Mark::Rewind);
        let psns: Vec<i64> = f.points.iter().map(|p| p.psn).collect();
        assert_eq!(psns, [0, 1, 2, 0]);
        for i in 0..3 * MAX_POINTS as u32 {
            f.push(10 + u64::from(i), (i + 1) & 0xff_ffff, Mark::Original);
        }
        assert!(f.thinned);
        assert!(f.points.len() <= MAX_POINTS + 1);
        assert_eq!(
            f.points.iter().filter(|p| p.mark == Mark::Rewind).count(),
            1
        );
    }

    #[test]
    fn timeline_bins_merge_and_keep_totals() {
        let mut s = Series::default();
        for i in 0..(3 * MAX_BINS as u64) {
            s.add(&TimelineRow {
                flow_id: 0,
                bin_start_ns: i * 100,
                bin_ns: 100,
                packets: 1,
                bytes: 10,
                retrans_packets: 0,
                ce: 1,
                cnps: 0,
                gbps: 0.8,
                goodput_gbps: 0.8,
                paused_ns: 0,
            });
        }
        assert!(s.bins.len() <= MAX_BINS);
        assert_eq!(
            s.bins.values().map(|b| b.ce).sum::<u64>(),
            3 * MAX_BINS as u64
        );
        let bits: f64 = s.bins.values().map(|b| b.bits).sum();
        assert_eq!(bits, 3.0 * MAX_BINS as f64 * 80.0);
    }

    #[test]
    fn escapes() {
        assert_eq!(
            esc("<a href='x'>&</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;"
        );
    }
}
