//! The RoCE packet as its sender built it, from one that switch telemetry
//! was inserted into: the ICRC is judged on that (docs/inputs.md, "Switch
//! telemetry"). INT-MD's sink restores the packet so (INT spec v2.1
//! §5.7.2: it strips the INT headers and puts the original destination
//! port back); IFA's termination node likewise removes its header and
//! metadata and puts the original protocol back. The ICRC covers the IP
//! and UDP lengths, the IP protocol and the UDP destination port, so each
//! is restored; DSCP, which INT may use as its mark, is masked anyway.
use rocescope_common::proto::{ip, udp};
use rocescope_common::wire::field;
use rocescope_common::wire::telemetry::{Found, Source};
use rocescope_common::wire::{Span, ifa};

/// `packet` (from the IP header at `ip_at` in the frame to the end of the
/// ICRC) without the telemetry `found` describes, its lengths, protocol
/// and port as before the insertion; `None` when the spans do not lie in
/// it. Allocates the packet's length, never more.
pub fn without_telemetry(packet: &[u8], ip_at: usize, found: &Found) -> Option<Vec<u8>> {
    let rel = |s: Span| -> Option<(usize, usize)> {
        let at = s.at.checked_sub(ip_at)?;
        let end = s.end.checked_sub(ip_at)?;
        (at <= end && end <= packet.len()).then_some((at, end))
    };
    let (t_at, t_end) = rel(found.span)?;
    let udp_at = found.udp_at.checked_sub(ip_at)?;
    let ifa_header = match found.source {
        Source::Ifa => Some(rel(found.ifa_header)?),
        Source::IntMd => None,
        Source::Report => return None,
    };
    let version = packet.first()? >> 4;
    let removed = (t_end - t_at) + ifa_header.map_or(0, |(a, e)| e - a);
    let udp_len_at = udp_at + field::udp::LENGTH;
    let udp_len = usize::from(u16::from_be_bytes([
        *packet.get(udp_len_at)?,
        *packet.get(udp_len_at + 1)?,
    ]));
    let ip_payload = packet.len().checked_sub(match version {
        4 => usize::from(packet[0] & 0x0F) * 4,
        _ => ip::IPV6_HEADER_LEN,
    })?;

    // The bytes around what was inserted, in order.
    let pieces = match ifa_header {
        Some((ha, he)) => [(0, ha), (he, t_at), (t_end, packet.len())],
        None => [(0, t_at), (t_end, packet.len()), (0, 0)],
    };
    let mut out = Vec::with_capacity(packet.len());
    for (a, e) in pieces {
        out.extend_from_slice(packet.get(a..e)?);
    }
    // The UDP header moved forward by the IFA header's length.
    let udp_at = udp_at - ifa_header.map_or(0, |(a, e)| e - a);
    let set16 = |out: &mut Vec<u8>, at: usize, v: u16| -> Option<()> {
        out.get_mut(at..at + 2)?.copy_from_slice(&v.to_be_bytes());
        Some(())
    };
    match version {
        4 => {
            let total =
                u16::from_be_bytes([out[field::ipv4::LENGTH], out[field::ipv4::LENGTH + 1]]);
            set16(
                &mut out,
                field::ipv4::LENGTH,
                total.checked_sub(u16::try_from(removed).ok()?)?,
            )?;
            if ifa_header.is_some() {
                out[field::ipv4::PROTOCOL] = ip::PROTO_UDP;
            }
        }
        6 => {
            let len = u16::from_be_bytes([
                out[field::ipv6::PAYLOAD_LEN],
                out[field::ipv6::PAYLOAD_LEN + 1],
            ]);
            set16(
                &mut out,
                field::ipv6::PAYLOAD_LEN,
                len.checked_sub(u16::try_from(removed).ok()?)?,
            )?;
            if ifa_header.is_some() {
                out[field::ipv6::NXT_HDR] = ip::PROTO_UDP;
            }
        }
        _ => return None,
    }
    // INT sits in the UDP payload, so the UDP length grew by it. Behind
    // IFA it did when it reaches the end of the IP packet (metadata
    // included); otherwise it was left as the sender set it.
    let inserted = t_end - t_at;
    let udp_grew = match found.source {
        Source::IntMd => true,
        _ => udp_len + ifa::HEADER_LEN == ip_payload,
    };
    if udp_grew {
        set16(
            &mut out,
            udp_at + field::udp::LENGTH,
            u16::try_from(udp_len.checked_sub(inserted)?).ok()?,
        )?;
    }
    if let Some(port) = found.original_port {
        set16(&mut out, udp_at + field::udp::DST_PORT, port)?;
    }
    debug_assert!(out.len() >= udp_at + udp::HEADER_LEN);
    Some(out)
}
