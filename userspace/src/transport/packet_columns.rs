//! A transport's own columns of `packets.parquet` (docs/tables.md): after
//! the shared and RoCE's columns and `transport`, each transport beside
//! RoCE declares its prefixed columns in its module as a
//! [`TransportColumns`], listed once in [`super::PACKET_COLUMNS`], which
//! the table writes by one loop (`tables::packets`).

use rocescope_common::PacketRecord;
use rocescope_common::wire::TransportId;

/// One prefixed column: its name, the bit of its transport's presence
/// bits ([`TransportColumns::present`]) that says a row holds a value
/// (null otherwise, and on every row not its transport's), whether it
/// gets Parquet dictionary pages (few distinct values in a capture), and
/// the value.
pub struct PacketColumn {
    pub name: &'static str,
    pub present: u32,
    pub dictionary: bool,
    pub value: Value,
}

/// A column's value of a record of its transport, by the field's width
/// (the table widens each to the signed type one width up, docs/tables.md
/// "Numbers").
#[derive(Clone, Copy)]
pub enum Value {
    U8(fn(&PacketRecord) -> u8),
    U16(fn(&PacketRecord) -> u16),
    U32(fn(&PacketRecord) -> u32),
    U64(fn(&PacketRecord) -> u64),
}

/// What `packets.parquet` holds of one transport beside RoCE.
pub struct TransportColumns {
    pub transport: TransportId,
    /// Which of its fields a record of the transport holds (its view's
    /// presence bits); read only on its own records.
    pub present: fn(&PacketRecord) -> u32,
    /// A record's transport-neutral `psn` (RoCE's is the BTH's), if it
    /// has one; read only on its own records.
    pub psn: fn(&PacketRecord) -> Option<u32>,
    /// Its columns, in the table's order.
    pub columns: &'static [PacketColumn],
}

/// Every transport's dictionary-encoded columns, in the table's order:
/// `N` of them ([`dictionary_count`]).
pub const fn dictionary_names<const N: usize>(sets: &[&TransportColumns]) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut s, mut n) = (0, 0);
    while s < sets.len() {
        let columns = sets[s].columns;
        let mut c = 0;
        while c < columns.len() {
            if columns[c].dictionary {
                out[n] = columns[c].name;
                n += 1;
            }
            c += 1;
        }
        s += 1;
    }
    assert!(n == N, "dictionary_names: N is not dictionary_count");
    out
}

/// How many of `sets`' columns are dictionary-encoded.
pub const fn dictionary_count(sets: &[&TransportColumns]) -> usize {
    let (mut s, mut n) = (0, 0);
    while s < sets.len() {
        let columns = sets[s].columns;
        let mut c = 0;
        while c < columns.len() {
            if columns[c].dictionary {
                n += 1;
            }
            c += 1;
        }
        s += 1;
    }
    n
}
