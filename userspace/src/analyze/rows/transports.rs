//! The transports beside RoCE in the analyzer's shared types, listed once
//! (docs/build.md, "Adding a transport", point 7): each shared output or
//! input struct holds one of the parts below under a neutral field name,
//! and each part holds one field per transport. A new transport adds its
//! field to each part and its line to each method here; the shared structs
//! and the code that fills them (`analyze/mod.rs`, `rows.rs`, `finish.rs`,
//! `findings/input.rs`) stay as they are. The steps that fill these parts
//! are the analyzer's other registry, `analyze/transports/`.
//!
//! Each part serializes flattened into its struct, its fields at the place
//! of the struct's field, so `summary.json` and `report --json` read as when
//! the fields were the struct's own.

use rocescope_common::Kind;
use rocescope_common::wire::TransportId;
use serde::Serialize;

use crate::transport::uet;

/// How many transports there are beside RoCE.
pub const BEYOND_ROCE: usize = 1;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// [`super::FrameCounts`]' part: records per transport beside RoCE.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TransportFrames {
    /// Ultra Ethernet Transport records (`frames.uet`, absent from
    /// `summary.json` when there were none, as in every RoCE capture).
    #[serde(skip_serializing_if = "is_zero")]
    pub uet: u64,
}

impl TransportFrames {
    /// Counts a record of `kind` when it is one of these transports' kinds.
    #[inline]
    pub fn count(&mut self, kind: Kind) {
        match kind {
            Kind::Uet => self.uet += 1,
            Kind::Roce | Kind::Cnp | Kind::Pfc | Kind::Pause | Kind::Malformed | Kind::Other => {}
        }
    }

    /// The records counted, each with its kind (the live metrics' `kind`
    /// label is [`Kind::as_str`]).
    pub fn by_kind(&self) -> [(Kind, u64); 1] {
        [(Kind::Uet, self.uet)]
    }

    /// The records counted per transport, in the registry's order.
    pub fn by_transport(&self) -> [(TransportId, u64); BEYOND_ROCE] {
        [(TransportId::Uet, self.uet)]
    }

    /// Adds another analyzer's counts (`shard`).
    pub(crate) fn add(&mut self, more: &TransportFrames) {
        self.uet += more.uet;
    }
}

/// [`super::FlowRow`]'s part: the values of a flow of a transport beside
/// RoCE (its prefixed columns), none on a QP's row.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TransportRow {
    /// A UET PDC direction's own values (`uet_` columns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uet: Option<Box<uet::PdcValues>>,
}

impl TransportRow {
    /// The transport whose flow the row is: `None` for RoCE's (a QP's).
    pub fn transport(&self) -> Option<TransportId> {
        self.uet.as_ref().map(|_| TransportId::Uet)
    }

    /// Its own counts less `base`'s (an interim row's).
    pub(in crate::analyze) fn subtract(&mut self, base: &TransportRow) {
        if let (Some(u), Some(b)) = (&mut self.uet, &base.uet) {
            u.subtract(b);
        }
    }

    /// What names the flow's end (a UET PDC direction: `PDC 256`); `None`
    /// on a QP's row, which its QP names.
    pub fn end(&self) -> Option<String> {
        self.uet.as_deref().map(|u| u.end())
    }
}

/// `summary.json`'s totals of the transports beside RoCE, one key each
/// (docs/tables.md, "summary.json"): [`super::Summary`]'s part.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TransportTotals {
    /// UET's totals over its PDC directions; absent without a UET record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uet: Option<uet::UetTotals>,
}

impl TransportTotals {
    /// Whether a transport beside RoCE has totals.
    pub fn any(&self) -> bool {
        self.uet.is_some()
    }
}

/// [`super::Retirement`]'s part: each transport's flows retired before the
/// end, beside `retired_flows` (QP flows).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TransportRetirement {
    /// UET PDC directions retired before the end: present when the run had
    /// UET records, so a RoCE run's summary reads as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retired_pdc_directions: Option<u64>,
}

impl TransportRetirement {
    /// Adds another analyzer's (`shard`).
    pub fn add(&mut self, more: &TransportRetirement) {
        self.retired_pdc_directions =
            match (self.retired_pdc_directions, more.retired_pdc_directions) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
    }
}

/// `Analysis`' part: the transports' own tables (`tables::analysis`
/// writes them through its registry).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TransportTables {
    /// `uet_paths.parquet`: UET requests per tap, PDC direction and
    /// entropy value (`crate::transport::uet::paths`).
    pub uet_paths: Vec<uet::paths::PathRow>,
}

/// What the findings read of the transports beside RoCE, one part each
/// (`findings::input::Input`'s part).
pub struct TransportInput<'a> {
    /// UET's spraying and trimming (`crate::transport::uet::paths`): the
    /// analyzer's tracker, a sharded run's N (each its PDCs'); read them
    /// through [`TransportInput::uet_rows`], `uet_signals`, `uet_taps`.
    pub uet: Vec<&'a uet::paths::Paths>,
    /// UET's PDC directions: the retired ones kept as evidence, then the
    /// live ones (what the capture-level findings count of UET).
    pub pdcs: Vec<&'a uet::Pdc>,
}

/// A flow of a transport beside RoCE as the capture-level findings count
/// it (`capture-loss`, `mirror-duplicates`).
#[derive(Clone, Copy, Debug)]
pub struct OtherFlow {
    pub transport: TransportId,
    /// Its `flow_id`.
    pub id: u32,
    /// Missing PSNs the receiver acknowledged: frames the tap missed.
    pub capture_lost: u64,
    /// Its frames the mirror copied (left out of every other count).
    pub mirror_copies: u64,
}

impl<'a> TransportInput<'a> {
    /// Another analyzer's of the same run added (a sharded run judged
    /// together): its trackers and flows after these.
    pub fn add(&mut self, more: TransportInput<'a>) {
        self.uet.extend(more.uet);
        self.pdcs.extend(more.pdcs);
    }

    /// UET's path rows, each tracker's in its order (a PDC direction is
    /// one analyzer's).
    pub fn uet_rows(&self) -> Vec<uet::paths::PathRow> {
        match self.uet.as_slice() {
            [one] => one.rows(),
            all => all.iter().flat_map(|p| p.rows()).collect(),
        }
    }

    /// UET's directions' signals, each tracker's in its order.
    pub fn uet_signals(&self) -> Vec<uet::paths::PdcSignals> {
        match self.uet.as_slice() {
            [one] => one.signals(),
            all => all.iter().flat_map(|p| p.signals()).collect(),
        }
    }

    /// UET's requests and trims per tap, the trackers' added.
    pub fn uet_taps(&self) -> std::collections::BTreeMap<u16, uet::paths::TapTrims> {
        let mut taps = std::collections::BTreeMap::new();
        for p in &self.uet {
            for (&i, t) in p.taps() {
                let to: &mut uet::paths::TapTrims = taps.entry(i).or_default();
                to.requests += t.requests;
                to.trimmed += t.trimmed;
                to.trimmed_nacks += t.trimmed_nacks;
            }
        }
        taps
    }
}

impl TransportInput<'_> {
    /// Every flow of the transports beside RoCE, each transport's in its
    /// own order.
    pub fn flows(&self) -> impl Iterator<Item = OtherFlow> + '_ {
        self.pdcs.iter().map(|p| OtherFlow {
            transport: TransportId::Uet,
            id: p.id,
            capture_lost: p.gap[3],
            mirror_copies: p.mirror_copies,
        })
    }
}
