//! Why the frame walk ended before the end of a frame's headers, and the
//! run-wide tally of frames read but not decoded.
//!
//! The vocabulary is the live tap's: a *parse failure* is a frame whose walk
//! stopped at a header cut short or invalid, or past a decoder limit (VLAN
//! depth, IPv6 extension chain), malformed RoCE datagrams included — what
//! the XDP program counts in `COUNTER_PARSE_FAILURES`. Offline, each one is
//! also named by the layer where it stopped.
use std::collections::BTreeMap;

use rocescope_common::{Kind, PacketRecord};

/// A protocol layer of the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layer {
    /// The link-layer header: Ethernet, Linux SLL/SLL2, BSD null/loopback.
    Link,
    /// An 802.1Q/802.1ad tag.
    Vlan,
    Ipv4,
    Ipv6,
    /// An IPv6 hop-by-hop, routing, destination-options or fragment header.
    Ipv6Ext,
    Gre,
    /// The ERSPAN II/III header after GRE.
    Erspan,
    Udp,
    /// The InfiniBand Base Transport Header.
    Bth,
    /// The BTH's extension headers (RETH, AETH, DETH, …).
    ExtHeaders,
    /// The MAC Control (PAUSE/PFC) fields.
    MacControl,
}

impl Layer {
    pub const ALL: [Layer; 11] = [
        Layer::Link,
        Layer::Vlan,
        Layer::Ipv4,
        Layer::Ipv6,
        Layer::Ipv6Ext,
        Layer::Gre,
        Layer::Erspan,
        Layer::Udp,
        Layer::Bth,
        Layer::ExtHeaders,
        Layer::MacControl,
    ];

    /// The name used in `summary.json` and messages.
    pub const fn as_str(self) -> &'static str {
        match self {
            Layer::Link => "link",
            Layer::Vlan => "vlan",
            Layer::Ipv4 => "ipv4",
            Layer::Ipv6 => "ipv6",
            Layer::Ipv6Ext => "ipv6_ext",
            Layer::Gre => "gre",
            Layer::Erspan => "erspan",
            Layer::Udp => "udp",
            Layer::Bth => "bth",
            Layer::ExtHeaders => "ext_headers",
            Layer::MacControl => "mac_control",
        }
    }
}

/// A limit of the decoder, not of the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Limit {
    /// More than `MAX_VLAN_TAGS` VLAN tags.
    VlanDepth,
    /// More than `MAX_IPV6_EXT_HEADERS` IPv6 extension headers.
    Ipv6ExtHeaders,
    /// GRE inside a frame already unwrapped from ERSPAN (one level only).
    NestedEncapsulation,
}

impl Limit {
    pub const ALL: [Limit; 3] = [
        Limit::VlanDepth,
        Limit::Ipv6ExtHeaders,
        Limit::NestedEncapsulation,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Limit::VlanDepth => "vlan_depth",
            Limit::Ipv6ExtHeaders => "ipv6_extension_headers",
            Limit::NestedEncapsulation => "nested_encapsulation",
        }
    }
}

/// The field that says a whole, valid frame is something else than RoCE,
/// CNP, PFC or PAUSE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Foreign {
    /// The EtherType is neither IPv4, IPv6 nor MAC Control (ARP, LLDP, …).
    EtherType,
    /// A BSD null/loopback address family other than IPv4/IPv6, or a
    /// raw-IP packet whose version nibble is neither 4 nor 6.
    AddressFamily,
    /// The IP protocol is neither UDP nor GRE (TCP, ICMP, …).
    IpProtocol,
    /// UDP to another port than 4791.
    UdpPort,
    /// GRE carrying something other than ERSPAN (or a GRE version/routing
    /// header rocescope does not unwrap).
    GreProtocol,
    /// MAC Control with an opcode other than PAUSE or PFC.
    MacControlOpcode,
    /// A non-first IP fragment: it has no UDP header to recognise it by.
    IpFragment,
}

impl Foreign {
    pub const ALL: [Foreign; 7] = [
        Foreign::EtherType,
        Foreign::AddressFamily,
        Foreign::IpProtocol,
        Foreign::UdpPort,
        Foreign::GreProtocol,
        Foreign::MacControlOpcode,
        Foreign::IpFragment,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Foreign::EtherType => "ethertype",
            Foreign::AddressFamily => "address_family",
            Foreign::IpProtocol => "ip_protocol",
            Foreign::UdpPort => "udp_port",
            Foreign::GreProtocol => "gre_protocol",
            Foreign::MacControlOpcode => "mac_control_opcode",
            Foreign::IpFragment => "ip_fragment",
        }
    }
}

/// Why the walk ended before the end of the frame's headers. A frame with
/// no stop was decoded as far as the protocols go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stop {
    /// The capture's link type is not one rocescope decodes.
    LinkType,
    /// A header was cut short (by the snaplen, or the frame is too short).
    Cut(Layer),
    /// A header's fields cannot be believed (IP version, IHL, lengths; a
    /// UDP datagram to 4791 too short for a BTH).
    Invalid(Layer),
    /// A decoder limit was reached.
    Limit(Limit),
    /// Whole and valid, but not RoCE, CNP, PFC or PAUSE.
    Foreign(Foreign),
}

impl Stop {
    /// A parse failure as the live tap counts them: a header cut short or
    /// invalid, or a VLAN / IPv6 extension chain past the decoder's limit.
    pub const fn is_parse_failure(self) -> bool {
        matches!(
            self,
            Stop::Cut(_) | Stop::Invalid(_) | Stop::Limit(Limit::VlanDepth | Limit::Ipv6ExtHeaders)
        )
    }

    /// The layer a parse failure is counted at.
    pub const fn layer(self) -> Option<Layer> {
        match self {
            Stop::Cut(l) | Stop::Invalid(l) => Some(l),
            Stop::Limit(Limit::VlanDepth) => Some(Layer::Vlan),
            Stop::Limit(Limit::Ipv6ExtHeaders) => Some(Layer::Ipv6Ext),
            _ => None,
        }
    }
}

/// Reasons a frame read from a capture gave no record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Undecoded {
    /// Did not match the `--filter` expression.
    FilteredOut,
    /// Its capture interface is past the run's limit of interfaces.
    InterfaceLimit,
    /// The decoder's reason.
    Stop(Stop),
}

impl Undecoded {
    /// The key in `summary.json`'s `not_decoded_by_reason`.
    pub fn key(self) -> String {
        match self {
            Undecoded::FilteredOut => "filtered_out".into(),
            Undecoded::InterfaceLimit => "interface_limit".into(),
            Undecoded::Stop(Stop::LinkType) => "link_type_not_supported".into(),
            Undecoded::Stop(Stop::Cut(l)) => format!("cut.{}", l.as_str()),
            Undecoded::Stop(Stop::Invalid(l)) => format!("invalid.{}", l.as_str()),
            Undecoded::Stop(Stop::Limit(l)) => format!("decoder_limit.{}", l.as_str()),
            Undecoded::Stop(Stop::Foreign(f)) => format!("not_roce.{}", f.as_str()),
        }
    }

    /// A few words for a person.
    pub fn describe(self) -> String {
        match self {
            Undecoded::FilteredOut => "filtered out by --filter".into(),
            Undecoded::InterfaceLimit => "past the run's interface limit".into(),
            Undecoded::Stop(Stop::LinkType) => "of a link type rocescope does not decode".into(),
            Undecoded::Stop(Stop::Cut(l)) => format!("cut inside the {} header", l.as_str()),
            Undecoded::Stop(Stop::Invalid(l)) => format!("with an invalid {} header", l.as_str()),
            Undecoded::Stop(Stop::Limit(l)) => {
                format!("past a decoder limit ({})", l.as_str().replace('_', " "))
            }
            Undecoded::Stop(Stop::Foreign(f)) => match f {
                Foreign::EtherType => "not IP (another EtherType)".into(),
                Foreign::AddressFamily => "not IP (another address family)".into(),
                Foreign::IpProtocol => "IP but neither UDP nor GRE".into(),
                Foreign::UdpPort => "UDP to another port than 4791".into(),
                Foreign::GreProtocol => "GRE but not ERSPAN".into(),
                Foreign::MacControlOpcode => "MAC Control but neither PAUSE nor PFC".into(),
                Foreign::IpFragment => "non-first IP fragments".into(),
            },
        }
    }
}

/// Every reason, in report order.
fn all_reasons() -> impl Iterator<Item = Undecoded> {
    let layers = || Layer::ALL.into_iter();
    [Undecoded::FilteredOut, Undecoded::Stop(Stop::LinkType)]
        .into_iter()
        .chain(
            Foreign::ALL
                .into_iter()
                .map(|f| Undecoded::Stop(Stop::Foreign(f))),
        )
        .chain(layers().map(|l| Undecoded::Stop(Stop::Cut(l))))
        .chain(layers().map(|l| Undecoded::Stop(Stop::Invalid(l))))
        .chain(
            Limit::ALL
                .into_iter()
                .map(|l| Undecoded::Stop(Stop::Limit(l))),
        )
        .chain([Undecoded::InterfaceLimit])
}

const LAYERS: usize = Layer::ALL.len();
const FOREIGN: usize = Foreign::ALL.len();
const LIMITS: usize = Limit::ALL.len();
/// Slots of [`DecodeTally::not_decoded`]: filtered, link type, interface
/// limit, then foreign, cut, invalid and limit reasons.
const SLOTS: usize = 3 + FOREIGN + 2 * LAYERS + LIMITS;

fn slot(u: Undecoded) -> usize {
    match u {
        Undecoded::FilteredOut => 0,
        Undecoded::Stop(Stop::LinkType) => 1,
        Undecoded::InterfaceLimit => 2,
        Undecoded::Stop(Stop::Foreign(f)) => 3 + f as usize,
        Undecoded::Stop(Stop::Cut(l)) => 3 + FOREIGN + l as usize,
        Undecoded::Stop(Stop::Invalid(l)) => 3 + FOREIGN + LAYERS + l as usize,
        Undecoded::Stop(Stop::Limit(l)) => 3 + FOREIGN + 2 * LAYERS + l as usize,
    }
}

/// Frames read but not decoded, by reason, and parse failures by layer, over
/// a whole run: counted per frame with array increments only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeTally {
    not_decoded: [u64; SLOTS],
    parse_failures: [u64; LAYERS],
    /// Frames per link type not decoded (link type, frames), few entries.
    link_types: Vec<(u32, u64)>,
}

impl Default for DecodeTally {
    fn default() -> Self {
        Self {
            not_decoded: [0; SLOTS],
            parse_failures: [0; LAYERS],
            link_types: Vec::new(),
        }
    }
}

impl DecodeTally {
    /// One decoded frame: `rec` is what the walk made of it, `stop` why it
    /// ended early (if it did), `linktype` its capture's.
    pub fn frame(&mut self, rec: &PacketRecord, stop: Option<Stop>, linktype: u32) {
        let kind = rec.kind();
        if kind == Kind::Malformed {
            self.parse_failures[Layer::Udp as usize] += 1;
        } else if let Some(layer) = stop.filter(|s| s.is_parse_failure()).and_then(Stop::layer) {
            self.parse_failures[layer as usize] += 1;
        }
        if kind != Kind::Other {
            return;
        }
        // A frame of kind Other always has a stop; the fallback keeps the
        // sum right should a layer forget to say why.
        let stop = stop.unwrap_or(Stop::Foreign(Foreign::EtherType));
        self.not_decoded(Undecoded::Stop(stop));
        if stop == Stop::LinkType {
            match self.link_types.iter_mut().find(|(lt, _)| *lt == linktype) {
                Some((_, n)) => *n += 1,
                None => self.link_types.push((linktype, 1)),
            }
        }
    }

    /// A frame that gave no record for a reason outside the decoder.
    pub fn not_decoded(&mut self, reason: Undecoded) {
        self.not_decoded[slot(reason)] += 1;
    }

    /// Frames read but not decoded, whatever the reason.
    pub fn total_not_decoded(&self) -> u64 {
        self.not_decoded.iter().sum()
    }

    pub fn count(&self, reason: Undecoded) -> u64 {
        self.not_decoded[slot(reason)]
    }

    /// Non-zero reasons, in report order.
    pub fn reasons(&self) -> Vec<(Undecoded, u64)> {
        all_reasons()
            .map(|r| (r, self.count(r)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }

    /// Parse failures (the live tap's definition), all layers.
    pub fn total_parse_failures(&self) -> u64 {
        self.parse_failures.iter().sum()
    }

    /// What `summary.json` says under `input.decode`.
    pub fn facts(&self) -> DecodeFacts {
        let mut link_types: Vec<_> = self.link_types.clone();
        link_types.sort_unstable();
        DecodeFacts {
            not_decoded: self.total_not_decoded(),
            not_decoded_by_reason: self
                .reasons()
                .into_iter()
                .map(|(r, n)| (r.key(), n))
                .collect(),
            link_types_not_supported: link_types
                .into_iter()
                .map(|(lt, n)| (lt.to_string(), n))
                .collect(),
            parse_failures: self.total_parse_failures(),
            parse_failures_by_layer: Layer::ALL
                .into_iter()
                .map(|l| (l.as_str().to_string(), self.parse_failures[l as usize]))
                .filter(|&(_, n)| n > 0)
                .collect(),
        }
    }

    /// One line for stderr: how many frames were not decoded and why
    /// (`None` when every frame was).
    pub fn note(&self, frames_read: u64) -> Option<String> {
        let total = self.total_not_decoded();
        if total == 0 {
            return None;
        }
        let reasons: Vec<String> = self
            .reasons()
            .into_iter()
            .map(|(r, n)| {
                let mut text = format!("{n} {}", r.describe());
                if r == Undecoded::Stop(Stop::LinkType) {
                    let lts: Vec<String> = self
                        .link_types
                        .iter()
                        .map(|(lt, _)| lt.to_string())
                        .collect();
                    text.push_str(&format!(" ({})", lts.join(", ")));
                }
                text
            })
            .collect();
        Some(format!(
            "{total} of {frames_read} frames read were not decoded: {}",
            reasons.join(", ")
        ))
    }
}

/// `summary.json`'s `input.decode`: frames read = records + `not_decoded`.
/// Maps list only the reasons and layers that occurred.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DecodeFacts {
    /// Frames read that gave no record.
    pub not_decoded: u64,
    /// Those frames by reason: `filtered_out`, `link_type_not_supported`,
    /// `not_roce.FIELD`, `cut.LAYER`, `invalid.LAYER`,
    /// `decoder_limit.LIMIT`, `interface_limit`.
    pub not_decoded_by_reason: BTreeMap<String, u64>,
    /// Frames of each link type not decoded (by LINKTYPE_* number).
    pub link_types_not_supported: BTreeMap<String, u64>,
    /// Frames whose walk stopped at a header cut short or invalid or past a
    /// VLAN / IPv6 extension limit, malformed RoCE datagrams included (as
    /// the live tap counts `parse_failures`); records among them too.
    pub parse_failures: u64,
    /// Those by the layer where the walk stopped.
    pub parse_failures_by_layer: BTreeMap<String, u64>,
}
