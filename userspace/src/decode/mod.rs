//! Frame decoding: zero-copy header views and the frame-to-record walk.
//!
//! Each protocol layer has a view type in the `smoltcp::wire` style
//! (`Bth<T: AsRef<[u8]>>`, `Ipv4Packet<T>`, …): `new_checked` checks the
//! buffer holds the whole header, accessors read fields in place. Nothing
//! here allocates, indexes out of bounds or panics, whatever the bytes.
//! [`decode`] walks the views from the link layer to the InfiniBand
//! transport headers and fills one [`PacketRecord`].
//!
//! # Decisions where the design is silent
//!
//! * **Kind `Other` is canonical**: when a frame is not RoCE/CNP/PFC/PAUSE the
//!   record is all zeros but `frame_len`/`cap_len`, however far the walk got,
//!   so two decoders (userspace, XDP) agree on dropped frames too.
//! * **ERSPAN**: one level is unwrapped; GRE inside the inner frame is not
//!   (kind `Other`). The record describes only the inner frame (flag
//!   `ERSPAN`); the outer headers are forgotten. The inner frame ends where
//!   the outer IP packet ends. GRE with a version other than 0 or with the
//!   RFC 1701 routing bit is not unwrapped. The ERSPAN version field is not
//!   checked: the GRE protocol type decides the header layout. A GRE/ERSPAN
//!   header cut by the snaplen gives `Other` (nothing of the inner frame
//!   survived).
//! * **VLAN**: more than `MAX_VLAN_TAGS` tags, a cut tag, an 802.3 length
//!   field or an unknown EtherType: `Other`.
//! * **IPv4**: version ≠ 4, IHL < 5 or a total length shorter than the header:
//!   `Other`. The header checksum is not verified (the ICRC masks it anyway).
//!   A first fragment (MF set, offset 0) is decoded like a capture cut: every
//!   header in it, `payload_len` from the UDP length, ICRC unchecked.
//! * **IPv6**: hop-by-hop, routing, destination-options and fragment headers
//!   are stepped over (at most `MAX_IPV6_EXT_HEADERS`; a non-first fragment is
//!   `Other`). When any was present the ICRC is not checked: Annex A17 defines
//!   the ICRC for an IPv6 header followed by UDP, and [`icrc::compute`] relies
//!   on that layout.
//! * **UDP**: a UDP header cut by the snaplen is `Other` (the destination port
//!   is not trusted from a partial header). The datagram length is the UDP
//!   length bounded by the IP payload length (a UDP length larger than the IP
//!   packet is not believed); for a first fragment, the UDP length alone.
//!   Shorter than UDP + BTH + ICRC (24 bytes): `Malformed`, keeping the L2, L3
//!   and UDP fields.
//! * **BTH cut by the snaplen**: the opcode is unknown, so the kind is `Roce`
//!   (never `Cnp`), `HAS_BTH` and `HAS_PAYLOAD_LEN` are clear.
//! * **Extension headers**: read in spec order while each is whole in the
//!   capture and before the ICRC; the first cut one ends the walk (its flag and
//!   the following ones stay clear). RDETH and XRCETH have no record fields:
//!   they are read only to find what follows.
//! * **`payload_len`** follows the formula datagram − UDP − BTH − extension
//!   headers − pad − ICRC, saturating at 0; for a CNP that is its 16 reserved
//!   bytes. For an unknown opcode (`ext::UNKNOWN`) the extension headers are
//!   unknown, so `HAS_PAYLOAD_LEN` stays clear.
//! * **ICRC** is checked whenever the whole datagram was captured and it is at
//!   least UDP + BTH + ICRC long, whatever the opcode; `icrc` is written only
//!   then (with `ICRC_CHECKED`), otherwise it stays 0.
//! * **Linux cooked captures** (SLL, SLL2) carry one link-layer address, not
//!   an Ethernet header: `src_mac`/`dst_mac` stay zero (null in the
//!   tables). Their protocol field is treated as an EtherType (VLAN tags
//!   included).
//! * **Raw IP** (LINKTYPE_RAW 101, and 12 / 14, DLT_RAW's values on most systems and on
//!   OpenBSD, as some tools write it; 228 IPv4 only, 229 IPv6 only) starts at the IP header, the
//!   version nibble choosing IPv4 or IPv6 for 101/12/14. **BSD null /
//!   loopback** (0, 108) has a 4-byte address family first: AF_INET 2,
//!   AF_INET6 24, 28 or 30 (the BSDs differ); in the capturing host's byte
//!   order for 0 (read either way: a family fits in 16 bits), network order
//!   for 108. No MACs, no VLAN, no PFC/PAUSE on these: `src_mac`/`dst_mac`
//!   stay zero (null in the tables).
//! * **Stop reasons**: [`decode_walk`] says why the walk ended before the
//!   end of the headers ([`Stop`]): cut or invalid header (by layer), a
//!   decoder limit, or a field naming another protocol. Frames of kind
//!   `Other` always have one; records may too (a BTH cut by the snaplen).
//! * **MAC Control**: a frame cut before its opcode is `Other`; cut after the
//!   opcode but before the end of the PAUSE/PFC fields keeps the kind with
//!   `HAS_PAUSE`/`HAS_PFC` clear. MAC Control behind VLAN tags (or inside
//!   ERSPAN) is decoded too.
use rocescope_common::proto;
use rocescope_common::{Kind, PacketRecord, flags};

use self::erspan::{ErspanII, ErspanIII, Gre};
use self::ethernet::{EthernetFrame, VlanTag};
use self::ib::{Aeth, AtomicAckEth, AtomicEth, Bth, Deth, Ieth, ImmDt, Rdeth, Reth, Xrceth};
use self::ip::{Ipv4Packet, Ipv6ExtHeader, Ipv6FragmentHeader, Ipv6Packet};
use self::mac_control::{MacControl, Pause, Pfc};
use self::sll::{Sll, Sll2};
pub use self::stop::{DecodeFacts, DecodeTally, Foreign, Layer, Limit, Stop, Undecoded};
use self::udp::UdpHeader;

/// Defines a fixed-length header view: the struct, `LEN`, `new_checked`,
/// `into_inner` and a private `bytes`.
macro_rules! fixed_view {
    ($(#[$meta:meta])* $name:ident, $len:expr) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Header length in bytes.
            pub const LEN: usize = $len;

            /// Wraps `buffer` after checking it holds the whole header.
            pub fn new_checked(buffer: T) -> Result<Self, $crate::decode::Truncated> {
                if buffer.as_ref().len() < Self::LEN {
                    Err($crate::decode::Truncated)
                } else {
                    Ok(Self { buffer })
                }
            }

            /// The wrapped buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            fn bytes(&self) -> &[u8] {
                self.buffer.as_ref()
            }
        }
    };
}

/// Adds `payload()`: the bytes after a fixed-length header, with the
/// lifetime of the underlying buffer (so a walk can hand them on).
macro_rules! payload_after {
    ($name:ident) => {
        impl<'a, T: AsRef<[u8]> + ?Sized> $name<&'a T> {
            /// The bytes after this header.
            pub fn payload(&self) -> &'a [u8] {
                $crate::decode::field::tail(
                    <T as AsRef<[u8]>>::as_ref(self.buffer),
                    $name::<&'a T>::LEN,
                )
            }
        }
    };
}

pub mod cm;
pub mod erspan;
pub mod ethernet;
mod field;
pub mod ib;
pub mod icrc;
pub mod ip;
pub mod mac_control;
pub mod null;
pub mod sll;
mod stop;
pub mod udp;

#[cfg(test)]
mod tests;

/// The buffer ends before the header does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Truncated;

impl core::fmt::Display for Truncated {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("header truncated")
    }
}

impl std::error::Error for Truncated {}

/// Whether [`decode`] reads frames of this LINKTYPE_* (Ethernet, Linux SLL,
/// SLL2, raw IP, BSD null/loopback); frames of any other link type are `Other`.
pub const fn decodes_linktype(linktype: u32) -> bool {
    use proto::linktype as lt;
    matches!(
        linktype,
        lt::ETHERNET
            | lt::LINUX_SLL
            | lt::LINUX_SLL2
            | lt::RAW
            | lt::RAW_DLT
            | lt::RAW_OPENBSD
            | lt::IPV4
            | lt::IPV6
            | lt::NULL
            | lt::LOOP
    )
}

/// The link types [`decode`] reads, for messages.
pub const DECODED_LINKTYPES: &str = "Ethernet, Linux SLL and SLL2, raw IP, BSD null/loopback";

/// Decode one captured frame. `linktype` is the capture's LINKTYPE_* (proto::linktype),
/// `data` the captured bytes (may be cut by snaplen), `frame_len` the original length on the wire.
/// Returns a record with kind Other when the frame is not RoCE/CNP/PFC/PAUSE (callers drop those).
/// frame, ts_ns and iface are left 0 for the caller to fill.
pub fn decode(linktype: u32, data: &[u8], frame_len: u32) -> PacketRecord {
    decode_with_payload(linktype, data, frame_len).0
}

/// [`decode`], and the application payload of a RoCE frame as far as the
/// capture holds it (after the extension headers, before pad and ICRC;
/// empty when there is none or a header was cut).
pub fn decode_with_payload(linktype: u32, data: &[u8], frame_len: u32) -> (PacketRecord, &[u8]) {
    let mut rec = PacketRecord::default();
    let payload = decode_into(&mut rec, linktype, data, frame_len);
    (rec, payload)
}

/// [`decode_with_payload`] into `rec` (whatever it held is replaced): a
/// source decoding frame after frame into one record spares a 200-byte
/// copy per frame.
pub fn decode_into<'a>(
    rec: &mut PacketRecord,
    linktype: u32,
    data: &'a [u8],
    frame_len: u32,
) -> &'a [u8] {
    decode_walk(rec, linktype, data, frame_len).payload
}

/// What [`decode_walk`] found besides the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk<'a> {
    /// The application payload of a RoCE frame (see [`decode_with_payload`]).
    pub payload: &'a [u8],
    /// Why the walk ended before the end of the headers (always set when
    /// the record's kind is `Other`).
    pub stop: Option<Stop>,
}

/// [`decode_into`], and why the walk stopped where it did.
pub fn decode_walk<'a>(
    rec: &mut PacketRecord,
    linktype: u32,
    data: &'a [u8],
    frame_len: u32,
) -> Walk<'a> {
    use proto::linktype as lt;
    *rec = PacketRecord::default();
    let mut next = match linktype {
        lt::ETHERNET => ethernet_frame(rec, data, true),
        lt::LINUX_SLL => match Sll::new_checked(data) {
            Ok(sll) => link_payload(rec, sll.protocol(), sll.payload(), true),
            Err(Truncated) => Next::Stop(Stop::Cut(Layer::Link)),
        },
        lt::LINUX_SLL2 => match Sll2::new_checked(data) {
            Ok(sll) => link_payload(rec, sll.protocol(), sll.payload(), true),
            Err(Truncated) => Next::Stop(Stop::Cut(Layer::Link)),
        },
        lt::RAW | lt::RAW_DLT | lt::RAW_OPENBSD => raw_ip(rec, data),
        lt::IPV4 => ipv4(rec, data, true),
        lt::IPV6 => ipv6(rec, data, true),
        lt::NULL | lt::LOOP => match null::Null::new_checked(data) {
            Ok(h) => match h.family(linktype == lt::LOOP) {
                Some(null::Family::Ipv4) => ipv4(rec, h.payload(), true),
                Some(null::Family::Ipv6) => ipv6(rec, h.payload(), true),
                None => Next::Stop(Stop::Foreign(Foreign::AddressFamily)),
            },
            Err(Truncated) => Next::Stop(Stop::Cut(Layer::Link)),
        },
        _ => Next::Stop(Stop::LinkType),
    };
    if let Next::Erspan(inner, truncated) = next {
        // The mirrored frame is what is analysed: start its record afresh.
        *rec = PacketRecord::default();
        next = ethernet_frame(rec, inner, false);
        rec.flags |= flags::ERSPAN;
        // The switch cut the mirrored frame: whatever its lengths say, its
        // ICRC covers bytes the capture does not have.
        if truncated && rec.has(flags::HAS_UDP) {
            rec.flags &= !(flags::ICRC_CHECKED | flags::ICRC_OK);
            rec.flags |= flags::CUT;
        }
    }
    let mut payload: &[u8] = &[];
    let mut stop = None;
    match next {
        Next::Payload(p) => payload = p,
        // Unreachable: the inner frame is walked without ERSPAN.
        Next::Erspan(..) => {
            *rec = PacketRecord::default();
            stop = Some(Stop::Limit(Limit::NestedEncapsulation));
        }
        Next::Stop(s) => stop = Some(s),
        Next::Done => {}
    }
    if rec.kind() == Kind::Other {
        *rec = PacketRecord::default();
        payload = &[];
    }
    rec.frame_len = frame_len;
    rec.cap_len = u32::try_from(data.len()).unwrap_or(u32::MAX);
    Walk { payload, stop }
}

/// Raw IP: the version nibble says which.
fn raw_ip<'a>(rec: &mut PacketRecord, data: &'a [u8]) -> Next<'a> {
    match data.first().map(|b| b >> 4) {
        Some(4) => ipv4(rec, data, true),
        Some(6) => ipv6(rec, data, true),
        Some(_) => Next::Stop(Stop::Foreign(Foreign::AddressFamily)),
        None => Next::Stop(Stop::Cut(Layer::Link)),
    }
}

/// Where a layer left the walk.
enum Next<'a> {
    /// Finished: `rec.kind` says what the frame is.
    Done,
    /// Ended early, for this reason (`rec.kind` may still be set).
    Stop(Stop),
    /// An ERSPAN/GRE mirror: this inner Ethernet frame is to be decoded;
    /// `true` when the switch marked it truncated.
    Erspan(&'a [u8], bool),
    /// Finished at a RoCE frame whose application payload (captured part) is this.
    Payload(&'a [u8]),
}

fn ethernet_frame<'a>(rec: &mut PacketRecord, data: &'a [u8], allow_erspan: bool) -> Next<'a> {
    let Ok(eth) = EthernetFrame::new_checked(data) else {
        return Next::Stop(Stop::Cut(Layer::Link));
    };
    rec.dst_mac = eth.dst_addr();
    rec.src_mac = eth.src_addr();
    link_payload(rec, eth.ethertype(), eth.payload(), allow_erspan)
}

/// VLAN tags, then the protocol the (innermost) EtherType names.
fn link_payload<'a>(
    rec: &mut PacketRecord,
    mut ethertype: u16,
    mut rest: &'a [u8],
    allow_erspan: bool,
) -> Next<'a> {
    let mut tags = 0;
    while ethernet::is_vlan_tpid(ethertype) {
        if tags == proto::ethernet::MAX_VLAN_TAGS {
            return Next::Stop(Stop::Limit(Limit::VlanDepth));
        }
        let Ok(tag) = VlanTag::new_checked(rest) else {
            return Next::Stop(Stop::Cut(Layer::Vlan));
        };
        if tags == 0 {
            rec.outer_vlan = tag.vid();
        }
        rec.vlan = tag.vid();
        rec.pcp = tag.pcp();
        tags += 1;
        ethertype = tag.ethertype();
        rest = tag.payload();
    }
    if tags >= 1 {
        rec.flags |= flags::HAS_VLAN;
    }
    if tags >= 2 {
        rec.flags |= flags::HAS_OUTER_VLAN;
    } else {
        rec.outer_vlan = 0;
    }
    match ethertype {
        proto::ethernet::ETHERTYPE_IPV4 => ipv4(rec, rest, allow_erspan),
        proto::ethernet::ETHERTYPE_IPV6 => ipv6(rec, rest, allow_erspan),
        proto::ethernet::ETHERTYPE_MAC_CONTROL => mac_control(rec, rest),
        _ => Next::Stop(Stop::Foreign(Foreign::EtherType)),
    }
}

/// What the IP layer hands to UDP (and GRE).
struct L3<'a> {
    /// From the first byte of the IP header to the end of the captured part
    /// of the IP packet (bounded by the IP length fields).
    packet: &'a [u8],
    /// Offset of the transport header in `packet`.
    l4_at: usize,
    /// Bytes from `l4_at` to the end of the IP packet, as the IP header
    /// declares them.
    declared: usize,
    /// First fragment of a fragmented packet: the UDP length, not the IP
    /// length, bounds the datagram.
    first_fragment: bool,
    /// `icrc::compute` understands the header chain (no IPv6 extension headers).
    icrc_computable: bool,
}

fn ipv4<'a>(rec: &mut PacketRecord, bytes: &'a [u8], allow_erspan: bool) -> Next<'a> {
    let Ok(ip) = Ipv4Packet::new_checked(bytes) else {
        return Next::Stop(Stop::Cut(Layer::Ipv4));
    };
    if !ip.is_valid() {
        return Next::Stop(Stop::Invalid(Layer::Ipv4));
    }
    // A non-first fragment has no UDP header: nothing to recognise it by.
    if ip.frag_offset() != 0 {
        return Next::Stop(Stop::Foreign(Foreign::IpFragment));
    }
    rec.src_ip = ip::ipv4_mapped(ip.src_addr());
    rec.dst_ip = ip::ipv4_mapped(ip.dst_addr());
    rec.dscp = ip.dscp();
    rec.ecn = ip.ecn();
    rec.flags |= flags::HAS_IPV4;
    let l3 = L3 {
        packet: ip.packet(),
        l4_at: ip.header_len(),
        declared: usize::from(ip.total_len()) - ip.header_len(),
        first_fragment: ip.more_frags(),
        icrc_computable: true,
    };
    transport(rec, ip.protocol(), l3, allow_erspan)
}

fn ipv6<'a>(rec: &mut PacketRecord, bytes: &'a [u8], allow_erspan: bool) -> Next<'a> {
    let Ok(ip) = Ipv6Packet::new_checked(bytes) else {
        return Next::Stop(Stop::Cut(Layer::Ipv6));
    };
    if ip.version() != 6 {
        return Next::Stop(Stop::Invalid(Layer::Ipv6));
    }
    rec.src_ip = ip.src_addr();
    rec.dst_ip = ip.dst_addr();
    rec.dscp = ip.dscp();
    rec.ecn = ip.ecn();
    rec.flags |= flags::HAS_IPV6;

    let packet = ip.packet();
    let end = proto::ip::IPV6_HEADER_LEN + usize::from(ip.payload_len());
    let mut next_header = ip.next_header();
    let mut at = proto::ip::IPV6_HEADER_LEN;
    let mut first_fragment = false;
    let mut ext_headers = 0;
    loop {
        let here = field::tail(packet, at);
        let len = match next_header {
            proto::ip::IPV6_HOP_BY_HOP | proto::ip::IPV6_ROUTING | proto::ip::IPV6_DEST_OPTS => {
                let Ok(h) = Ipv6ExtHeader::new_checked(here) else {
                    return Next::Stop(Stop::Cut(Layer::Ipv6Ext));
                };
                next_header = h.next_header();
                h.header_len()
            }
            proto::ip::IPV6_FRAGMENT => {
                let Ok(h) = Ipv6FragmentHeader::new_checked(here) else {
                    return Next::Stop(Stop::Cut(Layer::Ipv6Ext));
                };
                if h.frag_offset() != 0 {
                    return Next::Stop(Stop::Foreign(Foreign::IpFragment));
                }
                first_fragment = h.more_frags();
                next_header = h.next_header();
                Ipv6FragmentHeader::<&[u8]>::LEN
            }
            _ => break,
        };
        ext_headers += 1;
        at += len;
        if ext_headers > proto::ip::MAX_IPV6_EXT_HEADERS {
            return Next::Stop(Stop::Limit(Limit::Ipv6ExtHeaders));
        }
        if at > end {
            return Next::Stop(Stop::Invalid(Layer::Ipv6Ext));
        }
    }
    let l3 = L3 {
        packet,
        l4_at: at,
        declared: end - at,
        first_fragment,
        icrc_computable: ext_headers == 0,
    };
    transport(rec, next_header, l3, allow_erspan)
}

fn transport<'a>(rec: &mut PacketRecord, protocol: u8, l3: L3<'a>, allow_erspan: bool) -> Next<'a> {
    match protocol {
        proto::ip::PROTO_UDP => udp(rec, &l3),
        proto::gre::IP_PROTO if allow_erspan => gre(field::tail(l3.packet, l3.l4_at)),
        proto::gre::IP_PROTO => Next::Stop(Stop::Limit(Limit::NestedEncapsulation)),
        _ => Next::Stop(Stop::Foreign(Foreign::IpProtocol)),
    }
}

/// GRE carrying ERSPAN I/II/III: the mirrored frame inside, if whole headers survived.
fn gre(bytes: &[u8]) -> Next<'_> {
    let Ok(g) = Gre::new_checked(bytes) else {
        return Next::Stop(Stop::Cut(Layer::Gre));
    };
    if g.version() != 0 || g.routing_present() {
        return Next::Stop(Stop::Foreign(Foreign::GreProtocol));
    }
    let cut = Next::Stop(Stop::Cut(Layer::Erspan));
    match g.protocol_type() {
        // Type I has no sequence number and no ERSPAN header.
        proto::gre::PROTO_ERSPAN_II if !g.sequence_present() => Next::Erspan(g.payload(), false),
        proto::gre::PROTO_ERSPAN_II => match ErspanII::new_checked(g.payload()) {
            Ok(e) => Next::Erspan(e.payload(), e.truncated()),
            Err(Truncated) => cut,
        },
        proto::gre::PROTO_ERSPAN_III => match ErspanIII::new_checked(g.payload()) {
            Ok(e) => Next::Erspan(e.payload(), e.truncated()),
            Err(Truncated) => cut,
        },
        _ => Next::Stop(Stop::Foreign(Foreign::GreProtocol)),
    }
}

fn udp<'a>(rec: &mut PacketRecord, l3: &L3<'a>) -> Next<'a> {
    let segment = field::tail(l3.packet, l3.l4_at);
    let Ok(header) = UdpHeader::new_checked(segment) else {
        return Next::Stop(Stop::Cut(Layer::Udp));
    };
    if header.dst_port() != proto::udp::ROCEV2_PORT {
        return Next::Stop(Stop::Foreign(Foreign::UdpPort));
    }
    rec.udp_sport = header.src_port();
    rec.flags |= flags::HAS_UDP;

    let udp_len = usize::from(header.length());
    let datagram_len = if l3.first_fragment {
        udp_len
    } else {
        udp_len.min(l3.declared)
    };
    const MIN_DATAGRAM: usize = proto::udp::HEADER_LEN + proto::ib::BTH_LEN + proto::ib::ICRC_LEN;
    if datagram_len < MIN_DATAGRAM {
        rec.kind = Kind::Malformed as u8;
        return Next::Stop(Stop::Invalid(Layer::Udp));
    }
    rec.kind = Kind::Roce as u8;

    // What the capture holds of the datagram (Ethernet padding and FCS,
    // beyond the IP/UDP lengths, are not part of it).
    let datagram = field::head(segment, datagram_len);
    let whole = datagram.len() == datagram_len;
    if !whole {
        rec.flags |= flags::CUT;
    }
    if whole && l3.icrc_computable {
        let ip_packet = field::head(l3.packet, l3.l4_at + datagram_len);
        if let (Some(carried), Some(computed)) =
            (icrc::carried(ip_packet), icrc::compute(ip_packet))
        {
            rec.icrc = carried;
            rec.flags |= flags::ICRC_CHECKED;
            if carried == computed {
                rec.flags |= flags::ICRC_OK;
            }
        }
    }

    let Ok(bth) = Bth::new_checked(field::tail(datagram, proto::udp::HEADER_LEN)) else {
        return Next::Stop(Stop::Cut(Layer::Bth));
    };
    bth_fields(rec, &bth);
    let ext = bth.ext_headers();
    if ext & proto::ib::ext::UNKNOWN != 0 {
        // A RoCE record all the same; what follows the BTH is unknown.
        return Next::Done;
    }
    let overhead = proto::udp::HEADER_LEN
        + proto::ib::BTH_LEN
        + proto::ib::ext_headers_len(ext)
        + usize::from(bth.pad_count())
        + proto::ib::ICRC_LEN;
    rec.payload_len = u32::try_from(datagram_len.saturating_sub(overhead)).unwrap_or(u32::MAX);
    rec.flags |= flags::HAS_PAYLOAD_LEN;

    // Extension headers live between the BTH and the ICRC.
    let before_icrc = field::head(datagram, datagram_len - proto::ib::ICRC_LEN);
    let Some(after_headers) = ext_headers(
        rec,
        ext,
        field::tail(before_icrc, proto::udp::HEADER_LEN + proto::ib::BTH_LEN),
    ) else {
        return Next::Stop(Stop::Cut(Layer::ExtHeaders));
    };
    Next::Payload(field::head(after_headers, rec.payload_len as usize))
}

fn bth_fields(rec: &mut PacketRecord, bth: &Bth<&[u8]>) {
    rec.opcode = bth.opcode();
    if rec.opcode == proto::ib::OPCODE_CNP {
        rec.kind = Kind::Cnp as u8;
    }
    rec.pad_count = bth.pad_count();
    rec.tver = bth.tver();
    rec.pkey = bth.pkey();
    rec.dest_qp = bth.dest_qp();
    rec.psn = bth.psn();
    rec.flags |= flags::HAS_BTH;
    for (set, flag) in [
        (bth.solicited_event(), flags::SE),
        (bth.mig_req(), flags::MIGREQ),
        (bth.fecn(), flags::FECN),
        (bth.becn(), flags::BECN),
        (bth.ack_req(), flags::ACK_REQ),
    ] {
        if set {
            rec.flags |= flag;
        }
    }
}

/// The extension headers in `mask`, in spec order, while they are whole in
/// `rest`; the first cut one ends the walk.
fn ext_headers<'a>(rec: &mut PacketRecord, mask: u16, mut rest: &'a [u8]) -> Option<&'a [u8]> {
    use proto::ib::ext;
    macro_rules! take {
        ($bit:expr, $view:ident, |$h:ident| $fill:block) => {
            if mask & $bit != 0 {
                let Ok($h) = $view::new_checked(rest) else {
                    return None;
                };
                $fill
                rest = $h.payload();
            }
        };
    }
    take!(ext::RDETH, Rdeth, |h| {});
    take!(ext::DETH, Deth, |h| {
        rec.deth_qkey = h.qkey();
        rec.deth_src_qp = h.src_qp();
        rec.flags |= flags::HAS_DETH;
    });
    take!(ext::XRCETH, Xrceth, |h| {});
    take!(ext::RETH, Reth, |h| {
        rec.reth_va = h.va();
        rec.reth_rkey = h.rkey();
        rec.reth_len = h.dma_len();
        rec.flags |= flags::HAS_RETH;
    });
    take!(ext::ATOMIC_ETH, AtomicEth, |h| {
        rec.atomic_va = h.va();
        rec.atomic_rkey = h.rkey();
        rec.atomic_swap_add = h.swap_add_data();
        rec.atomic_compare = h.compare_data();
        rec.flags |= flags::HAS_ATOMIC_ETH;
    });
    take!(ext::AETH, Aeth, |h| {
        rec.aeth_syndrome = h.syndrome();
        rec.aeth_msn = h.msn();
        rec.flags |= flags::HAS_AETH;
    });
    take!(ext::ATOMIC_ACK_ETH, AtomicAckEth, |h| {
        rec.atomic_orig = h.orig_rem_dt();
        rec.flags |= flags::HAS_ATOMIC_ACK_ETH;
    });
    take!(ext::IMMDT, ImmDt, |h| {
        rec.imm = h.imm();
        rec.flags |= flags::HAS_IMMDT;
    });
    take!(ext::IETH, Ieth, |h| {
        rec.ieth_rkey = h.rkey();
        rec.flags |= flags::HAS_IETH;
    });
    Some(rest)
}

fn mac_control<'a>(rec: &mut PacketRecord, bytes: &[u8]) -> Next<'a> {
    let cut = Next::Stop(Stop::Cut(Layer::MacControl));
    let Ok(mc) = MacControl::new_checked(bytes) else {
        return cut;
    };
    match mc.opcode() {
        proto::mac_control::OPCODE_PFC => {
            rec.kind = Kind::Pfc as u8;
            let Ok(pfc) = Pfc::new_checked(bytes) else {
                return cut;
            };
            // The top byte of the vector is reserved.
            rec.pfc_enable = pfc.class_enable_vector() as u8;
            rec.pfc_quanta = pfc.times();
            rec.flags |= flags::HAS_PFC;
        }
        proto::mac_control::OPCODE_PAUSE => {
            rec.kind = Kind::Pause as u8;
            let Ok(pause) = Pause::new_checked(bytes) else {
                return cut;
            };
            rec.pause_quanta = pause.pause_time();
            rec.flags |= flags::HAS_PAUSE;
        }
        _ => return Next::Stop(Stop::Foreign(Foreign::MacControlOpcode)),
    }
    Next::Done
}
