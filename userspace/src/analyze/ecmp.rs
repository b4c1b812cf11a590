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
//! per group. The groups and their load here; the finding, `ecmp-imbalance`,
//! in `findings/ecmp.rs`.

use std::collections::{BTreeMap, BTreeSet};

use super::facts::CaptureFact;

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
pub(super) struct GroupLoad {
    pub(super) members: Vec<String>,
    /// Each member's interface index, once its name is known.
    pub(super) ifaces: Vec<Option<u16>>,
    /// Link speed of each member, for the loaded-bin threshold.
    pub(super) speed_bps: Vec<u64>,
    pub(super) bytes: Vec<u64>,
    /// The open bin: its index and its bytes per member.
    bin: Option<(u64, Vec<u64>)>,
    pub(super) loaded_bins: u64,
    pub(super) imbalanced_bins: u64,
    /// Per member: the most bytes in one bin.
    pub(super) peak_bin_bytes: Vec<u64>,
    pub(super) first_imbalanced_ns: Option<u64>,
    pub(super) last_imbalanced_ns: Option<u64>,
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
            // idx * bin_ns is at most the frame's timestamp; the bin's end
            // may lie past u64::MAX.
            let start = idx * bin_ns;
            self.first_imbalanced_ns.get_or_insert(start);
            self.last_imbalanced_ns = Some(start.saturating_add(bin_ns));
        }
    }
}

/// The load of every group's members, per bin.
#[derive(Clone, Debug, Default)]
pub(crate) struct EcmpLoad {
    pub(super) groups: Vec<GroupLoad>,
    /// Interface index → (group, member).
    by_iface: BTreeMap<u16, Vec<(usize, usize)>>,
    pub(super) bin_ns: u64,
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
    pub fn silent_groups(&self) -> impl Iterator<Item = CaptureFact> + '_ {
        self.groups
            .iter()
            // Named or not (an idle interface its capture declared is).
            .filter(|g| g.bytes.iter().all(|&b| b == 0))
            .map(|g| CaptureFact::SilentEcmpGroup {
                members: g.members.clone(),
            })
    }
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
        assert_eq!(l.silent_groups().count(), 0);
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
            l.silent_groups().collect::<Vec<_>>(),
            [CaptureFact::SilentEcmpGroup {
                members: vec!["a".into(), "b".into()]
            }]
        );
        // Interfaces its capture declared that recorded nothing are named
        // (docs/inputs.md): silent all the same.
        let mut l = EcmpLoad::new(&groups, 1000, |_| 1);
        l.set_iface(0, "a");
        l.set_iface(1, "b");
        l.finish();
        assert_eq!(l.silent_groups().count(), 1);
    }

    /// The last bin of a capture near `u64::MAX` ends past it (the
    /// `analyzer` fuzz target's finding: `start + bin_ns` overflowed).
    #[test]
    fn an_imbalanced_bin_at_the_end_of_time_ends_there() {
        let groups = ["a,b".parse().unwrap()];
        let bin_ns = 1_000_000_000;
        let mut l = EcmpLoad::new(&groups, bin_ns, |_| 8_000_000_000);
        l.set_iface(0, "a");
        l.set_iface(1, "b");
        l.frame(0, u64::MAX - 5, 100_000_000);
        l.frame(1, u64::MAX, 1);
        l.finish();
        let g = &l.groups[0];
        let start = u64::MAX / bin_ns * bin_ns;
        assert_eq!((g.loaded_bins, g.imbalanced_bins), (1, 1));
        assert_eq!(
            (g.first_imbalanced_ns, g.last_imbalanced_ns),
            (Some(start), Some(u64::MAX))
        );
    }
}
