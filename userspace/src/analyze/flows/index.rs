//! The flow table's indexes: a flow by its key, and the flows of a host
//! pair. Their buckets hold flow indexes only; the keys are read from the
//! flows themselves. A map of keys to indexes held each 40-byte key a
//! second time: at a million QPs (two million flows) the key map and the
//! host-pair map were ~100 and ~165 bytes a flow, now ~10 and ~18
//! (docs/benchmarks.md, "Per-flow memory").
//!
//! They grow by rebuilding in the order of the flows' slots
//! ([`HostIndex`]'s `regrow`, [`FlowIndex`]'s own), not by hashbrown's rehash: that read each indexed
//! flow's key in bucket order, a cache miss per flow (the indexes' growth
//! was ~12 % of `report`'s CPU at 100k QPs).

use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::{FlowTable, HostPair};
use crate::analyze::compact::Opt32;
use crate::analyze::hash::FastState;
use crate::analyze::rows::FlowKey;

/// A key's hash in a [`FlowIndex`] (its hasher's: only that index's
/// [`FlowIndex::insert_hashed`] takes it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyHash(u64);

/// A bucket's tag: none here yet.
const EMPTY: u8 = 0;
/// A bucket's tag: its flow left ([`FlowIndex::remove`]); probing goes on
/// past it, an insert may take it.
const LEFT: u8 = 1;

/// Flows by key: open addressing with linear probing over two arrays, a
/// byte a bucket of tags (the top 7 bits of the key's hash, with the high
/// bit set) and four bytes of flow slots — 5 bytes a bucket, as hashbrown's
/// table of `u32` was. Its own table so that a bucket's place is known
/// before the lookup: [`FlowIndex::prefetch`] starts loading a frame's
/// bucket and flow while the frames before it are analysed (the lookup's
/// cache misses on the bucket and on the flow's key were ~14 % of `report`'s
/// CPU at 100k QPs: docs/benchmarks.md, "speed1").
#[derive(Default)]
pub(crate) struct FlowIndex {
    hasher: FastState,
    /// [`EMPTY`], [`LEFT`] or a key's tag; a power of two long, or empty.
    tags: Vec<u8>,
    slots: Vec<u32>,
    /// Flows indexed.
    len: usize,
    /// Buckets not [`EMPTY`]: `len` and the [`LEFT`] ones.
    used: usize,
}

/// A flow key's hash: its fields packed into three words (the two
/// addresses whole, the tap and QPN in one), three rounds of the hasher
/// instead of the six a field-by-field `Hash` makes of the tuple (each
/// address's length first, then its bytes; docs/benchmarks.md, "cpu3").
fn key_hash(hasher: &FastState, key: &FlowKey) -> u64 {
    let (iface, src, dst, qp) = *key;
    let low = u64::from(iface) | u64::from(qp) << 16;
    hasher.hash_one((u128::from_ne_bytes(src), u128::from_ne_bytes(dst), low))
}

/// A host pair's hash, as [`key_hash`]'s.
fn pair_hash(hasher: &FastState, pair: &HostPair) -> u64 {
    let (iface, src, dst) = *pair;
    hasher.hash_one((u128::from_ne_bytes(src), u128::from_ne_bytes(dst), iface))
}

fn tag(hash: u64) -> u8 {
    0x80 | (hash >> 57) as u8
}

impl FlowIndex {
    /// The index of the flow with `key` in `flows`.
    pub(crate) fn get(&self, flows: &FlowTable, key: &FlowKey) -> Option<usize> {
        self.find(flows, key).ok()
    }

    /// The index of the flow with `key` in `flows`, or the key's hash for
    /// [`Self::insert_hashed`]: a new flow's key is hashed once.
    pub(crate) fn find(&self, flows: &FlowTable, key: &FlowKey) -> Result<usize, KeyHash> {
        self.find_hashed(flows, key, self.hash(key))
    }

    /// [`Self::find`] with the key's hash already made ([`Self::hash`]):
    /// the pipeline hashes a frame's key once, for its two prefetch steps
    /// and its lookup.
    pub(crate) fn find_hashed(
        &self,
        flows: &FlowTable,
        key: &FlowKey,
        hash: KeyHash,
    ) -> Result<usize, KeyHash> {
        debug_assert_eq!(hash.0, self.hash(key).0, "the hash of another key");
        let found = self.probe(hash.0, |slot| flows[slot as usize].key() == *key);
        found.map(|s| s as usize).ok_or(hash)
    }

    /// `key`'s hash in this index.
    pub(crate) fn hash(&self, key: &FlowKey) -> KeyHash {
        KeyHash(key_hash(&self.hasher, key))
    }

    /// The slot of the first bucket from `hash`'s place with its tag whose
    /// slot `is` accepts, before an empty bucket.
    fn probe(&self, hash: u64, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        let mask = self.tags.len().checked_sub(1)?;
        let t = tag(hash);
        let mut p = hash as usize & mask;
        loop {
            match self.tags[p] {
                EMPTY => return None,
                x if x == t && is(self.slots[p]) => return Some(self.slots[p]),
                _ => p = (p + 1) & mask,
            }
        }
    }

    /// Starts loading what a lookup of `key` reads into the cache, a step
    /// of it a call: `Bucket`, its tag and slot; `Flow`, once the bucket is
    /// in the cache (a call before), the record of the flow its tag names.
    pub(crate) fn prefetch(&self, flows: &FlowTable, hash: KeyHash, step: Prefetch) {
        let Some(mask) = self.tags.len().checked_sub(1) else {
            return;
        };
        let hash = hash.0;
        match step {
            Prefetch::Bucket => {
                let p = hash as usize & mask;
                super::table::prefetch_lines(&self.tags[p], 1);
                super::table::prefetch_lines(&self.slots[p], 4);
            }
            Prefetch::Flow => {
                // The first slot with the key's tag, unconfirmed: a wrong
                // one (one probe in 128) loads a record for nothing.
                if let Some(slot) = self.probe(hash, |_| true) {
                    flows.prefetch(slot as usize);
                }
            }
        }
    }

    /// Indexes flow `i` of `flows` by its key, whose hash [`Self::find`]
    /// returned (the key was not indexed).
    pub(crate) fn insert_hashed(&mut self, flows: &FlowTable, i: usize, hash: KeyHash) {
        // Three quarters full at most: a miss probes ~8 buckets.
        if (self.used + 1) * 4 > self.tags.len() * 3 {
            self.rebuild(flows, i);
        }
        let mask = self.tags.len() - 1;
        let mut p = hash.0 as usize & mask;
        while self.tags[p] > LEFT {
            p = (p + 1) & mask;
        }
        self.used += usize::from(self.tags[p] == EMPTY);
        self.tags[p] = tag(hash.0);
        self.slots[p] = i as u32;
        self.len += 1;
    }

    /// Drops flow `i` of `flows` (still in its slot: its key is read from
    /// it) from the index.
    pub(crate) fn remove(&mut self, flows: &FlowTable, i: usize) {
        let Some(mask) = self.tags.len().checked_sub(1) else {
            return;
        };
        let hash = key_hash(&self.hasher, &flows[i].key());
        let (t, mut p) = (tag(hash), hash as usize & mask);
        loop {
            match self.tags[p] {
                EMPTY => return,
                x if x == t && self.slots[p] == i as u32 => break,
                _ => p = (p + 1) & mask,
            }
        }
        self.tags[p] = LEFT;
        self.len -= 1;
    }

    /// Makes room for one more flow, `new` (in `flows`, not indexed yet):
    /// the same buckets without the left ones when half or less would be in
    /// use, else twice as many. Every other live flow of `flows` is indexed
    /// (the analyzer indexes a flow as it makes it and drops it as it
    /// retires it), so they are read from the table in the order of their
    /// slots: hashing their keys walks the flow table forward instead of
    /// jumping about it, and no list of slots is gathered and sorted (that
    /// sort was a quarter of the rebuilds' cost; docs/benchmarks.md, "cpu2").
    fn rebuild(&mut self, flows: &FlowTable, new: usize) {
        debug_assert_eq!(
            self.len + 1,
            flows.live(),
            "the index holds every live flow but the new"
        );
        let n = self.tags.len();
        let room = if (self.len + 1) * 8 <= n * 3 {
            n
        } else {
            (2 * n).max(16)
        };
        self.tags = vec![EMPTY; room];
        self.slots = vec![0; room];
        (self.len, self.used) = (0, 0);
        for (i, f) in flows.enumerate().filter(|&(i, _)| i != new) {
            let hash = self.hash(&f.key());
            self.insert_hashed(flows, i, hash);
        }
    }
}

/// The step of a lookup [`FlowIndex::prefetch`] prepares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Prefetch {
    Bucket,
    Flow,
}

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
#[derive(Debug)]
struct Pair {
    first: u32,
    more: Opt32,
}

/// Flows by host pair `(iface, source, destination)`.
#[derive(Default)]
pub(crate) struct HostIndex {
    hasher: FastState,
    table: HashTable<Pair>,
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
        let hash = pair_hash(&self.hasher, pair);
        let p = self.table.find(hash, |l| hosts(flows, l.first) == *pair)?;
        let more = p.more.slot().map_or(&[][..], |m| &self.lists[m]);
        Some(HostFlows {
            first: p.first,
            more,
        })
    }

    /// Adds flow `i` of `flows` (not added yet) to its host pair's flows.
    pub(crate) fn insert(&mut self, flows: &FlowTable, i: usize) {
        let hasher = &self.hasher;
        let pair = hosts(flows, i as u32);
        let hash = pair_hash(hasher, &pair);
        if let Some(l) = self.table.find_mut(hash, |l| hosts(flows, l.first) == pair) {
            let m = match l.more.slot() {
                Some(m) => m,
                None => {
                    let m = match self.free.pop() {
                        Some(m) => m as usize,
                        None => {
                            self.lists.push(Vec::new());
                            self.lists.len() - 1
                        }
                    };
                    l.more = Opt32::of_slot(Some(m));
                    m
                }
            };
            self.lists[m].push(i as u32);
            return;
        }
        self.regrow(flows);
        let hasher = &self.hasher;
        let one = Pair {
            first: i as u32,
            more: Opt32::NONE,
        };
        self.table
            .insert_unique(hash, one, |l| pair_hash(hasher, &hosts(flows, l.first)));
    }

    /// Makes room for one more pair when the table is full: a table of
    /// twice the pairs, filled in the order of their first flows' slots, so
    /// that hashing them (each first flow's hosts read) walks the flow
    /// table forward instead of jumping about it. The pairs, their number
    /// and what each holds are unchanged; only the buckets move. The old
    /// table is read once, in its own order, into a bitmap of the first
    /// flows' slots and a list of the pairs with more flows (a few): no list
    /// of every pair is gathered and sorted (that sort was most of the
    /// growth's cost; docs/benchmarks.md, "cpu3"), and the old table goes
    /// before the new one is made.
    fn regrow(&mut self, flows: &FlowTable) {
        let n = self.table.len();
        if n < self.table.capacity() {
            return;
        }
        let mut firsts = vec![0u64; flows.slots().div_ceil(64)];
        let mut more: Vec<(u32, u32)> = Vec::new();
        for p in self.table.iter() {
            firsts[p.first as usize / 64] |= 1 << (p.first % 64);
            if let Some(m) = p.more.slot() {
                more.push((p.first, m as u32));
            }
        }
        more.sort_unstable();
        self.table = HashTable::new();
        let hasher = &self.hasher;
        let hash = |first: u32| pair_hash(hasher, &hosts(flows, first));
        let mut grown = HashTable::with_capacity((2 * n).max(16));
        let mut more = more.into_iter().peekable();
        for (w, &word) in firsts.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let first = (w * 64) as u32 + bits.trailing_zeros();
                bits &= bits - 1;
                let m = more.next_if(|&(f, _)| f == first).map(|(_, m)| m as usize);
                let pair = Pair {
                    first,
                    more: Opt32::of_slot(m),
                };
                grown.insert_unique(hash(first), pair, |l| hash(l.first));
            }
        }
        self.table = grown;
    }

    /// Drops flow `i` of `flows` (still in its slot: its hosts are read
    /// from it) from its host pair's flows; the pair goes with its last.
    pub(crate) fn remove(&mut self, flows: &FlowTable, i: usize) {
        let pair = hosts(flows, i as u32);
        let hash = pair_hash(&self.hasher, &pair);
        let Ok(mut e) = self
            .table
            .find_entry(hash, |l| hosts(flows, l.first) == pair)
        else {
            return;
        };
        let l = e.get_mut();
        let i = i as u32;
        let Some(m) = l.more.slot() else {
            if l.first == i {
                e.remove();
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

    /// Indexes flow `i` by its key as a new flow is: the miss's hash.
    fn index(by_key: &mut FlowIndex, flows: &FlowTable, i: usize) {
        let hash = by_key.find(flows, &flows[i].key()).expect_err("a new key");
        by_key.insert_hashed(flows, i, hash);
    }

    #[test]
    fn flows_are_found_by_key_and_by_host_pair() {
        let mut flows = FlowTable::default();
        let (mut by_key, mut by_hosts) = (FlowIndex::default(), HostIndex::default());
        // 3 host pairs on 2 taps, 5000 QPs: more flows than a chunk holds.
        let key = |i: u32| ((i % 2) as u16, ip((i % 3) as u8), ip(9), i);
        for i in 0..5000u32 {
            flows.insert(Flow::new(i, key(i), 0));
            index(&mut by_key, &flows, i as usize);
            by_hosts.insert(&flows, i as usize);
        }
        for i in [0u32, 1, 4095, 4096, 4999] {
            assert_eq!(by_key.get(&flows, &key(i)), Some(i as usize));
        }
        assert_eq!(by_key.get(&flows, &(0, ip(0), ip(9), 1)), None);
        assert_eq!(by_key.get(&flows, &(0, ip(0), ip(9), 5000)), None);
        // Tap 1, host 1 → 9: the odd i with i % 3 == 1, in the order they began.
        let pair: Vec<usize> = by_hosts
            .get(&flows, &(1, ip(1), ip(9)))
            .map(|l| l.iter().collect())
            .unwrap_or_default();
        let expected: Vec<usize> = (0..5000).filter(|i| i % 2 == 1 && i % 3 == 1).collect();
        assert_eq!(pair.len(), 834);
        assert_eq!(pair, expected);
        assert!(by_hosts.get(&flows, &(1, ip(9), ip(1))).is_none());
    }

    /// Flows retiring and new ones taking their slots, over and over: every
    /// live flow is found, no retired one is, and the buckets the retired
    /// ones left are reused (the key index stays the size of the flows
    /// live at once, not of those ever seen).
    #[test]
    fn the_key_index_follows_the_flows_live() {
        let mut flows = FlowTable::default();
        let mut by_key = FlowIndex::default();
        let key = |n: u32| (0u16, ip((n % 7) as u8), ip(9), n);
        let mut live: Vec<(usize, u32)> = Vec::new();
        // Nothing indexed yet: nothing found, nothing to prepare.
        by_key.prefetch(&flows, by_key.hash(&key(0)), Prefetch::Bucket);
        by_key.prefetch(&flows, by_key.hash(&key(0)), Prefetch::Flow);
        assert_eq!(by_key.get(&flows, &key(0)), None);
        for n in 0..40_000u32 {
            let i = flows.insert(Flow::new(n, key(n), 0));
            index(&mut by_key, &flows, i);
            live.push((i, n));
            // Keep ~1000 live: the oldest retires.
            if live.len() > 1000 {
                let (j, _) = live.remove(0);
                by_key.remove(&flows, j);
                flows.remove(j);
            }
        }
        for &(i, n) in &live {
            by_key.prefetch(&flows, by_key.hash(&key(n)), Prefetch::Bucket);
            by_key.prefetch(&flows, by_key.hash(&key(n)), Prefetch::Flow);
            assert_eq!(by_key.get(&flows, &key(n)), Some(i));
        }
        for n in [0u32, 1, 500, 38_999] {
            assert_eq!(by_key.get(&flows, &key(n)), None, "{n} retired");
        }
        assert_eq!(by_key.len, 1000);
        assert!(by_key.tags.len() <= 4096, "{} buckets", by_key.tags.len());
    }

    /// The host-pair index grown many times over (its `regrow`), with
    /// pairs of one flow and of several, some retired between the growths:
    /// every pair still lists its flows in the order they began.
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

    /// A retired flow leaves both indexes (docs/analysis.md, "Retirement"):
    /// the first of its pair's flows, one after it, and a pair's last.
    #[test]
    fn a_removed_flow_is_found_no_more() {
        let mut flows = FlowTable::default();
        let (mut by_key, mut by_hosts) = (FlowIndex::default(), HostIndex::default());
        let key = |i: u32| (0u16, ip((i / 3) as u8), ip(9), i);
        for i in 0..6u32 {
            flows.insert(Flow::new(i, key(i), 0));
            index(&mut by_key, &flows, i as usize);
            by_hosts.insert(&flows, i as usize);
        }
        for i in [0usize, 4, 3, 5] {
            by_key.remove(&flows, i);
            by_hosts.remove(&flows, i);
            flows.remove(i);
        }
        fn pair(by_hosts: &HostIndex, flows: &FlowTable, h: u8) -> Vec<usize> {
            by_hosts
                .get(flows, &(0, ip(h), ip(9)))
                .map(|l| l.iter().collect())
                .unwrap_or_default()
        }
        assert_eq!(pair(&by_hosts, &flows, 0), [1, 2]);
        assert!(pair(&by_hosts, &flows, 1).is_empty());
        // Host 1's list of further flows went with them, for the next.
        assert_eq!(by_hosts.free, [1]);
        assert!(by_hosts.lists[1].is_empty());
        assert_eq!(by_key.get(&flows, &key(0)), None);
        assert_eq!(by_key.get(&flows, &key(2)), Some(2));
        assert_eq!(by_key.get(&flows, &key(4)), None);
        // A new flow takes a freed slot and is found there.
        let i = flows.insert(Flow::new(6, key(4), 0));
        index(&mut by_key, &flows, i);
        by_hosts.insert(&flows, i);
        assert_eq!(by_key.get(&flows, &key(4)), Some(i));
        assert_eq!(pair(&by_hosts, &flows, 1), [i]);
    }

    /// The hot record's size: what every flow costs (docs/analysis.md,
    /// "Memory"); a field added to it should be one every packet touches.
    #[test]
    fn the_hot_flow_record_stays_small() {
        assert_eq!(std::mem::size_of::<Flow>(), 160);
    }
}
