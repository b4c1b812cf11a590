//! RoCE frames a switch trimmed (docs/analysis.md, "RoCE: trimmed frames"):
//! a request frame cut short and re-marked against its flow
//! ([`cut_and_remarked`]) whose bytes cannot be whole — its ICRC fails (the
//! switch rewrote the IP length) or it is shorter than its IP length on the
//! wire (it did not) — waits for the receiver's NAK asking for it again:
//! one naming its PSN or an earlier one (Go-Back-N resends from the PSN
//! named). The NAK makes it a trimmed frame: counted per tap and per flow,
//! taken out of the ICRC failures or the cut frames it was counted in, and
//! the NAK and the rewind it causes are a congestion signal, not loss.

use rocescope_common::proto::{ib, udp};
use rocescope_common::{PacketRecord, flags};

use crate::transport::roce::psn;
use crate::transport::trim::cut_and_remarked;

use super::Analyzer;

/// Most frames per flow awaiting the NAK that makes them trimmed: the
/// oldest goes (it stays what it was counted as) when a newer needs room.
const MAX_PENDING: usize = 256;

/// How a waiting frame was counted before its NAK came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Counted {
    /// A failing ICRC (the tap's and the flow's); `from_4791`: in the
    /// sniffer test's count too.
    IcrcFailed { from_4791: bool },
    /// A frame cut short of its IP length (`frames.cut`).
    Cut,
}

/// A flow's trimmed frames: those the NAK confirmed, and those awaiting it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Trims {
    pub trimmed: u64,
    pending: Vec<(u32, Counted)>,
}

impl Analyzer {
    /// A RoCE frame of flow `i`: its ICRC counted on its tap and, failing,
    /// on the flow; then whether a switch may have trimmed it. Returns
    /// whether its ICRC verdict says nothing (`icrc_ok` null): a sniffer
    /// rewrote it, or it fails and is cut and re-marked against its flow —
    /// a switch cut it, so its ICRC could not be checked (docs/tables.md,
    /// `icrc_ok`), whether or not a NAK later confirms the trim.
    pub(super) fn flow_icrc(&mut self, i: usize, rec: &PacketRecord) -> bool {
        let (corrupt, rewritten) = self.icrc(rec);
        if corrupt {
            self.flows[i].rare_mut().icrc_errors += 1;
        }
        let cut_by_a_switch = self.trim_candidate(i, rec, corrupt);
        rewritten || cut_by_a_switch
    }

    /// A frame of flow `i`, a request's before its length joins the flow's:
    /// a resend of a waiting PSN ends its wait (no NAK asked for it before
    /// it was sent again); a frame cut and re-marked whose bytes cannot be
    /// whole is trimmed when a NAK still outstanding asked for it (named
    /// it or an earlier PSN), and starts a wait otherwise. `corrupt`: its
    /// ICRC failed and the tap is no sniffer's. Returns whether it is such
    /// a frame whose ICRC failed.
    fn trim_candidate(&mut self, i: usize, rec: &PacketRecord, corrupt: bool) -> bool {
        if !ib::is_request(rec.roce().opcode) {
            return false;
        }
        let psn = rec.roce().psn & ib::PSN_MASK;
        let f = &mut self.flows[i];
        if let Some(t) = f.trims_held() {
            t.pending.retain(|&(p, _)| p != psn);
        }
        let icrc_failed = corrupt && rec.has(flags::ICRC_CHECKED) && !rec.has(flags::ICRC_OK);
        // Short on the wire itself (not a snap length: the capture holds
        // every byte the wire had), yet its IP length says more.
        let short_on_wire = rec.has(flags::CUT) && rec.cap_len >= rec.frame_len;
        // A whole frame (the common case) ends here, before the flow's
        // sender part is read for its longest request.
        if !icrc_failed && !short_on_wire {
            return false;
        }
        // Against the longest request so far: its DSCP is the data DSCP.
        if !rec.has_traffic_class()
            || !cut_and_remarked(
                rec.dscp,
                rec.frame_len,
                f.max_frame_dscp(),
                f.max_frame_len(),
            )
        {
            return false;
        }
        let counted = if icrc_failed {
            Counted::IcrcFailed {
                from_4791: rec.has(flags::HAS_UDP) && rec.udp_sport == udp::ROCEV2_PORT,
            }
        } else {
            Counted::Cut
        };
        // A NAK still outstanding (its PSN not sent again since) asked for
        // this one already: the receiver sends no second NAK.
        let asked = f.paired().is_some_and(|p| {
            self.flows[p]
                .nak()
                .pending
                .iter()
                .any(|n| psn::diff(psn, n.psn) > 0)
        });
        if asked {
            self.trimmed(i, &[counted]);
            return icrc_failed;
        }
        let t = self.flows[i]
            .rare_mut()
            .trims
            .get_or_insert_with(Box::default);
        if t.pending.len() >= MAX_PENDING {
            t.pending.remove(0);
        }
        t.pending.push((psn, counted));
        icrc_failed
    }

    /// The receiver's NAK (sequence error or RNR) naming `psn` of request
    /// flow `r`: the frames awaiting it at or after `psn` are trimmed.
    /// Returns whether there were any.
    pub(super) fn trim_nak(&mut self, r: usize, psn: u32) -> bool {
        let f = &mut self.flows[r];
        let Some(t) = f.trims_held() else {
            return false;
        };
        let (asked, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut t.pending)
            .into_iter()
            .partition(|&(p, _)| psn::diff(p, psn) >= 0);
        t.pending = waiting;
        let asked: Vec<Counted> = asked.into_iter().map(|(_, c)| c).collect();
        self.trimmed(r, &asked);
        !asked.is_empty()
    }

    /// Frames of flow `i` found trimmed: counted so, no longer as what
    /// they were counted as.
    fn trimmed(&mut self, i: usize, found: &[Counted]) {
        let iface = self.flows[i].iface;
        self.flows[i]
            .rare_mut()
            .trims
            .get_or_insert_with(Box::default)
            .trimmed += found.len() as u64;
        for &counted in found {
            match counted {
                Counted::IcrcFailed { from_4791 } => {
                    let rare = self.flows[i].rare_mut();
                    rare.icrc_errors = rare.icrc_errors.saturating_sub(1);
                    let tap = self.tap_mut(iface);
                    tap.icrc_failed = tap.icrc_failed.saturating_sub(1);
                    tap.failed_from_4791 =
                        tap.failed_from_4791.saturating_sub(u64::from(from_4791));
                }
                Counted::Cut => self.frames.cut = self.frames.cut.saturating_sub(1),
            }
        }
        self.tap_mut(iface).trimmed += found.len() as u64;
    }
}
