//! The model's addressing plan: senders are 10.0.0.N and receivers 10.0.1.N
//! (N = index + 1), requester QPs 0x100 + flow and responder QPs 0x200 +
//! flow (docs/synth.md, *The model*). Both the scenarios (to place flows on
//! ECMP paths) and the event loop use it.

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
