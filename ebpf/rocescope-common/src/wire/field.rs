//! Where each header field starts, named once after its spec (the
//! `smoltcp::wire` `field` modules): the walk reads at these offsets and
//! synth writes at them. Lengths are in [`crate::proto`].

/// Ethernet II (IEEE 802.3 clause 3).
pub mod ethernet {
    pub const DESTINATION: usize = 0;
    pub const SOURCE: usize = 6;
    pub const ETHERTYPE: usize = 12;
}

/// One IEEE 802.1Q / 802.1ad tag, after the TPID that announced it.
pub mod vlan {
    /// Tag control information: PCP (3 bits), DEI (1), VID (12).
    pub const TCI: usize = 0;
    pub const ETHERTYPE: usize = 2;
    pub const PCP_SHIFT: u16 = 13;
    pub const DEI: u16 = 0x1000;
    pub const VID_MASK: u16 = 0x0FFF;
}

/// IPv4 (RFC 791 §3.1).
pub mod ipv4 {
    /// Version (4 bits), IHL (4 bits, in 32-bit words).
    pub const VER_IHL: usize = 0;
    /// Type of service: DSCP (6 bits), ECN (2).
    pub const TOS: usize = 1;
    pub const LENGTH: usize = 2;
    pub const IDENT: usize = 4;
    /// Flags (3 bits) and fragment offset (13).
    pub const FLG_OFF: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC_ADDR: usize = 12;
    pub const DST_ADDR: usize = 16;
    /// Don't Fragment, in the FLG_OFF word.
    pub const FLAG_DF: u16 = 0x4000;
    /// More Fragments, in the FLG_OFF word.
    pub const FLAG_MF: u16 = 0x2000;
    pub const FRAG_OFFSET_MASK: u16 = 0x1FFF;
}

/// IPv6 (RFC 8200 §3).
pub mod ipv6 {
    /// Version (4 bits), traffic class (8), flow label (20).
    pub const VER_TC_FLOW: usize = 0;
    pub const PAYLOAD_LEN: usize = 4;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: usize = 8;
    pub const DST_ADDR: usize = 24;
}

/// IPv6 hop-by-hop, routing and destination-options headers (RFC 8200 §4).
pub mod ipv6_ext {
    pub const NXT_HDR: usize = 0;
    /// In 8-byte units, not counting the first 8 bytes.
    pub const LENGTH: usize = 1;
}

/// IPv6 Fragment header (RFC 8200 §4.5).
pub mod ipv6_frag {
    pub const NXT_HDR: usize = 0;
    /// Fragment offset (13 bits, shifted left by 3), two reserved bits, M.
    pub const FRAG_OFF: usize = 2;
    pub const OFFSET_SHIFT: u16 = 3;
    pub const FLAG_M: u16 = 0x0001;
}

/// UDP (RFC 768).
pub mod udp {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const LENGTH: usize = 4;
    pub const CHECKSUM: usize = 6;
}

/// GRE (RFC 2784 / 2890).
pub mod gre {
    /// C, R, K, S flags, reserved, version.
    pub const FLAGS_VERSION: usize = 0;
    pub const PROTOCOL: usize = 2;
}

/// ERSPAN II and III headers (draft-foschiano-erspan).
pub mod erspan {
    /// The byte holding COS, BSO/En and T (truncated) in both versions.
    pub const COS_T: usize = 2;
    /// T: the switch cut the mirrored frame.
    pub const T_FLAG: u8 = 0x04;
    /// ERSPAN III: the 32-bit timestamp.
    pub const III_TIMESTAMP: usize = 4;
    /// ERSPAN III: the byte holding the low HW ID bits, D, Gra (2 bits) and
    /// O (platform subheader follows).
    pub const III_HW_D_GRA_O: usize = 11;
    /// ERSPAN III platform subheader: Platform ID in the top 6 bits.
    pub const PLATFORM_ID: usize = 0;
    /// ERSPAN III platform subheader: its second word (the upper timestamp
    /// bits or the seconds, by platform id).
    pub const PLATFORM_UPPER: usize = 4;
}

/// InfiniBand Global Route Header (IBA Vol. 1 §8.3; RoCE Annex A16): laid
/// out like an IPv6 header.
pub mod grh {
    /// IPVer (4 bits, 6), TClass (8), FlowLabel (20).
    pub const IPVER_TCLASS_FLOWLABEL: usize = 0;
    /// Bytes after the GRH: the transport headers, payload, pad and ICRC.
    pub const PAYLEN: usize = 4;
    pub const NXTHDR: usize = 6;
    pub const HOPLMT: usize = 7;
    pub const SGID: usize = 8;
    pub const DGID: usize = 24;
}

/// InfiniBand Local Route Header (IBA Vol. 1 §7.7).
pub mod lrh {
    /// VL (4 bits), LVer (4).
    pub const VL_LVER: usize = 0;
    /// SL (4 bits), reserved (2), LNH (2).
    pub const SL_LNH: usize = 1;
    pub const LNH_MASK: u8 = 0x03;
    pub const DLID: usize = 2;
    /// Reserved (5 bits), PktLen (11, in 4-byte words).
    pub const PKT_LEN: usize = 4;
    pub const PKT_LEN_MASK: u16 = 0x07FF;
    pub const SLID: usize = 6;
}

/// InfiniBand Base Transport Header (IBA Vol. 1 §9.2).
pub mod bth {
    pub const OPCODE: usize = 0;
    /// SE (1 bit), M (1), PadCnt (2), TVer (4).
    pub const SE_M_PAD_TVER: usize = 1;
    pub const P_KEY: usize = 2;
    /// FECN (1), BECN (1), reserved (6): the ICRC masks this byte (A17.3.3).
    pub const FECN_BECN: usize = 4;
    /// DestQP (24 bits).
    pub const DEST_QP: usize = 5;
    /// AckReq (1), reserved (7).
    pub const ACKREQ: usize = 8;
    pub const PSN: usize = 9;
    pub const SE: u8 = 0x80;
    pub const MIGREQ: u8 = 0x40;
    pub const PAD_SHIFT: u8 = 4;
    pub const PAD_MASK: u8 = 0x03;
    pub const TVER_MASK: u8 = 0x0F;
    pub const FECN: u8 = 0x80;
    pub const BECN: u8 = 0x40;
    pub const ACK_REQ: u8 = 0x80;
}

/// Reliable Datagram Extended Transport Header (§9.3.1).
pub mod rdeth {
    /// EE-context (24 bits) after a reserved byte.
    pub const EE_CNXT: usize = 1;
}

/// Datagram Extended Transport Header (§9.3.2).
pub mod deth {
    pub const Q_KEY: usize = 0;
    /// Source QP (24 bits) after a reserved byte.
    pub const SRC_QP: usize = 5;
}

/// XRC Extended Transport Header (§9.3.3 of the XRC annex).
pub mod xrceth {
    /// XRC SRQ (24 bits) after a reserved byte.
    pub const XRC_SRQ: usize = 1;
}

/// FLUSH Extended Transport Header (IBA 1.5, FLUSH only): 26 reserved
/// bits, the selectivity level (2 bits), the placement type (4 bits).
pub mod feth {
    /// The byte holding SelectivityLevel (bits 5–4) and PlacementType (3–0).
    pub const SEL_PLT: usize = 3;
    pub const SEL_SHIFT: u8 = 4;
    pub const SEL_MASK: u8 = 0x03;
    pub const PLT_MASK: u8 = 0x0F;
}

/// RDMA Extended Transport Header (§9.3.3).
pub mod reth {
    pub const VA: usize = 0;
    pub const R_KEY: usize = 8;
    pub const DMA_LEN: usize = 12;
}

/// Atomic Extended Transport Header (§9.3.4).
pub mod atomic_eth {
    pub const VA: usize = 0;
    pub const R_KEY: usize = 8;
    pub const SWAP_ADD_DATA: usize = 12;
    pub const COMPARE_DATA: usize = 20;
}

/// ACK Extended Transport Header (§9.3.5).
pub mod aeth {
    pub const SYNDROME: usize = 0;
    pub const MSN: usize = 1;
}

/// Atomic Acknowledge Extended Transport Header (§9.3.6).
pub mod atomic_ack_eth {
    pub const ORIG_REM_DT: usize = 0;
}

/// Immediate Data Extended Transport Header (§9.3.7).
pub mod immdt {
    pub const IMMEDIATE_DATA: usize = 0;
}

/// Invalidate Extended Transport Header (§9.3.8).
pub mod ieth {
    pub const R_KEY: usize = 0;
}

/// MAC Control frames (IEEE 802.3 Annex 31B, 802.1Qbb).
pub mod mac_control {
    pub const OPCODE: usize = 0;
    /// 802.3x PAUSE: pause_time.
    pub const PAUSE_TIME: usize = 2;
    /// PFC: priority-enable vector (its top byte reserved).
    pub const CLASS_ENABLE_VECTOR: usize = 2;
    /// PFC: time[0..8], two bytes each.
    pub const TIMES: usize = 4;
}

/// Linux cooked capture headers (LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2).
pub mod sll {
    /// SLL: the protocol (an EtherType) after packet type, ARPHRD type and address.
    pub const PROTOCOL: usize = 14;
    /// SLL2: the protocol comes first.
    pub const SLL2_PROTOCOL: usize = 0;
}
