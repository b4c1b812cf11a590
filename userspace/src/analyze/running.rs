//! The analyzer's state as a monitor reads it while records still come:
//! the live tap's Prometheus metrics (docs/live.md, "Metrics"). Totals a
//! run otherwise gets only at the end by summing its flows are kept as the
//! records come here (a sum over a million flows per snapshot would cost
//! more than the records), so a snapshot costs the PFC senders it lists
//! and nothing per flow.

use super::findings::{self, Diagnosis};
use super::flows::kept;
use super::pfc::{PrioStats, SenderPauses};
use super::rows::{PfcSummary, Summary, Totals, iface_name, ratio};
use super::{Analyzer, Flow, FrameCounts, PfcInterval};

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

/// Where an interface's records end so far ([`Analyzer::tap_ends`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapEnd {
    pub seen: bool,
    pub last_ts: u64,
}

impl TapEnd {
    /// The end of the interface over two analyzers' records.
    pub fn join(self, other: TapEnd) -> TapEnd {
        TapEnd {
            seen: self.seen || other.seen,
            last_ts: self.last_ts.max(other.last_ts),
        }
    }
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
        self.running_to(out, &self.tap_ends());
    }

    /// Per interface: whether a record of it came, and the time of its
    /// last (a sharded run's analyzers' are merged: `crate::shard::running`).
    pub fn tap_ends(&self) -> Vec<TapEnd> {
        self.taps
            .iter()
            .map(|t| TapEnd {
                seen: t.seen,
                last_ts: t.last_ts,
            })
            .collect()
    }

    /// [`Analyzer::running`], an open pause counted up to `ends`' last
    /// record of its interface.
    pub fn running_to(&self, out: &mut Running, ends: &[TapEnd]) {
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
        let tap_end = |iface: u16| ends.get(usize::from(iface)).map_or(0, |t| t.last_ts);
        self.pfc.senders(tap_end, &mut out.senders);
    }
}

/// The findings over one report interval of a run still going (the live
/// tap's `--report-interval`, docs/live.md "Findings as they happen"), and
/// the summary they were made from (to word them with
/// `crate::render::findings::word`).
#[derive(Clone, Debug)]
pub struct Interim {
    pub summary: Summary,
    pub diagnoses: Vec<Diagnosis>,
    /// The pauses of the window, the running ones closed at its end.
    pub pfc: Vec<PfcInterval>,
}

impl Analyzer {
    /// The findings now, without ending the run: over the flows as they
    /// stand (the live ones and what the retired ones left, as at the end)
    /// and, for PFC, over the window `[from_ns, now_ns)` only, a pause still
    /// running counted up to `now_ns` as the end of a run would close it
    /// there — so a storm is a finding while it lasts and the interval it
    /// ends in, and not after. What only the end of a run settles is left
    /// out: cross-tap matching (`hops`), the congestion trees, the NIC
    /// timeouts and the CE → CNP reaction times. `congested-queue` is over
    /// the queues with a congested hop in the window. Costs a walk over the
    /// live flows and the PFC intervals.
    pub fn findings_now(&self, from_ns: u64, now_ns: u64) -> Interim {
        self.findings_over(from_ns, now_ns, |_| now_ns)
    }

    /// [`Analyzer::findings_now`] for the last interval of a run that
    /// stops at `now_ns` (every record analysed): a pause still running is
    /// closed at its tap's last record, as [`Analyzer::finish`] closes it
    /// for `pfc.parquet`, so its storm's last time is the last evidence of
    /// it, not the moment the run stopped.
    pub fn findings_at_stop(&self, from_ns: u64, now_ns: u64) -> Interim {
        self.findings_at_stop_to(from_ns, now_ns, &self.tap_ends())
    }

    /// [`Analyzer::findings_at_stop`], a running pause closed at `ends`'
    /// last record of its interface.
    pub fn findings_at_stop_to(&self, from_ns: u64, now_ns: u64, ends: &[TapEnd]) -> Interim {
        self.findings_over(from_ns, now_ns, |iface| {
            ends.get(usize::from(iface))
                .filter(|t| t.seen)
                .map_or(now_ns, |t| t.last_ts.min(now_ns))
        })
    }

    /// The findings over `[from_ns, now_ns)`, a pause of interface `i`
    /// still running closed at `close(i)`.
    fn findings_over(&self, from_ns: u64, now_ns: u64, close: impl Fn(u16) -> u64) -> Interim {
        let (summary, pfc) = self.window(from_ns, now_ns, close);
        let diagnoses = Analyzer::judge_window(&[self], &summary, &pfc, from_ns);
        Interim {
            summary,
            diagnoses,
            pfc,
        }
    }

    /// The findings over a window of the analyzers `all` (one, or a
    /// sharded run's N in analyzer order, judged together: their flows,
    /// analyzer 0's pause state), over `summary` (the N merged) and `pfc`
    /// (analyzer 0's window's pauses), ranked; each analyzer's switch
    /// queues congested since `from_ns` join them.
    pub fn judge_window(
        all: &[&Analyzer],
        summary: &Summary,
        pfc: &[PfcInterval],
        from_ns: u64,
    ) -> Vec<Diagnosis> {
        let mut diagnoses = match all {
            [] => Vec::new(),
            [one] => findings::diagnose(&findings::Input {
                flows: &one.flows,
                retired: &one.retired,
                by_id: findings::input::ids_of(&one.flows, &one.retired),
                others: &[],
                pfc,
                summary,
                ghost_covers: &one.ghost_covers,
                ecmp: &one.ecmp,
                qos: &one.qos,
                hops: &[],
                nics: &one.nics.rows_per_tap(),
                transports: one.live_transport_input(),
                census: findings::input::Census::of(&one.flows),
            }),
            [first, rest @ ..] => {
                let mut census = findings::input::Census::of(&first.flows);
                let mut transports = first.live_transport_input();
                for b in rest {
                    census.merge(&findings::input::Census::of(&b.flows));
                    transports.add(b.live_transport_input());
                }
                let judged = super::judge::Judged {
                    summary,
                    pfc,
                    hops: &[],
                    transports,
                    census,
                };
                super::judge::together(all, judged)
            }
        };
        // The switch queues congested in the window (their aggregates run
        // from the queue's first hop since it was last idle).
        let mut queues = Vec::new();
        for a in all {
            queues.extend(findings::queues::diagnose(
                &a.queues,
                Some(from_ns),
                &[],
                &[],
            ));
        }
        if !queues.is_empty() {
            diagnoses.extend(queues);
            findings::rank_diagnoses(&mut diagnoses);
            findings::queues::cite(&mut diagnoses);
        }
        diagnoses
    }

    /// The window `[from_ns, now_ns)`'s summary and pauses, a pause of
    /// interface `i` still running closed at `close(i)`.
    pub fn window(
        &self,
        from_ns: u64,
        now_ns: u64,
        close: impl Fn(u16) -> u64,
    ) -> (Summary, Vec<PfcInterval>) {
        let mut pfc: Vec<PfcInterval> = self
            .pfc
            .rows
            .iter()
            .filter(|r| r.end_ns > from_ns && r.start_ns < now_ns)
            .cloned()
            .collect();
        // An open pause is in the window when it ran into it: one whose
        // timer ran out before (no frame of its sender since to close it)
        // is over, not a storm in every interval after.
        let (mut running, mut closed) = (Vec::new(), Vec::new());
        self.pfc.open_rows(|_| now_ns, &mut running);
        self.pfc.open_rows(&close, &mut closed);
        pfc.extend(
            closed
                .into_iter()
                .zip(running)
                .filter(|(_, r)| r.end_ns > from_ns)
                .map(|(c, _)| c),
        );
        pfc.sort_by_key(|r| (r.start_ns, r.iface, r.priority, r.src_mac));
        let window = now_ns.saturating_sub(from_ns);
        let storm_ns = self.config.storm_ns;
        let pfc_summary = self
            .pfc
            .stats
            .iter()
            .map(|(&(iface, priority), st)| {
                let (paused_ns, _) =
                    self.pfc
                        .paused(iface, priority, from_ns, now_ns, close(iface));
                let storms = pfc
                    .iter()
                    .filter(|r| r.iface == iface && r.priority == priority)
                    .filter(|r| r.end_ns - r.start_ns > storm_ns)
                    .count() as u64;
                self.pfc_summary((iface, priority), st, paused_ns, window, storms)
            })
            .collect();
        let summary = Summary {
            first_ts_ns: self.first_ts,
            last_ts_ns: self.first_ts.map(|_| self.last_ts),
            duration_ns: self.first_ts.map_or(0, |f| self.last_ts - f),
            frames: self.frames.clone(),
            ifaces: self.ifaces.clone(),
            link_speed_bps: self.config.link_speed_bps,
            bin_ns: self.config.bin_ns,
            storm_ns,
            dscp_to_priority: self.config.dscp_to_priority.map(|m| m.to_vec()),
            totals: self.summed_totals(),
            transports: self.live_transport_totals(),
            ce_to_cnp: None,
            pfc: pfc_summary,
            taps: Vec::new(),
            capture_facts: Vec::new(),
            pfc_trees: Vec::new(),
            clock_offsets: Vec::new(),
            matching: None,
            nic_timeouts: Vec::new(),
            retirement: None,
            findings: Vec::new(),
        };
        (summary, pfc)
    }

    /// `summary.json`'s `pfc` entry of `(iface, priority)`: `paused_ns` of
    /// `span_ns`, and `storms`.
    pub(super) fn pfc_summary(
        &self,
        (iface, priority): (u16, u8),
        st: &PrioStats,
        paused_ns: u64,
        span_ns: u64,
        storms: u64,
    ) -> PfcSummary {
        PfcSummary {
            iface,
            iface_name: iface_name(&self.ifaces, iface),
            priority,
            frames: st.frames,
            xon_frames: st.xon_frames,
            paused_ns,
            fraction: ratio(paused_ns, span_ns),
            storms,
        }
    }

    /// The retired flows' totals and the live ones', summed (`summary.json`'s
    /// `totals` but for what only the end settles: CNP attribution, PFC).
    pub(super) fn summed_totals(&self) -> Totals {
        self.summed_totals_with(|_| {})
    }

    /// [`Self::summed_totals`], handing each live flow to `each` in the
    /// same walk (one read of every flow record, not two).
    pub(super) fn summed_totals_with(&self, mut each: impl FnMut(&Flow)) -> Totals {
        let mut t = self.retired.totals.clone();
        for f in self.flows.iter() {
            kept::add_totals(&mut t, f);
            each(f);
        }
        t.retrans_rate = ratio(t.retrans_packets, t.data_packets);
        t
    }
}
