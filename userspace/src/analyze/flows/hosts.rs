//! The flows of a host pair, by slot: a table of its own, as the key index
//! is ([`super::FlowIndex`]), so that a new flow's bucket can be loaded a
//! frame ahead. On a capture of many short QPs two frames in three begin
//! a flow, each adding it to its pair here, and each QP's first response
//! looks up the pair of the other direction to pair the two flows; in
//! hashbrown's table each was a cache miss on its control bytes and one on
//! its bucket (docs/benchmarks.md, "cpu1m").
//!
//! A pair's hash is its key's ([`super::index::Hashes`]): made once a
//! frame, with the key's, and the same both ways but for the tag's lowest
//! bit, so that a pair and its reverse start probing at the same bucket
//! (one loaded line for a new flow's insert and a response's pairing) and
//! a probe for one does not read the other's flow to tell them apart.

use super::index::{EMPTY, LEFT, PairHash, pair_hash, put_ahead, tag};
use super::{FlowTable, HostPair};
use crate::analyze::cache::prefetch_lines;
use crate::analyze::compact::Opt32;

/// The flows of one host pair, by slot, in the order they began.
#[derive(Debug)]
pub(crate) struct HostFlows<'a> {
    first: u32,
    more: &'a [u32],
}

impl HostFlows<'_> {
    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        std::iter::once(&self.first)
            .chain(self.more)
            .map(|&i| i as usize)
    }
}

/// A host pair's bucket, 8 bytes: its first flow's slot inline, as most
/// pairs carry one flow each way, and the list of the others, if any, by
/// its number in [`HostIndex::lists`].
#[derive(Clone, Copy, Debug)]
struct Pair {
    first: u32,
    more: Opt32,
}

const NO_PAIR: Pair = Pair {
    first: 0,
    more: Opt32::NONE,
};

/// Flows by host pair `(iface, source, destination)`: open addressing with
/// linear probing over a byte of tag a bucket and an 8-byte [`Pair`] — 9
/// bytes a bucket, as hashbrown's table of pairs was — at most three
/// quarters in use.
#[derive(Default)]
pub(crate) struct HostIndex {
    /// [`EMPTY`], [`LEFT`] or a pair's tag; a power of two long, or empty.
    tags: Vec<u8>,
    pairs: Vec<Pair>,
    /// Pairs indexed.
    len: usize,
    /// Buckets not [`EMPTY`]: `len` and the [`LEFT`] ones.
    used: usize,
    /// The further flows of the pairs that have more than one.
    lists: Vec<Vec<u32>>,
    /// Numbers of the lists no pair holds (empty), taken first.
    free: Vec<u32>,
}

fn hosts(flows: &FlowTable, i: u32) -> HostPair {
    let f = &flows[i as usize];
    (f.iface, f.src_ip, f.dst_ip)
}

impl HostIndex {
    /// The flows of host pair `pair`, in the order they began.
    pub(crate) fn get(&self, flows: &FlowTable, pair: &HostPair) -> Option<HostFlows<'_>> {
        let p = self.find(flows, pair, pair_hash(pair))?;
        let Pair { first, more } = self.pairs[p];
        let more = more.slot().map_or(&[][..], |m| &self.lists[m]);
        Some(HostFlows { first, more })
    }

    /// The bucket of `pair`, whose hash is `hash`.
    fn find(&self, flows: &FlowTable, pair: &HostPair, hash: PairHash) -> Option<usize> {
        debug_assert_eq!(hash.0, pair_hash(pair).0, "the hash of another pair");
        let mask = self.tags.len().checked_sub(1)?;
        let t = tag(hash.0);
        let mut p = hash.0 as usize & mask;
        loop {
            match self.tags[p] {
                EMPTY => return None,
                x if x == t && hosts(flows, self.pairs[p].first) == *pair => return Some(p),
                _ => p = (p + 1) & mask,
            }
        }
    }

    /// Starts loading the bucket where the probes for the pair of `hash`
    /// and for its reverse begin (a new flow's [`Self::insert_hashed`], a
    /// response's pairing).
    pub(crate) fn prefetch(&self, hash: PairHash) {
        if let Some(mask) = self.tags.len().checked_sub(1) {
            let p = hash.0 as usize & mask;
            prefetch_lines(&self.tags[p], 1);
            prefetch_lines(&self.pairs[p], 1);
        }
    }

    /// Once the bucket is in the cache ([`Self::prefetch`], a call before),
    /// starts loading the record of the first flow of the pair whose hash
    /// is `hash` (by its tag, unconfirmed): a response's pairing reads it.
    pub(crate) fn prefetch_first(&self, flows: &FlowTable, hash: PairHash) {
        let Some(mask) = self.tags.len().checked_sub(1) else {
            return;
        };
        let t = tag(hash.0);
        let mut p = hash.0 as usize & mask;
        loop {
            match self.tags[p] {
                EMPTY => return,
                x if x == t => return flows.prefetch(self.pairs[p].first as usize),
                _ => p = (p + 1) & mask,
            }
        }
    }

    /// Adds flow `i` of `flows` (not added yet) to its host pair's flows.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, flows: &FlowTable, i: usize) {
        let pair = hosts(flows, i as u32);
        self.insert_hashed(flows, i, pair_hash(&pair));
    }

    /// [`Self::insert`] with the pair's hash made already.
    pub(crate) fn insert_hashed(&mut self, flows: &FlowTable, i: usize, hash: PairHash) {
        let pair = hosts(flows, i as u32);
        if let Some(p) = self.find(flows, &pair, hash) {
            let m = match self.pairs[p].more.slot() {
                Some(m) => m,
                None => {
                    let m = match self.free.pop() {
                        Some(m) => m as usize,
                        None => {
                            self.lists.push(Vec::new());
                            self.lists.len() - 1
                        }
                    };
                    self.pairs[p].more = Opt32::of_slot(Some(m));
                    m
                }
            };
            self.lists[m].push(i as u32);
            return;
        }
        // Three quarters full at most: a miss probes ~8 buckets.
        if (self.used + 1) * 4 > self.tags.len() * 3 {
            self.regrow(flows);
        }
        self.put(
            hash,
            Pair {
                first: i as u32,
                more: Opt32::NONE,
            },
        );
    }

    /// Puts a pair not indexed in the first free bucket from its place.
    fn put(&mut self, hash: PairHash, pair: Pair) {
        let mask = self.tags.len() - 1;
        let mut p = hash.0 as usize & mask;
        while self.tags[p] > LEFT {
            p = (p + 1) & mask;
        }
        self.used += usize::from(self.tags[p] == EMPTY);
        self.tags[p] = tag(hash.0);
        self.pairs[p] = pair;
        self.len += 1;
    }

    /// Makes room for one more pair: the same buckets without the left
    /// ones when half or less would be in use, else twice as many, filled
    /// in the order of the pairs' first flows' slots, so that hashing them
    /// (each first flow's hosts read) walks the flow table forward instead
    /// of jumping about it. The pairs, their number and what each holds
    /// are unchanged; only the buckets move. The old table is read once,
    /// in its own order, into a bitmap of the first flows' slots and a list
    /// of the pairs with more flows (a few): no list of every pair is
    /// gathered and sorted (docs/benchmarks.md, "cpu3"), and the old table
    /// goes before the new one is made.
    fn regrow(&mut self, flows: &FlowTable) {
        let n = self.tags.len();
        let room = if (self.len + 1) * 8 <= n * 3 {
            n
        } else {
            (2 * n).max(16)
        };
        let mut firsts = vec![0u64; flows.slots().div_ceil(64)];
        let mut more: Vec<(u32, u32)> = Vec::new();
        for (t, p) in self.tags.iter().zip(&self.pairs) {
            if *t > LEFT {
                firsts[p.first as usize / 64] |= 1 << (p.first % 64);
                if let Some(m) = p.more.slot() {
                    more.push((p.first, m as u32));
                }
            }
        }
        more.sort_unstable();
        self.tags = Vec::new();
        self.pairs = Vec::new();
        self.tags = vec![EMPTY; room];
        self.pairs = vec![NO_PAIR; room];
        (self.len, self.used) = (0, 0);
        let mut more = more.into_iter().peekable();
        let firsts = firsts.iter().enumerate().flat_map(|(w, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                let b = bits.trailing_zeros();
                bits &= bits.wrapping_sub(1);
                (b < 64).then_some((w * 64) as u32 + b)
            })
        });
        let pairs = firsts.map(|first| {
            let m = more.next_if(|&(f, _)| f == first).map(|(_, m)| m as usize);
            let pair = Pair {
                first,
                more: Opt32::of_slot(m),
            };
            (pair_hash(&hosts(flows, first)).0, pair)
        });
        put_ahead(self, pairs, Self::prefetch_place, |s, hash, pair| {
            s.put(PairHash(hash), pair)
        });
    }

    /// Starts loading the bucket where the probe for `hash` begins.
    fn prefetch_place(&self, hash: u64) {
        let p = hash as usize & (self.tags.len() - 1);
        prefetch_lines(&self.tags[p], 1);
        prefetch_lines(&self.pairs[p], 1);
    }

    /// Drops flow `i` of `flows` (still in its slot: its hosts are read
    /// from it) from its host pair's flows; the pair goes with its last.
    pub(crate) fn remove(&mut self, flows: &FlowTable, i: usize) {
        let pair = hosts(flows, i as u32);
        let Some(p) = self.find(flows, &pair, pair_hash(&pair)) else {
            return;
        };
        let l = &mut self.pairs[p];
        let i = i as u32;
        let Some(m) = l.more.slot() else {
            if l.first == i {
                self.tags[p] = LEFT;
                self.len -= 1;
            }
            return;
        };
        let more = &mut self.lists[m];
        if l.first == i {
            l.first = more.remove(0);
        } else {
            more.retain(|&s| s != i);
        }
        if more.is_empty() {
            // Its memory goes with it: the lists follow the pairs live.
            *more = Vec::new();
            self.free.push(m as u32);
            l.more = Opt32::NONE;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Flow;
    use super::*;

    fn ip(n: u8) -> [u8; 16] {
        let mut a = [0; 16];
        a[15] = n;
        a
    }

    #[test]
    fn flows_are_found_by_host_pair_both_ways() {
        let mut flows = FlowTable::default();
        let mut by_hosts = HostIndex::default();
        // 3 host pairs on 2 taps, 5000 QPs, every third flow the other way.
        let key = |i: u32| {
            let (a, b) = (ip((i % 3) as u8), ip(9));
            if i.is_multiple_of(5) {
                ((i % 2) as u16, b, a, i)
            } else {
                ((i % 2) as u16, a, b, i)
            }
        };
        for i in 0..5000u32 {
            flows.insert(Flow::new(i, key(i), 0));
            by_hosts.insert(&flows, i as usize);
        }
        let pair = |p: HostPair| -> Vec<usize> {
            by_hosts
                .get(&flows, &p)
                .map(|l| l.iter().collect())
                .unwrap_or_default()
        };
        let want = |fwd: bool| -> Vec<usize> {
            (0..5000)
                .filter(|i| i % 2 == 1 && i % 3 == 1 && (i % 5 != 0) == fwd)
                .collect()
        };
        assert_eq!(pair((1, ip(1), ip(9))), want(true));
        assert_eq!(pair((1, ip(9), ip(1))), want(false));
        assert!(pair((1, ip(9), ip(9))).is_empty());
        assert!(pair((0, ip(7), ip(9))).is_empty());
    }

    /// The index grown many times over (its `regrow`), with pairs of one
    /// flow and of several, some retired between the growths: every pair
    /// still lists its flows in the order they began.
    #[test]
    fn the_host_pair_index_keeps_every_pair_as_it_grows() {
        let mut flows = FlowTable::default();
        let mut by_hosts = HostIndex::default();
        let addr = |n: u32| {
            let mut a = [0; 16];
            a[12..].copy_from_slice(&n.to_be_bytes());
            a
        };
        // 30,000 flows over 7,000 source hosts: each pair 4 or 5 flows.
        let pair_of = |i: u32| (0u16, addr(i % 7000), addr(1));
        for i in 0..30_000u32 {
            let s = flows.insert(Flow::new(
                i,
                (pair_of(i).0, pair_of(i).1, pair_of(i).2, i),
                0,
            ));
            by_hosts.insert(&flows, s);
            // Every 3rd flow of the first 9,000 retires at once.
            if i < 9000 && i % 3 == 0 {
                by_hosts.remove(&flows, s);
                flows.remove(s);
            }
        }
        for h in [0u32, 1, 2, 3, 3999, 6999] {
            let got: Vec<u32> = by_hosts
                .get(&flows, &pair_of(h))
                .map(|l| l.iter().map(|s| flows[s].id).collect())
                .unwrap_or_default();
            let want: Vec<u32> = (0..30_000u32)
                .filter(|&i| i % 7000 == h && !(i < 9000 && i % 3 == 0))
                .collect();
            assert_eq!(got, want, "host {h}");
        }
        assert!(by_hosts.get(&flows, &(0, addr(7000), addr(1))).is_none());
    }

    /// Pairs of one flow each coming and going, over and over: the live
    /// ones are found, the retired ones not, and the buckets they left are
    /// reused (the index stays the size of the pairs live at once).
    #[test]
    fn the_host_pair_index_follows_the_pairs_live() {
        let mut flows = FlowTable::default();
        let mut by_hosts = HostIndex::default();
        let addr = |n: u32| {
            let mut a = [0; 16];
            a[12..].copy_from_slice(&n.to_be_bytes());
            a
        };
        let pair_of = |n: u32| (0u16, addr(n), addr(n + 1));
        let mut live: Vec<(usize, u32)> = Vec::new();
        for n in 0..40_000u32 {
            let (t, s, d) = pair_of(n);
            let i = flows.insert(Flow::new(n, (t, s, d, n), 0));
            by_hosts.insert(&flows, i);
            live.push((i, n));
            if live.len() > 1000 {
                let (j, _) = live.remove(0);
                by_hosts.remove(&flows, j);
                flows.remove(j);
            }
        }
        for &(i, n) in &live {
            by_hosts.prefetch(pair_hash(&pair_of(n)));
            let got: Vec<usize> = by_hosts.get(&flows, &pair_of(n)).unwrap().iter().collect();
            assert_eq!(got, [i]);
        }
        for n in [0u32, 1, 500, 38_999] {
            assert!(by_hosts.get(&flows, &pair_of(n)).is_none(), "{n} retired");
        }
        assert_eq!(by_hosts.len, 1000);
        assert!(
            by_hosts.tags.len() <= 4096,
            "{} buckets",
            by_hosts.tags.len()
        );
    }

    /// A retired flow leaves its pair: the first of its pair's flows, one
    /// after it, and a pair's last.
    #[test]
    fn a_removed_flow_leaves_its_pair() {
        let mut flows = FlowTable::default();
        let mut by_hosts = HostIndex::default();
        let key = |i: u32| (0u16, ip((i / 3) as u8), ip(9), i);
        for i in 0..6u32 {
            flows.insert(Flow::new(i, key(i), 0));
            by_hosts.insert(&flows, i as usize);
        }
        for i in [0usize, 4, 3, 5] {
            by_hosts.remove(&flows, i);
            flows.remove(i);
        }
        let pair = |by_hosts: &HostIndex, flows: &FlowTable, h: u8| -> Vec<usize> {
            by_hosts
                .get(flows, &(0, ip(h), ip(9)))
                .map(|l| l.iter().collect())
                .unwrap_or_default()
        };
        assert_eq!(pair(&by_hosts, &flows, 0), [1, 2]);
        assert!(pair(&by_hosts, &flows, 1).is_empty());
        // Host 1's list of further flows went with them, for the next.
        assert_eq!(by_hosts.free, [1]);
        assert!(by_hosts.lists[1].is_empty());
        let i = flows.insert(Flow::new(6, key(4), 0));
        by_hosts.insert(&flows, i);
        assert_eq!(pair(&by_hosts, &flows, 1), [i]);
    }
}
