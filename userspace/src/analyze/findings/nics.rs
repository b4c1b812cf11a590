//! `slow-nic-reaction`: a NIC whose median reaction latency is at least
//! [`SLOWER`] times its peers' in the same capture (the per-NIC
//! distributions: `analyze/nics.rs`; see "NIC reaction latencies" in
//! `docs/analysis.md`).

use crate::analyze::nics::{Histogram, Latency};
use crate::analyze::{NicRow, Severity};

use super::input::Input;
use super::{Diagnosis, Evidence};

/// A NIC this many times slower (median against median) than its peers is
/// slow.
pub(crate) const SLOWER: u64 = 4;
/// Fewest samples on each side (the NIC's, its peers' together).
pub(crate) const MIN_SAMPLES: u64 = 5;

/// `slow-nic-reaction`'s evidence: one NIC at one tap, slow at one latency.
#[derive(Clone, Debug, PartialEq)]
pub struct SlowNic {
    /// The tap it was seen at.
    pub iface: u16,
    pub ip: [u8; 16],
    pub mac: [u8; 6],
    pub kind: Latency,
    /// Its median and samples, and its peers' at the same tap, pooled.
    pub median_ns: u64,
    pub count: u64,
    pub peers_median_ns: u64,
    pub peers_count: u64,
    pub peers: usize,
    /// [`SLOWER`].
    pub threshold_ratio: u64,
}

/// `slow-nic-reaction`: one finding per NIC, tap and latency that is slow.
pub(crate) fn finding(x: &Input, out: &mut Vec<Diagnosis>) {
    for kind in Latency::ALL {
        for i in 0..x.nics.len() {
            if let Some(s) = slow(x.nics, i, kind) {
                out.push(diagnosis(x, s));
            }
        }
    }
}

/// NIC `i` against every other NIC with samples of `kind` at the same tap,
/// pooled: a latency at a tap includes the path from the tap to the NIC and
/// back, so NICs seen from different taps are not compared.
fn slow(nics: &[(u16, NicRow)], i: usize, kind: Latency) -> Option<SlowNic> {
    let (iface, nic) = (nics[i].0, &nics[i].1);
    let own = nic.histogram(kind);
    if own.count < MIN_SAMPLES {
        return None;
    }
    let mut pooled = Histogram::default();
    let mut peers = 0;
    for (j, (tap, p)) in nics.iter().enumerate() {
        let h = p.histogram(kind);
        if j != i && *tap == iface && h.count > 0 {
            pooled.merge(h);
            peers += 1;
        }
    }
    if pooled.count < MIN_SAMPLES {
        return None;
    }
    let median = own.percentile(50)?;
    let peers_median = pooled.percentile(50)?;
    (median > peers_median && median >= SLOWER.saturating_mul(peers_median)).then_some(SlowNic {
        iface,
        ip: nic.ip,
        mac: nic.mac,
        kind,
        median_ns: median,
        count: own.count,
        peers_median_ns: peers_median,
        peers_count: pooled.count,
        peers,
        threshold_ratio: SLOWER,
    })
}

fn diagnosis(x: &Input, s: SlowNic) -> Diagnosis {
    let receiver = matches!(s.kind, Latency::NakGeneration | Latency::CnpGeneration);
    // The request flows this NIC reacted for: as their receiver or sender.
    let ids: Vec<u32> = x
        .flows()
        .filter(|f| f.data_packets() > 0 && f.iface == s.iface)
        .filter(|f| {
            if receiver {
                f.dst_ip == s.ip
            } else {
                f.src_ip == s.ip && f.src_mac == s.mac
            }
        })
        .map(|f| f.id)
        .collect();
    Diagnosis {
        severity: Severity::Warning,
        impact: x.traffic_share(&ids),
        flows: ids,
        evidence: Evidence::SlowNic(s),
    }
}
