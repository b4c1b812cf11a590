//! The page: its sections, each drawn from the finished analysis and
//! what the report gathered ([`super::series`]).

use std::fmt::Write as _;
use std::path::Path;

use super::series::rebin;
use super::{Bin, HtmlReport, Series, THROUGHPUT_FLOWS, esc, plot_bin_ns, plots};
use crate::analyze::{Analysis, Finding, FlowRow};
use crate::render::{self, fmt_count, fmt_duration, fmt_flow_end, fmt_ip, fmt_offset};
use crate::{Error, Result};

/// What the page's sections draw from.
pub(super) struct Page<'a> {
    pub(super) report: &'a HtmlReport,
    pub(super) analysis: &'a Analysis,
    pub(super) t0: u64,
    pub(super) t1: u64,
    pub(super) path: &'a Path,
    /// The plots on the page already (`psn <flow>`, `ecn`, `pause`): the
    /// overview leaves out what a finding's section drew.
    pub(super) drawn: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

/// The plot that shows a finding best.
enum Plot {
    /// The PSN over time of the finding's worst flow.
    Psn,
    /// The PSN over time of the flow that stalled longest.
    Stalled,
    /// Throughput of the finding's flows, pauses shaded.
    Throughput,
    /// Pause fraction per port and priority.
    Pauses,
    /// CE marks and CNPs over time.
    Ecn,
    /// The congestion tree, then the flow that stalled longest.
    Tree,
}

fn plot_for(id: &str) -> Plot {
    match id {
        "ghost-retransmissions"
        | "real-loss"
        | "reordering"
        | "receiver-not-ready"
        | "capture-loss"
        | "corrupted-frames"
        | "trimming" => Plot::Psn,
        "pfc-storm" | "pfc-pressure" => Plot::Pauses,
        "pfc-victims" => Plot::Stalled,
        "pfc-congestion-tree" => Plot::Tree,
        "ce-without-cnp" | "cnp-without-ce" => Plot::Ecn,
        _ => Plot::Throughput,
    }
}

impl Page<'_> {
    pub(super) fn drawn(&self, plot: &str) -> bool {
        self.drawn.borrow().contains(plot)
    }

    pub(super) fn drew(&self, plot: String) {
        self.drawn.borrow_mut().insert(plot);
    }

    pub(super) fn err(&self, e: String) -> Error {
        Error::Write {
            path: self.path.to_path_buf(),
            detail: format!("cannot draw a plot: {e}"),
        }
    }

    /// A finding's section: its evidence, what to change, its plot.
    pub(super) fn finding(&self, h: &mut String, i: usize, f: &Finding) -> Result<()> {
        let _ = writeln!(
            h,
            "<section class=\"finding {sev}\" id=\"finding-{i}\"><h3><span class=sev>{sev}</span> {title} <code>{id}</code> <span class=impact>{impact}</span></h3>",
            sev = esc(f.severity.as_str()),
            title = esc(&f.title),
            id = esc(f.id),
            impact = esc(&render::impact_words(f)),
        );
        for line in f.detail.lines().filter(|l| !l.trim().is_empty()) {
            let _ = writeln!(h, "<p>{}</p>", esc(line));
        }
        let _ = writeln!(h, "<p class=rec>→ {}</p>", esc(&f.recommendation));
        if !f.flows.is_empty() {
            let shown: Vec<String> = f.flows.iter().take(20).map(u32::to_string).collect();
            let more = if f.flows.len() > 20 { ", …" } else { "" };
            let _ = writeln!(
                h,
                "<p class=flows>{}: {}{more}</p>",
                if f.flows.len() == 1 { "Flow" } else { "Flows" },
                shown.join(", ")
            );
        }
        if let Some(line) = f.wireshark.as_ref().and_then(|w| w.report_line(f.id)) {
            let _ = writeln!(h, "<p class=flows><code>{}</code></p>", esc(&line));
        }
        let flows: Vec<&FlowRow> = self
            .analysis
            .flows
            .iter()
            .filter(|r| f.flows.contains(&r.flow_id))
            .collect();
        let plot = plot_for(f.id);
        match plot {
            Plot::Psn => match self.report.worst_flow(&flows) {
                Some(worst) => self.psn(h, worst)?,
                None => self.throughput(h, &flows, "Gb/s sent by the finding's flows")?,
            },
            Plot::Stalled | Plot::Tree => {
                if matches!(plot, Plot::Tree) {
                    self.tree(h, f)?;
                }
                let with_points: Vec<&FlowRow> = flows
                    .iter()
                    .copied()
                    .filter(|r| self.report.points.contains_key(&r.flow_id))
                    .collect();
                match with_points
                    .iter()
                    .max_by_key(|r| self.paused_since_start(r))
                {
                    Some(f) => self.psn(h, f)?,
                    None => self.throughput(h, &flows, "Gb/s sent by the finding's flows")?,
                }
            }
            Plot::Pauses => self.pause_fraction(h)?,
            Plot::Ecn => self.ce_cnp(h)?,
            Plot::Throughput if flows.is_empty() => self.throughput(
                h,
                &top_flows_by_bytes(self.analysis, THROUGHPUT_FLOWS),
                "Gb/s sent by the busiest request flows; shaded: a PFC pause on any interface",
            )?,
            Plot::Throughput => self.throughput(
                h,
                &flows,
                "Gb/s sent by the finding's flows; shaded: a PFC pause on any interface",
            )?,
        }
        h.push_str("</section>\n");
        Ok(())
    }

    /// Pauses of `f`'s priority on its interface from its first packet
    /// to the capture's end (a victim's stall may outlast its last packet).
    pub(super) fn paused_since_start(&self, f: &FlowRow) -> u64 {
        let prio = self.report.priority(f);
        self.analysis
            .pfc
            .iter()
            .filter(|p| p.iface == f.iface && Some(p.priority) == prio)
            .map(|p| p.end_ns.saturating_sub(p.start_ns.max(f.first_ts_ns)))
            .sum()
    }

    /// The PSN of `f` over its whole life, its priority's pauses shaded.
    pub(super) fn psn(&self, h: &mut String, f: &FlowRow) -> Result<()> {
        let Some(points) = self.report.points.get(&f.flow_id) else {
            return Ok(());
        };
        // One picture of a flow per page: a finding raised again for the
        // same flow points back to it.
        if self.drawn(&format!("psn {}", f.flow_id)) {
            let _ = writeln!(
                h,
                "<p class=\"note seeabove\">The PSN of flow {} is drawn above.</p>",
                f.flow_id
            );
            return Ok(());
        }
        let s = &self.analysis.summary;
        let prio = self.report.priority(f);
        let pauses: Vec<(u64, u64)> = self
            .analysis
            .pfc
            .iter()
            .filter(|p| p.iface == f.iface && Some(p.priority) == prio)
            .map(|p| (p.start_ns, p.end_ns))
            .collect();
        let (from, to) = (f.first_ts_ns, f.last_ts_ns.max(f.first_ts_ns + 1));
        let mut caption = format!(
            "PSN of flow {} ({} → {} {}, {}) over its whole life, {} to {}: {}, {} retransmitted of {}",
            f.flow_id,
            fmt_ip(&f.src_ip),
            fmt_ip(&f.dst_ip),
            fmt_flow_end(f),
            s.iface_name(f.iface),
            fmt_offset(from - self.t0),
            fmt_offset(to - self.t0),
            fmt_count(f.rewinds, "rewind"),
            f.retrans_packets,
            fmt_count(f.data_packets, "data packet"),
        );
        // A flow that fell silent under pauses that go on off the plot's
        // right edge: say how much of the rest of the capture was paused.
        let after: u64 = pauses
            .iter()
            .map(|&(start, end)| end.saturating_sub(start.max(f.last_ts_ns)))
            .sum();
        if after > 0 {
            let _ = write!(
                caption,
                "; after its last packet its priority was paused for {} of the {} left in the capture",
                fmt_duration(after),
                fmt_duration(self.t1.saturating_sub(f.last_ts_ns))
            );
        }
        if to - from < (self.t1 - self.t0) / 2 {
            let _ = write!(
                caption,
                "; the capture lasts {}",
                fmt_duration(self.t1 - self.t0)
            );
        }
        if points.thinned {
            caption.push_str(" (first transmissions thinned for drawing)");
        }
        let svg = plots::psn(points, &pauses, self.t0, (from, to)).map_err(|e| self.err(e))?;
        self.drew(format!("psn {}", f.flow_id));
        let _ = writeln!(
            h,
            "<figure class=\"plot psn\" data-flow=\"{}\" data-from-ns=\"{from}\" data-to-ns=\"{to}\">{svg}<figcaption>{}</figcaption></figure>",
            f.flow_id,
            esc(&caption)
        );
        Ok(())
    }

    /// Gb/s of `flows` over the whole capture, in bins chosen from its length.
    pub(super) fn throughput(
        &self,
        h: &mut String,
        flows: &[&FlowRow],
        caption: &str,
    ) -> Result<()> {
        let series: Vec<(&FlowRow, &Series)> = flows
            .iter()
            .take(THROUGHPUT_FLOWS)
            .filter_map(|f| Some((*f, self.report.timeline.get(&f.flow_id)?)))
            .collect();
        if series.is_empty() {
            return Ok(());
        }
        let base = series.iter().map(|(_, s)| s.width_ns).max().unwrap_or(1);
        let width = plot_bin_ns(self.t1 - self.t0, base);
        let cut: Vec<(String, Vec<(u64, Bin)>)> = series
            .iter()
            .map(|(f, ser)| {
                (
                    format!("flow {} {}", f.flow_id, fmt_flow_end(f)),
                    rebin(&ser.bins, width, self.t0, self.t1),
                )
            })
            .collect();
        let pauses: Vec<(u64, u64)> = self
            .analysis
            .pfc
            .iter()
            .map(|p| (p.start_ns, p.end_ns))
            .collect();
        let svg =
            plots::throughput(&cut, width, &pauses, self.t0, self.t1).map_err(|e| self.err(e))?;
        let _ = writeln!(
            h,
            "<figure class=\"plot throughput\" data-bin-ns=\"{width}\">{svg}<figcaption>{} (bins of {} over the capture's {})</figcaption></figure>",
            esc(caption),
            esc(&fmt_duration(width)),
            esc(&fmt_duration(self.t1 - self.t0))
        );
        Ok(())
    }

    /// CE-marked packets and CNPs over the capture, all flows.
    pub(super) fn ce_cnp(&self, h: &mut String) -> Result<()> {
        let all: Vec<&Series> = self.report.timeline.values().collect();
        let base = all.iter().map(|s| s.width_ns).max().unwrap_or(1);
        let width = plot_bin_ns(self.t1 - self.t0, base);
        let sum = rebin(
            all.iter().flat_map(|s| s.bins.iter()),
            width,
            self.t0,
            self.t1,
        );
        let svg = plots::ce_cnp(&sum, width, self.t0, self.t1).map_err(|e| self.err(e))?;
        self.drew("ecn".into());
        let _ = writeln!(
            h,
            "<figure class=\"plot ecn\" data-bin-ns=\"{width}\">{svg}<figcaption>CE-marked data packets and CNPs per {}, all flows</figcaption></figure>",
            esc(&fmt_duration(width))
        );
        Ok(())
    }

    /// Paused fraction per port and priority.
    pub(super) fn pause_fraction(&self, h: &mut String) -> Result<()> {
        let bars: Vec<(String, f64)> = self
            .analysis
            .summary
            .pfc
            .iter()
            .map(|p| {
                (
                    format!("{} priority {}", p.iface_name, p.priority),
                    p.fraction,
                )
            })
            .collect();
        if bars.is_empty() {
            return Ok(());
        }
        let svg = plots::pause_fraction(&bars).map_err(|e| self.err(e))?;
        self.drew("pause".into());
        let _ = writeln!(
            h,
            "<figure class=\"plot pause\">{svg}<figcaption>Paused time per port and priority, over the capture's {}</figcaption></figure>",
            esc(&fmt_duration(self.t1 - self.t0))
        );
        Ok(())
    }
}

pub(super) fn top_flows_by_bytes(analysis: &Analysis, n: usize) -> Vec<&FlowRow> {
    let mut flows: Vec<&FlowRow> = analysis
        .flows
        .iter()
        .filter(|f| f.data_packets > 0)
        .collect();
    flows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.flow_id.cmp(&b.flow_id)));
    flows.truncate(n);
    flows
}
