//! Request flows' sequencing, as the analyzer acts on it: a request packet
//! goes to its transport's [`Sequencing`] (RoCE's go-back-N, `GoBackN`),
//! and what it judged — new data, gaps, late arrivals, missing PSNs
//! resolved, retransmissions, rewinds — is counted, written as events and
//! kept for the findings (`docs/analysis.md`, *Sequence analysis*,
//! *Retransmissions*, *Gaps*).

use rocescope_common::proto::ib::{PSN_MASK, transport};
use rocescope_common::{PacketRecord, flags};

use crate::transport::roce::sequencing::{GoBackN, consumption};
use crate::transport::sequencing::{Data, Judgement, Resolved, Sequencing};

use super::count::Count;
use super::events::{Event, EventDetail, EventKind, LatePsn, Missing, ResolvedPsns};
use super::pfc::Cover;
use super::responses::PendingNak;
use super::rewind::{Rewind, RewindContext};
use super::{Analyzer, Sink};
use super::{gaps, nics};

/// The request packet being judged.
#[derive(Clone, Copy, Debug)]
struct Here {
    q: u32,
    now: u64,
    iface: u16,
    context: RewindContext,
    /// The NAK its send answered.
    nak: Option<PendingNak>,
}

/// What a request flow's sequencing judged, as the findings read it
/// whatever the transport: missing PSNs by fate, the latest late arrival,
/// spurious retransmissions, and the rewind context of arrivals the
/// sequencing left undecided. A flow has one from its first gap or
/// spurious retransmission on; a flow with neither carries none
/// (docs/analysis.md, "Memory").
#[derive(Clone, Debug, Default)]
pub(crate) struct SequenceHistory {
    pub gaps: u64,
    /// PSNs missing over all gaps.
    pub gap_psns: u64,
    pub gap_counts: gaps::GapCounts,
    pub late_max_ns: Option<u64>,
    pub late_max_psns: u32,
    /// Retransmissions of PSNs the tap had seen acknowledged.
    pub spurious: u64,
    /// What a rewind starting at the first undecided arrival records.
    pub(super) resend_context: Option<RewindContext>,
}

/// What a flow with no sequence history reads.
pub(super) static NO_SEQUENCE: std::sync::LazyLock<SequenceHistory> =
    std::sync::LazyLock::new(SequenceHistory::default);

impl Analyzer {
    /// PSNs a request consumes: `(at least, at most)`.
    fn consumption(&self, i: usize, rec: &PacketRecord) -> (u32, u32) {
        let f = &self.flows[i];
        let mtu = f
            .mtu
            .max(f.paired().map(|p| self.flows[p].mtu).unwrap_or(0));
        let reth_len = rec.has(flags::HAS_RETH).then_some(rec.roce().reth_len);
        consumption(rec.roce().opcode, reth_len, mtu)
    }

    /// A request packet: returns (retransmission, rewind).
    pub(super) fn request(
        &mut self,
        i: usize,
        rec: &PacketRecord,
        idle: u64,
        paused: u64,
        cover: Option<Cover>,
        sink: &mut impl Sink,
    ) -> (bool, bool) {
        let now = rec.ts_ns;
        let q = rec.roce().psn & PSN_MASK;
        let consumes = self.consumption(i, rec);
        self.flows[i].add(Count::DataPackets, 1);
        let paired = self.flows[i].paired();
        // Outstanding NAKs for this PSN are consumed by any send of it.
        let mut nak: Option<PendingNak> = None;
        if let Some(p) = paired
            && let Some(naks) = self.flows[p].nak_held()
        {
            naks.pending.retain(|n| {
                if n.psn == q {
                    if nak.is_none_or(|m| n.ts >= m.ts) {
                        nak = Some(*n);
                    }
                    false
                } else {
                    true
                }
            });
        }
        if let Some(n) = nak.filter(|n| !n.rnr()) {
            // The sender's first send of the PSN its NAK named.
            let nic = (rec.src_mac, rec.src_ip);
            let reaction = now.saturating_sub(n.ts);
            self.nics
                .sample(nic, rec.iface, nics::Latency::NakReaction, reaction);
        }
        // What a NAK generation latency is measured from: only a paired
        // flow's NAKs can be seen.
        if paired.is_some() && matches!(rec.roce().opcode >> 5, transport::RC | transport::XRC) {
            self.nics.sent(self.flows[i].id, q, now);
        }
        let acked = paired.and_then(|p| self.flows[p].acked());
        let d = Data {
            ts: now,
            psn: q,
            consumes,
            retx: false,
            never_resent: rec.roce().opcode >> 5 == transport::UC,
            nacked: nak.map(|n| n.code),
        };
        let mut out = std::mem::take(&mut self.judged);
        let f = &mut self.flows[i];
        let Some(s) = f.seq_mut() else {
            f.start_seq(GoBackN::start(&d));
            f.set_rtt_probe(Some((q, now)));
            return (false, false);
        };
        s.data(&d, &acked, &mut out);
        let here = Here {
            q,
            now,
            iface: rec.iface,
            context: RewindContext {
                idle,
                paused,
                cover,
            },
            nak,
        };
        let result = self.judge(i, &out, Some(here), sink);
        out.clear();
        self.judged = out;
        result
    }

    /// Runs `f` on flow `i`'s sequencing, if it has one, and acts on what
    /// it judged (an acknowledgment, the flow's end, counted requests).
    pub(super) fn sequencing(
        &mut self,
        i: usize,
        sink: &mut impl Sink,
        f: impl FnOnce(&mut GoBackN, &mut Vec<Judgement>),
    ) {
        let Some(s) = self.flows[i].seq_mut() else {
            return;
        };
        let mut out = std::mem::take(&mut self.judged);
        f(s, &mut out);
        self.judge(i, &out, None, sink);
        out.clear();
        self.judged = out;
    }

    /// Acts on flow `i`'s judgements (`here`: the request packet judged,
    /// when one was): returns (retransmission, rewind at `here`).
    fn judge(
        &mut self,
        i: usize,
        judged: &[Judgement],
        here: Option<Here>,
        sink: &mut impl Sink,
    ) -> (bool, bool) {
        let mut result = (false, false);
        for j in judged {
            match *j {
                Judgement::Resolved(r) => self.resolved(i, r, sink),
                Judgement::Late {
                    psn,
                    at_ns,
                    since_ns,
                    psns_late,
                } => self.late(i, psn, at_ns, since_ns, psns_late, sink),
                Judgement::StrayCopy => {}
                Judgement::Rewind(r) if !r.here => {
                    // The resend began at the first undecided arrival.
                    let context = self.flows[i]
                        .sequence_held()
                        .and_then(|g| g.resend_context.take())
                        .unwrap_or_default();
                    let iface = self.flows[i].iface;
                    let rewind = Rewind {
                        went: r,
                        context,
                        nak: None,
                    };
                    self.rewind(i, iface, r.at_ns, rewind, sink);
                }
                _ => {
                    let Some(h) = here else {
                        continue;
                    };
                    if self.judge_here(i, *j, h, sink) {
                        result.0 = true;
                    }
                    if matches!(j, Judgement::Rewind(_)) {
                        result.1 = true;
                    }
                }
            }
        }
        result
    }

    /// A judgement of the request packet `h`; returns whether it was a
    /// retransmission.
    fn judge_here(&mut self, i: usize, j: Judgement, h: Here, sink: &mut impl Sink) -> bool {
        let f = &mut self.flows[i];
        match j {
            Judgement::New => {
                if f.rtt_probe().is_none() {
                    f.set_rtt_probe(Some((h.q, h.now)));
                }
            }
            Judgement::GapOpened { first, psns, last } => {
                let g = f.sequence_mut();
                g.gaps += 1;
                g.gap_psns += u64::from(psns);
                sink.event(&Event {
                    ts_ns: h.now,
                    iface: h.iface,
                    flow_id: Some(f.id),
                    kind: EventKind::Gap,
                    psn: Some(first),
                    depth: Some(psns),
                    trigger: None,
                    idle_us: Some(h.context.idle as f64 / 1000.0),
                    detail: EventDetail::Gap(Missing { psns, first, last }),
                });
            }
            Judgement::Undecided => {
                f.sequence_mut().resend_context.get_or_insert(h.context);
            }
            Judgement::Retransmission { spurious } => {
                f.add(Count::Retrans, 1);
                self.running.retrans_packets += 1;
                f.set_rtt_probe(None);
                if spurious {
                    f.sequence_mut().spurious += 1;
                    self.running.spurious_retrans += 1;
                }
                return true;
            }
            Judgement::Rewind(went) => {
                let r = Rewind {
                    went,
                    context: h.context,
                    nak: h.nak,
                };
                self.rewind(i, h.iface, h.now, r, sink);
            }
            Judgement::Resolved(_) | Judgement::Late { .. } | Judgement::StrayCopy => {}
        }
        false
    }

    /// A missing PSN arrived late: counted, and an event.
    fn late(
        &mut self,
        i: usize,
        psn: u32,
        at_ns: u64,
        since_ns: u64,
        psns_late: u32,
        sink: &mut impl Sink,
    ) {
        let late_ns = at_ns.saturating_sub(since_ns);
        let f = &mut self.flows[i];
        let g = f.sequence_mut();
        // The undecided arrivals are decided.
        g.resend_context = None;
        g.gap_counts.add(gaps::GapClass::Late, 1);
        g.late_max_ns = Some(g.late_max_ns.map_or(late_ns, |m| m.max(late_ns)));
        g.late_max_psns = g.late_max_psns.max(psns_late);
        sink.event(&Event {
            ts_ns: at_ns,
            iface: f.iface,
            flow_id: Some(f.id),
            kind: EventKind::Resolved(gaps::GapClass::Late),
            psn: Some(psn),
            depth: Some(psns_late),
            trigger: None,
            idle_us: None,
            detail: EventDetail::Late(LatePsn {
                psn,
                late_ns,
                psns_late,
            }),
        });
    }

    /// Missing PSNs resolved (not `late`, which [`Analyzer::late`] writes):
    /// counted, and an event.
    fn resolved(&mut self, i: usize, r: Resolved, sink: &mut impl Sink) {
        let f = &mut self.flows[i];
        f.sequence_mut().gap_counts.add(r.class, u64::from(r.len));
        sink.event(&Event {
            ts_ns: r.at_ns,
            iface: f.iface,
            flow_id: Some(f.id),
            kind: EventKind::Resolved(r.class),
            psn: Some(r.lo),
            depth: Some(r.len),
            trigger: None,
            idle_us: None,
            detail: EventDetail::Resolved(ResolvedPsns {
                class: r.class,
                psns: r.len,
                first: r.lo,
                last: r.last,
                missing_ns: r.at_ns.saturating_sub(r.since_ns),
            }),
        });
    }
}
