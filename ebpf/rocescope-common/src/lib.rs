//! What the kernel decoder (XDP) and the userspace decoder agree on: the
//! fixed-layout [`PacketRecord`] both produce, the protocol constants
//! both parse with, and the frame walk itself ([`wire`]).
//!
//! `no_std`, no dependencies, no padding: a record is plain bytes, so it can
//! cross a BPF ring buffer as is and two records compare byte for byte.
#![no_std]

mod block;
pub mod live;
pub mod proto;
pub mod summary;
pub mod wire;

pub use block::{
    BLOCK_SIZE, BlockTag, LinkControlView, RoceView, TRANSPORT_BLOCK_SIZE, TransportBlock,
};
pub use wire::registry::Kind;

/// Which parts of [`PacketRecord`] hold a value (`HAS_*`) and the one-bit
/// protocol fields (the rest). A field whose `HAS_*` bit is clear is null in
/// the tables.
pub mod flags {
    /// At least one 802.1Q tag: `vlan`, `pcp` are the innermost tag's.
    pub const HAS_VLAN: u32 = 1 << 0;
    /// Two or more tags (QinQ): `outer_vlan` is the outermost tag's id.
    pub const HAS_OUTER_VLAN: u32 = 1 << 1;
    /// The frame arrived inside ERSPAN (II or III) over GRE and was unwrapped.
    pub const ERSPAN: u32 = 1 << 2;
    /// `src_ip`, `dst_ip`, `dscp`, `ecn` hold an IPv4 header's values
    /// (IPv4-mapped IPv6 form in the address fields).
    pub const HAS_IPV4: u32 = 1 << 3;
    /// Same, from an IPv6 header.
    pub const HAS_IPV6: u32 = 1 << 4;
    /// `udp_sport` is set.
    pub const HAS_UDP: u32 = 1 << 5;
    /// The BTH fields are set.
    pub const HAS_BTH: u32 = 1 << 6;
    pub const HAS_RETH: u32 = 1 << 7;
    pub const HAS_AETH: u32 = 1 << 8;
    pub const HAS_ATOMIC_ETH: u32 = 1 << 9;
    pub const HAS_ATOMIC_ACK_ETH: u32 = 1 << 10;
    pub const HAS_IMMDT: u32 = 1 << 11;
    pub const HAS_IETH: u32 = 1 << 12;
    pub const HAS_DETH: u32 = 1 << 13;
    /// `payload_len` is known (the UDP datagram was whole in the capture or
    /// its length was read from the UDP header).
    pub const HAS_PAYLOAD_LEN: u32 = 1 << 14;
    /// The whole datagram was captured, so the ICRC was checked; `icrc`
    /// holds the value on the wire.
    pub const ICRC_CHECKED: u32 = 1 << 15;
    /// With `ICRC_CHECKED`: the ICRC matched.
    pub const ICRC_OK: u32 = 1 << 16;
    /// BTH solicited event.
    pub const SE: u32 = 1 << 17;
    /// BTH MigReq.
    pub const MIGREQ: u32 = 1 << 18;
    /// BTH FECN (forward explicit congestion notification).
    pub const FECN: u32 = 1 << 19;
    /// BTH BECN (backward explicit congestion notification).
    pub const BECN: u32 = 1 << 20;
    /// BTH AckReq.
    pub const ACK_REQ: u32 = 1 << 21;
    /// `pfc_enable` and `pfc_quanta` are set (kind `pfc`).
    pub const HAS_PFC: u32 = 1 << 22;
    /// `pause_quanta` is set (kind `pause`).
    pub const HAS_PAUSE: u32 = 1 << 23;
    /// The RoCE (or UET) datagram is cut short of the length its IP/UDP
    /// headers declare (a snap length, a sniffer that records `orig_len ==
    /// caplen`, or a switch's ERSPAN truncation): a RoCE frame's ICRC cannot
    /// be checked. Userspace decoder only.
    pub const CUT: u32 = 1 << 24;
    /// RoCEv1: `src_ip`, `dst_ip` hold the GRH's source and destination
    /// GIDs, `dscp` and `ecn` its TClass (there is no IP or UDP header;
    /// `udp_sport` is unset).
    /// On native InfiniBand (`IB_LRH`): a GRH follows the LRH (its TClass
    /// is not read).
    pub const HAS_GRH: u32 = 1 << 25;
    /// A native InfiniBand packet (LINKTYPE_INFINIBAND, ERF InfiniBand):
    /// `src_ip`/`dst_ip` hold the GRH's GIDs (`HAS_GRH`) or the LRH's LIDs
    /// (`proto::lrh::lid_addr`); no IP, UDP or Ethernet fields. Userspace
    /// decoder only.
    pub const IB_LRH: u32 = 1 << 31;
    /// With `IB_LRH`: the VCRC was captured and checked.
    pub const VCRC_CHECKED: u32 = 1 << 29;
    /// With `VCRC_CHECKED`: it matched.
    pub const VCRC_OK: u32 = 1 << 28;
    /// The frame came in ERSPAN III: `hw_time` and `hw_time_format` hold
    /// the switch's timestamp of it.
    pub const HAS_HW_TIME: u32 = 1 << 27;
    /// Switch telemetry (INT-MD or IFA) sat between the IP or UDP header
    /// and the BTH; the walk stepped over it (`wire::telemetry`).
    pub const TELEMETRY: u32 = 1 << 26;

    /// `dscp` and `ecn` hold a traffic class: an IP header's, or a RoCEv1
    /// GRH's TClass (read as IPv6's; native InfiniBand's GRH is not, see
    /// docs/inputs.md).
    pub const fn traffic_class(flags: u32) -> bool {
        flags & (HAS_IPV4 | HAS_IPV6) != 0 || (flags & HAS_GRH != 0 && flags & IB_LRH == 0)
    }
}

/// `PacketRecord::hw_time_format`: how to read an ERSPAN III timestamp
/// (Wireshark's `packet-cisco-erspan.c` names the fields: the Gra bits of
/// the header's last 16-bit word, mask 0x0006, and the platform
/// subheader's second word).
pub mod hw_time {
    /// The granularity (Gra) bits, shifted down: one of the values below.
    pub const GRANULARITY_MASK: u8 = 0x03;
    /// Ticks of 100 µs.
    pub const GRA_100_US: u8 = 0;
    /// Ticks of 100 ns.
    pub const GRA_100_NS: u8 = 1;
    /// IEEE 1588: nanoseconds (the subheader, if any, has the seconds).
    pub const GRA_IEEE_1588: u8 = 2;
    /// User-defined: units the capture does not say.
    pub const GRA_USER: u8 = 3;
    /// The platform subheader carried the upper 32 bits of the timestamp
    /// (platform ids 3, 7 and 0) or, for IEEE 1588, its seconds (ids 5
    /// and 6): `hw_time`'s high half holds it.
    pub const UPPER: u8 = 0x04;
    /// With `UPPER`: it is IEEE 1588 seconds (platform ids 5 and 6).
    pub const UPPER_IS_SECONDS: u8 = 0x08;
}

/// One decoded frame: every field the tables and the analyzer use.
///
/// The fields every frame has are the record's own; a transport's (and
/// link-level flow control's) share the [`TransportBlock`], read through
/// the views [`PacketRecord::roce`], [`PacketRecord::link_control`] and
/// [`PacketRecord::uet`], which check whose fields the block holds.
///
/// Fields are ordered by alignment so that `repr(C)` inserts no padding
/// (checked below): every byte is initialised, which the BPF verifier and a
/// byte-for-byte comparison both need.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct PacketRecord {
    /// 1-based frame number in its capture (set by the source, not the decoder).
    pub frame: u64,
    /// Capture timestamp, nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// The transport's fields (or PFC's and PAUSE's), behind `block_tag`.
    pub block: TransportBlock,
    /// The switch's hardware timestamp of the mirrored frame (`HAS_HW_TIME`):
    /// the ERSPAN III header's 32-bit timestamp in the low half, the
    /// platform subheader's upper word in the high half when it has one
    /// (`hw_time::UPPER`); as the switch wrote them, in the units
    /// `hw_time_format` names (docs/inputs.md, "Hardware time").
    pub hw_time: u64,
    /// Length of the frame on the wire.
    pub frame_len: u32,
    /// Bytes of it in the capture (snaplen may cut).
    pub cap_len: u32,
    /// Which `flags` are set.
    pub flags: u32,
    /// Bytes of application payload: after the BTH and its extension headers,
    /// before pad and ICRC; UET: after the last PDS or SES header (behind a
    /// TSS header, the encrypted bytes, integrity check value included).
    pub payload_len: u32,
    /// IPv6 address, or IPv4-mapped (`::ffff:a.b.c.d`) for IPv4; the
    /// source GID for RoCEv1 (`HAS_GRH`).
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    /// Index of the capture interface (source-assigned).
    pub iface: u16,
    /// Innermost 802.1Q VLAN id.
    pub vlan: u16,
    /// Outermost VLAN id when there are two or more tags.
    pub outer_vlan: u16,
    pub udp_sport: u16,
    /// Index of the capture file among the run's inputs (source-assigned;
    /// 0 for the live tap).
    pub capture: u16,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    /// [`Kind`] as u8.
    pub kind: u8,
    /// Innermost 802.1Q priority code point.
    pub pcp: u8,
    /// DSCP (6 bits) of the IP traffic class or the RoCEv1 GRH's TClass.
    pub dscp: u8,
    /// ECN (2 bits; 3 = CE), of the same.
    pub ecn: u8,
    /// Whose fields `block` holds.
    pub block_tag: BlockTag,
    /// `hw_time::*`: the ERSPAN III granularity and what the upper word is.
    pub hw_time_format: u8,
    /// Keeps the size a multiple of 8 with every byte named (summary mode
    /// marks forwarded records in the first: `summary::record_marks`).
    pub _reserved: [u8; 4],
}

/// Size of a record on the ring buffer and in memory.
pub const PACKET_RECORD_SIZE: usize = 200;

// No hidden padding: the named fields add up to the size.
const _: () = assert!(core::mem::size_of::<PacketRecord>() == PACKET_RECORD_SIZE);
const _: () = assert!(
    3 * 8 + TRANSPORT_BLOCK_SIZE + 4 * 4 + 2 * 16 + 5 * 2 + 2 * 6 + 4 + 2 + 4 == PACKET_RECORD_SIZE
);
// A transport's block tag is its registry id (`TransportId::from_tag`);
// the other owners' tags are none.
const _: () = assert!(block::tag::ROCE == wire::TransportId::Roce as u8);
const _: () = assert!(wire::TransportId::from_tag(block::tag::NONE).is_none());
const _: () = assert!(wire::TransportId::from_tag(block::tag::LINK_CONTROL).is_none());
const _: () = assert!(block::tag::NONE != block::tag::LINK_CONTROL);
// The block's words are 8-aligned in the record.
const _: () = assert!(core::mem::offset_of!(PacketRecord, block) % 8 == 0);

impl core::fmt::Debug for PacketRecord {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut d = f.debug_struct("PacketRecord");
        d.field("frame", &self.frame)
            .field("ts_ns", &self.ts_ns)
            .field("frame_len", &self.frame_len)
            .field("cap_len", &self.cap_len)
            .field("flags", &format_args!("{:#x}", self.flags))
            .field("payload_len", &self.payload_len)
            .field("src_ip", &self.src_ip)
            .field("dst_ip", &self.dst_ip)
            .field("iface", &self.iface)
            .field("vlan", &self.vlan)
            .field("outer_vlan", &self.outer_vlan)
            .field("udp_sport", &self.udp_sport)
            .field("capture", &self.capture)
            .field("src_mac", &self.src_mac)
            .field("dst_mac", &self.dst_mac)
            .field("kind", &self.kind())
            .field("pcp", &self.pcp)
            .field("dscp", &self.dscp)
            .field("ecn", &self.ecn)
            .field("hw_time", &self.hw_time)
            .field("hw_time_format", &self.hw_time_format)
            .field("_reserved", &self._reserved);
        match self.transport() {
            Some(t) => d.field(t.entry().name, t.view_of(self)),
            None if self.block_tag.get() == block::tag::LINK_CONTROL => {
                d.field("link_control", self.link_control())
            }
            None => d.field("block", &self.block),
        };
        d.finish()
    }
}

impl PacketRecord {
    pub const fn kind(&self) -> Kind {
        Kind::from_u8(self.kind)
    }

    pub const fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    /// The transport whose fields the record holds (`wire::registry`):
    /// RoCE for RoCE, CNP and malformed RoCE records, UET for UET ones; none for PFC, PAUSE
    /// and `Other`.
    #[inline(always)]
    pub const fn transport(&self) -> Option<wire::TransportId> {
        wire::TransportId::from_tag(self.block_tag.get())
    }

    /// `Some(true/false)` when the ICRC was checked, `None` when the frame was cut.
    pub const fn icrc_ok(&self) -> Option<bool> {
        if self.has(flags::ICRC_CHECKED) {
            Some(self.has(flags::ICRC_OK))
        } else {
            None
        }
    }

    /// RoCE version of a RoCE, CNP or malformed record: 1 for a GRH
    /// straight in Ethernet (EtherType 0x8915), 2 for UDP to RoCEv2's port;
    /// none on native InfiniBand (`IB_LRH`), which is not RoCE, and on
    /// another transport's records (UET over UDP).
    pub const fn roce_version(&self) -> Option<u8> {
        let other_transport = match self.transport() {
            Some(t) => !matches!(t, wire::TransportId::Roce),
            None => false,
        };
        if self.has(flags::IB_LRH) || other_transport {
            None
        } else if self.has(flags::HAS_GRH) {
            Some(1)
        } else if self.has(flags::HAS_UDP) {
            Some(2)
        } else {
            None
        }
    }

    /// `dscp` and `ecn` hold a traffic class ([`flags::traffic_class`]).
    pub const fn has_traffic_class(&self) -> bool {
        flags::traffic_class(self.flags)
    }

    /// CE-marked: ECN = 11 in the traffic class (IP's, RoCEv1's GRH
    /// TClass), or on InfiniBand FECN set, the mark a congested IB switch
    /// puts on a packet.
    pub const fn is_ce(&self) -> bool {
        (self.has_traffic_class() && self.ecn == proto::ip::ECN_CE)
            || (self.has(flags::IB_LRH) && self.has(flags::FECN))
    }
}
