//! Response flows: ACKs, NAKs and RNR NAKs, and what they settle on the paired
//! request flow (`docs/analysis.md`, *NAKs*).

use rocescope_common::proto::ib::{PSN_MASK, aeth, op};
use rocescope_common::{PacketRecord, flags};

use crate::transport::roce::sequencing::nack_code;
use crate::transport::sequencing::{Ack, Nack, NackCode, Sequencing};

use super::count::Count;
use super::events::{Event, EventDetail, EventKind, NakDetail};
use super::{Analyzer, Sink};
use super::{nics, psn};

/// Most outstanding NAKs kept per response flow.
pub(super) const MAX_PENDING_NAKS: usize = 16;

#[derive(Clone, Copy, Debug)]
pub(super) struct PendingNak {
    pub(super) psn: u32,
    pub(super) ts: u64,
    pub(super) code: NackCode,
    /// It named a frame a switch trimmed (docs/analysis.md, "RoCE: trimmed
    /// frames").
    pub(super) trim: bool,
}

impl PendingNak {
    /// An RNR NAK: the responder was not ready.
    pub(super) fn rnr(&self) -> bool {
        self.code == NackCode::NotReady
    }
}

/// A response flow's NAKs: counts, the ones awaiting the rewind they
/// caused, the last one's time. A flow has one from its first NAK on.
#[derive(Clone, Debug, Default)]
pub(crate) struct NakHistory {
    pub naks: u64,
    pub rnr_naks: u64,
    /// Of its NAKs (not RNR NAKs), those naming a frame a switch trimmed.
    pub trim_naks: u64,
    /// At most [`MAX_PENDING_NAKS`].
    pub(super) pending: Vec<PendingNak>,
    /// When the flow last carried a NAK or RNR NAK.
    pub(super) last_nak_ts: Option<u64>,
}

/// What a flow with no NAK history reads.
pub(super) static NO_NAKS: std::sync::LazyLock<NakHistory> =
    std::sync::LazyLock::new(NakHistory::default);

impl Analyzer {
    /// A response packet (ACK, atomic ACK, READ response, NAK).
    pub(super) fn response(&mut self, i: usize, rec: &PacketRecord, sink: &mut impl Sink) {
        let now = rec.ts_ns;
        let q = rec.roce().psn & PSN_MASK;
        self.flows[i].add(Count::Responses, 1);
        if self.flows[i].paired().is_none() {
            self.try_pair(i, q);
        }
        let syn = rec.roce().aeth_syndrome;
        let has_aeth = rec.has(flags::HAS_AETH);
        if let Some(r) = self.flows[i].paired() {
            let nak = has_aeth && nack_code(syn).is_some();
            // Without a rewind there is no run to answer.
            if let Some(h) = self.flows[r].rewind_held() {
                h.livelock.answered(now, nak);
            }
        }
        if !has_aeth {
            return;
        }
        let o = rec.roce().opcode & 0x1F;
        let request = self.flows[i].paired();
        let paired = request.map(|p| self.flows[p].id);
        let f = &mut self.flows[i];
        if aeth::is_ack(syn) {
            if matches!(o, op::ACKNOWLEDGE | op::ATOMIC_ACKNOWLEDGE) {
                f.add(Count::Acks, 1);
            }
            let a = f.acknowledge(&Ack::Cumulative(q));
            if let Some(r) = request {
                self.acked(r, a, now, sink);
            }
        } else if let Some(code) = nack_code(syn) {
            // A NAK naming a frame a switch trimmed: congestion, not loss.
            let trim = request.is_some_and(|r| self.trim_nak(r, q));
            let f = &mut self.flows[i];
            let rnr = code == NackCode::NotReady;
            f.nak_mut().trim_naks += u64::from(trim && !rnr);
            if rnr {
                f.nak_mut().rnr_naks += 1;
            } else {
                f.nak_mut().naks += 1;
            }
            if f.nak().pending.len() >= MAX_PENDING_NAKS {
                f.nak_mut().pending.remove(0);
            }
            f.nak_mut().last_nak_ts = Some(now);
            if let Some(r) = request {
                self.flows[r].sender_mut().rto.nak(now);
            }
            if let (Some(r), false) = (request, rnr) {
                // A sequence error names the PSN the responder expected.
                if code == NackCode::Sequence {
                    if let Some(s) = self.flows[r].seq_mut() {
                        s.nack(&Nack {
                            ts: now,
                            psn: q,
                            code,
                        });
                    }
                    // The NAK's sender is the receiver whose NIC reacted.
                    if let Some(t) = self.nics.out_of_sequence(self.flows[r].id, q) {
                        let nic = (rec.src_mac, rec.src_ip);
                        let latency = now.saturating_sub(t);
                        self.nics
                            .sample(nic, rec.iface, nics::Latency::NakGeneration, latency);
                    }
                }
            }
            let f = &mut self.flows[i];
            f.nak_mut().pending.push(PendingNak {
                psn: q,
                ts: now,
                code,
                trim,
            });
            sink.event(&Event {
                ts_ns: now,
                iface: rec.iface,
                flow_id: Some(f.id),
                kind: if rnr {
                    EventKind::RnrNak
                } else {
                    EventKind::Nak
                },
                psn: Some(q),
                depth: None,
                trigger: None,
                idle_us: None,
                detail: EventDetail::Nak(NakDetail {
                    psn: q,
                    rnr,
                    code: syn & 0x1F,
                    request_flow: paired,
                }),
            });
        }
    }

    /// The response flow paired with request flow `r` acknowledged up to
    /// `a`: missing PSNs it covers resolve, timeout rewinds learn when their
    /// PSN was ACKed, and the round-trip probe completes.
    pub(super) fn acked(&mut self, r: usize, a: u32, now: u64, sink: &mut impl Sink) {
        self.nics.acked(self.flows[r].id, a);
        let f = &mut self.flows[r];
        let next = f.seq().map(Sequencing::next);
        f.sender_mut().rto.acked(a, next, now);
        if let Some(h) = f.rewind_held() {
            h.livelock.acked(a);
            for t in &mut h.timeouts {
                if t.acked_at.is_none() && psn::diff(a, t.psn) >= 0 {
                    t.acked_at = Some(now);
                }
            }
        }
        if let Some((p, t)) = f.rtt_probe()
            && psn::diff(a, p) >= 0
        {
            f.round_trip(now.saturating_sub(t));
            f.set_rtt_probe(None);
        }
        self.sequencing(r, sink, |s, out| s.ack(now, &Some(a), out));
    }
}
