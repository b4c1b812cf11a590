//! The frame walk, once for the XDP program and the userspace decoder: from
//! the link layer through IP and UDP to where a transport of the
//! [`registry`] is recognised, then that transport's own walk (RoCE's:
//! [`roce`], the InfiniBand transport headers; UET's: [`uet`], the PDS and
//! SES headers), filling one
//! [`PacketRecord`] and saying where each header lies and why the walk
//! stopped ([`Stop`]).
//!
//! It reads the frame through [`Frame`]: a byte slice in userspace, the XDP
//! context in the kernel, whose implementation adds the bounds checks and
//! value laundering the verifier needs ([`Frame::opaque`]). Every read is
//! bounds-checked by [`Frame::load`]; nothing indexes out of bounds,
//! allocates or panics, whatever the bytes. Offsets are the [`field`]
//! constants, lengths the [`crate::proto`] ones.
//!
//! The decisions the walk makes where the specs are silent are listed in
//! `userspace/src/decode/mod.rs` (the module docs of `rocescope::decode`).
//! What only userspace does (the ICRC, a datagram cut short, the
//! application payload's bytes) it does from what [`Walked`] reports.
pub mod field;
pub mod ifa;
pub mod int;
pub mod registry;
pub mod report;
mod stop;
pub mod telemetry;

pub use self::registry::transports::*;
pub use self::registry::{Recognition, TransportId};
pub use self::roce::walk_infiniband;
pub use self::stop::{Foreign, Layer, Limit, Stop};

use crate::proto::{self, ethernet, gre, ib, ip, linktype as lt, mac_control, udp};
use crate::{Kind, PacketRecord, flags, hw_time};

/// Read access to a frame's captured bytes.
pub trait Frame {
    /// Bytes captured.
    fn cap_len(&self) -> usize;

    /// `N` bytes at `at`, when they lie before `end` and `end` in the frame.
    fn load<const N: usize>(&self, at: usize, end: usize) -> Option<[u8; N]>;

    /// [`Frame::load`] into `dst` (the kernel fills it in place).
    #[inline(always)]
    fn load_into<const N: usize>(&self, at: usize, end: usize, dst: &mut [u8; N]) -> bool {
        match self.load::<N>(at, end) {
            Some(b) => {
                *dst = b;
                true
            }
            None => false,
        }
    }

    /// `v` unchanged; the kernel passes it through memory so the verifier
    /// forgets its range (see the XDP program's `Pkt::opaque`).
    #[inline(always)]
    fn opaque(&self, v: usize) -> usize {
        v
    }

    /// Empties `rec` (the kernel avoids a byte-wise `memset`).
    #[inline(always)]
    fn reset(&self, rec: &mut PacketRecord) {
        *rec = PacketRecord::default();
    }
}

impl Frame for [u8] {
    #[inline]
    fn cap_len(&self) -> usize {
        self.len()
    }

    #[inline]
    fn load<const N: usize>(&self, at: usize, end: usize) -> Option<[u8; N]> {
        if end > <[u8]>::len(self) || at > end || end - at < N {
            return None;
        }
        self.get(at..at + N)?.try_into().ok()
    }
}

/// Where the walk found each header: told `layer` and the header's bytes
/// `at..end` in the frame, outermost first (an ERSPAN frame's outer headers,
/// then its inner ones). The kernel passes `()`, which keeps nothing.
pub trait Visit {
    #[inline(always)]
    fn header(&mut self, _layer: Layer, _at: usize, _end: usize) {}
}

impl Visit for () {}

/// A byte range `at..end` of the frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub at: usize,
    pub end: usize,
}

/// What the walk found besides the record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Walked {
    /// Why the walk ended before the end of the headers (always set when the
    /// record's kind is `Other`).
    pub stop: Option<Stop>,
    /// The captured part of a frame's application payload (RoCE: after the
    /// extension headers, before pad and ICRC; UET: after the last PDS or
    /// SES header, or the encrypted bytes after a TSS header); empty when
    /// there is none or a header was cut.
    pub payload: Span,
    /// The bytes the ICRC is computed over, from the first byte of the IP
    /// header (RoCEv1: of the GRH, `HAS_GRH`; native InfiniBand,
    /// `IB_LRH`: of the LRH, with IB's own masked fields) to the end of the
    /// ICRC: set when the whole datagram was captured and its header chain
    /// is one the ICRC is defined for.
    pub icrc: Option<Span>,
    /// Native InfiniBand: the Variant CRC's two bytes after the ICRC, when
    /// captured (it covers `icrc`'s bytes).
    pub vcrc: Option<Span>,
    /// The RoCE or UET datagram is cut short of the length its headers
    /// declare.
    pub cut: bool,
    /// The frame was unwrapped from ERSPAN whose T (truncated) bit was set.
    pub erspan_truncated: bool,
    /// Switch telemetry the frame carried (INT-MD, IFA) or was (a report).
    pub telemetry: Option<telemetry::Found>,
}

/// [`walk_with`] recognising every transport by its registered defaults
/// ([`Recognition::DEFAULT`]).
#[inline(always)]
pub fn walk<F: Frame + ?Sized, V: Visit>(
    f: &F,
    linktype: u32,
    rec: &mut PacketRecord,
    v: &mut V,
) -> Walked {
    walk_with(f, &Recognition::DEFAULT, linktype, rec, v)
}

/// Decodes one frame of link type `linktype` (`proto::linktype`) into
/// `rec` (whatever it held is replaced), recognising transports as `reg`
/// says. `frame_len`, `cap_len`, `frame`, `ts_ns` and `iface` are left for
/// the caller; a record of kind `Other` is left as the walk filled it
/// (callers drop or zero it).
#[inline(always)]
pub fn walk_with<F: Frame + ?Sized, V: Visit>(
    f: &F,
    reg: &Recognition,
    linktype: u32,
    rec: &mut PacketRecord,
    v: &mut V,
) -> Walked {
    f.reset(rec);
    let mut w = Walked::default();
    let end = f.cap_len();
    let mut next = match linktype {
        lt::ETHERNET => ethernet_frame(f, reg, rec, v, &mut w, 0, end, true),
        lt::LINUX_SLL => match f.load::<2>(field::sll::PROTOCOL, end) {
            Some(p) => {
                v.header(Layer::Link, 0, lt::LINUX_SLL_HEADER_LEN);
                let at = lt::LINUX_SLL_HEADER_LEN;
                link_payload(f, reg, rec, v, &mut w, be16(&p, 0), at, end, true)
            }
            None => Next::Stop(Stop::Cut(Layer::Link)),
        },
        lt::LINUX_SLL2 => match f.load::<{ lt::LINUX_SLL2_HEADER_LEN }>(0, end) {
            Some(h) => {
                v.header(Layer::Link, 0, lt::LINUX_SLL2_HEADER_LEN);
                let ethertype = be16(&h, field::sll::SLL2_PROTOCOL);
                let at = lt::LINUX_SLL2_HEADER_LEN;
                link_payload(f, reg, rec, v, &mut w, ethertype, at, end, true)
            }
            None => Next::Stop(Stop::Cut(Layer::Link)),
        },
        // Raw IP: the version nibble says which.
        lt::RAW | lt::RAW_DLT | lt::RAW_OPENBSD => match f.load::<1>(0, end) {
            Some([b]) if b >> 4 == 4 => ipv4(f, reg, rec, v, &mut w, 0, end, true),
            Some([b]) if b >> 4 == 6 => ipv6(f, reg, rec, v, &mut w, 0, end, true),
            Some(_) => Next::Stop(Stop::Foreign(Foreign::AddressFamily)),
            None => Next::Stop(Stop::Cut(Layer::Link)),
        },
        lt::IPV4 => ipv4(f, reg, rec, v, &mut w, 0, end, true),
        lt::IPV6 => ipv6(f, reg, rec, v, &mut w, 0, end, true),
        lt::NULL | lt::LOOP => match f.load::<{ lt::NULL_HEADER_LEN }>(0, end) {
            Some(h) => {
                v.header(Layer::Link, 0, lt::NULL_HEADER_LEN);
                let at = lt::NULL_HEADER_LEN;
                match null_family(h, linktype == lt::LOOP) {
                    lt::AF_INET => ipv4(f, reg, rec, v, &mut w, at, end, true),
                    af if lt::AF_INET6.contains(&af) => ipv6(f, reg, rec, v, &mut w, at, end, true),
                    _ => Next::Stop(Stop::Foreign(Foreign::AddressFamily)),
                }
            }
            None => Next::Stop(Stop::Cut(Layer::Link)),
        },
        _ => Next::Stop(Stop::LinkType),
    };
    if let Next::Erspan(at, end, truncated, stamp) = next {
        // The mirrored frame is what is analysed: start its record afresh.
        f.reset(rec);
        w = Walked {
            erspan_truncated: truncated,
            ..Walked::default()
        };
        next = ethernet_frame(f, reg, rec, v, &mut w, f.opaque(at), f.opaque(end), false);
        rec.flags |= flags::ERSPAN;
        if let Some(stamp) = stamp {
            rec.flags |= flags::HAS_HW_TIME;
            rec.hw_time = stamp.time;
            rec.hw_time_format = stamp.format;
        }
    }
    match next {
        Next::Done => {}
        Next::Stop(s) => w.stop = Some(s),
        // Unreachable: the inner frame is walked without ERSPAN.
        Next::Erspan(..) => {
            f.reset(rec);
            w.stop = Some(Stop::Limit(Limit::NestedEncapsulation));
        }
    }
    w
}

/// The address family of a BSD null/loopback header: network order for
/// LINKTYPE_LOOP; the capturing host's order for LINKTYPE_NULL, read either
/// way (a family fits in 16 bits).
#[inline(always)]
pub fn null_family(h: [u8; lt::NULL_HEADER_LEN], network_order: bool) -> u32 {
    let be = u32::from_be_bytes(h);
    if network_order {
        return be;
    }
    let le = u32::from_le_bytes(h);
    if le > 0xFFFF { be } else { le }
}

/// Where a layer left the walk.
enum Next {
    /// Finished: `rec.kind` says what the frame is.
    Done,
    /// Ended early, for this reason (`rec.kind` may still be set).
    Stop(Stop),
    /// ERSPAN/GRE: the mirrored Ethernet frame is `at..end`; `true` when the
    /// switch marked it truncated; ERSPAN III's timestamp.
    Erspan(usize, usize, bool, Option<HwStamp>),
}

/// An ERSPAN III timestamp as the record keeps it (`PacketRecord::hw_time`).
#[derive(Clone, Copy)]
struct HwStamp {
    time: u64,
    format: u8,
}

#[inline(always)]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline(always)]
fn be24(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]])
}

#[inline(always)]
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline(always)]
fn be64(b: &[u8], at: usize) -> u64 {
    (u64::from(be32(b, at)) << 32) | u64::from(be32(b, at + 4))
}

#[inline(always)]
fn mac(b: &[u8], at: usize) -> [u8; 6] {
    [b[at], b[at + 1], b[at + 2], b[at + 3], b[at + 4], b[at + 5]]
}

/// 802.1Q, 802.1ad and the pre-standard QinQ TPID.
#[inline(always)]
pub const fn is_vlan_tpid(ethertype: u16) -> bool {
    matches!(
        ethertype,
        ethernet::ETHERTYPE_VLAN | ethernet::ETHERTYPE_QINQ | ethernet::ETHERTYPE_QINQ_OLD
    )
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn ethernet_frame<F: Frame + ?Sized, V: Visit>(
    f: &F,
    reg: &Recognition,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    at: usize,
    end: usize,
    allow_erspan: bool,
) -> Next {
    use field::ethernet as fe;
    let Some(h) = f.load::<{ ethernet::HEADER_LEN }>(at, end) else {
        return Next::Stop(Stop::Cut(Layer::Link));
    };
    v.header(Layer::Link, at, at + ethernet::HEADER_LEN);
    rec.dst_mac = mac(&h, fe::DESTINATION);
    rec.src_mac = mac(&h, fe::SOURCE);
    let ethertype = be16(&h, fe::ETHERTYPE);
    link_payload(
        f,
        reg,
        rec,
        v,
        w,
        ethertype,
        at + ethernet::HEADER_LEN,
        end,
        allow_erspan,
    )
}

/// VLAN tags, then the protocol the (innermost) EtherType names.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn link_payload<F: Frame + ?Sized, V: Visit>(
    f: &F,
    reg: &Recognition,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    mut ethertype: u16,
    mut at: usize,
    end: usize,
    allow_erspan: bool,
) -> Next {
    use field::vlan as fv;
    let mut tags = 0;
    // One pass per tag, plus one to notice a tag too many.
    for _ in 0..=ethernet::MAX_VLAN_TAGS {
        if !is_vlan_tpid(ethertype) {
            break;
        }
        if tags == ethernet::MAX_VLAN_TAGS {
            return Next::Stop(Stop::Limit(Limit::VlanDepth));
        }
        let Some(t) = f.load::<{ ethernet::VLAN_TAG_LEN }>(at, end) else {
            return Next::Stop(Stop::Cut(Layer::Vlan));
        };
        v.header(Layer::Vlan, at, at + ethernet::VLAN_TAG_LEN);
        let tci = be16(&t, fv::TCI);
        if tags == 0 {
            rec.outer_vlan = tci & fv::VID_MASK;
        }
        rec.vlan = tci & fv::VID_MASK;
        rec.pcp = (tci >> fv::PCP_SHIFT) as u8;
        tags += 1;
        ethertype = be16(&t, fv::ETHERTYPE);
        at += ethernet::VLAN_TAG_LEN;
    }
    if tags >= 1 {
        rec.flags |= flags::HAS_VLAN;
    }
    if tags >= 2 {
        rec.flags |= flags::HAS_OUTER_VLAN;
    } else {
        rec.outer_vlan = 0;
    }
    let (at, end) = (f.opaque(at), f.opaque(end));
    let ethertype = f.opaque(usize::from(ethertype)) as u16;
    match ethertype {
        ethernet::ETHERTYPE_IPV4 => ipv4(f, reg, rec, v, w, at, end, allow_erspan),
        ethernet::ETHERTYPE_IPV6 => ipv6(f, reg, rec, v, w, at, end, allow_erspan),
        ethernet::ETHERTYPE_MAC_CONTROL => mac_control(f, rec, v, at, end),
        other => registry::over_ethertype(f, rec, v, w, other, at, end),
    }
}

/// What the IP layer hands to UDP (and GRE): the packet is `at..end`, the
/// captured part bounded by the IP length fields.
#[derive(Clone, Copy)]
struct L3 {
    at: usize,
    end: usize,
    /// Offset of the transport header from `at`.
    l4_at: usize,
    /// Bytes from `l4_at` to the end of the IP packet, as the IP header
    /// declares them.
    declared: usize,
    /// First fragment of a fragmented packet: the UDP length, not the IP
    /// length, bounds the datagram.
    first_fragment: bool,
    /// The ICRC is defined for this header chain (no IPv6 extension headers).
    icrc_computable: bool,
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn ipv4<F: Frame + ?Sized, V: Visit>(
    f: &F,
    reg: &Recognition,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    at: usize,
    end: usize,
    allow_erspan: bool,
) -> Next {
    use field::ipv4 as f4;
    let Some(h) = f.load::<{ ip::IPV4_MIN_HEADER_LEN }>(at, end) else {
        return Next::Stop(Stop::Cut(Layer::Ipv4));
    };
    let header_len = usize::from(h[f4::VER_IHL] & 0x0F) * 4;
    // The options must be there too.
    if header_len > ip::IPV4_MIN_HEADER_LEN && end - at < header_len {
        return Next::Stop(Stop::Cut(Layer::Ipv4));
    }
    let total_len = usize::from(be16(&h, f4::LENGTH));
    if h[f4::VER_IHL] >> 4 != 4 || header_len < ip::IPV4_MIN_HEADER_LEN || total_len < header_len {
        return Next::Stop(Stop::Invalid(Layer::Ipv4));
    }
    v.header(Layer::Ipv4, at, at + header_len);
    let flg_off = be16(&h, f4::FLG_OFF);
    // A non-first fragment has no UDP header: nothing to recognise it by.
    if flg_off & f4::FRAG_OFFSET_MASK != 0 {
        return Next::Stop(Stop::Foreign(Foreign::IpFragment));
    }
    // IPv4-mapped (::ffff:a.b.c.d); bytes 0..10 are still zero.
    rec.src_ip[10] = 0xFF;
    rec.src_ip[11] = 0xFF;
    rec.dst_ip[10] = 0xFF;
    rec.dst_ip[11] = 0xFF;
    rec.src_ip[12..].copy_from_slice(&h[f4::SRC_ADDR..f4::SRC_ADDR + 4]);
    rec.dst_ip[12..].copy_from_slice(&h[f4::DST_ADDR..f4::DST_ADDR + 4]);
    rec.dscp = h[f4::TOS] >> 2;
    rec.ecn = h[f4::TOS] & 0x03;
    rec.flags |= flags::HAS_IPV4;
    let l3 = L3 {
        at,
        end: end.min(at + total_len),
        l4_at: header_len,
        declared: total_len - header_len,
        first_fragment: flg_off & f4::FLAG_MF != 0,
        icrc_computable: true,
    };
    transport(f, reg, rec, v, w, h[f4::PROTOCOL], &l3, allow_erspan)
}

const fn is_ipv6_ext(h: u8) -> bool {
    matches!(
        h,
        ip::IPV6_HOP_BY_HOP | ip::IPV6_ROUTING | ip::IPV6_DEST_OPTS | ip::IPV6_FRAGMENT
    )
}

/// An IPv6 header or a GRH (the same 40-byte layout, version 6): its first
/// 8 bytes, the addresses (GIDs) already in `rec`.
#[inline(always)]
fn ipv6_like<F: Frame + ?Sized, V: Visit>(
    f: &F,
    rec: &mut PacketRecord,
    v: &mut V,
    layer: Layer,
    at: usize,
    end: usize,
) -> Result<[u8; 8], Next> {
    use field::ipv6 as f6;
    const _: () = assert!(ip::IPV6_HEADER_LEN == ib::GRH_LEN && ib::GRH_IPVER == 6);
    const _: () = assert!(f6::SRC_ADDR == field::grh::SGID && f6::DST_ADDR == field::grh::DGID);
    let cut = || Next::Stop(Stop::Cut(layer));
    let h = f.load::<8>(at, end).ok_or_else(cut)?;
    if end - at < ip::IPV6_HEADER_LEN {
        return Err(cut());
    }
    if h[f6::VER_TC_FLOW] >> 4 != 6 {
        return Err(Next::Stop(Stop::Invalid(layer)));
    }
    // The addresses go straight into the record.
    if !f.load_into(at + f6::SRC_ADDR, end, &mut rec.src_ip)
        || !f.load_into(at + f6::DST_ADDR, end, &mut rec.dst_ip)
    {
        return Err(cut());
    }
    v.header(layer, at, at + ip::IPV6_HEADER_LEN);
    Ok(h)
}

/// DSCP (top 6 bits) and ECN (low 2) of the traffic class of an IPv6
/// header or a GRH (`h`: its first 8 bytes; RFC 8200 §7, IBA 8.3.1).
#[inline(always)]
fn traffic_class(rec: &mut PacketRecord, h: &[u8; 8]) {
    const _: () = assert!(field::ipv6::VER_TC_FLOW == field::grh::IPVER_TCLASS_FLOWLABEL);
    let tclass = (be16(h, field::ipv6::VER_TC_FLOW) >> 4) as u8;
    rec.dscp = tclass >> 2;
    rec.ecn = tclass & 0x03;
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn ipv6<F: Frame + ?Sized, V: Visit>(
    f: &F,
    reg: &Recognition,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    at: usize,
    end: usize,
    allow_erspan: bool,
) -> Next {
    use field::ipv6 as f6;
    let h = match ipv6_like(f, rec, v, Layer::Ipv6, at, end) {
        Ok(h) => h,
        Err(stop) => return stop,
    };
    traffic_class(rec, &h);
    rec.flags |= flags::HAS_IPV6;

    let declared_end = ip::IPV6_HEADER_LEN + usize::from(be16(&h, f6::PAYLOAD_LEN));
    let packet_end = end.min(at + declared_end);
    let mut next_header = h[f6::NXT_HDR];
    let mut off = ip::IPV6_HEADER_LEN;
    let mut first_fragment = false;
    let mut ext_headers = 0;
    // An extension header the capture holds but the payload length does
    // not is invalid; one the capture ends inside is cut.
    let short = |header_end: usize| {
        Next::Stop(if header_end <= end {
            Stop::Invalid(Layer::Ipv6Ext)
        } else {
            Stop::Cut(Layer::Ipv6Ext)
        })
    };
    // At most MAX_IPV6_EXT_HEADERS are stepped over; one more stops below.
    for _ in 0..=ip::MAX_IPV6_EXT_HEADERS {
        let len = match next_header {
            // RFC 8200 §4.1: hop-by-hop options only right after the fixed header.
            ip::IPV6_HOP_BY_HOP if ext_headers > 0 => {
                return Next::Stop(Stop::Invalid(Layer::Ipv6Ext));
            }
            ip::IPV6_HOP_BY_HOP | ip::IPV6_ROUTING | ip::IPV6_DEST_OPTS => {
                let Some(e) = f.load::<2>(at + off, packet_end) else {
                    return short(at + off + 2);
                };
                let len = (usize::from(e[field::ipv6_ext::LENGTH]) + 1) * 8;
                if packet_end - (at + off) < len {
                    return short(at + off + len);
                }
                v.header(Layer::Ipv6Ext, at + off, at + off + len);
                next_header = e[field::ipv6_ext::NXT_HDR];
                len
            }
            ip::IPV6_FRAGMENT => {
                use field::ipv6_frag as ff;
                let Some(e) = f.load::<{ ip::IPV6_FRAGMENT_LEN }>(at + off, packet_end) else {
                    return short(at + off + ip::IPV6_FRAGMENT_LEN);
                };
                v.header(Layer::Ipv6Ext, at + off, at + off + ip::IPV6_FRAGMENT_LEN);
                let frag_off = be16(&e, ff::FRAG_OFF);
                if frag_off >> ff::OFFSET_SHIFT != 0 {
                    return Next::Stop(Stop::Foreign(Foreign::IpFragment));
                }
                first_fragment = frag_off & ff::FLAG_M != 0;
                next_header = e[ff::NXT_HDR];
                ip::IPV6_FRAGMENT_LEN
            }
            _ => break,
        };
        ext_headers += 1;
        off += len;
        if ext_headers > ip::MAX_IPV6_EXT_HEADERS {
            return Next::Stop(Stop::Limit(Limit::Ipv6ExtHeaders));
        }
    }
    if is_ipv6_ext(next_header) {
        // Only reachable past the loop bound, which the check above ends first.
        return Next::Stop(Stop::Limit(Limit::Ipv6ExtHeaders));
    }
    let l3 = L3 {
        at,
        end: packet_end,
        l4_at: off,
        declared: declared_end - off,
        first_fragment,
        icrc_computable: ext_headers == 0,
    };
    transport(f, reg, rec, v, w, next_header, &l3, allow_erspan)
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn transport<F: Frame + ?Sized, V: Visit>(
    f: &F,
    reg: &Recognition,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    protocol: u8,
    l3: &L3,
    allow_erspan: bool,
) -> Next {
    let l3 = &L3 {
        at: f.opaque(l3.at),
        end: f.opaque(l3.end),
        l4_at: f.opaque(l3.l4_at),
        declared: f.opaque(l3.declared),
        first_fragment: f.opaque(usize::from(l3.first_fragment)) != 0,
        icrc_computable: l3.icrc_computable,
    };
    let protocol = f.opaque(usize::from(protocol)) as u8;
    let ifa_protocol = reg.telemetry.ifa_protocol;
    if ifa_protocol != 0 && protocol == ifa_protocol {
        let at = l3.at + l3.l4_at;
        return match telemetry::ifa_header(f, v, at, l3.end) {
            Ok(ip::PROTO_UDP) if l3.declared >= ifa::HEADER_LEN => {
                let inner = L3 {
                    l4_at: l3.l4_at + ifa::HEADER_LEN,
                    declared: l3.declared - ifa::HEADER_LEN,
                    ..*l3
                };
                udp(f, reg, rec, v, w, &inner, Some(at))
            }
            Ok(ip::PROTO_UDP) => Next::Stop(Stop::Invalid(Layer::Ifa)),
            Ok(_) => Next::Stop(Stop::Foreign(Foreign::IpProtocol)),
            Err(stop) => stop,
        };
    }
    match protocol {
        ip::PROTO_UDP => udp(f, reg, rec, v, w, l3, None),
        gre::IP_PROTO if allow_erspan => gre(f, v, l3.at + l3.l4_at, l3.end),
        gre::IP_PROTO => Next::Stop(Stop::Limit(Limit::NestedEncapsulation)),
        p => registry::over_ip(f, reg, rec, v, w, l3, p),
    }
}

/// GRE carrying ERSPAN I/II/III: the mirrored frame inside, if whole
/// headers survived.
#[inline(always)]
fn gre<F: Frame + ?Sized, V: Visit>(f: &F, v: &mut V, at: usize, end: usize) -> Next {
    let Some(g) = f.load::<{ gre::BASE_LEN }>(at, end) else {
        return Next::Stop(Stop::Cut(Layer::Gre));
    };
    let fv = be16(&g, field::gre::FLAGS_VERSION);
    let optional = usize::from(fv & gre::FLAG_CHECKSUM != 0)
        + usize::from(fv & gre::FLAG_KEY != 0)
        + usize::from(fv & gre::FLAG_SEQUENCE != 0);
    let header_len = gre::BASE_LEN + 4 * optional;
    if end - at < header_len {
        return Next::Stop(Stop::Cut(Layer::Gre));
    }
    if fv & gre::VERSION_MASK != 0 || fv & gre::FLAG_ROUTING != 0 {
        return Next::Stop(Stop::Foreign(Foreign::GreProtocol));
    }
    v.header(Layer::Gre, at, at + header_len);
    let payload = at + header_len;
    let cut = Next::Stop(Stop::Cut(Layer::Erspan));
    let truncated = |cos_t: u8| cos_t & field::erspan::T_FLAG != 0;
    match be16(&g, field::gre::PROTOCOL) {
        // Type I has no sequence number and no ERSPAN header.
        gre::PROTO_ERSPAN_II if fv & gre::FLAG_SEQUENCE == 0 => {
            Next::Erspan(payload, end, false, None)
        }
        gre::PROTO_ERSPAN_II => {
            let Some(e) = f.load::<{ gre::ERSPAN_II_LEN }>(payload, end) else {
                return cut;
            };
            v.header(Layer::Erspan, payload, payload + gre::ERSPAN_II_LEN);
            let t = truncated(e[field::erspan::COS_T]);
            Next::Erspan(payload + gre::ERSPAN_II_LEN, end, t, None)
        }
        gre::PROTO_ERSPAN_III => {
            let Some(e) = f.load::<{ gre::ERSPAN_III_LEN }>(payload, end) else {
                return cut;
            };
            let last = e[field::erspan::III_HW_D_GRA_O];
            let mut stamp = HwStamp {
                time: u64::from(be32(&e, field::erspan::III_TIMESTAMP)),
                format: (last >> gre::ERSPAN_III_GRA_SHIFT) & hw_time::GRANULARITY_MASK,
            };
            let mut len = gre::ERSPAN_III_LEN;
            if last & gre::ERSPAN_III_O_FLAG != 0 {
                let Some(p) = f.load::<{ gre::ERSPAN_III_PLATFORM_LEN }>(payload + len, end) else {
                    return cut;
                };
                len += gre::ERSPAN_III_PLATFORM_LEN;
                let id = p[field::erspan::PLATFORM_ID] >> gre::ERSPAN_PLATFORM_ID_SHIFT;
                let upper = u64::from(be32(&p, field::erspan::PLATFORM_UPPER)) << 32;
                if gre::ERSPAN_PLATFORM_UPPER.contains(&id) {
                    stamp.time |= upper;
                    stamp.format |= hw_time::UPPER;
                } else if gre::ERSPAN_PLATFORM_SECONDS.contains(&id) {
                    stamp.time |= upper;
                    stamp.format |= hw_time::UPPER | hw_time::UPPER_IS_SECONDS;
                }
            }
            v.header(Layer::Erspan, payload, payload + len);
            let t = truncated(e[field::erspan::COS_T]);
            Next::Erspan(payload + len, end, t, Some(stamp))
        }
        _ => Next::Stop(Stop::Foreign(Foreign::GreProtocol)),
    }
}

/// The UDP header at `l3.l4_at` and the transport its destination port
/// names, stepping over switch telemetry: INT-MD after the UDP header
/// (marked by a DSCP value or a port), IFA's metadata after it when the
/// walk came through an IFA header (`ifa_at`: where that header was).
#[inline(always)]
fn udp<F: Frame + ?Sized, V: Visit>(
    f: &F,
    reg: &Recognition,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    l3: &L3,
    ifa_at: Option<usize>,
) -> Next {
    use field::udp as fu;
    let seg = l3.at + l3.l4_at;
    let Some(u) = f.load::<{ udp::HEADER_LEN }>(seg, l3.end) else {
        return Next::Stop(Stop::Cut(Layer::Udp));
    };
    v.header(Layer::Udp, seg, seg + udp::HEADER_LEN);
    let udp_len = usize::from(be16(&u, fu::LENGTH));
    // A UDP length larger than the IP packet is not believed. Behind IFA
    // the IP length bounds the datagram: whether an IFA node grows the UDP
    // length by its metadata the sources do not say.
    let datagram_len = if l3.first_fragment {
        udp_len
    } else if ifa_at.is_some() {
        l3.declared
    } else {
        udp_len.min(l3.declared)
    };
    let declared_end = seg + datagram_len;
    let dg_end = l3.end.min(declared_end);
    let marks = &reg.telemetry;
    let dport = be16(&u, fu::DST_PORT);
    if ifa_at.is_none() && marks.report_port != registry::UNSET && dport == marks.report_port {
        return telemetry::report(f, v, w, seg, dg_end);
    }
    let by_port = ifa_at.is_none() && marks.int_port != registry::UNSET && dport == marks.int_port;
    let by_dscp = ifa_at.is_none()
        && !by_port
        && marks.int_dscp != telemetry::NO_DSCP
        && rec.dscp == marks.int_dscp
        && rec.flags & (flags::HAS_IPV4 | flags::HAS_IPV6) != 0
        && reg.by_udp_port(dport) == Some(TransportId::Roce);
    let inserted = if let Some(at) = ifa_at {
        match telemetry::ifa_after_udp(f, v, seg, dg_end, declared_end) {
            Ok(i) => Some((
                telemetry::Source::Ifa,
                i,
                Span {
                    at,
                    end: at + ifa::HEADER_LEN,
                },
            )),
            Err(stop) => return stop,
        }
    } else if by_port || by_dscp {
        match telemetry::int_after_udp(f, v, seg, dg_end, declared_end, by_port) {
            Ok(i) => Some((telemetry::Source::IntMd, i, Span::default())),
            Err(stop) => return stop,
        }
    } else {
        None
    };
    let port = match &inserted {
        Some((_, i, _)) => i.original_port.unwrap_or(dport),
        None => dport,
    };
    let Some(transport) = reg.by_udp_port(port) else {
        return Next::Stop(Stop::Foreign(Foreign::UdpPort));
    };
    rec.udp_sport = be16(&u, fu::SRC_PORT);
    rec.flags |= flags::HAS_UDP;
    let skipped = match inserted {
        Some((source, i, ifa_header)) => {
            rec.flags |= flags::TELEMETRY;
            let at = seg + udp::HEADER_LEN;
            w.telemetry = Some(telemetry::Found {
                source,
                span: Span {
                    at,
                    end: at + i.len,
                },
                ifa_header,
                udp_at: seg,
                original_port: i.original_port,
            });
            i.len
        }
        None => 0,
    };
    let skipped = f.opaque(skipped);
    registry::over_udp(transport, f, rec, v, w, l3, datagram_len, skipped)
}

#[inline(always)]
fn mac_control<F: Frame + ?Sized, V: Visit>(
    f: &F,
    rec: &mut PacketRecord,
    v: &mut V,
    at: usize,
    end: usize,
) -> Next {
    use field::mac_control as fm;
    let cut = Next::Stop(Stop::Cut(Layer::MacControl));
    let Some(op) = f.load::<2>(at, end) else {
        return cut;
    };
    match be16(&op, fm::OPCODE) {
        mac_control::OPCODE_PFC => {
            rec.kind = Kind::Pfc as u8;
            let Some(p) = f.load::<{ mac_control::PFC_LEN }>(at, end) else {
                return cut;
            };
            v.header(Layer::MacControl, at, at + mac_control::PFC_LEN);
            // The top byte of the vector is reserved.
            let l = rec.link_control_mut();
            l.pfc_enable = p[fm::CLASS_ENABLE_VECTOR + 1];
            for (i, q) in l.pfc_quanta.iter_mut().enumerate() {
                *q = be16(&p, fm::TIMES + 2 * i);
            }
            rec.flags |= flags::HAS_PFC;
        }
        mac_control::OPCODE_PAUSE => {
            rec.kind = Kind::Pause as u8;
            let Some(p) = f.load::<{ mac_control::PAUSE_LEN }>(at, end) else {
                return cut;
            };
            v.header(Layer::MacControl, at, at + mac_control::PAUSE_LEN);
            rec.link_control_mut().pause_quanta = be16(&p, fm::PAUSE_TIME);
            rec.flags |= flags::HAS_PAUSE;
        }
        _ => return Next::Stop(Stop::Foreign(Foreign::MacControlOpcode)),
    }
    Next::Done
}

// `proto` is reached through its submodules above.
const _: u32 = proto::linktype::ETHERNET;

#[cfg(test)]
mod tests;
