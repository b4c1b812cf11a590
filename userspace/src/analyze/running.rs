//! The analyzer's state as a monitor reads it while records still come:
//! the live tap's Prometheus metrics (docs/live.md, "Metrics"). Totals a
//! run otherwise gets only at the end by summing its flows are kept as the
//! records come here (a sum over a million flows per snapshot would cost
//! more than the records), so a snapshot costs the PFC senders it lists
//! and nothing per flow.

use super::pfc::SenderPauses;
use super::{Analyzer, FrameCounts};

/// Sums over flows kept as the records come: at the end of a run they
/// equal `summary.json`'s `totals` of the same names (the sums of the
/// `flows.parquet` columns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunningTotals {
    pub retrans_packets: u64,
    pub spurious_retrans: u64,
    pub ce: u64,
}

/// PFC frames of one `(iface, priority)` so far: `summary.json`'s `pfc`
/// entry of the same names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PriorityPauses {
    pub iface: u16,
    pub priority: u8,
    /// PFC frames with the priority's class-enable bit set (XON included).
    pub frames: u64,
    pub xon_frames: u64,
    /// Pauses longer than the storm threshold, once they closed.
    pub storms: u64,
}

/// A snapshot of what the analyzer has found so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Running {
    /// Records analysed so far, by kind.
    pub frames: FrameCounts,
    pub totals: RunningTotals,
    /// Flows the analyzer holds.
    pub flows: u64,
    pub priorities: Vec<PriorityPauses>,
    /// Per sender and priority, in order of first pause.
    pub senders: Vec<SenderPauses>,
}

impl Analyzer {
    /// What the analyzer has found so far, into `out` (its vectors reused).
    /// An open PFC pause counts up to the last record of its interface:
    /// where the end of a run with one interface (the live tap) closes it;
    /// a capture file's pauses end with its last record on any interface.
    pub fn running(&self, out: &mut Running) {
        out.frames.clone_from(&self.frames);
        out.totals = self.running;
        out.flows = self.flows.live() as u64;
        out.priorities.clear();
        out.priorities
            .extend(
                self.pfc
                    .stats
                    .iter()
                    .map(|(&(iface, priority), s)| PriorityPauses {
                        iface,
                        priority,
                        frames: s.frames,
                        xon_frames: s.xon_frames,
                        storms: s.storms,
                    }),
            );
        out.senders.clear();
        let tap_end = |iface: u16| self.taps.get(usize::from(iface)).map_or(0, |t| t.last_ts);
        self.pfc.senders(tap_end, &mut out.senders);
    }
}
