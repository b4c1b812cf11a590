//! A PDC's key: the one way UET's trackers name a packet delivery context
//! seen at a tap (docs/analysis.md, "UET: PDCs").
//!
//! A PDC is a pair of PDC ids, one at each end; every PDS header but
//! RUDI's and UUD's carries the sender's (`spdcid`), and all but a SYN
//! request the receiver's (`dpdcid`). So one direction of a PDC at one tap
//! is named by the addresses and the sending end's PDC id: a SYN request,
//! sent before its `dpdcid` is known, joins its PDC with no lookup, and
//! the reverse direction (ACKs, NACKs, responses) is the key whose
//! `spdcid` is this one's `dpdcid`.
use rocescope_common::wire::uet::uet_present as present;
use rocescope_common::wire::{Recognition, TransportId};
use rocescope_common::{PacketRecord, flags};

/// One direction of a PDC at one tap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PdcKey {
    pub iface: u16,
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    /// The sending end's PDC id.
    pub spdcid: u16,
}

impl PdcKey {
    /// The PDC direction `rec` belongs to; `None` for a record with no
    /// PDC id (RUDI, UUD, a TSS-encrypted or cut PDS header).
    pub fn of(rec: &PacketRecord) -> Option<PdcKey> {
        let u = rec.uet();
        (u.present & present::PDC != 0).then_some(PdcKey {
            iface: rec.iface,
            src_ip: rec.src_ip,
            dst_ip: rec.dst_ip,
            spdcid: u.spdcid,
        })
    }

    /// The reverse direction of `rec`'s PDC (where its `dpdcid` sends
    /// from); `None` when `rec` carries no `dpdcid` (a SYN request).
    pub fn reverse_of(rec: &PacketRecord) -> Option<PdcKey> {
        let u = rec.uet();
        (u.present & present::DPDCID != 0).then_some(PdcKey {
            iface: rec.iface,
            src_ip: rec.dst_ip,
            dst_ip: rec.src_ip,
            spdcid: u.dpdcid,
        })
    }
}

/// What a PDC direction's frames were recognised by (its first frame's):
/// UDP to the port this run recognises UET on, or native IP mode's
/// protocol number (`--udp-port uet=`, `--ip-proto uet=`): the Decode As
/// its `flows.parquet` row gives (docs/tables.md, `decode_as`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrier {
    Udp(u16),
    Ip(u8),
}

impl Default for Carrier {
    fn default() -> Self {
        Carrier::Udp(Recognition::DEFAULT.udp_port(TransportId::Uet))
    }
}

impl Carrier {
    /// `rec`'s, in a run recognising UET by `reg`.
    pub fn of(rec: &PacketRecord, reg: &Recognition) -> Carrier {
        if rec.has(flags::HAS_UDP) {
            Carrier::Udp(reg.udp_port(TransportId::Uet))
        } else {
            Carrier::Ip(reg.ip_protocol(TransportId::Uet))
        }
    }
}
