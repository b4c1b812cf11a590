//! What the model emits at a tap: plain data, one variant per frame kind.
//! Turning a [`FrameSpec`] into bytes (with a valid ICRC) is the frame
//! builder's job; these structs carry exactly the fields it needs.

use serde::Serialize;
use std::any::Any;
use std::fmt::Debug;
use std::net::Ipv4Addr;

/// 802.1Q tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Vlan {
    pub vid: u16,
    pub pcp: u8,
}

/// RDMA Extended Transport Header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Reth {
    pub va: u64,
    pub rkey: u32,
    pub len: u32,
}

/// ACK Extended Transport Header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Aeth {
    pub syndrome: u8,
    pub msn: u32,
}

/// A RoCEv2 request or response (RC RDMA WRITE packets, ACKs, NAKs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RoceSpec {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub vlan: Option<Vlan>,
    pub src_ip: Ipv4Addr,
    pub dst_ip: Ipv4Addr,
    pub dscp: u8,
    pub ecn: u8,
    /// IP TTL.
    pub ttl: u8,
    pub udp_sport: u16,
    pub opcode: u8,
    pub fecn: bool,
    pub becn: bool,
    pub dest_qp: u32,
    pub ack_req: bool,
    pub psn: u32,
    pub reth: Option<Reth>,
    pub aeth: Option<Aeth>,
    pub payload_len: u32,
    /// A bit error hit the frame on a link: its ICRC (and FCS) is wrong.
    pub corrupt: bool,
    /// A switch trimmed it (`switch.trim_bytes`): payload cut, IP length
    /// made to match, DSCP re-marked; its ICRC (the sender's) cannot match.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub trimmed: bool,
}

/// A RoCEv2 Congestion Notification Packet (BTH opcode 0x81, BECN set).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CnpSpec {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub vlan: Option<Vlan>,
    pub src_ip: Ipv4Addr,
    pub dst_ip: Ipv4Addr,
    pub dscp: u8,
    pub ecn: u8,
    /// IP TTL.
    pub ttl: u8,
    pub udp_sport: u16,
    pub dest_qp: u32,
    pub fecn: bool,
    pub becn: bool,
}

/// An 802.1Qbb PFC frame (MAC Control opcode 0x0101).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PfcSpec {
    pub src_mac: [u8; 6],
    /// Always 01:80:C2:00:00:01.
    pub dst_mac: [u8; 6],
    pub enable_vector: u16,
    pub quanta: [u16; 8],
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum FrameSpec {
    Roce(RoceSpec),
    Cnp(CnpSpec),
    Pfc(PfcSpec),
    /// A frame of a transport beside RoCE, as its own model made it
    /// (its spec behind [`TransportFrame`]); the RoCE-only steps of the
    /// fabric, the bridge and the truth pass it by.
    #[serde(skip)]
    Transport(Box<dyn TransportFrame>),
}

/// A frame of a transport beside RoCE, the way the shared fabric carries
/// it: its length, routing and addressing, and its bytes. The transport's
/// model reads its own spec back with [`FrameSpec::transport`].
pub trait TransportFrame: Any + Debug + Send + Sync {
    /// Length on the wire, FCS included (as [`FrameSpec::frame_len`]).
    fn frame_len(&self) -> u32;
    /// As a router sends it on: IP TTL one less.
    fn route(&mut self);
    fn set_macs(&mut self, src: [u8; 6], dst: [u8; 6]);
    /// Appends the Ethernet frame (no FCS) to `out`.
    fn append(&self, out: &mut Vec<u8>);
    fn boxed_clone(&self) -> Box<dyn TransportFrame>;
    /// The same frame (`other` of the same type, equal).
    fn same(&self, other: &dyn TransportFrame) -> bool;
}

impl Clone for Box<dyn TransportFrame> {
    fn clone(&self) -> Self {
        self.boxed_clone()
    }
}

impl PartialEq for dyn TransportFrame {
    fn eq(&self, other: &Self) -> bool {
        self.same(other)
    }
}

impl Eq for dyn TransportFrame {}

/// PFC / PAUSE destination address.
pub const MAC_CONTROL_DST: [u8; 6] = [0x01, 0x80, 0xC2, 0x00, 0x00, 0x01];

impl FrameSpec {
    /// Frame length on the wire (Ethernet header to FCS, padded to 64 bytes).
    pub fn frame_len(&self) -> u32 {
        let len = match self {
            FrameSpec::Roce(r) => {
                let mut l = 14 + 20 + 8 + 12 + r.payload_len + 4 + 4;
                if r.vlan.is_some() {
                    l += 4;
                }
                if r.reth.is_some() {
                    l += 16;
                }
                if r.aeth.is_some() {
                    l += 4;
                }
                l
            }
            FrameSpec::Cnp(c) => {
                14 + 20 + 8 + 12 + 16 + 4 + 4 + if c.vlan.is_some() { 4 } else { 0 }
            }
            FrameSpec::Pfc(_) => 64,
            FrameSpec::Transport(t) => t.frame_len(),
        };
        len.max(64)
    }

    /// The frame as a router sends it on: IP TTL one less (PFC frames are
    /// not routed and stay as they are).
    pub fn routed(&self) -> FrameSpec {
        let mut f = self.clone();
        match &mut f {
            FrameSpec::Roce(r) => r.ttl = r.ttl.saturating_sub(1),
            FrameSpec::Cnp(c) => c.ttl = c.ttl.saturating_sub(1),
            FrameSpec::Transport(t) => t.route(),
            FrameSpec::Pfc(_) => {}
        }
        f
    }

    pub fn as_roce(&self) -> Option<&RoceSpec> {
        match self {
            FrameSpec::Roce(r) => Some(r),
            _ => None,
        }
    }

    /// A transport's own frame spec `T`, if the frame is one.
    pub fn transport<T: TransportFrame>(&self) -> Option<&T> {
        match self {
            FrameSpec::Transport(t) => (&**t as &dyn Any).downcast_ref(),
            _ => None,
        }
    }

    pub(crate) fn set_macs(&mut self, src: [u8; 6], dst: [u8; 6]) {
        match self {
            FrameSpec::Roce(r) => {
                r.src_mac = src;
                r.dst_mac = dst;
            }
            FrameSpec::Cnp(c) => {
                c.src_mac = src;
                c.dst_mac = dst;
            }
            FrameSpec::Transport(t) => t.set_macs(src, dst),
            FrameSpec::Pfc(_) => {}
        }
    }
}

/// One frame seen at one tap.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TapFrame {
    pub ts_ns: u64,
    /// Index into the run's tap list.
    pub tap: usize,
    pub frame: FrameSpec,
}

/// Why a requester went back (the model's own reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    Nak,
    Rnr,
    Timeout,
}

/// What the model knows about a frame beyond its bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FrameMeta {
    /// Index of the configured flow the frame belongs to (data, ACK/NAK, CNP).
    pub flow: Option<usize>,
    /// The requester had sent this PSN before.
    pub retrans: bool,
    /// First packet after a Go-Back-N, with the requester's reason.
    pub rewind: Option<Trigger>,
    /// A resend of a packet the responder had already acknowledged.
    pub spurious: bool,
    /// Request packets: the packet's index in its connection (PSN =
    /// start PSN + index, mod 2^24) and its place in the order the
    /// requester sent packets (first transmissions and resends alike).
    pub index: Option<u64>,
    pub send_seq: u64,
    /// Resends: which of the connection's Go-Back-N rewinds (0, 1, …) the
    /// packet was resent in.
    pub rewind_no: Option<u64>,
    /// ACKs: one past the highest index the ACK covers.
    pub acked: Option<u64>,
    /// The network delayed the frame (the `reorder` impairment of a link it
    /// crossed before this point).
    pub delayed: bool,
    /// This record is the mirror's second copy of a frame it had recorded.
    pub copy: bool,
    /// Responses (ACK, NAK): their place in the order the responder sent
    /// the connection's responses (one transmission each: never resent).
    pub resp_seq: Option<u64>,
    /// PFC frames: the pause episode (index into `Run::pauses`) they
    /// start, refresh or end.
    pub pause: Option<usize>,
}

/// A frame a tap should have recorded and did not (its `drop` impairment).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TapDrop {
    pub ts_ns: u64,
    pub tap: usize,
    pub meta: FrameMeta,
}
