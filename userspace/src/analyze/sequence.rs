//! PSN sequencing of request flows: retransmissions, gaps and the fills that
//! tell a late original from a resend (`docs/analysis.md`, *Sequence
//! analysis*, *Retransmissions*, *Gaps*).

use rocescope_common::proto::ib::{PSN_MASK, op, transport};
use rocescope_common::{PacketRecord, flags};

use super::events::{Event, EventDetail, EventKind, LatePsn, Missing, ResolvedPsns};
use super::pfc::Cover;
use super::responses::PendingNak;
use super::rewind::Rewind;
use super::{Analyzer, Sink};
use super::{gaps, nics, psn};

/// Smallest IB path MTU.
pub(super) const MIN_MTU: u32 = 256;

/// Request-sequence state of a flow.
#[derive(Clone, Copy, Debug)]
pub(super) struct Seq {
    pub(super) first_psn: u32,
    /// One past the highest PSN carried.
    pub(super) next: u32,
    /// One past the highest PSN an un-sized READ may have consumed (≥ next).
    pub(super) slack_end: u32,
    /// PSNs that may follow the previous packet: `[prev_lo, prev_hi]`.
    pub(super) prev_lo: u32,
    pub(super) prev_hi: u32,
    /// The previous request packet's PSN: a rewind goes back to or before it.
    pub(super) prev_psn: u32,
    /// The previous request packet was part of a resend (a retransmission or
    /// a missing PSN filled by one): a forward step continues that resend.
    pub(super) resending: bool,
}

/// A missing PSN that arrived, not yet known to be a late original or the
/// first packet of a resend (the next request packet tells).
#[derive(Clone, Copy, Debug)]
pub(super) struct Fill {
    pub(super) psn: u32,
    pub(super) ts: u64,
    /// When it went missing (the PSN after it was seen).
    pub(super) since: u64,
    /// How far behind the highest PSN seen it arrived.
    pub(super) psns_late: u32,
}

/// Consecutive request packets that filled gaps, awaiting the packet that
/// tells whether they began a resend.
#[derive(Clone, Debug)]
pub(super) struct FillRun {
    /// What a rewind starting at the first fill would record.
    pub(super) idle: u64,
    pub(super) paused: u64,
    pub(super) cover: Option<Cover>,
    pub(super) next: u32,
    pub(super) acked: Option<u32>,
    pub(super) fills: Vec<Fill>,
}

/// A request flow's missing PSNs: counts, the ranges awaiting resolution,
/// the latest late arrival, the fills awaiting their verdict. A flow has one
/// from its first gap on; a flow that never skips a PSN carries none
/// (docs/analysis.md, "Memory").
#[derive(Clone, Debug, Default)]
pub(crate) struct GapHistory {
    pub gaps: u64,
    /// PSNs missing over all gaps.
    pub gap_psns: u64,
    pub(super) pending_gaps: gaps::Pending,
    pub gap_counts: gaps::GapCounts,
    pub late_max_ns: Option<u64>,
    pub late_max_psns: u32,
    pub(super) fills: Option<FillRun>,
}

/// What a flow with no gap history reads.
pub(super) static NO_GAPS: std::sync::LazyLock<GapHistory> =
    std::sync::LazyLock::new(GapHistory::default);

/// Most fills one run holds; a longer run is decided as late.
pub(super) const MAX_FILLS: usize = 256;

impl Analyzer {
    /// PSNs a request consumes: `(at least, at most)`.
    pub(super) fn consumption(&self, i: usize, rec: &PacketRecord) -> (u32, u32) {
        if rec.roce().opcode & 0x1F != op::READ_REQUEST || !rec.has(flags::HAS_RETH) {
            return (1, 1);
        }
        let len = rec.roce().reth_len as u64;
        let f = &self.flows[i];
        let mtu = f.mtu.max(f.paired.map(|p| self.flows[p].mtu).unwrap_or(0));
        let ceil = |m: u64| len.div_ceil(m).clamp(1, 1 << 22) as u32;
        if mtu > 0 {
            let n = ceil(mtu as u64);
            (n, n)
        } else {
            (1, ceil(MIN_MTU as u64))
        }
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
        let (n_min, n_max) = self.consumption(i, rec);
        self.flows[i].data_packets += 1;
        let paired = self.flows[i].paired;
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
        if let Some(n) = nak.filter(|n| !n.rnr) {
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
        let acked = paired.and_then(|p| self.flows[p].acked);
        let Some(mut s) = self.flows[i].seq else {
            self.flows[i].seq = Some(Seq {
                first_psn: q,
                next: psn::add(q, n_min),
                slack_end: psn::add(q, n_max),
                prev_lo: psn::add(q, n_min),
                prev_hi: psn::add(q, n_max),
                prev_psn: q,
                resending: false,
            });
            self.flows[i].rtt_probe = Some((q, now));
            return (false, false);
        };
        let forward = psn::diff(q, s.prev_psn) > 0;
        let mut result = (false, false);
        // What a rewind starting at this packet records.
        let rewind_here = |lost| Rewind {
            q,
            next: s.next,
            idle,
            paused,
            cover,
            acked,
            nak,
            lost,
        };
        if psn::diff(q, s.next) < 0 {
            if let Some((since, nak_named)) = self.flows[i]
                .gap_held()
                .and_then(|g| g.pending_gaps.take(q))
            {
                // A PSN the tap missed, seen for the first time: no copy of
                // it was seen before, so it is no retransmission here.
                let continues = s.resending && forward;
                let this_psn = |class| gaps::Resolved {
                    class,
                    lo: q,
                    len: 1,
                    since_ns: since,
                };
                if nak_named || nak.is_some() {
                    let class = if nak_named || nak.is_some_and(|n| !n.rnr) {
                        gaps::GapClass::NakLost
                    } else {
                        gaps::GapClass::LostBeforeTap
                    };
                    self.decide_fills(i, false, sink);
                    self.resolved(i, this_psn(class), now, sink);
                    if !continues {
                        self.rewind(i, rec.iface, now, rewind_here(true), sink);
                        result.1 = true;
                    }
                    s.resending = true;
                } else if continues {
                    self.resolved(i, this_psn(gaps::GapClass::LostBeforeTap), now, sink);
                } else {
                    // A late original, or the first packet of a resend: the
                    // next request packet tells.
                    let f = &mut self.flows[i];
                    let run = f.gap_mut().fills.get_or_insert_with(|| FillRun {
                        idle,
                        paused,
                        cover,
                        next: s.next,
                        acked,
                        fills: Vec::new(),
                    });
                    run.fills.push(Fill {
                        psn: q,
                        ts: now,
                        since,
                        psns_late: (psn::diff(s.next, q) - 1).max(0) as u32,
                    });
                    if run.fills.len() >= MAX_FILLS {
                        self.decide_fills(i, false, sink);
                    }
                    s.resending = false;
                }
            } else if rec.roce().opcode >> 5 == transport::UC {
                // Seen before, but UC never resends: a stray copy, neither a
                // retransmission nor a rewind, and the sequence goes on.
            } else {
                // Seen before: a retransmission.
                result.0 = true;
                let f = &mut self.flows[i];
                f.retrans += 1;
                self.running.retrans_packets += 1;
                f.rtt_probe = None;
                let spurious = acked.is_some_and(|a| psn::diff(a, q) >= 0);
                if spurious {
                    f.rewind_mut().spurious += 1;
                    self.running.spurious_retrans += 1;
                }
                let resend_began_at_fills = forward && f.gap().fills.is_some();
                self.decide_fills(i, resend_began_at_fills, sink);
                // A rewind goes back: a forward step inside a resend (an ACK
                // covered the rest, or a PSN was lost upstream) continues it.
                if !(forward && (s.resending || resend_began_at_fills)) {
                    self.rewind(i, rec.iface, now, rewind_here(false), sink);
                    result.1 = true;
                }
                s.resending = true;
            }
        } else {
            self.decide_fills(i, false, sink);
            s.resending = false;
            let bound = psn::max(s.next, s.slack_end);
            let g = psn::diff(q, bound);
            if g > 0 {
                let f = &mut self.flows[i];
                f.gap_mut().gaps += 1;
                f.gap_mut().gap_psns += g as u64;
                let evicted = f.gap_mut().pending_gaps.add(bound, g as u32, now);
                sink.event(&Event {
                    ts_ns: now,
                    iface: rec.iface,
                    flow_id: Some(f.id),
                    kind: EventKind::Gap,
                    psn: Some(bound),
                    depth: Some(g as u32),
                    trigger: None,
                    idle_us: Some(idle as f64 / 1000.0),
                    detail: EventDetail::Gap(Missing {
                        psns: g as u32,
                        first: bound,
                        last: psn::add(q, PSN_MASK),
                    }),
                });
                if let Some((lo, len, nak_named)) = evicted {
                    let class = if nak_named {
                        gaps::GapClass::NakLost
                    } else if acked.is_some_and(|a| psn::diff(a, psn::add(lo, len - 1)) >= 0) {
                        gaps::GapClass::CaptureLost
                    } else {
                        gaps::GapClass::Unresolved
                    };
                    self.resolved(
                        i,
                        gaps::Resolved {
                            class,
                            lo,
                            len,
                            since_ns: now,
                        },
                        now,
                        sink,
                    );
                }
            }
            s.next = psn::add(q, n_min);
            s.slack_end = psn::add(q, n_max);
            let f = &mut self.flows[i];
            if f.rtt_probe.is_none() {
                f.rtt_probe = Some((q, now));
            }
        }
        s.prev_lo = psn::add(q, n_min);
        s.prev_hi = psn::add(q, n_max);
        s.prev_psn = q;
        self.flows[i].seq = Some(s);
        result
    }

    /// The flow's pending fills are decided: the first packet of a resend
    /// (`resend`: a retransmission continued forward from them), or late
    /// originals.
    pub(super) fn decide_fills(&mut self, i: usize, resend: bool, sink: &mut impl Sink) {
        let Some(run) = self.flows[i].gap_held().and_then(|g| g.fills.take()) else {
            return;
        };
        let iface = self.flows[i].iface;
        if resend {
            let Some(first) = run.fills.first().copied() else {
                return;
            };
            let r = Rewind {
                q: first.psn,
                next: run.next,
                idle: run.idle,
                paused: run.paused,
                cover: run.cover,
                acked: run.acked,
                nak: None,
                lost: true,
            };
            self.rewind(i, iface, first.ts, r, sink);
            for fl in &run.fills {
                let class = gaps::GapClass::LostBeforeTap;
                self.resolved(
                    i,
                    gaps::Resolved {
                        class,
                        lo: fl.psn,
                        len: 1,
                        since_ns: fl.since,
                    },
                    fl.ts,
                    sink,
                );
            }
            return;
        }
        for fl in &run.fills {
            let late_ns = fl.ts.saturating_sub(fl.since);
            let f = &mut self.flows[i];
            f.gap_mut().gap_counts.add(gaps::GapClass::Late, 1);
            f.gap_mut().late_max_ns =
                Some(f.gap_mut().late_max_ns.map_or(late_ns, |m| m.max(late_ns)));
            f.gap_mut().late_max_psns = f.gap_mut().late_max_psns.max(fl.psns_late);
            sink.event(&Event {
                ts_ns: fl.ts,
                iface,
                flow_id: Some(f.id),
                kind: EventKind::Resolved(gaps::GapClass::Late),
                psn: Some(fl.psn),
                depth: Some(fl.psns_late),
                trigger: None,
                idle_us: None,
                detail: EventDetail::Late(LatePsn {
                    psn: fl.psn,
                    late_ns,
                    psns_late: fl.psns_late,
                }),
            });
        }
    }

    /// Missing PSNs resolved (not `late`, which [`Analyzer::decide_fills`]
    /// writes itself): counted, and an event.
    pub(super) fn resolved(&mut self, i: usize, r: gaps::Resolved, now: u64, sink: &mut impl Sink) {
        let f = &mut self.flows[i];
        f.gap_mut().gap_counts.add(r.class, u64::from(r.len));
        let last = psn::add(r.lo, r.len.saturating_sub(1));
        sink.event(&Event {
            ts_ns: now,
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
                last,
                missing_ns: now.saturating_sub(r.since_ns),
            }),
        });
    }
}
