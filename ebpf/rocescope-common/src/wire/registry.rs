//! The transports the walk knows, and how each is recognised: one table,
//! read by the userspace decoder, the XDP program and synth alike, and the
//! one place in this crate that lists every transport.
//!
//! The shared walk reads the link layer, IP and UDP; where those name a
//! transport — a UDP destination port, an EtherType, a capture's link type
//! or an IP protocol number — it asks this table which one, and hands the
//! rest of the frame to that transport's own walk through the dispatch
//! functions here ([`over_udp`], [`over_ip`], [`over_ethertype`]). Each
//! transport's own modules are declared here too (`roce`, `uet`, which
//! `wire` re-exports as `wire::roce`, `wire::uet`), beside its
//! [`TransportId`], its line in [`TRANSPORTS`], its record [`Kind`] and the
//! view of its fields a record's `Debug` shows.
//! A new transport is a new [`TransportId`], a line in [`TRANSPORTS`], a
//! [`Kind`] and an arm in each match here (docs/build.md, "Adding a
//! transport"); the matches are exhaustive, so the compiler lists them.
//!
//! EtherTypes and link types are fixed by their standards. UDP ports and IP
//! protocol numbers are the operator's to choose (a fabric on a
//! non-standard RoCEv2 port, UET's pre-standard ports, UET's native IP mode
//! whose protocol number IANA never assigned), so they live in
//! [`Recognition`], which starts from the table's defaults.
use super::telemetry::TelemetryMarks;
use super::{Foreign, Frame, L3, Next, Stop, Visit, Walked};
use crate::PacketRecord;
use crate::proto::{ethernet, linktype, udp};

// The transports' own modules, children of the registry (their files stay
// `wire/<transport>/`), so that a new transport is declared where it is
// registered and its code may use the registry's types (`TransportId`,
// `Kind`) as a child uses its parent's; `wire` re-exports them whole
// ([`transports`]).
#[path = "roce/mod.rs"]
pub mod roce;
#[path = "uet/mod.rs"]
pub mod uet;

/// Every transport's own module, for `wire` to re-export as
/// `wire::<transport>`.
pub mod transports {
    pub use crate::wire::registry::{roce, uet};
}

/// A transport behind the shared L2–L4 walk.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TransportId {
    /// The InfiniBand transport (BTH and its extension headers) in its
    /// three encapsulations: RoCEv2 (UDP), RoCEv1 (EtherType 0x8915) and
    /// native InfiniBand (an LRH, by link type).
    Roce = 1,
    /// Ultra Ethernet Transport (UE Specification 1.0.1): PDS and SES
    /// headers over UDP or in native IP mode (`wire::uet`).
    Uet = 2,
}

/// Number of transports: the length of the per-transport arrays.
pub const TRANSPORT_COUNT: usize = 2;

impl TransportId {
    /// Every transport, in [`TRANSPORTS`] order.
    pub const ALL: [TransportId; TRANSPORT_COUNT] = [TransportId::Roce, TransportId::Uet];

    /// Position in [`TRANSPORTS`] and in [`Recognition`]'s arrays.
    pub const fn index(self) -> usize {
        self as usize - 1
    }

    /// The transport's row of [`TRANSPORTS`].
    pub const fn entry(self) -> &'static Transport {
        &TRANSPORTS[self.index()]
    }

    /// The transport whose block tag (`PacketRecord::block_tag`) is `tag`:
    /// a transport's tag is its id.
    #[inline(always)]
    pub const fn from_tag(tag: u8) -> Option<TransportId> {
        match tag {
            1 => Some(TransportId::Roce),
            2 => Some(TransportId::Uet),
            _ => None,
        }
    }

    /// The view of `rec`'s fields that is this transport's, for the
    /// record's `Debug` (under [`Transport::name`]).
    pub fn view_of(self, rec: &PacketRecord) -> &dyn core::fmt::Debug {
        match self {
            TransportId::Roce => rec.roce(),
            TransportId::Uet => rec.uet(),
        }
    }

    /// The transport named `name` (as [`Transport::name`]).
    pub fn from_name(name: &str) -> Option<TransportId> {
        TransportId::ALL
            .into_iter()
            .find(|t| t.entry().name.eq_ignore_ascii_case(name))
    }
}

/// How one transport is recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transport {
    pub id: TransportId,
    /// Its name in options and messages.
    pub name: &'static str,
    /// Its name in prose: the report's frame counts and the messages that
    /// list what can be decoded.
    pub label: &'static str,
    /// The UDP destination port it is recognised by unless configured
    /// otherwise (`None`: not carried over UDP).
    pub udp_port: Option<u16>,
    /// Whether it has a native IP mode: an IP protocol number the operator
    /// configures (no default; [`Recognition::ip_protocols`]).
    pub ip_protocol: bool,
    /// The EtherType that carries it straight in an Ethernet frame.
    pub ethertype: Option<u16>,
    /// Capture link types whose frames are this transport's.
    pub linktypes: &'static [u32],
    /// Whether the shared walk decodes its frames (a transport registered
    /// before its walk is written stops the walk as foreign; messages that
    /// name the ports the run decodes leave it out, and `--udp-port`
    /// refuses to move it).
    pub walked: bool,
}

/// The registry: one line per transport.
pub const TRANSPORTS: [Transport; TRANSPORT_COUNT] = [
    Transport {
        id: TransportId::Roce,
        name: "roce",
        label: "RoCE",
        // RoCEv2 (IBA Annex A17): the IANA port, destination only (the source
        // port is flow entropy).
        udp_port: Some(udp::ROCEV2_PORT),
        ip_protocol: false,
        // RoCEv1 (Annex A16): a GRH straight in the Ethernet frame.
        ethertype: Some(ethernet::ETHERTYPE_ROCE),
        // Native InfiniBand: an LRH first.
        linktypes: &[linktype::INFINIBAND],
        walked: true,
    },
    Transport {
        id: TransportId::Uet,
        name: "uet",
        label: "UET",
        // IANA's port for UET, destination only (the source port is the
        // entropy). Pre-standard code used 49150 and 5432: `--udp-port`.
        udp_port: Some(uet::UDP_PORT),
        // Native IP mode: a protocol number IANA never assigned (the UEC
        // reference provider uses [`uet::REFERENCE_IP_PROTOCOL`]), then a
        // 4-byte entropy header (`wire::uet::over_ip`).
        ip_protocol: true,
        ethertype: None,
        linktypes: &[],
        walked: true,
    },
];

/// "Not recognised by this": a UDP port or IP protocol of 0 matches no frame.
pub const UNSET: u16 = 0;
const _: () = assert!(UNSET == super::telemetry::NO_PORT);

/// What this run recognises transports by where the operator chooses:
/// per transport (indexed by [`TransportId::index`]), its UDP destination
/// port and its native IP protocol number (0: none). A configured port
/// replaces the default: a fabric that runs RoCEv2 on port 4792 has no
/// RoCEv2 on 4791, and a frame to 4791 is then foreign like any other UDP.
///
/// `repr(C)` plain bytes: the XDP program holds it as a global the loader
/// sets ([`crate::live::GLOBAL_RECOGNITION`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recognition {
    pub udp_ports: [u16; TRANSPORT_COUNT],
    /// IP protocol numbers, as `u16` so the struct has no padding.
    pub ip_protocols: [u16; TRANSPORT_COUNT],
    /// Where switch telemetry is marked (`--int-dscp`, `--int-port`,
    /// `--telemetry-report-port`, `--ifa-proto`).
    pub telemetry: TelemetryMarks,
}

impl Default for Recognition {
    fn default() -> Self {
        Recognition::DEFAULT
    }
}

impl Recognition {
    /// The table's defaults: every transport on its registered port, none
    /// in native IP mode.
    pub const DEFAULT: Recognition = {
        let mut udp_ports = [UNSET; TRANSPORT_COUNT];
        let mut i = 0;
        while i < TRANSPORT_COUNT {
            if let Some(p) = TRANSPORTS[i].udp_port {
                udp_ports[i] = p;
            }
            i += 1;
        }
        Recognition {
            udp_ports,
            ip_protocols: [UNSET; TRANSPORT_COUNT],
            telemetry: TelemetryMarks::DEFAULT,
        }
    };

    /// `self` with `t` recognised on UDP destination port `port` instead of
    /// its default.
    pub const fn with_udp_port(mut self, t: TransportId, port: u16) -> Recognition {
        self.udp_ports[t.index()] = port;
        self
    }

    /// The UDP destination port `t` is recognised by (0: none).
    pub const fn udp_port(&self, t: TransportId) -> u16 {
        self.udp_ports[t.index()]
    }

    /// `self` with `t` recognised in native IP mode on IP protocol
    /// `protocol` (0: not at all). Only a transport whose registry line
    /// has a native IP mode is ever found by it ([`Self::by_ip_protocol`]).
    pub const fn with_ip_protocol(mut self, t: TransportId, protocol: u8) -> Recognition {
        self.ip_protocols[t.index()] = protocol as u16;
        self
    }

    /// The IP protocol `t` is recognised by in native IP mode (0: none).
    pub const fn ip_protocol(&self, t: TransportId) -> u8 {
        self.ip_protocols[t.index()] as u8
    }

    /// The transport on UDP destination port `port`. The first listed
    /// wins when two share a port (an operator's mistake the option
    /// parser refuses).
    #[inline(always)]
    pub fn by_udp_port(&self, port: u16) -> Option<TransportId> {
        if port == UNSET {
            return None;
        }
        let mut i = 0;
        while i < TRANSPORT_COUNT {
            if self.udp_ports[i] == port {
                return Some(TransportId::ALL[i]);
            }
            i += 1;
        }
        None
    }

    /// The transport in native IP mode on IP protocol `protocol`.
    #[inline(always)]
    pub fn by_ip_protocol(&self, protocol: u8) -> Option<TransportId> {
        let protocol = u16::from(protocol);
        // An unset protocol (0) names no transport; protocol 0 on the wire
        // (IPv6 hop-by-hop) is not one.
        if protocol == UNSET {
            return None;
        }
        let mut i = 0;
        while i < TRANSPORT_COUNT {
            if TRANSPORTS[i].ip_protocol && self.ip_protocols[i] == protocol {
                return Some(TransportId::ALL[i]);
            }
            i += 1;
        }
        None
    }
}

/// The transport carried straight in Ethernet under `ethertype`.
#[inline(always)]
pub const fn by_ethertype(ethertype: u16) -> Option<TransportId> {
    let mut i = 0;
    while i < TRANSPORT_COUNT {
        if let Some(e) = TRANSPORTS[i].ethertype
            && e == ethertype
        {
            return Some(TRANSPORTS[i].id);
        }
        i += 1;
    }
    None
}

/// The transport a capture of link type `lt` carries (`None`: the link
/// type is one the shared walk reads, or none at all).
pub fn by_linktype(lt: u32) -> Option<TransportId> {
    TRANSPORTS
        .iter()
        .find(|t| t.linktypes.contains(&lt))
        .map(|t| t.id)
}

const _: () = assert!(TRANSPORTS[0].id as usize == TransportId::Roce as usize);
const _: () = assert!(TRANSPORTS[1].id.index() == TransportId::Uet.index());
const _: () = assert!(core::mem::size_of::<Recognition>() == 4 * TRANSPORT_COUNT + 8);
const _: () = assert!(core::mem::size_of::<TelemetryMarks>() == 8);
// A transport's block tag is its id, both ways.
const _: () = {
    let mut i = 0;
    while i < TRANSPORT_COUNT {
        let t = TransportId::ALL[i];
        match TransportId::from_tag(t as u8) {
            Some(found) => assert!(found as u8 == t as u8),
            None => panic!("a transport's tag names no transport"),
        }
        i += 1;
    }
};

/// The transport carried straight in Ethernet under `ethertype`, walked
/// from the header after the Ethernet header and its tags (`at..end`).
#[inline(always)]
pub(super) fn over_ethertype<F: Frame + ?Sized, V: Visit>(
    f: &F,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    ethertype: u16,
    at: usize,
    end: usize,
) -> Next {
    match by_ethertype(ethertype) {
        Some(TransportId::Roce) => roce::grh(f, rec, v, w, at, end),
        // UET has no EtherType of its own (its line above).
        Some(TransportId::Uet) | None => Next::Stop(Stop::Foreign(Foreign::EtherType)),
    }
}

/// The transport in native IP mode on IP protocol `protocol`, walked from
/// the IP payload (`l3`).
#[inline(always)]
pub(super) fn over_ip<F: Frame + ?Sized, V: Visit>(
    f: &F,
    reg: &Recognition,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    l3: &L3,
    protocol: u8,
) -> Next {
    match reg.by_ip_protocol(protocol) {
        Some(TransportId::Uet) => uet::walk::over_ip(f, rec, v, w, l3),
        // RoCE has no native IP mode (its line above).
        Some(TransportId::Roce) | None => Next::Stop(Stop::Foreign(Foreign::IpProtocol)),
    }
}

/// `transport`, found by the UDP destination port, walked from its UDP
/// datagram (`l3`, `datagram_len` bytes as declared), its first header
/// `skipped` bytes after the UDP header (switch telemetry in between).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn over_udp<F: Frame + ?Sized, V: Visit>(
    transport: TransportId,
    f: &F,
    rec: &mut PacketRecord,
    v: &mut V,
    w: &mut Walked,
    l3: &L3,
    datagram_len: usize,
    skipped: usize,
) -> Next {
    match transport {
        TransportId::Roce => roce::over_udp(f, rec, v, w, l3, datagram_len, skipped),
        TransportId::Uet => uet::walk::over_udp(f, rec, v, w, l3, datagram_len, skipped),
    }
}

/// What a frame turned out to be. Frames of no interest produce no record.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Not RoCE, CNP, UET, PFC or PAUSE: not recorded.
    #[default]
    Other = 0,
    /// RoCEv2 (UDP destination port 4791, or the one configured:
    /// `wire::Recognition`) or RoCEv1 (EtherType 0x8915, a
    /// GRH naming a BTH) with any BTH opcode but CNP.
    Roce = 1,
    /// Congestion Notification Packet (BTH opcode 0x81).
    Cnp = 2,
    /// 802.1Qbb priority flow control (MAC Control opcode 0x0101).
    Pfc = 3,
    /// 802.3x PAUSE (MAC Control opcode 0x0001).
    Pause = 4,
    /// To RoCEv2's UDP port but its UDP datagram is too short for a BTH (or a
    /// RoCEv1 GRH whose payload length is).
    Malformed = 5,
    /// Ultra Ethernet Transport (UDP destination port 4793, or the one
    /// configured; or its native IP mode): PDS and SES headers in the
    /// record's UET view ([`PacketRecord::uet`]), however far they were
    /// whole.
    Uet = 6,
}

impl Kind {
    pub const fn from_u8(v: u8) -> Kind {
        match v {
            1 => Kind::Roce,
            2 => Kind::Cnp,
            3 => Kind::Pfc,
            4 => Kind::Pause,
            5 => Kind::Malformed,
            6 => Kind::Uet,
            _ => Kind::Other,
        }
    }

    /// The name used in the `kind` column.
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Other => "other",
            Kind::Roce => "roce",
            Kind::Cnp => "cnp",
            Kind::Pfc => "pfc",
            Kind::Pause => "pause",
            Kind::Malformed => "malformed",
            Kind::Uet => "uet",
        }
    }

    /// A link-level frame (PFC, PAUSE): no IP addresses, a port's.
    pub const fn link_level(self) -> bool {
        match self {
            Kind::Pfc | Kind::Pause => true,
            Kind::Other | Kind::Roce | Kind::Cnp | Kind::Malformed | Kind::Uet => false,
        }
    }
}
