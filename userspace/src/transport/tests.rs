//! `--udp-port` and the registry as the userspace decoder uses them.
use rocescope_common::Kind;
use rocescope_common::wire::{Foreign, Recognition, Stop, TransportId};

use super::*;
use crate::decode::decode_walk_with;
use crate::synth::frame::{RoceFrame, WireFrame};

/// A whole RoCEv2 frame (IPv4, default headers) to UDP port `dport`.
fn frame_to(dport: u16) -> Vec<u8> {
    let f = RoceFrame {
        udp_dport: dport,
        ..RoceFrame::default()
    };
    let mut out = Vec::new();
    f.append(&mut out);
    out
}

#[test]
fn parses_transport_and_port() {
    assert_eq!(
        parse_udp_port("roce=4792"),
        Ok(UdpPort {
            transport: TransportId::Roce,
            port: 4792
        })
    );
    assert_eq!(parse_udp_port("RoCE = 4792").map(|p| p.port), Ok(4792));
    assert!(
        parse_udp_port("roce")
            .unwrap_err()
            .contains("TRANSPORT=PORT")
    );
    assert!(
        parse_udp_port("roce=0")
            .unwrap_err()
            .contains("not a UDP port")
    );
    assert!(parse_udp_port("roce=65536").is_err());
    // UET's walk is wired in: its port moves like RoCE's.
    assert_eq!(
        parse_udp_port("uet=49150"),
        Ok(UdpPort {
            transport: TransportId::Uet,
            port: 49150
        })
    );
    assert!(
        parse_udp_port("iwarp=4793")
            .unwrap_err()
            .contains("known: roce, uet")
    );
}

#[test]
fn the_default_recognition_is_the_registry_port() {
    assert_eq!(recognition(&[], &[]), Ok(Recognition::DEFAULT));
    assert_eq!(Recognition::DEFAULT.udp_port(TransportId::Roce), 4791);
    assert_eq!(identity(&Recognition::DEFAULT), "");
    let moved = recognition(&[parse_udp_port("roce=4792").unwrap()], &[]).unwrap();
    assert_eq!(identity(&moved), "udp_port.roce=4792\n");
}

/// A configured port replaces the default: RoCEv2 on 4792 decodes, and a
/// frame to 4791 is then foreign UDP (docs/inputs.md, "Transports and
/// their ports").
#[test]
fn a_configured_port_replaces_the_default() {
    let moved = recognition(&[parse_udp_port("roce=4792").unwrap()], &[]).unwrap();
    let mut rec = Default::default();

    let on_4792 = frame_to(4792);
    let w = decode_walk_with(&mut rec, &moved, 1, &on_4792, on_4792.len() as u32);
    assert_eq!((rec.kind(), w.stop), (Kind::Roce, None));
    assert_eq!(rec.icrc_ok(), Some(true));
    assert_eq!(rec.roce_version(), Some(2));

    let on_4791 = frame_to(4791);
    let w = decode_walk_with(&mut rec, &moved, 1, &on_4791, on_4791.len() as u32);
    assert_eq!(rec.kind(), Kind::Other);
    assert_eq!(w.stop, Some(Stop::Foreign(Foreign::UdpPort)));

    // With the defaults, the other way round.
    let w = crate::decode::decode_walk(&mut rec, 1, &on_4792, on_4792.len() as u32);
    assert_eq!(w.stop, Some(Stop::Foreign(Foreign::UdpPort)));
    let w = crate::decode::decode_walk(&mut rec, 1, &on_4791, on_4791.len() as u32);
    assert_eq!((rec.kind(), w.stop), (Kind::Roce, None));
}

/// The decode tally names the ports the run recognised RoCE on.
#[test]
fn the_tally_names_the_configured_port() {
    use crate::decode::{DecodeTally, Undecoded};
    let moved = recognition(&[parse_udp_port("roce=4792").unwrap()], &[]).unwrap();
    let mut t = DecodeTally::recognising(moved);
    t.not_decoded(Undecoded::Stop(Stop::Foreign(Foreign::UdpPort)));
    assert_eq!(
        t.note(1).as_deref(),
        Some("1 of 1 frames read were not decoded: 1 UDP to another port than 4792 or 4793")
    );
    // Every transport the walk decodes over UDP is named: RoCE's and UET's.
    let mut t = DecodeTally::default();
    t.not_decoded(Undecoded::Stop(Stop::Foreign(Foreign::UdpPort)));
    assert_eq!(
        t.note(1).as_deref(),
        Some("1 of 1 frames read were not decoded: 1 UDP to another port than 4791 or 4793")
    );
}

/// `--ip-proto uet=N` (docs/inputs.md, "Transports and their ports"): a
/// protocol number for a transport with a native IP mode, never one that
/// already means something, never two transports on one.
#[test]
fn parses_a_native_ip_protocol_and_refuses_conflicts() {
    assert_eq!(
        parse_ip_protocol("uet=253"),
        Ok(IpProtocol {
            transport: TransportId::Uet,
            protocol: 253
        })
    );
    assert_eq!(parse_ip_protocol(" UET = 150").map(|p| p.protocol), Ok(150));
    for (bad, says) in [
        ("uet", "TRANSPORT=PROTOCOL"),
        ("uet=0", "not an IP protocol number"),
        ("uet=256", "not an IP protocol number"),
        ("uet=x", "not an IP protocol number"),
        ("uet=6", "TCP's"),
        ("uet=17", "UDP's"),
        ("uet=47", "GRE (ERSPAN)'s"),
        ("uet=44", "IPv6 fragment header's"),
        ("uet=0x11", "not an IP protocol number"),
        // RoCE has no native IP mode (its registry line).
        (
            "roce=253",
            "no transport with a native IP mode is called \"roce\" (known: uet)",
        ),
    ] {
        let err = parse_ip_protocol(bad).unwrap_err();
        assert!(err.contains(says), "{bad}: {err}");
    }

    let native = recognition(&[], &[parse_ip_protocol("uet=253").unwrap()]).unwrap();
    assert_eq!(native.ip_protocol(TransportId::Uet), 253);
    assert_eq!(native.by_ip_protocol(253), Some(TransportId::Uet));
    assert_eq!(Recognition::DEFAULT.by_ip_protocol(253), None);
    // It joins the run's identity as a UDP port does; defaults add nothing.
    assert_eq!(identity(&native), "ip_proto.uet=253\n");
    let both = recognition(
        &[parse_udp_port("uet=49150").unwrap()],
        &[parse_ip_protocol("uet=253").unwrap()],
    )
    .unwrap();
    assert_eq!(identity(&both), "udp_port.uet=49150\nip_proto.uet=253\n");
    // The last of two for one transport wins, as for `--udp-port`.
    let twice = [
        parse_ip_protocol("uet=253").unwrap(),
        parse_ip_protocol("uet=254").unwrap(),
    ];
    assert_eq!(
        recognition(&[], &twice)
            .unwrap()
            .ip_protocol(TransportId::Uet),
        254
    );
}

/// IFA on the protocol number UET's native mode was given is refused,
/// naming both options (IFA's default, 131, included).
#[test]
fn a_native_protocol_that_is_ifas_is_refused() {
    use rocescope_common::wire::telemetry::TelemetryMarks;
    let on_131 = recognition(&[], &[parse_ip_protocol("uet=131").unwrap()]).unwrap();
    let err = crate::telemetry::marks::apply(on_131, TelemetryMarks::DEFAULT).unwrap_err();
    assert!(
        err.contains(
            "IP protocol 131 is given to both uet (--ip-proto) and IFA (--ifa-proto, its default)"
        ),
        "{err}"
    );
    let none = TelemetryMarks {
        ifa_protocol: 0,
        ..TelemetryMarks::DEFAULT
    };
    assert!(crate::telemetry::marks::apply(on_131, none).is_ok());
}

/// The decode note for another IP protocol names the native modes set.
#[test]
fn the_tally_names_the_native_protocol() {
    use crate::decode::{DecodeTally, Undecoded};
    let native = recognition(&[], &[parse_ip_protocol("uet=253").unwrap()]).unwrap();
    let mut t = DecodeTally::recognising(native);
    t.not_decoded(Undecoded::Stop(Stop::Foreign(Foreign::IpProtocol)));
    assert_eq!(
        t.note(1).as_deref(),
        Some("1 of 1 frames read were not decoded: 1 IP but neither UDP nor GRE nor 253 (uet)")
    );
}
