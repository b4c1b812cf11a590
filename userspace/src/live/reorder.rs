//! Putting the items of several rings back in time order.
//!
//! Each CPU's ring is in time order on its own (the program runs one frame
//! at a time per CPU, with preemption off, and stamps it with the
//! monotonic clock), so the rings are merged by always taking the earliest
//! head. A ring with nothing waiting may still receive an earlier item, so
//! the earliest head is released only when nothing earlier can come:
//!
//! * every other ring has an item waiting (its later items come after it),
//!   or was found empty at a time that is past the head by more than
//!   [`EMPTY_MARGIN_NS`] (its drain thread reports when: a record is
//!   stamped microseconds before it is committed to its ring), or
//! * the head is older than the window ([`WINDOW_NS`]: a drain thread that
//!   stalls holds nothing back longer), or more than [`MAX_HELD`] items
//!   wait (memory stays bounded at any rate).
//!
//! An item that comes after a later one was released is **late**: it is
//! counted ([`Reorder::late`], `late_records` in `input.live`) and
//! analysed at once, out of order — a record is never dropped here, so
//! frames = records + ring-full drops holds.
//!
//! Summary mode's deltas travel with their ring's records: a delta sorts
//! at its ring's previous item's time if its flow's last counted frame is
//! older, so every ring's items leave in the order the ring had them.
//!
//! The merge holds the drain threads' batches as they came (no item is
//! copied into it) and releases a **run** of the earliest ring's items at
//! a time: while the other rings do not change, the rule above reduces to
//! two bounds computed once per run (the other rings' earliest head, and
//! the earliest time an empty ring may still receive), so a ring that
//! alone has items, or batches already in order, cost a comparison an
//! item (docs/benchmarks.md, "Userspace CPU per frame").
use std::collections::VecDeque;

use super::rings::RingItem;

/// How long an item may wait for other rings' earlier items: ten of the
/// drain threads' poll intervals (5 ms), so a thread late by a few
/// scheduling rounds still has its items put in order.
pub const WINDOW_NS: u64 = 50_000_000;
/// The most items held for reordering, whatever their age: 131 072 records
/// (about 27 MB of `PacketRecord`s); past it the earliest leave at once.
pub const MAX_HELD: usize = 1 << 17;
/// How long before a drain thread found its ring empty a record may have
/// been stamped without being on the ring yet (the program's run from
/// `bpf_ktime_get_ns` to the ring commit takes microseconds).
pub const EMPTY_MARGIN_NS: u64 = 1_000_000;

/// The merge of the rings' items; see the module docs.
pub struct Reorder {
    rings: Vec<RingQueue>,
    held: usize,
    window_ns: u64,
    max_held: usize,
    /// The sort key of the last item released.
    released: u64,
    late: u64,
    /// Emptied batches, for the drain threads to fill again.
    spare: Vec<Vec<RingItem>>,
}

#[derive(Default)]
struct RingQueue {
    /// Batches in the ring's order; the first one from `at` on.
    batches: VecDeque<Vec<RingItem>>,
    at: usize,
    /// The sort key of the item before the head (keys never go back in a
    /// ring: an item sorts at least at its predecessor's key).
    last_key: u64,
    /// Nothing stamped before this can still arrive on this ring.
    empty_mark: u64,
}

impl RingQueue {
    fn head(&self) -> Option<&RingItem> {
        self.batches.front().map(|b| &b[self.at])
    }

    fn head_key(&self) -> Option<u64> {
        self.head().map(|i| i.kernel_ts().max(self.last_key))
    }
}

impl Reorder {
    pub fn new(rings: usize) -> Reorder {
        Reorder::with_limits(rings, WINDOW_NS, MAX_HELD)
    }

    pub fn with_limits(rings: usize, window_ns: u64, max_held: usize) -> Reorder {
        Reorder {
            rings: (0..rings).map(|_| RingQueue::default()).collect(),
            held: 0,
            window_ns,
            max_held,
            released: 0,
            late: 0,
            spare: Vec::new(),
        }
    }

    /// Items taken off ring `ring`, in the ring's order.
    pub fn push_batch(&mut self, ring: usize, items: Vec<RingItem>) {
        if items.is_empty() {
            self.spare.push(items);
            return;
        }
        self.held += items.len();
        self.rings[ring].batches.push_back(items);
    }

    /// One item taken off ring `ring`.
    pub fn push(&mut self, ring: usize, item: RingItem) {
        self.push_batch(ring, vec![item]);
    }

    /// Ring `ring` was found empty by a drain that started at kernel time
    /// `at_ns`.
    pub fn mark_empty(&mut self, ring: usize, at_ns: u64) {
        let q = &mut self.rings[ring];
        q.empty_mark = q.empty_mark.max(at_ns.saturating_sub(EMPTY_MARGIN_NS));
    }

    /// Hands `take` every item that may leave at kernel time `now_ns`, in
    /// order (`None` for `now_ns`: the run is over, everything leaves),
    /// until it returns `Ok(false)` (that item stays) or an error.
    pub fn release<E>(
        &mut self,
        now_ns: Option<u64>,
        mut take: impl FnMut(&RingItem) -> Result<bool, E>,
    ) -> Result<(), E> {
        // One run of the earliest ring per round.
        loop {
            let mut first: Option<(u64, usize)> = None;
            for (i, q) in self.rings.iter().enumerate() {
                if let Some(k) = q.head_key()
                    && first.is_none_or(|f| (k, i) < f)
                {
                    first = Some((k, i));
                }
            }
            let Some((_, ring)) = first else {
                return Ok(());
            };
            // The run ends before the other rings' earliest head …
            let mut others = (u64::MAX, usize::MAX);
            // … and, unless the window or the bound lets it go, at the
            // earliest time an empty ring may still receive.
            let mut empty_bound = u64::MAX;
            for (i, q) in self.rings.iter().enumerate() {
                if i == ring {
                    continue;
                }
                match q.head_key() {
                    Some(k) => others = others.min((k, i)),
                    None => empty_bound = empty_bound.min(q.empty_mark),
                }
            }
            let q = &mut self.rings[ring];
            let mut stopped = false;
            let mut moved = false;
            while let Some(batch) = q.batches.front() {
                let item = &batch[q.at];
                let key = item.kernel_ts().max(q.last_key);
                if (key, ring) > others {
                    break;
                }
                let ready = match now_ns {
                    None => true,
                    Some(now) => {
                        self.held > self.max_held
                            || key.saturating_add(self.window_ns) <= now
                            || empty_bound >= key
                    }
                };
                if !ready {
                    return Ok(());
                }
                if !take(item)? {
                    stopped = true;
                    break;
                }
                moved = true;
                q.last_key = key;
                self.held -= 1;
                if key < self.released {
                    self.late += 1;
                } else {
                    self.released = key;
                }
                q.at += 1;
                if q.at == batch.len() {
                    q.at = 0;
                    if let Some(mut done) = q.batches.pop_front() {
                        done.clear();
                        self.spare.push(done);
                    }
                }
            }
            if stopped || !moved {
                return Ok(());
            }
        }
    }

    /// The next item to analyse, if one may leave at kernel time `now_ns`
    /// (see [`Reorder::release`]).
    pub fn pop(&mut self, now_ns: Option<u64>) -> Option<RingItem> {
        let mut out = None;
        let _ = self.release(now_ns, |item| {
            if out.is_some() {
                return Ok::<bool, ()>(false);
            }
            out = Some(*item);
            Ok(true)
        });
        out
    }

    /// Emptied batches (their capacity), for the drain threads to reuse.
    pub fn take_spare(&mut self) -> Vec<Vec<RingItem>> {
        std::mem::take(&mut self.spare)
    }

    /// Items that came after a later item had been released (analysed anyway).
    pub fn late(&self) -> u64 {
        self.late
    }

    /// Items waiting.
    pub fn held(&self) -> usize {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocescope_common::PacketRecord;

    fn rec(ts: u64) -> RingItem {
        RingItem::Record(PacketRecord {
            ts_ns: ts,
            ..PacketRecord::default()
        })
    }

    fn drain(r: &mut Reorder, now: Option<u64>) -> Vec<u64> {
        std::iter::from_fn(|| r.pop(now))
            .map(|i| i.kernel_ts())
            .collect()
    }

    #[test]
    fn merges_rings_in_time_order_once_nothing_earlier_can_come() {
        let mut r = Reorder::with_limits(2, 50, 100);
        for ts in [10, 30, 50] {
            r.push(0, rec(ts));
        }
        // Ring 1 has said nothing: 10 waits for the window (10 + 50 = 60).
        assert_eq!(drain(&mut r, Some(59)), Vec::<u64>::new());
        r.push(1, rec(20));
        r.push(1, rec(40));
        // Both rings have heads: 10, 20, 30, 40 leave; 50 waits for ring 1.
        assert_eq!(drain(&mut r, Some(59)), vec![10, 20, 30, 40]);
        // Ring 1 found empty at 1_000_060: nothing before 60 can come.
        r.mark_empty(1, 1_000_060);
        assert_eq!(drain(&mut r, Some(59)), vec![50]);
        assert_eq!((r.late(), r.held()), (0, 0));
    }

    #[test]
    fn a_record_later_than_the_window_is_counted_and_analysed() {
        let mut r = Reorder::with_limits(2, 50, 100);
        r.push(0, rec(100));
        assert_eq!(drain(&mut r, Some(150)), vec![100]);
        r.push(1, rec(90));
        r.push(0, rec(120));
        assert_eq!(drain(&mut r, None), vec![90, 120]);
        assert_eq!(r.late(), 1);
    }

    #[test]
    fn holds_no_more_than_its_bound() {
        let mut r = Reorder::with_limits(2, 1_000, 2);
        for ts in [1, 2, 3, 4] {
            r.push(0, rec(ts));
        }
        // Past the bound the earliest leave until it holds the bound.
        assert_eq!(drain(&mut r, Some(0)), vec![1, 2]);
        assert_eq!(r.held(), 2);
    }

    #[test]
    fn releases_runs_across_batches_and_keeps_what_the_taker_refuses() {
        let mut r = Reorder::with_limits(2, 1_000, 100);
        r.push_batch(0, vec![rec(10), rec(20)]);
        r.push_batch(0, vec![rec(30), rec(40)]);
        r.push_batch(1, vec![rec(25)]);
        // Ring 1 found empty long after: nothing earlier can come there.
        r.mark_empty(1, 2_000_000);
        let mut got = Vec::new();
        r.release(Some(0), |i| {
            if got.len() == 3 {
                return Ok::<bool, ()>(false);
            }
            got.push(i.kernel_ts());
            Ok(true)
        })
        .unwrap();
        // 10, 20 (ring 0's first batch), 25 (ring 1), then 30 refused.
        assert_eq!(got, vec![10, 20, 25]);
        assert_eq!(r.held(), 2);
        // The first batch of ring 0 and ring 1's come back for reuse.
        assert_eq!(r.take_spare().len(), 2);
        assert_eq!(drain(&mut r, Some(0)), vec![30, 40]);
        assert_eq!((r.late(), r.held()), (0, 0));
    }

    #[test]
    fn a_delta_keeps_its_place_on_its_ring() {
        let mut r = Reorder::with_limits(1, 50, 100);
        r.push(0, rec(100));
        let delta = rocescope_common::summary::FlowDelta {
            last_ts_ns: 40,
            ..Default::default()
        };
        r.push(0, RingItem::Delta(delta));
        r.push(0, rec(110));
        let order: Vec<bool> = std::iter::from_fn(|| r.pop(None))
            .map(|i| matches!(i, RingItem::Delta(_)))
            .collect();
        assert_eq!(order, vec![false, true, false]);
        assert_eq!(r.late(), 0);
    }
}
