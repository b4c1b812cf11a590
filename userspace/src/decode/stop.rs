//! Why the frame walk ended before the end of a frame's headers, and the
//! run-wide tally of frames read but not decoded.
//!
//! The vocabulary is the live tap's: a *parse failure* is a frame whose walk
//! stopped at a header cut short or invalid, or past a decoder limit (VLAN
//! depth, IPv6 extension chain), malformed RoCE datagrams included — what
//! the XDP program counts in `COUNTER_PARSE_FAILURES`. Offline, each one is
//! also named by the layer where it stopped.
use std::collections::BTreeMap;

use rocescope_common::wire::registry::UNSET;
use rocescope_common::wire::{Recognition, TransportId};
use rocescope_common::{Kind, PacketRecord};

pub use rocescope_common::wire::{Foreign, Layer, Limit, Stop};

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

    /// A few words for a person; `reg` names the UDP ports and native IP
    /// protocols recognised.
    pub fn describe(self, reg: &Recognition) -> String {
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
                Foreign::IpProtocol => {
                    // The native IP modes configured (`--ip-proto`), if any.
                    let native: String = TransportId::ALL
                        .into_iter()
                        .filter(|t| t.entry().walked && reg.ip_protocol(*t) != 0)
                        .map(|t| format!(" nor {} ({})", reg.ip_protocol(t), t.entry().name))
                        .collect();
                    format!("IP but neither UDP nor GRE{native}")
                }
                Foreign::UdpPort => {
                    let ports: Vec<String> = TransportId::ALL
                        .into_iter()
                        .filter(|t| t.entry().walked)
                        .map(|t| reg.udp_port(t))
                        .filter(|&p| p != UNSET)
                        .map(|p| p.to_string())
                        .collect();
                    format!("UDP to another port than {}", ports.join(" or "))
                }
                Foreign::GreProtocol => "GRE but not ERSPAN".into(),
                Foreign::MacControlOpcode => "MAC Control but neither PAUSE nor PFC".into(),
                Foreign::IpFragment => "non-first IP fragments".into(),
                Foreign::GrhNextHeader => "RoCEv1 GRH naming no BTH".into(),
                Foreign::ErfType => "ERF records neither InfiniBand nor Ethernet".into(),
                Foreign::LinkNextHeader => {
                    "InfiniBand but no IBA transport (raw, IPv6 over IB)".into()
                }
                Foreign::TelemetryReport => {
                    "telemetry reports (their hops are rows of telemetry.parquet)".into()
                }
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
    /// Where transports were recognised (for the UDP ports in [`DecodeTally::note`]).
    recognition: Recognition,
}

impl Default for DecodeTally {
    fn default() -> Self {
        Self {
            not_decoded: [0; SLOTS],
            parse_failures: [0; LAYERS],
            link_types: Vec::new(),
            recognition: Recognition::DEFAULT,
        }
    }
}

impl DecodeTally {
    /// An empty tally of a run recognising transports as `reg` says.
    pub fn recognising(reg: Recognition) -> Self {
        DecodeTally {
            recognition: reg,
            ..DecodeTally::default()
        }
    }

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
                let mut text = format!("{n} {}", r.describe(&self.recognition));
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
