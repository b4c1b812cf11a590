//! CNP attribution: a CNP counts for the request flow it answers
//! (`docs/analysis.md`, *CNPs*).

use rocescope_common::PacketRecord;
use rocescope_common::proto::ib;

use super::events::{CnpDetail, Event, EventDetail, EventKind};
use super::flows::timeline::bin_mut;
use super::rows::Verdict;
use super::{Analyzer, Sink, dups, nics};

impl Analyzer {
    pub(super) fn cnp(&mut self, rec: &PacketRecord, sink: &mut impl Sink) -> Verdict {
        let now = rec.ts_ns;
        let qp = rec.roce().dest_qp & ib::QPN_MASK;
        if self.dups.is_copy(rec, dups::Owner::Cnp, None) {
            self.frames.mirror_copies += 1;
            return Verdict {
                mirror_copy: true,
                ..Verdict::default()
            };
        }
        let (_, rewritten) = self.icrc(rec);
        self.cnp_macs.insert(rec.src_mac);
        let count = self
            .cnp_counts
            .entry((rec.iface, rec.src_ip, rec.dst_ip, qp))
            .or_default();
        count.cnps += 1;
        count.last_ns = now;
        let target = self
            .by_hosts
            .get(&self.flows, &(rec.iface, rec.dst_ip, rec.src_ip))
            .and_then(|c| c.iter().find(|&r| self.flows[r].cnp_qp() == Some(qp)));
        let mut reaction = None;
        if let Some(r) = target {
            let bin_ns = self.config.bin_ns;
            let f = &mut self.flows[r];
            if let Some(t) = f.ce_answered() {
                reaction = Some(now.saturating_sub(t));
            }
            // Without a request packet yet, nothing to measure the CNP against.
            if let Some(d) = f.rate_held() {
                d.cnp(now);
            }
            let f = &self.flows[r];
            if let Some(b) = bin_mut(&mut self.bins, r, f, &self.pfc, now, bin_ns, sink) {
                b.cnps += 1;
            }
        }
        if let Some(rt) = reaction {
            // The CNP's sender is the receiver whose NIC reacted.
            let nic = (rec.src_mac, rec.src_ip);
            self.nics
                .sample(nic, rec.iface, nics::Latency::CnpGeneration, rt);
            let r = &mut self.reactions;
            *r = (r.0 + 1, r.1 + rt, r.2.min(rt), r.3.max(rt));
        }
        let flow_id = target.map(|r| self.flows[r].id);
        sink.event(&Event {
            ts_ns: now,
            iface: rec.iface,
            flow_id,
            kind: EventKind::Cnp,
            psn: None,
            depth: None,
            trigger: None,
            idle_us: None,
            detail: EventDetail::Cnp(CnpDetail {
                src_ip: rec.src_ip,
                dst_ip: rec.dst_ip,
                qp,
                reaction_ns: reaction,
            }),
        });
        Verdict {
            flow_id,
            icrc_unknown: rewritten,
            ..Verdict::default()
        }
    }
}
