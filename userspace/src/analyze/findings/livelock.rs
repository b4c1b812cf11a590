//! `retransmission-livelock` and `retry-exhausted`: the flows whose rewinds
//! to one PSN made a livelock, and those that spent their retry count on one
//! PSN and fell silent (the per-flow runs: `analyze/livelock.rs`; see
//! "Retransmission livelock" and "Retry exhaustion" in `docs/analysis.md`).

use crate::analyze::livelock::{Exhausted, Run};
use crate::analyze::rto::nearest_exponent;
use crate::analyze::{Flow, Severity};

use super::input::{FlowRef, Input};
use super::{Diagnosis, Evidence};

/// A flow stuck on one PSN: the run of rewinds and its largest frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Stuck {
    pub flow: FlowRef,
    pub run: Run,
    pub max_frame_len: u32,
}

/// A flow that ran out of retries.
#[derive(Clone, Debug, PartialEq)]
pub struct Dead {
    pub flow: FlowRef,
    pub exhausted: Exhausted,
    /// The local ACK timeout exponent T nearest to the timeout seen.
    pub timeout_exponent: u8,
    /// The QP of the reverse direction, when paired.
    pub paired_qp: Option<u32>,
    pub max_frame_len: u32,
}

/// Flow `f`'s retry exhaustion, judged against the end of its tap's
/// capture.
fn exhausted(x: &Input, f: &Flow) -> Option<Exhausted> {
    let end = x
        .summary
        .taps
        .iter()
        .find(|t| t.iface == f.iface)
        .and_then(|t| t.last_ts_ns)
        .or(x.summary.last_ts_ns)?;
    f.rewind().livelock.exhausted(f.last_ts, end)
}

/// `retransmission-livelock`: every flow in a livelock, the longest first;
/// a flow whose longest run ended its retries is `retry-exhausted` instead.
pub(crate) fn finding(x: &Input) -> Option<Diagnosis> {
    let mut stuck: Vec<(&Flow, Run)> = x
        .flows_if(x.census.rare > 0)
        .filter_map(|f| Some((f, f.rewind().livelock.livelock()?)))
        .filter(|(f, r)| {
            exhausted(x, f).is_none_or(|e| (e.run.psn, e.run.first_ts) != (r.psn, r.first_ts))
        })
        .collect();
    if stuck.is_empty() {
        return None;
    }
    stuck.sort_by_key(|(f, r)| (std::cmp::Reverse(r.rewinds), f.id));
    let ids: Vec<u32> = stuck.iter().map(|(f, _)| f.id).collect();
    Some(Diagnosis {
        severity: Severity::Critical,
        impact: x.traffic_share(&ids),
        flows: ids,
        evidence: Evidence::Livelock(
            stuck
                .iter()
                .map(|(f, run)| Stuck {
                    flow: FlowRef::from(*f),
                    run: *run,
                    max_frame_len: f.max_frame_len(),
                })
                .collect(),
        ),
    })
}

/// `retry-exhausted`: every flow that resent one PSN its retry count of
/// times after timeouts with nothing acknowledged, then sent nothing more
/// (`docs/analysis.md`, "Retry exhaustion").
pub(crate) fn retry_exhausted(x: &Input) -> Option<Diagnosis> {
    let mut dead: Vec<(&Flow, Exhausted)> = x
        .flows_if(x.census.rare > 0)
        .filter_map(|f| Some((f, exhausted(x, f)?)))
        .collect();
    if dead.is_empty() {
        return None;
    }
    dead.sort_by_key(|(f, e)| (e.silent_from_ns, f.id));
    let ids: Vec<u32> = dead.iter().map(|(f, _)| f.id).collect();
    Some(Diagnosis {
        severity: Severity::Critical,
        impact: x.traffic_share(&ids),
        flows: ids,
        evidence: Evidence::RetryExhausted(
            dead.iter()
                .map(|(f, e)| Dead {
                    flow: FlowRef::from(*f),
                    exhausted: *e,
                    timeout_exponent: nearest_exponent(e.timeout_ns),
                    paired_qp: f.paired_qp(),
                    max_frame_len: f.max_frame_len(),
                })
                .collect(),
        ),
    })
}
