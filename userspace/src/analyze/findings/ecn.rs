//! ECN findings: CE marks without CNPs and CNPs without CE marks
//! (`docs/analysis.md`, *CNPs*).

use crate::analyze::{Flow, Reaction, Severity};

use super::input::{FlowRef, Input, share};
use super::{Diagnosis, Evidence};

/// Flows shown by name in `ce-without-cnp`'s words (all are in its flows).
const SHOWN: usize = 5;

/// `ce-without-cnp`'s evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct CeWithoutCnp {
    /// CE-marked packets of the silent flows, and how many flows.
    pub ce: u64,
    pub flows: u64,
    /// The first few of them.
    pub shown: Vec<SilentCe>,
    /// The capture's CE → CNP reaction time.
    pub reaction: Option<Reaction>,
}

/// A flow whose CE marks got no CNP back.
#[derive(Clone, Debug, PartialEq)]
pub struct SilentCe {
    pub flow: FlowRef,
    pub dscp: Option<u8>,
    pub ce: u64,
    /// Its reverse direction was seen.
    pub paired: bool,
}

/// `cnp-without-ce`'s evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct CnpWithoutCe {
    /// CNPs to flows that carried no CE mark, and how many flows.
    pub cnps: u64,
    pub flows: u64,
    /// CNPs no request flow could be found for.
    pub unattributed: u64,
    pub reaction: Option<Reaction>,
}

pub(super) fn ce_cnp(x: &Input, out: &mut Vec<Diagnosis>) {
    let unattributed = x.summary.totals.cnps_unattributed;
    let reaction = x.summary.ce_to_cnp.clone();
    // On InfiniBand the destination may answer FECN with BECN on the
    // packets it sends back instead of CNPs (docs/analysis.md, "CNPs").
    let becn_back = |r: &Flow| {
        r.ib_link()
            && x.flows().any(|p| {
                p.iface == r.iface
                    && (p.src_ip, p.dst_ip) == (r.dst_ip, r.src_ip)
                    && Some(p.dest_qp) == r.paired_qp()
                    && p.rare().becn > 0
            })
    };
    let silent: Vec<&Flow> = x
        .flows_if(x.census.congested > 0)
        .filter(|f| f.ce() > 0 && f.cnps() == 0 && (f.cnp_qp().is_some() || unattributed == 0))
        .filter(|f| !becn_back(f))
        .collect();
    if !silent.is_empty() {
        let ids: Vec<u32> = silent.iter().map(|r| r.id).collect();
        out.push(Diagnosis {
            severity: Severity::Warning,
            impact: x.traffic_share(&ids),
            flows: ids,
            evidence: Evidence::CeWithoutCnp(CeWithoutCnp {
                ce: silent.iter().map(|r| r.ce()).sum(),
                flows: silent.len() as u64,
                shown: silent
                    .iter()
                    .take(SHOWN)
                    .map(|r| SilentCe {
                        flow: FlowRef::from(*r),
                        dscp: r.dscp(),
                        ce: r.ce(),
                        paired: r.paired_qp().is_some(),
                    })
                    .collect(),
                reaction: reaction.clone(),
            }),
        });
    }
    let loud: Vec<&Flow> = x
        .flows_if(x.census.congested > 0)
        .filter(|r| r.cnps() > 0 && r.ce() == 0)
        .collect();
    if !loud.is_empty() || unattributed > 0 {
        let cnps: u64 = loud.iter().map(|r| r.cnps()).sum();
        out.push(Diagnosis {
            severity: Severity::Info,
            impact: share(cnps + unattributed, x.summary.frames.cnp),
            flows: loud.iter().map(|r| r.id).collect(),
            evidence: Evidence::CnpWithoutCe(CnpWithoutCe {
                cnps,
                flows: loud.len() as u64,
                unattributed,
                reaction,
            }),
        });
    }
}
