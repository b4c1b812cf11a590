//! The tables' part of the transports beside RoCE, listed once
//! (docs/build.md, "Adding a transport", point 8): their columns on
//! `flows.parquet` after the shared ones ([`TransportFlowColumns`]), and
//! their own tables ([`TRANSPORT_TABLES`], written by [`transport_tables`]
//! through the output directory's and the dataset's [`TableWriter`]), each
//! transport's built by its module (`uet`).

use arrow_array::ArrayRef;

use crate::Result;
use crate::analyze::{Analysis, FlowRow};
use crate::tables::Columns;

pub mod uet;

/// `flows.parquet`'s columns of the transports beside RoCE: each
/// transport's in its order, null on every row not its own.
pub(crate) struct TransportFlowColumns {
    uet: uet::FlowColumns,
}

impl Default for TransportFlowColumns {
    fn default() -> Self {
        Self::with_rows(1024)
    }
}

impl TransportFlowColumns {
    fn with_rows(rows: usize) -> Self {
        TransportFlowColumns {
            uet: uet::FlowColumns::with_rows(rows),
        }
    }

    /// `row`'s values (none on a row not of the transport).
    pub(crate) fn append(&mut self, row: &FlowRow) {
        self.uet.append(row.transport.uet.as_deref());
    }

    /// The columns built, each named, after `columns`; afresh with room
    /// for `rows`.
    pub(crate) fn finish(&mut self, rows: usize, columns: &mut Vec<(&'static str, ArrayRef)>) {
        let built = std::mem::replace(self, TransportFlowColumns::with_rows(rows));
        built.uet.finish(columns);
    }
}

/// The tables transports add beside the shared ones, each written at the
/// end of the run as `<name>.parquet` (or the dataset's `<name>/`): one
/// entry per table, and its line in [`transport_tables`].
pub const TRANSPORT_TABLES: [&str; 1] = [uet::PATHS];

/// What writes a table of [`TRANSPORT_TABLES`]: the output directory's
/// `TableSet` or the dataset, each its own way.
pub(crate) trait TableWriter {
    /// Table `name`'s rows, each with the time that partitions it.
    fn table<'a, C: Columns>(
        &mut self,
        name: &'static str,
        rows: impl Iterator<Item = (u64, C::Row<'a>)>,
    ) -> Result<()>;
}

/// Writes every table of [`TRANSPORT_TABLES`] from `analysis`, in order.
pub(crate) fn transport_tables(
    w: &mut impl TableWriter,
    analysis: &Analysis,
    ifaces: &[String],
) -> Result<()> {
    uet::paths(w, analysis, ifaces)
}
