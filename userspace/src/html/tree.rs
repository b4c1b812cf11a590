//! A `pfc-congestion-tree` finding's picture (docs/report.md, "report
//! --html"): its widest episode's ports on one time axis, arrows for the
//! propagation.
use super::{Page, esc, plots};
use crate::addr::Mac;
use crate::analyze::Finding;
use crate::error::Result;
use crate::render::{fmt_duration, fmt_pause_sender, fmt_pause_tap};

impl Page<'_> {
    /// The tree the finding names (`params.widest_tree`).
    pub(super) fn tree(&self, h: &mut String, f: &Finding) -> Result<()> {
        let s = &self.analysis.summary;
        let Some(t) = f
            .params
            .get("widest_tree")
            .and_then(|v| v.as_u64())
            .and_then(|i| s.pfc_trees.get(i as usize))
        else {
            return Ok(());
        };
        let Some(root) = t.nodes.first() else {
            return Ok(());
        };
        let t_root = root.first_pause_ns;
        let last_onset = t
            .nodes
            .iter()
            .map(|n| n.first_pause_ns)
            .max()
            .unwrap_or(t_root);
        // The onsets fill most of the axis; a long pause runs off its end.
        let span_ns = (last_onset - t_root).max(1_000) * 3 / 2;
        let us = |ns: u64| (ns as f64 - t_root as f64) / 1e3;
        let rows: Vec<plots::TreeRow> = t
            .nodes
            .iter()
            .map(|n| {
                let paused_us = self
                    .analysis
                    .pfc
                    .iter()
                    .filter(|p| {
                        p.iface == n.iface
                            && p.priority == t.priority
                            && Mac(p.src_mac).to_string() == n.src_mac
                            && p.end_ns >= t_root
                            && p.start_ns <= t_root + span_ns
                    })
                    .map(|p| (us(p.start_ns), us(p.end_ns)))
                    .collect();
                plots::TreeRow {
                    label: format!(
                        "{} ({}) on {}",
                        fmt_pause_sender(n),
                        n.kind,
                        fmt_pause_tap(n)
                    ),
                    onset_us: us(n.first_pause_ns),
                    paused_us,
                }
            })
            .collect();
        let arrows: Vec<(usize, usize, String)> = t
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let parent = n.parent?;
                Some((
                    parent,
                    i,
                    format!("+{}", fmt_duration(n.delay_ns.unwrap_or(0))),
                ))
            })
            .collect();
        let svg = plots::tree(&rows, &arrows, span_ns as f64 / 1e3).map_err(|e| self.err(e))?;
        let episodes = f
            .params
            .get("episodes")
            .and_then(|v| v.as_u64())
            .unwrap_or(1);
        let which = if episodes > 1 {
            format!(
                "the widest of its {episodes} episodes, from {}",
                crate::render::fmt_offset(t_root.saturating_sub(self.t0))
            )
        } else {
            "from its root's first pause".to_string()
        };
        let _ = std::fmt::Write::write_fmt(
            h,
            format_args!(
                "<figure class=\"plot tree\">{svg}<figcaption>{}</figcaption></figure>\n",
                esc(&format!(
                    "The congestion tree on priority {}, {which}: each port's pauses (bars) and first pause (dot); arrows from the pause that set each one off, with the delay",
                    t.priority
                ))
            ),
        );
        Ok(())
    }
}
