//! The drain threads' ring reader (`live::ringread`): records the XDP
//! program put on its ring (BPF_PROG_TEST_RUN, one frame a run) come out
//! in the order the frames were run, a round at most its count, around
//! the ring's end several times, with nothing dropped for want of space
//! (the consumer position is published).
//!
//! Needs root (loading BPF programs); skipped with a message otherwise.
use crate::common::corpus::bytes;
use rocescope::live::{Program, RingTuning, Tap, rings};
use rocescope::synth::frame::RoceFrame;

fn root() -> bool {
    // SAFETY: no arguments, no failure.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("SKIPPED: the ring reader test needs root (it loads a BPF program)");
    }
    root
}

/// An RDMA WRITE of PSN `psn`.
fn write(psn: u32) -> Vec<u8> {
    let mut f = RoceFrame::default();
    (f.bth.opcode, f.bth.dest_qp, f.bth.psn) = (0x0A, 0x100, psn);
    (f.ext.reth_len, f.payload_len) = (64, 64);
    bytes(&f)
}

#[test]
fn rounds_take_every_record_in_order_around_the_ring() {
    if !root() {
        return;
    }
    // 16 KiB holds 78 records (200 bytes and an 8-byte header each): five
    // passes of 50 wrap around its end three times, and would not fit
    // unless each round gives the space back.
    let tuning = RingTuning::new(Some(16 << 10), Some(0)).expect("tuning");
    let mut tap = Tap::load(Program::Decoder, false, tuning).expect("the XDP program loads");
    let ring = tap.take_rings().pop().expect("a ring");
    let mut reader = ring.reader().expect("the ring maps");
    let psn = |b: &[u8]| rings::record_from_bytes(b).map(|r| r.roce().psn);
    for pass in 0..5u32 {
        let sent: Vec<u32> = (pass * 50..pass * 50 + 50).collect();
        for &p in &sent {
            tap.test_run(&write(p)).expect("test run");
        }
        let mut got = Vec::new();
        assert!(
            !reader.round(20, |b| got.push(psn(b))),
            "30 records still wait after a round of 20"
        );
        assert_eq!(got.len(), 20);
        assert!(reader.round(1000, |b| got.push(psn(b))), "the ring emptied");
        let got: Vec<u32> = got.into_iter().map(|p| p.expect("a record")).collect();
        assert_eq!(got, sent, "pass {pass}");
        assert!(reader.round(1000, |_| panic!("nothing more")));
    }
    let c = tap.counters().expect("counters");
    assert_eq!((c.records, c.ring_full), (250, 0));
}
