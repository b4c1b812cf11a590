//! `packets.parquet`'s columns from known records.
use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, UInt32Type};
use arrow_array::{Array, StringArray};
use arrow_schema::DataType;
use rocescope_common::Kind;

use super::*;
use crate::tables::format::timestamp_type;

/// The array of column `name` among a batch's columns.
fn column(columns: &[(&'static str, ArrayRef)], name: &str) -> ArrayRef {
    columns
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, a)| a.clone())
        .unwrap_or_else(|| panic!("no column {name}"))
}

/// A string column's values, row by row.
fn texts_of(a: &ArrayRef) -> Vec<Option<String>> {
    let dict = a.as_dictionary::<UInt32Type>();
    let values = dict.downcast_dict::<StringArray>().expect("string values");
    values.into_iter().map(|v| v.map(String::from)).collect()
}

/// Nulls follow the `HAS_*` flags whether a column is all null, never
/// null or mixed in a batch; strings repeat without reformatting.
#[test]
fn columns_follow_the_flags() {
    let roce = PacketRecord {
        kind: Kind::Roce as u8,
        flags: f::HAS_IPV4 | f::HAS_UDP | f::HAS_BTH,
        src_ip: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1],
        src_mac: [2, 0, 0, 0, 0, 1],
        ..PacketRecord::default().with_roce(crate::RoceView {
            psn: 7,
            ..crate::RoceView::default()
        })
    };
    let pfc = PacketRecord {
        kind: Kind::Pfc as u8,
        flags: f::HAS_PFC,
        ..PacketRecord::default().with_link_control(crate::LinkControlView {
            pfc_quanta: [0, 0, 0, 65535, 0, 0, 0, 0],
            ..crate::LinkControlView::default()
        })
    };
    let mut cols = PacketColumns::default();
    for (rec, iface) in [(&roce, "a"), (&pfc, "b"), (&roce, "a")] {
        cols.append(&PacketRow {
            rec,
            iface,
            file: (iface == "a").then_some("x.pcap"),
            flow_id: (rec.kind == Kind::Roce as u8).then_some(3),
            retrans: None,
            mirror_copy: false,
            icrc_unknown: false,
        });
    }
    let columns = cols.finish();
    assert_eq!(cols.len(), 0);
    let col = |name: &str| column(&columns, name);
    let strings = |name: &str| texts_of(&col(name));
    let s = |v: &str| Some(v.to_string());
    assert_eq!(strings("iface"), [s("a"), s("b"), s("a")]);
    assert_eq!(strings("file"), [s("x.pcap"), None, s("x.pcap")]);
    assert_eq!(strings("kind"), [s("roce"), s("pfc"), s("roce")]);
    assert_eq!(strings("src_ip"), [s("10.0.0.1"), None, s("10.0.0.1")]);
    // One MAC set: both columns hold a value (the other is all zeros).
    assert_eq!(
        strings("dst_mac"),
        [s("00:00:00:00:00:00"), None, s("00:00:00:00:00:00")]
    );
    let psn = col("psn");
    assert_eq!(psn.null_count(), 1);
    assert_eq!(psn.as_primitive::<Int64Type>().value(2), 7);
    let q3 = col("pfc_quanta_3");
    assert_eq!(
        q3.as_primitive::<Int32Type>().iter().collect::<Vec<_>>(),
        [None, Some(65535), None]
    );
    assert_eq!(
        col("roce_version")
            .as_primitive::<Int16Type>()
            .iter()
            .collect::<Vec<_>>(),
        [Some(2), None, Some(2)]
    );
    // Never set in this batch: all null; set in every row: no bitmap.
    assert_eq!(col("atomic_va").null_count(), 3);
    assert_eq!(col("retrans").null_count(), 3);
    assert!(col("frame").nulls().is_none());
    assert_eq!(col("flow_id").null_count(), 1);
    assert!(col("mirror_copy").nulls().is_none());
    assert_eq!(
        columns.len(),
        63 + 1 + crate::transport::uet::PACKET_COLUMNS.len()
    );
    // Ethernet frames: link `roce`, no VCRC.
    assert_eq!(texts_of(&col("link")), vec![Some("roce".to_string()); 3]);
    assert_eq!(col("vcrc_ok").null_count(), 3);
    // Signed types one width up; `ts` a UTC microsecond timestamp.
    assert_eq!(col("pcp").data_type(), &DataType::Int16);
    assert_eq!(col("frame").data_type(), &DataType::Int64);
    assert_eq!(col("ts").data_type(), &timestamp_type());
}

/// A sniffer-rewritten frame's ICRC result is unknown (null), a mirror
/// copy is marked; the other rows keep theirs.
#[test]
fn sniffer_frames_have_no_icrc_result_and_copies_are_marked() {
    let rec = |ok: bool| PacketRecord {
        kind: Kind::Roce as u8,
        flags: f::HAS_BTH | f::ICRC_CHECKED | if ok { f::ICRC_OK } else { 0 },
        ..PacketRecord::default()
    };
    let recs = [rec(false), rec(true), rec(false)];
    let verdicts = [
        Verdict {
            icrc_unknown: true,
            ..Verdict::default()
        },
        Verdict::default(),
        Verdict {
            mirror_copy: true,
            ..Verdict::default()
        },
    ];
    let columns = PacketColumns::default().arrays_of(&recs, &verdicts, &["t".to_string()], &[]);
    let col = |name: &str| column(&columns, name);
    let icrc = col("icrc_ok");
    let icrc = icrc.as_boolean();
    assert_eq!(
        icrc.iter().collect::<Vec<_>>(),
        [None, Some(true), Some(false)]
    );
    let copy = col("mirror_copy");
    assert_eq!(
        copy.as_boolean().iter().collect::<Vec<_>>(),
        [Some(false), Some(false), Some(true)]
    );
}

/// A batch built straight from the pipeline's records holds what the
/// same rows appended one by one hold, interfaces named alike.
#[test]
fn a_batch_of_records_gives_the_rows_appended_one_by_one() {
    let ifaces = ["eth0".to_string(), "eth1".to_string()];
    let recs: Vec<PacketRecord> = (0..9u32)
        .map(|i| PacketRecord {
            kind: Kind::Roce as u8,
            flags: f::HAS_IPV4 | f::HAS_UDP | f::HAS_BTH | if i % 3 == 0 { f::HAS_AETH } else { 0 },
            iface: (i % 3 == 1) as u16,
            frame: u64::from(i) + 1,
            src_ip: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, i as u8],
            ..PacketRecord::default().with_roce(crate::RoceView {
                psn: i,
                aeth_msn: i * 10,
                ..crate::RoceView::default()
            })
        })
        .collect();
    let verdicts: Vec<Verdict> = (0..9u32)
        .map(|i| Verdict {
            flow_id: (i % 2 == 0).then_some(i / 2),
            retrans: (i % 4 != 3).then_some(i % 4 == 1),
            ..Verdict::default()
        })
        .collect();
    let mut by_row = PacketColumns::default();
    for (rec, v) in recs.iter().zip(&verdicts) {
        by_row.append(&PacketRow::new(rec, &ifaces, &[], *v));
    }
    let by_row = by_row.finish();
    let by_batch = PacketColumns::default().arrays_of(&recs, &verdicts, &ifaces, &[]);
    assert_eq!(by_row.len(), by_batch.len());
    for ((name, a), (batch_name, b)) in by_row.iter().zip(&by_batch) {
        assert_eq!(name, batch_name);
        assert_eq!(a.to_data(), b.to_data(), "column {name}");
    }
    let iface = by_batch
        .iter()
        .find(|(n, _)| *n == "iface")
        .unwrap()
        .1
        .clone();
    assert_eq!(
        texts_of(&iface)[1..3],
        [Some("eth1".into()), Some("eth0".into())]
    );
}

/// A string column's dictionary holds the strings its batch uses, each
/// once, in the order of first use: not every address seen so far.
#[test]
fn a_batch_dictionary_holds_only_its_own_strings() {
    let ip = |last: u8| {
        let mut a = [0u8; 16];
        a[10..].copy_from_slice(&[0xff, 0xff, 10, 0, 0, last]);
        a
    };
    let rec = |src: u8, dst: u8, has_ip: bool| PacketRecord {
        kind: Kind::Roce as u8,
        flags: if has_ip { f::HAS_IPV4 | f::HAS_UDP } else { 0 },
        src_ip: ip(src),
        dst_ip: ip(dst),
        ..PacketRecord::default()
    };
    let ifaces = ["eth0".to_string()];
    let mut cols = PacketColumns::default();
    let mut arrays = |recs: &[PacketRecord]| {
        let verdicts = vec![Verdict::default(); recs.len()];
        let columns = cols.arrays_of(recs, &verdicts, &ifaces, &[]);
        let (_, a) = columns.iter().find(|(n, _)| *n == "src_ip").unwrap();
        let dict = a.as_dictionary::<UInt32Type>();
        let values: Vec<&str> = dict.values().as_string::<i32>().iter().flatten().collect();
        (
            texts_of(a),
            values.into_iter().map(String::from).collect::<Vec<_>>(),
        )
    };
    let s = |v: &str| Some(v.to_string());
    let (rows, values) = arrays(&[rec(1, 2, true), rec(3, 1, true), rec(1, 3, true)]);
    assert_eq!(rows, [s("10.0.0.1"), s("10.0.0.3"), s("10.0.0.1")]);
    assert_eq!(values, ["10.0.0.1", "10.0.0.3"]);
    // Known addresses, a new one and a null: keys start afresh.
    let (rows, values) = arrays(&[rec(3, 1, true), rec(9, 1, false), rec(4, 1, true)]);
    assert_eq!(rows, [s("10.0.0.3"), None, s("10.0.0.4")]);
    assert_eq!(values, ["10.0.0.3", "10.0.0.4"]);
}

/// An all-null column is made once per type and length and shared after:
/// right type, length and nulls whichever batch asks.
#[test]
fn all_null_columns_are_shared() {
    use super::columns::{null_array, text_type};
    use arrow_array::types::{ArrowPrimitiveType, Int64Type};
    let a = null_array(&Int64Type::DATA_TYPE, 4096);
    let b = null_array(&Int64Type::DATA_TYPE, 4096);
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    assert_eq!((a.len(), a.null_count()), (4096, 4096));
    let short = null_array(&Int64Type::DATA_TYPE, 10);
    assert_eq!((short.len(), short.null_count()), (10, 10));
    let text = null_array(&text_type(), 10);
    assert_eq!(text.data_type(), &text_type());
    assert_eq!(text.null_count(), 10);
    assert_eq!(short.data_type(), &DataType::Int64);
}
