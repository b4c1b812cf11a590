//! The PFC congestion trees of a run (`docs/synth-truth.md`, "pfc_trees"),
//! from the model's own record of every pause episode: which port paused,
//! when, and whose pause held the queue that made it pause. The analyzer
//! builds the same trees from the pauses its taps recorded
//! (`docs/analysis.md`, "Congestion tree").

use std::collections::BTreeMap;

use serde::Serialize;

use super::fabric::{Run, wire_ns};
use super::spec::{FrameSpec, PfcSpec};
use crate::addr::Mac;

/// Every tree of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PauseTrees {
    /// How late a tap may record a pause after its device decided it: the
    /// frame the port was sending when it decided (the longest any port
    /// sent), then, for a tap at the receiving end, the PFC frame's own
    /// serialisation and the link's propagation delay.
    pub onset_lag_max_ns: u64,
    pub trees: Vec<PauseTree>,
}

/// One tree: a root and the pauses it set off, in order of onset.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PauseTree {
    pub priority: u8,
    /// `nodes[0]` is the root.
    pub nodes: Vec<PauseNode>,
}

/// One port that paused in a tree.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PauseNode {
    /// The pausing port's MAC (the PFC frames' source), its device and the
    /// port itself (`NODE-TOWARD`), and whether the device is a host or a switch.
    pub mac: String,
    pub device: String,
    pub port: String,
    pub kind: &'static str,
    /// Its first pause in the tree (when it decided to send the XOFF).
    pub onset_ns: u64,
    /// Its pauses in the tree, XOFF to XON (or to the run's end), summed.
    pub paused_ns: u64,
    pub episodes: u64,
    /// The node whose pause held the queue at its first onset (null: the
    /// root), and the time from that pause's onset (that node's onset or a
    /// later pause of it) to this one.
    pub cause: Option<usize>,
    pub delay_ns: Option<u64>,
    /// At its first onset: the bytes it had received on the priority and
    /// still held, and the egress port where most waited (`NODE-TOWARD`;
    /// null: the NIC's receive queue).
    pub held_bytes: u64,
    pub held_at: Option<String>,
    /// The taps of the capture that recorded its XOFF frames in this tree:
    /// what an analysis can see of it (empty: nothing).
    pub seen: Vec<PauseSeen>,
}

/// One tap's view of a node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PauseSeen {
    pub tap: usize,
    pub iface: String,
    /// Its first XOFF frame (quanta above 0) at the tap, and how many.
    pub first_xoff_ns: u64,
    pub xoff_frames: u64,
}

fn port_name(run: &Run, p: usize) -> String {
    format!("{}-{}", run.ports[p].node, run.ports[p].toward)
}

/// The trees of `run`, seen by the taps `wanted` (indexed by tap).
///
/// An episode with a cause joins its cause's tree: a new node for its port
/// (a step, its parent the cause's port), or its port's node if it paused
/// in the tree before. An episode without one (its queue was not held by a
/// pause: the congestion began at its port) continues its port's node in
/// a tree still pausing somewhere at its onset, else starts a tree.
pub fn of(run: &Run, wanted: &[bool]) -> PauseTrees {
    let end = run.fabric.end_ns;
    let mut trees: Vec<PauseTree> = Vec::new();
    // Per tree: the latest XON of its episodes (None: one still pausing)
    // and its node per port.
    let mut until: Vec<Option<u64>> = Vec::new();
    let mut node_of: Vec<BTreeMap<usize, usize>> = Vec::new();
    // Per episode: its tree and node.
    let mut place: Vec<(usize, usize)> = Vec::with_capacity(run.pauses.len());
    for e in &run.pauses {
        let caused = e.cause.and_then(|c| place.get(c).map(|&(t, n)| (c, t, n)));
        let tree = match caused {
            Some((_, t, _)) => Some(t),
            None => (0..trees.len()).rev().find(|&t| {
                trees[t].priority == e.priority
                    && node_of[t].contains_key(&e.port)
                    && until[t].is_none_or(|u| u > e.onset_ns)
            }),
        };
        let t = tree.unwrap_or_else(|| {
            trees.push(PauseTree {
                priority: e.priority,
                nodes: vec![],
            });
            until.push(Some(0));
            node_of.push(BTreeMap::new());
            trees.len() - 1
        });
        let n = match node_of[t].get(&e.port) {
            Some(&n) => n,
            None => {
                let (cause, cause_onset_ns) = match caused {
                    Some((c, _, n)) => (Some(n), Some(run.pauses[c].onset_ns)),
                    None => (None, None),
                };

                let p = &run.ports[e.port];
                trees[t].nodes.push(PauseNode {
                    mac: Mac(e.mac).to_string(),
                    device: p.node.clone(),
                    port: port_name(run, e.port),
                    kind: if p.ip.is_some() { "host" } else { "switch" },
                    onset_ns: e.onset_ns,
                    cause,
                    delay_ns: cause_onset_ns.map(|c| e.onset_ns - c),
                    held_bytes: e.held_bytes,
                    held_at: e.held_at.map(|h| port_name(run, h)),
                    ..PauseNode::default()
                });
                node_of[t].insert(e.port, trees[t].nodes.len() - 1);
                trees[t].nodes.len() - 1
            }
        };
        let node = &mut trees[t].nodes[n];
        node.episodes += 1;
        node.paused_ns += e.end_ns.unwrap_or(end).min(end) - e.onset_ns.min(end);
        until[t] = match (until[t], e.end_ns) {
            (Some(u), Some(x)) => Some(u.max(x)),
            _ => None,
        };
        place.push((t, n));
    }
    // What the taps recorded of each node: its XOFF frames.
    for (f, m) in run.frames.iter().zip(&run.meta) {
        let (FrameSpec::Pfc(p), Some(e)) = (&f.frame, m.pause) else {
            continue;
        };
        let prio = usize::from(run.pauses[e].priority);
        if !wanted.get(f.tap).copied().unwrap_or(false) || p.quanta[prio] == 0 {
            continue;
        }
        let (t, n) = place[e];
        let seen = &mut trees[t].nodes[n].seen;
        let i = seen.iter().position(|s| s.tap == f.tap).unwrap_or_else(|| {
            seen.push(PauseSeen {
                tap: f.tap,
                iface: run.taps[f.tap].name.clone(),
                first_xoff_ns: f.ts_ns,
                xoff_frames: 0,
            });
            seen.len() - 1
        });
        seen[i].xoff_frames += 1;
    }
    let pfc_len = FrameSpec::Pfc(PfcSpec {
        src_mac: [0; 6],
        dst_mac: [0; 6],
        enable_vector: 0,
        quanta: [0; 8],
    })
    .frame_len();
    PauseTrees {
        onset_lag_max_ns: wire_ns(run.max_frame_len, run.link_gbps)
            + wire_ns(pfc_len, run.link_gbps)
            + run.prop_ns,
        trees,
    }
}
