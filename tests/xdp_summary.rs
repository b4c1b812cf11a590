//! Summary mode's kernel rules, frame by frame (BPF_PROG_TEST_RUN): which
//! frames the XDP program counts in its flow state and which it forwards as
//! records, and that a forwarded frame of a flow with counts is preceded by
//! that flow's delta, carrying exactly the counts and sequence state.
//!
//! Needs root (loading BPF programs); skipped with a message otherwise.
use std::net::Ipv4Addr;

use rocescope::live::{LoadOptions, Program, RingItem, Tap};
use rocescope::summary::{FlowDelta, FlowKey, delta_flags, record_marks};
use rocescope::synth::frame::{IpAddrs, PfcFrame, RoceFrame, WireFrame};
use rocescope::{Kind, PacketRecord};

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const REQUEST_QP: u32 = 0x200; // B's QP: requests A → B go to it
const RESPONSE_QP: u32 = 0x100; // A's QP: ACKs B → A go to it

fn root() -> bool {
    // SAFETY: no arguments, no failure.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("SKIPPED: the summary-mode test needs root (it loads a BPF program)");
    }
    root
}

fn bytes(f: &impl WireFrame) -> Vec<u8> {
    let mut v = Vec::new();
    f.write(&mut v);
    v
}

fn mapped(ip: Ipv4Addr) -> [u8; 16] {
    ip.to_ipv6_mapped().octets()
}

/// RC WRITE Only A → B, 1024 bytes of payload.
fn write(psn: u32, ce: bool) -> Vec<u8> {
    let mut f = RoceFrame::default();
    f.ip.addrs = IpAddrs::V4 { src: A, dst: B };
    f.ip.ecn = if ce { 3 } else { 2 };
    f.bth.opcode = 0x0A;
    f.bth.dest_qp = REQUEST_QP;
    f.bth.psn = psn;
    f.ext.reth_len = 1024;
    f.payload_len = 1024;
    bytes(&f)
}

/// RC ACKNOWLEDGE B → A with `syndrome`.
fn ack(psn: u32, syndrome: u8) -> Vec<u8> {
    let mut f = RoceFrame::default();
    f.ip.addrs = IpAddrs::V4 { src: B, dst: A };
    f.bth.opcode = 0x11;
    f.bth.dest_qp = RESPONSE_QP;
    f.bth.psn = psn;
    f.ext.aeth_syndrome = syndrome;
    bytes(&f)
}

fn request_key() -> FlowKey {
    FlowKey {
        src_ip: mapped(A),
        dst_ip: mapped(B),
        dest_qp: REQUEST_QP,
    }
}

fn response_key() -> FlowKey {
    FlowKey {
        src_ip: mapped(B),
        dst_ip: mapped(A),
        dest_qp: RESPONSE_QP,
    }
}

struct Kernel {
    tap: Tap,
}

impl Kernel {
    fn load() -> Kernel {
        let opts = LoadOptions {
            summary: true,
            // No periodic deltas: every delta here is one before a record.
            flush_ns: Some(u64::MAX),
            ..LoadOptions::default()
        };
        let tap = Tap::load_with(Program::Decoder, &opts).expect("the XDP program loads");
        Kernel { tap }
    }

    /// Runs `frame`; returns what it put on the ring.
    fn run(&mut self, frame: &[u8]) -> Vec<RingItem> {
        self.tap.test_run(frame).expect("test run");
        std::iter::from_fn(|| self.tap.next_item()).collect()
    }

    fn counted(&mut self, what: &str, frame: &[u8]) {
        let items = self.run(frame);
        assert!(
            items.is_empty(),
            "{what}: counted, want no ring item: {items:?}"
        );
    }

    /// A forwarded frame: its record, after the delta of its flow if any.
    fn forwarded(&mut self, what: &str, frame: &[u8]) -> (Option<FlowDelta>, PacketRecord) {
        let items = self.run(frame);
        match items.as_slice() {
            [RingItem::Record(r)] => (None, *r),
            [RingItem::Delta(d), RingItem::Record(r)] => (Some(*d), *r),
            other => panic!("{what}: want [delta,] record, got {other:?}"),
        }
    }
}

#[test]
fn summary_mode_counts_in_order_traffic_and_forwards_anomalies_after_a_delta() {
    if !root() {
        return;
    }
    let mut k = Kernel::load();
    let c0 = k.tap.counters().unwrap();

    // A flow's first frame is forwarded, with nothing to flush before it.
    let (d, r) = k.forwarded("first request", &write(100, false));
    assert_eq!(d, None);
    assert_eq!(r.roce().psn, 100);
    // Marked as the start of its flow's kernel state (userspace counts a
    // second start of the same flow as an eviction).
    assert_eq!(r._reserved[0], record_marks::NEW_FLOW_STATE);
    // Unpaired: even in-order requests and plain ACKs go up one by one
    // (the analyzer may still pair the flows by these PSNs).
    assert_eq!(k.forwarded("unpaired in-order", &write(101, false)).0, None);
    assert_eq!(k.forwarded("first ACK", &ack(101, 0x1F)).0, None);

    // The analyzer paired them: now in-order requests and plain ACKs count.
    k.tap.pair(&request_key(), &response_key()).unwrap();
    k.counted("in order", &write(102, false));
    k.counted("in order, CE", &write(103, true));
    k.counted("in order", &write(104, false));
    k.counted("plain ACK", &ack(103, 0x1F));

    // A gap (105 missing): the delta first, with the counts and `next`.
    let (d, r) = k.forwarded("gap", &write(106, false));
    let d = d.expect("a delta before the gap");
    assert_eq!(r.roce().psn, 106);
    assert_eq!(r._reserved[0], 0);
    assert_eq!(d.key, request_key());
    assert_eq!((d.packets, d.data_packets, d.ce), (3, 3, 1));
    assert_eq!(d.payload_bytes, 3 * 1024);
    assert_eq!(d.next_psn, 105, "one past the last in-order PSN");
    assert!(0 < d.first_ts_ns && d.first_ts_ns <= d.first_ce_ts_ns);
    assert!(d.first_ce_ts_ns <= d.last_ts_ns);
    // It carries the partner's highest ACKed PSN (the ACK was counted).
    assert!(d.has(delta_flags::PARTNER_ACKED), "{d:?}");
    assert_eq!(d.partner_acked_psn, 103);
    k.counted("in order after the gap", &write(107, false));

    // A rewind to 104: delta (107 counted), then the record.
    let (d, r) = k.forwarded("rewind", &write(104, false));
    let d = d.expect("a delta before the rewind");
    assert_eq!(r.roce().psn, 104);
    assert_eq!((d.packets, d.data_packets, d.next_psn), (1, 1, 108));
    // Retransmissions stay forwarded until `next` is reached again.
    for psn in 105..108 {
        assert_eq!(k.forwarded("retransmission", &write(psn, false)).0, None);
    }
    k.counted("in order again", &write(108, false));

    // A NAK on the response flow: its counted ACK goes up first.
    let (d, r) = k.forwarded("NAK", &ack(108, 0x60));
    let d = d.expect("a delta before the NAK");
    assert_eq!(d.key, response_key());
    assert_eq!((d.packets, d.acks, d.responses), (1, 1, 1));
    assert!(d.has(delta_flags::ACKED) && d.acked_psn == 103, "{d:?}");
    assert_eq!(r.roce().aeth_syndrome, 0x60);

    // A READ request is forwarded, and so is everything of its flow after it.
    let mut read = RoceFrame::default();
    read.ip.addrs = IpAddrs::V4 { src: A, dst: B };
    read.bth.opcode = 0x0C;
    read.bth.dest_qp = REQUEST_QP;
    read.bth.psn = 109;
    read.ext.reth_len = 4096;
    let (d, _) = k.forwarded("READ request", &bytes(&read));
    assert_eq!(d.map(|d| d.packets), Some(1), "108 was counted");
    assert_eq!(k.forwarded("after a READ", &write(110, false)).0, None);

    // CNPs and PFC are always records.
    let mut cnp = RoceFrame::cnp(RESPONSE_QP);
    cnp.ip.addrs = IpAddrs::V4 { src: B, dst: A };
    let (_, r) = k.forwarded("CNP", &bytes(&cnp));
    assert_eq!(r.kind(), Kind::Cnp);
    let (d, r) = k.forwarded("PFC", &bytes(&PfcFrame::single(3, 0xFFFF)));
    assert_eq!((d, r.kind()), (None, Kind::Pfc));

    let c = k.tap.counters().unwrap();
    assert_eq!(c.summarized - c0.summarized, 6, "{c:?}");
    assert_eq!(c.deltas - c0.deltas, 4, "{c:?}");
    assert_eq!(c.records - c0.records, 13, "{c:?}");
    assert_eq!(c.ring_full, c0.ring_full);
}

#[test]
fn summary_mode_leaves_counts_for_the_end_of_the_run() {
    if !root() {
        return;
    }
    let mut k = Kernel::load();
    k.forwarded("first", &write(5, false));
    k.forwarded("first ACK", &ack(5, 0x1F));
    k.tap.pair(&request_key(), &response_key()).unwrap();
    for psn in 6..16 {
        k.counted("in order", &write(psn, psn == 9));
    }
    k.counted("ACK", &ack(15, 0x1F));
    let left = k.tap.remaining_deltas().unwrap();
    let req = left
        .iter()
        .find(|d| d.key == request_key())
        .expect("request flow");
    assert_eq!(
        (req.packets, req.data_packets, req.ce, req.next_psn),
        (10, 10, 1, 16)
    );
    assert!(req.has(delta_flags::PARTNER_ACKED) && req.partner_acked_psn == 15);
    let resp = left
        .iter()
        .find(|d| d.key == response_key())
        .expect("response flow");
    assert_eq!((resp.packets, resp.acks, resp.acked_psn), (1, 1, 15));
}

/// Summary mode counts by RoCE's sequencing only: every UET record goes up
/// whole, no delta before it, as the decoder made it.
#[test]
fn summary_mode_forwards_uet_records_whole() {
    use crate::common::uet::{udp_frame, vectors};
    use rocescope::{decode, flags, proto};
    if !root() {
        return;
    }
    let mut k = Kernel::load();
    k.tap.pair(&request_key(), &response_key()).unwrap();
    for v in vectors() {
        let frame = udp_frame(4793, &v.bytes);
        let (d, mut r) = k.forwarded(v.name, &frame);
        assert_eq!(d, None, "{}", v.name);
        let mut want = decode::decode(proto::linktype::ETHERNET, &frame, frame.len() as u32);
        want.flags &= !flags::CUT;
        r.ts_ns = 0;
        assert_eq!(r, want, "{}: kernel (left) and userspace (right)", v.name);
        assert_eq!(r.kind(), Kind::Uet);
    }
}
