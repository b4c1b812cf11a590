//! `pfc-congestion-tree` in words.

use serde_json::json;

use crate::analyze::NodeKind;
use crate::analyze::findings::{CongestionTree, NodeAt};
use crate::analyze::tree::PauseNode;
use crate::render::{fmt_count, fmt_duration, fmt_pause_sender, fmt_pause_tap};

use super::{Names, Words, params};

fn kind(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Host => "end host: it sends RoCE traffic too",
        NodeKind::Switch => "switch",
    }
}

impl Names<'_> {
    /// A node of `summary.pfc_trees`.
    fn node(&self, at: NodeAt) -> Option<&PauseNode> {
        self.0.pfc_trees.get(at.tree)?.nodes.get(at.node)
    }
}

pub(super) fn congestion_tree(e: &CongestionTree, n: &Names) -> Option<Words> {
    let tree = |i: usize| n.0.pfc_trees.get(i);
    let first = tree(*e.trees.first()?)?;
    let root = first.nodes.first()?;
    let priority = e.priority;
    let episodes = e.trees.len();
    let lines: Vec<String> = e
        .spread
        .iter()
        .filter_map(|s| {
            let node = n.node(s.port)?;
            let parent = s
                .parent
                .and_then(|p| n.node(p))
                .map_or_else(|| "?".to_string(), fmt_pause_sender);
            let (lo, hi) = (s.min_delay_ns, s.max_delay_ns);
            let after = if lo == hi {
                fmt_duration(lo)
            } else {
                format!("{} to {}", fmt_duration(lo), fmt_duration(hi))
            };
            let times = if episodes > 1 {
                format!(
                    " (in {} of {episodes})",
                    fmt_count(s.episodes as u64, "episode")
                )
            } else {
                String::new()
            };
            Some(format!(
                "Then {} ({}) on {} paused {after} after {parent}{times}.",
                fmt_pause_sender(node),
                kind(node.kind),
                fmt_pause_tap(node)
            ))
        })
        .collect();
    let victims: Vec<String> = e
        .victims
        .iter()
        .filter_map(|v| {
            let node = n.node(v.at)?;
            let ids: Vec<String> = v.listed.iter().map(u32::to_string).collect();
            let more = if v.more > 0 {
                format!(" and {} more", v.more)
            } else {
                String::new()
            };
            Some(format!(
                "{}: {} {}{more}",
                fmt_pause_tap(node),
                if v.listed.len() + v.more == 1 {
                    "flow"
                } else {
                    "flows"
                },
                ids.join(", ")
            ))
        })
        .collect();
    let root_is_host = root.kind == NodeKind::Host;
    let widest = tree(e.widest_tree)?;
    let ports = e.spread.len() + 1;
    let when = if episodes == 1 {
        format!("first pause at {}", n.at(root.first_pause_ns))
    } else {
        let last = tree(e.trees[episodes - 1])?.nodes.first()?.first_pause_ns;
        format!(
            "{episodes} episodes from {} to {}; the widest reached {} from {}",
            n.at(root.first_pause_ns),
            n.at(last),
            fmt_count(widest.nodes.len() as u64 - 1, "port"),
            n.at(widest.nodes.first()?.first_pause_ns)
        )
    };
    Some(Words {
        title: format!(
            "Pauses on priority {priority} spread from {} ({}) to {} more {}{}",
            fmt_pause_sender(root),
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
            fmt_pause_sender(root),
            kind(root.kind),
            fmt_pause_tap(root),
            fmt_duration(e.root_paused_ns),
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
                fmt_pause_sender(root)
            )
        } else {
            "The tree grows from a switch port: find its congested egress (an incast, a slow downstream link or a PFC deadlock), let ECN act before PFC, and enable the PFC watchdog.".to_string()
        },
        params: params([
            ("priority", json!(priority)),
            ("root_src_mac", json!(root.src_mac)),
            ("root_device", json!(root.device)),
            ("root_kind", json!(root.kind)),
            ("ports", json!(ports)),
            ("root_paused_ns", json!(e.root_paused_ns)),
            ("episodes", json!(episodes)),
            ("trees", json!(e.trees)),
            ("widest_tree", json!(e.widest_tree)),
        ]),
    })
}

/// The words when the summary lacks the trees the evidence names (a
/// summary other than the analysis' own).
pub(super) fn trees_missing(e: &CongestionTree) -> Words {
    Words {
        title: format!(
            "Pauses on priority {} spread to {} more ports",
            e.priority,
            e.spread.len()
        ),
        detail: format!(
            "The congestion trees {:?} are not in this summary.",
            e.trees
        ),
        recommendation: String::new(),
        params: params([
            ("priority", json!(e.priority)),
            ("root_paused_ns", json!(e.root_paused_ns)),
            ("trees", json!(e.trees)),
        ]),
    }
}
