//! Hand-made record sequences with exact expected numbers: the record
//! builders and the run here, the tests by concern in `tests/`.

mod events;
mod fmt;
mod pairing;
mod pfc;
mod retire;
mod retry;
mod sequence;
mod timeline;
mod transports;
mod trims;

use super::*;
use crate::render::render_text;
use rocescope_common::proto::ib::{self, op};

const A: [u8; 16] = v4(10, 0, 0, 1);
const B: [u8; 16] = v4(10, 0, 0, 2);
/// Responder QP (requests from A go to it) and requester QP (responses to A).
const QB: u32 = 0x100;
const QA: u32 = 0x200;
const MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
const US: u64 = 1000;

const fn v4(a: u8, b: u8, c: u8, d: u8) -> [u8; 16] {
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d]
}

/// A RoCEv2 record over IPv4 (ECT(0), DSCP 26) of `opcode` and `psn` to `qp`.
pub(crate) fn roce(
    ts: u64,
    src: [u8; 16],
    dst: [u8; 16],
    qp: u32,
    opcode: u8,
    psn: u32,
) -> PacketRecord {
    PacketRecord {
        ts_ns: ts,
        kind: Kind::Roce as u8,
        flags: flags::HAS_IPV4 | flags::HAS_UDP | flags::HAS_BTH | flags::HAS_PAYLOAD_LEN,
        src_ip: src,
        dst_ip: dst,
        dscp: 26,
        ecn: 0b10,
        udp_sport: 49152,
        frame_len: 70,
        cap_len: 70,
        ..PacketRecord::default().with_roce(crate::RoceView {
            dest_qp: qp,
            psn,
            opcode,
            ..crate::RoceView::default()
        })
    }
}

/// RC RDMA WRITE Only, 1024 bytes, A → B QP `QB`.
fn req(ts: u64, psn: u32) -> PacketRecord {
    let mut r = roce(ts, A, B, QB, op::WRITE_ONLY, psn);
    r.flags |= flags::HAS_RETH;
    r.roce_mut().reth_len = 1024;
    r.payload_len = 1024;
    r.frame_len = 1100;
    r
}

fn aeth(ts: u64, psn: u32, syndrome: u8) -> PacketRecord {
    let mut r = roce(ts, B, A, QA, op::ACKNOWLEDGE, psn);
    r.flags |= flags::HAS_AETH;
    r.roce_mut().aeth_syndrome = syndrome;
    r
}

fn ack(ts: u64, psn: u32) -> PacketRecord {
    aeth(ts, psn, 0x1F)
}

fn nak(ts: u64, psn: u32) -> PacketRecord {
    aeth(ts, psn, 0x60)
}

fn rnr(ts: u64, psn: u32) -> PacketRecord {
    aeth(ts, psn, 0x2E)
}

/// Five requests, PSN 102 NAKed after 101 is ACKed, and the resend from
/// 102 on (one NAK-triggered rewind, three retransmissions).
fn nak_rewind() -> Vec<PacketRecord> {
    vec![
        req(0, 100),
        req(US, 101),
        req(2 * US, 102),
        req(3 * US, 103),
        req(4 * US, 104),
        ack(5 * US, 101),
        nak(6 * US, 102),
        req(7 * US, 102),
        req(8 * US, 103),
        req(9 * US, 104),
        req(10 * US, 105),
    ]
}

fn cnp(ts: u64, from: [u8; 16], to: [u8; 16], qp: u32) -> PacketRecord {
    let mut r = roce(ts, from, to, qp, ib::OPCODE_CNP, 0);
    r.kind = Kind::Cnp as u8;
    r.flags |= flags::BECN;
    r.dscp = 48;
    r
}

fn pfc(ts: u64, enable: u8, quanta: [u16; 8]) -> PacketRecord {
    PacketRecord {
        ts_ns: ts,
        kind: Kind::Pfc as u8,
        flags: flags::HAS_PFC,
        src_mac: MAC,
        frame_len: 64,
        cap_len: 64,
        ..PacketRecord::default().with_link_control(crate::LinkControlView {
            pfc_enable: enable,
            pfc_quanta: quanta,
            ..crate::LinkControlView::default()
        })
    }
}

/// Priority 3 paused for `q` quanta (5.12 ns each at 100 Gb/s).
pub(crate) fn pfc3(ts: u64, q: u16) -> PacketRecord {
    let mut quanta = [0; 8];
    quanta[3] = q;
    pfc(ts, 1 << 3, quanta)
}

fn tagged(mut r: PacketRecord, pcp: u8) -> PacketRecord {
    r.flags |= flags::HAS_VLAN;
    r.vlan = 100;
    r.pcp = pcp;
    r
}

fn on(mut r: PacketRecord, iface: u16) -> PacketRecord {
    r.iface = iface;
    r
}

struct Run {
    verdicts: Vec<Verdict>,
    a: Analysis,
    sink: VecSink,
}

impl Run {
    fn flow(&self, src: [u8; 16], qp: u32) -> &FlowRow {
        self.flow_on(0, src, qp)
    }
    fn flow_on(&self, iface: u16, src: [u8; 16], qp: u32) -> &FlowRow {
        self.a
            .flows
            .iter()
            .find(|f| f.iface == iface && f.src_ip == src && f.dest_qp == qp)
            .expect("flow")
    }
    fn events(&self, kind: &str) -> Vec<&Event> {
        self.sink
            .events
            .iter()
            .filter(|e| e.kind.as_str() == kind)
            .collect()
    }
    fn finding(&self, id: &str) -> Option<&Finding> {
        self.a.summary.findings.iter().find(|f| f.id == id)
    }
    /// The `real-loss` finding of [`nak_rewind`], about flows 0 and 1.
    fn assert_nak_loss(&self) {
        let loss = self.finding("real-loss").expect("real-loss");
        assert_eq!(loss.flows, vec![0, 1]);
        assert!(
            loss.detail
                .contains("NAK-driven loss: 1 NAK, 1 NAK-triggered rewind"),
            "{}",
            loss.detail
        );
    }

    fn retrans(&self) -> Vec<Option<bool>> {
        self.verdicts.iter().map(|v| v.retrans).collect()
    }
}

fn run_with(config: Config, recs: &[PacketRecord]) -> Run {
    let mut an = Analyzer::new(config);
    let mut sink = VecSink::default();
    let verdicts = recs.iter().map(|r| an.push(r, &mut sink)).collect();
    let mut a = an.finish(&mut sink);
    crate::render::tell(&mut a);
    Run { verdicts, a, sink }
}

fn run(recs: &[PacketRecord]) -> Run {
    run_with(Config::default(), recs)
}
