//! PFC pause state per `(iface, src_mac, priority)`: merged pause intervals,
//! storms, and "how long was this priority paused between two instants".

use std::collections::BTreeMap;

use rocescope_common::PacketRecord;
use rocescope_common::proto::mac_control::{BITS_PER_QUANTUM, PRIORITIES};

use super::events::{Event, EventDetail, EventKind, PauseStart, Storm};
use super::rows::PauseEnd;
use super::{PfcInterval, Sink};

/// A pause that is still running (its end may still be refreshed or cut by XON).
#[derive(Clone, Copy, Debug)]
struct Open {
    start: u64,
    /// When it expires unless refreshed.
    deadline: u64,
    frames: u64,
}

impl Open {
    /// Where a pause still open when its tap's capture ends at `last_ts`
    /// ends: its timer ran out before, or the capture does.
    fn end_at(self, last_ts: u64) -> (u64, PauseEnd) {
        if self.deadline <= last_ts {
            (self.deadline, PauseEnd::Expiry)
        } else {
            (last_ts, PauseEnd::CaptureEnd)
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct MacState {
    mac: [u8; 6],
    open: Option<Open>,
    /// The closed intervals' durations and pausing frames, summed as they
    /// close (for [`PfcTracker::senders`]).
    closed_ns: u64,
    closed_frames: u64,
}

/// One sender's pauses of one priority so far, as a monitor reads them
/// while records still come (`Analyzer::running`): what `pfc.parquet`'s
/// rows of `(iface, src_mac, priority)` will sum to if the run ends now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SenderPauses {
    pub iface: u16,
    pub src_mac: [u8; 6],
    pub priority: u8,
    /// Closed intervals, and the open one up to its deadline or `now`,
    /// whichever is first (where the end of the run would close it).
    pub paused_ns: u64,
    /// Pausing frames (quanta > 0), the open interval's included.
    pub frames: u64,
    /// The pause running at `now`: how long so far (0: none, or it has
    /// expired).
    pub open_ns: u64,
}

/// Counters of one `(iface, priority)` for the summary.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PrioStats {
    /// PFC frames with this priority's class-enable bit set (XON included).
    pub frames: u64,
    /// Those with quanta 0.
    pub xon_frames: u64,
    pub storms: u64,
}

/// Closed intervals of one `(iface, priority)`, sorted by start.
#[derive(Debug, Default)]
struct Closed {
    /// `(start, end, src_mac)`.
    spans: Vec<(u64, u64, [u8; 6])>,
    /// `reach[i]`: the latest end among `spans[..=i]`. A lookup walking
    /// back from its window's end stops at the first span whose reach is
    /// before the window's start: nothing earlier overlaps it. (Bounding
    /// the walk by the longest span instead made one long pause, e.g. a
    /// storm, send every later lookup back over all spans since.)
    reach: Vec<u64>,
}

impl Closed {
    fn insert(&mut self, start: u64, end: u64, mac: [u8; 6]) {
        let at = self.spans.partition_point(|s| s.0 <= start);
        self.spans.insert(at, (start, end, mac));
        let before = if at == 0 { 0 } else { self.reach[at - 1] };
        self.reach.insert(at, before.max(end));
        // Later reaches grow to this end, up to one that already reaches past it.
        for r in &mut self.reach[at + 1..] {
            if *r >= end {
                break;
            }
            *r = end;
        }
    }

    /// The spans that overlap `[from, to)`, latest start first.
    fn overlapping(&self, from: u64, to: u64) -> impl Iterator<Item = (u64, u64, [u8; 6])> + '_ {
        // Windows end at the packet being analysed: usually after every
        // closed span's start, which spares the binary search.
        let end = match self.spans.last() {
            Some(last) if last.0 < to => self.spans.len(),
            _ => self.spans.partition_point(|s| s.0 < to),
        };
        (0..end)
            .rev()
            .take_while(move |&i| self.reach[i] > from)
            .map(|i| self.spans[i])
            .filter(move |&(s, e, _)| s < to && e > from)
    }
}

/// Which pause covered (the most of) a queried window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cover {
    pub src_mac: [u8; 6],
    pub priority: u8,
    pub start_ns: u64,
}

/// The cover of a window by the segment `(start, end, mac, pause start)`.
fn cover(seg: (u64, u64, [u8; 6], u64), priority: u8) -> Cover {
    Cover {
        src_mac: seg.2,
        priority,
        start_ns: seg.3,
    }
}

/// Pause state of one `(iface, priority)`.
#[derive(Debug)]
struct Prio {
    key: (u16, u8),
    /// One per sender (source MAC) that paused it.
    macs: Vec<MacState>,
    closed: Closed,
    /// The latest deadline any pause of `macs` was opened or refreshed
    /// with: no open pause reaches past it, so a window from it on
    /// overlaps none (the common case: a scan of `macs` spared).
    open_reach: u64,
}

pub(crate) struct PfcTracker {
    link_speed_bps: u64,
    /// Per interface index: its own link speed (0: `link_speed_bps`).
    speeds: Vec<u64>,
    storm_ns: u64,
    /// `(iface, priority)` → index into `prios` (`NONE` until its first PFC
    /// frame), at `iface * PRIORITIES + priority`: the lookup behind every
    /// stall check and timeline bin, a plain index instead of a hash probe.
    slots: Vec<u32>,
    prios: Vec<Prio>,
    pub rows: Vec<PfcInterval>,
    pub stats: BTreeMap<(u16, u8), PrioStats>,
}

const NONE: u32 = u32::MAX;

fn slot(iface: u16, priority: u8) -> usize {
    usize::from(iface) * PRIORITIES + usize::from(priority)
}

impl PfcTracker {
    pub fn new(link_speed_bps: u64, storm_ns: u64) -> Self {
        PfcTracker {
            link_speed_bps: link_speed_bps.max(1),
            speeds: Vec::new(),
            storm_ns,
            slots: Vec::new(),
            prios: Vec::new(),
            rows: Vec::new(),
            stats: BTreeMap::new(),
        }
    }

    /// Times the quanta of `iface` at `bps` from now on.
    pub fn set_speed(&mut self, iface: u16, bps: u64) {
        let i = usize::from(iface);
        if self.speeds.len() <= i {
            self.speeds.resize(i + 1, 0);
        }
        self.speeds[i] = bps.max(1);
    }

    /// The link speed PFC quanta of `iface` are timed at.
    pub fn speed(&self, iface: u16) -> u64 {
        match self.speeds.get(usize::from(iface)) {
            Some(&b) if b > 0 => b,
            _ => self.link_speed_bps,
        }
    }

    /// Pause time of `quanta` at the link speed of `iface`, in ns (rounded down).
    pub fn quanta_ns(&self, iface: u16, quanta: u16) -> u64 {
        (quanta as u128 * BITS_PER_QUANTUM as u128 * 1_000_000_000 / self.speed(iface) as u128)
            as u64
    }

    /// One PFC frame (kind `pfc`).
    pub fn frame(&mut self, rec: &PacketRecord, sink: &mut impl Sink) {
        let t = rec.ts_ns;
        for prio in 0..PRIORITIES as u8 {
            if rec.link_control().pfc_enable & (1 << prio) == 0 {
                continue;
            }
            let q = rec.link_control().pfc_quanta[prio as usize];
            let key = (rec.iface, prio);
            let st = self.stats.entry(key).or_default();
            st.frames += 1;
            if q == 0 {
                st.xon_frames += 1;
            }
            let dur = self.quanta_ns(rec.iface, q);
            let at = self.prio_index(key);
            let macs = &mut self.prios[at].macs;
            let i = match macs.iter().position(|m| m.mac == rec.src_mac) {
                Some(i) => i,
                None => {
                    macs.push(MacState {
                        mac: rec.src_mac,
                        open: None,
                        closed_ns: 0,
                        closed_frames: 0,
                    });
                    macs.len() - 1
                }
            };
            // An open pause whose timer ran out before this frame ended then.
            if let Some(o) = macs[i].open
                && o.deadline < t
            {
                macs[i].open = None;
                self.close(at, rec.src_mac, o, o.deadline, PauseEnd::Expiry, sink);
            }
            let prio_state = &mut self.prios[at];
            if q != 0 {
                prio_state.open_reach = prio_state.open_reach.max(t.saturating_add(dur));
            }
            let state = &mut prio_state.macs[i];
            match (state.open, q) {
                (Some(o), 0) => {
                    state.open = None;
                    self.close(at, rec.src_mac, o, t, PauseEnd::Xon, sink);
                }
                (None, 0) => {}
                (Some(o), _) => {
                    state.open = Some(Open {
                        deadline: t.saturating_add(dur),
                        frames: o.frames + 1,
                        ..o
                    });
                }
                (None, _) => {
                    state.open = Some(Open {
                        start: t,
                        deadline: t.saturating_add(dur),
                        frames: 1,
                    });
                    sink.event(&Event {
                        ts_ns: t,
                        iface: rec.iface,
                        flow_id: None,
                        kind: EventKind::PfcPause,
                        psn: None,
                        depth: None,
                        trigger: None,
                        idle_us: None,
                        detail: EventDetail::PfcPause(PauseStart {
                            priority: prio,
                            src_mac: rec.src_mac,
                            quanta: q,
                            pause_ns: dur,
                        }),
                    });
                }
            }
        }
    }

    /// The index in `prios` of `key`, created at its first PFC frame.
    fn prio_index(&mut self, key: (u16, u8)) -> usize {
        let at = slot(key.0, key.1);
        if self.slots.len() <= at {
            self.slots.resize(at + 1, NONE);
        }
        if self.slots[at] == NONE {
            // At most 65 536 interfaces × 8 priorities: fits a u32.
            self.slots[at] = self.prios.len() as u32;
            self.prios.push(Prio {
                key,
                macs: Vec::new(),
                closed: Closed::default(),
                open_reach: 0,
            });
        }
        self.slots[at] as usize
    }

    /// The state of `(iface, priority)`, if a PFC frame ever named it.
    /// Whether any PFC frame was seen: before the first, [`Self::paused`]
    /// finds no pause anywhere.
    pub(crate) fn any_priority(&self) -> bool {
        !self.prios.is_empty()
    }

    fn prio(&self, iface: u16, priority: u8) -> Option<&Prio> {
        // A priority past 7 (a library caller's DSCP map) would index the
        // next interface's slots: no PFC frame names it.
        if usize::from(priority) >= PRIORITIES {
            return None;
        }
        let at = *self.slots.get(slot(iface, priority))?;
        self.prios.get(at as usize)
    }

    fn close(
        &mut self,
        at: usize,
        mac: [u8; 6],
        o: Open,
        end: u64,
        ended_by: PauseEnd,
        sink: &mut impl Sink,
    ) {
        let end = end.max(o.start);
        let prio = &mut self.prios[at];
        let key = prio.key;
        prio.closed.insert(o.start, end, mac);
        if let Some(m) = prio.macs.iter_mut().find(|m| m.mac == mac) {
            m.closed_ns += end - o.start;
            m.closed_frames += o.frames;
        }
        self.rows.push(PfcInterval {
            iface: key.0,
            src_mac: mac,
            priority: key.1,
            start_ns: o.start,
            end_ns: end,
            frames: o.frames,
            ended_by,
        });
        if end - o.start > self.storm_ns {
            self.stats.entry(key).or_default().storms += 1;
            sink.event(&Event {
                ts_ns: o.start.saturating_add(self.storm_ns),
                iface: key.0,
                flow_id: None,
                kind: EventKind::PfcStorm,
                psn: None,
                depth: None,
                trigger: None,
                idle_us: None,
                detail: EventDetail::PfcStorm(Storm {
                    priority: key.1,
                    src_mac: mac,
                    start_ns: o.start,
                    paused_ns: end - o.start,
                    threshold_ns: self.storm_ns,
                    frames: o.frames,
                    ended_by,
                }),
            });
        }
    }

    /// End of capture: close every running pause at the end of its own
    /// tap's capture (`tap_end` of its interface), not of the whole run's.
    pub fn finish(&mut self, tap_end: impl Fn(u16) -> u64, sink: &mut impl Sink) {
        let mut open: Vec<(usize, [u8; 6], Open)> = Vec::new();
        for (at, prio) in self.prios.iter_mut().enumerate() {
            for m in prio.macs.iter_mut() {
                if let Some(o) = m.open.take() {
                    open.push((at, m.mac, o));
                }
            }
        }
        let prios = &self.prios;
        open.sort_by_key(|&(at, mac, o)| (o.start, prios[at].key, mac));
        for (at, mac, o) in open {
            let (end, ended_by) = o.end_at(tap_end(self.prios[at].key.0));
            self.close(at, mac, o, end, ended_by, sink);
        }
        self.rows
            .sort_by_key(|r| (r.start_ns, r.iface, r.priority, r.src_mac));
    }

    /// The pauses still running, as rows closed at `now(iface)` the way
    /// [`PfcTracker::finish`] would close them there (appended to `out`):
    /// the live monitor's view of a pause that goes on.
    pub fn open_rows(&self, now: impl Fn(u16) -> u64, out: &mut Vec<PfcInterval>) {
        for prio in &self.prios {
            let (iface, priority) = prio.key;
            for m in &prio.macs {
                if let Some(o) = m.open {
                    let (end, ended_by) = o.end_at(now(iface));
                    out.push(PfcInterval {
                        iface,
                        src_mac: m.mac,
                        priority,
                        start_ns: o.start,
                        end_ns: end.max(o.start),
                        frames: o.frames,
                        ended_by,
                    });
                }
            }
        }
    }

    /// Every sender's pauses so far (appended to `out`), an open pause
    /// counted up to `now(iface)` (the end of the interface's capture so
    /// far) as [`PfcTracker::finish`] would close it there.
    pub fn senders(&self, now: impl Fn(u16) -> u64, out: &mut Vec<SenderPauses>) {
        for prio in &self.prios {
            let (iface, priority) = prio.key;
            let now = now(iface);
            for m in &prio.macs {
                let open = m
                    .open
                    .map_or(0, |o| o.deadline.min(now).saturating_sub(o.start));
                out.push(SenderPauses {
                    iface,
                    src_mac: m.mac,
                    priority,
                    paused_ns: m.closed_ns + open,
                    frames: m.closed_frames + m.open.map_or(0, |o| o.frames),
                    open_ns: m
                        .open
                        .filter(|o| o.deadline > now)
                        .map_or(0, |o| now.saturating_sub(o.start)),
                });
            }
        }
    }

    /// Time within `[from, to)` that `priority` was paused on `iface` (by any
    /// sender), knowing pause state only up to `now`, and the pause that
    /// covered the most of it.
    pub fn paused(
        &self,
        iface: u16,
        priority: u8,
        from: u64,
        to: u64,
        now: u64,
    ) -> (u64, Option<Cover>) {
        let Some(prio) = self.prio(iface, priority).filter(|_| to > from) else {
            return (0, None);
        };
        let clip = |s: u64, e: u64| -> Option<(u64, u64)> {
            let (s2, e2) = (s.max(from), e.min(to));
            (e2 > s2).then_some((s2, e2))
        };
        // Overlapping spans, clipped to the window (never empty), latest
        // start first, then the open pauses in sender order: usually none
        // or one, so the first is held apart and a list is made only for a
        // second. The cover is the longest segment, the last of equals.
        let open_macs: &[MacState] = if prio.open_reach > from {
            &prio.macs
        } else {
            &[]
        };
        let opens = open_macs.iter().filter_map(|m| {
            let o = m.open?;
            let (a, b) = clip(o.start, o.deadline.min(now))?;
            Some((a, b, m.mac, o.start))
        });
        let mut segs = prio
            .closed
            .overlapping(from, to)
            .map(|(s, e, mac)| (s.max(from), e.min(to), mac, s))
            .chain(opens);
        let Some(first) = segs.next() else {
            return (0, None);
        };
        let Some(second) = segs.next() else {
            return (first.1 - first.0, Some(cover(first, priority)));
        };
        let mut all: Vec<(u64, u64, [u8; 6], u64)> = vec![first, second];
        all.extend(segs);
        let Some(&best) = all.iter().max_by_key(|s| (s.1 - s.0, s.3)) else {
            return (0, None);
        };
        all.sort_unstable_by_key(|s| s.0);
        let mut total = 0;
        let (mut cs, mut ce) = (all[0].0, all[0].1);
        for s in &all[1..] {
            if s.0 > ce {
                total += ce - cs;
                (cs, ce) = (s.0, s.1);
            } else {
                ce = ce.max(s.1);
            }
        }
        total += ce - cs;
        (total, Some(cover(best, priority)))
    }

    /// Union of the paused time of `(iface, priority)` over all senders
    /// (after [`PfcTracker::finish`]).
    pub fn paused_total(&self, iface: u16, priority: u8) -> u64 {
        let Some(prio) = self.prio(iface, priority) else {
            return 0;
        };
        let c = &prio.closed;
        let mut total = 0;
        let mut cur: Option<(u64, u64)> = None;
        for &(s, e, _) in &c.spans {
            match cur {
                Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
                Some((cs, ce)) => {
                    total += ce - cs;
                    cur = Some((s, e));
                }
                None => cur = Some((s, e)),
            }
        }
        if let Some((cs, ce)) = cur {
            total += ce - cs;
        }
        total
    }
}

#[cfg(test)]
mod tests;
