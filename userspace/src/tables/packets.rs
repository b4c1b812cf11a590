//! `packets.parquet`: one row per RoCE, CNP, UET, PFC, PAUSE or malformed
//! frame.
//!
//! The contract's columns come first, in its order; after them, fields the
//! contract does not name but a Wireshark user would look for:
//! `outer_vlan`, `erspan`, `ieth_rkey`, `deth_qkey`, `deth_src_qp`,
//! `atomic_va`, `atomic_rkey`, `atomic_swap_add`, `atomic_compare`,
//! `atomic_orig` and `icrc` (the value on the wire); then `transport` and
//! each transport's own prefixed columns (UET's: `transport::uet`).
//!
//! Unlike the other tables (row by row into Arrow builders, [`crate::columns`]),
//! this one is built a batch at a time: rows are buffered as records, then
//! each column is one pass over the batch into a plain `Vec` and a validity
//! bitmap computed from the records' `HAS_*` flags, instead of ~60 builder
//! calls per row (each with its capacity and null-bitmap bookkeeping). A
//! column that is all null in a batch costs nothing but its length, one
//! never null carries no bitmap, and address strings are formatted once per
//! distinct address. String columns are handed to the writer as Arrow
//! dictionary arrays (the batch's distinct strings and a key per row), which
//! spares copying every row's text; the file stores no Arrow schema
//! ([`ColumnEncoding::arrow_schema`]), so readers see the plain strings the
//! Parquet schema declares, as before.
use std::collections::HashMap;
use std::fmt::Display;
use std::hash::Hash;
use std::sync::Arc;

use arrow_array::types::{
    ArrowPrimitiveType, Int16Type, Int32Type, Int64Type, TimestampMicrosecondType, UInt32Type,
};
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, PrimitiveArray, StringArray, UInt32Array,
    new_null_array,
};
use arrow_buffer::{BooleanBuffer, NullBuffer, ScalarBuffer};
use arrow_schema::DataType;
use rocescope_common::wire::TransportId;
use rocescope_common::{Kind, PacketRecord, flags as f};

use super::format::{Widen, micros, timestamp_type};
use super::{ColumnEncoding, Columns};
use crate::addr::{Ip, Mac};
use crate::analyze::Verdict;
use crate::analyze::hash::FastState;
use crate::transport::uet;

/// One `packets.parquet` row: the record, its interface's name, and what the
/// analyzer said of it.
pub struct PacketRow<'a> {
    pub rec: &'a PacketRecord,
    pub iface: &'a str,
    /// The capture file it was read from (None for the live tap).
    pub file: Option<&'a str>,
    pub flow_id: Option<u32>,
    pub retrans: Option<bool>,
    pub mirror_copy: bool,
    pub icrc_unknown: bool,
}

impl<'a> PacketRow<'a> {
    /// The row for `rec`, its interface named from the run's `ifaces`, its
    /// file from its `files`.
    pub fn new(
        rec: &'a PacketRecord,
        ifaces: &'a [String],
        files: &'a [String],
        verdict: Verdict,
    ) -> Self {
        PacketRow {
            rec,
            iface: super::iface_name(ifaces, rec.iface),
            file: files.get(usize::from(rec.capture)).map(String::as_str),
            flow_id: verdict.flow_id,
            retrans: verdict.retrans,
            mirror_copy: verdict.mirror_copy,
            icrc_unknown: verdict.icrc_unknown,
        }
    }
}

/// What a buffered row holds besides its record.
#[derive(Clone, Copy)]
struct RowExtra {
    /// Key of the interface's name in [`PacketColumns::ifaces`].
    iface: u32,
    /// Key of the file's name in [`RowTexts::files`].
    file: Option<u32>,
    flow_id: Option<u32>,
    retrans: Option<bool>,
    mirror_copy: bool,
    icrc_unknown: bool,
}

/// The rows of `packets.parquet` not yet handed over as arrays.
#[derive(Default)]
pub struct PacketColumns {
    recs: Vec<PacketRecord>,
    extra: Vec<RowExtra>,
    texts: RowTexts,
    /// [`PacketColumns::arrays_of`]'s key of each interface's name, by index.
    iface_keys: Vec<Option<u32>>,
    /// The same for the files.
    file_keys: Vec<Option<Option<u32>>>,
}

/// The string columns' distinct values.
#[derive(Default)]
struct RowTexts {
    ifaces: Texts<Box<str>>,
    files: Texts<Box<str>>,
    macs: Texts<Mac>,
    ips: Texts<Ip>,
}

impl Columns for PacketColumns {
    type Row<'a> = PacketRow<'a>;
    /// Each column is one pass over the buffered records: 4096 of them
    /// (800 KB) stay in the core's L2 cache across the passes; 16k did not.
    const BATCH_ROWS: usize = 4096;
    /// A few MB encoded, reached within the first second of a capture; fewer,
    /// larger groups keep the dictionaries (one per group) few.
    const ROW_GROUP_ROWS: usize = 256 * 1024;
    const ENCODING: ColumnEncoding = ColumnEncoding {
        dictionary: Some(FEW_VALUES),
        statistics: Some(&["frame", "ts_ns", "ts"]),
        delta: &["frame", "ts_ns", "ts", "psn", "aeth_msn", "icrc"],
        snappy: false,
        arrow_schema: false,
    };

    #[inline]
    fn append(&mut self, row: &PacketRow<'_>) {
        let iface = self.texts.ifaces.key_str(row.iface);
        let file = row.file.map(|f| self.texts.files.key_str(f));
        self.recs.push(*row.rec);
        self.extra.push(RowExtra {
            iface,
            file,
            flow_id: row.flow_id,
            retrans: row.retrans,
            mirror_copy: row.mirror_copy,
            icrc_unknown: row.icrc_unknown,
        });
    }

    fn len(&self) -> usize {
        self.recs.len()
    }

    fn finish(&mut self) -> Vec<(&'static str, ArrayRef)> {
        let columns = self.texts.arrays(&self.recs, &self.extra);
        self.recs.clear();
        self.extra.clear();
        self.texts.forget_if_over(TEXTS_KEPT);
        columns
    }
}

impl PacketColumns {
    /// The columns of `recs` (with their verdicts, interfaces named from
    /// `ifaces`) built straight from the slice: the pipeline's batches are
    /// as large as ours, so copying their records into the buffer first
    /// would only cost time. Nothing buffered is touched.
    pub fn arrays_of(
        &mut self,
        recs: &[PacketRecord],
        verdicts: &[Verdict],
        ifaces: &[String],
        files: &[String],
    ) -> Vec<(&'static str, ArrayRef)> {
        let mut extra = Vec::with_capacity(recs.len());
        // One name lookup per interface and batch, not per row.
        self.iface_keys.clear();
        self.file_keys.clear();
        for (rec, v) in recs.iter().zip(verdicts) {
            let i = usize::from(rec.iface);
            if self.iface_keys.len() <= i {
                self.iface_keys.resize(i + 1, None);
            }
            let texts = &mut self.texts;
            let iface = *self.iface_keys[i]
                .get_or_insert_with(|| texts.ifaces.key_str(super::iface_name(ifaces, rec.iface)));
            let c = usize::from(rec.capture);
            if self.file_keys.len() <= c {
                self.file_keys.resize(c + 1, None);
            }
            let file = *self.file_keys[c]
                .get_or_insert_with(|| files.get(c).map(|f| texts.files.key_str(f)));
            extra.push(RowExtra {
                iface,
                file,
                flow_id: v.flow_id,
                retrans: v.retrans,
                mirror_copy: v.mirror_copy,
                icrc_unknown: v.icrc_unknown,
            });
        }
        let columns = self.texts.arrays(&recs[..extra.len()], &extra);
        self.texts.forget_if_over(TEXTS_KEPT);
        columns
    }
}

/// Columns with few distinct values in a capture: names, addresses, header
/// fields that are constant per flow or per host, sizes. Dictionary pages
/// shrink them to a few bits a row, so encoding has less to do
/// (other columns are plain: the dictionary would only hash every value to
/// fall back to plain). Statistics only for `frame` and `ts_ns`, the columns
/// a reader prunes row groups by: min/max of addresses, QPs or PSNs span
/// every row group of an interleaved capture, and cost a comparison per value.
/// On the bench capture's 500k rows: encoding 0.214 -> 0.172 s CPU, file
/// 14.8 -> 9.0 MB (against no dictionary and row-group statistics everywhere).
///
/// No Snappy: dictionary indices (a byte or so a row) do not compress, and
/// the columns it did shrink were mostly `frame` and `ts_ns` (8 of 15 MB
/// uncompressed, halved), which delta encoding shrinks to a few bits a row
/// instead (0.45 MB together). File 9.1 -> 7.4 MB, `analyze` 4-7 % less CPU.
///
/// The 32-bit fields are `Int64` columns (docs/tables.md, "Numbers"): plain,
/// they took 8 bytes a row where 4 were used. `psn`, `aeth_msn` and `icrc`,
/// in nearly every RoCE row, are delta encoded too: `psn` (interleaved QPs)
/// from 4.0 to ~0.9 MB on the bench capture.
const FEW_VALUES: &[&str] = &[
    "iface",
    "file",
    "kind",
    "frame_len",
    "cap_len",
    "vlan",
    "pcp",
    "src_mac",
    "dst_mac",
    "src_ip",
    "dst_ip",
    "dscp",
    "ecn",
    "roce_version",
    "udp_sport",
    "opcode",
    "pad_count",
    "tver",
    "pkey",
    "dest_qp",
    "aeth_syndrome",
    "reth_len",
    "payload_len",
    "flow_id",
    "link",
    "transport",
    "uet_pds_type",
    "uet_next_header",
    "uet_flags",
    "uet_spdcid",
    "uet_dpdcid",
    "uet_entropy",
    "uet_ses_opcode",
    "uet_job_id",
];

/// Distinct addresses kept formatted between batches.
const TEXTS_KEPT: usize = 1 << 16;

impl RowTexts {
    /// Bounded memory on a long run over ever new hosts: start afresh.
    fn forget_if_over(&mut self, max: usize) {
        self.macs.forget_if_over(max);
        self.ips.forget_if_over(max);
    }

    /// Every column of `recs` (`extra[i]` for `recs[i]`), in the table's order.
    fn arrays(
        &mut self,
        recs: &[PacketRecord],
        extra: &[RowExtra],
    ) -> Vec<(&'static str, ArrayRef)> {
        // The batch's flags in one place: the ~25 validity and boolean
        // passes below read 16 KB instead of striding over 800 KB of records.
        let flags: Vec<u32> = recs.iter().map(|r| r.flags).collect();
        let has = |flag: u32| validity(&flags, |fl| fl & flag != 0);
        // The same for whose transport block each record holds, and which
        // of UET's fields it has (0 on every other record).
        let transports: Vec<Option<TransportId>> = recs.iter().map(|r| r.transport()).collect();
        let uet_present: Vec<u16> = recs.iter().map(|r| r.uet().present).collect();
        let not_uet = validity(&transports, |t| *t != Some(TransportId::Uet));
        let vlan = has(f::HAS_VLAN);
        let tclass = validity(&flags, |fl| f::traffic_class(*fl));
        let bth = has(f::HAS_BTH);
        let aeth = has(f::HAS_AETH);
        let reth = has(f::HAS_RETH);
        let pfc = has(f::HAS_PFC);
        let deth = has(f::HAS_DETH);
        let atomic = has(f::HAS_ATOMIC_ETH);
        // A sniffer's rewritten frame: its ICRC result says nothing.
        let icrc = if extra.iter().any(|e| e.icrc_unknown) {
            let known: Vec<u32> = flags
                .iter()
                .zip(extra)
                .map(|(&fl, e)| {
                    if e.icrc_unknown {
                        fl & !f::ICRC_CHECKED
                    } else {
                        fl
                    }
                })
                .collect();
            validity(&known, |fl| fl & f::ICRC_CHECKED != 0)
        } else {
            has(f::ICRC_CHECKED)
        };
        // Linux cooked captures have no L2 addresses: null rather than zeros.
        let mac = validity(recs, |r| r.src_mac != [0; 6] || r.dst_mac != [0; 6]);
        let all = None;

        let b = Batch(recs);
        let bits = |nulls: &_, bit: u32| boolean(&flags, nulls, |fl| fl & bit != 0);
        let quanta = |p: usize| b.u16s(&pfc, |r| r.link_control().pfc_quanta[p]);
        let iface = self.ifaces.column(extra.iter().map(|e| Some(e.iface)));
        let file = self.files.column(extra.iter().map(|e| e.file));
        let kind = kind_texts().column(recs.iter().map(|r| Some(u32::from(r.kind() as u8))));
        let src_mac = self.macs.column_of(recs, &mac, |r| Mac(r.src_mac));
        let dst_mac = self.macs.column_of(recs, &mac, |r| Mac(r.dst_mac));
        // RoCEv1's GIDs and InfiniBand's GIDs or LIDs are their addresses.
        let addrs = has(f::HAS_IPV4 | f::HAS_IPV6 | f::HAS_GRH | f::IB_LRH);
        let src_ip = self.ips.column_of(recs, &addrs, |r| Ip(r.src_ip));
        let dst_ip = self.ips.column_of(recs, &addrs, |r| Ip(r.dst_ip));
        let link =
            link_texts().column(recs.iter().zip(&transports).map(|(r, t)| {
                (*t != Some(TransportId::Uet)).then_some(u32::from(r.has(f::IB_LRH)))
            }));
        let transport =
            transport_texts().column(transports.iter().map(|t| t.map(|t| t.index() as u32)));
        // The transport-neutral PSN: the BTH's, or UET's PDS PSN.
        let bth_or_pds: Vec<(u32, u16)> = flags
            .iter()
            .copied()
            .zip(uet_present.iter().copied())
            .collect();
        let psn_valid = validity(&bth_or_pds, |&(fl, u)| {
            fl & f::HAS_BTH != 0 || u & rocescope_common::wire::uet::uet_present::PSN != 0
        });
        let psn = b.u32s(&psn_valid, |r| match r.transport() {
            Some(TransportId::Uet) => uet::psn(r.uet()).unwrap_or(0),
            _ => r.roce().psn,
        });
        let flow_id =
            primitive::<Int64Type, _>(extra, &validity(extra, |e| e.flow_id.is_some()), |e| {
                e.flow_id.unwrap_or(0).widen()
            });
        let retrans = boolean(extra, &validity(extra, |e| e.retrans.is_some()), |e| {
            e.retrans == Some(true)
        });
        let mirror_copy = boolean(extra, &None, |e| e.mirror_copy);
        let mut columns = vec![
            ("frame", b.u64s(&all, |r| r.frame)),
            (
                "ts_ns",
                primitive::<Int64Type, _>(recs, &all, |r| r.ts_ns as i64),
            ),
            ("ts", timestamps(recs)),
            ("iface", iface),
            ("file", file),
            ("kind", kind),
            ("frame_len", b.u32s(&all, |r| r.frame_len)),
            ("cap_len", b.u32s(&all, |r| r.cap_len)),
            ("vlan", b.u16s(&vlan, |r| r.vlan)),
            ("pcp", b.u8s(&vlan, |r| r.pcp)),
            ("src_mac", src_mac),
            ("dst_mac", dst_mac),
            ("src_ip", src_ip),
            ("dst_ip", dst_ip),
            ("dscp", b.u8s(&tclass, |r| r.dscp)),
            ("ecn", b.u8s(&tclass, |r| r.ecn)),
            (
                "roce_version",
                b.u8s(&and(has(f::HAS_GRH | f::HAS_UDP), &not_uet), |r| {
                    r.roce_version().unwrap_or(0)
                }),
            ),
            ("udp_sport", b.u16s(&has(f::HAS_UDP), |r| r.udp_sport)),
            ("opcode", b.u8s(&bth, |r| r.roce().opcode)),
            ("se", bits(&bth, f::SE)),
            ("migreq", bits(&bth, f::MIGREQ)),
            ("pad_count", b.u8s(&bth, |r| r.roce().pad_count)),
            ("tver", b.u8s(&bth, |r| r.roce().tver)),
            ("pkey", b.u16s(&bth, |r| r.roce().pkey)),
            ("fecn", bits(&bth, f::FECN)),
            ("becn", bits(&bth, f::BECN)),
            ("dest_qp", b.u32s(&bth, |r| r.roce().dest_qp)),
            ("ack_req", bits(&bth, f::ACK_REQ)),
            ("psn", psn),
            ("aeth_syndrome", b.u8s(&aeth, |r| r.roce().aeth_syndrome)),
            ("aeth_msn", b.u32s(&aeth, |r| r.roce().aeth_msn)),
            ("reth_va", b.u64s(&reth, |r| r.roce().reth_va)),
            ("reth_rkey", b.u32s(&reth, |r| r.roce().reth_rkey)),
            ("reth_len", b.u32s(&reth, |r| r.roce().reth_len)),
            ("imm", b.u32s(&has(f::HAS_IMMDT), |r| r.roce().imm)),
            (
                "payload_len",
                b.u32s(&has(f::HAS_PAYLOAD_LEN), |r| r.payload_len),
            ),
            ("icrc_ok", bits(&icrc, f::ICRC_OK)),
            ("pfc_enable", b.u8s(&pfc, |r| r.link_control().pfc_enable)),
            ("pfc_quanta_0", quanta(0)),
            ("pfc_quanta_1", quanta(1)),
            ("pfc_quanta_2", quanta(2)),
            ("pfc_quanta_3", quanta(3)),
            ("pfc_quanta_4", quanta(4)),
            ("pfc_quanta_5", quanta(5)),
            ("pfc_quanta_6", quanta(6)),
            ("pfc_quanta_7", quanta(7)),
            (
                "pause_quanta",
                b.u16s(&has(f::HAS_PAUSE), |r| r.link_control().pause_quanta),
            ),
            ("flow_id", flow_id),
            ("retrans", retrans),
            ("mirror_copy", mirror_copy),
            (
                "outer_vlan",
                b.u16s(&has(f::HAS_OUTER_VLAN), |r| r.outer_vlan),
            ),
            ("erspan", bits(&all, f::ERSPAN)),
            (
                "ieth_rkey",
                b.u32s(&has(f::HAS_IETH), |r| r.roce().ieth_rkey),
            ),
            ("deth_qkey", b.u32s(&deth, |r| r.roce().deth_qkey)),
            ("deth_src_qp", b.u32s(&deth, |r| r.roce().deth_src_qp)),
            ("atomic_va", b.u64s(&atomic, |r| r.roce().atomic_va)),
            ("atomic_rkey", b.u32s(&atomic, |r| r.roce().atomic_rkey)),
            (
                "atomic_swap_add",
                b.u64s(&atomic, |r| r.roce().atomic_swap_add),
            ),
            (
                "atomic_compare",
                b.u64s(&atomic, |r| r.roce().atomic_compare),
            ),
            (
                "atomic_orig",
                b.u64s(&has(f::HAS_ATOMIC_ACK_ETH), |r| r.roce().atomic_orig),
            ),
            ("icrc", b.u32s(&icrc, |r| r.roce().icrc)),
            ("link", link),
            ("vcrc_ok", bits(&has(f::VCRC_CHECKED), f::VCRC_OK)),
            ("transport", transport),
        ];
        columns.extend(uet_columns(&b, &uet_present));
        columns
    }
}

/// UET's columns ([`uet::PACKET_COLUMNS`]), null where the record is not
/// UET's or lacks the field.
fn uet_columns(b: &Batch<'_>, present: &[u16]) -> Vec<(&'static str, ArrayRef)> {
    let any = present.iter().fold(0, |a, p| a | p);
    uet::PACKET_COLUMNS
        .iter()
        .map(|c| {
            let nulls = if any & c.present == 0 {
                // The common case, every RoCE batch: no pass over the rows.
                Some(NullBuffer::new_null(present.len()))
            } else {
                validity(present, |p| p & c.present != 0)
            };
            let column = match c.value {
                uet::Value::U8(v) => b.u8s(&nulls, |r| v(r.uet())),
                uet::Value::U16(v) => b.u16s(&nulls, |r| v(r.uet())),
                uet::Value::U32(v) => b.u32s(&nulls, |r| v(r.uet())),
                uet::Value::U64(v) => b.u64s(&nulls, |r| v(r.uet())),
            };
            (c.name, column)
        })
        .collect()
}

/// Rows valid in both `a` and `b`.
fn and(a: Option<NullBuffer>, b: &Option<NullBuffer>) -> Option<NullBuffer> {
    NullBuffer::union(a.as_ref(), b.as_ref())
}

/// Which rows hold a value. `None` when every row does: the array then
/// carries no bitmap at all.
fn validity<R>(rows: &[R], valid: impl Fn(&R) -> bool) -> Option<NullBuffer> {
    let bits = BooleanBuffer::collect_bool(rows.len(), |i| valid(&rows[i]));
    let nulls = NullBuffer::new(bits);
    (nulls.null_count() > 0).then_some(nulls)
}

/// True when `nulls` says that none of `len` rows holds a value.
fn all_null(nulls: &Option<NullBuffer>, len: usize) -> bool {
    len > 0 && nulls.as_ref().is_some_and(|n| n.null_count() == len)
}

/// A number column: `value` of every row (computed for null rows too, where
/// it is never written), null where `nulls` says so. Generic over `value` so
/// that each column is a loop of its own, inlined.
fn primitive<T: ArrowPrimitiveType, R>(
    rows: &[R],
    nulls: &Option<NullBuffer>,
    value: impl Fn(&R) -> T::Native,
) -> ArrayRef {
    if all_null(nulls, rows.len()) {
        return new_null_array(&T::DATA_TYPE, rows.len());
    }
    let values = ScalarBuffer::from(rows.iter().map(value).collect::<Vec<_>>());
    Arc::new(PrimitiveArray::<T>::new(values, nulls.clone()))
}

/// A boolean column: `value` of every row, null where `nulls` says so.
fn boolean<R>(rows: &[R], nulls: &Option<NullBuffer>, value: impl Fn(&R) -> bool) -> ArrayRef {
    let values = BooleanBuffer::collect_bool(rows.len(), |i| value(&rows[i]));
    Arc::new(BooleanArray::new(values, nulls.clone()))
}

/// The `ts` column: `ts_ns` as a UTC microsecond timestamp.
fn timestamps(recs: &[PacketRecord]) -> ArrayRef {
    let values = ScalarBuffer::from(recs.iter().map(|r| micros(r.ts_ns)).collect::<Vec<_>>());
    Arc::new(
        PrimitiveArray::<TimestampMicrosecondType>::new(values, None)
            .with_data_type(timestamp_type()),
    )
}

/// Number columns of a batch of records, by the field's width: each goes
/// into the signed type one width up ([`Widen`], docs/tables.md "Numbers").
struct Batch<'a>(&'a [PacketRecord]);

impl Batch<'_> {
    fn u8s(&self, nulls: &Option<NullBuffer>, v: impl Fn(&PacketRecord) -> u8) -> ArrayRef {
        primitive::<Int16Type, _>(self.0, nulls, |r| v(r).widen())
    }
    fn u16s(&self, nulls: &Option<NullBuffer>, v: impl Fn(&PacketRecord) -> u16) -> ArrayRef {
        primitive::<Int32Type, _>(self.0, nulls, |r| v(r).widen())
    }
    fn u32s(&self, nulls: &Option<NullBuffer>, v: impl Fn(&PacketRecord) -> u32) -> ArrayRef {
        primitive::<Int64Type, _>(self.0, nulls, |r| v(r).widen())
    }
    fn u64s(&self, nulls: &Option<NullBuffer>, v: impl Fn(&PacketRecord) -> u64) -> ArrayRef {
        primitive::<Int64Type, _>(self.0, nulls, |r| v(r).widen())
    }
}

/// `link`: native InfiniBand (an LRH) or not.
fn link_texts() -> Texts<Kind> {
    Texts {
        texts: vec!["roce".into(), "ib".into()],
        ..Texts::default()
    }
}

/// `transport`: the registry's names, keyed by [`TransportId::index`].
fn transport_texts() -> Texts<Kind> {
    Texts {
        texts: TransportId::ALL
            .iter()
            .map(|t| t.entry().name.into())
            .collect(),
        ..Texts::default()
    }
}

/// The `kind` column's names, keyed by [`Kind`]'s byte.
fn kind_texts() -> Texts<Kind> {
    Texts {
        keys: HashMap::default(),
        texts: (0..=Kind::Uet as u8)
            .map(|v| Kind::from_u8(v).as_str().into())
            .collect(),
        ..Texts::default()
    }
}

/// Distinct strings of a column, each formatted once: rows refer to them
/// by key, and a column is a dictionary array of the strings its batch uses.
struct Texts<K> {
    keys: HashMap<K, u32, FastState>,
    texts: Vec<Box<str>>,
    /// [`Texts::column`]'s scratch: the batch's index of each key it uses
    /// (`u32::MAX`: unused), and those keys in order.
    local: Vec<u32>,
    used: Vec<u32>,
}

impl<K> Default for Texts<K> {
    fn default() -> Self {
        Self {
            keys: HashMap::default(),
            texts: Vec::new(),
            local: Vec::new(),
            used: Vec::new(),
        }
    }
}

/// The Arrow type of the string columns: dictionary keys into the batch's
/// distinct strings (stored as plain UTF8 strings all the same).
fn text_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8))
}

impl Texts<Box<str>> {
    /// The key of `text`.
    #[inline]
    fn key_str(&mut self, text: &str) -> u32 {
        if let Some(&k) = self.keys.get(text) {
            return k;
        }
        let k = self.texts.len() as u32;
        self.keys.insert(text.into(), k);
        self.texts.push(text.into());
        k
    }
}

impl<K: Copy + Eq + Hash + Display> Texts<K> {
    /// The key of `value`, formatting it if it is new.
    #[inline]
    fn key(&mut self, value: K) -> u32 {
        let next = self.texts.len() as u32;
        let k = *self.keys.entry(value).or_insert(next);
        if k == next {
            self.texts.push(value.to_string().into_boxed_str());
        }
        k
    }

    /// A string column of `value` of every row, null where `nulls` says so.
    fn column_of(
        &mut self,
        recs: &[PacketRecord],
        nulls: &Option<NullBuffer>,
        value: impl Fn(&PacketRecord) -> K,
    ) -> ArrayRef {
        if all_null(nulls, recs.len()) {
            return new_null_array(&text_type(), recs.len());
        }
        let keys: Vec<Option<u32>> = recs
            .iter()
            .enumerate()
            .map(|(i, r)| match nulls {
                Some(n) if n.is_null(i) => None,
                _ => Some(self.key(value(r))),
            })
            .collect();
        self.column(keys.into_iter())
    }

    fn forget_if_over(&mut self, max: usize) {
        if self.texts.len() > max {
            self.keys.clear();
            self.texts.clear();
        }
    }
}

impl<K> Texts<K> {
    /// A string column of the texts `keys` name (`None`, or an unknown key:
    /// null): each distinct text once, in the order the rows first use it,
    /// and a key per row.
    fn column(&mut self, keys: impl ExactSizeIterator<Item = Option<u32>>) -> ArrayRef {
        let n = keys.len();
        if self.local.len() < self.texts.len() {
            self.local.resize(self.texts.len(), u32::MAX);
        }
        let mut rows = Vec::with_capacity(n);
        let mut valid = Vec::with_capacity(n);
        for key in keys {
            let slot = key.and_then(|k| self.local.get_mut(k as usize).map(|l| (k, l)));
            let row = match slot {
                Some((_, l)) if *l != u32::MAX => Some(*l),
                Some((k, l)) => {
                    *l = self.used.len() as u32;
                    self.used.push(k);
                    Some(*l)
                }
                None => None,
            };
            rows.push(row.unwrap_or(0));
            valid.push(row.is_some());
        }
        let values: StringArray = self
            .used
            .iter()
            .map(|&k| self.texts.get(k as usize).map(|t| &**t))
            .collect();
        for &k in &self.used {
            if let Some(l) = self.local.get_mut(k as usize) {
                *l = u32::MAX;
            }
        }
        self.used.clear();
        let nulls = NullBuffer::from(valid);
        let nulls = (nulls.null_count() > 0).then_some(nulls);
        let keys = UInt32Array::new(ScalarBuffer::from(rows), nulls);
        // Every key indexes `values` (one entry per key handed out), so
        // this cannot fail; were it to, the column would read as nulls.
        match DictionaryArray::<UInt32Type>::try_new(keys, Arc::new(values)) {
            Ok(d) => Arc::new(d),
            Err(_) => new_null_array(&text_type(), n),
        }
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;

    use super::*;

    /// A string column's values, row by row.
    /// The array of column `name` among a batch's columns.
    fn column(columns: &[(&'static str, ArrayRef)], name: &str) -> ArrayRef {
        columns
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, a)| a.clone())
            .unwrap_or_else(|| panic!("no column {name}"))
    }

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
                flags: f::HAS_IPV4
                    | f::HAS_UDP
                    | f::HAS_BTH
                    | if i % 3 == 0 { f::HAS_AETH } else { 0 },
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
}
