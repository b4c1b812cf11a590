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
//! (`analyze::uet::copy_fields`), with the NACKs of its reverse direction
//! in place of a QP's NAKs.
//!
//! Frames without payload (ACKs, NAKs, CNPs) repeat byte for byte by design
//! — a NIC may send CNPs to a QP every few µs, all alike — so for them the
//! window is at most [`CONTROL_WINDOW_NS`], the time a switch takes to
//! forward a small frame.
//!
//! Memory is bounded by the frames the taps record within one window, at
//! most [`MOST_FRAMES`].

use std::collections::{BTreeMap, VecDeque};

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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// (UET's: `analyze::uet::copy_fields`).
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
#[derive(Clone, Copy, Debug)]
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
/// they come; the keys are an open-addressed table (linear probing, 8
/// bytes a bucket, at most half full) of the number of each key's last
/// frame. A frame leaving the window takes its key's bucket with it only
/// if it is the key's last frame — its number is in the bucket — and the
/// buckets after it move back: no tombstones to rehash away
/// (docs/benchmarks.md, "cpu2").
#[derive(Debug)]
pub(crate) struct MirrorDups {
    window_ns: u64,
    /// The frames of the window, the oldest first.
    order: VecDeque<Recent>,
    /// The number of `order`'s first frame (31 bits, wrapping).
    first: u32,
    /// Each key's last frame in `order`: a power of two long (or empty),
    /// at most half in use.
    index: Vec<Bucket>,
    /// Hashes a [`Key`] ([`key_hash`]).
    keys: FastState,
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
            order: VecDeque::new(),
            first: 0,
            index: Vec::new(),
            keys: FastState::default(),
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
        if self.window_ns == 0 {
            return false;
        }
        let now = rec.ts_ns;
        while let Some(r) = self.order.front() {
            if now.saturating_sub(r.at) <= self.window_ns && self.order.len() < MOST_FRAMES {
                break;
            }
            self.leave();
        }
        let key = self.key(rec, owner);
        let hash = key_hash(&self.keys, &key) as u32;
        let window = if rec.payload_len == 0 || rec.kind() == Kind::Cnp {
            self.window_ns.min(CONTROL_WINDOW_NS)
        } else {
            self.window_ns
        };
        if (self.order.len() + 1) * 2 > self.index.len() {
            self.grow();
        }
        let seq = LIVE | (self.first.wrapping_add(self.order.len() as u32) & !LIVE);
        let b = match self.find(hash, &key) {
            Ok(b) => {
                let t = self.order[self.place(self.index[b].seq)].at;
                if last_nak.is_none_or(|n| n.saturating_add(self.window_ns) < t)
                    && now >= t
                    && now - t <= window
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
        self.order.push_back(Recent { key, hash, at: now });
        false
    }

    /// Where the frame numbered `seq` (a bucket's) is in `order`.
    fn place(&self, seq: u32) -> usize {
        (seq.wrapping_sub(self.first) & !LIVE) as usize
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
            if b.hash == hash && self.order[self.place(b.seq)].key == *key {
                return Ok(p);
            }
            p = (p + 1) & mask;
        }
    }

    /// The oldest frame leaves the window, and its key's bucket with it
    /// when it was the key's last frame.
    fn leave(&mut self) {
        let Some(r) = self.order.pop_front() else {
            return;
        };
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

/// `key`'s hash: its fields packed into three words, three rounds of the
/// hasher instead of the six a field-by-field `Hash` makes.
fn key_hash(keys: &FastState, key: &Key) -> u64 {
    let owner = u64::from(key.owner) | u64::from(key.opcode) << 32 | u64::from(key.qp_high) << 40;
    let seq = u64::from(key.psn) | u64::from(key.icrc) << 32;
    keys.hash_one((owner, seq, key.payload_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(ts: u64, psn: u32) -> PacketRecord {
        PacketRecord {
            ts_ns: ts,
            payload_len: 1024,
            ..PacketRecord::default().with_roce(crate::RoceView {
                psn,
                opcode: 0x0A,
                icrc: 0xABCD_0000 | psn,
                dest_qp: 7,
                ..crate::RoceView::default()
            })
        }
    }

    impl MirrorDups {
        /// A frame of flow 0.
        fn is_copy_of0(&mut self, rec: &PacketRecord, last_nak: Option<u64>) -> bool {
            self.is_copy(rec, Owner::Flow(0), last_nak)
        }
    }

    #[test]
    fn a_copy_within_the_window_is_a_copy_and_a_later_resend_is_not() {
        let mut d = MirrorDups::new(DEFAULT_WINDOW_NS);
        assert!(!d.is_copy_of0(&frame(1_000, 5), None));
        assert!(
            d.is_copy_of0(&frame(1_005, 5), None),
            "5 ns later: SPAN copy"
        );
        assert!(!d.is_copy_of0(&frame(1_010, 6), None));
        assert!(
            d.is_copy_of0(&frame(1_010, 6), None),
            "exact copy, same timestamp"
        );
        // A resend 40 µs later (a timeout) is analysed as such.
        assert!(!d.is_copy_of0(&frame(41_000, 5), None));
        let t = &d.per_tap[&0];
        assert_eq!(
            (t.copies, t.min_gap_ns, t.max_gap_ns, t.same_timestamp),
            (2, 0, 5, 1)
        );
    }

    #[test]
    fn a_nak_in_between_makes_a_fast_resend_legitimate() {
        let mut d = MirrorDups::new(DEFAULT_WINDOW_NS);
        assert!(!d.is_copy_of0(&frame(1_000, 5), None));
        assert!(
            !d.is_copy_of0(&frame(4_000, 5), Some(3_500)),
            "resent 3 µs after the original, 0.5 µs after a NAK"
        );
        // Sent just after the NAK passed the tap, resent before the sender
        // had acted on it 12 µs later: still a resend.
        assert!(!d.is_copy_of0(&frame(4_100, 8), Some(3_500)));
        assert!(!d.is_copy_of0(&frame(13_000, 8), Some(3_500)));
        // A window after the NAK, copies are copies again.
        assert!(!d.is_copy_of0(&frame(20_000, 7), Some(3_500)));
        assert!(d.is_copy_of0(&frame(20_005, 7), Some(3_500)));
        assert_eq!(d.total(), 1);
    }

    /// A CNP's owner is a hash, not an entry a pair: what the check holds
    /// follows the window's frames, not the address pairs a run has seen.
    #[test]
    fn cnps_of_ever_new_pairs_hold_only_the_windows_frames() {
        let mut d = MirrorDups::new(DEFAULT_WINDOW_NS);
        for i in 0..10_000u32 {
            let mut cnp = PacketRecord {
                payload_len: 0,
                ..frame(u64::from(i) * 1_000_000, 0)
            };
            cnp.src_ip[..4].copy_from_slice(&i.to_be_bytes());
            let copy = PacketRecord {
                ts_ns: cnp.ts_ns + 100,
                ..cnp
            };
            assert!(!d.is_copy(&cnp, Owner::Cnp, None));
            assert!(d.is_copy(&copy, Owner::Cnp, None), "pair {i}: a copy");
            assert!(d.order.len() <= 1 && d.index.iter().filter(|b| b.seq != 0).count() <= 1);
        }
        assert_eq!(d.total(), 10_000);
    }

    /// Against a model: the last record (not a copy) of every key ever
    /// seen, a key in the window while that record is. Few owners and PSNs:
    /// keys repeat, collide in buckets, leave (buckets move back) and return.
    #[test]
    fn the_window_table_agrees_with_a_map_of_every_key() {
        let mut d = MirrorDups::new(2_000);
        let mut last: std::collections::HashMap<(usize, u32, u32), u64> = Default::default();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x = x
                .wrapping_mul(0x5851_F42D_4C95_7F2D)
                .wrapping_add(0x1405_7B7E_F767_814F);
            x ^ (x >> 29)
        };
        let (mut ts, mut copies, mut max_window) = (0u64, 0, 0);
        for _ in 0..200_000 {
            let r = next();
            // Bursts (hundreds of frames a window), lulls that empty it.
            ts += if r % 64 == 0 {
                5_000
            } else {
                [0, 1, 2, 3, 5, 8, 13, 30][(r % 8) as usize]
            };
            let (owner, psn) = ((r >> 8) as usize % 40, (r >> 16) as u32 % 30);
            let mut rec = frame(ts, psn);
            rec.payload_len = if (r >> 40) & 7 == 0 { 0 } else { 1024 };
            let window = if rec.payload_len == 0 { 500 } else { 2_000 };
            let k = (owner, psn, rec.payload_len);
            let expected = last
                .get(&k)
                .is_some_and(|&t| ts - t <= 2_000 && ts - t <= window);
            assert_eq!(
                d.is_copy(&rec, Owner::Flow(owner), None),
                expected,
                "at {ts}"
            );
            if expected {
                copies += 1;
            } else {
                last.insert(k, ts);
            }
            max_window = max_window.max(d.order.len());
        }
        assert!(copies > 5_000, "{copies} copies");
        assert!(max_window > 100, "{max_window} frames in a window at most");
        assert_eq!(d.total(), copies);
        let live = d.index.iter().filter(|b| b.seq != 0).count();
        let in_window = last.values().filter(|&&t| ts - t <= 2_000).count();
        assert_eq!(live, in_window);
    }

    /// Frames at one instant (crafted) stay in the window up to its bound.
    #[test]
    fn the_window_holds_at_most_its_bound() {
        let mut d = MirrorDups::new(DEFAULT_WINDOW_NS);
        for i in 0..(MOST_FRAMES + 100) as u32 {
            assert!(!d.is_copy(&frame(7, i), Owner::Flow(1), None));
        }
        assert_eq!(d.order.len(), MOST_FRAMES);
        assert!(!d.is_copy(&frame(7, 0), Owner::Flow(1), None));
        assert!(d.is_copy(&frame(7, MOST_FRAMES as u32 + 99), Owner::Flow(1), None));
    }

    #[test]
    fn frames_without_payload_repeat_by_design() {
        let mut d = MirrorDups::new(DEFAULT_WINDOW_NS);
        let cnp = |ts| PacketRecord {
            payload_len: 0,
            ..frame(ts, 0)
        };
        assert!(!d.is_copy_of0(&cnp(1_000), None));
        assert!(d.is_copy_of0(&cnp(1_300), None), "0.3 µs later: a copy");
        assert!(
            !d.is_copy_of0(&cnp(5_000), None),
            "4 µs later: the next CNP"
        );
    }

    use crate::analyze::uet::copy_fields as uet_fields;
    use rocescope_common::uet_present;

    /// A UET request of PDC 0x100, PSN `psn`, flags `flags`, on entropy
    /// `entropy`.
    fn uet(ts: u64, psn: u32, flags: u8, entropy: u16) -> PacketRecord {
        let mut r = PacketRecord {
            ts_ns: ts,
            payload_len: 4096,
            ..PacketRecord::default()
        };
        *r.uet_mut() = rocescope_common::UetView {
            present: uet_present::PDC | uet_present::PSN,
            pds_type: 2,
            pds_flags: flags,
            spdcid: 0x100,
            psn,
            entropy,
            ..rocescope_common::UetView::default()
        };
        r
    }

    #[test]
    fn a_uet_copy_is_a_copy_and_a_resend_or_another_path_is_not() {
        let mut d = MirrorDups::new(DEFAULT_WINDOW_NS);
        let mut copy =
            |r: PacketRecord, nack| d.is_copy(&r, Owner::Transport(Some(3), uet_fields), nack);
        assert!(!copy(uet(1_000, 5, 0, 7), None));
        assert!(copy(uet(3_000, 5, 0, 7), None), "2 µs later: a copy");
        // Its resend (RETX) is no copy, nor the same PSN on another path.
        assert!(!copy(uet(3_500, 5, 0x10, 7), None));
        assert!(!copy(uet(3_600, 5, 0, 8), None));
        // A second resend soon after a NACK of its data is legitimate.
        assert!(!copy(uet(5_000, 5, 0x10, 7), Some(4_000)));
        assert_eq!(d.total(), 1);
    }

    #[test]
    fn a_zero_window_turns_detection_off() {
        let mut d = MirrorDups::new(0);
        assert!(!d.is_copy_of0(&frame(1, 5), None));
        assert!(!d.is_copy_of0(&frame(1, 5), None));
    }
}
