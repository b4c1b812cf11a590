//! The flow table's indexes: a flow by its key, here, and the flows of a
//! host pair (`hosts.rs`), with the hashes they share. Their buckets hold
//! flow indexes only; the keys are read from the flows themselves. A map of
//! keys to indexes held each 40-byte key a second time: at a million QPs
//! (two million flows) the key map and the host-pair map were ~100 and
//! ~165 bytes a flow, now ~10 and ~18 (docs/benchmarks.md, "Per-flow
//! memory").
//!
//! They grow by rebuilding in the order of the flows' slots
//! ([`super::HostIndex`]'s `regrow`, [`FlowIndex`]'s own), not by
//! hashbrown's rehash: that read each indexed flow's key in bucket order, a
//! cache miss per flow (the indexes' growth was ~12 % of `report`'s CPU at
//! 100k QPs).

use std::hash::BuildHasher;
use std::sync::LazyLock;

use super::{FlowTable, HostPair};
use crate::analyze::cache::prefetch_lines;
use crate::analyze::hash::FastState;
use crate::analyze::rows::FlowKey;

/// A flow key's hashes: the key's, for a [`FlowIndex`], and its host
/// pair's, for a [`super::HostIndex`] (made once a frame, both from one
/// round of the hasher over the addresses: [`key_hashes`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyHash {
    key: u64,
    pair: PairHash,
    /// Its frame is a response ([`KeyHash::of_response`]): a new flow's
    /// first pairs with a flow of the reverse pair.
    response: bool,
}

impl KeyHash {
    /// The hash of the key's host pair.
    pub(crate) fn pair(self) -> PairHash {
        self.pair
    }

    /// Marks the hash as a response frame's (what the prefetch of its host
    /// pair's bucket reads: [`crate::analyze::Analyzer::prefetch`]).
    pub(crate) fn of_response(self, response: bool) -> Self {
        KeyHash { response, ..self }
    }

    pub(crate) fn response(self) -> bool {
        self.response
    }
}

/// A host pair's hash in a [`super::HostIndex`] ([`pair_hash`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PairHash(pub(super) u64);

impl PairHash {
    /// The reverse pair's hash (a pair of a host with itself is its own
    /// reverse: then this is a hash of no pair, which only a prefetch may
    /// take).
    pub(crate) fn reverse(self) -> Self {
        PairHash(self.0 ^ 1 << 57)
    }
}

/// A bucket's tag: none here yet.
pub(super) const EMPTY: u8 = 0;
/// A bucket's tag: its flow left ([`FlowIndex::remove`]); probing goes on
/// past it, an insert may take it.
pub(super) const LEFT: u8 = 1;

/// Flows by key: open addressing with linear probing over two arrays, a
/// byte a bucket of tags (the top 7 bits of the key's hash, with the high
/// bit set) and four bytes of flow slots — 5 bytes a bucket, as hashbrown's
/// table of `u32` was. Its own table so that a bucket's place is known
/// before the lookup: [`FlowIndex::prefetch_bucket`] and
/// [`FlowIndex::prefetch_flow`] start loading a frame's bucket and flow
/// while the frames before it are analysed (the lookup's cache misses on
/// the bucket and on the flow's key were ~14 % of `report`'s CPU at 100k
/// QPs: docs/benchmarks.md, "speed1").
#[derive(Default)]
pub(crate) struct FlowIndex {
    /// [`EMPTY`], [`LEFT`] or a key's tag; a power of two long, or empty.
    tags: Vec<u8>,
    slots: Vec<u32>,
    /// Flows indexed.
    len: usize,
    /// Buckets not [`EMPTY`]: `len` and the [`LEFT`] ones.
    used: usize,
}

/// The hasher of both indexes: one a process, seeded as every map's is
/// (`analyze/hash.rs`), so that a key's hash can carry its host pair's.
fn hasher() -> &'static FastState {
    static HASHER: LazyLock<FastState> = LazyLock::new(FastState::default);
    &HASHER
}

/// A host pair's hash: its two addresses (whole, in their order, as
/// `u128`s) and its tap, three rounds of the hasher; the same for the pair
/// and its reverse but for bit 57, the tag's lowest. So a pair and its
/// reverse begin probing at the same bucket of a [`super::HostIndex`] (a new
/// flow's insert and a response's pairing, whose pair is the reverse of
/// its own, load one line between them: docs/benchmarks.md, "cpu1m"), and
/// their tags differ.
pub(super) fn pair_hash(pair: &HostPair) -> PairHash {
    let (iface, src, dst) = *pair;
    let (a, b) = (u128::from_ne_bytes(src), u128::from_ne_bytes(dst));
    let (lo, hi, back) = if a <= b { (a, b, 0) } else { (b, a, 1) };
    PairHash(hasher().hash_one((lo, hi, iface)) ^ (back << 57))
}

/// A flow key's hashes: its host pair's ([`pair_hash`]), and the key's
/// made from it and the QPN by a folded multiply (as the hasher's own
/// rounds are): the addresses are hashed once for both indexes, where the
/// tuple's field-by-field `Hash` made six rounds for the key alone
/// (docs/benchmarks.md, "cpu3", "cpu1m").
pub(super) fn key_hashes(key: &FlowKey) -> KeyHash {
    let (iface, src, dst, qp) = *key;
    let pair = pair_hash(&(iface, src, dst));
    let m = u128::from(pair.0 ^ u64::from(qp)) * 0x9e37_79b9_7f4a_7c15;
    KeyHash {
        key: (m as u64) ^ (m >> 64) as u64,
        pair,
        response: false,
    }
}

/// A bucket's tag for `hash`: its top 7 bits, the high bit set.
pub(super) fn tag(hash: u64) -> u8 {
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
        debug_assert_eq!(hash.key, key_hashes(key).key, "the hash of another key");
        let found = self.probe(hash.key, |slot| flows[slot as usize].key() == *key);
        found.map(|s| s as usize).ok_or(hash)
    }

    /// `key`'s hashes, its host pair's with it.
    pub(crate) fn hash(&self, key: &FlowKey) -> KeyHash {
        key_hashes(key)
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

    /// Starts loading the bucket where a lookup of the key of `hash`
    /// begins, its tag and slot.
    pub(crate) fn prefetch_bucket(&self, hash: KeyHash) {
        if let Some(mask) = self.tags.len().checked_sub(1) {
            let p = hash.key as usize & mask;
            prefetch_lines(&self.tags[p], 1);
            prefetch_lines(&self.slots[p], 4);
        }
    }

    /// Once the bucket is in the cache ([`Self::prefetch_bucket`], a call
    /// before), starts loading the record of the flow its tag names;
    /// whether there was one (if not, the key is a new flow's).
    pub(crate) fn prefetch_flow(&self, flows: &FlowTable, hash: KeyHash) -> bool {
        // The first slot with the key's tag, unconfirmed: a wrong one (one
        // probe in 128) loads a record for nothing.
        let slot = self.probe(hash.key, |_| true);
        if let Some(slot) = slot {
            flows.prefetch(slot as usize);
        }
        slot.is_some()
    }

    /// Indexes flow `i` of `flows` by its key, whose hash [`Self::find`]
    /// returned (the key was not indexed).
    pub(crate) fn insert_hashed(&mut self, flows: &FlowTable, i: usize, hash: KeyHash) {
        // Three quarters full at most: a miss probes ~8 buckets.
        if (self.used + 1) * 4 > self.tags.len() * 3 {
            self.rebuild(flows, i);
        }
        self.put(hash.key, i as u32);
    }

    /// Puts flow slot `slot`, not indexed, in the first free bucket from
    /// its key's hash's place.
    fn put(&mut self, hash: u64, slot: u32) {
        let mask = self.tags.len() - 1;
        let mut p = hash as usize & mask;
        while self.tags[p] > LEFT {
            p = (p + 1) & mask;
        }
        self.used += usize::from(self.tags[p] == EMPTY);
        self.tags[p] = tag(hash);
        self.slots[p] = slot;
        self.len += 1;
    }

    /// Starts loading the bucket where the probe for `hash` begins.
    fn prefetch_place(&self, hash: u64) {
        let p = hash as usize & (self.tags.len() - 1);
        prefetch_lines(&self.tags[p], 1);
        prefetch_lines(&self.slots[p], 4);
    }

    /// Drops flow `i` of `flows` (still in its slot: its key is read from
    /// it) from the index.
    pub(crate) fn remove(&mut self, flows: &FlowTable, i: usize) {
        let Some(mask) = self.tags.len().checked_sub(1) else {
            return;
        };
        let hash = key_hashes(&flows[i].key()).key;
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
        let flows = flows.enumerate().filter(|&(i, _)| i != new);
        let keys = flows.map(|(i, f)| (key_hashes(&f.key()).key, i as u32));
        put_ahead(self, keys, Self::prefetch_place, Self::put);
    }
}

/// How many puts ahead [`put_ahead`] loads a bucket.
const PUT_AHEAD: usize = 16;

/// Hands each `(hash, item)` of `items` to `put`, in order, `PUT_AHEAD`
/// items after handing its hash to `prefetch`: an index filling a table
/// twice its last size (a rebuild) puts its entries at scattered places of
/// a table larger than the cache (36 MB for the host pairs at 1M QPs),
/// each put a miss that the next one waited for; loaded ahead, the misses
/// overlap. The puts, and so where each entry lands, are the same.
pub(super) fn put_ahead<S, T>(
    s: &mut S,
    items: impl Iterator<Item = (u64, T)>,
    prefetch: fn(&S, u64),
    put: fn(&mut S, u64, T),
) {
    let mut ahead = std::collections::VecDeque::with_capacity(PUT_AHEAD);
    for (hash, item) in items {
        if ahead.len() == PUT_AHEAD
            && let Some((h, x)) = ahead.pop_front()
        {
            put(s, h, x);
        }
        prefetch(s, hash);
        ahead.push_back((hash, item));
    }
    for (h, x) in ahead {
        put(s, h, x);
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
    fn puts_ahead_come_in_order_after_their_prefetch() {
        use std::cell::RefCell;
        // The hashes prefetched so far; each put with how many were then.
        type Log = (RefCell<Vec<u64>>, Vec<(u64, u32, usize)>);
        for n in [
            0,
            1,
            PUT_AHEAD - 1,
            PUT_AHEAD,
            PUT_AHEAD + 1,
            3 * PUT_AHEAD + 5,
        ] {
            let mut log: Log = Default::default();
            put_ahead(
                &mut log,
                (0..n as u64).map(|h| (h * 7, h as u32)),
                |l, h| l.0.borrow_mut().push(h),
                |l, h, x| {
                    let loaded = l.0.borrow().len();
                    l.1.push((h, x, loaded));
                },
            );
            let want: Vec<u64> = (0..n as u64).map(|h| h * 7).collect();
            assert_eq!(*log.0.borrow(), want, "every hash prefetched, in order");
            for (k, &(h, x, loaded)) in log.1.iter().enumerate() {
                assert_eq!((h, x), (k as u64 * 7, k as u32), "put in order");
                // Loaded PUT_AHEAD items ahead, the last ones after all.
                assert_eq!(loaded, (k + PUT_AHEAD).min(n), "item {k} of {n}");
            }
            assert_eq!(log.1.len(), n);
        }
    }

    #[test]
    fn flows_are_found_by_key() {
        let mut flows = FlowTable::default();
        let mut by_key = FlowIndex::default();
        // 3 host pairs on 2 taps, 5000 QPs: more flows than a chunk holds.
        let key = |i: u32| ((i % 2) as u16, ip((i % 3) as u8), ip(9), i);
        for i in 0..5000u32 {
            flows.insert(Flow::new(i, key(i), 0));
            index(&mut by_key, &flows, i as usize);
        }
        for i in [0u32, 1, 4095, 4096, 4999] {
            assert_eq!(by_key.get(&flows, &key(i)), Some(i as usize));
        }
        assert_eq!(by_key.get(&flows, &(0, ip(0), ip(9), 1)), None);
        assert_eq!(by_key.get(&flows, &(0, ip(0), ip(9), 5000)), None);
        // The same QP the other way is another flow.
        assert_eq!(by_key.get(&flows, &(0, ip(9), ip(0), 0)), None);
    }

    /// A key's hash and its pair's: the pair's the same both ways but for
    /// the tag's lowest bit, the key's another each way and QP.
    #[test]
    fn a_pair_and_its_reverse_start_at_one_bucket() {
        let (a, b) = ((3u16, ip(1), ip(2), 7u32), (3u16, ip(2), ip(1), 7u32));
        let (ha, hb) = (key_hashes(&a), key_hashes(&b));
        assert_eq!(ha.pair.0 ^ hb.pair.0, 1 << 57);
        assert_ne!(tag(ha.pair.0), tag(hb.pair.0));
        assert_ne!(ha.key, hb.key);
        assert_ne!(ha.key, key_hashes(&(3, ip(1), ip(2), 8)).key);
        assert_eq!(ha.pair.0, pair_hash(&(3, ip(1), ip(2))).0);
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
        by_key.prefetch_bucket(by_key.hash(&key(0)));
        assert!(!by_key.prefetch_flow(&flows, by_key.hash(&key(0))));
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
            by_key.prefetch_bucket(by_key.hash(&key(n)));
            assert!(by_key.prefetch_flow(&flows, by_key.hash(&key(n))));
            assert_eq!(by_key.get(&flows, &key(n)), Some(i));
        }
        for n in [0u32, 1, 500, 38_999] {
            assert_eq!(by_key.get(&flows, &key(n)), None, "{n} retired");
        }
        assert_eq!(by_key.len, 1000);
        assert!(by_key.tags.len() <= 4096, "{} buckets", by_key.tags.len());
    }

    /// A retired flow leaves the index (docs/analysis.md, "Retirement"),
    /// and a new flow taking its slot is found there.
    #[test]
    fn a_removed_flow_is_found_no_more() {
        let mut flows = FlowTable::default();
        let mut by_key = FlowIndex::default();
        let key = |i: u32| (0u16, ip((i / 3) as u8), ip(9), i);
        for i in 0..6u32 {
            flows.insert(Flow::new(i, key(i), 0));
            index(&mut by_key, &flows, i as usize);
        }
        for i in [0usize, 4, 3, 5] {
            by_key.remove(&flows, i);
            flows.remove(i);
        }
        assert_eq!(by_key.get(&flows, &key(0)), None);
        assert_eq!(by_key.get(&flows, &key(2)), Some(2));
        assert_eq!(by_key.get(&flows, &key(4)), None);
        let i = flows.insert(Flow::new(6, key(4), 0));
        index(&mut by_key, &flows, i);
        assert_eq!(by_key.get(&flows, &key(4)), Some(i));
    }

    /// The hot record's size: what every flow costs (docs/analysis.md,
    /// "Memory"); a field added to it should be one every packet touches.
    #[test]
    fn the_hot_flow_record_stays_small() {
        assert_eq!(std::mem::size_of::<Flow>(), 160);
    }
}
