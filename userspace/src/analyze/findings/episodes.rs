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
use crate::analyze::Severity;
use crate::analyze::tree::{PauseNode, PauseTree};

use super::input::{Input, share};
use super::{Diagnosis, Evidence};

/// `pfc-congestion-tree`'s evidence: one root's trees, the ports their
/// pauses reached and the victims. Nodes are named by their place in
/// `summary.pfc_trees` (what `summary.json` and the HTML page show).
#[derive(Clone, Debug, PartialEq)]
pub struct CongestionTree {
    pub priority: u8,
    /// The episodes: indices into `summary.pfc_trees`, in order; the first
    /// one's root is the root.
    pub trees: Vec<usize>,
    /// The episode the HTML page draws: the most ports, then the longest
    /// root pause, then the first.
    pub widest_tree: usize,
    /// The root's paused time over the episodes.
    pub root_paused_ns: u64,
    /// Every port the pauses reached, in order of its first onset.
    pub spread: Vec<Spread>,
    /// Per tap with victims (the first node on it that lists them): up to
    /// [`VICTIMS_LISTED`] flows, and how many more.
    pub victims: Vec<TapVictims>,
    /// The congested switch queue its victims crossed, when the switches'
    /// telemetry says (`congested-queue`; set when the run ends).
    pub telemetry: Option<super::queues::QueueCitation>,
}

/// A node of a tree in `summary.pfc_trees`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeAt {
    pub tree: usize,
    pub node: usize,
}

/// A port a pause spread to (one sender on one tap, over the episodes).
#[derive(Clone, Debug, PartialEq)]
pub struct Spread {
    /// Its first appearance, and its parent there (`None`: unknown).
    pub port: NodeAt,
    pub parent: Option<NodeAt>,
    /// The delay after its parent, fastest and slowest, and the episodes
    /// it paused in.
    pub min_delay_ns: u64,
    pub max_delay_ns: u64,
    pub episodes: usize,
}

/// The victim flows seen on one tap.
#[derive(Clone, Debug, PartialEq)]
pub struct TapVictims {
    pub at: NodeAt,
    pub listed: Vec<u32>,
    pub more: usize,
}

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
pub const VICTIMS_LISTED: usize = 10;

/// One finding per root of the trees that spread.
pub(crate) fn finding(x: &Input, out: &mut Vec<Diagnosis>) {
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

fn one(x: &Input, g: &Episodes) -> Diagnosis {
    // Every port reached, in order of its first onset: (sender, tap), its
    // parent, its delays.
    let mut spread: Vec<(&PauseNode, Spread, Vec<u64>)> = Vec::new();
    for &(ti, t) in &g.trees {
        for (ni, n) in t.nodes.iter().enumerate().skip(1) {
            let delay = n.delay_ns.unwrap_or(0);
            match spread
                .iter_mut()
                .find(|(s, ..)| s.src_mac == n.src_mac && s.iface == n.iface)
            {
                Some((.., delays)) => delays.push(delay),
                None => spread.push((
                    n,
                    Spread {
                        port: NodeAt { tree: ti, node: ni },
                        parent: n
                            .parent
                            .filter(|&p| p < t.nodes.len())
                            .map(|p| NodeAt { tree: ti, node: p }),
                        min_delay_ns: 0,
                        max_delay_ns: 0,
                        episodes: 0,
                    },
                    vec![delay],
                )),
            }
        }
    }
    let spread: Vec<Spread> = spread
        .into_iter()
        .map(|(_, s, delays)| Spread {
            min_delay_ns: delays.iter().copied().min().unwrap_or(0),
            max_delay_ns: delays.iter().copied().max().unwrap_or(0),
            episodes: delays.len(),
            ..s
        })
        .collect();
    let mut victims = Vec::new();
    let mut flows: Vec<u32> = Vec::new();
    let mut seen_taps = Vec::new();
    for &(ti, t) in &g.trees {
        for (ni, n) in t.nodes.iter().enumerate() {
            if seen_taps.contains(&n.iface) || n.victims.is_empty() {
                continue;
            }
            seen_taps.push(n.iface);
            victims.push(TapVictims {
                at: NodeAt { tree: ti, node: ni },
                listed: n.victims.iter().take(VICTIMS_LISTED).copied().collect(),
                more: n.victims.len().saturating_sub(VICTIMS_LISTED),
            });
            flows.extend(&n.victims);
        }
    }
    flows.sort_unstable();
    flows.dedup();
    Diagnosis {
        severity: Severity::Critical,
        impact: share(g.root_paused_ns(), x.summary.duration_ns),
        flows,
        evidence: Evidence::CongestionTree(CongestionTree {
            priority: g.trees[0].1.priority,
            trees: g.trees.iter().map(|(i, _)| *i).collect(),
            widest_tree: g.widest().0,
            root_paused_ns: g.root_paused_ns(),
            spread,
            victims,
            telemetry: None,
        }),
    }
}
