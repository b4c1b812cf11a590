//! `packets.parquet`: one row per RoCE, CNP, UET, PFC, PAUSE or malformed
//! frame.
//!
//! The contract's columns come first, in its order; after them, fields the
//! contract does not name but a Wireshark user would look for:
//! `outer_vlan`, `erspan`, `ieth_rkey`, `deth_qkey`, `deth_src_qp`,
//! `atomic_va`, `atomic_rkey`, `atomic_swap_add`, `atomic_compare`,
//! `atomic_orig` and `icrc` (the value on the wire); then `transport` and
//! each transport's own prefixed columns, as its module declares them
//! (`transport::PACKET_COLUMNS`, the transports' list).
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
use arrow_array::ArrayRef;
use arrow_array::types::Int64Type;
use arrow_buffer::NullBuffer;
use rocescope_common::wire::TransportId;
use rocescope_common::{PacketRecord, flags as f};

use super::format::Widen;
use super::{ColumnEncoding, Columns};
use crate::addr::{Ip, Mac};
use crate::analyze::Verdict;
use crate::transport::PACKET_COLUMNS;
mod columns;
use columns::{
    Batch, Texts, and, boolean, kind_texts, link_texts, one_text, primitive, timestamps,
    transport_texts, validity,
};

use crate::transport::packet_columns::{
    TransportColumns, Value, dictionary_count, dictionary_names,
};

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
        dictionary: Some(&FEW_VALUES),
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
///
/// These, then the transports' own columns that say so
/// ([`PacketColumn::dictionary`](crate::transport::packet_columns::PacketColumn)).
const FEW_VALUES: [&str; FEW_SHARED.len() + FEW_TRANSPORT] = few_values();

/// The shared and RoCE's columns with few values.
const FEW_SHARED: [&str; 26] = [
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
];

/// How many of the transports' own columns have few values.
const FEW_TRANSPORT: usize = dictionary_count(&PACKET_COLUMNS);

const fn few_values() -> [&'static str; FEW_SHARED.len() + FEW_TRANSPORT] {
    let transports: [&str; FEW_TRANSPORT] = dictionary_names(&PACKET_COLUMNS);
    let mut out = [""; FEW_SHARED.len() + FEW_TRANSPORT];
    let mut i = 0;
    while i < out.len() {
        out[i] = if i < FEW_SHARED.len() {
            FEW_SHARED[i]
        } else {
            transports[i - FEW_SHARED.len()]
        };
        i += 1;
    }
    out
}

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
        // The same for whose transport block each record holds; RoCE's
        // own columns are null on the rows of the transports beside it.
        let transports: Vec<Option<TransportId>> = recs.iter().map(|r| r.transport()).collect();
        let not_beside = validity(&transports, |t| !beside_roce(*t));
        // The transports beside RoCE that have rows in this batch (none
        // in a RoCE batch: their columns are then all null, at no pass).
        let beside: Vec<&TransportColumns> = PACKET_COLUMNS
            .iter()
            .copied()
            .filter(|c| transports.contains(&Some(c.transport)))
            .collect();
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
        // `link` and `transport` hold one string in nearly every batch
        // ("roce"): then its rows are the one entry's key, with no
        // per-row dictionary lookup (the writer interns the strings
        // itself, so the file is the same either way).
        let link = if flags.iter().all(|fl| fl & f::IB_LRH == 0) {
            one_text("roce", recs.len(), &not_beside)
        } else {
            link_texts().column(
                recs.iter()
                    .zip(&transports)
                    .map(|(r, t)| (!beside_roce(*t)).then_some(u32::from(r.has(f::IB_LRH)))),
            )
        };
        let transport = if not_beside.is_none() {
            // Each row RoCE's or none (PFC, PAUSE, malformed).
            let roce = validity(&transports, Option::is_some);
            one_text(TransportId::Roce.entry().name, recs.len(), &roce)
        } else {
            transport_texts().column(transports.iter().map(|t| t.map(|t| t.index() as u32)))
        };
        let psn = neutral_psn(&b, &bth, &transports, &beside);
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
                b.u8s(&and(has(f::HAS_GRH | f::HAS_UDP), &not_beside), |r| {
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
        for set in PACKET_COLUMNS {
            transport_columns(&b, set, &transports, &beside, &mut columns);
        }
        columns
    }
}

/// A record of a transport beside RoCE (not RoCE's, and not a record
/// without a transport: PFC, PAUSE, malformed).
#[inline]
fn beside_roce(t: Option<TransportId>) -> bool {
    t.is_some_and(|t| t != TransportId::Roce)
}

/// The transport-neutral `psn`: the BTH's, or what the record's transport
/// beside RoCE calls its PSN ([`TransportColumns::psn`], UET's PDS PSN).
/// `bth`: the rows with a BTH; `beside`: the transports beside RoCE with
/// rows in the batch.
fn neutral_psn(
    b: &Batch<'_>,
    bth: &Option<NullBuffer>,
    transports: &[Option<TransportId>],
    beside: &[&TransportColumns],
) -> ArrayRef {
    if beside.is_empty() {
        // Every RoCE batch: the BTH's, straight.
        return b.u32s(bth, |r| r.roce().psn);
    }
    let theirs: Vec<Option<u32>> =
        b.0.iter()
            .zip(transports)
            .map(|(r, t)| {
                let set = beside.iter().find(|c| Some(c.transport) == *t)?;
                (set.psn)(r)
            })
            .collect();
    let rows: Vec<(&PacketRecord, Option<u32>)> = b.0.iter().zip(theirs).collect();
    let valid = validity(&rows, |(r, p)| r.flags & f::HAS_BTH != 0 || p.is_some());
    primitive::<Int64Type, _>(&rows, &valid, |(r, p)| match p {
        Some(p) => p.widen(),
        None => r.roce().psn.widen(),
    })
}

/// `set`'s columns, appended to `out`: null where the record is not its
/// transport's or lacks the field. `beside`: the transports beside RoCE
/// with rows in the batch.
fn transport_columns(
    b: &Batch<'_>,
    set: &TransportColumns,
    transports: &[Option<TransportId>],
    beside: &[&TransportColumns],
    out: &mut Vec<(&'static str, ArrayRef)>,
) {
    let len = transports.len();
    // Which of its fields each row holds (0 on every other record).
    let present: Vec<u32> = if beside.iter().any(|c| c.transport == set.transport) {
        b.0.iter()
            .zip(transports)
            .map(|(r, t)| {
                if *t == Some(set.transport) {
                    (set.present)(r)
                } else {
                    0
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    let any = present.iter().fold(0, |a, p| a | p);
    for c in set.columns {
        let nulls = if any & c.present == 0 {
            // The common case, every RoCE batch: no pass over the rows.
            Some(NullBuffer::new_null(len))
        } else {
            validity(&present, |p| p & c.present != 0)
        };
        let column = match c.value {
            Value::U8(v) => b.u8s(&nulls, v),
            Value::U16(v) => b.u16s(&nulls, v),
            Value::U32(v) => b.u32s(&nulls, v),
            Value::U64(v) => b.u64s(&nulls, v),
        };
        out.push((c.name, column));
    }
}

#[cfg(test)]
mod tests;
