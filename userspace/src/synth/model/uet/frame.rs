//! What the UET model emits at a tap ([`UetSpec`], plain data like the
//! RoCE [`crate::synth::model::spec::RoceSpec`]) and its bytes: Ethernet, IPv4,
//! UDP from the entropy value to port 4793 (the transport registry's), a
//! PDS header and an SES header written with
//! `rocescope_common::wire::uet::build` at the decoder's own offsets, then
//! the payload. docs/synth-truth.md ("UET") says what each field holds.

use crate::synth::frame::{EthHeader, IpAddrs, IpHeader, MIN_FRAME_LEN};
use crate::synth::model::spec::{FrameSpec, TransportFrame};
use rocescope_common::proto::{ip, udp};
use rocescope_common::wire::uet::build::{PdsMut, SesMut};
use rocescope_common::wire::uet::pds::{self, PdsType, field as pf};
use rocescope_common::wire::uet::ses::{self, NextHeader, Opcode, ResponseOpcode, field as sf};
use rocescope_common::wire::{Recognition, TransportId};
use serde::Serialize;
use std::any::Any;
use std::net::Ipv4Addr;

/// UET's UDP port, as the transport registry has it (IANA 4793).
pub const UET_PORT: u16 = Recognition::DEFAULT.udp_port(TransportId::Uet);

/// A RUD request: one packet of a WRITE message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Request {
    pub psn: u32,
    pub spdcid: u16,
    /// The target's PDC id; `None` while the initiator has not learnt it
    /// (SYN set, the PSN offset from the PDC's start in its place).
    pub dpdcid: Option<u16>,
    pub psn_offset: u16,
    /// The clear PSN offset: how far back from `psn` the initiator
    /// holds nothing unacknowledged.
    pub clear_psn_offset: i16,
    pub retx: bool,
    pub ar: bool,
    pub som: bool,
    pub eom: bool,
    pub message_id: u16,
    pub message_offset: u32,
    /// The payload it was sent with (its SES payload length says so even
    /// after a switch trimmed it).
    pub len: u32,
    pub message_len: u32,
    pub job_id: u32,
    pub memory_key: u64,
}

/// An ACK_CC with NSCC state and the default SES response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ack {
    pub cack_psn: u32,
    /// The PSN that drew the ACK, from `cack_psn`.
    pub ack_psn_offset: i16,
    pub spdcid: u16,
    pub dpdcid: u16,
    /// The acknowledged packet arrived CE-marked (flag M).
    pub ecn_marked: bool,
    /// Bit `i` (least significant first): PSN `cack_psn` + `sack_psn_offset` + `i` received.
    pub sack_psn_offset: u16,
    pub sack_bitmap: u64,
    pub service_time: u16,
    pub rcvd_bytes: u32,
    pub ooo_count: u16,
    pub message_id: u16,
    pub modified_length: u32,
}

/// A NACK: one PSN and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Nack {
    pub code: u8,
    pub psn: u32,
    pub spdcid: u16,
    pub dpdcid: u16,
    /// The largest PSN received, plus one.
    pub max_recv_psn_plus_1: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "pds", rename_all = "lowercase")]
pub enum Pdu {
    Request(Request),
    Ack(Ack),
    Nack(Nack),
}

/// One UET frame over UDP.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UetSpec {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src_ip: Ipv4Addr,
    pub dst_ip: Ipv4Addr,
    pub dscp: u8,
    pub ecn: u8,
    pub ttl: u8,
    /// The entropy value: the UDP source port, what ECMP hashes.
    pub entropy: u16,
    pub pdu: Pdu,
    /// Bytes after the SES header (a trimmed request's: 0).
    pub payload_len: u32,
    /// A switch trimmed it: the payload cut, the DSCP re-marked.
    pub trimmed: bool,
}

const RESPONSE_LEN: usize = ses::RESPONSE_LEN;

impl UetSpec {
    fn pds_type(&self) -> PdsType {
        match self.pdu {
            Pdu::Request(_) => PdsType::RudRequest,
            Pdu::Ack(_) => PdsType::AckCc,
            Pdu::Nack(_) => PdsType::Nack,
        }
    }

    fn next_header(&self) -> NextHeader {
        match self.pdu {
            Pdu::Request(_) => NextHeader::RequestStandard,
            Pdu::Ack(_) => NextHeader::Response,
            Pdu::Nack(_) => NextHeader::None,
        }
    }

    /// The UDP payload's length: PDS, SES, payload.
    pub fn uet_len(&self) -> usize {
        self.pds_type().header_len() + self.next_header().header_len() + self.payload_len as usize
    }

    /// Length on the wire, FCS included (as `FrameSpec::frame_len`).
    pub fn frame_len(&self) -> u32 {
        let l = 14 + ip::IPV4_MIN_HEADER_LEN + udp::HEADER_LEN + self.uet_len();
        (l.max(MIN_FRAME_LEN) + 4) as u32
    }

    /// Appends the Ethernet frame (no FCS) to `out`.
    pub fn append(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let uet_len = self.uet_len();
        let udp_len = udp::HEADER_LEN + uet_len;
        let eth = EthHeader {
            dst: self.dst_mac,
            src: self.src_mac,
            outer_vlan: None,
            vlan: None,
        };
        let ip_header = IpHeader {
            addrs: IpAddrs::V4 {
                src: self.src_ip,
                dst: self.dst_ip,
            },
            dscp: self.dscp,
            ecn: self.ecn,
            ttl: self.ttl,
            ..IpHeader::default()
        };
        eth.append(out, ip_header.ethertype());
        ip_header.append(out, ip::PROTO_UDP, udp_len);
        use rocescope_common::wire::field::udp as fu;
        let mut h = [0u8; udp::HEADER_LEN];
        h[fu::SRC_PORT..fu::SRC_PORT + 2].copy_from_slice(&self.entropy.to_be_bytes());
        h[fu::DST_PORT..fu::DST_PORT + 2].copy_from_slice(&UET_PORT.to_be_bytes());
        h[fu::LENGTH..fu::LENGTH + 2].copy_from_slice(&(udp_len as u16).to_be_bytes());
        out.extend_from_slice(&h);
        let at = out.len();
        out.resize(at + uet_len, 0);
        self.write_uet(&mut out[at..]);
        if out.len() - start < MIN_FRAME_LEN {
            out.resize(start + MIN_FRAME_LEN, 0);
        }
    }

    /// PDS, SES and payload into `b` (exactly `uet_len` bytes, zeroed).
    fn write_uet(&self, b: &mut [u8]) {
        let pds_len = self.pds_type().header_len();
        let (head, rest) = b.split_at_mut(pds_len.min(b.len()));
        let Ok(mut p) = PdsMut::new_checked(head, self.pds_type()) else {
            return;
        };
        let nh = self.next_header() as u8;
        match &self.pdu {
            Pdu::Request(r) => {
                let flags = flag(r.retx, pf::FLAG_RETX)
                    | flag(r.ar, pf::FLAG_AR)
                    | flag(r.dpdcid.is_none(), pf::FLAG_SYN);
                p.set_prefix(nh, flags);
                p.set_clear_psn_offset(r.clear_psn_offset);
                p.set_psn(r.psn);
                match r.dpdcid {
                    Some(d) => p.set_pdc_ids(r.spdcid, d),
                    None => p.set_syn_pdc(r.spdcid, false, r.psn_offset),
                }
                let Ok(mut s) = SesMut::new_checked(rest, NextHeader::RequestStandard) else {
                    return;
                };
                s.set_opcode(Opcode::Write as u8);
                s.set_request_flags(flag(r.som, sf::FLAG_SOM) | flag(r.eom, sf::FLAG_EOM));
                s.set_message_id(r.message_id);
                s.set_job(0, r.job_id);
                s.set_target(1, 1);
                s.set_buffer_offset(0);
                s.set_initiator_key(u32::from(r.spdcid), r.memory_key);
                if !r.som {
                    s.set_payload_at(r.len as u16, r.message_offset);
                }
                s.set_request_length(r.message_len);
                let at = ses::STANDARD_LEN.min(rest.len());
                let payload = &mut rest[at..];
                let seed = r.psn as u8;
                for (i, x) in payload.iter_mut().enumerate() {
                    *x = seed.wrapping_add(i as u8);
                }
            }
            Pdu::Ack(a) => {
                p.set_prefix(nh, flag(a.ecn_marked, pf::FLAG_M));
                p.set_ack_psns(a.cack_psn, a.ack_psn_offset);
                p.set_pdc_ids(a.spdcid, a.dpdcid);
                // CC type 0: NSCC; the maximum PSN range the receiver tracks.
                p.set_ack_ext(0, MPR, a.sack_psn_offset, a.sack_bitmap);
                p.set_nscc(a.service_time, false, 0, a.rcvd_bytes, a.ooo_count);
                let Ok(mut s) = SesMut::new_checked(rest, NextHeader::Response) else {
                    return;
                };
                s.set_opcode(ResponseOpcode::DefaultResponse as u8);
                s.set_return_code(0);
                s.set_message_id(a.message_id);
                s.set_job(0, 0);
                s.set_modified_length(a.modified_length);
                debug_assert!(rest.len() >= RESPONSE_LEN);
            }
            Pdu::Nack(n) => {
                p.set_prefix(nh, 0);
                p.set_psn(n.psn);
                p.set_pdc_ids(n.spdcid, n.dpdcid);
                p.set_nack(n.code, 0, n.max_recv_psn_plus_1);
            }
        }
    }

    /// The request, if it is one.
    pub fn request(&self) -> Option<&Request> {
        match &self.pdu {
            Pdu::Request(r) => Some(r),
            _ => None,
        }
    }
}

/// How the shared fabric carries a UET frame (`FrameSpec::Transport`).
impl TransportFrame for UetSpec {
    fn frame_len(&self) -> u32 {
        UetSpec::frame_len(self)
    }

    fn route(&mut self) {
        self.ttl = self.ttl.saturating_sub(1);
    }

    fn set_macs(&mut self, src: [u8; 6], dst: [u8; 6]) {
        self.src_mac = src;
        self.dst_mac = dst;
    }

    fn append(&self, out: &mut Vec<u8>) {
        UetSpec::append(self, out);
    }

    fn boxed_clone(&self) -> Box<dyn TransportFrame> {
        Box::new(self.clone())
    }

    fn same(&self, other: &dyn TransportFrame) -> bool {
        (other as &dyn Any).downcast_ref::<UetSpec>() == Some(self)
    }
}

/// `frame`'s UET spec, if it is a UET frame.
pub fn of(frame: &FrameSpec) -> Option<&UetSpec> {
    frame.transport()
}

/// `spec` as a frame the fabric carries.
pub fn carried(spec: UetSpec) -> FrameSpec {
    FrameSpec::Transport(Box::new(spec))
}

/// The maximum PSN range an ACK_CC states (the receiver's window).
pub const MPR: u8 = 64;

fn flag<T: Default>(on: bool, bit: T) -> T {
    if on { bit } else { T::default() }
}

const _: () = assert!(pds::ACK_CC_LEN == 32 && pds::NACK_LEN == 16);
