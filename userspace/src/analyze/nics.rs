//! How fast each NIC reacts (`docs/analysis.md`, "NIC reaction
//! latencies"): per NIC (source MAC and IP), the distributions of
//!
//! * NAK generation: a receiver's first out-of-sequence request packet → the
//!   sequence-error NAK it sends for it;
//! * NAK reaction: a NAK → the sender's first send of the PSN it names;
//! * timeout retransmission: the measured timeout (the same waits as the
//!   flows' `nic_timeout_*`, from [`super::rto`]);
//! * CNP generation: the first unanswered CE-marked packet → the CNP (the
//!   same times as `ce_to_cnp`, from `cnp`).
//!
//! Each latency belongs to the NIC that reacted: the receiver for NAK and CNP
//! generation, the sender for NAK reaction and timeouts.
//!
//! Memory: per NIC and tap, four [`Histogram`]s of at most 1920 buckets
//! each, kept sparse; per paired reliable request flow, the PSNs and times
//! of its request packets since the highest acknowledged one, at most
//! [`SENT_LOG`] of 8 bytes (what a NAK generation latency is measured from).

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use super::hash::FastMap;
use super::psn;

/// A NIC: its source MAC and IP (the MAC is the NIC's own only on its L2
/// segment; past a router it is the router's, and the IP tells NICs apart).
pub(crate) type NicKey = ([u8; 6], [u8; 16]);

/// The four latencies, in the table's column order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Latency {
    NakGeneration,
    NakReaction,
    TimeoutRetrans,
    CnpGeneration,
}

impl Latency {
    pub(crate) const ALL: [Latency; 4] = [
        Latency::NakGeneration,
        Latency::NakReaction,
        Latency::TimeoutRetrans,
        Latency::CnpGeneration,
    ];

    /// The column prefix in `nics.parquet` and the key in `report --json`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Latency::NakGeneration => "nak_generation",
            Latency::NakReaction => "nak_reaction",
            Latency::TimeoutRetrans => "timeout_retrans",
            Latency::CnpGeneration => "cnp_generation",
        }
    }

    /// What it measures, in words.
    pub(crate) fn words(self) -> &'static str {
        match self {
            Latency::NakGeneration => "NAK generation (out-of-sequence packet → NAK)",
            Latency::NakReaction => "NAK reaction (NAK → resend)",
            Latency::TimeoutRetrans => "timeout retransmission (timer start → resend)",
            Latency::CnpGeneration => "CNP generation (CE-marked packet → CNP)",
        }
    }
}

/// A log-bucket histogram of nanosecond values: values below 64 each have
/// their own bucket; above, every power of two is split into 32 equal
/// buckets, so a bucket's midpoint is within 1/64 (1.6 %) of any value in
/// it. Count, minimum and maximum are exact; a percentile is its bucket's
/// midpoint, clamped to the exact minimum and maximum.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Histogram {
    buckets: BTreeMap<u16, u64>,
    pub count: u64,
    pub min: u64,
    pub max: u64,
}

const EXACT: u64 = 64;
const SUB_BITS: u32 = 5;

impl Histogram {
    /// Buckets a histogram can hold: 64 exact ones, then 32 for each
    /// power of two from 2^6 to 2^63.
    #[cfg(test)]
    const BUCKETS: usize = 64 + 58 * 32;

    fn index(v: u64) -> u16 {
        if v < EXACT {
            return v as u16;
        }
        let e = 63 - v.leading_zeros();
        let sub = (v >> (e - SUB_BITS)) & 31;
        (EXACT + u64::from(e - 6) * 32 + sub) as u16
    }

    /// The midpoint of bucket `i`.
    fn value(i: u16) -> u64 {
        let i = u64::from(i);
        if i < EXACT {
            return i;
        }
        let e = (i - EXACT) / 32 + 6;
        let sub = (i - EXACT) % 32;
        let width = 1u64 << (e - u64::from(SUB_BITS));
        ((32 + sub) * width).saturating_add(width / 2)
    }

    pub(crate) fn add(&mut self, v: u64) {
        *self.buckets.entry(Self::index(v)).or_default() += 1;
        if self.count == 0 {
            (self.min, self.max) = (v, v);
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.count += 1;
    }

    pub(crate) fn merge(&mut self, o: &Histogram) {
        if o.count == 0 {
            return;
        }
        for (&i, &n) in &o.buckets {
            *self.buckets.entry(i).or_default() += n;
        }
        if self.count == 0 {
            (self.min, self.max) = (o.min, o.max);
        } else {
            self.min = self.min.min(o.min);
            self.max = self.max.max(o.max);
        }
        self.count += o.count;
    }

    /// The `pct`th percentile (nearest rank: the smallest value at least
    /// `pct` % of the samples are at or below); `None` when empty.
    pub(crate) fn percentile(&self, pct: u64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = self.count.saturating_mul(pct).div_ceil(100).max(1);
        let mut seen = 0;
        for (&i, &n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return Some(Self::value(i).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }
}

/// Most request packets remembered per paired reliable request flow: a NAK
/// whose first out-of-sequence packet is older than these is not measured.
pub(crate) const SENT_LOG: usize = 1024;

/// A paired request flow's request packets since the highest acknowledged
/// one (and that one): PSN and time, 8 bytes each.
#[derive(Debug, Default)]
struct SentLog {
    /// Times are offsets from this (the log restarts when one would not fit).
    base_ns: u64,
    packets: VecDeque<(u32, u32)>,
}

/// Every NIC's latencies, and what NAK generation is measured from.
#[derive(Debug, Default)]
pub(crate) struct Nics {
    /// Per NIC and tap (interface index): a latency at a tap includes the
    /// path between the tap and the NIC, so NICs are compared tap by tap.
    latencies: BTreeMap<(NicKey, u16), [Histogram; 4]>,
    /// Per paired request flow (by id): its outstanding request packets,
    /// oldest first.
    sent: FastMap<u32, SentLog>,
}

impl Nics {
    /// A latency of `nic` as tap `iface` shows it.
    pub(crate) fn sample(&mut self, nic: NicKey, iface: u16, kind: Latency, ns: u64) {
        self.latencies.entry((nic, iface)).or_default()[kind as usize].add(ns);
    }

    /// A paired reliable request flow's packet with PSN `q` at `now`.
    pub(crate) fn sent(&mut self, flow: u32, q: u32, now: u64) {
        let log = self.sent.entry(flow).or_default();
        let offset = match now.checked_sub(log.base_ns).map(u32::try_from) {
            Some(Ok(o)) if !log.packets.is_empty() => o,
            _ => {
                // Empty, or too far from the base: start again from here.
                log.packets.clear();
                log.base_ns = now;
                0
            }
        };
        if log.packets.len() >= SENT_LOG {
            log.packets.pop_front();
        }
        log.packets.push_back((q, offset));
    }

    /// Request flow `flow`'s responder acknowledged up to `a`: the packets
    /// before the last one at or below `a` can name no NAK's first packet
    /// out of sequence any more (a NAK names a PSN above `a`).
    pub(crate) fn acked(&mut self, flow: u32, a: u32) {
        if let Some(log) = self.sent.get_mut(&flow) {
            while log
                .packets
                .get(1)
                .is_some_and(|&(p, _)| psn::diff(p, a) <= 0)
            {
                log.packets.pop_front();
            }
        }
    }

    /// When the receiver of request flow `flow` saw its first packet out of
    /// sequence while expecting `q` (a sequence-error NAK names `q`): the
    /// first packet beyond `q` after the last one at or before it. `None`
    /// when no packet beyond `q` is remembered, or every remembered one is
    /// beyond it (the packet that preceded them is no longer known).
    pub(crate) fn out_of_sequence(&self, flow: u32, q: u32) -> Option<u64> {
        let log = self.sent.get(&flow)?;
        let packets = &log.packets;
        let last_at_or_before = packets.iter().rposition(|&(p, _)| psn::diff(p, q) <= 0)?;
        packets
            .get(last_at_or_before + 1)
            .map(|&(_, offset)| log.base_ns + u64::from(offset))
    }

    /// One row per NIC, every tap's samples together, in MAC and IP order.
    pub(crate) fn rows(&self) -> Vec<NicRow> {
        let mut rows: Vec<NicRow> = Vec::new();
        for (&((mac, ip), _), h) in &self.latencies {
            match rows.last_mut() {
                Some(r) if (r.mac, r.ip) == (mac, ip) => {
                    for (into, from) in r.latencies.iter_mut().zip(h) {
                        into.merge(from);
                    }
                }
                _ => rows.push(NicRow {
                    mac,
                    ip,
                    latencies: h.clone(),
                }),
            }
        }
        rows
    }

    /// One row per NIC and tap over several analyzers' samples (a sharded
    /// run judged together): each NIC and tap's histograms merged, which is
    /// exact (the buckets are fixed), in the order one analyzer gives them.
    pub(crate) fn rows_per_tap_of(all: &[&Nics]) -> Vec<(u16, NicRow)> {
        let mut merged: BTreeMap<(NicKey, u16), [Histogram; 4]> = BTreeMap::new();
        for n in all {
            for (k, h) in &n.latencies {
                let to = merged.entry(*k).or_default();
                for (into, from) in to.iter_mut().zip(h) {
                    into.merge(from);
                }
            }
        }
        let rows = merged.into_iter().map(|((nic, iface), latencies)| {
            let (mac, ip) = nic;
            (iface, NicRow { mac, ip, latencies })
        });
        rows.collect()
    }

    /// One row per NIC and tap: what `slow-nic-reaction` compares.
    pub(crate) fn rows_per_tap(&self) -> Vec<(u16, NicRow)> {
        self.latencies
            .iter()
            .map(|(&((mac, ip), iface), h)| {
                let row = NicRow {
                    mac,
                    ip,
                    latencies: h.clone(),
                };
                (iface, row)
            })
            .collect()
    }
}

/// One NIC's latencies: a `nics.parquet` row (docs/tables.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NicRow {
    pub mac: [u8; 6],
    pub ip: [u8; 16],
    pub(crate) latencies: [Histogram; 4],
}

/// One latency's summary as the table and the JSON report give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub max_ns: Option<u64>,
}

impl NicRow {
    /// Another analyzer's rows of the same run (`nics.parquet`'s, in MAC and
    /// IP order) merged into `rows`: a NIC's histograms merged, which is
    /// exact, so a sharded run writes the rows one analyzer writes.
    pub fn merge_rows(rows: &mut Vec<NicRow>, more: &[NicRow]) {
        for m in more {
            match rows.binary_search_by_key(&(m.mac, m.ip), |r| (r.mac, r.ip)) {
                Ok(i) => {
                    for (into, from) in rows[i].latencies.iter_mut().zip(&m.latencies) {
                        into.merge(from);
                    }
                }
                Err(i) => rows.insert(i, m.clone()),
            }
        }
    }

    pub(crate) fn histogram(&self, kind: Latency) -> &Histogram {
        &self.latencies[kind as usize]
    }

    pub(crate) fn summary(&self, kind: Latency) -> LatencySummary {
        let h = self.histogram(kind);
        LatencySummary {
            count: h.count,
            p50_ns: h.percentile(50),
            p99_ns: h.percentile(99),
            max_ns: (h.count > 0).then_some(h.max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_below_64_and_within_1_64th_above() {
        for v in [0, 1, 63] {
            assert_eq!(Histogram::value(Histogram::index(v)), v);
        }
        // 2000 ns: 2^10 split in 32 buckets of 32 ns; 1984..=2015, midpoint 2000.
        assert_eq!(Histogram::value(Histogram::index(2000)), 2000);
        assert_eq!(Histogram::value(Histogram::index(1984)), 2000);
        assert_eq!(Histogram::value(Histogram::index(2015)), 2000);
        assert_eq!(Histogram::index(2016), Histogram::index(2000) + 1);
        for v in [64u64, 100, 1_000, 65_535, 1 << 40, u64::MAX / 3, u64::MAX] {
            let m = Histogram::value(Histogram::index(v));
            assert!(m.abs_diff(v) as f64 <= v as f64 / 64.0, "{v} → {m}");
        }
        assert_eq!(
            usize::from(Histogram::index(u64::MAX)),
            Histogram::BUCKETS - 1
        );
    }

    #[test]
    fn percentiles_by_nearest_rank_clamped_to_the_exact_extremes() {
        let mut h = Histogram::default();
        assert_eq!(h.percentile(50), None);
        h.add(2_010);
        // One sample: its bucket's midpoint (2000) clamps to the sample.
        assert_eq!(h.percentile(50), Some(2_010));
        for v in [4_000, 4_000, 40, 9_000_000] {
            h.add(v);
        }
        // Sorted: 40, 2010, 4000, 4000, 9e6; rank 3 of 5 is 4000 (bucket
        // 3968..=4031, midpoint 4000); rank 5 is the maximum.
        assert_eq!(h.percentile(50), Some(4_000));
        assert_eq!(h.percentile(99), Some(9_000_000));
        assert_eq!((h.count, h.min, h.max), (5, 40, 9_000_000));
        let mut m = Histogram::default();
        m.merge(&h);
        m.merge(&h);
        assert_eq!(
            (m.count, m.min, m.max, m.percentile(50)),
            (10, 40, 9_000_000, Some(4_000))
        );
    }

    #[test]
    fn the_first_packet_beyond_the_named_psn_after_the_last_at_or_before_it() {
        let mut n = Nics::default();
        // 10, 11 (tap saw it; lost after the tap), 12, 13; then 11 resent, 12.
        for (q, ts) in [
            (10, 100),
            (11, 200),
            (12, 300),
            (13, 400),
            (11, 900),
            (12, 1_000),
        ] {
            n.sent(7, q, ts);
        }
        assert_eq!(n.out_of_sequence(7, 11), Some(1_000));
        assert_eq!(n.out_of_sequence(7, 13), None);
        // The tap missed 11: 10 then 12.
        let mut n = Nics::default();
        for (q, ts) in [(10, 100), (12, 300), (13, 400)] {
            n.sent(1, q, ts);
        }
        assert_eq!(n.out_of_sequence(1, 11), Some(300));
        assert_eq!(n.out_of_sequence(2, 11), None);
        // Wrapping PSNs.
        let mut n = Nics::default();
        for (q, ts) in [(0xFF_FFFF, 5), (1, 6)] {
            n.sent(1, q, ts);
        }
        assert_eq!(n.out_of_sequence(1, 0), Some(6));
        // Older than the log: not measured.
        let mut n = Nics::default();
        for k in 0..=SENT_LOG as u32 {
            n.sent(1, 100 + k, u64::from(k));
        }
        assert_eq!(n.out_of_sequence(1, 100), None);
        assert_eq!(n.out_of_sequence(1, 101), Some(2));
        // An ACK up to 500 keeps the last packet at or below it: a NAK for
        // 501 (the tap missed it) still finds 500 then 502.
        let mut n = Nics::default();
        for (q, ts) in [(498, 1), (499, 2), (500, 3), (502, 4), (503, 5)] {
            n.sent(1, q, ts);
        }
        n.acked(1, 500);
        assert_eq!(n.sent[&1].packets.len(), 3);
        assert_eq!(n.out_of_sequence(1, 501), Some(4));
        // Times more than 2^32 ns apart restart the log.
        n.sent(1, 504, 5 + (1 << 32));
        assert_eq!(n.sent[&1].packets.len(), 1);
        assert_eq!(n.out_of_sequence(1, 501), None);
    }
}
