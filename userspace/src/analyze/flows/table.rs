//! Where the flows live: fixed-size chunks that are never moved nor copied
//! as the table grows (a `Vec` of wide flows doubling by copying was a third
//! of a run's time on a capture of a million QPs, and held two copies at its
//! peak). A flow keeps its slot for life; a retired flow's slot goes to a
//! free list and the next new flow takes it, so the table holds as many
//! slots as flows were ever live at once (docs/analysis.md, "Retirement").
//! A slot is its `flow_id` until the first flow retires.

use std::ops::{Index, IndexMut};

use super::Flow;
use crate::analyze::cache::prefetch_lines;

/// Flows per chunk.
const CHUNK: usize = 4096;
/// Chunks made into rows between two hand-backs of their memory (~32 MB of
/// flows: a hand-back walks the allocator's free lists).
const GIVE_BACK_CHUNKS: usize = 16;

#[derive(Debug, Default)]
pub(crate) struct FlowTable {
    chunks: Vec<Vec<Flow>>,
    /// Slots made, live or free.
    len: usize,
    /// Slots of retired flows, reused first.
    free: Vec<usize>,
}

/// The id a free slot's placeholder carries: no flow's.
const FREE: u32 = u32::MAX;

impl FlowTable {
    /// Slots made: the most flows live at once so far.
    pub(crate) fn slots(&self) -> usize {
        self.len
    }

    /// Flows live now.
    pub(crate) fn live(&self) -> usize {
        self.len - self.free.len()
    }

    /// Puts `flow` in a free slot, else a new one; returns the slot.
    pub(crate) fn insert(&mut self, flow: Flow) -> usize {
        if let Some(i) = self.free.pop() {
            self[i] = flow;
            return i;
        }
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        // A chunk is made with room for CHUNK flows: pushing never moves it.
        if let Some(c) = self.chunks.last_mut() {
            c.push(flow);
        }
        self.len += 1;
        self.len - 1
    }

    /// Takes the flow out of slot `i` (whose state is then dropped by the
    /// caller) and frees the slot.
    pub(crate) fn remove(&mut self, i: usize) -> Flow {
        let placeholder = Flow::new(FREE, (0, [0; 16], [0; 16], 0), 0);
        let f = std::mem::replace(&mut self[i], placeholder);
        self.free.push(i);
        f
    }

    /// Whether slot `i` holds the live flow `id`.
    pub(crate) fn holds(&self, i: usize, id: u32) -> bool {
        self.get(i).is_some_and(|f| f.id == id)
    }

    /// Every live flow made into `T` and pushed onto `out`, in order of
    /// slot (see [`Self::drain`]): the flows and what they become are never
    /// all held at once, and `out` grows once (a vector extended by another
    /// as large would hold both at once: at 1M QPs, two copies of the rows).
    pub(crate) fn into_map<T>(self, mut out: Vec<T>, f: impl Fn(&Flow) -> T) -> Vec<T> {
        out.reserve_exact(self.live());
        self.drain(|flow| out.push(f(&flow)));
        out
    }

    /// Every live flow handed to `f`, in order of slot, each chunk freed
    /// once handed over and its memory given back to the system every
    /// [`GIVE_BACK_CHUNKS`].
    pub(crate) fn drain(self, mut f: impl FnMut(Flow)) {
        for (n, chunk) in self.chunks.into_iter().enumerate() {
            chunk.into_iter().filter(|x| x.id != FREE).for_each(&mut f);
            if n % GIVE_BACK_CHUNKS == GIVE_BACK_CHUNKS - 1 {
                crate::heap::give_back();
            }
        }
        crate::heap::give_back();
    }

    /// Starts loading slot `i`'s record into the cache (a lookup's
    /// [`super::FlowIndex::prefetch`]).
    pub(crate) fn prefetch(&self, i: usize) {
        if let Some(f) = self.chunks.get(i / CHUNK).and_then(|c| c.get(i % CHUNK)) {
            prefetch_lines(f, std::mem::size_of::<Flow>());
        }
    }

    /// The live flow in slot `i`.
    pub(crate) fn get(&self, i: usize) -> Option<&Flow> {
        self.chunks
            .get(i / CHUNK)?
            .get(i % CHUNK)
            .filter(|f| f.id != FREE)
    }

    /// The live flows, in order of slot.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Flow> {
        self.enumerate().map(|(_, f)| f)
    }

    /// The live flows with their slots, in order of slot.
    pub(crate) fn enumerate(&self) -> impl Iterator<Item = (usize, &Flow)> {
        // Every chunk but the last holds CHUNK slots: the n-th flow of the
        // chunks in a row is slot n.
        self.chunks
            .iter()
            .flatten()
            .enumerate()
            .filter(|(_, f)| f.id != FREE)
    }

    /// The live flows, in order of slot, to change.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Flow> {
        self.chunks.iter_mut().flatten().filter(|f| f.id != FREE)
    }
}

impl Index<usize> for FlowTable {
    type Output = Flow;
    fn index(&self, i: usize) -> &Flow {
        &self.chunks[i / CHUNK][i % CHUNK]
    }
}

impl IndexMut<usize> for FlowTable {
    fn index_mut(&mut self, i: usize) -> &mut Flow {
        &mut self.chunks[i / CHUNK][i % CHUNK]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(i: u32) -> Flow {
        Flow::new(i, (0, [0; 16], [0; 16], i), u64::from(i))
    }

    #[test]
    fn flows_keep_their_index_across_chunks() {
        let mut t = FlowTable::default();
        let n = CHUNK * 2 + 3;
        for i in 0..n as u32 {
            assert_eq!(t.insert(flow(i)), i as usize);
        }
        assert_eq!(t.slots(), n);
        assert_eq!(t.chunks.len(), 3);
        // Every chunk was made with room for CHUNK: none grew (moved).
        assert!(t.chunks.iter().all(|c| c.capacity() == CHUNK));
        for i in [0, CHUNK - 1, CHUNK, 2 * CHUNK + 2] {
            assert_eq!(t[i].dest_qp, i as u32);
            assert_eq!(t.get(i).map(|f| f.id), Some(i as u32));
        }
        assert!(t.get(n).is_none());
        t[CHUNK].add(crate::analyze::flows::Count::Packets, 7);
        assert_eq!(t.iter().map(|f| f.packets()).sum::<u64>(), 7);
        let ids = t.into_map(Vec::new(), |f| f.id);
        assert_eq!(ids, (0..n as u32).collect::<Vec<_>>());
    }

    #[test]
    fn a_freed_slot_is_reused_and_skipped_while_free() {
        let mut t = FlowTable::default();
        for i in 0..3 {
            t.insert(flow(i));
        }
        assert_eq!(t.remove(1).id, 1);
        assert!(t.get(1).is_none());
        assert!(!t.holds(1, 1));
        assert_eq!(t.live(), 2);
        assert_eq!(t.iter().map(|f| f.id).collect::<Vec<_>>(), vec![0, 2]);
        // The next flow takes the free slot: no slot is made.
        assert_eq!(t.insert(flow(7)), 1);
        assert!(t.holds(1, 7));
        assert_eq!((t.slots(), t.live()), (3, 3));
        assert_eq!(t.into_map(Vec::new(), |f| f.id), vec![0, 7, 2]);
    }
}
