//! Mirror duplicates (`docs/analysis.md`, "Mirror duplicates").
//!
//! A port mirrored in both directions, or two mirrored ports on one path,
//! record the same frame twice, nanoseconds to microseconds apart. A copy
//! is not a retransmission: a resend comes only after a NAK or a timeout,
//! which takes at least a round trip. A BTH frame is a **mirror copy** when
//! the same tap recorded a frame with the same addresses, QP, PSN, opcode,
//! ICRC (when both were captured whole; mirrors often truncate) and payload
//! length at most `window` earlier and no NAK came back on its paired flow
//! since a window before that original (a NAK makes a fast resend
//! legitimate, also of packets sent after the NAK passed the tap and before
//! the sender acted on it). Copies are counted per tap and per flow and take no part in
//! any other analysis.
//!
//! A frame of a transport beside RoCE is keyed by its flow's id and the
//! fields its transport compares ([`Owner::Transport`], [`CopyFields`]):
//! a UET frame, which has no ICRC, by its PDC direction (addresses and
//! `spdcid`), PDS type, flags and PSN (an ACK's cumulative PSN) and a
//! digest of every other field the walk read of it
//! (`analyze::transports::uet::copy_fields`), with the NACKs of its reverse direction
//! in place of a QP's NAKs.
//!
//! Frames without payload (ACKs, NAKs, CNPs) repeat byte for byte by design
//! — a NIC may send CNPs to a QP every few µs, all alike — so for them the
//! window is at most [`CONTROL_WINDOW_NS`], the time a switch takes to
//! forward a small frame.
//!
//! Memory is bounded by the frames the taps record within one window, at
//! most [`MOST_FRAMES`].

use std::collections::BTreeMap;

use super::hash::FastState;
use rocescope_common::proto::ib::QPN_MASK;
use rocescope_common::{Kind, PacketRecord};
use serde::Serialize;
use std::hash::BuildHasher;

/// Default copy window: longer than a switch's ingress→egress latency, shorter
/// than any retransmission timeout a NIC offers in practice (4.096 µs × 2^T
/// with T ≥ 2, and NAK round trips).
pub const DEFAULT_WINDOW_NS: u64 = 10_000;

/// Longest copy window for frames without payload: below the smallest CNP
/// interval NICs offer (a few µs), above a switch's forwarding latency for
/// a small frame.
pub const CONTROL_WINDOW_NS: u64 = 500;

/// A frame as the copy check compares it. The addresses, interface and QP
/// are the frame's [`Owner`]: a flow index (the flow table has already
/// looked them up) or, for a CNP, a hash of them, so a key is 20
/// bytes, not the 51 of the fields it stands for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Key {
    /// A flow index, or a CNP key's hash with [`CNP_OWNER`] set.
    owner: u32,
    opcode: u8,
    /// RoCE: the destination QP's bits above the 24 a flow key keeps (0
    /// for every decoded frame): frames that differ there are not copies.
    /// Another transport: its [`CopyFields::flags`].
    qp_high: u8,
    psn: u32,
    /// RoCE: the ICRC; another transport: its [`CopyFields::digest`].
    icrc: u32,
    payload_len: u32,
}

/// Marks a [`Key::owner`] that hashes its own fields (CNPs', and frames
/// of another transport without a flow id), not a flow's id.
const CNP_OWNER: u32 = 1 << 31;

/// In an owner key's last field, above a QP's 24 bits: a frame of another
/// transport with no flow id (UET's RUDI and UUD: no PDC).
const NO_FLOW_ID: u32 = 1 << 24;

/// Whose frame it is: the owner part of its [`Key`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Owner {
    /// A RoCE frame of the flow with this id (`(iface, src, dst,
    /// dest_qp & QPN_MASK)`; an id, not a slot: a slot is reused once its
    /// flow retires).
    Flow(usize),
    /// A CNP: keyed by its own `(iface, src, dst, dest_qp & QPN_MASK)`.
    Cnp,
    /// A frame of a transport beside RoCE: of its flow with this id or,
    /// without one, keyed by its own `(iface, src, dst)`; its fields
    /// compared in place of the BTH's and the ICRC are the function's
    /// (UET's: `analyze::transports::uet::copy_fields`).
    Transport(Option<u32>, fn(&PacketRecord) -> CopyFields),
}

/// What a frame of a transport beside RoCE is compared on, beside its
/// owner and payload length, in place of the BTH's fields and the ICRC.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CopyFields {
    /// Its packet type.
    pub opcode: u8,
    /// Its flags (a resend's flag among them: a resend is no copy).
    pub flags: u8,
    pub psn: u32,
    /// Every other field its walk read, folded into 32 bits: two
    /// different frames alike in all the key's other fields within one
    /// window collide once in 2^32.
    pub digest: u32,
}

/// Copies one tap recorded.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TapDuplicates {
    pub copies: u64,
    /// Time from the original to its copy.
    pub min_gap_ns: u64,
    pub max_gap_ns: u64,
    /// Median of the gaps, from a power-of-two histogram (its bucket's lower bound).
    pub typical_gap_ns: u64,
    /// Copies that carried exactly the same timestamp as their original.
    pub same_timestamp: u64,
    #[serde(skip)]
    pub(crate) histogram: [u64; 32],
}

impl TapDuplicates {
    fn add(&mut self, gap: u64) {
        if self.copies == 0 {
            self.min_gap_ns = gap;
        }
        self.copies += 1;
        self.min_gap_ns = self.min_gap_ns.min(gap);
        self.max_gap_ns = self.max_gap_ns.max(gap);
        self.same_timestamp += u64::from(gap == 0);
        let bucket = (64 - gap.leading_zeros()) as usize;
        self.histogram[bucket.min(31)] += 1;
        let mut seen = 0;
        for (b, &n) in self.histogram.iter().enumerate() {
            seen += n;
            if seen * 2 >= self.copies {
                self.typical_gap_ns = if b == 0 { 0 } else { 1 << (b - 1) };
                break;
            }
        }
    }
}

/// The most frames the window holds (past it the oldest leave early: ~10^11
/// frames a second at 10 µs, only crafted timestamps get there); below 2^31.
const MOST_FRAMES: usize = 1 << 20;

/// A frame in the window: its key, its time, its key's hash's low 32 bits
/// ([`key_hash`], to find its bucket as it leaves without hashing again).
#[derive(Clone, Copy, Debug, Default)]
struct Recent {
    key: Key,
    hash: u32,
    at: u64,
}

/// A bucket of [`MirrorDups::index`]: the number of a key's last frame (31
/// bits, [`LIVE`] set; 0: empty) and its hash's low 32 bits (its home).
#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    seq: u32,
    hash: u32,
}

/// Marks a [`Bucket`] in use; the 31 bits below are a frame's number.
const LIVE: u32 = 1 << 31;

/// The recent frames of every tap.
///
/// The window's frames sit in a ring in the order recorded, numbered as
/// they come, frame `n` at `n` modulo the ring's power-of-two length (no
/// offset to subtract, no wrap to test: a `VecDeque` cost ~45
/// instructions a frame here); the keys are an open-addressed table (linear probing, 8
/// bytes a bucket, at most half full) of the number of each key's last
/// frame. A frame leaving the window takes its key's bucket with it only
/// if it is the key's last frame — its number is in the bucket — and the
/// buckets after it move back: no tombstones to rehash away
/// (docs/benchmarks.md, "cpu2").
#[derive(Debug)]
pub(crate) struct MirrorDups {
    window_ns: u64,
    /// The frames of the window: frame `n` at `n & (ring.len() - 1)`; a
    /// power of two long (or empty).
    ring: Vec<Recent>,
    /// The number of the window's oldest frame (31 bits, wrapping).
    first: u32,
    /// How many frames the window holds (at most `ring.len()`).
    len: usize,
    /// Each key's last frame in `ring`: a power of two long (or empty),
    /// at most half in use.
    index: Vec<Bucket>,
    /// Seeds [`key_hash`] (per run).
    keys: KeySeeds,
    /// Hashes a CNP's, or a flowless frame's of another transport, owner
    /// fields to its
    /// [`Key::owner`]: no state a key (a table of them would grow with
    /// every address pair a run sees, not with the window's frames).
    owners: FastState,
    pub per_tap: BTreeMap<u16, TapDuplicates>,
}

impl MirrorDups {
    pub(crate) fn new(window_ns: u64) -> Self {
        MirrorDups {
            window_ns,
            ring: Vec::new(),
            first: 0,
            len: 0,
            index: Vec::new(),
            keys: KeySeeds::new(),
            owners: FastState::default(),
            per_tap: BTreeMap::new(),
        }
    }

    /// Whether `rec`, a frame of `owner`, is a mirror copy of a frame
    /// recorded within the window; `last_nak` is when its paired flow last
    /// carried a NAK.
    pub(crate) fn is_copy(
        &mut self,
        rec: &PacketRecord,
        owner: Owner,
        last_nak: Option<u64>,
    ) -> bool {
        self.is_copy_with(rec, owner, || last_nak)
    }

    /// [`Self::is_copy`], `last_nak` asked only when a frame of the same
    /// key is in the window (most frames have none: their flow's NAK
    /// history is not read for them).
    pub(crate) fn is_copy_with(
        &mut self,
        rec: &PacketRecord,
        owner: Owner,
        last_nak: impl FnOnce() -> Option<u64>,
    ) -> bool {
        if self.window_ns == 0 {
            return false;
        }
        let now = rec.ts_ns;
        while self.len > 0 {
            let at = self.ring[self.place(self.first)].at;
            if now.saturating_sub(at) <= self.window_ns && self.len < MOST_FRAMES {
                break;
            }
            self.leave();
        }
        let key = self.key(rec, owner);
        let hash = key_hash(&self.keys, &key);
        if (self.len + 1) * 2 > self.index.len() {
            self.grow();
        }
        if self.len == self.ring.len() {
            self.grow_ring();
        }
        let seq = LIVE | (self.first.wrapping_add(self.len as u32) & !LIVE);
        let b = match self.find(hash, &key) {
            Ok(b) => {
                let t = self.ring[self.place(self.index[b].seq)].at;
                let window = if rec.payload_len == 0 || rec.kind() == Kind::Cnp {
                    self.window_ns.min(CONTROL_WINDOW_NS)
                } else {
                    self.window_ns
                };
                if now >= t
                    && now - t <= window
                    && last_nak().is_none_or(|n| n.saturating_add(self.window_ns) < t)
                {
                    self.per_tap.entry(rec.iface).or_default().add(now - t);
                    // The copy does not refresh the original's time: a third
                    // record a window after the original is a resend, not a
                    // copy of a copy.
                    return true;
                }
                b
            }
            Err(empty) => empty,
        };
        self.index[b] = Bucket { seq, hash };
        let at = self.place(seq);
        self.ring[at] = Recent { key, hash, at: now };
        self.len += 1;
        false
    }

    /// Where the frame numbered `seq` (a bucket's, [`LIVE`] set or not) is
    /// in `ring`: the ring is a power of two long, at most 2^20 (below
    /// [`LIVE`]), so the numbers' wrap at 2^31 keeps every frame's place.
    fn place(&self, seq: u32) -> usize {
        seq as usize & (self.ring.len().wrapping_sub(1))
    }

    /// Twice the ring (16 at first), each frame of the window moved to its
    /// place in the longer ring.
    fn grow_ring(&mut self) {
        let n = (self.ring.len() * 2).max(16);
        let old = std::mem::replace(&mut self.ring, vec![Recent::default(); n]);
        let old_mask = old.len().wrapping_sub(1);
        for k in 0..self.len {
            let seq = self.first.wrapping_add(k as u32) & !LIVE;
            self.ring[seq as usize & (n - 1)] = old[seq as usize & old_mask];
        }
    }

    /// The bucket of `key` (whose hash is `hash`), or the empty bucket
    /// that ends its probe.
    fn find(&self, hash: u32, key: &Key) -> Result<usize, usize> {
        let mask = self.index.len() - 1;
        let mut p = hash as usize & mask;
        loop {
            let b = self.index[p];
            if b.seq == 0 {
                return Err(p);
            }
            if b.hash == hash && self.ring[self.place(b.seq)].key == *key {
                return Ok(p);
            }
            p = (p + 1) & mask;
        }
    }

    /// The oldest frame leaves the window, and its key's bucket with it
    /// when it was the key's last frame.
    fn leave(&mut self) {
        if self.len == 0 {
            return;
        }
        let r = self.ring[self.place(self.first)];
        self.len -= 1;
        let seq = LIVE | self.first;
        self.first = self.first.wrapping_add(1) & !LIVE;
        let mask = self.index.len() - 1;
        let mut p = r.hash as usize & mask;
        loop {
            match self.index[p].seq {
                0 => return,
                s if s == seq => break,
                _ => p = (p + 1) & mask,
            }
        }
        // Backward shift: each bucket after the hole whose home is not
        // between the hole and it moves into the hole.
        let mut hole = p;
        let mut j = (p + 1) & mask;
        while self.index[j].seq != 0 {
            let home = self.index[j].hash as usize & mask;
            if j.wrapping_sub(home) & mask >= j.wrapping_sub(hole) & mask {
                self.index[hole] = self.index[j];
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.index[hole] = Bucket::default();
    }

    /// Twice the buckets (16 at first), the keys placed again by the hashes
    /// their buckets hold.
    fn grow(&mut self) {
        let n = (self.index.len() * 2).max(16);
        let old = std::mem::replace(&mut self.index, vec![Bucket::default(); n]);
        for b in old.into_iter().filter(|b| b.seq != 0) {
            let mut p = b.hash as usize & (n - 1);
            while self.index[p].seq != 0 {
                p = (p + 1) & (n - 1);
            }
            self.index[p] = b;
        }
    }

    fn key(&mut self, rec: &PacketRecord, owner: Owner) -> Key {
        let fields = match owner {
            Owner::Transport(_, fields) => Some(fields),
            _ => None,
        };
        let owner = match owner {
            // A flow id is below 2^31 (QPs and other transports' flows
            // share them): one flow per frame at most.
            Owner::Flow(i) => i as u32,
            Owner::Transport(Some(id), _) => id,
            Owner::Cnp | Owner::Transport(None, _) => {
                let last = match owner {
                    Owner::Transport(..) => NO_FLOW_ID,
                    _ => rec.roce().dest_qp & QPN_MASK,
                };
                // 31 bits of a per-run seeded hash: two owners meeting on
                // one needs, within the window, the same opcode, PSN,
                // length and ICRC (which covers the addresses) or digest
                // as well — and no capture can be crafted for the seed.
                let h = self
                    .owners
                    .hash_one((rec.iface, rec.src_ip, rec.dst_ip, last));
                (h >> 33) as u32 | CNP_OWNER
            }
        };
        if let Some(fields) = fields {
            let f = fields(rec);
            return Key {
                owner,
                opcode: f.opcode,
                qp_high: f.flags,
                psn: f.psn,
                icrc: f.digest,
                payload_len: rec.payload_len,
            };
        }
        Key {
            owner,
            opcode: rec.roce().opcode,
            qp_high: (rec.roce().dest_qp >> 24) as u8,
            psn: rec.roce().psn,
            icrc: rec.roce().icrc,
            payload_len: rec.payload_len,
        }
    }

    #[cfg(test)]
    pub(crate) fn total(&self) -> u64 {
        self.per_tap.values().map(|d| d.copies).sum()
    }
}

/// The per-run random words [`key_hash`] mixes a key with, drawn from a
/// [`FastState`] (seeded as every map's: no capture can be crafted for
/// them).
#[derive(Debug)]
struct KeySeeds([u64; 3]);

impl KeySeeds {
    fn new() -> Self {
        let s = FastState::default();
        KeySeeds([1u64, 2, 3].map(|i| s.hash_one(i)))
    }
}

/// `key`'s hash's low 32 bits: its fields packed into three words, each
/// XORed with a seed; the first two folded-multiplied (the 128-bit
/// product's halves XORed, as foldhash does), the payload length XORed
/// in, then MurmurHash3's 64-bit finalizer (`fmix64`), so that every input
/// bit reaches the low bits the bucket is taken from: without it, keys in
/// an arithmetic progression (payload lengths a multiple of 64 apart) fell
/// into buckets in a pattern. Keys that differ only where the fold
/// overlaps share a hash, not a bucket's match: the key itself is
/// compared.
fn key_hash(seeds: &KeySeeds, key: &Key) -> u32 {
    let owner = u64::from(key.owner) | u64::from(key.opcode) << 32 | u64::from(key.qp_high) << 40;
    let seq = u64::from(key.psn) | u64::from(key.icrc) << 32;
    let p = u128::from(owner ^ seeds.0[0]) * u128::from(seq ^ seeds.0[1]);
    let mut h = (p as u64 ^ (p >> 64) as u64) ^ (u64::from(key.payload_len) ^ seeds.0[2]);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h as u32
}

#[cfg(test)]
mod tests;
