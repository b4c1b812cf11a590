//! The `pfc-congestion-tree` finding: the congestion trees of a run
//! (`tree`) grouped by their root into **episodes** (docs/analysis.md,
//! "Congestion tree").
//!
//! A receiver that keeps failing to drain pauses again and again; each time
//! the pause spreads, `tree` makes a tree of it. One finding per tree would
//! say the same thing dozens of times (41 findings on the 500k-frame bench
//! capture), so the trees that spread (two or more nodes) with the same
//! root — the same sender, seen on the same tap, on the same priority —
//! make one finding: its episodes counted, the root's paused time summed,
//! each port the pauses reached once, with the delay after its parent over
//! the episodes (the fastest, and the slowest when they differ). The
//! findings come in order of the root's paused time, longest first.
use serde_json::json;

use crate::analyze::tree::{PauseNode, PauseTree};
use crate::analyze::{Finding, NodeKind, Severity, fmt_count, fmt_duration};

use super::input::{Input, params, share};

/// One root's trees.
struct Episodes<'a> {
    trees: Vec<(usize, &'a PauseTree)>,
}

impl Episodes<'_> {
    fn root(&self) -> &PauseNode {
        &self.trees[0].1.nodes[0]
    }

    fn root_paused_ns(&self) -> u64 {
        self.trees.iter().map(|(_, t)| t.nodes[0].paused_ns).sum()
    }

    /// The episode the HTML page draws: the most ports, then the longest
    /// root pause, then the first.
    fn widest(&self) -> (usize, &PauseTree) {
        let mut best = self.trees[0];
        for &(i, t) in &self.trees[1..] {
            let key = |t: &PauseTree| (t.nodes.len(), t.nodes[0].paused_ns);
            if key(t) > key(best.1) {
                best = (i, t);
            }
        }
        best
    }
}

/// Victim flows listed per tap (the rest counted; `flows` has them all).
const VICTIMS_LISTED: usize = 10;

fn kind(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Host => "end host: it sends RoCE traffic too",
        NodeKind::Switch => "switch",
    }
}

/// One finding per root of the trees that spread.
pub(crate) fn finding(x: &Input, out: &mut Vec<Finding>) {
    let mut groups: Vec<Episodes> = Vec::new();
    for (i, t) in x.summary.pfc_trees.iter().enumerate() {
        if t.nodes.len() < 2 {
            continue;
        }
        let root = &t.nodes[0];
        let same = |g: &Episodes| {
            let r = g.root();
            g.trees[0].1.priority == t.priority
                && r.src_mac == root.src_mac
                && r.iface == root.iface
        };
        match groups.iter_mut().find(|g| same(g)) {
            Some(g) => g.trees.push((i, t)),
            None => groups.push(Episodes {
                trees: vec![(i, t)],
            }),
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.root_paused_ns()));
    for g in &groups {
        out.push(one(x, g));
    }
}

fn one(x: &Input, g: &Episodes) -> Finding {
    let root = g.root();
    let priority = g.trees[0].1.priority;
    let episodes = g.trees.len();
    // Every port reached, in order of its first onset: (sender, tap), its
    // parent's name, its delays.
    let mut steps: Vec<(&PauseNode, String, Vec<u64>)> = Vec::new();
    for (_, t) in &g.trees {
        for n in &t.nodes[1..] {
            let parent = n
                .parent
                .and_then(|p| t.nodes.get(p))
                .map_or_else(|| "?".to_string(), PauseNode::sender_name);
            let delay = n.delay_ns.unwrap_or(0);
            match steps
                .iter_mut()
                .find(|(s, ..)| s.src_mac == n.src_mac && s.iface == n.iface)
            {
                Some((.., delays)) => delays.push(delay),
                None => steps.push((n, parent, vec![delay])),
            }
        }
    }
    let lines: Vec<String> = steps
        .iter()
        .map(|(n, parent, delays)| {
            let lo = delays.iter().copied().min().unwrap_or(0);
            let hi = delays.iter().copied().max().unwrap_or(0);
            let after = if lo == hi {
                fmt_duration(lo)
            } else {
                format!("{} to {}", fmt_duration(lo), fmt_duration(hi))
            };
            let times = if episodes > 1 {
                format!(
                    " (in {} of {episodes})",
                    fmt_count(delays.len() as u64, "episode")
                )
            } else {
                String::new()
            };
            format!(
                "Then {} ({}) on {} paused {after} after {parent}{times}.",
                n.sender_name(),
                kind(n.kind),
                n.tap_name()
            )
        })
        .collect();
    let mut victims: Vec<String> = Vec::new();
    let mut flows: Vec<u32> = Vec::new();
    let mut seen_taps = Vec::new();
    for n in g.trees.iter().flat_map(|(_, t)| &t.nodes) {
        if seen_taps.contains(&n.iface) || n.victims.is_empty() {
            continue;
        }
        seen_taps.push(n.iface);
        let ids: Vec<String> = n
            .victims
            .iter()
            .take(VICTIMS_LISTED)
            .map(u32::to_string)
            .collect();
        let more = match n.victims.len() {
            n if n > VICTIMS_LISTED => format!(" and {} more", n - VICTIMS_LISTED),
            _ => String::new(),
        };
        victims.push(format!(
            "{}: {} {}{more}",
            n.tap_name(),
            if n.victims.len() == 1 {
                "flow"
            } else {
                "flows"
            },
            ids.join(", ")
        ));
        flows.extend(&n.victims);
    }
    flows.sort_unstable();
    flows.dedup();
    let root_is_host = root.kind == NodeKind::Host;
    let (widest_index, widest) = g.widest();
    let ports = steps.len() + 1;
    let when = if episodes == 1 {
        format!("first pause at {}", x.at(root.first_pause_ns))
    } else {
        let last = g.trees[episodes - 1].1.nodes[0].first_pause_ns;
        format!(
            "{episodes} episodes from {} to {}; the widest reached {} from {}",
            x.at(root.first_pause_ns),
            x.at(last),
            fmt_count(widest.nodes.len() as u64 - 1, "port"),
            x.at(widest.nodes[0].first_pause_ns)
        )
    };
    Finding {
        wireshark: None,
        id: "pfc-congestion-tree",
        impact: share(g.root_paused_ns(), x.summary.duration_ns),
        severity: Severity::Critical,
        title: format!(
            "Pauses on priority {priority} spread from {} ({}) to {} more {}{}",
            root.sender_name(),
            if root_is_host {
                "an end host"
            } else {
                "a switch"
            },
            ports - 1,
            if ports == 2 { "port" } else { "ports" },
            if episodes > 1 {
                format!(", {episodes} times")
            } else {
                String::new()
            }
        ),
        detail: format!(
            "Root: {} ({}) seen on {}, {when}, paused {} in all.\n{}{}",
            root.sender_name(),
            kind(root.kind),
            root.tap_name(),
            fmt_duration(g.root_paused_ns()),
            lines.join("\n"),
            if victims.is_empty() {
                String::new()
            } else {
                format!("\nVictims: {}.", victims.join("; "))
            }
        ),
        recommendation: if root_is_host {
            format!(
                "The tree grows from a receiver that does not drain ({}): find out why (host memory or PCIe pressure, an application not posting buffers, the NIC's rx_prio{priority}_pause_duration and rx_discards_phy counters), and let ECN act before PFC so the senders slow down before the pause spreads. The PFC watchdog caps how long it can freeze the fabric.",
                root.sender_name()
            )
        } else {
            "The tree grows from a switch port: find its congested egress (an incast, a slow downstream link or a PFC deadlock), let ECN act before PFC, and enable the PFC watchdog.".to_string()
        },
        flows,
        params: params([
            ("priority", json!(priority)),
            ("root_src_mac", json!(root.src_mac)),
            ("root_device", json!(root.device)),
            ("root_kind", json!(root.kind)),
            ("ports", json!(ports)),
            ("root_paused_ns", json!(g.root_paused_ns())),
            ("episodes", json!(episodes)),
            (
                "trees",
                json!(g.trees.iter().map(|(i, _)| *i).collect::<Vec<_>>()),
            ),
            ("widest_tree", json!(widest_index)),
        ]),
    }
}
