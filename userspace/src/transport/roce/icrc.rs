//! RoCEv2 Invariant CRC (IBA Vol. 1 Annex A17.3.3).
//!
//! The ICRC is a CRC-32 (the Ethernet polynomial) over the IP packet with
//! every field a router may rewrite masked to ones, preceded by 64 one-bits
//! that stand in for the InfiniBand LRH:
//!
//! * IPv4: Type of Service (DSCP + ECN), Time to Live, Header Checksum;
//! * IPv6: Traffic Class, Flow Label, Hop Limit;
//! * UDP: Checksum;
//! * BTH: the reserved byte `resv8a` (byte 4).
//!
//! It covers everything from the IP header to the end of the payload and pad
//! and is carried in the last four bytes of the UDP datagram, least
//! significant byte first.
//!
//! RoCEv1 (Annex A16) computes it the InfiniBand way over the GRH and what
//! follows ([`compute_grh`]): the same 64 one-bits for the absent LRH, the
//! GRH's Traffic Class, Flow Label and Hop Limit masked (the variant fields
//! of IBA Vol. 1 §7.8.1, at the bytes IPv6 has them), the BTH's `resv8a`
//! masked; there is no UDP header.
use rocescope_common::proto::{ib, ip, udp};
use rocescope_common::wire::field;

/// Longest IP header we mask in place (IPv4 with options: 60; IPv6: 40).
const MAX_IP_HEADER: usize = 60;

/// The ICRC of one RoCEv2 IP packet.
///
/// `packet` runs from the first byte of the IP header to the end of the UDP
/// datagram, ICRC included (its last 4 bytes are not covered). Returns `None`
/// when the bytes are too short to hold IP + UDP + BTH + ICRC or the IP
/// version is neither 4 nor 6. Allocates nothing.
pub fn compute(packet: &[u8]) -> Option<u32> {
    let version = packet.first()? >> 4;
    let ip_len = match version {
        4 => usize::from(packet[0] & 0x0F) * 4,
        6 => ip::IPV6_HEADER_LEN,
        _ => return None,
    };
    if ip_len < ip::IPV4_MIN_HEADER_LEN
        || packet.len() < ip_len + udp::HEADER_LEN + ib::BTH_LEN + ib::ICRC_LEN
    {
        return None;
    }
    let covered = &packet[..packet.len() - ib::ICRC_LEN];

    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&[0xFF; 8]);

    let mut header = [0u8; MAX_IP_HEADER];
    let header = &mut header[..ip_len];
    header.copy_from_slice(&covered[..ip_len]);
    if version == 4 {
        header[1] = 0xFF; // TOS
        header[8] = 0xFF; // TTL
        header[10] = 0xFF; // header checksum
        header[11] = 0xFF;
    } else {
        mask_tclass_flow_hop(header);
    }
    hasher.update(header);

    let mut udp_bth = [0u8; udp::HEADER_LEN + ib::BTH_LEN];
    udp_bth.copy_from_slice(&covered[ip_len..ip_len + udp::HEADER_LEN + ib::BTH_LEN]);
    udp_bth[field::udp::CHECKSUM] = 0xFF;
    udp_bth[field::udp::CHECKSUM + 1] = 0xFF;
    udp_bth[udp::HEADER_LEN + field::bth::FECN_BECN] = 0xFF; // BTH resv8a
    hasher.update(&udp_bth);

    hasher.update(&covered[ip_len + udp::HEADER_LEN + ib::BTH_LEN..]);
    Some(hasher.finalize())
}

/// Traffic class, flow label and hop limit of an IPv6 header or a GRH
/// (the same bytes in both) set to ones.
fn mask_tclass_flow_hop(header: &mut [u8]) {
    header[field::ipv6::VER_TC_FLOW] |= 0x0F; // traffic class, high nibble
    header[1] = 0xFF; // traffic class low nibble, flow label
    header[2] = 0xFF;
    header[3] = 0xFF;
    header[field::ipv6::HOP_LIMIT] = 0xFF;
}

/// The ICRC of one RoCEv1 packet: `packet` runs from the first byte of the
/// GRH to the end of the ICRC (its last 4 bytes, not covered). `None` when
/// it is too short for GRH + BTH + ICRC. Allocates nothing.
pub fn compute_grh(packet: &[u8]) -> Option<u32> {
    if packet.len() < ib::GRH_LEN + ib::BTH_LEN + ib::ICRC_LEN {
        return None;
    }
    let covered = &packet[..packet.len() - ib::ICRC_LEN];
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&[0xFF; 8]);
    let mut grh_bth = [0u8; ib::GRH_LEN + ib::BTH_LEN];
    grh_bth.copy_from_slice(&covered[..ib::GRH_LEN + ib::BTH_LEN]);
    mask_tclass_flow_hop(&mut grh_bth);
    grh_bth[ib::GRH_LEN + field::bth::FECN_BECN] = 0xFF; // BTH resv8a
    hasher.update(&grh_bth);
    hasher.update(&covered[ib::GRH_LEN + ib::BTH_LEN..]);
    Some(hasher.finalize())
}

/// The ICRC carried in the last four bytes of `packet` (as [`compute`] takes it).
pub fn carried(packet: &[u8]) -> Option<u32> {
    let tail = packet.len().checked_sub(ib::ICRC_LEN)?;
    let bytes: [u8; 4] = packet[tail..].try_into().ok()?;
    Some(u32::from_le_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testdata::CONNECTX4LX_CNP_IP as CX4_CNP_IP;

    #[test]
    fn hardware_cnp_icrc_verifies() {
        assert_eq!(carried(&CX4_CNP_IP), Some(0x2a00_fd82));
        assert_eq!(compute(&CX4_CNP_IP), Some(0x2a00_fd82));
    }

    #[test]
    fn masked_fields_do_not_change_the_icrc() {
        let mut p = CX4_CNP_IP;
        p[1] = 0x03; // ECN CE set by a switch
        p[8] = 0x01; // TTL decremented
        p[10] = 0x12; // checksum rewritten
        p[26] = 0xAB; // UDP checksum
        p[32] = 0x55; // BTH resv8a
        assert_eq!(compute(&p), Some(0x2a00_fd82));
        p[36] ^= 1; // dest QP is covered
        assert_ne!(compute(&p), Some(0x2a00_fd82));
    }

    #[test]
    fn short_or_foreign_input_is_refused() {
        assert_eq!(compute(&[]), None);
        assert_eq!(compute(&CX4_CNP_IP[..40]), None);
        let mut p = CX4_CNP_IP;
        p[0] = 0x55;
        assert_eq!(compute(&p), None);
        p[0] = 0x44; // IHL 4 words: below the minimum
        assert_eq!(compute(&p), None);
    }
}
