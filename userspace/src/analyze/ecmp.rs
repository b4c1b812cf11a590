//! ECMP imbalance: the members of an ECMP group (interfaces that are
//! parallel paths, named with `--ecmp-group` or by a topology file), their
//! load share per time bin, and the elephant flows that collided on the
//! busiest member (see "ECMP imbalance" in `docs/analysis.md`).
//!
//! A switch picks a group member per flow by a hash of its headers (for
//! RoCEv2 the UDP source port is the entropy): two elephants that hash alike
//! share one uplink while its twin idles, and each gets half the bandwidth.
//! Which taps are parallel paths is the user's knowledge, not the capture's:
//! a tap whose member carries nothing looks like any idle port.
//!
//! O(1) per record (a lookup by interface and a bin sum); memory: one bin
//! per group.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::findings::{Input, params, share};
use super::{Finding, Flow, fmt_count, fmt_duration, fmt_ip, fmt_pct};

/// Source and destination address.
type HostPair = ([u8; 16], [u8; 16]);
/// A source address and UDP source port; a destination address and QP.
type SourcePort = ([u8; 16], u16);
type Qp = ([u8; 16], u32);

/// A loaded bin is imbalanced when its busiest member carries at least this
/// many times its fair share (1 / members)…
pub(crate) const BUSY_FACTOR: f64 = 1.5;
/// …while another carries at most this many times its fair share.
pub(crate) const IDLE_FACTOR: f64 = 0.5;
/// A bin counts when the group carried at least this share of one member's
/// link in it (a few ACKs in an idle bin say nothing about balance).
pub(crate) const LOADED_SHARE: f64 = 0.10;
/// The group is imbalanced when at least this share of its loaded bins are.
pub(crate) const IMBALANCED_BINS: f64 = 0.5;
/// An elephant carries at least this share of its member's bytes.
pub(crate) const ELEPHANT_SHARE: f64 = 0.10;

/// Interfaces that are parallel paths (an ECMP group): `--ecmp-group
/// IF,IF…` or a topology file's groups. Names as in the tables' `iface`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EcmpGroup {
    pub members: Vec<String>,
}

impl std::str::FromStr for EcmpGroup {
    type Err = String;

    /// `leaf0-spine0-tx,leaf0-spine1-tx`: two or more distinct names.
    fn from_str(text: &str) -> Result<Self, String> {
        let members: Vec<String> = text.split(',').map(|m| m.trim().to_string()).collect();
        let mut seen = BTreeSet::new();
        for m in &members {
            if m.is_empty() {
                return Err(format!(
                    "{text:?}: an empty interface name; write the group's interfaces separated by commas (e.g. leaf0-spine0,leaf0-spine1)"
                ));
            }
            if !seen.insert(m.as_str()) {
                return Err(format!("{text:?}: {m} is named twice"));
            }
        }
        if members.len() < 2 {
            return Err(format!(
                "{text:?}: a group needs two or more interfaces, separated by commas (e.g. leaf0-spine0,leaf0-spine1)"
            ));
        }
        Ok(EcmpGroup { members })
    }
}

/// One group's tallies.
#[derive(Clone, Debug)]
struct GroupLoad {
    members: Vec<String>,
    /// Each member's interface index, once its name is known.
    ifaces: Vec<Option<u16>>,
    /// Link speed of each member, for the loaded-bin threshold.
    speed_bps: Vec<u64>,
    bytes: Vec<u64>,
    /// The open bin: its index and its bytes per member.
    bin: Option<(u64, Vec<u64>)>,
    loaded_bins: u64,
    imbalanced_bins: u64,
    /// Per member: the most bytes in one bin.
    peak_bin_bytes: Vec<u64>,
    first_imbalanced_ns: Option<u64>,
    last_imbalanced_ns: Option<u64>,
}

impl GroupLoad {
    fn close_bin(&mut self, bin_ns: u64) {
        let Some((idx, bytes)) = self.bin.take() else {
            return;
        };
        for (p, b) in self.peak_bin_bytes.iter_mut().zip(&bytes) {
            *p = (*p).max(*b);
        }
        let total: u64 = bytes.iter().sum();
        let link = self.speed_bps.iter().copied().min().unwrap_or(0) as f64;
        let capacity_bytes = link / 8.0 * bin_ns as f64 / 1e9;
        if (total as f64) < LOADED_SHARE * capacity_bytes || total == 0 {
            return;
        }
        self.loaded_bins += 1;
        let fair = 1.0 / bytes.len() as f64;
        let max = bytes.iter().copied().max().unwrap_or(0) as f64 / total as f64;
        let min = bytes.iter().copied().min().unwrap_or(0) as f64 / total as f64;
        if max >= BUSY_FACTOR * fair && min <= IDLE_FACTOR * fair {
            self.imbalanced_bins += 1;
            let start = idx * bin_ns;
            self.first_imbalanced_ns.get_or_insert(start);
            self.last_imbalanced_ns = Some(start + bin_ns);
        }
    }
}

/// The load of every group's members, per bin.
#[derive(Clone, Debug, Default)]
pub(crate) struct EcmpLoad {
    groups: Vec<GroupLoad>,
    /// Interface index → (group, member).
    by_iface: BTreeMap<u16, Vec<(usize, usize)>>,
    bin_ns: u64,
}

impl EcmpLoad {
    /// `speed_bps`: a member's link speed, by its name.
    pub fn new(groups: &[EcmpGroup], bin_ns: u64, speed_bps: impl Fn(&str) -> u64) -> Self {
        EcmpLoad {
            groups: groups
                .iter()
                .map(|g| {
                    let n = g.members.len();
                    GroupLoad {
                        members: g.members.clone(),
                        ifaces: vec![None; n],
                        speed_bps: g.members.iter().map(|m| speed_bps(m)).collect(),
                        bytes: vec![0; n],
                        bin: None,
                        loaded_bins: 0,
                        imbalanced_bins: 0,
                        peak_bin_bytes: vec![0; n],
                        first_imbalanced_ns: None,
                        last_imbalanced_ns: None,
                    }
                })
                .collect(),
            by_iface: BTreeMap::new(),
            bin_ns: bin_ns.max(1),
        }
    }

    /// Interface `iface` (it recorded a frame) is named `name`.
    pub fn set_iface(&mut self, iface: u16, name: &str) {
        for (g, group) in self.groups.iter_mut().enumerate() {
            if let Some(m) = group.members.iter().position(|n| n == name) {
                group.ifaces[m] = Some(iface);
                let at = self.by_iface.entry(iface).or_default();
                if !at.contains(&(g, m)) {
                    at.push((g, m));
                }
            }
        }
    }

    /// A routed frame (RoCE or CNP, not a mirror copy) of `len` bytes at `ts`.
    pub fn frame(&mut self, iface: u16, ts: u64, len: u64) {
        let Some(at) = self.by_iface.get(&iface) else {
            return;
        };
        let idx = ts / self.bin_ns;
        for &(g, m) in at {
            let group = &mut self.groups[g];
            group.bytes[m] += len;
            // A record of an earlier bin (taps not merged in time order)
            // counts in the open one.
            if group.bin.as_ref().is_some_and(|(open, _)| idx > *open) {
                group.close_bin(self.bin_ns);
            }
            let n = group.members.len();
            let bin = group.bin.get_or_insert_with(|| (idx, vec![0; n]));
            bin.1[m] += len;
        }
    }

    /// Closes every open bin: the capture ended.
    pub fn finish(&mut self) {
        for g in &mut self.groups {
            g.close_bin(self.bin_ns);
        }
    }

    /// Groups none of whose members recorded a frame: nothing to judge
    /// (their names may be wrong), said as capture facts.
    pub fn silent_groups(&self) -> Vec<String> {
        self.groups
            .iter()
            .filter(|g| g.ifaces.iter().all(Option::is_none))
            .map(|g| {
                format!(
                    "ECMP group {}: none of its interfaces recorded a frame, so its balance was not judged (give the names as in the tables' iface column)",
                    g.members.join(",")
                )
            })
            .collect()
    }
}

/// `ecmp-imbalance`: a group whose busiest member carried ≥ 1.5× its fair
/// share while another carried ≤ 0.5× in at least half of its loaded bins.
pub(crate) fn finding(x: &Input, load: &EcmpLoad, out: &mut Vec<Finding>) {
    for g in &load.groups {
        if g.loaded_bins == 0 || (g.imbalanced_bins as f64) < IMBALANCED_BINS * g.loaded_bins as f64
        {
            continue;
        }
        imbalance(x, g, load.bin_ns, out);
    }
}

fn imbalance(x: &Input, g: &GroupLoad, bin_ns: u64, out: &mut Vec<Finding>) {
    let n = g.members.len();
    let total: u64 = g.bytes.iter().sum();
    let fair = 1.0 / n as f64;
    let shares: Vec<f64> = g.bytes.iter().map(|&b| share(b, total)).collect();
    let busiest = (0..n)
        .max_by_key(|&m| (g.bytes[m], std::cmp::Reverse(m)))
        .unwrap_or(0);
    let idlest = (0..n).min_by_key(|&m| (g.bytes[m], m)).unwrap_or(0);
    let on = |m: usize| -> Vec<&Flow> {
        x.flows
            .iter()
            .filter(|f| g.ifaces[m] == Some(f.iface) && f.packets > 0)
            .collect()
    };
    // Names of the interfaces that recorded frames, for a member that did not.
    let recorded: Vec<&str> = x
        .summary
        .taps
        .iter()
        .map(|t| t.iface_name.as_str())
        .collect();
    let mut lines = vec![format!(
        "{} of {} bins of {} in which the group carried at least {} of a member's link were imbalanced (the busiest member at least {}× its fair share of {}, another at most {}×), from {} to {}.",
        g.imbalanced_bins,
        g.loaded_bins,
        fmt_duration(bin_ns),
        fmt_pct(LOADED_SHARE),
        BUSY_FACTOR,
        fmt_pct(fair),
        IDLE_FACTOR,
        // Bins run past the capture's ends: the times within it.
        x.at(g.first_imbalanced_ns.unwrap_or(0)),
        x.at(g
            .last_imbalanced_ns
            .unwrap_or(0)
            .min(x.summary.last_ts_ns.unwrap_or(u64::MAX))),
    )];
    for (m, member_share) in shares.iter().enumerate() {
        if g.ifaces[m].is_none() {
            lines.push(format!(
                "{}: no frame recorded — an idle path, or a name that is none of the capture's interfaces (those that recorded frames: {}).",
                g.members[m],
                recorded.join(", ")
            ));
            continue;
        }
        let link = g.speed_bps[m] as f64 / 8.0 * bin_ns as f64 / 1e9;
        lines.push(format!(
            "{}: {} bytes, {} of the group's, up to {} of its link in one bin; {}.",
            g.members[m],
            g.bytes[m],
            fmt_pct(*member_share),
            fmt_pct(if link > 0.0 {
                g.peak_bin_bytes[m] as f64 / link
            } else {
                0.0
            }),
            fmt_count(on(m).len() as u64, "flow"),
        ));
    }
    // Elephants on the busiest member that ran at the same time.
    let busy = on(busiest);
    let elephants: Vec<&Flow> = busy
        .iter()
        .copied()
        .filter(|f| f.bytes as f64 >= ELEPHANT_SHARE * g.bytes[busiest] as f64)
        .collect();
    let mut collided: Vec<&Flow> = elephants
        .iter()
        .copied()
        .filter(|f| {
            elephants
                .iter()
                .any(|o| o.id != f.id && o.first_ts <= f.last_ts && f.first_ts <= o.last_ts)
        })
        .collect();
    collided.sort_by_key(|f| f.id);
    if !collided.is_empty() {
        let from = collided.iter().map(|f| f.first_ts).max().unwrap_or(0);
        let to = collided.iter().map(|f| f.last_ts).min().unwrap_or(0);
        let names: Vec<String> = collided
            .iter()
            .map(|f| {
                format!(
                    "{} UDP source port {}, {} bytes ({})",
                    x.describe(f),
                    f.udp_sport.map_or("-".into(), |p| p.to_string()),
                    f.bytes,
                    fmt_pct(share(f.bytes, g.bytes[busiest]))
                )
            })
            .collect();
        lines.push(format!(
            "Elephants that collided on {} (each at least {} of its bytes, all sending from {} to {}): {}.",
            g.members[busiest],
            fmt_pct(ELEPHANT_SHARE),
            x.at(from),
            x.at(to),
            names.join("; ")
        ));
    }
    // The entropy the hash had: the group's QPs by host pair.
    // Per host pair its source ports and QPs; per source port its QPs.
    let mut pairs: BTreeMap<HostPair, (BTreeSet<u16>, BTreeSet<u32>)> = BTreeMap::new();
    let mut by_port: BTreeMap<SourcePort, BTreeSet<Qp>> = BTreeMap::new();
    for m in 0..n {
        for f in on(m).into_iter().filter(|f| f.data_packets > 0) {
            let e = pairs.entry((f.src_ip, f.dst_ip)).or_default();
            e.1.insert(f.dest_qp);
            if let Some(p) = f.udp_sport {
                e.0.insert(p);
                by_port
                    .entry((f.src_ip, p))
                    .or_default()
                    .insert((f.dst_ip, f.dest_qp));
            }
        }
    }
    let entropy: Vec<String> = pairs
        .iter()
        .map(|((s, d), (ports, qps))| {
            format!(
                "{} → {}: {} over {}",
                fmt_ip(s),
                fmt_ip(d),
                fmt_count(ports.len() as u64, "UDP source port"),
                fmt_count(qps.len() as u64, "QP")
            )
        })
        .collect();
    let shared_ports = by_port.values().filter(|q| q.len() > 1).count();
    lines.push(format!(
        "Entropy the hash had: {}; {} shared by several QPs.",
        entropy.join("; "),
        fmt_count(shared_ports as u64, "source port"),
    ));
    let ids: Vec<u32> = if collided.is_empty() {
        busy.iter().map(|f| f.id).collect()
    } else {
        collided.iter().map(|f| f.id).collect()
    };
    let per_pair: Vec<usize> = pairs.values().map(|(p, _)| p.len()).collect();
    out.push(Finding {
        id: "ecmp-imbalance",
        severity: "warning",
        impact: share(g.imbalanced_bins, g.loaded_bins),
        title: format!(
            "ECMP imbalance: {} carried {} of its group's traffic, {} {}{}",
            g.members[busiest],
            fmt_pct(shares[busiest]),
            g.members[idlest],
            fmt_pct(shares[idlest]),
            if collided.is_empty() {
                String::new()
            } else {
                format!(" ({} collided)", fmt_count(collided.len() as u64, "elephant flow"))
            }
        ),
        detail: lines.join("\n"),
        recommendation: "The hash put these flows on one path while its twin idled: enable flowlet or adaptive load balancing on the switches (flowlet switching re-picks a path at gaps longer than the path skew), make sure the ECMP hash includes the UDP source port (RoCEv2's entropy field), and give the hash more to work with — more QPs per connection (NCCL_IB_QPS_PER_CONNECTION) and source ports spread per QP (the NIC's or the RDMA CM's UDP source port selection) instead of one per host pair".into(),
        flows: ids,
        params: params([
            ("members", json!(g.members)),
            ("member_bytes", json!(g.bytes)),
            ("member_shares", json!(shares)),
            ("busiest", json!(g.members[busiest])),
            ("idlest", json!(g.members[idlest])),
            ("loaded_bins", json!(g.loaded_bins)),
            ("imbalanced_bins", json!(g.imbalanced_bins)),
            ("collided_flows", json!(collided.iter().map(|f| f.id).collect::<Vec<_>>())),
            ("source_ports_per_host_pair", json!(per_pair)),
            ("shared_source_ports", json!(shared_ports)),
        ]),
        wireshark: None,
    });
}

/// Without a group named: taps that carry different QPs between the same
/// two hosts may be parallel paths, but nothing in a capture says they are
/// (an idle member carries nothing to compare). Said once, as a capture fact.
pub(crate) fn unnamed_fact(flows: &[Flow], names: &BTreeMap<u16, String>) -> Option<String> {
    let mut by_pair: BTreeMap<HostPair, BTreeMap<u16, BTreeSet<u32>>> = BTreeMap::new();
    for f in flows.iter().filter(|f| f.data_packets > 0) {
        by_pair
            .entry((f.src_ip, f.dst_ip))
            .or_default()
            .entry(f.iface)
            .or_default()
            .insert(f.dest_qp);
    }
    for ((s, d), taps) in &by_pair {
        let taps: Vec<(&u16, &BTreeSet<u32>)> = taps.iter().collect();
        for (i, (a, qa)) in taps.iter().enumerate() {
            for (b, qb) in &taps[i + 1..] {
                if qa.is_disjoint(qb) {
                    let (a, b) = (super::iface_name(names, **a), super::iface_name(names, **b));
                    return Some(format!(
                        "{a} and {b} carry different QPs between the same hosts ({} → {}): if they are parallel paths, name them with --ecmp-group {a},{b}; ECMP balance is judged only for named groups",
                        fmt_ip(s),
                        fmt_ip(d)
                    ));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_parse_and_bad_ones_say_why() {
        let g: EcmpGroup = "a, b,c".parse().unwrap();
        assert_eq!(g.members, ["a", "b", "c"]);
        assert!(
            "a".parse::<EcmpGroup>()
                .unwrap_err()
                .contains("two or more")
        );
        assert!("a,,b".parse::<EcmpGroup>().unwrap_err().contains("empty"));
        assert!("a,a".parse::<EcmpGroup>().unwrap_err().contains("twice"));
    }

    #[test]
    fn a_bin_is_imbalanced_when_one_member_is_busy_and_another_idles() {
        let groups = ["a,b".parse().unwrap()];
        // 8 Gb/s links: a 1 µs bin holds 1000 bytes; 10 % of it loads a bin.
        let mut l = EcmpLoad::new(&groups, 1000, |_| 8_000_000_000);
        l.set_iface(0, "a");
        l.set_iface(1, "b");
        l.frame(0, 10, 750); // bin 0: 750 / 250 → 75 % / 25 %: imbalanced
        l.frame(1, 20, 250);
        l.frame(0, 1010, 600); // bin 1: 600 / 400: 60 %, balanced enough
        l.frame(1, 1020, 400);
        l.frame(0, 2010, 50); // bin 2: 50 bytes, under 10 %: not loaded
        l.frame(1, 5010, 900); // bin 5: b alone
        l.finish();
        let g = &l.groups[0];
        assert_eq!((g.loaded_bins, g.imbalanced_bins), (3, 2));
        assert_eq!(g.bytes, [1400, 1550]);
        assert_eq!(g.peak_bin_bytes, [750, 900]);
        assert_eq!(
            (g.first_imbalanced_ns, g.last_imbalanced_ns),
            (Some(0), Some(6000))
        );
        assert!(l.silent_groups().is_empty());
        // A member that never records a frame carries nothing.
        let mut l = EcmpLoad::new(&groups, 1000, |_| 8_000_000_000);
        l.set_iface(0, "a");
        l.frame(0, 10, 900);
        l.finish();
        assert_eq!(
            (l.groups[0].loaded_bins, l.groups[0].imbalanced_bins),
            (1, 1)
        );
        let l = EcmpLoad::new(&groups, 1000, |_| 1);
        assert_eq!(
            l.silent_groups(),
            [
                "ECMP group a,b: none of its interfaces recorded a frame, so its balance was not judged (give the names as in the tables' iface column)"
            ]
        );
    }
}
