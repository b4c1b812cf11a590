//! Summary-mode deltas: frames the live tap counted in the kernel instead of
//! sending them as records (`docs/live.md`, summary mode).

use rocescope_common::proto::ib::{self, PSN_MASK};
use rocescope_common::summary::{FlowDelta, delta_flags};

use super::flows::timeline::spread_over_bins;
use super::flows::{Count, Flow};
use super::{Analyzer, Sink};
use crate::transport::sequencing::Ack;

impl Analyzer {
    /// Frames of one flow the live tap counted in the kernel instead of
    /// sending them as records (`live --mode summary`; see
    /// `rocescope_common::summary`), in their place in the record order.
    ///
    /// They are what [`Analyzer::push`] would have made of those frames,
    /// which the kernel only counts when that is a plain sum: in-order
    /// requests (never retransmissions: payload is goodput; `next` moves to
    /// the delta's `next_psn`) and plain ACKs (their highest PSN raises the
    /// flow's `acked`). The delta also carries the flow's path MTU and its
    /// partner's highest ACKed PSN and MTU, which the analyzer may not have
    /// seen yet (they came in frames that were only counted).
    ///
    /// Approximate, by design: the timeline spreads the frames evenly over
    /// `first_ts_ns..=last_ts_ns` (see `spread_over_bins`; per-flow sums
    /// are exact), and stalls are not looked for in the idle times of
    /// counted frames (only their longest idle
    /// raises `max_idle_us`); the requester's transport timer (see [`rto`])
    /// starts at a delta's first request when it was stopped and restarts at
    /// an ACK delta's last frame when the delta raised the highest ACKed PSN;
    /// the DCQCN reaction measurement (see `dcqcn`) starts over after
    /// counted requests, which have no times of their own.
    /// A delta for a flow the analyzer has not seen (its first record was
    /// lost) is ignored.
    pub fn apply_delta(&mut self, iface: u16, d: &FlowDelta, sink: &mut impl Sink) {
        let key = (
            iface,
            d.key.src_ip,
            d.key.dst_ip,
            d.key.dest_qp & ib::QPN_MASK,
        );
        let Some(i) = self.by_key.get(&self.flows, &key) else {
            return;
        };
        let paired = self.flows[i].paired();
        // State first: the path MTU and the highest ACKed PSNs.
        let raise_mtu = |f: &mut Flow, m: u32| f.mtu = f.mtu.max(m);
        raise_mtu(&mut self.flows[i], d.mtu);
        if let Some(p) = paired {
            raise_mtu(&mut self.flows[p], d.mtu);
            if d.has(delta_flags::PARTNER) {
                raise_mtu(&mut self.flows[p], d.partner_mtu);
                raise_mtu(&mut self.flows[i], d.partner_mtu);
            }
        }
        let raise_acked = |f: &mut Flow, q: u32| {
            f.acknowledge(&Ack::Cumulative(q));
        };
        if d.has(delta_flags::ACKED) {
            raise_acked(&mut self.flows[i], d.acked_psn & PSN_MASK);
            if let Some(p) = paired {
                self.flows[p]
                    .sender_mut()
                    .rto
                    .acked_counted(d.acked_psn & PSN_MASK, d.last_ts_ns);
            }
        }
        if let Some(p) = paired
            && d.has(delta_flags::PARTNER_ACKED)
        {
            raise_acked(&mut self.flows[p], d.partner_acked_psn & PSN_MASK);
        }
        if d.packets == 0 {
            return;
        }
        let now = d.last_ts_ns;
        self.ecmp.frame(iface, now, d.bytes);
        self.frames.roce += d.packets;
        self.frames.total += d.packets;
        self.last_ts = self.last_ts.max(now);
        let bin_ns = self.config.bin_ns;
        if d.data_packets > 0 {
            // Every counted request was in order and none was a READ: new
            // data after undecided arrivals, which were late originals.
            let next = d.next_psn & PSN_MASK;
            self.sequencing(i, sink, |s, out| s.counted(next, out));
        }
        let f = &mut self.flows[i];
        f.add(Count::Packets, d.packets);
        f.add(Count::Bytes, d.bytes);
        f.add(Count::PayloadBytes, d.payload_bytes);
        f.add(Count::GoodputBytes, d.payload_bytes);
        f.add(Count::DataPackets, u64::from(d.data_packets));
        f.add(Count::Acks, u64::from(d.acks));
        f.add(Count::Responses, u64::from(d.responses));
        if d.ce > 0 {
            f.add(Count::Ce, u64::from(d.ce));
            self.running.ce += u64::from(d.ce);
            f.ce_marked(d.first_ce_ts_ns);
        }
        f.max_idle_ns = f.max_idle_ns.max(d.max_idle_ns);
        f.last_ts = f.last_ts.max(now);
        if d.data_packets > 0 {
            f.sender_mut().rto.sent(d.first_ts_ns);
            if let Some(r) = f.rate_held() {
                r.counted();
            }
        }
        f.timer_packet_done();
        let f = &self.flows[i];
        spread_over_bins(&mut self.bins, i, f, &self.pfc, d, bin_ns, sink);
    }

    /// A delta another analyzer of a sharded run applies (`crate::shard`):
    /// the run's clock moves here as [`Analyzer::apply_delta`] moves it
    /// there (to the delta's last frame, when it counted any), so the run's
    /// end, and what is settled against it, is alike in every analyzer.
    pub fn pass_delta_time(&mut self, d: &FlowDelta) {
        if d.packets > 0 {
            self.last_ts = self.last_ts.max(d.last_ts_ns);
        }
    }
}
