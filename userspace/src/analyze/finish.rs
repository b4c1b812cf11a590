//! The end of input: what the capture never settled, settled; flows, PFC
//! intervals, the summary and the findings.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::facts::CaptureFact;
use super::flows::timeline::flush_bin;
use super::flows::{flow_row, kept};
use super::hash::FastState;
use super::rewind::{STALL_MIN_NS, froze};
use super::rows::iface_name;
use super::rows::{
    IfaceOrigin, MatchingSummary, PfcSummary, Reaction, Retirement, Summary, TapSummary,
};
use super::taps::TapState;
use super::{Analysis, Analyzer, Flow, Sink};
use super::{findings, hops, rto, tree};

/// Per tap and sender (source address) with timeout rewinds, its NIC's
/// timeout over all its request flows there, in order of the first flow (a
/// sender seen at two taps is measured twice, by the same rewinds); the
/// retired flows' (`retired`) come first.
pub(super) fn nic_timeouts<'a>(
    retired: &[kept::SenderTimeouts],
    flows: impl Iterator<Item = &'a Flow>,
    names: &BTreeMap<u16, String>,
) -> Vec<rto::NicTimeout> {
    let mut by_sender = retired.to_vec();
    for f in flows {
        kept::add_timeouts(&mut by_sender, f);
    }
    by_sender
        .into_iter()
        .map(|(t, ip, ids, w)| {
            rto::NicTimeout::new(
                iface_name(names, t),
                crate::addr::Ip(ip).to_string(),
                ids.ids,
                &w,
            )
        })
        .collect()
}

/// An analyzer at the end of input, its summary made, its findings not
/// yet ([`Analyzer::end`]): what [`Ending::judge`] judges, one analyzer's
/// or a sharded run's N together, and [`Ending::conclude`] makes rows of.
pub struct Ending {
    pub(super) analyzer: Analyzer,
    /// This analyzer's summary (a sharded run judges over the merged one).
    pub summary: Summary,
    pub(super) ended: super::transports::Ended,
    pub(super) hop_rows: Vec<hops::HopRow>,
    nic_rows: Vec<super::NicRow>,
    pub(super) census: findings::input::Census,
    streamed: bool,
    facts: Vec<CaptureFact>,
}

impl Analyzer {
    /// End of input: flush open bins and intervals, return the tables.
    pub fn finish(self, sink: &mut impl Sink) -> Analysis {
        let mut end = self.end(sink);
        let diagnoses = Ending::judge(std::slice::from_mut(&mut end), None);
        end.conclude(diagnoses, &[], sink)
    }

    /// End of input: what the capture never settled, settled; the summary
    /// made, the findings not yet.
    pub fn end(mut self, sink: &mut impl Sink) -> Ending {
        let last = self.last_ts;
        // What the capture never settled, settled with what it showed; the
        // PSNs each tap's capture lost, counted in the same pass (settling a
        // flow classifies its own gaps only).
        let mut capture_lost = self.retired.capture_lost.clone();
        capture_lost.resize(self.taps.len(), 0);
        for i in 0..self.flows.slots() {
            if self.flows.get(i).is_some() {
                self.settle(i, last, sink);
                let f = &self.flows[i];
                if let Some(c) = capture_lost.get_mut(usize::from(f.iface)) {
                    *c += f.sequence().gap_counts.capture_lost;
                }
            }
        }
        let taps = self.taps.clone();
        // A capture ends with the last record of any of its interfaces.
        let mut capture_end: BTreeMap<u32, u64> = BTreeMap::new();
        for t in taps.iter().filter(|t| t.seen) {
            let e = capture_end.entry(t.capture).or_default();
            *e = (*e).max(t.last_ts);
        }
        let tap_end = |iface: u16| {
            taps.get(usize::from(iface))
                .and_then(|t| capture_end.get(&t.capture))
                .copied()
                .unwrap_or(last)
        };
        // A sniffer's rewrite is no corruption. (Each pass over every flow
        // below runs only when it could change one: at a million QPs a
        // pass reads half a gigabyte.)
        if taps.iter().any(TapState::is_sniffer) {
            for f in self.flows.iter_mut() {
                if taps
                    .get(usize::from(f.iface))
                    .is_some_and(TapState::is_sniffer)
                {
                    if let Some(r) = f.rare.as_deref_mut() {
                        r.icrc_errors = 0;
                    }
                    f.set_sniffer_tap();
                }
            }
        }
        self.pfc.finish(tap_end, sink);
        // A flow that went silent as a pause began and stayed so to the end
        // of its tap's capture was frozen by it.
        if self.pfc.any_priority() {
            for f in self.flows.iter_mut() {
                let Some(p) = f.priority() else { continue };
                let end = tap_end(f.iface);
                let idle = end.saturating_sub(f.last_ts);
                if idle < STALL_MIN_NS || f.packets() == 0 {
                    continue;
                }
                let (paused, cover) = self.pfc.paused(f.iface, p, f.last_ts, end, end);
                if froze(idle, paused, cover, f.last_ts) {
                    let r = f.rare_mut();
                    r.stalls += 1;
                    r.stall_paused_ns += paused;
                }
            }
        }
        let bin_ns = self.config.bin_ns;
        for i in 0..self.bins.held().min(self.flows.slots()) {
            let Some(f) = self.flows.get(i) else {
                continue;
            };
            if let Some(b) = self.bins.take(i) {
                flush_bin(f, &b, &self.pfc, bin_ns, u64::MAX, sink);
            }
        }
        self.bins = Default::default();
        // CNPs by pairing as known at the end.
        let mut attributed = self.retired.cnps;
        if !self.cnp_counts.is_empty() {
            for f in self.flows.iter_mut() {
                if f.cnp_qp().is_some() {
                    let cnps = super::flows::cnps_for(&self.cnp_counts, f);
                    f.set(super::flows::Count::Cnps, cnps);
                    attributed += f.cnps();
                }
            }
        }
        let matcher = std::mem::replace(
            &mut self.matcher,
            hops::Feed::new(hops::Matcher::new(0), false),
        )
        .into_matcher();
        let matching = {
            let imposed = self
                .config
                .clock_offsets
                .iter()
                .filter_map(|(name, ns)| {
                    let i = self.ifaces.iter().find(|(_, n)| *n == name)?.0;
                    Some((*i, *ns))
                })
                .collect();
            let by_key = &self.by_key;
            let flows = &self.flows;
            let mut m = matcher.finish(&imposed, |iface, (s, d, qp)| {
                by_key.get(flows, &(iface, s, d, qp)).map(|i| flows[i].id)
            });
            for c in m.iter_mut().flat_map(|m| &mut m.clocks) {
                c.tap_a_name = iface_name(&self.ifaces, c.tap_a);
                c.tap_b_name = iface_name(&self.ifaces, c.tap_b);
            }
            m
        };
        // The flows' keys are not looked up any more: their maps go before
        // the findings and the rows (the run's peak of memory).
        self.by_key = Default::default();
        self.by_hosts = Default::default();
        self.cnp_counts = Default::default();
        self.hints = Default::default();
        self.cm_requests = Default::default();
        let duration = self.first_ts.map(|f| last - f).unwrap_or(0);
        let streamed = self.flows.live() > self.config.rows_held;
        let pfc_summary: Vec<PfcSummary> = self
            .pfc
            .stats
            .iter()
            .map(|(&(iface, priority), st)| {
                let paused_ns = self.pfc.paused_total(iface, priority);
                self.pfc_summary((iface, priority), st, paused_ns, duration, st.storms)
            })
            .collect();
        // The totals, the end hosts' MACs and the findings' census in one
        // walk (no flow changes after it). Few hosts, many flows: their
        // MACs through a hash set first, not a B-tree descent per flow (5 %
        // of `report`'s CPU at 100k QPs).
        let mut macs: HashSet<[u8; 6], FastState> = HashSet::default();
        let mut census = findings::input::Census::default();
        let mut t = self.summed_totals_with(|f| {
            macs.insert(f.src_mac);
            census.add(f);
        });
        t.cnps = attributed;
        t.cnps_unattributed = self.frames.cnp - attributed;
        t.pfc_intervals = self.pfc.rows.len() as u64;
        t.pfc_storms = pfc_summary.iter().map(|p| p.storms).sum();
        // The other transports' flows live at the end, settled
        // (`transports`): their sums join the retired ones', their findings
        // the RoCE ones below, their PSNs missed by the capture the QPs'.
        let ended = self.end_transports(last, &mut capture_lost);
        // Every named interface, a tap that recorded nothing too (its
        // capture declared it): the user sees it captured nothing.
        let tap_rows: Vec<TapSummary> = self
            .taps
            .iter()
            .enumerate()
            .filter(|(i, t)| t.seen || self.ifaces.contains_key(&(*i as u16)))
            .map(|(i, t)| {
                let iface = i as u16;
                let dup = self.dups.per_tap.get(&iface).cloned();
                TapSummary {
                    iface,
                    iface_name: iface_name(&self.ifaces, iface),
                    records: t.records,
                    first_ts_ns: t.seen.then_some(t.first_ts),
                    last_ts_ns: t.seen.then_some(t.last_ts),
                    link_speed_bps: self.pfc.speed(iface),
                    duplicates: dup.as_ref().map_or(0, |d| d.copies),
                    duplicate_gaps: dup,
                    capture_lost: capture_lost[i],
                    icrc_checked: t.icrc_checked,
                    icrc_failed: t.icrc_failed,
                    trimmed: t.trimmed,
                    sniffer: t.is_sniffer(),
                    isb_ifdrop: t.isb_ifdrop,
                    isb_osdrop: t.isb_osdrop,
                }
            })
            .collect();
        let mut facts = Vec::new();
        for r in tap_rows.iter().filter(|r| r.sniffer) {
            facts.push(CaptureFact::SnifferTap { iface: r.iface });
        }
        if self.frames.cut > 0 {
            facts.push(CaptureFact::CutFrames {
                frames: self.frames.cut,
            });
        }
        self.ecmp.finish();
        facts.extend(self.ecmp.silent_groups());
        // The fact compares a host pair's QPs at two taps: with one tap it
        // is never raised, and its map (a node per host pair: ~430 bytes a
        // data flow at 1M QPs) is not built.
        let taps_seen = self.taps.iter().filter(|t| t.seen).count();
        if self.config.ecmp_groups.is_empty() && taps_seen > 1 {
            let mut qps = self.retired.qps.clone();
            for f in self.flows.iter() {
                kept::add_qps(&mut qps, f, usize::MAX);
            }
            facts.extend(findings::ecmp::unnamed_fact(&qps));
        }
        // Every transport's, as the taps count them (`totals` are RoCE's).
        let psns_capture_lost: u64 = capture_lost.iter().sum();
        if psns_capture_lost > 0 {
            facts.push(CaptureFact::CaptureLost {
                psns: psns_capture_lost,
            });
        }
        if t.gaps_resolved.unresolved > 0 {
            facts.push(CaptureFact::Unresolved {
                psns: t.gaps_resolved.unresolved,
            });
        }
        let (n, sum, min, max) = self.reactions;
        let ce_to_cnp = (n > 0).then(|| Reaction {
            samples: n,
            min_us: min as f64 / 1000.0,
            mean_us: sum as f64 / n as f64 / 1000.0,
            max_us: max as f64 / 1000.0,
        });
        let mut hosts = self.retired.hosts.clone();
        hosts.extend(macs);
        hosts.extend(&self.cnp_macs);
        let flows = &self.flows;
        let names = &self.ifaces;
        let stalled = &self.retired.stalled;
        let mut pfc_trees = tree::build(
            &self.pfc.rows,
            &hosts,
            |i| iface_name(names, i),
            |i| {
                let retired = stalled.get(&i).map(|s| s.ids.as_slice()).unwrap_or(&[]);
                let live = flows.iter().filter(|f| f.iface == i && f.rare().stalls > 0);
                retired.iter().copied().chain(live.map(|f| f.id)).collect()
            },
        );
        if let Some(t) = &self.config.topology {
            t.name_trees(&mut pfc_trees);
        }
        let hop_rows = matching
            .as_ref()
            .map(|m| m.hops.clone())
            .unwrap_or_default();
        let nic_rows = self.nics.rows();
        let summary = Summary {
            first_ts_ns: self.first_ts,
            last_ts_ns: self.first_ts.map(|_| last),
            duration_ns: duration,
            frames: self.frames.clone(),
            ifaces: self.ifaces.clone(),
            link_speed_bps: self.config.link_speed_bps,
            bin_ns,
            storm_ns: self.config.storm_ns,
            dscp_to_priority: self.config.dscp_to_priority.map(|m| m.to_vec()),
            totals: t,
            transports: self.transport_totals(&ended),
            ce_to_cnp,
            pfc: pfc_summary,
            taps: tap_rows,
            capture_facts: Vec::new(),
            pfc_trees,
            clock_offsets: matching
                .as_ref()
                .map(|m| m.clocks.clone())
                .unwrap_or_default(),
            matching: matching.as_ref().map(|m| MatchingSummary {
                window_ns: m.window_ns,
                late_frames: m.late,
                peak_keys: m.peak_keys,
                hops: m.hops.len(),
            }),
            // Timeout rewinds are rare counts: none without them.
            nic_timeouts: nic_timeouts(
                &self.retired.timeouts,
                (census.rare > 0)
                    .then(|| self.flows.iter())
                    .into_iter()
                    .flatten(),
                &self.ifaces,
            ),
            retirement: (self.retired.totals.flows > 0
                || self.transports.retired_any()
                || self.retired.interim_rows > 0
                || streamed)
                .then(|| Retirement {
                    flow_idle_ns: self.config.flow_idle_ns,
                    flow_active_ns: self.config.flow_active_ns,
                    retired_flows: self.retired.totals.flows,
                    transports: self.transport_retirement(),
                    interim_rows: self.retired.interim_rows,
                    peak_live_flows: self.expiry.peak_live as u64,
                    evidence_k: kept::EVIDENCE_K as u64,
                    evidence_omitted: self.retired.omitted(),
                    rows_streamed_at_end: if streamed {
                        self.flows.live() as u64
                    } else {
                        0
                    },
                }),
            findings: Vec::new(),
        };
        Ending {
            analyzer: self,
            summary,
            ended,
            hop_rows,
            nic_rows,
            census,
            streamed,
            facts,
        }
    }
}

impl Ending {
    /// The rows and tables after the findings (`diagnoses`, ranked; the
    /// switch queues' join them here): the flows they or `also` name keep
    /// their rows when the rest retire now.
    pub fn conclude(
        self,
        mut diagnoses: Vec<findings::Diagnosis>,
        also: &[findings::Diagnosis],
        sink: &mut impl Sink,
    ) -> Analysis {
        let Ending {
            analyzer: mut this,
            summary,
            ended,
            hop_rows,
            nic_rows,
            census: _,
            streamed,
            facts,
        } = self;
        let this = &mut this;
        // More flows live than the reports hold rows of: each retires now,
        // its row to the sink; the evidence and the named flows' rows stay.
        let mut rows = Vec::new();
        if streamed {
            let named = diagnoses.iter().chain(also);
            let named = named.flat_map(|d| d.flows.iter().copied());
            this.retire_all(&named.collect(), &mut rows, sink);
        }
        // The retired flows kept as evidence (their rows were written as
        // they retired), then the live ones, chunk by chunk: by flow id,
        // which readers look them up by (`Analysis::flow`).
        let named: BTreeSet<u32> = rows.iter().map(|r| r.flow_id).collect();
        let evidence = this.retired.evidence().filter(|f| !named.contains(&f.id));
        let held: Vec<_> = evidence.map(flow_row).chain(rows).collect();
        let written: BTreeSet<u32> = held.iter().map(|r| r.flow_id).collect();
        let evidence = held.len();
        // A flow that wrote interim rows: its row since the last.
        let intervals = &this.expiry.intervals;
        let mut rows = std::mem::take(&mut this.flows).into_map(held, |f| {
            let mut row = flow_row(f);
            intervals.since(f, &mut row);
            row
        });
        rows.extend(this.transport_rows(&ended));
        if evidence > 0 || this.retired.totals.flows > 0 || !ended.is_empty() {
            rows.sort_unstable_by_key(|r| r.flow_id);
        }
        // The switches' queues join the findings here, beside the flow rows
        // they name their flows by.
        let queues = findings::queues::diagnose(&this.queues, None, &rows, &summary.pfc_trees);
        if !queues.is_empty() {
            diagnoses.extend(queues);
            findings::rank_diagnoses(&mut diagnoses);
            findings::queues::cite(&mut diagnoses);
        }
        // Interfaces that recorded something, per capture file: counted once,
        // since a record's interface index can reach 65,535.
        let mut seen_per_capture: BTreeMap<u32, usize> = BTreeMap::new();
        for t in this.taps.iter().filter(|t| t.seen) {
            *seen_per_capture.entry(t.capture).or_default() += 1;
        }
        let origins = this
            .taps
            .iter()
            .map(|t| IfaceOrigin {
                local: t.local,
                shared_file: seen_per_capture.get(&t.capture).copied().unwrap_or(0) > 1,
            })
            .collect();
        Analysis {
            flows: rows,
            written,
            retired_sums: std::mem::take(&mut this.retired.rows),
            pfc: std::mem::take(&mut this.pfc.rows),
            hops: hop_rows,
            nics: nic_rows,
            transport_tables: this.transport_tables(),
            summary,
            diagnoses,
            facts,
            origins,
        }
    }
}
