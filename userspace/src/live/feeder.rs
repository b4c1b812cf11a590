//! What the event loop hands the analysis: each item the merge releases,
//! numbered, timestamped in wall-clock time and pushed into the pipeline
//! (summary mode: the analyzer's pairings back to the kernel).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use rocescope_common::PacketRecord;
use rocescope_common::summary::{FlowDelta, FlowKey, record_marks};

use super::drain::{Batch, Spares};
use super::reorder::Reorder;
use super::{RingItem, Tap};
use crate::Result;
use crate::pipeline::{Pairing, RecordPipeline};
use crate::sources::FrameTimes;

/// Numbers, timestamps and pushes records.
pub(super) struct Feeder {
    pub(super) pipeline: RecordPipeline,
    pub(super) offset: i128,
    pub(super) next_frame: u64,
    pub(super) count: Option<u64>,
    pub(super) seen: Option<Arc<AtomicU64>>,
    /// Summary mode: pairings the analyzer made, for the kernel's PAIRS map.
    pub(super) pairings: Option<Receiver<Pairing>>,
    /// Writing PAIRS failed once (full): said once, then left alone.
    pub(super) pairing_failed: bool,
    /// Frames the deltas pushed so far counted.
    pub(super) delta_frames: u64,
    /// Summary mode: flows whose kernel state started (a record marked
    /// `NEW_FLOW_STATE`), and how many of them started again (evictions).
    pub(super) started_flows: std::collections::HashSet<FlowKey>,
    pub(super) evicted_flows: u64,
    /// Which clock times the records (`--time`); one slot: the tap.
    pub(super) times: FrameTimes,
    /// Where the merge's emptied batches go back to the drain threads.
    pub(super) spares: Spares,
    /// Summary mode: when the pipeline was last flushed for the deltas
    /// ([`Feeder::sync_pairings`]).
    pub(super) deltas_flushed: Instant,
}

/// Summary mode: the longest deltas wait in the pipeline's batch for a
/// record to take them to the analyzer. A drain round hands over a few
/// deltas every 5 ms per ring; flushed each round, they woke the analyzer
/// and the table writer hundreds of times a second for a handful of rows
/// each (docs/benchmarks.md, "summarycpu").
pub(super) const DELTA_FLUSH: Duration = Duration::from_millis(100);

impl Feeder {
    pub(super) fn push_item(&mut self, item: &RingItem) -> Result<()> {
        match item {
            RingItem::Record(rec) => self.push(rec),
            RingItem::Delta(d) => self.push_delta(*d),
        }
    }

    /// A delta's times are kernel times, like a record's.
    pub(super) fn push_delta(&mut self, mut d: FlowDelta) -> Result<()> {
        let wall = |ts: u64| u64::try_from(i128::from(ts) + self.offset).unwrap_or(0);
        d.last_ts_ns = wall(d.last_ts_ns);
        if d.packets > 0 {
            d.first_ts_ns = wall(d.first_ts_ns);
        }
        if d.ce > 0 {
            d.first_ce_ts_ns = wall(d.first_ce_ts_ns);
        }
        self.pipeline.push_delta(0, &d)?;
        self.delta_frames += d.packets;
        self.show_progress();
        Ok(())
    }

    /// Summary mode: hands the analyzer's records to it now (it pairs
    /// flows from them), and tells the kernel about the pairings it made.
    /// A pairing reaches the kernel a wake-up or two after the records
    /// that made it; until then the flows' frames are all forwarded.
    /// Deltas alone (they pair nothing) go at most [`DELTA_FLUSH`] later,
    /// or with the next record.
    pub(super) fn sync_pairings(&mut self, tap: &mut Tap) -> Result<()> {
        let Some(rx) = &self.pairings else {
            return Ok(());
        };
        let now = Instant::now();
        if self.pipeline.holds_records()
            || (self.pipeline.holds_anything()
                && now.duration_since(self.deltas_flushed) >= DELTA_FLUSH)
        {
            self.pipeline.flush()?;
            self.deltas_flushed = now;
        }
        let key = |k: &crate::analyze::FlowKey| FlowKey {
            src_ip: k.1,
            dst_ip: k.2,
            dest_qp: k.3,
        };
        while let Ok((r, s)) = rx.try_recv() {
            if self.pairing_failed {
                continue;
            }
            if let Err(e) = tap.pair(&key(&r), &key(&s)) {
                eprintln!(
                    "rocescope: warning: {e}; flows paired from now on are forwarded frame by frame"
                );
                self.pairing_failed = true;
            }
        }
        Ok(())
    }

    fn push(&mut self, rec: &PacketRecord) -> Result<()> {
        if rec._reserved[0] & record_marks::NEW_FLOW_STATE != 0 {
            let key = FlowKey {
                src_ip: rec.src_ip,
                dst_ip: rec.dst_ip,
                dest_qp: rec.roce().dest_qp & rocescope_common::proto::ib::QPN_MASK,
            };
            if !self.started_flows.insert(key) {
                self.evicted_flows += 1;
            }
        }
        let frame = self.next_frame;
        self.next_frame += 1;
        let wall = u64::try_from(i128::from(rec.ts_ns) + self.offset).unwrap_or(0);
        let times = &mut self.times;
        // Written straight into the pipeline's batch: one copy of the record.
        self.pipeline.push_with(rec, |r| {
            r._reserved = [0; 4];
            r.frame = frame;
            r.iface = 0;
            r.ts_ns = times.time(0, 0, r, wall);
        })?;
        self.show_progress();
        Ok(())
    }

    fn show_progress(&self) {
        if let Some(seen) = &self.seen {
            seen.store(
                self.pipeline.records() + self.delta_frames,
                Ordering::Relaxed,
            );
        }
    }

    pub(super) fn full(&self) -> bool {
        self.count.is_some_and(|n| self.pipeline.records() >= n)
    }

    /// One ring's batch into the merge, and what may leave it at kernel
    /// time `now_ns` (`None`: everything, in order) into the pipeline.
    pub(super) fn take(
        &mut self,
        batch: Batch,
        merge: &mut Reorder,
        now_ns: Option<u64>,
    ) -> Result<()> {
        merge.push_batch(batch.ring, batch.items);
        if let Some(at) = batch.emptied_at {
            merge.mark_empty(batch.ring, at);
        }
        self.release(merge, now_ns)
    }

    /// What may leave the merge at kernel time `now_ns`, into the pipeline
    /// (`None`: everything, in order).
    pub(super) fn release(&mut self, merge: &mut Reorder, now_ns: Option<u64>) -> Result<()> {
        let result = merge.release(now_ns, |item| {
            if self.full() {
                return Ok(false);
            }
            self.push_item(item)?;
            Ok(true)
        });
        self.spares.give(merge.take_spare());
        result
    }
}
