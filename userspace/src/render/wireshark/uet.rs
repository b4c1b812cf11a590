//! Wireshark hand-off for UET (docs/wireshark.md, "UET"): display filters
//! that show a PDC's frames, or those of a PSN range of it, in Wireshark's
//! own `uet.*` fields, and the Decode As a run's ports need.
//!
//! The fields are those of Wireshark master's UET dissector
//! (`epan/dissectors/packet-uet.c`, in the 4.7 development line that
//! becomes 5.0): [`FIELDS`] lists every one emitted here, and a test checks
//! each against the dissector's field list kept in
//! `tests/data/wireshark-uet-fields.txt` (with its provenance). Wireshark
//! 4.6 and older (Debian's tshark 4.0) have no UET dissector: there these
//! filters match nothing and `tshark` refuses them as unknown fields.
//!
//! A PDC at a tap is two directions ([`PdcKey`]): its frames from A to B
//! carry the sending end's PDC id (`uet.pds.spdcid`), and every frame back
//! from B to A carries it as the destination PDC id (`uet.pds.dpdcid`;
//! only a SYN request lacks one, and a SYN goes forward). So a PDC's
//! filter names the addresses and one PDC id, the way its frames are keyed
//! by `transport::uet::PdcKey`, whatever id the other end chose.
use std::collections::HashSet;
use std::fmt::Write as _;

use rocescope_common::PacketRecord;
use rocescope_common::wire::uet::uet_present;
use rocescope_common::wire::{Recognition, TransportId};

use super::{ip_text, or_clauses};
use crate::analyze::{FlowRow, Handoff, IfaceOrigin};
use crate::transport::uet::{Carrier, PdcKey};

/// Every `uet.*` field the filters here use (the sending and receiving PDC
/// ids; a request's or CONTROL's PSN, an ACK's cumulative and triggering
/// PSNs, a NACK's PSN).
pub const FIELDS: [&str; 6] = [SPDCID, DPDCID, PSN, CACK_PSN, ACK_PSN, NACK_PSN];
const SPDCID: &str = "uet.pds.spdcid";
const DPDCID: &str = "uet.pds.dpdcid";
const PSN: &str = "uet.pds.psn";
const CACK_PSN: &str = "uet.pds.cack_psn";
const ACK_PSN: &str = "uet.pds.ack_psn";
const NACK_PSN: &str = "uet.pds.nack.psn";

/// The dissectors Decode As names: UET after UDP, and after IP in the
/// native mode (the entropy header first).
pub const DISSECTORS: [&str; 2] = [UDP_DISSECTOR, NATIVE_DISSECTOR];
const UDP_DISSECTOR: &str = "uet";
const NATIVE_DISSECTOR: &str = "uet.entropy";

/// Shows PDC `key`'s frames both ways: A to B from its PDC id, and B to A
/// to it (ACKs, NACKs, responses).
pub fn pdc_filter(key: &PdcKey, origin: IfaceOrigin) -> String {
    pdc_clause(key, origin, None)
}

/// Shows the frames of PDC `key` about PSNs `first` to `last` (inclusive;
/// `first > last` is a range that wraps past 2³² − 1): its requests (and CONTROL
/// packets) with such a PSN, and the ACKs and NACKs back whose cumulative,
/// triggering or NACKed PSN is one. An ACK that covers them only by its
/// SACK bitmap is not shown (no field holds a bitmap's PSNs).
pub fn psn_range_filter(key: &PdcKey, origin: IfaceOrigin, first: u32, last: u32) -> String {
    pdc_clause(key, origin, Some((first, last)))
}

/// The `tshark -d` mappings (Wireshark: Analyze → Decode As) UET needs in
/// a run recognising it by `reg`: its UDP port (4793, Wireshark's own
/// default, unless `--udp-port uet=` moved it) and, with `--ip-proto
/// uet=N`, the native mode's protocol number.
pub fn decode_as(reg: &Recognition) -> Vec<String> {
    let port = reg.udp_port(TransportId::Uet);
    let protocol = reg.ip_protocol(TransportId::Uet);
    let udp = (port != 0).then_some(Carrier::Udp(port));
    let native = (protocol != 0).then_some(Carrier::Ip(protocol));
    udp.into_iter()
        .chain(native)
        .map(carrier_decode_as)
        .collect()
}

/// The mapping frames that came as `carrier` need: UDP to its port, or
/// the native mode's protocol number (docs/tables.md, `decode_as`).
pub fn carrier_decode_as(carrier: Carrier) -> String {
    match carrier {
        Carrier::Udp(port) => format!("udp.port=={port},{UDP_DISSECTOR}"),
        Carrier::Ip(protocol) => format!("ip.proto=={protocol},{NATIVE_DISSECTOR}"),
    }
}

/// The mapping Wireshark (4.7+) makes by itself: UET on UDP port 4793.
pub fn default_decode_as() -> String {
    carrier_decode_as(Carrier::default())
}

/// A finding's hand-off over UET PDCs: their filters ORed (one clause
/// per PDC, at most [`super::MAX_FILTER_CHARS`]; the PDCs left out are
/// counted in `flows_left_out`), and the Decode As the PDCs kept need
/// (each as its frames came, [`Carrier`]). The UET findings call this
/// with the PDCs their evidence names.
pub fn pdcs_handoff(pdcs: &[(PdcKey, IfaceOrigin, Carrier)]) -> Handoff {
    let clauses: Vec<(String, Carrier)> = pdcs
        .iter()
        .map(|(key, origin, carrier)| (pdc_filter(key, *origin), *carrier))
        .collect();
    let (display_filter, kept) = or_clauses(&clauses);
    let flows_left_out = kept.iter().filter(|k| !**k).count();
    let mut decode_as: Vec<String> = clauses
        .iter()
        .zip(&kept)
        .filter(|(_, kept)| **kept)
        .map(|((_, carrier), _)| carrier_decode_as(*carrier))
        .collect();
    decode_as.sort();
    decode_as.dedup();
    Handoff {
        decode_as,
        display_filter,
        flows_left_out,
    }
}

fn pdc_clause(key: &PdcKey, origin: IfaceOrigin, psns: Option<(u32, u32)>) -> String {
    let ([src_field, dst_field], a, b) = ip_text(key.src_ip, key.dst_ip);
    let id = key.spdcid;
    let mut forward = format!("{src_field}=={a} && {dst_field}=={b} && {SPDCID}=={id}");
    let mut back = format!("{src_field}=={b} && {dst_field}=={a} && {DPDCID}=={id}");
    if let Some(r) = psns {
        let _ = write!(forward, " && {}", psn_in(PSN, &r));
        let _ = write!(
            back,
            " && ({} || {} || {})",
            psn_in(CACK_PSN, &r),
            psn_in(ACK_PSN, &r),
            psn_in(NACK_PSN, &r)
        );
    }
    let both = format!("({forward}) || ({back})");
    if origin.shared_file {
        format!("frame.interface_id=={} && ({both})", origin.local)
    } else {
        both
    }
}

/// `field` within `r` (inclusive; wrapping when `r.0 > r.1`).
fn psn_in(field: &str, r: &(u32, u32)) -> String {
    let (lo, hi) = *r;
    if lo == hi {
        format!("{field}=={lo}")
    } else if lo < hi {
        format!("({field}>={lo} && {field}<={hi})")
    } else {
        format!("({field}>={lo} || {field}<={hi})")
    }
}

/// The PDC direction a UET flow row is (`None` for any other row).
fn row_key(r: &FlowRow) -> Option<PdcKey> {
    let u = r.transport.uet.as_ref()?;
    Some(PdcKey {
        iface: r.iface,
        src_ip: r.src_ip,
        dst_ip: r.dst_ip,
        spdcid: u.spdcid,
    })
}

/// A UET PDC direction's row: its filter (`uet.*`) and Decode As, as its
/// frames came.
pub(super) fn annotate_row(r: &mut FlowRow, origin: IfaceOrigin) {
    if let (Some(key), Some(u)) = (row_key(r), r.transport.uet.as_ref()) {
        r.decode_as = carrier_decode_as(u.carrier);
        r.display_filter = pdc_filter(&key, origin);
    }
}

/// A finding's hand-off over UET PDC directions' rows ([`pdcs_handoff`]).
pub(super) fn rows_handoff(rows: &[&FlowRow], origin: impl Fn(u16) -> IfaceOrigin) -> Handoff {
    let pdcs: Vec<_> = rows
        .iter()
        .filter_map(|r| {
            let carrier = r.transport.uet.as_ref()?.carrier;
            Some((row_key(r)?, origin(r.iface), carrier))
        })
        .collect();
    pdcs_handoff(&pdcs)
}

/// A UET PDC as `extract --uet-pdc` names it: the frames from `src_ip` to
/// `dst_ip` of PDC id `spdcid` (the sending end's), and those back to it
/// (docs/wireshark.md, "UET").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UetPdc {
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub spdcid: u16,
}

impl UetPdc {
    /// Parses `SRC,DST,SPDCID` (IPv4 or IPv6 addresses; the PDC id in
    /// decimal or 0x-hex, as packets.parquet's `uet_spdcid` or Wireshark's
    /// `uet.pds.spdcid` shows it).
    pub fn parse(s: &str) -> std::result::Result<UetPdc, String> {
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        let [src, dst, id] = parts[..] else {
            return Err(format!(
                "expected SRC,DST,SPDCID (e.g. 10.0.0.1,10.0.0.2,13398), got {s:?}"
            ));
        };
        let addr = |a: &str| -> std::result::Result<[u8; 16], String> {
            let ip: std::net::IpAddr = a
                .parse()
                .map_err(|_| format!("{a:?} is not an IPv4 or IPv6 address"))?;
            Ok(match ip {
                std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
                std::net::IpAddr::V6(v6) => v6.octets(),
            })
        };
        let spdcid = match id.strip_prefix("0x") {
            Some(hex) => u16::from_str_radix(hex, 16),
            None => id.parse::<u16>(),
        }
        .map_err(|_| format!("{id:?} is not a PDC id (0-65535)"))?;
        Ok(UetPdc {
            src_ip: addr(src)?,
            dst_ip: addr(dst)?,
            spdcid,
        })
    }

    /// Its key as the UET trackers name one direction (the tap left 0:
    /// the filter names none).
    fn key(&self) -> PdcKey {
        PdcKey {
            iface: 0,
            src_ip: self.src_ip,
            dst_ip: self.dst_ip,
            spdcid: self.spdcid,
        }
    }

    /// As `extract` says what it took out: `UET PDC 5 from 10.0.0.1 to
    /// 10.0.0.2`.
    pub(super) fn words(&self) -> String {
        format!(
            "UET PDC {} from {} to {}",
            self.spdcid,
            crate::addr::Ip(self.src_ip),
            crate::addr::Ip(self.dst_ip)
        )
    }

    /// Its filter, and the Decode As where this run recognised UET.
    pub(super) fn handoff(&self, reg: &Recognition) -> Handoff {
        Handoff {
            display_filter: pdc_filter(&self.key(), IfaceOrigin::default()),
            decode_as: decode_as(reg),
            flows_left_out: 0,
        }
    }

    /// `extract`'s error when no frame of it was found (`out` empty).
    pub(super) fn none_found(out: &std::path::Path) -> String {
        format!(
            "--uet-pdc: no UET frame of that PDC in these captures (their PDCs: packets.parquet's src_ip, dst_ip and uet_spdcid where transport is uet); {} is empty",
            out.display()
        )
    }
}

/// The UET frames an `extract` selection wants: PDC directions' frames
/// forward, and those back to their PDC id (its `dpdcid`), at their tap —
/// or at every tap (`any_tap`, `--uet-pdc`).
#[derive(Debug, Default)]
pub(super) struct PdcFrames {
    keys: HashSet<PdcKey>,
    any_tap: bool,
    /// `(src_ip, dst_ip, spdcid)` of `keys`: looked up before a record's
    /// interface is known.
    pdcs: HashSet<([u8; 16], [u8; 16], u16)>,
}

impl PdcFrames {
    /// Wants `pdc`'s frames at every tap.
    pub(super) fn any_tap(&mut self, pdc: &UetPdc) {
        self.keys.insert(pdc.key());
        self.any_tap = true;
    }

    /// Wants the frames of PDC direction row `r` (at its tap).
    pub(super) fn row(&mut self, r: &FlowRow) {
        if let Some(key) = row_key(r) {
            self.keys.insert(key);
        }
    }

    /// The keys' lookups made.
    pub(super) fn ready(&mut self) {
        self.pdcs = self
            .keys
            .iter()
            .map(|k| (k.src_ip, k.dst_ip, k.spdcid))
            .collect();
    }

    /// Whether UET record `rec` (at tap `iface`, when known) is of a
    /// wanted PDC direction, either way (as the filter of [`pdc_filter`]
    /// shows it).
    pub(super) fn wants(&self, rec: &PacketRecord, iface: Option<u16>) -> bool {
        let u = rec.uet();
        let has = |bit: u16| u.present & bit != 0;
        let wanted = |src_ip, dst_ip, spdcid| match iface {
            Some(iface) if !self.any_tap => self.keys.contains(&PdcKey {
                iface,
                src_ip,
                dst_ip,
                spdcid,
            }),
            _ => self.pdcs.contains(&(src_ip, dst_ip, spdcid)),
        };
        (has(uet_present::PDC) && wanted(rec.src_ip, rec.dst_ip, u.spdcid))
            || (has(uet_present::DPDCID) && wanted(rec.dst_ip, rec.src_ip, u.dpdcid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(a: [u8; 4]) -> [u8; 16] {
        std::net::Ipv4Addr::from(a).to_ipv6_mapped().octets()
    }

    fn key() -> PdcKey {
        PdcKey {
            iface: 0,
            src_ip: v4([10, 0, 0, 1]),
            dst_ip: v4([10, 0, 0, 2]),
            spdcid: 0x3456,
        }
    }

    #[test]
    fn a_pdcs_filter_names_its_id_both_ways() {
        assert_eq!(
            pdc_filter(&key(), IfaceOrigin::default()),
            "(ip.src==10.0.0.1 && ip.dst==10.0.0.2 && uet.pds.spdcid==13398) || \
             (ip.src==10.0.0.2 && ip.dst==10.0.0.1 && uet.pds.dpdcid==13398)"
        );
        let shared = IfaceOrigin {
            local: 2,
            shared_file: true,
        };
        let six = PdcKey {
            src_ip: "fd00::1".parse::<std::net::Ipv6Addr>().unwrap().octets(),
            ..key()
        };
        let f = pdc_filter(&six, shared);
        assert!(
            f.starts_with("frame.interface_id==2 && ((ipv6.src==fd00::1 && ipv6.dst=="),
            "{f}"
        );
    }

    #[test]
    fn a_psn_range_names_requests_acks_and_nacks() {
        let f = psn_range_filter(&key(), IfaceOrigin::default(), 100, 103);
        assert_eq!(
            f,
            "(ip.src==10.0.0.1 && ip.dst==10.0.0.2 && uet.pds.spdcid==13398 && \
             (uet.pds.psn>=100 && uet.pds.psn<=103)) || \
             (ip.src==10.0.0.2 && ip.dst==10.0.0.1 && uet.pds.dpdcid==13398 && \
             ((uet.pds.cack_psn>=100 && uet.pds.cack_psn<=103) || \
             (uet.pds.ack_psn>=100 && uet.pds.ack_psn<=103) || \
             (uet.pds.nack.psn>=100 && uet.pds.nack.psn<=103)))"
        );
        assert!(
            psn_range_filter(&key(), IfaceOrigin::default(), 7, 7).contains("&& uet.pds.psn==7)")
        );
        // Across the wrap.
        let f = psn_range_filter(&key(), IfaceOrigin::default(), u32::MAX - 1, 1);
        assert!(
            f.contains("(uet.pds.psn>=4294967294 || uet.pds.psn<=1)"),
            "{f}"
        );
    }

    #[test]
    fn decode_as_follows_the_runs_recognition() {
        use crate::transport::{parse_ip_protocol, parse_udp_port, recognition};
        assert_eq!(decode_as(&Recognition::DEFAULT), ["udp.port==4793,uet"]);
        let moved = recognition(
            &[parse_udp_port("uet=49150").unwrap()],
            &[parse_ip_protocol("uet=253").unwrap()],
        )
        .unwrap();
        assert_eq!(
            decode_as(&moved),
            ["udp.port==49150,uet", "ip.proto==253,uet.entropy"]
        );
        // A PDC direction's: as its frames came.
        assert_eq!(
            carrier_decode_as(Carrier::Udp(49150)),
            "udp.port==49150,uet"
        );
        assert_eq!(carrier_decode_as(Carrier::default()), "udp.port==4793,uet");
    }

    #[test]
    fn several_pdcs_or_and_stay_under_the_limit() {
        let none = pdcs_handoff(&[]);
        assert_eq!(none, Handoff::default());
        let pdcs: Vec<(PdcKey, IfaceOrigin, Carrier)> = (0..200)
            .map(|i| {
                let key = PdcKey { spdcid: i, ..key() };
                (key, IfaceOrigin::default(), Carrier::default())
            })
            .collect();
        let h = pdcs_handoff(&pdcs[..2]);
        assert!(
            h.display_filter.starts_with("((ip.src"),
            "{}",
            h.display_filter
        );
        assert_eq!((h.flows_left_out, h.decode_as.len()), (0, 1));
        let h = pdcs_handoff(&pdcs);
        assert!(h.display_filter.len() <= super::super::MAX_FILTER_CHARS);
        assert!(h.flows_left_out > 0 && h.flows_left_out < 200);
    }

    /// Every `uet.*` name emitted here (the filters, [`FIELDS`]) and every
    /// dissector Decode As names is one Wireshark master's UET dissector
    /// registers: its field list is kept, with its provenance, in
    /// `tests/data/wireshark-uet-fields.txt` (no tshark here has UET).
    #[test]
    fn every_uet_name_emitted_is_the_dissectors() {
        let list = include_str!("../../../../tests/data/wireshark-uet-fields.txt");
        let section = |name: &str| -> std::collections::BTreeSet<&str> {
            list.split(&format!("[{name}]"))
                .nth(1)
                .unwrap_or_else(|| panic!("no [{name}] section"))
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with('['))
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .collect()
        };
        let fields = section("fields");
        let dissectors = section("dissectors");
        assert!(fields.len() > 150, "{}", fields.len());
        let reg = crate::transport::recognition(
            &[],
            &[crate::transport::parse_ip_protocol("uet=253").unwrap()],
        )
        .unwrap();
        let native = Carrier::Ip(253);
        let handoff = pdcs_handoff(&[(key(), IfaceOrigin::default(), native)]);
        assert_eq!(handoff.decode_as, ["ip.proto==253,uet.entropy"]);
        let mut emitted = handoff.display_filter;
        emitted.push(' ');
        emitted.push_str(&psn_range_filter(&key(), IfaceOrigin::default(), 5, 9));
        let mut names: Vec<&str> = FIELDS.to_vec();
        names.extend(
            emitted
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
                .filter(|w| w.starts_with("uet.")),
        );
        for name in names {
            assert!(
                fields.contains(name),
                "{name} is not a field of packet-uet.c"
            );
        }
        for d in DISSECTORS {
            assert!(dissectors.contains(d), "{d}");
        }
        for d in decode_as(&reg) {
            let dissector = d.rsplit(',').next().unwrap();
            assert!(dissectors.contains(dissector), "{d}");
        }
    }
}
