use crate::analyze::Severity;

use super::input::{FlowRef, Input, UNANSWERED_NS, unanswered};
use super::{Diagnosis, Evidence};

/// `unanswered-flows`' evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Unanswered {
    /// The flows, in flow order.
    pub flows: Vec<SilentFlow>,
    /// Their distinct (source, destination) pairs, sorted.
    pub host_pairs: Vec<([u8; 16], [u8; 16])>,
    /// [`UNANSWERED_NS`].
    pub threshold_ns: u64,
}

/// One unanswered flow: its request packets and how long it sent them.
#[derive(Clone, Debug, PartialEq)]
pub struct SilentFlow {
    pub flow: FlowRef,
    pub data_packets: u64,
    pub sent_ns: u64,
}

/// `unanswered-flows`: request flows sending for [`UNANSWERED_NS`] or more
/// whose destination sent nothing back to their source on their tap, on a
/// tap that recorded responses of other flows.
pub(crate) fn finding(x: &Input) -> Option<Diagnosis> {
    let silent = unanswered(x);
    if silent.is_empty() {
        return None;
    }
    let mut host_pairs: Vec<([u8; 16], [u8; 16])> =
        silent.iter().map(|f| (f.src_ip, f.dst_ip)).collect();
    host_pairs.sort_unstable();
    host_pairs.dedup();
    let ids: Vec<u32> = silent.iter().map(|f| f.id).collect();
    Some(Diagnosis {
        severity: Severity::Critical,
        impact: x.traffic_share(&ids),
        flows: ids,
        evidence: Evidence::Unanswered(Unanswered {
            flows: silent
                .iter()
                .map(|f| SilentFlow {
                    flow: FlowRef::from(*f),
                    data_packets: f.data_packets(),
                    sent_ns: f.last_ts - f.first_ts,
                })
                .collect(),
            host_pairs,
            threshold_ns: UNANSWERED_NS,
        }),
    })
}
