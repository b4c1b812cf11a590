//! Where the flows live: fixed-size chunks that are never moved nor copied
//! as the table grows (a `Vec` of wide flows doubling by copying was a third
//! of a run's time on a capture of a million QPs, and held two copies at its
//! peak). A flow's index, its `flow_id`, stays its place.

use std::ops::{Index, IndexMut};

use super::Flow;

/// Flows per chunk.
const CHUNK: usize = 4096;
/// Chunks made into rows between two hand-backs of their memory (~32 MB of
/// flows: a hand-back walks the allocator's free lists).
const GIVE_BACK_CHUNKS: usize = 16;

#[derive(Debug, Default)]
pub(crate) struct FlowTable {
    chunks: Vec<Vec<Flow>>,
    len: usize,
}

impl FlowTable {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn push(&mut self, flow: Flow) {
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        // A chunk is made with room for CHUNK flows: pushing never moves it.
        if let Some(c) = self.chunks.last_mut() {
            c.push(flow);
        }
        self.len += 1;
    }

    /// Every flow made into `T`, in order, each chunk freed once made and
    /// its memory handed back to the system every [`GIVE_BACK_CHUNKS`]
    /// (`out` lives in fresh pages, so memory the flows held and the
    /// allocator kept would count twice): the flows and what they become are
    /// never all held at once.
    pub(crate) fn into_map<T>(self, f: impl Fn(&Flow) -> T) -> Vec<T> {
        let mut out = Vec::with_capacity(self.len);
        for (n, chunk) in self.chunks.into_iter().enumerate() {
            out.extend(chunk.iter().map(&f));
            drop(chunk);
            if n % GIVE_BACK_CHUNKS == GIVE_BACK_CHUNKS - 1 {
                crate::heap::give_back();
            }
        }
        crate::heap::give_back();
        out
    }

    pub(crate) fn get(&self, i: usize) -> Option<&Flow> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Flow> {
        self.chunks.iter().flatten()
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

impl<'a> IntoIterator for &'a FlowTable {
    type Item = &'a Flow;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<Flow>>>;
    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter().flatten()
    }
}

impl<'a> IntoIterator for &'a mut FlowTable {
    type Item = &'a mut Flow;
    type IntoIter = std::iter::Flatten<std::slice::IterMut<'a, Vec<Flow>>>;
    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter_mut().flatten()
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
            t.push(flow(i));
        }
        assert_eq!(t.len(), n);
        assert_eq!(t.chunks.len(), 3);
        // Every chunk was made with room for CHUNK: none grew (moved).
        assert!(t.chunks.iter().all(|c| c.capacity() == CHUNK));
        for i in [0, CHUNK - 1, CHUNK, 2 * CHUNK + 2] {
            assert_eq!(t[i].dest_qp, i as u32);
            assert_eq!(t.get(i).map(|f| f.id), Some(i as u32));
        }
        assert!(t.get(n).is_none());
        t[CHUNK].packets = 7;
        assert_eq!(t.iter().map(|f| f.packets).sum::<u64>(), 7);
        let ids = t.into_map(|f| f.id);
        assert_eq!(ids, (0..n as u32).collect::<Vec<_>>());
    }
}
