//! In-band telemetry put into the frames a tap recorded (`synth --telemetry
//! int-md|ifa`; docs/synth-truth.md, "telemetry"): the stack of hops the
//! model's switches pushed ([`InbandHop`], newest first) as INT-MD over UDP
//! (INT v2.1, marked by UDP port [`INT_PORT`]) or IFA 2.0 (IP protocol
//! [`IFA_PROTOCOL`]), through the builders of [`crate::synth::telemetry`].
//! The frame keeps the sender's ICRC, as on the wire.
use super::postcards::{IFA_PROTOCOL, INT_PORT, InbandHop, TelemetryMode};
use super::spec::FrameSpec;
use crate::synth::frame::{EthHeader, VlanTag};
use crate::synth::telemetry::{Ifa, IfaHop, IntHop, IntMark, IntMd};

/// INT's hop limit and IFA's: more than a leaf-spine path has.
const MAX_HOPS: u8 = 8;

const NS_PER_SEC: u64 = 1_000_000_000;

/// `bytes` (the frame `spec` as built) with the stack `hops` in, as `mode`
/// carries it, its times counted from `epoch_ns` (the capture's model time
/// 0); unchanged for a frame that is no RoCE packet or a mode that is not
/// in-band.
pub fn with_hops(
    mode: TelemetryMode,
    spec: &FrameSpec,
    bytes: &[u8],
    hops: &[InbandHop],
    epoch_ns: u64,
) -> Vec<u8> {
    let FrameSpec::Roce(r) = spec else {
        return bytes.to_vec();
    };
    let eth = EthHeader {
        dst: r.dst_mac,
        src: r.src_mac,
        outer_vlan: None,
        vlan: r.vlan.map(|v| VlanTag::dot1q(v.vid, v.pcp)),
    };
    let left = MAX_HOPS.saturating_sub(hops.len() as u8);
    match mode {
        TelemetryMode::IntMd => IntMd {
            mark: IntMark::Port(INT_PORT),
            remaining_hop_count: left,
            hops: hops.iter().map(|h| int_hop(h, epoch_ns)).collect(),
        }
        .insert(bytes, &eth),
        TelemetryMode::Ifa => Ifa {
            protocol: IFA_PROTOCOL,
            hop_limit: left,
            hops: hops.iter().map(|h| ifa_hop(h, epoch_ns)).collect(),
            udp_length_grows: true,
        }
        .insert(bytes, &eth),
        TelemetryMode::Postcards => bytes.to_vec(),
    }
}

/// INT-MD's hop: node id, level 1 ports, hop latency (ns), queue id and
/// occupancy (bytes, 24 bits), ingress and egress timestamps (ns since the
/// epoch).
fn int_hop(h: &InbandHop, epoch_ns: u64) -> IntHop {
    IntHop {
        node_id: h.switch_id,
        ingress_port: h.ingress_port,
        egress_port: h.egress_port,
        hop_latency: h.hop_latency_ns,
        queue_id: h.queue,
        queue_occupancy: h.occupancy.min(0x00FF_FFFF),
        ingress_ts: epoch_ns + h.arrival_ns,
        egress_ts: epoch_ns + h.departure_ns,
    }
}

/// IFA's hop: device id (20 bits), the packet's TTL, the egress port's
/// speed code, the queue (6 bits), the receive time (seconds, 20 bits, and
/// nanoseconds), ports, residence time (ns); of the vendor words, the
/// first holds the queue's occupancy in bytes (one vendor's reading of it;
/// the draft leaves them to the vendor), the others 0.
fn ifa_hop(h: &InbandHop, epoch_ns: u64) -> IfaHop {
    let rx = epoch_ns + h.arrival_ns;
    IfaHop {
        device_id: h.switch_id & 0xF_FFFF,
        ip_ttl: h.ttl,
        port_speed: speed_code(h.gbps),
        congestion: 0,
        queue_id: h.queue & 0x3F,
        rx_sec: ((rx / NS_PER_SEC) & 0xF_FFFF) as u32,
        egress_port: h.egress_port,
        ingress_port: h.ingress_port,
        rx_ns: (rx % NS_PER_SEC) as u32,
        residence_ns: h.hop_latency_ns,
        vendor: [h.occupancy, 0, 0],
    }
}

/// IFA's egress port speed code: 0 10G, 1 25G, 2 40G, 3 50G, 4 100G,
/// 5 200G, 6 400G; 0xF for another speed.
fn speed_code(gbps: f64) -> u8 {
    [10.0, 25.0, 40.0, 50.0, 100.0, 200.0, 400.0]
        .iter()
        .position(|&s| (gbps - s).abs() < 0.5)
        .map_or(0xF, |i| i as u8)
}
