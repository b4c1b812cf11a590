//! Why the frame walk ended before the end of a frame's headers.

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
    /// The InfiniBand Global Route Header (RoCEv1's, or after an LRH).
    Grh,
    /// The InfiniBand Base Transport Header.
    Bth,
    /// The BTH's extension headers (RETH, AETH, DETH, …).
    ExtHeaders,
    /// The MAC Control (PAUSE/PFC) fields.
    MacControl,
    /// An ERF record header (LINKTYPE_ERF) and its extension headers.
    Erf,
    /// The InfiniBand Local Route Header.
    Lrh,
    /// INT over UDP: the shim and the INT headers it declares.
    Int,
    /// IFA: its header between IP and UDP, its metadata after UDP.
    Ifa,
    /// A Telemetry Report's group header.
    TelemetryReport,
    /// The entropy header before the PDS header (UET's native IP mode;
    /// its name is UET's, `wire::uet`).
    Entropy,
    /// A UET PDS header (its 16-bit prefix and the header its type names).
    Pds,
    /// A UET TSS (encryption) header.
    Tss,
    /// A UET SES header (the one a PDS header's next header names).
    Ses,
}

impl Layer {
    pub const ALL: [Layer; 21] = [
        Layer::Link,
        Layer::Vlan,
        Layer::Ipv4,
        Layer::Ipv6,
        Layer::Ipv6Ext,
        Layer::Gre,
        Layer::Erspan,
        Layer::Udp,
        Layer::Grh,
        Layer::Bth,
        Layer::ExtHeaders,
        Layer::MacControl,
        Layer::Erf,
        Layer::Lrh,
        Layer::Int,
        Layer::Ifa,
        Layer::TelemetryReport,
        Layer::Entropy,
        Layer::Pds,
        Layer::Tss,
        Layer::Ses,
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
            Layer::Grh => "grh",
            Layer::Bth => "bth",
            Layer::ExtHeaders => "ext_headers",
            Layer::MacControl => "mac_control",
            Layer::Erf => "erf",
            Layer::Lrh => "lrh",
            Layer::Int => "int",
            Layer::Ifa => "ifa",
            Layer::TelemetryReport => "telemetry_report",
            Layer::Entropy => Layer::ENTROPY_NAME,
            Layer::Pds => "pds",
            Layer::Tss => "tss",
            Layer::Ses => "ses",
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
    /// INT marked by port whose shim's NPT is not 1 (NPT 2: a new UDP
    /// header in front of the original L4 header, not followed).
    IntNextProtocol,
    /// IFA with a checksum or fragmentation header, or tail stamping
    /// (its C, MF or TS flag): not stepped over.
    IfaHeaders,
}

impl Limit {
    pub const ALL: [Limit; 5] = [
        Limit::VlanDepth,
        Limit::Ipv6ExtHeaders,
        Limit::NestedEncapsulation,
        Limit::IntNextProtocol,
        Limit::IfaHeaders,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Limit::VlanDepth => "vlan_depth",
            Limit::Ipv6ExtHeaders => "ipv6_extension_headers",
            Limit::NestedEncapsulation => "nested_encapsulation",
            Limit::IntNextProtocol => "int_next_protocol",
            Limit::IfaHeaders => "ifa_headers",
        }
    }
}

/// The field that says a whole, valid frame is something else than RoCE,
/// CNP, UET, PFC or PAUSE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Foreign {
    /// The EtherType is neither IPv4, IPv6 nor MAC Control (ARP, LLDP, …).
    EtherType,
    /// A BSD null/loopback address family other than IPv4/IPv6, or a
    /// raw-IP packet whose version nibble is neither 4 nor 6.
    AddressFamily,
    /// The IP protocol is neither UDP, GRE nor a transport's native IP
    /// mode (TCP, ICMP, …).
    IpProtocol,
    /// UDP to another port than those of the transports the walk decodes
    /// (4791, 4793 or the configured ones).
    UdpPort,
    /// GRE carrying something other than ERSPAN (or a GRE version/routing
    /// header rocescope does not unwrap).
    GreProtocol,
    /// MAC Control with an opcode other than PAUSE or PFC.
    MacControlOpcode,
    /// A non-first IP fragment: it has no UDP header to recognise it by.
    IpFragment,
    /// A RoCEv1 GRH whose next header is not a BTH (raw IPv6 over IB, …).
    GrhNextHeader,
    /// An ERF record of another type than InfiniBand or Ethernet.
    ErfType,
    /// An InfiniBand LRH (or the GRH behind it) naming no IBA transport:
    /// raw packets, IPv6 over IB.
    LinkNextHeader,
    /// A Telemetry Report to the collector's port: its hops are rows of
    /// `telemetry.parquet`, not a packet of a flow.
    TelemetryReport,
}

impl Foreign {
    pub const ALL: [Foreign; 11] = [
        Foreign::EtherType,
        Foreign::AddressFamily,
        Foreign::IpProtocol,
        Foreign::UdpPort,
        Foreign::GreProtocol,
        Foreign::MacControlOpcode,
        Foreign::IpFragment,
        Foreign::GrhNextHeader,
        Foreign::ErfType,
        Foreign::LinkNextHeader,
        Foreign::TelemetryReport,
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
            Foreign::GrhNextHeader => "grh_next_header",
            Foreign::ErfType => "erf_type",
            Foreign::LinkNextHeader => "link_next_header",
            Foreign::TelemetryReport => "telemetry_report",
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
    /// Whole and valid, but not RoCE, CNP, UET, PFC or PAUSE.
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
