//! `packets.parquet`: one row per RoCE, CNP, PFC, PAUSE or malformed frame.
//!
//! The contract's columns come first, in its order; after them, fields the
//! contract does not name but a Wireshark user would look for:
//! `outer_vlan`, `erspan`, `ieth_rkey`, `deth_qkey`, `deth_src_qp`,
//! `atomic_va`, `atomic_rkey`, `atomic_swap_add`, `atomic_compare`,
//! `atomic_orig` and `icrc` (the value on the wire).
use arrow_array::builder::{
    BooleanBuilder, Int64Builder, StringBuilder, UInt8Builder, UInt16Builder, UInt32Builder,
    UInt64Builder,
};
use rocescope_common::{PacketRecord, flags as f};

use super::format::{AddrBuilder, Ip, Mac};
use crate::columns;

/// One `packets.parquet` row: the record, its interface's name, and what the
/// analyzer said of it.
pub struct PacketRow<'a> {
    pub rec: &'a PacketRecord,
    pub iface: &'a str,
    pub flow_id: Option<u32>,
    pub retrans: Option<bool>,
}

impl<'a> PacketRow<'a> {
    /// The row for `rec`, its interface named from the run's `ifaces`.
    pub fn new(
        rec: &'a PacketRecord,
        ifaces: &'a [String],
        verdict: crate::analyze::Verdict,
    ) -> Self {
        PacketRow {
            rec,
            iface: super::iface_name(ifaces, rec.iface),
            flow_id: verdict.flow_id,
            retrans: verdict.retrans,
        }
    }

    fn when<T>(&self, flag: u32, value: T) -> Option<T> {
        self.rec.has(flag).then_some(value)
    }
    fn bth<T>(&self, value: T) -> Option<T> {
        self.when(f::HAS_BTH, value)
    }
    fn bth_bit(&self, bit: u32) -> Option<bool> {
        self.bth(self.rec.has(bit))
    }
    fn ip<T>(&self, value: T) -> Option<T> {
        self.when(f::HAS_IPV4 | f::HAS_IPV6, value)
    }
    fn pfc_quanta(&self, priority: usize) -> Option<u16> {
        self.when(f::HAS_PFC, self.rec.pfc_quanta[priority])
    }
    /// The L2 addresses exist unless the link layer had none (Linux cooked).
    fn mac(&self, mac: [u8; 6]) -> Option<Mac> {
        (self.rec.src_mac != [0; 6] || self.rec.dst_mac != [0; 6]).then_some(Mac(mac))
    }
}

columns! {
    /// The builders of `packets.parquet`.
    pub struct PacketColumns for PacketRow<'a> {
        frame: UInt64Builder = |r| Some(r.rec.frame),
        ts_ns: Int64Builder = |r| Some(r.rec.ts_ns as i64),
        iface: StringBuilder = |r| Some(r.iface),
        kind: StringBuilder = |r| Some(r.rec.kind().as_str()),
        frame_len: UInt32Builder = |r| Some(r.rec.frame_len),
        cap_len: UInt32Builder = |r| Some(r.rec.cap_len),
        vlan: UInt16Builder = |r| r.when(f::HAS_VLAN, r.rec.vlan),
        pcp: UInt8Builder = |r| r.when(f::HAS_VLAN, r.rec.pcp),
        src_mac: AddrBuilder<Mac> = |r| r.mac(r.rec.src_mac),
        dst_mac: AddrBuilder<Mac> = |r| r.mac(r.rec.dst_mac),
        src_ip: AddrBuilder<Ip> = |r| r.ip(Ip(r.rec.src_ip)),
        dst_ip: AddrBuilder<Ip> = |r| r.ip(Ip(r.rec.dst_ip)),
        dscp: UInt8Builder = |r| r.ip(r.rec.dscp),
        ecn: UInt8Builder = |r| r.ip(r.rec.ecn),
        udp_sport: UInt16Builder = |r| r.when(f::HAS_UDP, r.rec.udp_sport),
        opcode: UInt8Builder = |r| r.bth(r.rec.opcode),
        se: BooleanBuilder = |r| r.bth_bit(f::SE),
        migreq: BooleanBuilder = |r| r.bth_bit(f::MIGREQ),
        pad_count: UInt8Builder = |r| r.bth(r.rec.pad_count),
        tver: UInt8Builder = |r| r.bth(r.rec.tver),
        pkey: UInt16Builder = |r| r.bth(r.rec.pkey),
        fecn: BooleanBuilder = |r| r.bth_bit(f::FECN),
        becn: BooleanBuilder = |r| r.bth_bit(f::BECN),
        dest_qp: UInt32Builder = |r| r.bth(r.rec.dest_qp),
        ack_req: BooleanBuilder = |r| r.bth_bit(f::ACK_REQ),
        psn: UInt32Builder = |r| r.bth(r.rec.psn),
        aeth_syndrome: UInt8Builder = |r| r.when(f::HAS_AETH, r.rec.aeth_syndrome),
        aeth_msn: UInt32Builder = |r| r.when(f::HAS_AETH, r.rec.aeth_msn),
        reth_va: UInt64Builder = |r| r.when(f::HAS_RETH, r.rec.reth_va),
        reth_rkey: UInt32Builder = |r| r.when(f::HAS_RETH, r.rec.reth_rkey),
        reth_len: UInt32Builder = |r| r.when(f::HAS_RETH, r.rec.reth_len),
        imm: UInt32Builder = |r| r.when(f::HAS_IMMDT, r.rec.imm),
        payload_len: UInt32Builder = |r| r.when(f::HAS_PAYLOAD_LEN, r.rec.payload_len),
        icrc_ok: BooleanBuilder = |r| r.rec.icrc_ok(),
        pfc_enable: UInt8Builder = |r| r.when(f::HAS_PFC, r.rec.pfc_enable),
        pfc_quanta_0: UInt16Builder = |r| r.pfc_quanta(0),
        pfc_quanta_1: UInt16Builder = |r| r.pfc_quanta(1),
        pfc_quanta_2: UInt16Builder = |r| r.pfc_quanta(2),
        pfc_quanta_3: UInt16Builder = |r| r.pfc_quanta(3),
        pfc_quanta_4: UInt16Builder = |r| r.pfc_quanta(4),
        pfc_quanta_5: UInt16Builder = |r| r.pfc_quanta(5),
        pfc_quanta_6: UInt16Builder = |r| r.pfc_quanta(6),
        pfc_quanta_7: UInt16Builder = |r| r.pfc_quanta(7),
        pause_quanta: UInt16Builder = |r| r.when(f::HAS_PAUSE, r.rec.pause_quanta),
        flow_id: UInt32Builder = |r| r.flow_id,
        retrans: BooleanBuilder = |r| r.retrans,
        outer_vlan: UInt16Builder = |r| r.when(f::HAS_OUTER_VLAN, r.rec.outer_vlan),
        erspan: BooleanBuilder = |r| Some(r.rec.has(f::ERSPAN)),
        ieth_rkey: UInt32Builder = |r| r.when(f::HAS_IETH, r.rec.ieth_rkey),
        deth_qkey: UInt32Builder = |r| r.when(f::HAS_DETH, r.rec.deth_qkey),
        deth_src_qp: UInt32Builder = |r| r.when(f::HAS_DETH, r.rec.deth_src_qp),
        atomic_va: UInt64Builder = |r| r.when(f::HAS_ATOMIC_ETH, r.rec.atomic_va),
        atomic_rkey: UInt32Builder = |r| r.when(f::HAS_ATOMIC_ETH, r.rec.atomic_rkey),
        atomic_swap_add: UInt64Builder = |r| r.when(f::HAS_ATOMIC_ETH, r.rec.atomic_swap_add),
        atomic_compare: UInt64Builder = |r| r.when(f::HAS_ATOMIC_ETH, r.rec.atomic_compare),
        atomic_orig: UInt64Builder = |r| r.when(f::HAS_ATOMIC_ACK_ETH, r.rec.atomic_orig),
        icrc: UInt32Builder = |r| r.when(f::ICRC_CHECKED, r.rec.icrc),
    }
}
