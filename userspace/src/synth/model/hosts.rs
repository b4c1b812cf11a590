//! The model's addressing plan: senders are 10.0.0.N and receivers 10.0.1.N
//! (N = index + 1), requester QPs 0x100 + flow and responder QPs 0x200 +
//! flow, UDP source ports in the ephemeral range 0xC000..=0xFFFF, port MACs
//! by node and port (docs/synth.md, *The model*). Both the scenarios (to
//! place flows on ECMP paths) and the event loop use it. The counts that
//! index it are bounded where the fabric is built (`Fabric::new`), so
//! nothing here wraps into another host's or flow's value.

use std::net::Ipv4Addr;

pub fn sender_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, (i + 1) as u8)
}
pub fn receiver_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 1, (i + 1) as u8)
}
/// IP TTL of every frame a host sends (the model does not decrement it per
/// hop: only a mirror's L3-egress copy shows a routed TTL).
pub const IP_TTL: u8 = 64;
pub fn requester_qpn(flow: usize) -> u32 {
    0x100 + flow as u32
}
pub fn responder_qpn(flow: usize) -> u32 {
    0x200 + flow as u32
}

/// Most connections a fabric holds: their responder QPNs (0x200 + flow)
/// stay within the BTH's 24 bits.
pub const MAX_FLOWS: usize = (1 << 24) - 0x200;

/// Most spines: every switch port's number fits [`port_mac`].
pub const MAX_SPINES: usize = 64;

/// What cabling the leaf-spine needs of a fabric being built (the RoCE
/// fabric's and the UET one's).
pub trait Cabling {
    /// Cables nodes `a` and `b`: their new ports, `a`'s first.
    fn cable(&mut self, a: usize, b: usize) -> (usize, usize);
    /// Switch `node` reaches `ip` over `ports` (its ECMP group).
    fn route_to(&mut self, node: usize, ip: Ipv4Addr, ports: Vec<usize>);
}

/// Cables the model's leaf-spine: host node `hosts[i]` (the `senders`
/// first, on `leaves[0]`; the receivers on `leaves[1]`) to its leaf, every
/// spine to both leaves, with the routes (a leaf's ECMP group toward the
/// other leaf's hosts is its spine ports). Returns each host's port.
pub fn cable_leaf_spine(
    f: &mut impl Cabling,
    hosts: &[usize],
    senders: usize,
    leaves: [usize; 2],
    spines: &[usize],
) -> Vec<usize> {
    let receivers = hosts.len() - senders;
    let ip = |i: usize| {
        if i < senders {
            sender_ip(i)
        } else {
            receiver_ip(i - senders)
        }
    };
    let mut host_ports = Vec::with_capacity(hosts.len());
    for (i, &n) in hosts.iter().enumerate() {
        let leaf = leaves[usize::from(i >= senders)];
        let (hp, lp) = f.cable(n, leaf);
        host_ports.push(hp);
        f.route_to(leaf, ip(i), vec![lp]);
    }
    let mut up = [vec![], vec![]];
    for &s in spines {
        let (a, sp0) = f.cable(leaves[0], s);
        let (b, sp1) = f.cable(leaves[1], s);
        up[0].push(a);
        up[1].push(b);
        for i in 0..senders {
            f.route_to(s, sender_ip(i), vec![sp0]);
        }
        for i in 0..receivers {
            f.route_to(s, receiver_ip(i), vec![sp1]);
        }
    }
    for i in 0..receivers {
        f.route_to(leaves[0], receiver_ip(i), up[0].clone());
    }
    for i in 0..senders {
        f.route_to(leaves[1], sender_ip(i), up[1].clone());
    }
    host_ports
}

/// The `i`th of a series of UDP source ports `stride` apart, wrapping
/// within the ephemeral range 0xC000..=0xFFFF (RFC 6335), whatever `i`.
pub fn ephemeral_port(i: usize, stride: u16) -> u16 {
    const BASE: u64 = 0xC000;
    const SPAN: u64 = 0x1_0000 - BASE;
    let off = (i as u64 % SPAN) * u64::from(stride) % SPAN;
    // Below 0x4000 by the modulo: the sum is at most 0xFFFF.
    (BASE + off) as u16
}

/// The MAC of port `local` of node `node` (a host's or a switch's): 02,
/// 00 (host) or 5A (switch), then the node's and the port's high four bits,
/// the node's low byte, the port's low byte, 01. Node and port are below
/// 4096 ([`MAX_SPINES`] and the host limits keep them there: at most 566
/// nodes, 314 ports on a leaf); the fabric's small ones read 02:xx:00:NN:PP:01.
pub fn port_mac(host: bool, node: usize, local: usize) -> [u8; 6] {
    debug_assert!(node < 4096 && local < 4096, "node {node} port {local}");
    let high = ((node >> 8) & 0xF) | (((local >> 8) & 0xF) << 4);
    [
        0x02,
        if host { 0x00 } else { 0x5A },
        high as u8,
        node as u8,
        local as u8,
        0x01,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a debug build, too: no count wraps or overflows.
    #[test]
    fn ephemeral_ports_stay_in_range_for_any_count() {
        assert_eq!(ephemeral_port(0, 97), 0xC000);
        assert_eq!(ephemeral_port(3, 97), 0xC000 + 291);
        // 169 × 97 = 16393 = 0x4000 + 9: wraps to the range's start.
        assert_eq!(ephemeral_port(169, 97), 0xC009);
        assert_eq!(ephemeral_port(usize::MAX, 0x1F3), {
            let i = usize::MAX as u64 % 0x4000;
            (0xC000 + i * 0x1F3 % 0x4000) as u16
        });
        for i in 0..100_000 {
            assert!(ephemeral_port(i, 0x1F3) >= 0xC000);
        }
        // Stride 0x1F3 is odd: 0x4000 consecutive flows get distinct ports.
        let ports: std::collections::HashSet<u16> =
            (0..0x4000).map(|i| ephemeral_port(i, 0x1F3)).collect();
        assert_eq!(ports.len(), 0x4000);
    }

    #[test]
    fn port_macs_are_distinct_past_a_byte() {
        assert_eq!(port_mac(true, 3, 0), [0x02, 0x00, 0x00, 3, 0, 0x01]);
        assert_eq!(
            port_mac(false, 0x1F7, 0x13A),
            [0x02, 0x5A, 0x11, 0xF7, 0x3A, 0x01]
        );
        let macs: std::collections::HashSet<[u8; 6]> = (0..600)
            .flat_map(|n| (0..320).map(move |l| port_mac(false, n, l)))
            .collect();
        assert_eq!(macs.len(), 600 * 320);
    }
}
