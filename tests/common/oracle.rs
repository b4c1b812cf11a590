//! The frame walk against an independent implementation: etherparse's lax
//! slicing must find the same Ethernet, VLAN, IPv4/IPv6 (+ extension
//! headers) and UDP headers at the same offsets, and stop at the same
//! layer, in every frame (docs/fuzzing.md, "Differential: etherparse").
//! Shared by the `etherparse` fuzz target and `tests/oracle.rs`.
//!
//! Where the two disagree by design, the comparison stops at the layer
//! before (each case is one of [`Stopped`]'s and is counted):
//! * etherparse keeps at most 3 link extensions (VLAN tags), the walk 4;
//! * etherparse knows MACsec and IPv4 and IPv6 authentication headers, and
//!   steps over more than 4 IPv6 extension headers; the walk does not;
//! * etherparse reads a fragmented packet's payload as no transport, the
//!   walk reads a first fragment's UDP header, and stops at a later
//!   fragment's fragment header, where etherparse reads on;
//! * lax etherparse believes the captured length when an IP length field is
//!   too small for its own header (IPv4 total length below IHL, an IPv6
//!   extension header past the payload length), the walk calls it invalid;
//! * etherparse reads the IP version from the header's version nibble, the
//!   walk from the EtherType and calls a header of the other version invalid;
//! * etherparse reads an IPv6 payload length of 0 as a jumbogram's (the
//!   rest of the frame), the walk as 0 bytes: nothing follows the header.
use etherparse::{LaxLinkExtSlice, LaxNetSlice, LaxSlicedPacket, LinkSlice, TransportSlice};
use rocescope::PacketRecord;
use rocescope::proto::linktype;
use rocescope::wire::{self, Foreign, Layer, Limit, Stop, Visit};

/// A header's bytes `at..end` in the frame.
pub type Range = (usize, usize);

/// The L2–L4 headers of a frame's outer packet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers {
    pub ethernet: Option<Range>,
    pub vlans: Vec<Range>,
    /// IPv4 (with options) or IPv6 fixed header.
    pub ip: Option<Range>,
    /// The IPv6 extension headers' bytes, as one span.
    pub ipv6_exts: Vec<Range>,
    pub udp: Option<Range>,
}

/// Where the comparison had to stop early, by design.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stopped {
    /// Compared every layer.
    Never,
    VlanCap,
    LinkExtension,
    Ipv6Extension,
    /// IPv4's authentication header, which etherparse steps over.
    Ipv4Extension,
    Fragment,
    LaxLength,
    /// The IP version is not the one the EtherType names.
    IpVersion,
}

/// The walk's headers, up to a GRE header (the inner frame of ERSPAN is
/// not etherparse's business).
#[derive(Default)]
struct Outer {
    h: Headers,
    past_gre: bool,
}

impl Visit for Outer {
    fn header(&mut self, layer: Layer, at: usize, end: usize) {
        if self.past_gre {
            return;
        }
        match layer {
            Layer::Link => self.h.ethernet = Some((at, end)),
            Layer::Vlan => self.h.vlans.push((at, end)),
            Layer::Ipv4 | Layer::Ipv6 => self.h.ip = Some((at, end)),
            // One span, as etherparse gives them.
            Layer::Ipv6Ext => match self.h.ipv6_exts.first_mut() {
                Some(span) => span.1 = end,
                None => self.h.ipv6_exts.push((at, end)),
            },
            Layer::Udp => self.h.udp = Some((at, end)),
            Layer::Gre => self.past_gre = true,
            _ => {}
        }
    }
}

/// What the walk finds in Ethernet frame `frame`, and where it stopped.
pub fn ours(frame: &[u8]) -> (Headers, Option<Stop>) {
    let mut v = Outer::default();
    let mut rec = PacketRecord::default();
    let w = wire::walk(frame, linktype::ETHERNET, &mut rec, &mut v);
    (v.h, w.stop)
}

fn range(base: &[u8], part: &[u8]) -> Range {
    let at = part.as_ptr() as usize - base.as_ptr() as usize;
    (at, at + part.len())
}

/// What etherparse finds, and whether it went where the walk does not.
pub fn theirs(frame: &[u8]) -> (Headers, Option<Stopped>) {
    let mut h = Headers::default();
    let Ok(p) = LaxSlicedPacket::from_ethernet(frame) else {
        return (h, None);
    };
    if let Some(LinkSlice::Ethernet2(e)) = &p.link {
        h.ethernet = Some(range(frame, e.header_slice()));
    }
    let mut beyond = None;
    for ext in &p.link_exts {
        match ext {
            LaxLinkExtSlice::Vlan(v) => h.vlans.push(range(frame, v.header_slice())),
            // What follows MACsec (VLAN tags inside it) the walk never sees.
            LaxLinkExtSlice::Macsec(_) => {
                beyond = Some(Stopped::LinkExtension);
                break;
            }
        }
    }
    match &p.net {
        Some(LaxNetSlice::Ipv4(ip)) => {
            h.ip = Some(range(frame, ip.header().slice()));
            if ip.is_payload_fragmented() {
                beyond = beyond.or(Some(Stopped::Fragment));
            }
            // An authentication header (protocol 51), which the walk calls
            // a foreign protocol.
            if ip.extensions().auth.is_some() {
                beyond = beyond.or(Some(Stopped::Ipv4Extension));
            }
        }
        Some(LaxNetSlice::Ipv6(ip)) => {
            h.ip = Some(range(frame, ip.header().slice()));
            // The extension headers as one span: iterating them one by one
            // (`Ipv6ExtensionsSlice::into_iter`) reads out of bounds when
            // lax slicing stopped inside one (etherparse 0.21.0).
            let exts = ip.extensions();
            if !exts.slice().is_empty() {
                h.ipv6_exts.push(range(frame, exts.slice()));
            }
            if exts.is_fragmenting_payload() {
                beyond = beyond.or(Some(Stopped::Fragment));
            }
        }
        _ => {}
    }
    if let Some(TransportSlice::Udp(u)) = &p.transport {
        h.udp = Some(range(frame, u.header_slice()));
    }
    (h, beyond)
}

/// `Ok(how far it compared)` when the walk and etherparse agree on `frame`,
/// else what differs.
pub fn compare(frame: &[u8]) -> Result<Stopped, String> {
    let (a, stop) = ours(frame);
    let (b, beyond) = theirs(frame);
    let differ = |what: &str| {
        Err(format!(
            "{what}: walk {a:?} (stop {stop:?}), etherparse {b:?}, frame {frame:02x?}"
        ))
    };
    if a.ethernet != b.ethernet {
        return differ("ethernet");
    }
    let cap = etherparse::LaxSlicedPacket::LINK_EXTS_CAP;
    if a.vlans.len() > cap || stop == Some(Stop::Limit(Limit::VlanDepth)) {
        return if a.vlans[..cap.min(a.vlans.len())] == b.vlans[..] {
            Ok(Stopped::VlanCap)
        } else {
            differ("vlan tags (past etherparse's cap)")
        };
    }
    if a.vlans != b.vlans {
        return differ("vlan tags");
    }
    if beyond == Some(Stopped::LinkExtension) {
        return Ok(Stopped::LinkExtension);
    }
    if a.ip != b.ip {
        if a.ip.is_none() && lax_length(frame, &b, stop) {
            return Ok(Stopped::LaxLength);
        }
        if a.ip.is_none() && version_not_ethertype(frame, &b, stop) {
            return Ok(Stopped::IpVersion);
        }
        return differ("ip header");
    }
    if (a.ipv6_exts != b.ipv6_exts || a.udp != b.udp) && jumbo(frame, a.ip) {
        return Ok(Stopped::LaxLength);
    }
    if a.ipv6_exts != b.ipv6_exts {
        let (a_end, b_end) = (span_end(&a.ipv6_exts, a.ip), span_end(&b.ipv6_exts, b.ip));
        return match stop {
            // Headers etherparse steps over and the walk does not (AH, …),
            // or more than the walk's 4.
            Some(Stop::Foreign(Foreign::IpProtocol) | Stop::Limit(Limit::Ipv6ExtHeaders))
                if a_end < b_end =>
            {
                Ok(Stopped::Ipv6Extension)
            }
            Some(Stop::Invalid(Layer::Ipv6Ext)) => Ok(Stopped::LaxLength),
            // A non-first fragment: the walk ends at its fragment header,
            // etherparse reads on.
            Some(Stop::Foreign(Foreign::IpFragment)) if a_end < b_end => Ok(Stopped::Fragment),
            _ => differ("ipv6 extension headers"),
        };
    }
    if stop == Some(Stop::Limit(Limit::Ipv6ExtHeaders)) {
        return Ok(Stopped::Ipv6Extension);
    }
    if let Some(s @ (Stopped::Fragment | Stopped::Ipv4Extension)) = beyond {
        return Ok(s);
    }
    if a.udp != b.udp {
        return differ("udp header");
    }
    Ok(Stopped::Never)
}

/// Where the IPv6 extension headers end (the fixed header's end without any).
fn span_end(exts: &[Range], ip: Option<Range>) -> usize {
    exts.first().or(ip.as_ref()).map_or(0, |r| r.1)
}

/// The walk stopped at an IP header whose version is not the one its
/// EtherType names; etherparse reads the version nibble.
fn version_not_ethertype(frame: &[u8], b: &Headers, stop: Option<Stop>) -> bool {
    let Some((at, _)) = b.ip else {
        return false;
    };
    let (Some(ethertype), Some(&first)) = (
        at.checked_sub(2).and_then(|t| frame.get(t..at)),
        frame.get(at),
    ) else {
        return false;
    };
    let version = first >> 4;
    // Cut when the capture is shorter than the header the EtherType names.
    match stop {
        Some(Stop::Invalid(Layer::Ipv4) | Stop::Cut(Layer::Ipv4)) => {
            ethertype == [0x08, 0x00] && version != 4
        }
        Some(Stop::Invalid(Layer::Ipv6) | Stop::Cut(Layer::Ipv6)) => {
            ethertype == [0x86, 0xdd] && version != 6
        }
        _ => false,
    }
}

/// An IPv6 header with payload length 0: etherparse takes the rest of the
/// frame as its payload (a jumbogram, RFC 2675, without reading the Jumbo
/// Payload option); the walk believes the 0, so whatever follows lies
/// past the packet.
fn jumbo(frame: &[u8], ip: Option<Range>) -> bool {
    ip.and_then(|(at, _)| frame.get(at..at + 6))
        .is_some_and(|h| h[0] >> 4 == 6 && h[4..6] == [0, 0])
}

/// The walk stopped at an IP header whose length field is smaller than the
/// header itself, which lax etherparse reads anyway.
fn lax_length(frame: &[u8], b: &Headers, stop: Option<Stop>) -> bool {
    let Some((at, end)) = b.ip else {
        return false;
    };
    match stop {
        Some(Stop::Invalid(Layer::Ipv4)) => {
            let total = frame
                .get(at + 2..at + 4)
                .map_or(0, |t| usize::from(u16::from_be_bytes([t[0], t[1]])));
            total < end - at
        }
        _ => false,
    }
}
