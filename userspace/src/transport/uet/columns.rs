//! UET's own columns of `flows.parquet` (docs/tables.md, "flows.parquet",
//! the `uet_` columns): the values a PDC direction's row carries beside
//! the transport-neutral ones, declared here as [`super::PACKET_COLUMNS`]
//! are for `packets.parquet`.

use serde::Serialize;

use super::pdc::Pdc;

/// What a PDC direction's row holds of UET's own (null on a QP's row).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PdcValues {
    /// What its frames came as (its row's `decode_as`; not a column).
    #[serde(skip)]
    pub carrier: super::Carrier,
    pub spdcid: u16,
    pub dpdcid: Option<u16>,
    pub first_transmissions: u64,
    pub timeout_resends: u64,
    pub rod_requests: u64,
    pub acks_ecn: u64,
    pub nacks_trimmed: u64,
    pub nacks_no_pdc: u64,
    pub nacks_no_pkt_buffer: u64,
    pub nacks_psn_oor_window: u64,
    pub nacks_no_resource: u64,
    pub nacks_other: u64,
    pub delivered: u64,
    pub sacked: u64,
    pub nacked: u64,
    pub ack_delay_min_us: Option<f64>,
    pub ack_delay_max_us: Option<f64>,
    pub resend_wait_min_us: Option<f64>,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

impl PdcValues {
    pub fn of(p: &Pdc) -> PdcValues {
        let n = &p.nacks_by;
        PdcValues {
            carrier: p.carrier,
            spdcid: p.key.spdcid,
            dpdcid: p.peer,
            first_transmissions: p.requests - p.retransmissions,
            timeout_resends: p.timeout_resends,
            rod_requests: p.rod_requests,
            acks_ecn: p.acks_ecn,
            nacks_trimmed: n.trimmed,
            nacks_no_pdc: n.no_pdc,
            nacks_no_pkt_buffer: n.no_pkt_buffer,
            nacks_psn_oor_window: n.psn_oor_window,
            nacks_no_resource: n.no_resource,
            nacks_other: n.other,
            delivered: p.covered.delivered,
            sacked: p.covered.sacked_psns,
            nacked: p.nacked,
            ack_delay_min_us: (p.ack_delay.n > 0).then(|| us(p.ack_delay.min)),
            ack_delay_max_us: (p.ack_delay.n > 0).then(|| us(p.ack_delay.max)),
            resend_wait_min_us: (p.resend_wait.n > 0).then(|| us(p.resend_wait.min)),
        }
    }
}

impl PdcValues {
    /// What names the PDC direction between its two addresses, as a QP's
    /// destination QP names a QP's flow: its sending PDC id (`PDC 256`).
    pub fn end(&self) -> String {
        format!("PDC {}", self.spdcid)
    }

    /// The counts less `base`'s (an interim row's, docs/tables.md); ids and
    /// measurements stay these.
    pub fn subtract(&mut self, base: &PdcValues) {
        for (a, b) in [
            (&mut self.first_transmissions, base.first_transmissions),
            (&mut self.timeout_resends, base.timeout_resends),
            (&mut self.rod_requests, base.rod_requests),
            (&mut self.acks_ecn, base.acks_ecn),
            (&mut self.nacks_trimmed, base.nacks_trimmed),
            (&mut self.nacks_no_pdc, base.nacks_no_pdc),
            (&mut self.nacks_no_pkt_buffer, base.nacks_no_pkt_buffer),
            (&mut self.nacks_psn_oor_window, base.nacks_psn_oor_window),
            (&mut self.nacks_no_resource, base.nacks_no_resource),
            (&mut self.nacks_other, base.nacks_other),
            (&mut self.delivered, base.delivered),
            (&mut self.sacked, base.sacked),
            (&mut self.nacked, base.nacked),
        ] {
            *a = a.saturating_sub(b);
        }
    }
}

/// One `uet_` column of `flows.parquet`: its name and value (null on a
/// QP's row).
pub struct FlowColumn {
    pub name: &'static str,
    pub value: FlowValue,
}

/// A column's value by its type.
#[derive(Clone, Copy)]
pub enum FlowValue {
    /// Int64.
    Count(fn(&PdcValues) -> Option<u64>),
    /// Float64.
    Us(fn(&PdcValues) -> Option<f64>),
}

const fn count(name: &'static str, f: fn(&PdcValues) -> Option<u64>) -> FlowColumn {
    FlowColumn {
        name,
        value: FlowValue::Count(f),
    }
}

const fn micros(name: &'static str, f: fn(&PdcValues) -> Option<f64>) -> FlowColumn {
    FlowColumn {
        name,
        value: FlowValue::Us(f),
    }
}

/// UET's columns of `flows.parquet`, in the table's order.
pub const FLOW_COLUMNS: [FlowColumn; 18] = [
    count("uet_spdcid", |v| Some(u64::from(v.spdcid))),
    count("uet_dpdcid", |v| v.dpdcid.map(u64::from)),
    count("uet_first_transmissions", |v| Some(v.first_transmissions)),
    count("uet_timeout_resends", |v| Some(v.timeout_resends)),
    count("uet_rod_requests", |v| Some(v.rod_requests)),
    count("uet_acks_ecn", |v| Some(v.acks_ecn)),
    count("uet_nacks_trimmed", |v| Some(v.nacks_trimmed)),
    count("uet_nacks_no_pdc", |v| Some(v.nacks_no_pdc)),
    count("uet_nacks_no_pkt_buffer", |v| Some(v.nacks_no_pkt_buffer)),
    count("uet_nacks_psn_oor_window", |v| Some(v.nacks_psn_oor_window)),
    count("uet_nacks_no_resource", |v| Some(v.nacks_no_resource)),
    count("uet_nacks_other", |v| Some(v.nacks_other)),
    count("uet_delivered", |v| Some(v.delivered)),
    count("uet_sacked", |v| Some(v.sacked)),
    count("uet_nacked", |v| Some(v.nacked)),
    micros("uet_ack_delay_min_us", |v| v.ack_delay_min_us),
    micros("uet_ack_delay_max_us", |v| v.ack_delay_max_us),
    micros("uet_resend_wait_min_us", |v| v.resend_wait_min_us),
];
