//! The transports beside RoCE in the report's Capture section, the HTML
//! page's facts and the capture-level findings' words: each one's lines
//! from its part of `summary.json` or of the evidence, worded in its own
//! module here (`transports/<transport>.rs`). One entry per
//! transport in each list below: a registration point (docs/build.md,
//! "Adding a transport").

mod uet;

use crate::analyze::Summary;
use crate::analyze::findings::MirrorCopies;
use rocescope_common::wire::TransportId;

/// Each transport's totals line, in the order of the registry: after
/// RoCE's flow line.
pub(crate) fn totals_lines(s: &Summary) -> Vec<String> {
    s.transports.uet.iter().map(uet::totals_line).collect()
}

/// Each transport's ECN line: after RoCE's.
pub(crate) fn ecn_lines(s: &Summary) -> Vec<String> {
    s.transports.uet.iter().map(uet::ecn_line).collect()
}

/// `mirror-duplicates`' clause per transport beside RoCE whose frames had
/// copies: what its copies matched on, after RoCE's (empty when none had).
pub(crate) fn copies_clauses(e: &MirrorCopies) -> String {
    e.transport_copies
        .iter()
        .map(|&(t, n)| match t {
            TransportId::Uet => uet::copies_clause(n),
            // The finding's own words are RoCE's.
            TransportId::Roce => String::new(),
        })
        .collect()
}
