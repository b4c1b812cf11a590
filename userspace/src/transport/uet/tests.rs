use std::collections::BTreeSet;

use super::*;

/// The columns docs/tables.md lists: prefixed, each once, each behind one
/// of the view's `present` bits.
#[test]
fn the_packet_columns_are_prefixed_distinct_and_guarded() {
    let names: BTreeSet<_> = PACKET_COLUMNS.iter().map(|c| c.name).collect();
    assert_eq!(names.len(), PACKET_COLUMNS.len());
    for c in &PACKET_COLUMNS {
        assert!(c.name.starts_with("uet_"), "{}", c.name);
        assert_eq!(c.present.count_ones(), 1, "{}", c.name);
    }
    let tables = include_str!("../../../../docs/tables.md");
    for name in names {
        assert!(
            tables.contains(&format!("`{name}`")),
            "{name} in docs/tables.md"
        );
    }
}

#[test]
fn the_neutral_psn_is_the_pds_psn_when_there_is_one() {
    let mut u = UetView {
        psn: 7,
        ..UetView::default()
    };
    assert_eq!(psn(&u), None);
    u.present = present::PSN;
    assert_eq!(psn(&u), Some(7));
}
