//! The matcher's tests ([`super`]).

use super::*;

fn frame(iface: u16, ts: u64, psn: u32, src: u8, dst: u8) -> PacketRecord {
    let mut r = PacketRecord {
        iface,
        ts_ns: ts,
        flags: flags::ICRC_CHECKED,
        ..PacketRecord::default().with_roce(crate::RoceView {
            psn,
            opcode: 0x0A,
            icrc: 0x1000 + psn,
            dest_qp: 7,
            ..crate::RoceView::default()
        })
    };
    r.src_ip[15] = src;
    r.dst_ip[15] = dst;
    r
}

/// Pushes `r` with a flow index of its own per (tap, source, destination),
/// as the analyzer's flow table gives.
fn push(m: &mut Matcher, r: &PacketRecord) {
    let index =
        usize::from(r.iface) << 16 | usize::from(r.src_ip[15]) << 8 | usize::from(r.dst_ip[15]);
    m.push(r, index);
}

/// The matching of `frames`, pushed in this order (1 ms window).
fn matching(frames: &[PacketRecord]) -> Matching {
    let mut m = Matcher::new(1_000_000);
    for r in frames {
        push(&mut m, r);
    }
    m.finish(&BTreeMap::new(), |_, _| None).unwrap()
}

#[test]
fn a_frame_lost_between_taps_and_resent_is_one_missing_and_one_matched() {
    let mut m = Matcher::new(1_000_000);
    // PSN 1 reaches tap 1 5 µs after tap 0; PSN 2 is lost after tap 0
    // and resent 100 µs later (within the window: told apart as a
    // resend because tap 0 saw it again). Tap 1 records from 0.5 µs on
    // (another flow's frame): before, it could have seen nothing.
    push(&mut m, &frame(1, 500, 7, 3, 4));
    push(&mut m, &frame(0, 1_000, 1, 1, 2));
    push(&mut m, &frame(0, 2_000, 2, 1, 2));
    push(&mut m, &frame(1, 6_000, 1, 1, 2));
    push(&mut m, &frame(0, 102_000, 2, 1, 2));
    push(&mut m, &frame(1, 109_000, 2, 1, 2));
    let out = m.finish(&BTreeMap::new(), |_, _| None).unwrap();
    assert_eq!(out.hops.len(), 1);
    let h = &out.hops[0];
    assert_eq!((h.up_iface, h.down_iface), (0, 1));
    assert_eq!(
        (h.frames_up, h.matched, h.missing_down, h.down_only),
        (3, 2, 1, 0)
    );
    assert_eq!((h.delay_min_ns, h.delay_max_ns), (Some(5_000), Some(5_000)));
    assert_eq!(out.clocks[0].source, OffsetSource::Assumed);
}

#[test]
fn traffic_both_ways_gives_the_offset_and_its_uncertainty() {
    // Tap 1's clock is 50 µs ahead of tap 0's; the path takes 10 µs
    // each way. 1 → 2 passes tap 0 at 1 µs, tap 1 at 11 µs (reading
    // 61 µs); 2 → 1 passes tap 1 at 100 µs (reading 150 µs), tap 0 at
    // 110 µs.
    let mut m = Matcher::new(1_000_000);
    push(&mut m, &frame(0, 1_000, 1, 1, 2));
    push(&mut m, &frame(1, 61_000, 1, 1, 2));
    push(&mut m, &frame(0, 110_000, 9, 2, 1));
    push(&mut m, &frame(1, 150_000, 9, 2, 1));
    let out = m.finish(&BTreeMap::new(), |_, _| None).unwrap();
    let c = &out.clocks[0];
    assert_eq!(
        (c.offset_ns, c.uncertainty_ns, c.source),
        (50_000, Some(10_000), OffsetSource::Estimated)
    );
    let delays: Vec<_> = out
        .hops
        .iter()
        .map(|h| (h.up_iface, h.down_iface, h.delay_min_ns, h.matched))
        .collect();
    assert_eq!(delays, [(0, 1, Some(10_000), 1), (1, 0, Some(10_000), 1)]);

    // Imposed: the delays follow it.
    let mut m = Matcher::new(1_000_000);
    push(&mut m, &frame(0, 1_000, 1, 1, 2));
    push(&mut m, &frame(1, 61_000, 1, 1, 2));
    let out = m
        .finish(&BTreeMap::from([(1, 55_000)]), |_, _| None)
        .unwrap();
    assert_eq!(out.clocks[0].source, OffsetSource::Imposed);
    assert_eq!(out.hops[0].delay_min_ns, Some(5_000));
}

#[test]
fn a_sighting_earlier_than_the_keys_last_joins_its_transmission() {
    // PSN 1 passes tap 0 at 1 µs, tap 2 at 10.5 µs and tap 1 at 11 µs,
    // but tap 2's record comes last (merged out of time order): one
    // transmission at three taps, closed when a frame 5 ms later
    // expires it, as is the frame that follows it.
    let out = matching(&[
        frame(0, 1_000, 1, 1, 2),
        frame(1, 11_000, 1, 1, 2),
        frame(2, 10_500, 1, 1, 2),
        frame(0, 5_000_000, 2, 1, 2),
        frame(1, 5_010_000, 2, 1, 2),
        frame(2, 5_009_500, 2, 1, 2),
    ]);
    let hops: Vec<_> = out
        .hops
        .iter()
        .map(|h| (h.up_iface, h.down_iface, h.matched, h.delay_min_ns))
        .collect();
    assert_eq!(
        hops,
        [
            (0, 1, 2, Some(10_000)),
            (0, 2, 2, Some(9_500)),
            (2, 1, 2, Some(500))
        ]
    );
    assert_eq!(out.late, 0);
}

#[test]
fn the_sketch_quantiles_are_within_half_a_percent_of_the_range() {
    let mut s = Sketch::default();
    let values: Vec<i64> = (0..1000).map(|i| 5_000 + (i * i) % 7_919).collect();
    for &v in &values {
        s.add(v);
    }
    let mut sorted = values.clone();
    sorted.sort();
    let range = (sorted[999] - sorted[0]) as f64;
    for q in [0.01, 0.5, 0.99] {
        let exact = sorted[((q * 1000.0_f64).ceil() as usize).max(1) - 1];
        let got = s.quantile(q);
        assert!(
            ((got - exact) as f64).abs() <= 0.005 * range + 1.0,
            "q {q}: {got} vs {exact}"
        );
    }
    assert_eq!((s.min, s.max), (sorted[0], sorted[999]));
}

/// A steady stream past three taps: transmission `i` of flow `i % 8` at
/// tap 0 every µs, at tap 1 5 µs and at tap 2 9 µs later; every 25th is
/// lost between taps 1 and 2, every 37th resent 300 µs later. After every
/// frame: the keys held and their expiry queue.
fn steady(window_ns: u64, transmissions: u64) -> (Matcher, usize, usize) {
    let mut sightings = Vec::new();
    for i in 0..transmissions {
        let (flow, psn, t) = ((i % 8) as u8, (i / 8) as u32, 1_000 + i * 1_000);
        let resends: &[u64] = if i.is_multiple_of(37) {
            &[0, 300_000]
        } else {
            &[0]
        };
        for &r in resends {
            sightings.push(frame(0, t + r, psn, 1 + flow, 100));
            sightings.push(frame(1, t + r + 5_000, psn, 1 + flow, 100));
            if !i.is_multiple_of(25) {
                sightings.push(frame(2, t + r + 9_000, psn, 1 + flow, 100));
            }
        }
    }
    sightings.sort_by_key(|r| r.ts_ns);
    let mut m = Matcher::new(window_ns);
    let (mut keys, mut order) = (0, 0);
    for r in &sightings {
        push(&mut m, r);
        keys = keys.max(m.keys.len());
        order = order.max(m.order.len());
    }
    (m, keys, order)
}

#[test]
fn the_matchers_state_is_bounded_by_the_window_not_the_streams_length() {
    let mut peaks = Vec::new();
    for window in [100_000, 1_000_000] {
        // A key is held from its first sighting to a window after its
        // last: 9 µs later, 309 µs for a resend (one in 37); one key a µs.
        let bound = ((window + 9_000) / 1_000 + (window + 309_000) / 37_000 + 2) as usize;
        // 10k transmissions cover every phase of the stream's pattern
        // (8 × 25 × 37 = 7,400) and a window more; four times that repeats it.
        let (short, keys, order) = steady(window, 10_000);
        let (long, long_keys, long_order) = steady(window, 40_000);
        assert!(keys <= bound, "{keys} keys > {bound}");
        // Each held key's sightings (three at most, six for a resend).
        assert!(order <= 6 * bound, "{order} queued > 6 × {bound}");
        // Four times the stream: not one key or queue entry more.
        assert_eq!((long.peak_keys, long_keys, long_order), (keys, keys, order));
        // Per flow: its tallies and tap pairs, not its frames.
        assert_eq!(long.tallies.len(), short.tallies.len());
        assert_eq!((long.pairs.len(), short.pairs.len()), (24, 24));
        let out = long.finish(&BTreeMap::new(), |_, _| None).unwrap();
        let pairs = |i: u64| {
            (1 + u64::from(i.is_multiple_of(37))) * if i.is_multiple_of(25) { 1 } else { 3 }
        };
        let matched: u64 = out.hops.iter().map(|h| h.matched).sum();
        assert_eq!(
            (out.hops.len(), matched),
            (24, (0..40_000).map(pairs).sum())
        );
        peaks.push(keys);
    }
    // The window is what bounds it: ten times the window, about ten times
    // the keys.
    assert!(peaks[1] >= 8 * peaks[0], "{peaks:?}");
}

#[test]
fn a_tap_idle_between_bursts_holds_tallies_by_flow_not_by_burst() {
    // Flow 1 → 100 past taps 0 and 1 every µs; tap 2 sees one frame of
    // another flow every 50 µs, more than the 10 µs window apart: each of
    // flow 1's transmissions in a gap waits on tap 2's next frame.
    let run = |fold_at: usize| {
        let mut m = Matcher::new(10_000);
        m.tallies.fold_at = fold_at;
        let mut held = 0;
        for i in 0..100_000u64 {
            let t = 1_000 + i * 1_000;
            push(&mut m, &frame(0, t, i as u32, 1, 100));
            push(&mut m, &frame(1, t + 500, i as u32, 1, 100));
            if i.is_multiple_of(50) {
                push(&mut m, &frame(2, t + 700, i as u32, 7, 8));
            }
            held = held.max(m.tallies.len());
        }
        (held, m.finish(&BTreeMap::new(), |_, _| None).unwrap())
    };
    let (folded, out) = run(16);
    let (unfolded, same) = run(usize::MAX);
    assert_eq!(out, same);
    assert!(folded <= 64, "{folded}");
    assert!(unfolded > 1_000, "{unfolded}");
    let h = out.hops.iter().find(|h| h.src_ip[15] == 1).unwrap();
    assert_eq!(
        (h.frames_up, h.matched, h.missing_down),
        (100_000, 100_000, 0)
    );
}

#[test]
fn offsets_at_the_ends_of_i64_saturate_instead_of_overflowing() {
    // The analyzer's Config takes any offset (the CLI's are at most 1e9 s):
    // imposed at both ends of i64, the delays saturate; nothing panics.
    let mut m = Matcher::new(1_000_000);
    push(&mut m, &frame(0, 1_000, 1, 1, 2));
    push(&mut m, &frame(1, 6_000, 1, 1, 2));
    push(&mut m, &frame(1, 9_000, 2, 2, 1));
    push(&mut m, &frame(0, 15_000, 2, 2, 1));
    let imposed = BTreeMap::from([(0, i64::MIN), (1, i64::MAX)]);
    let out = m.finish(&imposed, |_, _| None).unwrap();
    assert_eq!(out.clocks[0].offset_ns, i64::MAX);
    assert!(out.hops.iter().all(|h| h.matched == 1), "{:?}", out.hops);
}

#[test]
fn a_one_tap_matcher_keeps_nothing_and_finds_what_one_tap_finds() {
    // The same single-tap frames through both: neither finds hops, and the
    // one-tap matcher holds no window of them.
    let frames: Vec<PacketRecord> = (0..100)
        .map(|i| frame(0, 1_000 * u64::from(i), i, 1, 2))
        .collect();
    let (mut solo, mut one) = (Matcher::new(1_000_000), Matcher::one_tap(1_000_000));
    for r in &frames {
        push(&mut solo, r);
        push(&mut one, r);
    }
    assert_eq!(solo.solo.as_ref().map(|(_, w)| w.len()), Some(100));
    assert!(one.solo.is_none() && one.keys.is_empty() && one.order.is_empty());
    assert!(solo.finish(&BTreeMap::new(), |_, _| None).is_none());
    assert!(one.finish(&BTreeMap::new(), |_, _| None).is_none());
}

/// The matcher on its own thread ([`Feed`]) finds what it finds inline:
/// the same pushes and forgets in the same order, over more batches than
/// are let in flight (the analyzer waits, the spare batches come back).
#[test]
fn the_matcher_on_a_thread_matches_as_inline() {
    // Three taps, four flows; each frame passes taps 0, 1, 2 in turn,
    // some lost after a tap, some resent, the frames of a flow index
    // forgotten (retired) now and then.
    let mut frames = Vec::new();
    let mut state = 0x2545_f491_u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut t = 1_000;
    for psn in 0..20_000u32 {
        let (src, dst) = (1 + (psn % 4) as u8, 9);
        let reach = 1 + next() % 3;
        for tap in 0..reach as u16 {
            frames.push(frame(
                tap,
                t + u64::from(tap) * 3_000 + next() % 500,
                psn,
                src,
                dst,
            ));
        }
        if next() % 50 == 0 {
            frames.push(frame(0, t + 50_000, psn, src, dst));
        }
        t += 700;
    }
    frames.sort_by_key(|r| r.ts_ns);
    let index = |r: &PacketRecord| {
        usize::from(r.iface) << 16 | usize::from(r.src_ip[15]) << 8 | usize::from(r.dst_ip[15])
    };
    let mut inline = Matcher::new(1_000_000);
    let mut feed = Feed::new(Matcher::new(1_000_000), true);
    for (n, r) in frames.iter().enumerate() {
        inline.push(r, index(r));
        feed.push(r, index(r));
        if n % 5_000 == 4_999 {
            inline.forget(index(r));
            feed.forget(index(r));
        }
    }
    assert!(
        feed.threaded(),
        "a second tap moves the matcher to its thread"
    );
    let a = inline.finish(&BTreeMap::new(), |_, _| None).unwrap();
    let b = feed
        .into_matcher()
        .finish(&BTreeMap::new(), |_, _| None)
        .unwrap();
    assert!(a.hops.len() >= 4, "{a:?}");
    assert!(a.hops.iter().any(|h| h.missing_down > 0 && h.matched > 0));
    assert_eq!(a, b);
}

/// A single-tap source never starts the thread.
#[test]
fn one_tap_keeps_the_matcher_inline() {
    let mut feed = Feed::new(Matcher::new(1_000_000), true);
    for psn in 0..5_000 {
        feed.push(&frame(0, u64::from(psn) * 1_000, psn, 1, 2), 0);
    }
    assert!(!feed.threaded());
    assert!(
        feed.into_matcher()
            .finish(&BTreeMap::new(), |_, _| None)
            .is_none()
    );
}
