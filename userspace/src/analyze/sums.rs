//! The rows of every flow of a run, when some went to the output as their
//! flows retired: their sums per tap and marks, and the rows still held
//! (docs/analysis.md, "Retirement").

use super::FlowRow;

/// Rows with the same tap, PCP and DSCP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowGroup {
    pub iface: u16,
    pub pcp: Option<u8>,
    pub dscp: Option<u8>,
}

/// Sums of some of the flows' columns over rows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RowSums {
    pub rows: u64,
    pub packets: u64,
    pub cnps: u64,
    pub naks: u64,
    pub rewinds_timeout: u64,
    pub goodput_gbps: f64,
}

impl RowGroup {
    pub fn of(r: &FlowRow) -> Self {
        RowGroup {
            iface: r.iface,
            pcp: r.pcp,
            dscp: r.dscp,
        }
    }
}

impl RowSums {
    pub fn add(&mut self, r: &FlowRow) {
        self.rows += 1;
        self.packets += r.packets;
        self.cnps += r.cnps;
        self.naks += r.naks;
        self.rewinds_timeout += r.rewinds_timeout;
        self.goodput_gbps += r.goodput_gbps;
    }

    /// Adds `more`'s sums, field by field: for one row's sums (`rows` 1)
    /// the same additions as [`RowSums::add`] of that row.
    pub fn add_sums(&mut self, more: &RowSums) {
        self.rows += more.rows;
        self.packets += more.packets;
        self.cnps += more.cnps;
        self.naks += more.naks;
        self.rewinds_timeout += more.rewinds_timeout;
        self.goodput_gbps += more.goodput_gbps;
    }
}

impl super::Analysis {
    /// Every flow's row of the run, summed per group: the rows held and the
    /// retired ones' sums.
    pub fn sums(&self) -> std::collections::BTreeMap<RowGroup, RowSums> {
        let mut out = self.retired_sums.clone();
        for r in self.unwritten_flows() {
            out.entry(RowGroup::of(r)).or_default().add(r);
        }
        out
    }

    /// Flow `id`'s row, when the run holds it.
    pub fn flow(&self, id: u32) -> Option<&FlowRow> {
        self.flows
            .binary_search_by_key(&id, |r| r.flow_id)
            .ok()
            .map(|i| &self.flows[i])
    }

    /// The rows the sink has not had: what an output writes at the end.
    pub fn unwritten_flows(&self) -> impl Iterator<Item = &FlowRow> {
        self.flows
            .iter()
            .filter(|r| !self.written.contains(&r.flow_id))
    }
}
