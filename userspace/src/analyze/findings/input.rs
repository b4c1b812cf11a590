//! What every finding reads ([`Input`]), and the helpers findings share:
//! the flows as evidence names them, impact as a share, the ACK timeout exponent, the
//! unanswered flows (`unanswered-flows` and `mtu-mismatch` both judge them).
//! Below every finding file; it names none of them.

use std::collections::BTreeSet;

use rocescope_common::proto::ib;

use crate::analyze::flows::Retired;
use crate::analyze::hash::FastMap;
use crate::analyze::rto::ACK_TIMEOUT_UNIT_NS;
use crate::analyze::{Flow, FlowTable, PfcInterval, Summary};

pub use crate::analyze::rows::TransportInput;

/// A flow as a finding names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowRef {
    pub id: u32,
    pub iface: u16,
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub dest_qp: u32,
}

impl FlowRef {
    /// The flow a row of `flows.parquet` is.
    pub fn from_row(r: &crate::analyze::FlowRow) -> FlowRef {
        FlowRef {
            id: r.flow_id,
            iface: r.iface,
            src_ip: r.src_ip,
            dst_ip: r.dst_ip,
            dest_qp: r.dest_qp,
        }
    }
}

impl From<&Flow> for FlowRef {
    fn from(f: &Flow) -> Self {
        FlowRef {
            id: f.id,
            iface: f.iface,
            src_ip: f.src_ip,
            dst_ip: f.dst_ip,
            dest_qp: f.dest_qp,
        }
    }
}

/// Another analyzer's flows and load, when a sharded run's findings are
/// judged once over its N analyzers ([`Input::others`]).
pub(crate) struct Part<'a> {
    pub flows: &'a FlowTable,
    pub retired: &'a Retired,
    pub by_id: Option<FastMap<u32, usize>>,
    /// Its ECMP groups' load (bins are loaded per analyzer: not merged).
    pub ecmp: &'a crate::analyze::ecmp::EcmpLoad,
}

pub(crate) struct Input<'a> {
    /// The live flows; read them with [`Input::flows`], which adds the
    /// retired ones kept as evidence. A sharded run's: analyzer 0's, the
    /// others' in [`Input::others`].
    pub flows: &'a FlowTable,
    /// What the run kept of its retired flows (docs/analysis.md,
    /// "Retirement").
    pub retired: &'a Retired,
    /// Live flows by id, once ids are no slots ([`ids_of`]).
    pub by_id: Option<FastMap<u32, usize>>,
    /// A sharded run's analyzers 1 to N-1 (none with one analyzer):
    /// analyzer `k` of `n` numbers its flows `k`, `k + n`, …, so a flow id
    /// names its part. Every finding reads them with analyzer 0's.
    pub others: &'a [Part<'a>],
    pub pfc: &'a [PfcInterval],
    pub summary: &'a Summary,
    /// The pauses that covered ghost timeout rewinds: `(iface, priority,
    /// sender, start)`.
    pub ghost_covers: &'a std::collections::BTreeSet<(u16, u8, [u8; 6], u64)>,
    /// The ECMP groups' load.
    pub ecmp: &'a crate::analyze::ecmp::EcmpLoad,
    /// The DSCP and PCP pairs seen per tap.
    pub qos: &'a crate::analyze::qos::Marks,
    /// `hops.parquet`'s rows (cross-tap matching).
    pub hops: &'a [crate::analyze::hops::HopRow],
    /// How fast each NIC reacts, per tap (interface index): `nics.parquet`'s
    /// rows before the taps are pooled.
    pub nics: &'a [(u16, crate::analyze::NicRow)],
    /// What the transports beside RoCE hold.
    pub transports: TransportInput<'a>,
    /// What the live flows hold ([`Census::of`]).
    pub census: Census,
}

/// What the live flows hold, counted in one walk before the findings: a
/// finding whose filter no live flow can pass reads only the retired flows
/// kept as evidence ([`Input::flows_if`]) instead of every live flow. The
/// findings made ~15 walks over every flow record; at a million QPs each
/// read hundreds of megabytes (docs/benchmarks.md, "speed1").
#[derive(Debug, Default)]
pub(crate) struct Census {
    /// Live flows holding rare counts ([`Flow::rare`]: rewinds, gaps, NAKs,
    /// trims, stalls, BECN, ICRC errors, mirror copies): a flow without
    /// them reads zero in each.
    pub rare: usize,
    /// Live flows with a CE mark or a CNP.
    pub congested: usize,
    /// Live request flows with a learned path MTU.
    pub sized: usize,
    /// Live flows [`unanswered`] weighs ([`sending`]).
    pub sending: usize,
    /// The tap of the first live request flow, and whether one was seen at
    /// another.
    pub request_tap: Option<u16>,
    pub requests_at_two_taps: bool,
    /// By tap (interface index), the fastest live flow of two packets or
    /// more, in Gb/s (`link-speed`).
    fastest: Vec<f64>,
}

impl Census {
    /// `flows`' census, in one walk.
    pub(crate) fn of(flows: &FlowTable) -> Census {
        let mut c = Census::default();
        flows.iter().for_each(|f| c.add(f));
        c
    }

    /// Counts live flow `f`.
    pub(crate) fn add(&mut self, f: &Flow) {
        self.rare += usize::from(f.rare.is_some());
        self.congested += usize::from(f.ce() > 0 || f.cnps() > 0);
        self.sending += usize::from(sending(f));
        if f.data_packets() > 0 {
            self.sized += usize::from(f.mtu > 0);
            match self.request_tap {
                None => self.request_tap = Some(f.iface),
                Some(t) => self.requests_at_two_taps |= t != f.iface,
            }
        }
        if f.packets() >= 2 {
            let tap = usize::from(f.iface);
            if self.fastest.len() <= tap {
                self.fastest.resize(tap + 1, f64::NEG_INFINITY);
            }
            self.fastest[tap] = self.fastest[tap].max(f.rate_gbps(f.bytes()));
        }
    }

    /// Another analyzer's census added (a sharded run judged together).
    pub(crate) fn merge(&mut self, more: &Census) {
        self.rare += more.rare;
        self.congested += more.congested;
        self.sized += more.sized;
        self.sending += more.sending;
        match (self.request_tap, more.request_tap) {
            (None, t) => self.request_tap = t,
            (Some(a), Some(b)) => self.requests_at_two_taps |= a != b,
            (Some(_), None) => {}
        }
        self.requests_at_two_taps |= more.requests_at_two_taps;
        if self.fastest.len() < more.fastest.len() {
            self.fastest.resize(more.fastest.len(), f64::NEG_INFINITY);
        }
        for (a, b) in self.fastest.iter_mut().zip(&more.fastest) {
            *a = a.max(*b);
        }
    }

    /// Whether a live flow of two packets or more at tap `iface` ran
    /// faster than `gbps`.
    pub(crate) fn faster_than(&self, iface: u16, gbps: f64) -> bool {
        self.fastest
            .get(usize::from(iface))
            .is_some_and(|&top| top > gbps)
    }
}

/// Smallest local ACK timeout exponent T whose timeout exceeds `ns`.
pub(crate) fn timeout_exponent(ns: u64) -> u32 {
    (0..31)
        .find(|&t| ACK_TIMEOUT_UNIT_NS << t > ns)
        .unwrap_or(31)
}

/// The live flows' slots by id, when a flow retired (until then a slot is
/// its flow's id).
pub(crate) fn ids_of(flows: &FlowTable, retired: &Retired) -> Option<FastMap<u32, usize>> {
    if retired.totals.flows == 0 {
        return None;
    }
    Some(slots_of(flows))
}

/// The live flows' slots by id (a sharded run's analyzer numbers its flows
/// `k`, `k + n`, …: never slots).
pub(crate) fn slots_of(flows: &FlowTable) -> FastMap<u32, usize> {
    let mut by_id = FastMap::default();
    for i in 0..flows.slots() {
        if let Some(f) = flows.get(i) {
            by_id.insert(f.id, i);
        }
    }
    by_id
}

impl<'a> Input<'a> {
    /// Every flow a finding reads: the retired ones kept as evidence (the
    /// worst K of each family, docs/analysis.md "Retirement"), then the live
    /// ones.
    pub(crate) fn flows(&self) -> impl Iterator<Item = &'a Flow> + use<'a> {
        self.flows_if(true)
    }

    /// [`Input::flows`], the live ones only when `live` (what the
    /// [`Census`] says some live flow may match): a finding filtering on
    /// what no live flow holds reads only the evidence.
    pub(crate) fn flows_if(&self, live: bool) -> impl Iterator<Item = &'a Flow> + use<'a> {
        let others = self.others;
        let evidence = others.iter().flat_map(|p| p.retired.evidence());
        let live = live
            .then(|| {
                let more = others.iter().flat_map(|p| p.flows.iter());
                self.flows.iter().chain(more)
            })
            .into_iter()
            .flatten();
        self.retired.evidence().chain(evidence).chain(live)
    }

    /// Flow `id`, live or kept as evidence.
    pub(crate) fn flow(&self, id: u32) -> Option<&'a Flow> {
        let (flows, retired, by_id) = self.part_of(id);
        let slot = match by_id {
            None => Some(id as usize),
            Some(m) => m.get(&id).copied(),
        };
        slot.and_then(|i| flows.get(i))
            .filter(|f| f.id == id)
            .or_else(|| retired.get(id))
    }

    /// The live flows of the analyzer that numbered flow `id` (a flow's
    /// partner is a slot there).
    pub(crate) fn table_of(&self, id: u32) -> &'a FlowTable {
        self.part_of(id).0
    }

    /// The flows, retired flows and ids of the analyzer numbering `id`.
    fn part_of(&self, id: u32) -> (&'a FlowTable, &'a Retired, Option<&FastMap<u32, usize>>) {
        if self.others.is_empty() {
            return (self.flows, self.retired, self.by_id.as_ref());
        }
        match (id as usize % (self.others.len() + 1)).checked_sub(1) {
            None => (self.flows, self.retired, self.by_id.as_ref()),
            Some(k) => {
                let p = &self.others[k];
                (p.flows, p.retired, p.by_id.as_ref())
            }
        }
    }

    /// Whether some analyzer stopped keeping the pairs its retired flows
    /// answered.
    fn answered_full(&self) -> bool {
        self.retired.answered_full || self.others.iter().any(|p| p.retired.answered_full)
    }
}

impl Input<'_> {
    /// The impact of a finding about `flows` (ids): the share of the
    /// capture's request packets they carry (docs/analysis.md, "Findings").
    pub(crate) fn traffic_share(&self, flows: &[u32]) -> f64 {
        let of: u64 = flows
            .iter()
            .filter_map(|&id| self.flow(id))
            .map(|f| f.data_packets())
            .sum();
        share(of, self.summary.totals.data_packets)
    }

    /// The longest of the pauses that covered ghost timeout rewinds (same
    /// tap, same priority as the rewinding flow).
    pub(super) fn longest_covering_pause(&self) -> Option<&PfcInterval> {
        self.pfc
            .iter()
            .filter(|p| {
                self.ghost_covers
                    .contains(&(p.iface, p.priority, p.src_mac, p.start_ns))
            })
            .max_by_key(|p| (p.end_ns - p.start_ns, std::cmp::Reverse(p.start_ns)))
    }

    /// Flows whose priority is `prio` on `iface`.
    pub(super) fn flows_on(&self, iface: u16, prio: u8) -> Vec<u32> {
        self.flows()
            .filter(|f| f.iface == iface && f.priority() == Some(prio))
            .map(|f| f.id)
            .collect()
    }
}

/// A share in [0, 1]: `part` of `whole`, 0 of nothing.
pub(crate) fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 / whole as f64).min(1.0)
    }
}

pub(crate) use crate::analyze::flows::kept::UNANSWERED_NS;

/// A request flow of an acknowledged service, not paired, sending for
/// [`UNANSWERED_NS`] or more: one [`unanswered`] weighs.
fn sending(f: &Flow) -> bool {
    f.data_packets() > 0
        && f.service().is_some_and(ib::is_acknowledged)
        && f.paired_qp().is_none()
        && f.last_ts - f.first_ts >= UNANSWERED_NS
}

/// Request flows sending for [`UNANSWERED_NS`] or more whose destination
/// sent nothing back to their source on their tap, on a tap that recorded
/// responses of other flows.
pub(crate) fn unanswered<'a>(x: &Input<'a>) -> Vec<&'a Flow> {
    // Past the pairs kept of retired flows: unknown, not judged.
    if x.answered_full() {
        return Vec::new();
    }
    let sending: Vec<&Flow> = x
        .flows_if(x.census.sending > 0)
        .filter(|f| sending(f))
        .collect();
    if sending.is_empty() {
        return sending;
    }
    // Taps that saw any response, and of the (tap, from, to) answering
    // those flows the ones seen: a set of every response flow's would be
    // one entry per flow at a million QPs.
    let wanted: BTreeSet<(u16, [u8; 16], [u8; 16])> = sending
        .iter()
        .map(|f| (f.iface, f.dst_ip, f.src_ip))
        .collect();
    let mut two_way: BTreeSet<u16> = BTreeSet::new();
    let mut answered = BTreeSet::new();
    let responses = x.flows().filter(|f| f.responses() > 0);
    let seen = responses.map(|f| (f.iface, f.src_ip, f.dst_ip));
    let kept = x.others.iter().flat_map(|p| &p.retired.answered);
    for k in seen.chain(x.retired.answered.iter().chain(kept).copied()) {
        two_way.insert(k.0);
        if wanted.contains(&k) {
            answered.insert(k);
        }
    }
    sending
        .into_iter()
        .filter(|f| {
            two_way.contains(&f.iface) && !answered.contains(&(f.iface, f.dst_ip, f.src_ip))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::timeout_exponent;

    #[test]
    fn exponent_exceeds_the_pause() {
        assert_eq!(timeout_exponent(0), 0);
        assert_eq!(timeout_exponent(4096), 1);
        assert_eq!(timeout_exponent(335_539), 7); // 4.096 µs × 128 = 524 µs
        assert_eq!(timeout_exponent(u64::MAX), 31);
    }
}
