//! Where the flows live: fixed-size chunks that are never moved nor copied
//! as the table grows (a `Vec` of wide flows doubling by copying was a third
//! of a run's time on a capture of a million QPs, and held two copies at its
//! peak). A flow's index, its `flow_id`, stays its place.

use std::ops::{Index, IndexMut};

use super::Flow;

/// Flows per chunk.
const CHUNK: usize = 4096;

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
        if self.len % CHUNK == 0 {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        // A chunk is made with room for CHUNK flows: pushing never moves it.
        if let Some(c) = self.chunks.last_mut() {
            c.push(flow);
        }
        self.len += 1;
    }

    /// Every flow made into `T`, in order, each chunk freed once made:
    /// the flows and what they become are never all held at once.
    pub(crate) fn into_map<T>(self, f: impl Fn(&Flow) -> T) -> Vec<T> {
        let mut out = Vec::with_capacity(self.len);
        for chunk in self.chunks {
            out.extend(chunk.iter().map(&f));
        }
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
