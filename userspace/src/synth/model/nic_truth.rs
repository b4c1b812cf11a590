//! The truth of how the NICs reacted (`docs/synth-truth.md`, "nics"): from
//! the model's own record of which request packet made each sequence-error
//! NAK (`Qp::nak_causes`) and which resend answered each NAK
//! (`Qp::nak_resends`), the latencies each tap of the capture shows, per NIC
//! as the tap names it (the frames' source MAC and IP): NAK generation (the
//! packet → the NAK, the receiver's) and NAK reaction (the NAK → the resend,
//! the sender's). A latency counts at a tap that recorded both frames.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use serde::Serialize;

use super::fabric::Run;
use super::spec::FrameSpec;
use crate::addr::Mac;

/// One latency's distribution: how many, the median (nearest rank) and the
/// maximum, exact.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LatencyTruth {
    pub count: u64,
    pub p50_ns: Option<u64>,
    pub max_ns: Option<u64>,
}

impl LatencyTruth {
    fn of(mut ns: Vec<u64>) -> LatencyTruth {
        ns.sort_unstable();
        let rank = ns.len().div_ceil(2).max(1);
        LatencyTruth {
            count: ns.len() as u64,
            p50_ns: ns.get(rank - 1).copied(),
            max_ns: ns.last().copied(),
        }
    }
}

/// One NIC as the taps name it: a row of `nics.parquet` to be.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NicTruth {
    pub nic_mac: String,
    pub nic_ip: Ipv4Addr,
    pub nak_generation: LatencyTruth,
    pub nak_reaction: LatencyTruth,
}

/// Where a tap recorded one transmission, and with which source.
type Seen = (u64, [u8; 6], Ipv4Addr);

/// The NICs' latencies at the taps `wanted`.
pub fn of(run: &Run, wanted: &[bool]) -> Vec<NicTruth> {
    // Per (flow, send_seq) request and (flow, resp_seq) response: where
    // each tap recorded it.
    type Records = BTreeMap<(usize, u64), BTreeMap<usize, Seen>>;
    let mut requests: Records = BTreeMap::new();
    let mut responses: Records = BTreeMap::new();
    for (f, m) in run.frames.iter().zip(&run.meta) {
        if m.copy || !wanted.get(f.tap).copied().unwrap_or(false) {
            continue;
        }
        let (Some(flow), FrameSpec::Roce(r)) = (m.flow, &f.frame) else {
            continue;
        };
        let seen = (f.ts_ns, r.src_mac, r.src_ip);
        let records = match (m.index, m.resp_seq) {
            (Some(_), _) => requests.entry((flow, m.send_seq)),
            (None, Some(s)) => responses.entry((flow, s)),
            (None, None) => continue,
        };
        records.or_default().insert(f.tap, seen);
    }
    let taps: Vec<usize> = (0..wanted.len()).filter(|&t| wanted[t]).collect();
    // Per NIC (the reacting frame's source): NAK generation, NAK reaction.
    let mut samples: BTreeMap<([u8; 6], Ipv4Addr), [Vec<u64>; 2]> = BTreeMap::new();
    for (flow, q) in run.qps.iter().enumerate() {
        // (kind, stimulus, reaction) of every reaction the model logged.
        let generation = q
            .nak_causes
            .iter()
            .map(|&(p, n)| (0, requests.get(&(flow, p)), responses.get(&(flow, n))));
        let reaction = q
            .nak_resends
            .iter()
            .map(|&(n, p)| (1, responses.get(&(flow, n)), requests.get(&(flow, p))));
        for (kind, stimulus, reaction) in generation.chain(reaction) {
            for &t in &taps {
                let (Some(s), Some(r)) = (
                    stimulus.and_then(|m| m.get(&t)),
                    reaction.and_then(|m| m.get(&t)),
                ) else {
                    continue;
                };
                samples.entry((r.1, r.2)).or_default()[kind].push(r.0.saturating_sub(s.0));
            }
        }
    }
    samples
        .into_iter()
        .map(|((mac, ip), [generation, reaction])| NicTruth {
            nic_mac: Mac(mac).to_string(),
            nic_ip: ip,
            nak_generation: LatencyTruth::of(generation),
            nak_reaction: LatencyTruth::of(reaction),
        })
        .collect()
}
