//! Frame decoding: the frame-to-record walk and what userspace adds to it.
//!
//! The walk itself is [`rocescope_common::wire`], shared with the XDP
//! program: it reads the frame through bounds-checked loads at the spec's
//! field offsets, from the link layer to the InfiniBand transport headers,
//! and fills one [`PacketRecord`]. [`decode`] runs it over a byte slice and
//! adds what only userspace does: the ICRC check ([`icrc`]; on InfiniBand
//! [`lrh`], with the VCRC), the ERF record header ([`erf`]), the `CUT` flag,
//! and the application payload's bytes (for RDMA CM, `transport::roce::cm`). Nothing here
//! allocates, indexes out of bounds or panics, whatever the bytes.
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
//!   `Other`; a hop-by-hop header anywhere but first is invalid, RFC 8200
//!   §4.1). When any was present the ICRC is not checked: Annex A17 defines
//!   the ICRC for an IPv6 header followed by UDP, and [`icrc::compute`] relies
//!   on that layout.
//! * **UDP**: a UDP header cut by the snaplen is `Other` (the destination port
//!   is not trusted from a partial header). The datagram length is the UDP
//!   length bounded by the IP payload length (a UDP length larger than the IP
//!   packet is not believed); for a first fragment, the UDP length alone.
//!   Shorter than UDP + BTH + ICRC (24 bytes): `Malformed`, keeping the L2, L3
//!   and UDP fields.
//! * **RoCEv1** (EtherType 0x8915, also behind VLAN tags or in ERSPAN): a
//!   GRH whose IPVer is not 6 is invalid, one whose next header is not a
//!   BTH (0x1B) is `Other`; the GRH payload length plays the UDP length's
//!   part (shorter than BTH + ICRC: `Malformed`), the GIDs the addresses'
//!   (`HAS_GRH`). The traffic class is not read as DSCP/ECN: RoCEv1 defines
//!   no ECN. The ICRC is checked as [`icrc::compute_grh`] says.
//! * **Native InfiniBand** (LINKTYPE_INFINIBAND, an ERF InfiniBand record;
//!   [`wire::walk_infiniband`]): an LRH whose LNH names no IBA transport, or
//!   a GRH behind it naming no BTH, is `Other`; a GRH is read as RoCEv1's
//!   (`HAS_GRH`, its GIDs the addresses; without one the LIDs, as
//!   `proto::lrh::lid_addr`). `PktLen` plays the UDP length's part (shorter
//!   than the route headers + BTH + ICRC: `Malformed`). The ICRC is checked
//!   as [`lrh::icrc`] says, the VCRC after it when captured. An ERF record
//!   ([`erf`]) stands for its payload: `frame_len` is its `wlen`, `cap_len`
//!   the payload's; an ERF Ethernet record is walked as Ethernet.
//! * **BTH cut by the snaplen**: the opcode is unknown, so the kind is `Roce`
//!   (never `Cnp`), `HAS_BTH` and `HAS_PAYLOAD_LEN` are clear.
//! * **Extension headers**: read in spec order while each is whole in the
//!   capture and before the ICRC; the first cut one ends the walk (its flag and
//!   the following ones stay clear). RDETH, XRCETH and the DC headers of the
//!   RD range (`proto::ib::ext_headers_se`) have no record fields: they are
//!   read only to find what follows.
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
//! * **Switch telemetry** (docs/inputs.md, "Switch telemetry"): INT-MD
//!   after a UDP header (marked by `--int-dscp` or `--int-port`) and IFA
//!   (`--ifa-proto`: its header between IP and UDP, its metadata after
//!   UDP) are stepped over to the BTH: the record is the RoCE packet's,
//!   with `TELEMETRY` set, and its ICRC is judged on the packet as its
//!   sender built it ([`restore`]). A Telemetry Report (to
//!   `--telemetry-report-port`) is no record: `Other`, stopped as
//!   `Foreign::TelemetryReport`. [`Walk::telemetry`] says where the bytes
//!   are, for `crate::telemetry` to read the hops.
//! * **MAC Control**: a frame cut before its opcode is `Other`; cut after the
//!   opcode but before the end of the PAUSE/PFC fields keeps the kind with
//!   `HAS_PAUSE`/`HAS_PFC` clear. MAC Control behind VLAN tags (or inside
//!   ERSPAN) is decoded too.
use rocescope_common::proto;
use rocescope_common::wire::{self, Recognition, TransportId, registry};
use rocescope_common::{Kind, PacketRecord, flags};

pub use self::stop::{DecodeFacts, DecodeTally, Foreign, Layer, Limit, Stop, Undecoded};

use crate::transport::roce::{icrc, lrh};
pub use crate::view::Truncated;
use crate::view::field;

pub mod erf;
pub mod restore;
mod stop;

#[cfg(test)]
mod tests;

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
            | lt::INFINIBAND
            | lt::ERF
    )
}

/// The link types [`decode`] reads, for messages.
pub const DECODED_LINKTYPES: &str = "Ethernet, Linux SLL and SLL2, raw IP, BSD null/loopback, InfiniBand, ERF (InfiniBand and Ethernet records)";

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
    /// Switch telemetry the frame carried or was (`crate::telemetry`
    /// reads it), and the bytes its spans lie in (an ERF record's payload,
    /// else the frame).
    pub telemetry: Option<(wire::telemetry::Found, &'a [u8])>,
}

/// [`decode_into`], and why the walk stopped where it did.
pub fn decode_walk<'a>(
    rec: &mut PacketRecord,
    linktype: u32,
    data: &'a [u8],
    frame_len: u32,
) -> Walk<'a> {
    decode_walk_with(rec, &Recognition::DEFAULT, linktype, data, frame_len)
}

/// [`decode_walk`] recognising transports where `reg` says (the ports an
/// operator configured: `--udp-port`).
pub fn decode_walk_with<'a>(
    rec: &mut PacketRecord,
    reg: &Recognition,
    linktype: u32,
    data: &'a [u8],
    frame_len: u32,
) -> Walk<'a> {
    use proto::linktype as lt;
    // An ERF record's payload and wire length stand for the frame's.
    let (w, data, frame_len) = match (linktype, registry::by_linktype(linktype)) {
        (_, Some(TransportId::Roce)) => (
            wire::walk_infiniband(data, rec, &mut (), 0, data.len()),
            data,
            frame_len,
        ),
        (lt::ERF, None) => match erf::record(data) {
            Ok((e, payload)) => {
                let wlen = u32::from(e.wlen());
                match e.record_type() {
                    proto::erf::TYPE_INFINIBAND => (
                        wire::walk_infiniband(payload, rec, &mut (), 0, payload.len()),
                        payload,
                        wlen,
                    ),
                    proto::erf::TYPE_ETH => {
                        let frame = field::tail(payload, proto::erf::ETH_PAD_LEN);
                        let w = wire::walk_with(frame, reg, lt::ETHERNET, rec, &mut ());
                        (w, frame, wlen)
                    }
                    _ => (stopped(rec, Stop::Foreign(Foreign::ErfType)), payload, wlen),
                }
            }
            Err(erf::ErfError::Truncated) => (stopped(rec, Stop::Cut(Layer::Erf)), data, frame_len),
            Err(_) => (stopped(rec, Stop::Invalid(Layer::Erf)), data, frame_len),
        },
        _ => (
            wire::walk_with(data, reg, linktype, rec, &mut ()),
            data,
            frame_len,
        ),
    };
    let compute = if rec.has(flags::IB_LRH) {
        lrh::icrc
    } else if rec.has(flags::HAS_GRH) {
        icrc::compute_grh
    } else {
        icrc::compute
    };
    if let Some(packet) = w.icrc.and_then(|s| data.get(s.at..s.end)) {
        // Inserted telemetry: judged on the packet as its sender built it.
        let restored = match (w.telemetry, w.icrc) {
            (Some(t), Some(s)) => restore::without_telemetry(packet, s.at, &t),
            _ => None,
        };
        let sent = restored.as_deref().unwrap_or(packet);
        if w.telemetry.is_some() && restored.is_none() {
            // Spans that do not fit: no verdict rather than a false one.
        } else if let (Some(carried), Some(computed)) = (icrc::carried(sent), compute(sent)) {
            rec.roce_mut().icrc = carried;
            rec.flags |= flags::ICRC_CHECKED;
            if carried == computed {
                rec.flags |= flags::ICRC_OK;
            }
        }
        if let Some(&[a, b]) = w.vcrc.and_then(|s| data.get(s.at..s.end)) {
            rec.flags |= flags::VCRC_CHECKED;
            if u16::from_le_bytes([a, b]) == lrh::vcrc(packet) {
                rec.flags |= flags::VCRC_OK;
            }
        }
    }
    if w.cut {
        rec.flags |= flags::CUT;
    }
    // The switch cut the mirrored frame: whatever its lengths say, its
    // ICRC covers bytes the capture does not have.
    if w.erspan_truncated && rec.has(flags::HAS_UDP) {
        rec.flags &= !(flags::ICRC_CHECKED | flags::ICRC_OK);
        rec.flags |= flags::CUT;
    }
    let mut payload = data.get(w.payload.at..w.payload.end).unwrap_or(&[]);
    if rec.kind() == Kind::Other {
        *rec = PacketRecord::default();
        payload = &[];
    }
    rec.frame_len = frame_len;
    rec.cap_len = u32::try_from(data.len()).unwrap_or(u32::MAX);
    Walk {
        payload,
        stop: w.stop,
        telemetry: w.telemetry.map(|t| (t, data)),
    }
}

/// An empty record and the walk of a frame that stopped before any header.
fn stopped(rec: &mut PacketRecord, stop: Stop) -> wire::Walked {
    *rec = PacketRecord::default();
    wire::Walked {
        stop: Some(stop),
        ..wire::Walked::default()
    }
}
