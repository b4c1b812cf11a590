//! The UET transport in userspace: what only userspace does with its
//! records once the shared walk (`rocescope_common::wire::uet`) has filled
//! their UET view (`PacketRecord::uet`). UET has no ICRC (the walk sets no
//! `Walked::icrc`, so the decoder checks none); so far that is its columns
//! in `packets.parquet` ([`PACKET_COLUMNS`]). Its flow key (the PDC) and
//! its selective-ACK sequencing are the next step (docs/build.md, "UET so
//! far").
use rocescope_common::wire::uet::uet_present as present;
/// The record's UET view and its `present` bits, for the library's users.
pub use rocescope_common::wire::uet::{UetView, uet_present};

/// One `uet_` column of `packets.parquet` (docs/tables.md): its name, the
/// [`UetView::present`] bit that says a row holds a value (null
/// otherwise, and on every row that is not UET's), and the value.
pub struct PacketColumn {
    pub name: &'static str,
    pub present: u16,
    pub value: Value,
}

/// A column's value, by the field's width (the table widens each to the
/// signed type one width up, docs/tables.md "Numbers").
#[derive(Clone, Copy)]
pub enum Value {
    U8(fn(&UetView) -> u8),
    U16(fn(&UetView) -> u16),
    U32(fn(&UetView) -> u32),
    U64(fn(&UetView) -> u64),
}

/// UET's columns of `packets.parquet`, in the table's order.
pub const PACKET_COLUMNS: [PacketColumn; 20] = [
    column("uet_pds_type", present::PDS, Value::U8(|u| u.pds_type)),
    column(
        "uet_next_header",
        present::PDS,
        Value::U8(|u| u.next_header),
    ),
    column("uet_flags", present::PDS, Value::U8(|u| u.pds_flags)),
    column("uet_spdcid", present::PDC, Value::U16(|u| u.spdcid)),
    column("uet_dpdcid", present::DPDCID, Value::U16(|u| u.dpdcid)),
    column("uet_cack_psn", present::ACK, Value::U32(|u| u.cack_psn)),
    column("uet_ack_psn", present::ACK, Value::U32(|u| u.ack_psn)),
    column("uet_sack_base", present::SACK, Value::U32(|u| u.sack_base)),
    column(
        "uet_sack_bitmap",
        present::SACK,
        Value::U64(|u| u.sack_bitmap),
    ),
    column("uet_cc_type", present::CC, Value::U8(|u| u.cc_type)),
    column("uet_cc_state", present::CC, Value::U64(|u| u.cc_state)),
    column("uet_ccc_id", present::REQUEST_CC, Value::U8(|u| u.ccc_id)),
    column(
        "uet_credit_target",
        present::REQUEST_CC,
        Value::U32(|u| u.credit_target),
    ),
    column("uet_nack_code", present::NACK, Value::U8(|u| u.nack_code)),
    column("uet_pkt_id", present::PKT_ID, Value::U32(|u| u.pkt_id)),
    column("uet_entropy", present::ENTROPY, Value::U16(|u| u.entropy)),
    column("uet_ses_opcode", present::SES, Value::U8(|u| u.ses_opcode)),
    column("uet_ses_flags", present::SES, Value::U8(|u| u.ses_flags)),
    column(
        "uet_message_id",
        present::MESSAGE_ID,
        Value::U16(|u| u.message_id),
    ),
    column("uet_job_id", present::JOB_ID, Value::U32(|u| u.job_id)),
];

const fn column(name: &'static str, present: u16, value: Value) -> PacketColumn {
    PacketColumn {
        name,
        present,
        value,
    }
}

/// The transport-neutral `psn` of a UET record: the PDS PSN (a request's,
/// a CONTROL packet's, a NACK's NACK PSN), when it has one.
pub fn psn(u: &UetView) -> Option<u32> {
    (u.present & present::PSN != 0).then_some(u.psn)
}

mod columns;
mod key;
pub mod paths;
pub mod pdc;
pub mod sack;
mod totals;
pub use columns::{FLOW_COLUMNS, FlowColumn, FlowValue, PdcValues};
pub use key::{Carrier, PdcKey};
pub use pdc::{Pdc, Pdcs};
pub use totals::UetTotals;

#[cfg(test)]
mod tests;
