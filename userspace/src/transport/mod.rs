//! The transports behind the shared walk, seen from userspace: how the
//! operator says where each is recognised (`--udp-port`, `--ip-proto`), on top of the
//! registry the walk, the XDP program and synth share
//! (`rocescope_common::wire::registry`). docs/build.md, "Adding a
//! transport", lists what a transport owns and where it is registered.

use rocescope_common::proto::{gre, ip};
use rocescope_common::wire::registry::{TRANSPORTS, Transport, UNSET};
use rocescope_common::wire::uet::REFERENCE_IP_PROTOCOL;
use rocescope_common::wire::{Recognition, TransportId};

/// One `--udp-port TRANSPORT=PORT`: `transport` is recognised on UDP
/// destination port `port` instead of its registered default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpPort {
    pub transport: TransportId,
    pub port: u16,
}

/// Where an option places transports, as its messages name it.
struct Placement {
    /// Whether a transport can be placed so (its registry line).
    has: fn(&Transport) -> bool,
    /// "over UDP", "with a native IP mode".
    what: &'static str,
    /// The value's name and a valid argument: "PORT", "roce=4792".
    value: &'static str,
    example: &'static str,
}

/// `TRANSPORT=VALUE` of an option that places transports (`--udp-port`,
/// `--ip-proto`): the transport, among those `p.has` accepts, and the
/// value as written.
fn parse_placement<'a>(s: &'a str, p: &Placement) -> Result<(TransportId, &'a str), String> {
    let Placement {
        has,
        what,
        value: value_name,
        example,
    } = *p;
    let names = |walked_only: bool| {
        TRANSPORTS
            .iter()
            .filter(|t| has(t) && (t.walked || !walked_only))
            .map(|t| t.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some((name, value)) = s.split_once('=') else {
        return Err(format!(
            "expected TRANSPORT={value_name} (e.g. {example}), got {s:?}"
        ));
    };
    let transport = TransportId::from_name(name.trim())
        .filter(|t| has(t.entry()))
        .ok_or_else(|| {
            format!(
                "no transport {what} is called {name:?} (known: {})",
                names(false)
            )
        })?;
    // A placement for a transport the walk does not decode yet would
    // change nothing: refused rather than silently ignored.
    if !transport.entry().walked {
        return Err(format!(
            "{name:?} is registered but not decoded yet (docs/build.md, \"Adding a transport\"); only {} can be placed",
            names(true)
        ));
    }
    Ok((transport, value.trim()))
}

/// Parses `TRANSPORT=PORT` (e.g. `roce=4792`).
pub fn parse_udp_port(s: &str) -> Result<UdpPort, String> {
    const UDP: Placement = Placement {
        has: |t| t.udp_port.is_some(),
        what: "over UDP",
        value: "PORT",
        example: "roce=4792",
    };
    let (transport, port) = parse_placement(s, &UDP)?;
    let port = match port.parse::<u16>() {
        Ok(p) if p != UNSET => p,
        _ => return Err(format!("{port:?} is not a UDP port (1-65535)")),
    };
    Ok(UdpPort { transport, port })
}

/// One `--ip-proto TRANSPORT=PROTOCOL`: `transport` is recognised in its
/// native IP mode on IP protocol `protocol` (UET: then its entropy
/// header). No transport has a default protocol number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpProtocol {
    pub transport: TransportId,
    pub protocol: u8,
}

/// IP protocol numbers that already mean something to the walk or on any
/// fabric: a transport in native IP mode on one of them would take (or
/// never see) those packets. IANA's names (protocol-numbers registry).
const MEANINGFUL_IP_PROTOCOLS: [(u8, &str); 19] = [
    (ip::IPV6_HOP_BY_HOP, "IPv6 hop-by-hop options"),
    (1, "ICMP"),
    (2, "IGMP"),
    (4, "IPv4 in IP"),
    (6, "TCP"),
    (ip::PROTO_UDP, "UDP"),
    (41, "IPv6 in IP"),
    (ip::IPV6_ROUTING, "the IPv6 routing header"),
    (ip::IPV6_FRAGMENT, "the IPv6 fragment header"),
    (gre::IP_PROTO, "GRE (ERSPAN)"),
    (50, "ESP"),
    (51, "AH"),
    (58, "ICMPv6"),
    (59, "IPv6 no next header"),
    (ip::IPV6_DEST_OPTS, "IPv6 destination options"),
    (112, "VRRP"),
    (132, "SCTP"),
    (136, "UDP-Lite"),
    (255, "reserved"),
];

/// Parses `TRANSPORT=PROTOCOL` (e.g. `uet=253`): a protocol number that
/// means nothing else (not TCP's, UDP's, GRE's, an IPv6 extension
/// header's, …).
pub fn parse_ip_protocol(s: &str) -> Result<IpProtocol, String> {
    const NATIVE: Placement = Placement {
        has: |t| t.ip_protocol,
        what: "with a native IP mode",
        value: "PROTOCOL",
        example: "uet=253",
    };
    let (transport, protocol) = parse_placement(s, &NATIVE)?;
    let protocol = match protocol.parse::<u8>() {
        Ok(p) if u16::from(p) != UNSET => p,
        _ => {
            return Err(format!("{protocol:?} is not an IP protocol number (1-254)"));
        }
    };
    if let Some((_, name)) = MEANINGFUL_IP_PROTOCOLS.iter().find(|(p, _)| *p == protocol) {
        return Err(format!(
            "IP protocol {protocol} is {name}'s: {} needs a number the fabric uses for nothing else (the UEC reference provider uses {REFERENCE_IP_PROTOCOL}; 253 and 254 are IANA's for experiments)",
            transport.entry().name
        ));
    }
    Ok(IpProtocol {
        transport,
        protocol,
    })
}

/// The registry's defaults with `ports` and `protocols` applied; two
/// transports on one port or one protocol number are refused (a frame
/// could not say which it is).
pub fn recognition(ports: &[UdpPort], protocols: &[IpProtocol]) -> Result<Recognition, String> {
    let mut reg = Recognition::DEFAULT;
    for p in ports {
        reg = reg.with_udp_port(p.transport, p.port);
    }
    for p in protocols {
        reg = reg.with_ip_protocol(p.transport, p.protocol);
    }
    for (i, a) in TransportId::ALL.iter().enumerate() {
        for b in &TransportId::ALL[i + 1..] {
            let port = reg.udp_port(*a);
            if port != UNSET && port == reg.udp_port(*b) {
                return Err(format!(
                    "UDP port {port} is given to both {} and {}",
                    a.entry().name,
                    b.entry().name
                ));
            }
            let protocol = reg.ip_protocol(*a);
            if u16::from(protocol) != UNSET && protocol == reg.ip_protocol(*b) {
                return Err(format!(
                    "IP protocol {protocol} is given to both {} and {}",
                    a.entry().name,
                    b.entry().name
                ));
            }
        }
    }
    Ok(reg)
}

/// The lines `reg` adds to a run's identity (docs/tables.md): none when
/// every transport is where the registry puts it, so runs with the
/// defaults keep the identity they always had.
pub fn identity(reg: &Recognition) -> String {
    let mut s = String::new();
    for t in TransportId::ALL {
        let port = reg.udp_port(t);
        if port != Recognition::DEFAULT.udp_port(t) {
            s.push_str(&format!("udp_port.{}={port}\n", t.entry().name));
        }
        let protocol = reg.ip_protocol(t);
        if protocol != Recognition::DEFAULT.ip_protocol(t) {
            s.push_str(&format!("ip_proto.{}={protocol}\n", t.entry().name));
        }
    }
    s.push_str(&crate::telemetry::marks::identity(&reg.telemetry));
    s
}

/// Hands out `flow_id`s, one sequence for every transport's flows (QPs,
/// PDC directions): `first`, `first + step`, … — a sharded run's analyzers
/// (`crate::shard`) step by their number, so their ids never meet.
#[derive(Clone, Copy, Debug)]
pub struct FlowIds {
    next: u32,
    step: u32,
}

impl Default for FlowIds {
    fn default() -> Self {
        FlowIds::new(0, 1)
    }
}

impl FlowIds {
    pub fn new(first: u32, step: u32) -> Self {
        FlowIds {
            next: first,
            step: step.max(1),
        }
    }

    /// The next id. It stops short of `u32::MAX`, which marks a free slot
    /// in the flow table.
    pub fn take(&mut self) -> u32 {
        let id = self.next;
        self.next = self.next.saturating_add(self.step).min(u32::MAX - 1);
        id
    }
}

pub mod packet_columns;
pub mod roce;
pub mod sequencing;
pub mod trim;
pub mod uet;

/// Each transport's own columns of `packets.parquet`, beside RoCE's (the
/// table's own), in the registry's order: a registration point
/// (docs/build.md, "Adding a transport").
pub const PACKET_COLUMNS: [&packet_columns::TransportColumns; 1] = [&uet::PACKETS];

#[cfg(test)]
mod tests;
