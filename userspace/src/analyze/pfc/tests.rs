use super::*;

/// Each `(iface, priority)` sees only its own pauses, also for a
/// priority no PFC frame can carry.
#[test]
fn pause_lookups_stay_with_their_interface_and_priority() {
    use crate::analyze::VecSink;
    let mut t = PfcTracker::new(100_000_000_000, u64::MAX);
    let mut rec = PacketRecord {
        iface: 1,
        ts_ns: 1_000,
        src_mac: [2; 6],
        ..PacketRecord::default().with_link_control(crate::LinkControlView {
            pfc_enable: 1 << 1,
            ..crate::LinkControlView::default()
        })
    };
    rec.link_control_mut().pfc_quanta[1] = 0xffff;
    let mut sink = VecSink::default();
    t.frame(&rec, &mut sink);
    let (paused, cover) = t.paused(1, 1, 0, 2_000, 2_000);
    assert_eq!(paused, 1_000);
    assert_eq!(cover.map(|c| c.start_ns), Some(1_000));
    // Slot 9 of interface 0 would be slot 1 of interface 1.
    assert_eq!(t.paused(0, 9, 0, 2_000, 2_000), (0, None));
    assert_eq!(t.paused(1, 0, 0, 2_000, 2_000), (0, None));
    assert_eq!(t.paused(2, 1, 0, 2_000, 2_000), (0, None));
    assert_eq!(t.paused_total(0, 9), 0);
}

/// Spans closed in any order, some long (storms) among many short:
/// the spans a window overlaps, found by the `reach` walk, are those
/// a scan of every span finds.
#[test]
fn reach_walk_finds_every_overlapping_span() {
    let mut c = Closed::default();
    let mut all = Vec::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    for k in 0..400 {
        let start = next(100_000);
        let len = if k % 50 == 0 { 20_000 } else { next(500) };
        c.insert(start, start + len, [k as u8; 6]);
        all.push((start, start + len));
    }
    assert!(c.spans.windows(2).all(|w| w[0].0 <= w[1].0));
    for i in 0..c.spans.len() {
        let latest = c.spans[..=i].iter().map(|s| s.1).max().unwrap();
        assert_eq!(c.reach[i], latest, "reach[{i}]");
    }
    for _ in 0..2000 {
        let from = next(110_000);
        let to = from + 1 + next(3_000);
        let mut walked: Vec<_> = c.overlapping(from, to).map(|(s, e, _)| (s, e)).collect();
        let mut scanned: Vec<_> = all
            .iter()
            .copied()
            .filter(|&(s, e)| s < to && e > from)
            .collect();
        walked.sort_unstable();
        scanned.sort_unstable();
        assert_eq!(walked, scanned, "window {from}..{to}");
    }
}

/// `paused` as it was before the common cases went first: every
/// overlapping segment gathered, the longest (the last of equals) covers,
/// the union summed.
fn paused_by_list(
    t: &PfcTracker,
    iface: u16,
    priority: u8,
    from: u64,
    to: u64,
    now: u64,
) -> (u64, Option<Cover>) {
    let Some(prio) = t.prio(iface, priority).filter(|_| to > from) else {
        return (0, None);
    };
    let mut segs: Vec<(u64, u64, [u8; 6], u64)> = prio
        .closed
        .overlapping(from, to)
        .map(|(s, e, mac)| (s.max(from), e.min(to), mac, s))
        .collect();
    for m in &prio.macs {
        if let Some(o) = m.open {
            let (a, b) = (o.start.max(from), o.deadline.min(now).min(to));
            if b > a {
                segs.push((a, b, m.mac, o.start));
            }
        }
    }
    let Some(&best) = segs.iter().max_by_key(|s| (s.1 - s.0, s.3)) else {
        return (0, None);
    };
    segs.sort_unstable_by_key(|s| s.0);
    let mut total = 0;
    let (mut cs, mut ce) = (segs[0].0, segs[0].1);
    for s in &segs[1..] {
        if s.0 > ce {
            total += ce - cs;
            (cs, ce) = (s.0, s.1);
        } else {
            ce = ce.max(s.1);
        }
    }
    total += ce - cs;
    let cover = Cover {
        src_mac: best.2,
        priority,
        start_ns: best.3,
    };
    (total, Some(cover))
}

/// Pauses of several senders opened, refreshed, ended by XON and expired
/// in any order: every window, before and after each frame, gets from
/// `paused` what the list of all its segments gives.
#[test]
fn paused_answers_as_the_list_of_segments() {
    use crate::analyze::VecSink;
    let mut t = PfcTracker::new(100_000_000_000, 50_000);
    let mut sink = VecSink::default();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut now = 0;
    for _ in 0..3_000 {
        now += next(4_000);
        let mut rec = PacketRecord {
            iface: 0,
            ts_ns: now,
            src_mac: [next(4) as u8; 6],
            ..PacketRecord::default().with_link_control(crate::LinkControlView {
                pfc_enable: 1 << 3,
                ..crate::LinkControlView::default()
            })
        };
        // XON a quarter of the time; else up to ~42 µs at 100 Gb/s.
        let q = if next(4) == 0 { 0 } else { 1 + next(8_000) };
        rec.link_control_mut().pfc_quanta[3] = q as u16;
        t.frame(&rec, &mut sink);
        for _ in 0..4 {
            let to = now.saturating_sub(next(20_000)) + next(2) * next(30_000);
            let from = to.saturating_sub(next(60_000));
            let at = now.max(to) + next(2) * next(10_000);
            assert_eq!(
                t.paused(0, 3, from, to, at),
                paused_by_list(&t, 0, 3, from, to, at),
                "window {from}..{to} at {at}"
            );
        }
    }
    assert!(t.rows.len() > 100, "{} closed pauses", t.rows.len());
}
