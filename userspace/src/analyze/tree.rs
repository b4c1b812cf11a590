//! The PFC congestion tree (`docs/analysis.md`, "Congestion tree"): who
//! paused whom, in what order, from every pause interval at every tap.
//!
//! A pause interval that begins while a pause by another sender on the same
//! priority is running is a propagation step of that pause: the paused
//! device's queue filled and it paused its own upstream. Of the running
//! ones, the one that began last is taken as its cause: pauses spread hop
//! by hop, each from the one downstream of it, which began just before. A pause no running pause explains
//! starts a tree of its own: its sender is the tree's **root** (typically a
//! slow receiver's NIC). Later intervals of a sender already in a running
//! tree add to its node.
//!
//! Host or switch: a pause set off by another pause came from a device that
//! forwards traffic, so every step is a switch. The root is an end host when
//! its MAC also sends RoCE frames (requests, ACKs or CNPs), else a switch —
//! in a routed fabric a switch port's MAC sends the frames it forwards too,
//! so a root switch port that forwards RoCE is taken for a host.
//!
//! `sql/pfc_tree.sql` is the same definition for a dataset (docs/sql.md).

use std::collections::BTreeSet;

use super::PfcInterval;
use super::rows::NodeKind;

pub use super::rows::{PauseNode, PauseTree};

/// The trees of a run's pause intervals (sorted by start, as
/// `PfcTracker::finish` leaves them). `hosts` are the MACs that sent RoCE
/// frames; `iface_name` names interfaces; `victims_on` lists the stalled
/// flows of an interface.
pub(crate) fn build(
    intervals: &[PfcInterval],
    hosts: &BTreeSet<[u8; 6]>,
    iface_name: impl Fn(u16) -> String,
    victims_on: impl Fn(u16) -> Vec<u32>,
) -> Vec<PauseTree> {
    let mut trees: Vec<PauseTree> = Vec::new();
    // Per tree, the node of each (sender, iface).
    let mut keys: Vec<Vec<([u8; 6], u16)>> = Vec::new();
    // Processed intervals still running: (end, tree, node, start).
    let mut running: Vec<(u64, usize, usize, u64)> = Vec::new();
    let mut order: Vec<&PfcInterval> = intervals.iter().collect();
    order.sort_by_key(|p| (p.start_ns, p.iface, p.priority, p.src_mac));
    for p in order {
        // A pause counts as running for as long again after it ended: a
        // sender that pauses again that soon is in the same episode (its
        // refreshes came late, or the link speed given is too high and
        // each XOFF ran out before the next).
        running.retain(|&(end, _, _, start)| end.saturating_add(end - start) >= p.start_ns);
        let key = (p.src_mac, p.iface);
        let duration = p.end_ns.saturating_sub(p.start_ns);
        // Running pauses on this priority, by onset.
        let mut on_prio: Vec<(u64, usize, usize)> = running
            .iter()
            .filter(|&&(_, t, ..)| trees[t].priority == p.priority)
            .map(|&(_, t, n, start)| (start, t, n))
            .collect();
        on_prio.sort_unstable();
        let own = on_prio.iter().find(|&&(_, t, n)| keys[t][n] == key);
        let (t, n) = if let Some(&(_, t, n)) = own {
            trees[t].nodes[n].paused_ns += duration;
            (t, n)
        } else if let Some(&(_, t, parent)) = on_prio.last() {
            let n = match keys[t].iter().position(|k| *k == key) {
                Some(n) => {
                    trees[t].nodes[n].paused_ns += duration;
                    n
                }
                None => {
                    let first = trees[t].nodes[parent].first_pause_ns;
                    // A step: a switch, whatever MAC it forwards with.
                    trees[t].nodes.push(node(
                        p,
                        &BTreeSet::new(),
                        &iface_name,
                        Some(parent),
                        Some(p.start_ns.saturating_sub(first)),
                    ));
                    keys[t].push(key);
                    trees[t].nodes.len() - 1
                }
            };
            (t, n)
        } else {
            trees.push(PauseTree {
                priority: p.priority,
                nodes: vec![node(p, hosts, &iface_name, None, None)],
            });
            keys.push(vec![key]);
            (trees.len() - 1, 0)
        };
        running.push((p.end_ns, t, n, p.start_ns));
    }
    for tree in &mut trees {
        for n in &mut tree.nodes {
            n.victims = victims_on(n.iface);
        }
    }
    trees
}

fn node(
    p: &PfcInterval,
    hosts: &BTreeSet<[u8; 6]>,
    iface_name: &impl Fn(u16) -> String,
    parent: Option<usize>,
    delay_ns: Option<u64>,
) -> PauseNode {
    PauseNode {
        src_mac: crate::addr::Mac(p.src_mac).to_string(),
        iface: p.iface,
        iface_name: iface_name(p.iface),
        kind: if hosts.contains(&p.src_mac) {
            NodeKind::Host
        } else {
            NodeKind::Switch
        },
        first_pause_ns: p.start_ns,
        paused_ns: p.end_ns.saturating_sub(p.start_ns),
        parent,
        delay_ns,
        victims: Vec::new(),
        device: None,
        place: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NIC: [u8; 6] = [2, 0, 0, 2, 0, 1];
    const LEAF: [u8; 6] = [2, 0x5a, 0, 4, 1, 1];
    const SPINE: [u8; 6] = [2, 0x5a, 0, 9, 0, 1];

    fn pause(iface: u16, mac: [u8; 6], start: u64, end: u64) -> PfcInterval {
        PfcInterval {
            iface,
            src_mac: mac,
            priority: 3,
            start_ns: start,
            end_ns: end,
            frames: 1,
            ended_by: crate::analyze::PauseEnd::Expiry,
        }
    }

    #[test]
    fn a_slow_receiver_is_the_root_and_each_later_pause_a_step() {
        // The leaf forwards RoCE with its own MAC (a routed fabric): still a
        // switch, because its pause was set off by another.
        let hosts = BTreeSet::from([NIC, LEAF]);
        let trees = build(
            &[
                pause(0, NIC, 1_000, 90_000),
                pause(1, SPINE, 30_000, 80_000),
                pause(2, LEAF, 53_000, 85_000),
                // The NIC again, later in the same storm: its own node.
                pause(0, NIC, 95_000, 99_000),
                // Long after: a pause of its own, a tree of its own.
                pause(2, LEAF, 500_000, 510_000),
            ],
            &hosts,
            |i| format!("tap{i}"),
            |i| if i == 2 { vec![7] } else { vec![] },
        );
        assert_eq!(trees.len(), 2, "{trees:#?}");
        let t = &trees[0];
        let got: Vec<_> = t
            .nodes
            .iter()
            .map(|n| (n.src_mac.as_str(), n.kind.as_str(), n.parent, n.delay_ns))
            .collect();
        assert_eq!(
            got,
            [
                ("02:00:00:02:00:01", "host", None, None),
                ("02:5a:00:09:00:01", "switch", Some(0), Some(29_000)),
                // Both were running when the leaf paused: the spine's, which
                // began last, was the step before.
                ("02:5a:00:04:01:01", "switch", Some(1), Some(23_000)),
            ]
        );
        assert_eq!(t.nodes[2].victims, [7]);
        // The NIC paused again 5 µs after its first pause ended: the same
        // episode, its own node; the leaf's pause long after is a tree of
        // its own.
        assert_eq!(t.nodes[0].paused_ns, 89_000 + 4_000);
        assert_eq!(trees[1].nodes.len(), 1);
        assert_eq!(trees[1].nodes[0].first_pause_ns, 500_000);
    }
}
