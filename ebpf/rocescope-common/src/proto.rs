//! Protocol numbers and header sizes, in one place, named after the specs:
//! IEEE 802.3 / 802.1Q / 802.1Qbb, RFC 791 / 8200 / 768 / 2784, the ERSPAN
//! drafts, and the InfiniBand Architecture Specification Vol. 1 with its
//! RoCEv2 annex (A17).

/// Ethernet II.
pub mod ethernet {
    pub const HEADER_LEN: usize = 14;
    pub const ETHERTYPE_IPV4: u16 = 0x0800;
    pub const ETHERTYPE_IPV6: u16 = 0x86DD;
    /// 802.1Q customer tag.
    pub const ETHERTYPE_VLAN: u16 = 0x8100;
    /// 802.1ad service tag (QinQ outer).
    pub const ETHERTYPE_QINQ: u16 = 0x88A8;
    /// Pre-standard QinQ outer tag still sent by some switches.
    pub const ETHERTYPE_QINQ_OLD: u16 = 0x9100;
    pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
    /// RoCE (v1, IBA Annex A16): a GRH and the InfiniBand transport
    /// headers straight in the Ethernet frame.
    pub const ETHERTYPE_ROCE: u16 = 0x8915;
    /// Length of one 802.1Q tag (TCI + inner EtherType).
    pub const VLAN_TAG_LEN: usize = 4;
    /// More tags than this and the frame is not decoded further.
    pub const MAX_VLAN_TAGS: usize = 4;
}

/// MAC Control frames (EtherType 0x8808): 802.3x PAUSE and 802.1Qbb PFC.
pub mod mac_control {
    pub const OPCODE_PAUSE: u16 = 0x0001;
    pub const OPCODE_PFC: u16 = 0x0101;
    /// Opcode (2) + pause_time (2).
    pub const PAUSE_LEN: usize = 4;
    /// Opcode (2) + class-enable vector (2) + 8 × time (2).
    pub const PFC_LEN: usize = 20;
    pub const PRIORITIES: usize = 8;
    /// One quantum is the time to send 512 bits at the link speed.
    pub const BITS_PER_QUANTUM: u64 = 512;
}

/// GRE (RFC 2784/2890) carrying ERSPAN.
pub mod gre {
    pub const IP_PROTO: u8 = 47;
    pub const BASE_LEN: usize = 4;
    pub const FLAG_CHECKSUM: u16 = 0x8000;
    /// RFC 1701 routing-present bit: variable-length source routes follow,
    /// which RFC 2784 deprecated; such packets are not unwrapped.
    pub const FLAG_ROUTING: u16 = 0x4000;
    pub const FLAG_KEY: u16 = 0x2000;
    pub const FLAG_SEQUENCE: u16 = 0x1000;
    /// GRE version bits; only version 0 carries ERSPAN.
    pub const VERSION_MASK: u16 = 0x0007;
    /// ERSPAN type II (and type I, which has no sequence number and no header).
    pub const PROTO_ERSPAN_II: u16 = 0x88BE;
    pub const PROTO_ERSPAN_III: u16 = 0x22EB;
    pub const ERSPAN_II_LEN: usize = 8;
    pub const ERSPAN_III_LEN: usize = 12;
    /// ERSPAN III optional platform-specific subheader (O bit set).
    pub const ERSPAN_III_PLATFORM_LEN: usize = 8;
    /// O flag: lowest bit of the last byte of the ERSPAN III header.
    pub const ERSPAN_III_O_FLAG: u8 = 0x01;
    /// Gra: the two bits above O (mask 0x0006 of the last 16-bit word).
    pub const ERSPAN_III_GRA_SHIFT: u8 = 1;
    /// Platform ID: the top 6 bits of the subheader's first byte.
    pub const ERSPAN_PLATFORM_ID_SHIFT: u8 = 2;
    /// Platform ids whose second word is the upper 32 bits of the
    /// timestamp (0 is an alias of 7 on some platforms).
    pub const ERSPAN_PLATFORM_UPPER: [u8; 3] = [0, 3, 7];
    /// Platform ids whose second word is the timestamp's seconds.
    pub const ERSPAN_PLATFORM_SECONDS: [u8; 2] = [5, 6];
}

/// IPv4 and IPv6.
pub mod ip {
    pub const IPV4_MIN_HEADER_LEN: usize = 20;
    pub const IPV6_HEADER_LEN: usize = 40;
    pub const PROTO_UDP: u8 = 17;
    /// IPv6 extension headers (RFC 8200 §4) a decoder may step over.
    pub const IPV6_HOP_BY_HOP: u8 = 0;
    pub const IPV6_ROUTING: u8 = 43;
    pub const IPV6_FRAGMENT: u8 = 44;
    pub const IPV6_DEST_OPTS: u8 = 60;
    /// IPv6 Fragment header length (fixed).
    pub const IPV6_FRAGMENT_LEN: usize = 8;
    /// More IPv6 extension headers than this and the packet is not decoded.
    pub const MAX_IPV6_EXT_HEADERS: usize = 4;
    pub const ECN_NOT_ECT: u8 = 0b00;
    pub const ECN_ECT1: u8 = 0b01;
    pub const ECN_ECT0: u8 = 0b10;
    /// Congestion Experienced.
    pub const ECN_CE: u8 = 0b11;
}

/// UDP and the RoCEv2 port.
pub mod udp {
    pub const HEADER_LEN: usize = 8;
    /// RoCEv2: the destination port, never the source (that is flow entropy).
    pub const ROCEV2_PORT: u16 = 4791;
}

/// InfiniBand transport headers (IBA Vol. 1, ch. 9) as carried by RoCEv2.
pub mod ib {
    /// Global Route Header (RoCEv1's network header).
    pub const GRH_LEN: usize = 40;
    /// GRH IPVer: the GRH is laid out like an IPv6 header.
    pub const GRH_IPVER: u8 = 6;
    /// GRH NxtHdr of an IBA transport header (a BTH follows).
    pub const GRH_NXTHDR_BTH: u8 = 0x1B;
    /// Base Transport Header.
    pub const BTH_LEN: usize = 12;
    pub const RDETH_LEN: usize = 4;
    pub const DETH_LEN: usize = 8;
    pub const XRCETH_LEN: usize = 4;
    pub const RETH_LEN: usize = 16;
    /// FLUSH Extended Transport Header (IBA 1.5).
    pub const FETH_LEN: usize = 4;
    /// The data an ATOMIC WRITE carries (IBA 1.5): one 8-byte word.
    pub const ATOMIC_WRITE_DATA_LEN: usize = 8;
    pub const ATOMIC_ETH_LEN: usize = 28;
    pub const AETH_LEN: usize = 4;
    pub const ATOMIC_ACK_ETH_LEN: usize = 8;
    pub const IMMDT_LEN: usize = 4;
    pub const IETH_LEN: usize = 4;
    /// What mlx5's Dynamically Connected transport adds after the BTH of
    /// every packet of the RD opcode range (Wireshark: a 20-byte BTH).
    pub const DC_BTH_LEN: usize = 8;
    /// DC Connect ETH of a DC CONNECT packet.
    pub const DCCETH_LEN: usize = 16;
    /// RD RESYNC's opcode: mlx5's DC CONNECT (with a DCCETH when SE is clear).
    pub const OPCODE_DC_CONNECT: u8 = 0x55;
    pub const ICRC_LEN: usize = 4;
    /// CNP: BTH, 16 reserved bytes, ICRC.
    pub const CNP_RESERVED_LEN: usize = 16;

    /// BTH opcode of a RoCEv2 CNP.
    pub const OPCODE_CNP: u8 = 0x81;
    /// The QP that carries connection management MADs (GSI).
    pub const QP1: u32 = 1;
    /// Serial-arithmetic modulus of PSNs (24 bits).
    pub const PSN_MODULUS: u32 = 1 << 24;
    pub const PSN_MASK: u32 = PSN_MODULUS - 1;
    pub const QPN_MASK: u32 = 0x00FF_FFFF;

    /// `a - b` in 24-bit serial arithmetic, in (-2^23, 2^23]: positive when
    /// `a` is after `b` (the analyzer's `psn::diff`; here for the kernel).
    pub const fn psn_diff(a: u32, b: u32) -> i32 {
        let d = a.wrapping_sub(b) & PSN_MASK;
        if d > PSN_MODULUS / 2 {
            d as i32 - PSN_MODULUS as i32
        } else {
            d as i32
        }
    }

    /// Transport service: the top three bits of the opcode.
    pub mod transport {
        pub const RC: u8 = 0b000;
        pub const UC: u8 = 0b001;
        pub const RD: u8 = 0b010;
        pub const UD: u8 = 0b011;
        pub const CNP: u8 = 0b100;
        pub const XRC: u8 = 0b101;

        /// The service's name in the tables (`service` column); `None` for
        /// the reserved values 0b110 and 0b111.
        pub const fn name(service: u8) -> Option<&'static str> {
            match service {
                RC => Some("RC"),
                UC => Some("UC"),
                RD => Some("RD"),
                UD => Some("UD"),
                CNP => Some("CNP"),
                XRC => Some("XRC"),
                _ => None,
            }
        }
    }

    /// The operation: the low five bits of the opcode (same within RC, UC, RD, XRC).
    pub mod op {
        pub const SEND_FIRST: u8 = 0x00;
        pub const SEND_MIDDLE: u8 = 0x01;
        pub const SEND_LAST: u8 = 0x02;
        pub const SEND_LAST_IMM: u8 = 0x03;
        pub const SEND_ONLY: u8 = 0x04;
        pub const SEND_ONLY_IMM: u8 = 0x05;
        pub const WRITE_FIRST: u8 = 0x06;
        pub const WRITE_MIDDLE: u8 = 0x07;
        pub const WRITE_LAST: u8 = 0x08;
        pub const WRITE_LAST_IMM: u8 = 0x09;
        pub const WRITE_ONLY: u8 = 0x0A;
        pub const WRITE_ONLY_IMM: u8 = 0x0B;
        pub const READ_REQUEST: u8 = 0x0C;
        pub const READ_RESPONSE_FIRST: u8 = 0x0D;
        pub const READ_RESPONSE_MIDDLE: u8 = 0x0E;
        pub const READ_RESPONSE_LAST: u8 = 0x0F;
        pub const READ_RESPONSE_ONLY: u8 = 0x10;
        pub const ACKNOWLEDGE: u8 = 0x11;
        pub const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
        pub const COMPARE_SWAP: u8 = 0x13;
        pub const FETCH_ADD: u8 = 0x14;
        /// Reliable Datagram only (0x55): resynchronises an EE context's PSNs.
        pub const RD_RESYNC: u8 = 0x15;
        pub const SEND_LAST_INVALIDATE: u8 = 0x16;
        pub const SEND_ONLY_INVALIDATE: u8 = 0x17;
        /// IBA 1.5: makes earlier writes to a region persistent or visible
        /// (FETH, RETH); answered by a READ response with no data.
        pub const FLUSH: u8 = 0x1C;
        /// IBA 1.5: writes 8 bytes at once (RETH, then the data); answered
        /// as FLUSH is.
        pub const ATOMIC_WRITE: u8 = 0x1D;
    }

    /// Extension headers, one bit each, in the order they follow the BTH.
    pub mod ext {
        pub const RDETH: u16 = 1 << 0;
        pub const DETH: u16 = 1 << 1;
        pub const XRCETH: u16 = 1 << 2;
        pub const RETH: u16 = 1 << 3;
        pub const ATOMIC_ETH: u16 = 1 << 4;
        pub const AETH: u16 = 1 << 5;
        pub const ATOMIC_ACK_ETH: u16 = 1 << 6;
        pub const IMMDT: u16 = 1 << 7;
        pub const IETH: u16 = 1 << 8;
        /// The 8 bytes after the BTH in the RD range (mlx5 DC); first of all.
        pub const DC_BTH: u16 = 1 << 9;
        /// DC Connect ETH, right after `DC_BTH`.
        pub const DCCETH: u16 = 1 << 10;
        /// FLUSH ETH (IBA 1.5), after the XRCETH and before the RETH.
        pub const FETH: u16 = 1 << 11;
        /// The opcode is reserved / unknown: nothing after the BTH is decoded.
        pub const UNKNOWN: u16 = 1 << 15;
    }

    /// The extension headers an opcode implies: IBA Vol. 1 §9.2, table 38,
    /// but for the RD range, decoded as Wireshark decodes it, in the layout
    /// mlx5's Dynamically Connected transport sends (RD itself was never
    /// built): `DC_BTH` first, then table 38's RD headers, except that an
    /// ACK (0x51) has no RDETH and 0x55 (DC CONNECT) carries only the DCCETH
    /// (see [`ext_headers_se`]). Userspace reads it from a table made at
    /// compile time ([`ext_headers_of`] of every opcode): decoding and the
    /// analyzer ask it several times a frame.
    pub const fn ext_headers(opcode: u8) -> u16 {
        #[cfg(not(target_arch = "bpf"))]
        {
            EXT_HEADERS[opcode as usize]
        }
        #[cfg(target_arch = "bpf")]
        {
            ext_headers_of(opcode)
        }
    }

    /// [`ext_headers`] of every opcode.
    #[cfg(not(target_arch = "bpf"))]
    const EXT_HEADERS: [u16; 256] = {
        let mut t = [0; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = ext_headers_of(i as u8);
            i += 1;
        }
        t
    };

    /// [`ext_headers`], worked out from the opcode's service and operation.
    const fn ext_headers_of(opcode: u8) -> u16 {
        let service = opcode >> 5;
        let o = opcode & 0x1F;
        let per_op = match o {
            op::SEND_FIRST | op::SEND_MIDDLE | op::SEND_LAST | op::SEND_ONLY => 0,
            op::SEND_LAST_IMM | op::SEND_ONLY_IMM => ext::IMMDT,
            op::WRITE_FIRST | op::WRITE_ONLY => ext::RETH,
            op::WRITE_MIDDLE | op::WRITE_LAST => 0,
            op::WRITE_LAST_IMM => ext::IMMDT,
            op::WRITE_ONLY_IMM => ext::RETH | ext::IMMDT,
            op::READ_REQUEST => ext::RETH,
            op::READ_RESPONSE_FIRST | op::READ_RESPONSE_LAST | op::READ_RESPONSE_ONLY => ext::AETH,
            op::READ_RESPONSE_MIDDLE => 0,
            op::ACKNOWLEDGE => ext::AETH,
            op::ATOMIC_ACKNOWLEDGE => ext::AETH | ext::ATOMIC_ACK_ETH,
            op::COMPARE_SWAP | op::FETCH_ADD => ext::ATOMIC_ETH,
            op::SEND_LAST_INVALIDATE | op::SEND_ONLY_INVALIDATE => ext::IETH,
            op::FLUSH => ext::FETH | ext::RETH,
            op::ATOMIC_WRITE => ext::RETH,
            _ => ext::UNKNOWN,
        };
        match service {
            transport::RC => per_op,
            // UC: sends and writes only.
            transport::UC => match o {
                op::SEND_FIRST..=op::WRITE_ONLY_IMM => per_op,
                _ => ext::UNKNOWN,
            },
            // RD / DC: every RC operation but the invalidating SENDs and
            // ATOMIC WRITE (IBA 1.5 gives RD a FLUSH, 0x5C, but no ATOMIC
            // WRITE, as Linux's ib_pack.h lists them), behind the DC header
            // and an RDETH; requests add a DETH.
            transport::RD => match o {
                op::RD_RESYNC => ext::DC_BTH,
                op::ACKNOWLEDGE => ext::DC_BTH | ext::AETH,
                op::SEND_LAST_INVALIDATE | op::SEND_ONLY_INVALIDATE | op::ATOMIC_WRITE => {
                    ext::UNKNOWN
                }
                _ if per_op & ext::UNKNOWN != 0 => ext::UNKNOWN,
                _ if is_response_op(o) => ext::DC_BTH | ext::RDETH | per_op,
                _ => ext::DC_BTH | ext::RDETH | ext::DETH | per_op,
            },
            // UD: SEND Only (0x64) and SEND Only with Immediate (0x65).
            transport::UD => match o {
                op::SEND_ONLY => ext::DETH,
                op::SEND_ONLY_IMM => ext::DETH | ext::IMMDT,
                _ => ext::UNKNOWN,
            },
            // XRC: every RC operation, XRCETH on requests (not on responses).
            transport::XRC => {
                if per_op & ext::UNKNOWN != 0 || is_response_op(o) {
                    per_op
                } else {
                    ext::XRCETH | per_op
                }
            }
            _ => {
                if opcode == OPCODE_CNP {
                    0
                } else {
                    ext::UNKNOWN
                }
            }
        }
    }

    /// [`ext_headers`] of a BTH whose solicited-event bit is `se`: a DC
    /// CONNECT (0x55) with SE clear carries a DCCETH (as Wireshark reads it).
    pub const fn ext_headers_se(opcode: u8, se: bool) -> u16 {
        let mask = ext_headers(opcode);
        if opcode == OPCODE_DC_CONNECT && !se {
            mask | ext::DCCETH
        } else {
            mask
        }
    }

    /// Bytes of the extension headers in `mask`.
    pub const fn ext_headers_len(mask: u16) -> usize {
        let mut len = 0;
        if mask & ext::DC_BTH != 0 {
            len += DC_BTH_LEN;
        }
        if mask & ext::DCCETH != 0 {
            len += DCCETH_LEN;
        }
        if mask & ext::RDETH != 0 {
            len += RDETH_LEN;
        }
        if mask & ext::DETH != 0 {
            len += DETH_LEN;
        }
        if mask & ext::XRCETH != 0 {
            len += XRCETH_LEN;
        }
        if mask & ext::FETH != 0 {
            len += FETH_LEN;
        }
        if mask & ext::RETH != 0 {
            len += RETH_LEN;
        }
        if mask & ext::ATOMIC_ETH != 0 {
            len += ATOMIC_ETH_LEN;
        }
        if mask & ext::AETH != 0 {
            len += AETH_LEN;
        }
        if mask & ext::ATOMIC_ACK_ETH != 0 {
            len += ATOMIC_ACK_ETH_LEN;
        }
        if mask & ext::IMMDT != 0 {
            len += IMMDT_LEN;
        }
        if mask & ext::IETH != 0 {
            len += IETH_LEN;
        }
        len
    }

    /// Responder-to-requester operations (READ responses, ACKs, atomic ACKs).
    pub const fn is_response_op(o: u8) -> bool {
        matches!(
            o,
            op::READ_RESPONSE_FIRST
                | op::READ_RESPONSE_MIDDLE
                | op::READ_RESPONSE_LAST
                | op::READ_RESPONSE_ONLY
                | op::ACKNOWLEDGE
                | op::ATOMIC_ACKNOWLEDGE
        )
    }

    /// A request of a sequenced service (RC, UC, RD, XRC): the packets whose
    /// PSNs a requester sequences. RD's range carries mlx5's Dynamically
    /// Connected transport, sequenced per DCT like an RC QP.
    pub const fn is_request(opcode: u8) -> bool {
        is_sequenced(opcode >> 5)
            && ext_headers(opcode) & ext::UNKNOWN == 0
            && !is_response_op(opcode & 0x1F)
    }

    /// Services whose requests carry a PSN sequence: RC, UC, RD, XRC (not UD).
    pub const fn is_sequenced(service: u8) -> bool {
        matches!(
            service,
            transport::RC | transport::UC | transport::RD | transport::XRC
        )
    }

    /// Services whose responder acknowledges: RC, RD, XRC (UC never
    /// answers, UD neither).
    pub const fn is_acknowledged(service: u8) -> bool {
        matches!(service, transport::RC | transport::RD | transport::XRC)
    }

    /// A First or Middle packet of a multi-packet message (not UD): its
    /// payload is exactly one path MTU, which is how the MTU is learned.
    pub const fn payload_is_path_mtu(opcode: u8) -> bool {
        opcode >> 5 != transport::UD
            && matches!(
                opcode & 0x1F,
                op::SEND_FIRST
                    | op::SEND_MIDDLE
                    | op::WRITE_FIRST
                    | op::WRITE_MIDDLE
                    | op::READ_RESPONSE_FIRST
                    | op::READ_RESPONSE_MIDDLE
            )
    }

    /// A response of an acknowledged service (RC, RD, XRC).
    pub const fn is_response(opcode: u8) -> bool {
        is_acknowledged(opcode >> 5)
            && ext_headers(opcode) & ext::UNKNOWN == 0
            && is_response_op(opcode & 0x1F)
    }

    /// AETH syndrome classes (IBA Vol. 1 §9.3.5, table 46).
    pub mod aeth {
        /// Bits 7:5 of the syndrome.
        pub const KIND_MASK: u8 = 0x60;
        pub const KIND_ACK: u8 = 0x00;
        pub const KIND_RNR_NAK: u8 = 0x20;
        pub const KIND_NAK: u8 = 0x60;
        /// NAK codes (low five bits when the kind is NAK).
        pub const NAK_PSN_SEQUENCE_ERROR: u8 = 0x00;
        pub const NAK_INVALID_REQUEST: u8 = 0x01;
        pub const NAK_REMOTE_ACCESS_ERROR: u8 = 0x02;
        pub const NAK_REMOTE_OPERATIONAL_ERROR: u8 = 0x03;
        pub const NAK_INVALID_RD_REQUEST: u8 = 0x04;

        pub const fn is_ack(syndrome: u8) -> bool {
            syndrome & 0xE0 == KIND_ACK
        }
        pub const fn is_rnr_nak(syndrome: u8) -> bool {
            syndrome & 0xE0 == KIND_RNR_NAK
        }
        pub const fn is_nak(syndrome: u8) -> bool {
            syndrome & 0xE0 == KIND_NAK
        }
    }
}

/// Communication Management MADs (IBA Vol. 1 ch. 12), carried as UD SEND
/// Only to QP1 with a DETH: they name both QPs of a connection.
pub mod cm {
    /// UD SEND Only: how QP1 (GSI) carries MADs.
    pub const GSI_OPCODE: u8 = 0x64;
    /// Common MAD header length; the CM message follows it.
    pub const MAD_HEADER_LEN: usize = 24;
    /// Management class of Communication Management.
    pub const MGMT_CLASS_CM: u8 = 0x07;
    pub const ATTR_REQ: u16 = 0x0010;
    pub const ATTR_REP: u16 = 0x0013;
    /// Bytes of a REQ up to and including its Starting PSN (table 106).
    pub const REQ_PREFIX_LEN: usize = 48;
    /// Bytes of a REP up to and including its Starting PSN (table 110).
    pub const REP_PREFIX_LEN: usize = 24;
}

/// Endace Extensible Record Format (ERF) record headers, as pcap's
/// LINKTYPE_ERF carries them: 16 bytes, then extension headers, then the
/// record's payload.
pub mod erf {
    pub const HEADER_LEN: usize = 16;
    /// Each extension header; its type byte's top bit says another follows.
    pub const EXT_HEADER_LEN: usize = 8;
    /// Top bit of the type byte: an extension header follows the header.
    pub const TYPE_EXT_FLAG: u8 = 0x80;
    pub const TYPE_MASK: u8 = 0x7F;
    /// Ethernet: 2 bytes (offset, pad) before the frame.
    pub const TYPE_ETH: u8 = 2;
    pub const ETH_PAD_LEN: usize = 2;
    /// InfiniBand: the packet from its LRH on.
    pub const TYPE_INFINIBAND: u8 = 21;
}

/// Native InfiniBand link layer (IBA Vol. 1 ch. 7-8): the Local Route
/// Header and the Variant CRC (the GRH is RoCEv1's: `ib::GRH_LEN`).
pub mod lrh {
    pub const LRH_LEN: usize = 8;
    pub const VCRC_LEN: usize = 2;
    /// Link Next Header: raw packet (RWH), raw IPv6, IBA transport (BTH),
    /// IBA transport behind a GRH.
    pub const LNH_RAW: u8 = 0b00;
    pub const LNH_IPV6: u8 = 0b01;
    pub const LNH_IBA_LOCAL: u8 = 0b10;
    pub const LNH_IBA_GLOBAL: u8 = 0b11;
    /// `PktLen` counts 4-byte words from the LRH to the ICRC (no VCRC).
    pub const PKT_LEN_UNIT: usize = 4;
    /// A LID (no GRH) in a record's 16-byte address: `100::LID`, in the
    /// IPv6 discard-only prefix (RFC 6666), which no packet carries as an
    /// address.
    pub const LID_ADDR_PREFIX: [u8; 14] = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

    /// `lid` as a record address.
    pub const fn lid_addr(lid: u16) -> [u8; 16] {
        let mut a = [0u8; 16];
        a[0] = LID_ADDR_PREFIX[0];
        let [hi, lo] = lid.to_be_bytes();
        a[14] = hi;
        a[15] = lo;
        a
    }

    /// The LID in a record address made by [`lid_addr`].
    pub fn addr_lid(addr: &[u8; 16]) -> Option<u16> {
        (addr[..14] == LID_ADDR_PREFIX).then(|| u16::from_be_bytes([addr[14], addr[15]]))
    }
}

/// Link types of the capture formats (tcpdump.org LINKTYPE_*).
pub mod linktype {
    /// BSD loopback: a 4-byte address family in the capturing host's byte order.
    pub const NULL: u32 = 0;
    pub const ETHERNET: u32 = 1;
    /// DLT_RAW's value on most systems, which some tools write as the
    /// link type (raw IP).
    pub const RAW_DLT: u32 = 12;
    /// DLT_RAW's value on OpenBSD, written the same way (raw IP).
    pub const RAW_OPENBSD: u32 = 14;
    /// Raw IP: the packet starts with an IPv4 or IPv6 header.
    pub const RAW: u32 = 101;
    /// OpenBSD loopback: like `NULL`, the address family in network byte order.
    pub const LOOP: u32 = 108;
    /// Raw IPv4 only.
    pub const IPV4: u32 = 228;
    /// Raw IPv6 only.
    pub const IPV6: u32 = 229;
    /// Length of the `NULL` / `LOOP` address-family header.
    pub const NULL_HEADER_LEN: usize = 4;
    /// BSD address families of IPv4 and IPv6 (AF_INET6 differs: NetBSD,
    /// OpenBSD and BSD/OS 24, FreeBSD 28, macOS 30).
    pub const AF_INET: u32 = 2;
    pub const AF_INET6: [u32; 3] = [24, 28, 30];
    pub const LINUX_SLL: u32 = 113;
    pub const LINUX_SLL2: u32 = 276;
    /// Endace ERF records (what `ibdump` writes on InfiniBand ports).
    pub const ERF: u32 = 197;
    /// InfiniBand: the packet starts with its LRH.
    pub const INFINIBAND: u32 = 247;
    /// Linux cooked header v1: protocol (EtherType) at bytes 14..16.
    pub const LINUX_SLL_HEADER_LEN: usize = 16;
    /// Linux cooked header v2: protocol (EtherType) at bytes 0..2.
    pub const LINUX_SLL2_HEADER_LEN: usize = 20;
}

#[cfg(test)]
mod tests {
    use super::ib::*;

    #[test]
    fn ext_headers_follow_table_38() {
        assert_eq!(ext_headers(0x04), 0); // RC SEND Only
        assert_eq!(ext_headers(0x0B), ext::RETH | ext::IMMDT); // RC WRITE Only Imm
        assert_eq!(ext_headers(0x11), ext::AETH); // RC ACK
        assert_eq!(ext_headers(0x12), ext::AETH | ext::ATOMIC_ACK_ETH);
        assert_eq!(ext_headers(0x13), ext::ATOMIC_ETH);
        assert_eq!(ext_headers(0x17), ext::IETH);
        assert_eq!(ext_headers(0x64), ext::DETH); // UD SEND Only
        assert_eq!(ext_headers(0x65), ext::DETH | ext::IMMDT);
        assert_eq!(ext_headers(0x2C), ext::UNKNOWN); // UC READ request does not exist
        assert_eq!(ext_headers(0x81), 0); // CNP
        assert_eq!(ext_headers(0xAA), ext::XRCETH | ext::RETH); // XRC WRITE Only
        assert_eq!(ext_headers(0xB1), ext::AETH); // XRC ACK
        assert_eq!(ext_headers(0x15), ext::UNKNOWN);
        let dc = ext::DC_BTH;
        assert_eq!(ext_headers(0x4A), dc | ext::RDETH | ext::DETH | ext::RETH); // RD WRITE Only
        assert_eq!(ext_headers(0x47), dc | ext::RDETH | ext::DETH); // WRITE Middle
        assert_eq!(ext_headers(0x4E), dc | ext::RDETH); // READ response Middle
        assert_eq!(ext_headers(0x51), dc | ext::AETH); // ACK: no RDETH
        let atomic_ack = dc | ext::RDETH | ext::AETH | ext::ATOMIC_ACK_ETH;
        assert_eq!(ext_headers(0x52), atomic_ack);
        assert_eq!(ext_headers_se(0x55, false), dc | ext::DCCETH); // DC CONNECT
        assert_eq!(ext_headers_se(0x55, true), dc);
        assert_eq!(ext_headers_se(0x4A, false), ext_headers(0x4A));
        assert_eq!(ext_headers_len(dc | ext::DCCETH), 24);
        assert_eq!(ext_headers(0x56), ext::UNKNOWN); // no invalidating SEND in RD
        assert_eq!(ext_headers(0x57), ext::UNKNOWN);
        assert_eq!(ext_headers(0x15), ext::UNKNOWN); // RESYNC is RD's alone
        assert_eq!(ext_headers(0xB5), ext::UNKNOWN);
        assert_eq!(ext_headers_len(ext::RETH | ext::IMMDT), 20);
    }

    #[test]
    fn requests_and_responses() {
        assert!(is_request(0x0A));
        assert!(is_request(0x0C));
        assert!(is_request(0x24)); // UC SEND Only
        assert!(!is_request(0x11));
        assert!(!is_request(0x64)); // UD is not sequenced per connection
        assert!(is_request(0x46) && is_request(0x4A) && is_request(0x55)); // RD / DC
        assert!(is_response(0x51) && !is_request(0x51));
        assert!(is_request(0xA4) && is_response(0xB1)); // XRC
        assert!(!is_response(0x31)); // UC has no ACK
        assert!(!is_request(0x56) && !is_response(0x5F));
        assert!(is_response(0x11));
        assert!(is_response(0x10));
        assert!(!is_response(0x81));
        assert!(aeth::is_nak(0x60));
        assert!(aeth::is_rnr_nak(0x2E));
        assert!(aeth::is_ack(0x1F));
        assert!(!aeth::is_ack(0x20));
    }
}
