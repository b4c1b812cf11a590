//! From the model's [`FrameSpec`]s to bytes (the frame builder in
//! [`crate::synth::frame`]) and to capture files, one per tap.

use super::fabric::Run;
use super::spec::FrameSpec;
use crate::proto::ib;
use crate::synth::capture_writer::CaptureWrite;
use crate::synth::frame::{
    Bth, EthHeader, ExtHeaders, IcrcMode, IpAddrs, IpHeader, PfcFrame, RoceFrame, VlanTag,
    WireFrame,
};
use std::io;

/// Model time 0 in a capture: 2026-01-01T00:00:00Z, so timestamps look real.
pub const EPOCH_NS: u64 = 1_767_225_600_000_000_000;

/// Appends the Ethernet frame (no FCS) for `spec` to `out`.
pub fn append_frame(spec: &FrameSpec, out: &mut Vec<u8>) {
    match spec {
        FrameSpec::Roce(r) => {
            let mut ext = ExtHeaders::default();
            if let Some(x) = r.reth {
                ext.reth_va = x.va;
                ext.reth_rkey = x.rkey;
                ext.reth_len = x.len;
            }
            if let Some(a) = r.aeth {
                ext.aeth_syndrome = a.syndrome;
                ext.aeth_msn = a.msn;
            }
            let f = RoceFrame {
                eth: EthHeader {
                    dst: r.dst_mac,
                    src: r.src_mac,
                    outer_vlan: None,
                    vlan: r.vlan.map(|v| VlanTag::dot1q(v.vid, v.pcp)),
                },
                ip: IpHeader {
                    addrs: IpAddrs::V4 {
                        src: r.src_ip,
                        dst: r.dst_ip,
                    },
                    dscp: r.dscp,
                    ecn: r.ecn,
                    ..IpHeader::default()
                },
                udp_sport: r.udp_sport,
                bth: Bth {
                    opcode: r.opcode,
                    fecn: r.fecn,
                    becn: r.becn,
                    dest_qp: r.dest_qp,
                    ack_req: r.ack_req,
                    psn: r.psn,
                    ..Bth::default()
                },
                ext,
                payload_len: r.payload_len as usize,
                payload_seed: r.psn as u8,
                icrc: if r.corrupt {
                    IcrcMode::Corrupt
                } else {
                    IcrcMode::Valid
                },
                ..RoceFrame::default()
            };
            f.append(out);
        }
        FrameSpec::Cnp(c) => {
            let mut f = RoceFrame::cnp(c.dest_qp);
            f.eth = EthHeader {
                dst: c.dst_mac,
                src: c.src_mac,
                outer_vlan: None,
                vlan: c.vlan.map(|v| VlanTag::dot1q(v.vid, v.pcp)),
            };
            f.ip = IpHeader {
                addrs: IpAddrs::V4 {
                    src: c.src_ip,
                    dst: c.dst_ip,
                },
                dscp: c.dscp,
                ecn: c.ecn,
                ..IpHeader::default()
            };
            f.udp_sport = c.udp_sport;
            f.bth.fecn = c.fecn;
            f.bth.becn = c.becn;
            debug_assert_eq!(f.bth.opcode, ib::OPCODE_CNP);
            f.append(out);
        }
        FrameSpec::Pfc(p) => {
            let f = PfcFrame {
                dst: p.dst_mac,
                src: p.src_mac,
                vlan: None,
                enable: p.enable_vector as u8,
                quanta: p.quanta,
            };
            f.append(out);
        }
    }
}

/// Writes every frame tap `tap` recorded into `w` (interface id `iface`),
/// timestamps offset by `epoch_ns`. Returns the number of frames written.
pub fn write_tap(
    run: &Run,
    tap: usize,
    iface: u32,
    epoch_ns: u64,
    w: &mut impl CaptureWrite,
) -> io::Result<usize> {
    let mut buf = Vec::with_capacity(9000);
    let mut n = 0;
    for f in run.frames.iter().filter(|f| f.tap == tap) {
        buf.clear();
        append_frame(&f.frame, &mut buf);
        w.write_frame(iface, epoch_ns + f.ts_ns, &buf)?;
        n += 1;
    }
    Ok(n)
}
