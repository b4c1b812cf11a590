//! One PDC direction at one tap: its requests per entropy value, the trim
//! rule, per-entropy lateness, and what its ACKs and NACKs said
//! (docs/analysis.md, "UET: spraying and trimming").

use std::collections::VecDeque;

use crate::transport::trim::cut_and_remarked;

use super::{Answers, ENTROPIES_KEPT, PROVISIONAL, PathCounts, RECENT_HIGHEST};

/// A request as the tracker reads it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Request {
    pub ts_ns: u64,
    pub psn: Option<u32>,
    pub entropy: Option<u16>,
    pub dscp: u8,
    pub frame_len: u32,
    /// Bytes after the headers as the IP length declares them (a snaplen
    /// cut leaves it whole; a trim does not).
    pub payload_len: u32,
    pub retx: bool,
    pub ce: bool,
}

/// One entropy value's counts (or, with `entropy` `None`, those beyond
/// [`ENTROPIES_KEPT`] summed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Path {
    pub entropy: Option<u16>,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    pub counts: PathCounts,
}

/// What the tracker keeps of one PDC direction.
#[derive(Clone, Debug)]
pub(super) struct Direction {
    pub dpdcid: Option<u16>,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    /// The DSCP and payload of its largest request so far: what a whole
    /// request of this PDC looks like at this tap.
    whole: Option<(u8, u32)>,
    /// Its first [`PROVISIONAL`] requests judged whole, as (path index,
    /// DSCP, payload, time): judged again when a larger request with
    /// another DSCP shows that the reference was itself trimmed.
    provisional: Vec<(usize, u8, u32, u64)>,
    /// Requests judged so far (up to [`PROVISIONAL`]).
    judged: usize,
    /// Successive new highest PSNs and when they arrived, oldest first.
    recent: VecDeque<(u32, u64)>,
    /// The kept entropy values, in order of appearance.
    pub paths: Vec<Path>,
    /// The requests on entropy values beyond [`ENTROPIES_KEPT`], summed.
    pub others: Option<Path>,
    /// Requests with CE.
    pub ce: u64,
    /// What the reverse direction's ACKs and NACKs said of its requests.
    pub answers: Answers,
    /// The latest cumulative ACK PSN seen, for the PSNs in flight.
    cack: Option<u32>,
    /// When the first trim signal (a trimmed request or a trimmed NACK)
    /// was seen here.
    pub first_trim_ns: Option<u64>,
    /// PSNs in flight (a first transmission's PSN past the latest
    /// cumulative ACK) summed, and samples, before and after `first_trim_ns`.
    pub inflight_before: (u64, u64),
    pub inflight_after: (u64, u64),
}

impl Direction {
    pub(super) fn new(ts_ns: u64, dpdcid: Option<u16>) -> Direction {
        Direction {
            dpdcid,
            first_ts_ns: ts_ns,
            last_ts_ns: ts_ns,
            whole: None,
            provisional: Vec::new(),
            judged: 0,
            recent: VecDeque::new(),
            paths: Vec::new(),
            others: None,
            ce: 0,
            answers: Answers::default(),
            cack: None,
            first_trim_ns: None,
            inflight_before: (0, 0),
            inflight_after: (0, 0),
        }
    }

    /// A request of this direction; returns the requests found trimmed:
    /// this one, and earlier ones judged again (see [`Self::rejudge`]).
    pub(super) fn request(&mut self, r: &Request) -> u64 {
        self.last_ts_ns = self.last_ts_ns.max(r.ts_ns);
        let before = self.whole;
        let trimmed = self.trimmed(r.dscp, r.payload_len);
        let rejudged = match (before, self.whole) {
            (Some((old, _)), Some((new, payload))) if old != new => self.rejudge(new, payload),
            _ => 0,
        };
        if trimmed {
            self.trim_signal(r.ts_ns);
        }
        let (late_psns, late_ns) = match (r.psn, r.retx) {
            // A resend is behind by design: counted as one, not as late.
            (Some(psn), false) => self.lateness(psn, r.ts_ns),
            _ => (0, 0),
        };
        if let (Some(psn), false, Some(cack)) = (r.psn, r.retx, self.cack) {
            // A PSN at or below the cumulative ACK (a late one) counts 0.
            let inflight = u64::from((psn.wrapping_sub(cack) as i32).max(0) as u32);
            let sums = if self.first_trim_ns.is_some() {
                &mut self.inflight_after
            } else {
                &mut self.inflight_before
            };
            sums.0 += inflight;
            sums.1 += 1;
        }
        self.ce += u64::from(r.ce);
        let index = self.path_index(r.entropy, r.ts_ns);
        if !trimmed && self.judged < PROVISIONAL {
            self.provisional
                .push((index, r.dscp, r.payload_len, r.ts_ns));
        }
        self.judged = (self.judged + 1).min(PROVISIONAL);
        let path = self.path_at(index);
        path.last_ts_ns = path.last_ts_ns.max(r.ts_ns);
        let c = &mut path.counts;
        c.packets += 1;
        c.bytes += u64::from(r.frame_len);
        c.payload_bytes += u64::from(r.payload_len);
        c.retransmissions += u64::from(r.retx);
        c.trimmed += u64::from(trimmed);
        if late_psns > 0 {
            c.late += 1;
            c.late_max_psns = c.late_max_psns.max(late_psns);
            c.late_max_ns = c.late_max_ns.max(late_ns);
            c.late_sum_ns += late_ns;
        }
        u64::from(trimmed) + rejudged
    }

    /// The reference changed to a larger request with another DSCP: the
    /// old reference was itself cut and re-marked, as may be the first
    /// requests judged against it. Those shorter than the new reference
    /// with another DSCP are trimmed after all; returns how many.
    fn rejudge(&mut self, dscp: u8, payload: u32) -> u64 {
        let mut found = 0;
        let provisional = std::mem::take(&mut self.provisional);
        for &(index, d, p, ts) in &provisional {
            if cut_and_remarked(d, p, dscp, payload) {
                self.path_at(index).counts.trimmed += 1;
                self.trim_signal(ts);
                found += 1;
            }
        }
        self.provisional = provisional
            .into_iter()
            .filter(|&(_, d, p, _)| !cut_and_remarked(d, p, dscp, payload))
            .collect();
        found
    }

    /// The trim rule (docs/analysis.md, "UET: spraying and trimming"): a
    /// request is trimmed when it carries less payload than this
    /// direction's largest request and a DSCP other than that one's — a
    /// switch cut it and re-marked it. The largest request so far is the
    /// reference, its DSCP the data DSCP.
    fn trimmed(&mut self, dscp: u8, payload: u32) -> bool {
        match self.whole {
            Some((whole_dscp, whole_payload)) if payload <= whole_payload => {
                cut_and_remarked(dscp, payload, whole_dscp, whole_payload)
            }
            _ => {
                self.whole = Some((dscp, payload));
                false
            }
        }
    }

    /// How far behind its PDC's highest PSN `psn` arrives, in PSNs and ns
    /// (since the first higher PSN arrived, as far as the recent highest
    /// PSNs remember: beyond them, a lower bound); a new highest PSN is
    /// remembered.
    fn lateness(&mut self, psn: u32, ts_ns: u64) -> (u32, u64) {
        let Some(&(highest, _)) = self.recent.back() else {
            self.recent.push_back((psn, ts_ns));
            return (0, 0);
        };
        let behind = highest.wrapping_sub(psn) as i32;
        if behind < 0 {
            if self.recent.len() == RECENT_HIGHEST {
                self.recent.pop_front();
            }
            self.recent.push_back((psn, ts_ns));
            return (0, 0);
        }
        if behind == 0 {
            return (0, 0);
        }
        let since = self
            .recent
            .iter()
            .find(|&&(p, _)| p.wrapping_sub(psn) as i32 > 0)
            .map_or(ts_ns, |&(_, t)| t);
        (behind as u32, ts_ns.saturating_sub(since))
    }

    /// The index of `entropy`'s counts (one past the kept values: the
    /// summed rest), made if new.
    fn path_index(&mut self, entropy: Option<u16>, ts_ns: u64) -> usize {
        let fresh = |entropy| Path {
            entropy,
            first_ts_ns: ts_ns,
            last_ts_ns: ts_ns,
            counts: PathCounts::default(),
        };
        let at = self
            .paths
            .iter()
            .position(|p| entropy.is_some() && p.entropy == entropy);
        match at {
            Some(i) => i,
            None if entropy.is_some() && self.paths.len() < ENTROPIES_KEPT => {
                self.paths.push(fresh(entropy));
                self.paths.len() - 1
            }
            None => {
                self.others.get_or_insert_with(|| fresh(None));
                ENTROPIES_KEPT
            }
        }
    }

    fn path_at(&mut self, index: usize) -> &mut Path {
        match self.paths.get_mut(index) {
            Some(p) => p,
            // `path_index` made it.
            None => self.others.get_or_insert(Path {
                entropy: None,
                first_ts_ns: 0,
                last_ts_ns: 0,
                counts: PathCounts::default(),
            }),
        }
    }

    /// An ACK of this direction's requests: its M flag, its NSCC state and
    /// its cumulative PSN.
    pub(super) fn ack(&mut self, ts_ns: u64, ecn: bool, nscc: Option<u8>, cack: u32) {
        self.last_ts_ns = self.last_ts_ns.max(ts_ns);
        let a = &mut self.answers;
        a.acks += 1;
        a.acks_ecn += u64::from(ecn);
        if let Some(pend) = nscc {
            a.acks_nscc += 1;
            a.acks_cwnd_pend += u64::from(pend != 0);
        }
        let newer = self.cack.is_none_or(|c| cack.wrapping_sub(c) as i32 > 0);
        if newer {
            self.cack = Some(cack);
        }
    }

    /// A NACK of this direction's requests with a trimmed code.
    pub(super) fn trimmed_nack(&mut self, ts_ns: u64) {
        self.last_ts_ns = self.last_ts_ns.max(ts_ns);
        self.answers.trimmed_nacks += 1;
        self.trim_signal(ts_ns);
    }

    fn trim_signal(&mut self, ts_ns: u64) {
        self.first_trim_ns.get_or_insert(ts_ns);
    }

    /// Its requests, over every entropy value.
    pub(super) fn totals(&self) -> PathCounts {
        let mut t = PathCounts::default();
        for p in self.paths.iter().chain(&self.others) {
            t.add(&p.counts);
        }
        t
    }
}
