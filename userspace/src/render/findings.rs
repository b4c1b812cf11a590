//! A diagnosis in words: its title, detail, recommendation and `params`
//! (docs/report.md lists them per finding), from its evidence alone.

use crate::analyze::{Diagnosis, Evidence, Finding};

/// The finding `summary.json` and the reports show for `d`.
pub fn word(d: &Diagnosis) -> Finding {
    match &d.evidence {
        Evidence::Worded(f) => f.clone(),
    }
}
