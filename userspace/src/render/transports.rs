//! The transports beside RoCE in the report's Capture section, the HTML
//! page's facts, the capture-level findings' words and their own findings:
//! each one's lines from its part of `summary.json` or of the evidence,
//! worded in its own module here (`transports/<transport>.rs`, its
//! findings' words below it). One entry per transport in each list below:
//! a registration point (docs/build.md, "Adding a transport").

mod uet;

use crate::analyze::Summary;
use crate::analyze::findings::{MirrorCopies, TransportEvidence};
use rocescope_common::wire::TransportId;

use super::words::{Names, Words};

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

/// What a transport's own finding says: `findings::word`'s one arm for
/// every transport's evidence.
pub(super) fn words(e: &TransportEvidence, n: &Names) -> Words {
    match e {
        TransportEvidence::Uet(e) => uet::words(e, n),
    }
}
