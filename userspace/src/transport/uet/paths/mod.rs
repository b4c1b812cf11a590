//! Spraying and trimming (docs/analysis.md, "UET: spraying and trimming"):
//! per tap, PDC direction ([`PdcKey`]) and entropy value, the requests,
//! their bytes, retransmissions (RETX), trimmed requests and how late each
//! entropy's requests arrive behind their PDC's others; per tap the trimmed
//! requests; per PDC direction what its ACKs (M flag, NSCC state) and
//! trimmed NACKs said. `uet_paths.parquet`'s rows ([`PathRow`]) and the
//! `uet-trimming` and `uet-spray-imbalance` findings read it.
//!
//! Bounded: [`ENTROPIES_KEPT`] entropy values per PDC direction (the rest
//! summed in one row), [`RECENT_HIGHEST`] PSNs per direction for lateness;
//! a direction with no record for `--flow-idle` is retired (the flows'
//! rule, docs/analysis.md "Retirement") into its rows, of which
//! [`RETIRED_ROWS_HELD`] are kept and the rest summed per tap.

mod direction;

use std::collections::{BTreeMap, HashMap};

use rocescope_common::wire::uet::uet_present as present;
use rocescope_common::wire::uet::{NackCode, PdsType, pds::field as pf};
use rocescope_common::{PacketRecord, flags};

use super::PdcKey;
use direction::{Direction, Request};

/// Entropy values kept apart per PDC direction; the requests on others
/// are summed in one row (entropy null). 64 covers the sprays seen in
/// practice (UET's reference provider sprays over 16–64 values per PDC).
pub const ENTROPIES_KEPT: usize = 64;
/// New highest PSNs remembered per direction, for how long ago a later
/// PSN overtook a late request.
pub const RECENT_HIGHEST: usize = 32;
/// A direction's first requests kept to be judged again should a larger
/// request show their reference was trimmed itself (docs/analysis.md,
/// "UET: spraying and trimming").
pub const PROVISIONAL: usize = 64;
/// Rows of retired PDC directions held to the end (~150 bytes each); the
/// rows of directions retiring after that are summed per tap.
pub const RETIRED_ROWS_HELD: usize = 65_536;

/// One path's (entropy value's) requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathCounts {
    pub packets: u64,
    /// Frame lengths on the wire.
    pub bytes: u64,
    /// Bytes after the headers (a trimmed request's: what the trim left).
    pub payload_bytes: u64,
    /// Requests with the RETX flag.
    pub retransmissions: u64,
    /// Requests the trim rule calls trimmed.
    pub trimmed: u64,
    /// First transmissions that arrived after a higher PSN of their PDC
    /// direction, the most PSNs and ns behind, and the ns summed.
    pub late: u64,
    pub late_max_psns: u32,
    pub late_max_ns: u64,
    pub late_sum_ns: u64,
}

impl PathCounts {
    fn add(&mut self, o: &PathCounts) {
        self.packets += o.packets;
        self.bytes += o.bytes;
        self.payload_bytes += o.payload_bytes;
        self.retransmissions += o.retransmissions;
        self.trimmed += o.trimmed;
        self.late += o.late;
        self.late_max_psns = self.late_max_psns.max(o.late_max_psns);
        self.late_max_ns = self.late_max_ns.max(o.late_max_ns);
        self.late_sum_ns += o.late_sum_ns;
    }

    /// Mean lateness over every request of the path (on-time ones count
    /// 0), ns.
    pub fn mean_late_ns(&self) -> f64 {
        if self.packets == 0 {
            0.0
        } else {
            self.late_sum_ns as f64 / self.packets as f64
        }
    }
}

/// One row of `uet_paths.parquet` (docs/tables.md): a tap, a PDC
/// direction and an entropy value.
#[derive(Clone, Debug, PartialEq)]
pub struct PathRow {
    /// `None` on a tap's sum of the directions retired past
    /// [`RETIRED_ROWS_HELD`].
    pub key: Option<PdcKey>,
    /// The receiving end's PDC id, once a request carried it.
    pub dpdcid: Option<u16>,
    /// `None`: the entropy values past [`ENTROPIES_KEPT`] (or a sum).
    pub entropy: Option<u16>,
    pub iface: u16,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    pub counts: PathCounts,
    /// Entropy values the direction's requests used (kept ones; with a
    /// row of `None` entropy, more).
    pub pdc_entropies: u32,
}

/// What the ACKs and NACKs of a PDC direction's requests said.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Answers {
    /// ACKs, and of them with the M flag (the acknowledged request
    /// arrived CE-marked).
    pub acks: u64,
    pub acks_ecn: u64,
    /// ACK_CCs with NSCC state (CC type 0), and of them asking the sender
    /// to hold back (`rcv_cwnd_pend` not 0).
    pub acks_nscc: u64,
    pub acks_cwnd_pend: u64,
    /// NACKs with a trimmed code (0x01–0x03): the target's answer to
    /// trimmed requests.
    pub trimmed_nacks: u64,
}

/// What a PDC direction's ACKs and NACKs said, and its requests' totals:
/// the `uet-trimming` finding's per-PDC evidence.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PdcSignals {
    pub key: PdcKey,
    pub dpdcid: Option<u16>,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    pub requests: PathCounts,
    pub ce: u64,
    pub answers: Answers,
    pub first_trim_ns: Option<u64>,
    /// Mean PSNs in flight before and after the first trim signal (`None`
    /// without a sample).
    pub inflight_before: Option<f64>,
    pub inflight_after: Option<f64>,
}

/// Per tap: its UET requests and how many the trim rule calls trimmed,
/// and the trimmed NACKs it recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapTrims {
    pub requests: u64,
    pub trimmed: u64,
    pub trimmed_nacks: u64,
}

/// The tracker (one per analyzer).
#[derive(Debug, Default)]
pub struct Paths {
    live: HashMap<PdcKey, Direction>,
    /// Rows and signals of retired directions (at most
    /// [`RETIRED_ROWS_HELD`] rows), then per tap sums.
    retired_rows: Vec<PathRow>,
    retired_signals: Vec<PdcSignals>,
    retired_sums: BTreeMap<u16, PathRow>,
    taps: BTreeMap<u16, TapTrims>,
    /// When idle directions are next swept.
    sweep_at: u64,
}

impl Paths {
    /// A UET record at `now` (the run's latest time so far); directions
    /// idle for `idle_ns` (`--flow-idle`) retire.
    pub fn record(&mut self, rec: &PacketRecord, now: u64, idle_ns: u64) {
        // Once per `--flow-idle`, as the CNP counts (analyze/flows/retire.rs).
        if now >= self.sweep_at {
            if self.sweep_at > 0 {
                self.retire_idle(now, idle_ns);
            }
            self.sweep_at = now.saturating_add(idle_ns);
        }
        let u = rec.uet();
        if u.present & present::PDS == 0 {
            return;
        }
        let Some(pds) = PdsType::from_u8(u.pds_type) else {
            return;
        };
        if pds.is_rud_rod_request() {
            let Some(key) = PdcKey::of(rec) else { return };
            let dpdcid = (u.present & present::DPDCID != 0).then_some(u.dpdcid);
            let r = Request {
                ts_ns: rec.ts_ns,
                psn: super::psn(u),
                entropy: (u.present & present::ENTROPY != 0).then_some(u.entropy),
                dscp: rec.dscp,
                frame_len: rec.frame_len,
                payload_len: if rec.has(flags::HAS_PAYLOAD_LEN) {
                    rec.payload_len
                } else {
                    0
                },
                retx: u.pds_flags & pf::FLAG_RETX != 0,
                ce: rec.ecn == 3,
            };
            let d = self
                .live
                .entry(key)
                .or_insert_with(|| Direction::new(rec.ts_ns, dpdcid));
            d.dpdcid = d.dpdcid.or(dpdcid);
            let trimmed = d.request(&r);
            let t = self.taps.entry(rec.iface).or_default();
            t.requests += 1;
            t.trimmed += trimmed;
            return;
        }
        // ACKs and NACKs answer the reverse direction's requests.
        let Some(key) = PdcKey::reverse_of(rec) else {
            return;
        };
        match pds {
            PdsType::Ack | PdsType::AckCc | PdsType::AckCcx => {
                let Some(d) = self.live.get_mut(&key) else {
                    return;
                };
                let nscc =
                    (pds == PdsType::AckCc && u.present & present::CC != 0 && u.cc_type == 0)
                        .then(|| rcv_cwnd_pend(u.cc_state));
                let ecn = u.pds_flags & pf::FLAG_M != 0;
                d.ack(rec.ts_ns, ecn, nscc, u.cack_psn);
            }
            PdsType::Nack | PdsType::NackCcx => {
                let trimmed = u.present & present::NACK != 0
                    && NackCode::from_u8(u.nack_code).is_some_and(NackCode::is_trimmed);
                if !trimmed {
                    return;
                }
                self.taps.entry(rec.iface).or_default().trimmed_nacks += 1;
                if let Some(d) = self.live.get_mut(&key) {
                    d.trimmed_nack(rec.ts_ns);
                }
            }
            _ => {}
        }
    }

    /// Retires the directions with no record since `now - idle_ns`.
    fn retire_idle(&mut self, now: u64, idle_ns: u64) {
        let idle: Vec<PdcKey> = self
            .live
            .iter()
            .filter(|(_, d)| now.saturating_sub(d.last_ts_ns) > idle_ns)
            .map(|(k, _)| *k)
            .collect();
        for key in idle {
            if let Some(d) = self.live.remove(&key) {
                self.retire(key, &d);
            }
        }
    }

    fn retire(&mut self, key: PdcKey, d: &Direction) {
        let rows = rows_of(key, d);
        if self.retired_rows.len() + rows.len() <= RETIRED_ROWS_HELD {
            self.retired_rows.extend(rows);
            self.retired_signals.push(signals_of(key, d));
            return;
        }
        for row in rows {
            let sum = self.retired_sums.entry(row.iface).or_insert(PathRow {
                key: None,
                dpdcid: None,
                entropy: None,
                iface: row.iface,
                first_ts_ns: row.first_ts_ns,
                last_ts_ns: row.last_ts_ns,
                counts: PathCounts::default(),
                pdc_entropies: 0,
            });
            sum.first_ts_ns = sum.first_ts_ns.min(row.first_ts_ns);
            sum.last_ts_ns = sum.last_ts_ns.max(row.last_ts_ns);
            sum.counts.add(&row.counts);
        }
    }

    /// `uet_paths.parquet`'s rows: the retired directions' first, then the
    /// live ones' by key, each direction's entropy values in order of
    /// appearance and the summed rest last.
    pub fn rows(&self) -> Vec<PathRow> {
        let mut rows = self.retired_rows.clone();
        rows.extend(self.retired_sums.values().cloned());
        let mut live: Vec<(&PdcKey, &Direction)> = self.live.iter().collect();
        live.sort_by_key(|(k, _)| **k);
        for (k, d) in live {
            rows.extend(rows_of(*k, d));
        }
        rows
    }

    /// Every direction's signals (retired ones held, then the live ones by key).
    pub fn signals(&self) -> Vec<PdcSignals> {
        let mut out = self.retired_signals.clone();
        let mut live: Vec<(&PdcKey, &Direction)> = self.live.iter().collect();
        live.sort_by_key(|(k, _)| **k);
        out.extend(live.into_iter().map(|(k, d)| signals_of(*k, d)));
        out
    }

    /// Per tap (interface index): requests, trimmed requests, trimmed NACKs.
    pub fn taps(&self) -> &BTreeMap<u16, TapTrims> {
        &self.taps
    }

    /// Directions held now (live).
    pub fn live(&self) -> usize {
        self.live.len()
    }
}

/// ACK_CC's NSCC `rcv_cwnd_pend` (7 bits; its byte's top bit is
/// `restore_cwnd`) from the 8 bytes of CC state as on the wire: service
/// time (2 bytes), then that byte (`wire::uet::pds::Pds::cc_state`).
fn rcv_cwnd_pend(cc_state: u64) -> u8 {
    use rocescope_common::wire::uet::pds::field::ack::{CC_STATE, NSCC_RC_PEND};
    let shift = (7 - (NSCC_RC_PEND - CC_STATE)) * 8;
    ((cc_state >> shift) & 0x7F) as u8
}

fn rows_of(key: PdcKey, d: &Direction) -> Vec<PathRow> {
    let pdc_entropies = d.paths.len() as u32;
    d.paths
        .iter()
        .chain(&d.others)
        .map(|p| PathRow {
            key: Some(key),
            dpdcid: d.dpdcid,
            entropy: p.entropy,
            iface: key.iface,
            first_ts_ns: p.first_ts_ns,
            last_ts_ns: p.last_ts_ns,
            counts: p.counts,
            pdc_entropies,
        })
        .collect()
}

fn signals_of(key: PdcKey, d: &Direction) -> PdcSignals {
    let mean = |(sum, n): (u64, u64)| (n > 0).then(|| sum as f64 / n as f64);
    PdcSignals {
        key,
        dpdcid: d.dpdcid,
        first_ts_ns: d.first_ts_ns,
        last_ts_ns: d.last_ts_ns,
        requests: d.totals(),
        ce: d.ce,
        answers: d.answers,
        first_trim_ns: d.first_trim_ns,
        inflight_before: mean(d.inflight_before),
        inflight_after: mean(d.inflight_after),
    }
}

#[cfg(test)]
mod tests;
