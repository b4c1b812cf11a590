//! A QP flow's row of `flows.parquet` (docs/tables.md, "flows"), from its
//! [`Flow`] and its trackers (a UET PDC direction's is `super::super::transports::uet`'s).

use rocescope_common::proto::ib::transport;

use super::super::rows::{FlowRow, ratio};
use super::super::rto;
use super::super::sums::{RowGroup, RowSums};
use super::Flow;

/// What of a flow's row is summed per group ([`crate::analyze::RowSums`],
/// [`crate::analyze::RowGroup`]), the rest default: all a sink that keeps
/// no rows needs of a flow retired at the end of the run
/// ([`super::super::Analyzer`]'s `retire_all`). [`flow_row`] takes these
/// columns from it.
pub(in crate::analyze) fn summed_row(f: &Flow) -> FlowRow {
    let (g, s) = summed(f);
    FlowRow {
        iface: g.iface,
        pcp: g.pcp,
        dscp: g.dscp,
        packets: s.packets,
        cnps: s.cnps,
        naks: s.naks,
        rewinds_timeout: s.rewinds_timeout,
        goodput_gbps: s.goodput_gbps,
        ..FlowRow::default()
    }
}

/// [`summed_row`]'s group and sums (one row's), without the rest of the
/// row: what a flow retired at the end adds to [`Retired`]'s sums when
/// its row goes nowhere else (`report`: no row of a million made).
///
/// [`Retired`]: super::Retired
pub(in crate::analyze) fn summed(f: &Flow) -> (RowGroup, RowSums) {
    let group = RowGroup {
        iface: f.iface,
        pcp: f.pcp(),
        dscp: f.dscp(),
    };
    let sums = RowSums {
        rows: 1,
        packets: f.packets(),
        cnps: f.cnps(),
        naks: f.nak().naks,
        rewinds_timeout: f.rewind().rewinds_timeout,
        goodput_gbps: f.rate_gbps(f.goodput_bytes()),
    };
    (group, sums)
}

pub(in crate::analyze) fn flow_row(f: &Flow) -> FlowRow {
    let w = f.rewind().waits;
    let measured = w.samples > 0;
    let us = |ns: u64| ns as f64 / 1000.0;
    FlowRow {
        flow_id: f.id,
        src_ip: f.src_ip,
        dst_ip: f.dst_ip,
        dest_qp: f.dest_qp,
        paired_qp: f.paired_qp(),
        roce_version: f.roce_version(),
        udp_sport: f.udp_sport(),
        first_ts_ns: f.first_ts,
        last_ts_ns: f.last_ts,
        bytes: f.bytes(),
        data_packets: f.data_packets(),
        payload_bytes: f.payload_bytes(),
        retrans_packets: f.retrans(),
        retrans_rate: ratio(f.retrans(), f.data_packets()),
        rewinds: f.rewind().rewinds,
        rewinds_nak: f.rewind().rewinds_nak,
        rewinds_rnr: f.rewind().rewinds_rnr,
        max_rewind_depth: f.rewind().max_depth,
        spurious_retrans: f.sequence().spurious,
        gaps: f.sequence().gaps,
        acks: f.acks(),
        rnr_naks: f.nak().rnr_naks,
        ce: f.ce(),
        gbps: f.rate_gbps(f.bytes()),
        max_idle_us: f.max_idle_ns as f64 / 1000.0,
        rewinds_timeout_ghost: f.rewind().rewinds_timeout_ghost,
        gap_late: f.sequence().gap_counts.late,
        gap_lost_before_tap: f.sequence().gap_counts.lost_before_tap,
        gap_nak_lost: f.sequence().gap_counts.nak_lost,
        gap_capture_lost: f.sequence().gap_counts.capture_lost,
        gap_unresolved: f.sequence().gap_counts.unresolved,
        late_max_us: f.sequence().late_max_ns.map(|n| n as f64 / 1000.0),
        late_max_psns: f.sequence().late_max_ns.map(|_| f.sequence().late_max_psns),
        icrc_errors: (!f.sniffer_tap()).then_some(f.rare().icrc_errors),
        trimmed: f.trimmed(),
        mirror_copies: f.rare().mirror_copies,
        display_filter: String::new(),
        decode_as: String::new(),
        nic_timeout_samples: w.samples,
        nic_timeout_us: measured.then(|| us(w.min_ns)),
        nic_timeout_max_us: measured.then(|| us(w.max_ns)),
        nic_timeout_exponent: measured.then(|| rto::nearest_exponent(w.min_ns)),
        nic_timeout_bounded: w.bounded,
        nic_timeout_lower_us: w.bounds().map(|b| us(b.0)),
        nic_timeout_upper_us: w.bounds().map(|b| us(b.1)),
        max_rewinds_one_psn: f.rewind().livelock.worst.map_or(0, |r| r.rewinds),
        livelock_psn: f.rewind().livelock.livelock().map(|r| r.psn),
        dcqcn_reactions: f.dcqcn().reactions,
        dcqcn_reaction_us: f.dcqcn().reaction_us(),
        dcqcn_reaction_max_us: (f.dcqcn().reactions > 0).then(|| us(f.dcqcn().reaction_max_ns)),
        dcqcn_recovery_us: f.dcqcn().recovery_us(),
        dcqcn_cnps_without_reaction: f.dcqcn().without,
        service: f.service().and_then(transport::name),
        link: if f.ib_link() { "ib" } else { "roce" },
        becn: f.rare().becn,
        interim: false,
        ..summed_row(f)
    }
}
