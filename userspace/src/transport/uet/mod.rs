//! The UET transport in userspace: what only userspace does with its
//! records once the shared walk (`rocescope_common::wire::uet`) has filled
//! their UET view (`PacketRecord::uet`). UET has no ICRC (the walk sets no
//! `Walked::icrc`, so the decoder checks none); so far that is its columns
//! in `packets.parquet` ([`PACKET_COLUMNS`]). Its flow key (the PDC) and
//! its selective-ACK sequencing are the next step (docs/build.md, "UET so
//! far").
use rocescope_common::wire::TransportId;
use rocescope_common::wire::uet::uet_present as present;

use super::packet_columns::{PacketColumn, TransportColumns, Value};
/// The record's UET view and its `present` bits, for the library's users.
pub use rocescope_common::wire::uet::{UetView, uet_present};

/// UET's columns of `packets.parquet`, in the table's order: a row holds
/// a value where the [`UetView::present`] bit says so (null otherwise, and
/// on every row that is not UET's).
pub const PACKET_COLUMNS: [PacketColumn; 20] = [
    few(
        "uet_pds_type",
        present::PDS,
        Value::U8(|r| r.uet().pds_type),
    ),
    few(
        "uet_next_header",
        present::PDS,
        Value::U8(|r| r.uet().next_header),
    ),
    few("uet_flags", present::PDS, Value::U8(|r| r.uet().pds_flags)),
    few("uet_spdcid", present::PDC, Value::U16(|r| r.uet().spdcid)),
    few(
        "uet_dpdcid",
        present::DPDCID,
        Value::U16(|r| r.uet().dpdcid),
    ),
    column(
        "uet_cack_psn",
        present::ACK,
        Value::U32(|r| r.uet().cack_psn),
    ),
    column("uet_ack_psn", present::ACK, Value::U32(|r| r.uet().ack_psn)),
    column(
        "uet_sack_base",
        present::SACK,
        Value::U32(|r| r.uet().sack_base),
    ),
    column(
        "uet_sack_bitmap",
        present::SACK,
        Value::U64(|r| r.uet().sack_bitmap),
    ),
    column("uet_cc_type", present::CC, Value::U8(|r| r.uet().cc_type)),
    column(
        "uet_cc_state",
        present::CC,
        Value::U64(|r| r.uet().cc_state),
    ),
    column(
        "uet_ccc_id",
        present::REQUEST_CC,
        Value::U8(|r| r.uet().ccc_id),
    ),
    column(
        "uet_credit_target",
        present::REQUEST_CC,
        Value::U32(|r| r.uet().credit_target),
    ),
    column(
        "uet_nack_code",
        present::NACK,
        Value::U8(|r| r.uet().nack_code),
    ),
    column(
        "uet_pkt_id",
        present::PKT_ID,
        Value::U32(|r| r.uet().pkt_id),
    ),
    few(
        "uet_entropy",
        present::ENTROPY,
        Value::U16(|r| r.uet().entropy),
    ),
    few(
        "uet_ses_opcode",
        present::SES,
        Value::U8(|r| r.uet().ses_opcode),
    ),
    column(
        "uet_ses_flags",
        present::SES,
        Value::U8(|r| r.uet().ses_flags),
    ),
    column(
        "uet_message_id",
        present::MESSAGE_ID,
        Value::U16(|r| r.uet().message_id),
    ),
    few(
        "uet_job_id",
        present::JOB_ID,
        Value::U32(|r| r.uet().job_id),
    ),
];

/// What `packets.parquet` holds of UET: its line in
/// [`super::PACKET_COLUMNS`].
pub const PACKETS: TransportColumns = TransportColumns {
    transport: TransportId::Uet,
    present: |r| u32::from(r.uet().present),
    psn: |r| psn(r.uet()),
    columns: &PACKET_COLUMNS,
};

/// A column with many distinct values in a capture (plain pages).
const fn column(name: &'static str, present: u16, value: Value) -> PacketColumn {
    PacketColumn {
        name,
        present: present as u32,
        dictionary: false,
        value,
    }
}

/// A column with few (dictionary pages: `tables::packets`, "few values").
const fn few(name: &'static str, present: u16, value: Value) -> PacketColumn {
    PacketColumn {
        dictionary: true,
        ..column(name, present, value)
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
mod pdcs;
pub mod sack;
mod totals;
pub use columns::{FLOW_COLUMNS, FlowColumn, FlowValue, PdcValues};
pub use key::{Carrier, PdcKey};
pub use pdc::Pdc;
pub use pdcs::Pdcs;
pub use totals::UetTotals;

#[cfg(test)]
mod tests;
