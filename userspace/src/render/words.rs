//! What a finding says ([`Words`]: its title, detail, recommendation and
//! `params`) and the names its words use ([`Names`]): built by the
//! findings' words (`render::findings`) and by the transports' own
//! (`render::transports`), which `findings::word` dispatches to.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::analyze::findings::FlowRef;
use crate::analyze::{PfcInterval, Summary, iface_name};
use crate::render::{fmt_count, fmt_duration, fmt_ended_by, fmt_flow, fmt_mac, fmt_offset};

/// What a finding says.
pub(super) struct Words {
    pub(super) title: String,
    pub(super) detail: String,
    pub(super) recommendation: String,
    pub(super) params: BTreeMap<&'static str, Value>,
}

/// A finding's `params`.
pub(super) fn params<const N: usize>(
    items: [(&'static str, Value); N],
) -> BTreeMap<&'static str, Value> {
    items.into_iter().collect()
}

/// The names a finding's words use.
pub(super) struct Names<'a>(pub(super) &'a Summary);

impl Names<'_> {
    pub(super) fn iface(&self, i: u16) -> String {
        iface_name(&self.0.ifaces, i)
    }

    /// A tap by the name its summary gives it.
    pub(super) fn tap(&self, iface: u16) -> String {
        self.0
            .taps
            .iter()
            .find(|t| t.iface == iface)
            .map_or_else(|| self.iface(iface), |t| t.iface_name.clone())
    }

    /// `flow 3 (10.0.0.1 → 10.0.0.2 QP 17, leaf0)`.
    pub(super) fn describe(&self, f: &FlowRef) -> String {
        fmt_flow(f.id, &f.src_ip, &f.dst_ip, f.dest_qp, &self.iface(f.iface))
    }

    /// A pause interval: `25.0 µs on leaf0 priority 3 by aa:… (from t+…,
    /// 2 frames, ended by an XON)`.
    pub(super) fn pause_text(&self, p: &PfcInterval) -> String {
        format!(
            "{} on {} priority {} by {} (from {}, {}, {})",
            fmt_duration(p.end_ns - p.start_ns),
            self.iface(p.iface),
            p.priority,
            fmt_mac(&p.src_mac),
            self.at(p.start_ns),
            fmt_count(p.frames, "frame"),
            fmt_ended_by(p.ended_by)
        )
    }

    /// A capture time as an offset from the capture's first frame.
    pub(super) fn at(&self, ts_ns: u64) -> String {
        fmt_offset(ts_ns.saturating_sub(self.0.first_ts_ns.unwrap_or(ts_ns)))
    }
}
