//! What only some flows count or keep, behind one pointer in every flow
//! (docs/analysis.md, "Memory"): a flow that never rewound, skipped a PSN,
//! carried a NAK or counted a rare event holds 8 bytes for all of it.

use super::super::compact::Opt64;
use super::super::responses::{NO_NAKS, NakHistory};
use super::super::rewind::{NO_REWINDS, RewindHistory};
use super::super::sequence::{NO_SEQUENCE, SequenceHistory};
use super::super::trims::Trims;
use super::Flow;
use crate::analyze::count::High;

/// What only some flows ever count or keep: held from the first on, so that
/// a flow without any carries 8 bytes for them, not 88.
#[derive(Clone, Debug, Default)]
pub(crate) struct Rare {
    /// Packets with BECN set.
    pub becn: u64,
    /// Stalls overlapping a pause of the flow's priority.
    pub stalls: u64,
    pub stall_paused_ns: u64,
    /// Frames whose ICRC failed.
    pub icrc_errors: u64,
    pub mirror_copies: u64,
    /// Its first CE mark no CNP has answered yet.
    ce_unanswered: Opt64,
    /// The high 32 bits of its counts, from the first that passed 2^32 on.
    pub(super) high: Option<Box<High>>,
    /// Its rewinds, from the first one on (`None`: it never rewound).
    pub(in crate::analyze) rewind: Option<Box<RewindHistory>>,
    /// What its sequencing judged (missing PSNs, late arrivals, spurious
    /// retransmissions), from the first on.
    pub(in crate::analyze) sequence: Option<Box<SequenceHistory>>,
    /// Its NAKs, from the first one on.
    pub(in crate::analyze) nak: Option<Box<NakHistory>>,
    /// Its frames a switch trimmed, from the first one that may be.
    pub(in crate::analyze) trims: Option<Box<Trims>>,
}

/// What a flow that counted none of them reads.
static NO_RARE: Rare = Rare {
    becn: 0,
    stalls: 0,
    stall_paused_ns: 0,
    icrc_errors: 0,
    mirror_copies: 0,
    ce_unanswered: Opt64::NONE,
    high: None,
    rewind: None,
    sequence: None,
    nak: None,
    trims: None,
};

impl Flow {
    /// Its rare counts (all 0 when it counted none).
    pub(crate) fn rare(&self) -> &Rare {
        self.rare.as_deref().unwrap_or(&NO_RARE)
    }

    pub(in crate::analyze) fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// A CE mark at `ts`: the first one no CNP has answered yet keeps.
    pub(in crate::analyze) fn ce_marked(&mut self, ts: u64) {
        let r = self.rare_mut();
        if r.ce_unanswered == Opt64::NONE {
            r.ce_unanswered = Opt64::some(ts);
        }
    }

    /// A CNP answered its CE marks: when the first of them was, if any
    /// was unanswered.
    pub(in crate::analyze) fn ce_answered(&mut self) -> Option<u64> {
        let r = self.rare.as_deref_mut()?;
        std::mem::take(&mut r.ce_unanswered).get()
    }

    /// Its rewind history (an empty one when it never rewound).
    pub(crate) fn rewind(&self) -> &RewindHistory {
        self.rare().rewind.as_deref().unwrap_or(&NO_REWINDS)
    }

    pub(in crate::analyze) fn rewind_mut(&mut self) -> &mut RewindHistory {
        let acked = self.highest_acked();
        self.rare_mut()
            .rewind
            .get_or_insert_with(|| Box::new(RewindHistory::after_acks(acked)))
    }

    /// Its rewind history to change, when it has one.
    pub(in crate::analyze) fn rewind_held(&mut self) -> Option<&mut RewindHistory> {
        self.rare.as_deref_mut()?.rewind.as_deref_mut()
    }

    /// Its sequence history to change, when it has one.
    pub(in crate::analyze) fn sequence_held(&mut self) -> Option<&mut SequenceHistory> {
        self.rare.as_deref_mut()?.sequence.as_deref_mut()
    }

    /// Frames of it a NAK showed trimmed (docs/analysis.md, "RoCE: trimmed
    /// frames").
    pub(crate) fn trimmed(&self) -> u64 {
        self.rare().trims.as_ref().map_or(0, |t| t.trimmed)
    }

    /// Its trims to change, when it has any.
    pub(in crate::analyze) fn trims_held(&mut self) -> Option<&mut Trims> {
        self.rare.as_deref_mut()?.trims.as_deref_mut()
    }

    /// Its NAK history to change, when it has one.
    pub(in crate::analyze) fn nak_held(&mut self) -> Option<&mut NakHistory> {
        self.rare.as_deref_mut()?.nak.as_deref_mut()
    }

    /// Its sequence history (an empty one when its sequencing judged no
    /// gap, late arrival or spurious retransmission).
    pub(crate) fn sequence(&self) -> &SequenceHistory {
        self.rare().sequence.as_deref().unwrap_or(&NO_SEQUENCE)
    }

    pub(in crate::analyze) fn sequence_mut(&mut self) -> &mut SequenceHistory {
        self.rare_mut().sequence.get_or_insert_with(Box::default)
    }

    /// Its NAK history (an empty one when it carried no NAK).
    pub(crate) fn nak(&self) -> &NakHistory {
        self.rare().nak.as_deref().unwrap_or(&NO_NAKS)
    }

    pub(in crate::analyze) fn nak_mut(&mut self) -> &mut NakHistory {
        self.rare_mut().nak.get_or_insert_with(Box::default)
    }
}

#[cfg(test)]
mod tests {
    /// The rare counts in 88 bytes (docs/analysis.md, "Memory").
    #[test]
    fn the_rare_counts_stay_small() {
        assert_eq!(std::mem::size_of::<super::Rare>(), 88);
    }
}
