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
        assert!(d.len <= 1 && d.index.iter().filter(|b| b.seq != 0).count() <= 1);
    }
    assert_eq!(d.total(), 10_000);
}

/// Against a model: the last record (not a copy) of every key ever
/// seen, a key in the window while that record is. Few owners and PSNs:
/// keys repeat, collide in buckets, leave (buckets move back) and return.
#[test]
fn the_window_table_agrees_with_a_map_of_every_key() {
    let mut d = MirrorDups::new(2_000);
    // Frame numbers wrap at 2^31 early in the run: places in the ring
    // and the buckets' numbers carry over.
    d.first = LIVE - 1_000;
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
        max_window = max_window.max(d.len);
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
    assert_eq!(d.len, MOST_FRAMES);
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

use crate::analyze::transports::uet::copy_fields as uet_fields;
use rocescope_common::wire::uet::uet_present;

/// A UET request of PDC 0x100, PSN `psn`, flags `flags`, on entropy
/// `entropy`.
fn uet(ts: u64, psn: u32, flags: u8, entropy: u16) -> PacketRecord {
    let mut r = PacketRecord {
        ts_ns: ts,
        payload_len: 4096,
        ..PacketRecord::default()
    };
    *r.uet_mut() = rocescope_common::wire::uet::UetView {
        present: uet_present::PDC | uet_present::PSN,
        pds_type: 2,
        pds_flags: flags,
        spdcid: 0x100,
        psn,
        entropy,
        ..rocescope_common::wire::uet::UetView::default()
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

/// The one-multiply key hash spreads a flow's consecutive PSNs, and
/// lengths alone, over a table's buckets as a hasher would.
#[test]
fn key_hashes_spread_over_the_buckets() {
    let key = |psn: u32, payload_len: u32| Key {
        owner: 7,
        opcode: 0x0a,
        qp_high: 0,
        psn,
        icrc: 0,
        payload_len,
    };
    // The seeds are random per run: every one of many must spread.
    for _ in 0..256 {
        let seeds = KeySeeds::new();
        let homes = |keys: &mut dyn Iterator<Item = Key>| {
            keys.map(|k| key_hash(&seeds, &k) & 1023)
                .collect::<std::collections::HashSet<u32>>()
                .len()
        };
        // 1,024 keys into 1,024 buckets: ~647 distinct homes expected
        // (standard deviation ~10).
        for (what, mut keys) in [
            (
                "PSNs",
                Box::new((0..1024).map(|p| key(p, 4096))) as Box<dyn Iterator<Item = Key>>,
            ),
            (
                "payload lengths",
                Box::new((0..1024).map(|l| key(5, l * 64))),
            ),
            (
                "owners",
                Box::new((0..1024).map(|o| Key {
                    owner: o << 8,
                    ..key(5, 64)
                })),
            ),
        ] {
            let n = homes(&mut keys);
            assert!(n > 580, "{what}: {n} homes of 1,024 keys, seeds {seeds:?}");
        }
    }
}
