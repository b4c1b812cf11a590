//! Wireshark hand-off: display filters that show a flow's or a finding's
//! frames (docs/wireshark.md); `crate::wireshark::extract` writes those
//! frames to a pcapng of their own, selected by the options here
//! ([`ExtractWhat`], [`Selection`]).
//!
//! The transports beside RoCE are listed here once (docs/build.md, "Adding
//! a transport", point 10), each with its module (`uet`): the arm choosing
//! its filter builder for a flow row and for a finding over its flows, its
//! Decode As, and its part of `extract` — its option, its selection
//! ([`TransportPick`]) and which of its frames a selection wants
//! ([`TransportWanted`]).
//!
//! A flow is `(iface, src_ip, dst_ip, dest_qp)` of RoCE frames with a BTH,
//! CNPs excepted (docs/analysis.md, "Flows"), so its filter is the IP pair,
//! `infiniband.bth.destqp` and "not a CNP" (opcode 0x81), plus the
//! interface when its capture file has more than one. Mirror copies match
//! too: they are the flow's frames, only left out of its counts, so a
//! flow's filter shows `packets + mirror_copies` frames.
//!
//! Wireshark hands UDP to RoCEv2 by port, trying the lower port of the pair
//! first: a frame from a source port below 4791 that another dissector owns
//! (69 is TFTP) is not decoded as InfiniBand, and `infiniband.*` fields
//! never match it, unless "Decode As" maps that port too. Each filter comes
//! with that hint.
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::Ipv6Addr;

use rocescope_common::wire::{Recognition, TransportId};
use rocescope_common::{Kind, PacketRecord, proto};

use crate::analyze::{Finding, FlowRow, Handoff, IfaceOrigin};

pub mod uet;

/// The RoCEv2 UDP port.
const ROCE_PORT: u16 = 4791;
/// BTH opcode of a CNP: not part of any flow.
const CNP_OPCODE: u8 = 0x81;
/// A finding's filter stops growing past this many characters (Wireshark
/// takes longer ones, but a filter is for reading and pasting): the flows
/// left out are counted in [`Handoff::flows_left_out`].
pub const MAX_FILTER_CHARS: usize = 4000;

/// Longest filter the terminal report prints whole.
const REPORT_FILTER_CHARS: usize = 240;

impl Handoff {
    /// The report's line for finding `id`: the filter when it is short
    /// (with the Decode As it needs beyond 4791's), else where to get it.
    pub fn report_line(&self, id: &str) -> Option<String> {
        if self.display_filter.is_empty() {
            return None;
        }
        if self.display_filter.len() > REPORT_FILTER_CHARS {
            return Some(format!(
                "Wireshark: a {}-character filter (report --json: display_filter), or its frames alone: rocescope extract CAPTURE… --finding {id} --out {id}.pcapng",
                self.display_filter.len()
            ));
        }
        // What Wireshark maps by itself: RoCEv2's port, UET's (4.7+).
        let defaults = [
            format!("udp.port=={ROCE_PORT},infiniband"),
            uet::default_decode_as(),
        ];
        let extra: Vec<String> = self
            .decode_as
            .iter()
            .filter(|d| !defaults.contains(d))
            .map(|d| format!("-d {d}"))
            .collect();
        let mut line = format!("Wireshark: {}", self.display_filter);
        if !extra.is_empty() {
            let _ = write!(line, " (Decode As, tshark {})", extra.join(" "));
        }
        if self.flows_left_out > 0 {
            let _ = write!(line, " ({} flows left out)", self.flows_left_out);
        }
        Some(line)
    }
}

/// A flow's filter.
pub fn flow_filter(row: &FlowRow, origin: IfaceOrigin) -> String {
    let mut s = String::new();
    push_flow_clause(&mut s, row, origin, &[row.dest_qp], false);
    s
}

/// The Decode As mapping a flow needs: its source port when Wireshark would
/// try it before 4791, else 4791 itself (harmless, and what a capture with
/// other port mappings needs).
pub fn flow_decode_as(row: &FlowRow) -> String {
    if row.roce_version == Some(1) {
        return format!(
            "ethertype==0x{:04x},infiniband",
            proto::ethernet::ETHERTYPE_ROCE
        );
    }
    let port = match row.udp_sport {
        Some(p) if p < ROCE_PORT => p,
        _ => ROCE_PORT,
    };
    format!("udp.port=={port},infiniband")
}

/// `ip.src==… && ip.dst==… && infiniband.bth.destqp…` for `qps` of `row`'s
/// IP pair on its interface.
/// `cnp`: the CNPs of that key instead of the flow's frames.
fn push_flow_clause(s: &mut String, row: &FlowRow, origin: IfaceOrigin, qps: &[u32], cnp: bool) {
    // Writing to a String cannot fail.
    if origin.shared_file {
        let _ = write!(s, "frame.interface_id=={} && ", origin.local);
    }
    let ([src_field, dst_field], src, dst) = addr_text(row);
    let _ = write!(s, "{src_field}=={src} && {dst_field}=={dst} && ");
    match qps {
        [qp] => {
            let _ = write!(s, "infiniband.bth.destqp=={qp}");
        }
        // Sets (`in {…}`) changed syntax between Wireshark 3 and 4: an OR
        // reads the same in both.
        _ => {
            s.push('(');
            for (i, qp) in qps.iter().enumerate() {
                if i > 0 {
                    s.push_str(" || ");
                }
                let _ = write!(s, "infiniband.bth.destqp=={qp}");
            }
            s.push(')');
        }
    }
    let op = if cnp { "==" } else { "!=" };
    let _ = write!(s, " && infiniband.bth.opcode{op}{CNP_OPCODE}");
}

/// The fields naming a flow's source and destination, and their values:
/// `ip.src`/`ip.dst` for IPv4-mapped addresses, `ipv6.*` for others; on
/// InfiniBand the LRH's LIDs, or (and on RoCEv1) the GRH's GIDs.
fn addr_text(row: &FlowRow) -> ([&'static str; 2], String, String) {
    use rocescope_common::proto::lrh::addr_lid;
    if let (Some(s), Some(d)) = (addr_lid(&row.src_ip), addr_lid(&row.dst_ip)) {
        return (
            ["infiniband.lrh.slid", "infiniband.lrh.dlid"],
            s.to_string(),
            d.to_string(),
        );
    }
    let (s, d) = (Ipv6Addr::from(row.src_ip), Ipv6Addr::from(row.dst_ip));
    // RoCEv1 and InfiniBand with a GRH: no IP header, the GRH's GIDs.
    if row.link == "ib" || row.roce_version == Some(1) {
        return (
            ["infiniband.grh.sgid", "infiniband.grh.dgid"],
            s.to_string(),
            d.to_string(),
        );
    }
    ip_text(row.src_ip, row.dst_ip)
}

/// The IP fields naming `src` and `dst`, and their values: `ip.src`/`ip.dst`
/// for IPv4-mapped addresses, `ipv6.*` for others.
fn ip_text(src: [u8; 16], dst: [u8; 16]) -> ([&'static str; 2], String, String) {
    let (s, d) = (Ipv6Addr::from(src), Ipv6Addr::from(dst));
    match (s.to_ipv4_mapped(), d.to_ipv4_mapped()) {
        (Some(s), Some(d)) => (["ip.src", "ip.dst"], s.to_string(), d.to_string()),
        _ => (["ipv6.src", "ipv6.dst"], s.to_string(), d.to_string()),
    }
}

/// `clauses` (each with the flows it covers) ORed, each parenthesised
/// when there are several, up to [`MAX_FILTER_CHARS`]: the filter, and
/// for each clause whether it was kept (a clause left out leaves its
/// flows out, [`Handoff::flows_left_out`]).
fn or_clauses<T>(clauses: &[(String, T)]) -> (String, Vec<bool>) {
    let mut filter = String::new();
    let mut kept_flags = Vec::with_capacity(clauses.len());
    let mut kept = 0;
    for (clause, _) in clauses {
        // 8: " || " and the parentheses around two clauses.
        if kept > 0 && filter.len() + clause.len() + 8 > MAX_FILTER_CHARS {
            kept_flags.push(false);
            continue;
        }
        kept += 1;
        kept_flags.push(true);
        match kept {
            1 => filter = clause.clone(),
            2 => filter = format!("({filter}) || ({clause})"),
            _ => {
                let _ = write!(filter, " || ({clause})");
            }
        }
    }
    (filter, kept_flags)
}

/// A finding's filter: the OR of its flows' (the QPs of one IP pair on one
/// interface merged into one clause), at most [`MAX_FILTER_CHARS`] long.
/// `cnp-without-ce` adds the CNPs its flows' senders got (all CNPs when it
/// names no flow: then none could be attributed), `link-pause` is the PAUSE
/// frames.
pub fn finding_handoff(
    finding: &Finding,
    rows: &[FlowRow],
    origin: impl Fn(u16) -> IfaceOrigin,
) -> Handoff {
    // The rows are in order of flow id (`Analysis::flows`); another
    // transport's flows are no QPs: their filters are their transport's.
    let (others, flows): (Vec<&FlowRow>, Vec<&FlowRow>) = finding
        .flows
        .iter()
        .filter_map(|&id| {
            let i = rows.binary_search_by_key(&id, |r| r.flow_id).ok()?;
            rows.get(i)
        })
        .partition(|r| r.transport.transport().is_some());
    if flows.is_empty() && !others.is_empty() {
        return transport_handoff(&others, origin);
    }
    // By (interface, source, destination).
    let mut groups: BTreeMap<_, Vec<&FlowRow>> = BTreeMap::new();
    for r in &flows {
        groups
            .entry((r.iface, r.src_ip, r.dst_ip))
            .or_default()
            .push(r);
    }
    // (clause, flows it covers, the Decode As mappings it needs)
    let mut clauses: Vec<(String, Vec<&FlowRow>)> = groups
        .values()
        .map(|group| {
            let qps: Vec<u32> = group.iter().map(|r| r.dest_qp).collect();
            let mut c = String::new();
            push_flow_clause(&mut c, group[0], origin(group[0].iface), &qps, false);
            (c, group.clone())
        })
        .collect();
    match finding.id {
        "cnp-without-ce" if flows.is_empty() => {
            clauses.push((format!("infiniband.bth.opcode=={CNP_OPCODE}"), Vec::new()));
        }
        "cnp-without-ce" => {
            for r in &flows {
                let Some(qp) = r.paired_qp else { continue };
                let reverse = FlowRow {
                    src_ip: r.dst_ip,
                    dst_ip: r.src_ip,
                    ..(*r).clone()
                };
                let mut c = String::new();
                push_flow_clause(&mut c, &reverse, origin(r.iface), &[qp], true);
                clauses.push((c, Vec::new()));
            }
        }
        "link-pause" => clauses.push(("macc.opcode==0x0001".into(), Vec::new())),
        _ => {}
    }
    let mut h = Handoff::default();
    let (filter, kept_flags) = or_clauses(&clauses);
    h.display_filter = filter;
    let kept = kept_flags.iter().filter(|k| **k).count();
    for ((_, covered), kept) in clauses.iter().zip(kept_flags) {
        if !kept {
            h.flows_left_out += covered.len();
            continue;
        }
        for r in covered {
            let d = flow_decode_as(r);
            if !h.decode_as.contains(&d) {
                h.decode_as.push(d);
            }
        }
    }
    if kept > 0 && h.decode_as.is_empty() {
        h.decode_as
            .push(format!("udp.port=={ROCE_PORT},infiniband"));
    }
    h.decode_as.sort();
    h
}

/// A flow row's display filter and Decode As (another transport's flow's
/// by its transport's builder: UET's as its frames came, docs/wireshark.md,
/// "UET").
pub(crate) fn annotate_row(r: &mut FlowRow, origin: IfaceOrigin) {
    // Another transport's frames are no QP's: its filters are its own.
    match r.transport.transport() {
        Some(TransportId::Uet) => uet::annotate_row(r, origin),
        Some(TransportId::Roce) | None => {
            r.display_filter = flow_filter(r, origin);
            r.decode_as = flow_decode_as(r);
        }
    }
}

/// A finding's hand-off over flows of the transports beside RoCE alone
/// (`rows`, none a QP's): by the first one's transport's builder.
fn transport_handoff(rows: &[&FlowRow], origin: impl Fn(u16) -> IfaceOrigin) -> Handoff {
    match rows.first().and_then(|r| r.transport.transport()) {
        Some(TransportId::Uet) => uet::rows_handoff(rows, origin),
        Some(TransportId::Roce) | None => Handoff::default(),
    }
}

/// The Decode As `extract` gives the frames of a flow of a transport beside
/// RoCE (`row`): where this run (`reg`) recognised its transport; `None` on
/// a QP's row, whose own it keeps.
pub(crate) fn transport_decode_as(row: &FlowRow, reg: &Recognition) -> Option<Vec<String>> {
    match row.transport.transport()? {
        TransportId::Uet => Some(uet::decode_as(reg)),
        TransportId::Roce => None,
    }
}

/// What `extract` takes out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// A `flow_id` as in flows.parquet.
    Flow(u32),
    /// A finding's `id` as in summary.json.
    Finding(String),
    /// A flow of a transport beside RoCE, by its own key.
    Transport(TransportPick),
}

/// `extract`: one finding or one flow; each transport beside RoCE adds its
/// own way to name one of its flows.
#[derive(clap::Args)]
#[group(required = true, multiple = false)]
pub(crate) struct ExtractWhat {
    /// A finding's id, as `report` and summary.json name it (e.g. ghost-retransmissions).
    #[arg(long, value_name = "ID")]
    pub(crate) finding: Option<String>,
    /// A flow_id, as in flows.parquet of the same captures.
    #[arg(long, value_name = "N")]
    pub(crate) flow: Option<u32>,
    /// A UET PDC, both ways, at every tap: SRC,DST,SPDCID (its frames from SRC to DST with that
    /// source PDC id, and those back to it), e.g. 10.0.0.1,10.0.0.2,13398.
    #[arg(long, value_name = "SRC,DST,SPDCID", value_parser = uet::UetPdc::parse)]
    pub(crate) uet_pdc: Option<uet::UetPdc>,
}

impl ExtractWhat {
    /// The one selection given (clap requires exactly one).
    pub(crate) fn selection(self) -> Selection {
        match (self.finding, self.uet_pdc, self.flow) {
            (Some(id), _, _) => Selection::Finding(id),
            (None, Some(pdc), _) => Selection::Transport(TransportPick::UetPdc(pdc)),
            (None, None, n) => Selection::Flow(n.unwrap_or_default()),
        }
    }
}

/// A flow of a transport beside RoCE as `extract` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportPick {
    /// A UET PDC, both ways, at every tap (`--uet-pdc`).
    UetPdc(uet::UetPdc),
}

impl TransportPick {
    /// What was taken out, as `extract` says it (`UET PDC 5 from 10.0.0.1
    /// to 10.0.0.2`).
    pub fn words(&self) -> String {
        match self {
            TransportPick::UetPdc(pdc) => pdc.words(),
        }
    }

    /// Its frames, at every tap.
    pub(crate) fn wanted(&self) -> TransportWanted {
        let mut w = TransportWanted::default();
        match self {
            TransportPick::UetPdc(pdc) => w.uet.any_tap(pdc),
        }
        w
    }

    /// Its filter, and the Decode As where this run (`reg`) recognised its
    /// transport.
    pub(crate) fn handoff(&self, reg: &Recognition) -> Handoff {
        match self {
            TransportPick::UetPdc(pdc) => pdc.handoff(reg),
        }
    }

    /// Why nothing was written when none of its frames is in the captures
    /// (`out` is left empty).
    pub(crate) fn none_found(&self, out: &std::path::Path) -> String {
        match self {
            TransportPick::UetPdc(_) => uet::UetPdc::none_found(out),
        }
    }
}

/// The frames of the transports beside RoCE that an `extract` selection
/// wants, each transport's by its own key.
#[derive(Debug, Default)]
pub(crate) struct TransportWanted {
    uet: uet::PdcFrames,
}

impl TransportWanted {
    /// Wants `r`'s frames when it is a flow of a transport beside RoCE
    /// (false: a QP's row).
    pub(crate) fn row(&mut self, r: &FlowRow) -> bool {
        match r.transport.transport() {
            Some(TransportId::Uet) => self.uet.row(r),
            Some(TransportId::Roce) | None => return false,
        }
        true
    }

    /// Ready to be asked (the keys' lookups made).
    pub(crate) fn ready(&mut self) {
        self.uet.ready();
    }

    /// Whether `rec` is wanted, at tap `iface` (`None`: before its
    /// interface is known, whether it can be).
    #[inline]
    pub(crate) fn wants(&self, rec: &PacketRecord, iface: Option<u16>) -> bool {
        match rec.kind() {
            Kind::Uet => self.uet.wants(rec, iface),
            Kind::Roce | Kind::Cnp | Kind::Pfc | Kind::Pause | Kind::Malformed | Kind::Other => {
                false
            }
        }
    }
}

/// Fills every flow's and finding's filter (called once the findings are
/// made; `origin` says where each interface comes from).
pub fn annotate(
    rows: &mut [FlowRow],
    findings: &mut [Finding],
    origin: impl Fn(u16) -> IfaceOrigin,
) {
    for r in rows.iter_mut() {
        annotate_row(r, origin(r.iface));
    }
    for f in findings.iter_mut() {
        f.wireshark = Some(finding_handoff(f, rows, &origin));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(a: [u8; 4]) -> [u8; 16] {
        std::net::Ipv4Addr::from(a).to_ipv6_mapped().octets()
    }

    fn row(id: u32, src: [u8; 16], dst: [u8; 16], qp: u32) -> FlowRow {
        FlowRow {
            flow_id: id,
            src_ip: src,
            dst_ip: dst,
            dest_qp: qp,
            udp_sport: Some(50_000),
            ..FlowRow::default()
        }
    }

    fn finding(id: &'static str, flows: Vec<u32>) -> Finding {
        Finding {
            id,
            severity: crate::analyze::Severity::Warning,
            impact: 0.0,
            title: String::new(),
            detail: String::new(),
            recommendation: String::new(),
            flows,
            wireshark: None,
            params: Default::default(),
        }
    }

    #[test]
    fn flows_of_one_ip_pair_share_a_clause_and_ipv6_is_ipv6() {
        let (a, b) = (v4([10, 0, 0, 1]), v4([10, 0, 0, 2]));
        let six: [u8; 16] = "fd00::1".parse::<Ipv6Addr>().unwrap().octets();
        let mut rows = vec![row(0, a, b, 17), row(1, a, b, 18), row(2, six, six, 5)];
        rows[2].udp_sport = Some(69);
        rows[1].iface = 0;
        let h = finding_handoff(&finding("x", vec![0, 1, 2]), &rows, |_| {
            IfaceOrigin::default()
        });
        assert_eq!(
            h.display_filter,
            "(ip.src==10.0.0.1 && ip.dst==10.0.0.2 && (infiniband.bth.destqp==17 || infiniband.bth.destqp==18) && infiniband.bth.opcode!=129) \
             || (ipv6.src==fd00::1 && ipv6.dst==fd00::1 && infiniband.bth.destqp==5 && infiniband.bth.opcode!=129)"
        );
        assert_eq!(
            h.decode_as,
            ["udp.port==4791,infiniband", "udp.port==69,infiniband"]
        );
        let shared = IfaceOrigin {
            local: 3,
            shared_file: true,
        };
        assert!(flow_filter(&rows[0], shared).starts_with("frame.interface_id==3 && ip.src"));
        // InfiniBand: LIDs without a GRH, GIDs with one.
        use rocescope_common::proto::lrh::lid_addr;
        let mut ib = row(3, lid_addr(32), lid_addr(17), 0x401);
        ib.link = "ib";
        assert_eq!(
            flow_filter(&ib, IfaceOrigin::default()),
            "infiniband.lrh.slid==32 && infiniband.lrh.dlid==17 && infiniband.bth.destqp==1025 && infiniband.bth.opcode!=129"
        );
        ib.src_ip = six;
        ib.dst_ip = six;
        assert!(
            flow_filter(&ib, IfaceOrigin::default())
                .starts_with("infiniband.grh.sgid==fd00::1 && infiniband.grh.dgid==fd00::1 && ")
        );
    }

    #[test]
    fn a_long_filter_is_capped_and_says_how_many_flows_it_leaves_out() {
        let rows: Vec<FlowRow> = (0..1000u32)
            .map(|i| {
                let [_, _, x, y] = i.to_be_bytes();
                row(i, v4([10, 1, x, y]), v4([10, 2, x, y]), i)
            })
            .collect();
        let h = finding_handoff(&finding("x", (0..1000).collect()), &rows, |_| {
            IfaceOrigin::default()
        });
        assert!(
            h.display_filter.len() <= MAX_FILTER_CHARS,
            "{}",
            h.display_filter.len()
        );
        let shown = h.display_filter.matches(" || ").count() + 1;
        assert_eq!(shown + h.flows_left_out, 1000);
        assert!(h.flows_left_out > 900);
        let line = h.report_line("x").unwrap();
        assert!(
            line.contains("rocescope extract CAPTURE… --finding x"),
            "{line}"
        );
    }

    #[test]
    fn findings_about_the_link_show_its_pause_frames_or_nothing() {
        let h = finding_handoff(&finding("link-pause", Vec::new()), &[], |_| {
            IfaceOrigin::default()
        });
        assert_eq!(h.display_filter, "macc.opcode==0x0001");
        let h = finding_handoff(&finding("cnp-without-ce", Vec::new()), &[], |_| {
            IfaceOrigin::default()
        });
        assert_eq!(h.display_filter, "infiniband.bth.opcode==129");
        let h = finding_handoff(&finding("pfc-storm", Vec::new()), &[], |_| {
            IfaceOrigin::default()
        });
        assert_eq!(h, Handoff::default());
        assert_eq!(h.report_line("pfc-storm"), None);
    }
}
