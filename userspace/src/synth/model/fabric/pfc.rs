//! PFC: the bytes each ingress port holds per priority, XOFF and XON, and
//! which pause caused which.

use crate::synth::model::spec::{FrameMeta, FrameSpec, MAC_CONTROL_DST, PfcSpec};

use super::{Ev, Fabric, PauseEpisode, Pkt, quanta_ns};

impl Fabric {
    /// `len` more bytes received on port `p` are held (`to`: the egress
    /// port they wait at; `None`: the host's receive queue).
    pub(super) fn ingress_add(&mut self, p: usize, prio: u8, len: u32, to: Option<usize>) {
        let lossless = self
            .cfg
            .pfc_priorities
            .as_ref()
            .is_none_or(|l| l.contains(&prio));
        let port = &mut self.ports[p];
        let i = prio as usize;
        port.in_bytes[i] += len as u64;
        if lossless && port.pfc_enabled && !port.pfc_on[i] && port.in_bytes[i] > port.xoff {
            let (held_at, cause) = self.pause_cause(p, prio, len, to);
            let port = &mut self.ports[p];
            port.pause_id[i] = Some(self.pauses.len());
            self.pauses.push(PauseEpisode {
                port: p,
                mac: port.mac,
                priority: prio,
                onset_ns: self.now,
                end_ns: None,
                held_bytes: port.in_bytes[i],
                held_at,
                cause,
            });
            port.pfc_on[i] = true;
            port.pfc_epoch[i] += 1;
            let epoch = port.pfc_epoch[i];
            let t = self.now + quanta_ns(self.cfg.pfc_quanta, port.gbps) / 2;
            self.send_pfc(p, prio, self.cfg.pfc_quanta);
            self.push(t.max(self.now + 1), Ev::PfcRefresh(p, prio, epoch));
        }
    }

    pub(super) fn ingress_sub(&mut self, p: usize, prio: u8, len: u32) {
        let port = &mut self.ports[p];
        let i = prio as usize;
        port.in_bytes[i] -= len as u64;
        if port.pfc_on[i] && port.in_bytes[i] <= port.xon {
            port.pfc_on[i] = false;
            port.pfc_epoch[i] += 1;
            if let Some(e) = port.pause_id[i].and_then(|e| self.pauses.get_mut(e)) {
                e.end_ns = Some(self.now);
            }
            self.send_pfc(p, prio, 0);
        }
    }

    /// Why port `p` pauses `prio` now (`len` bytes bound for `to` just
    /// crossed its threshold): the egress port of its node where most of
    /// the bytes it received wait (ties: `to`), and the pause episode that
    /// held that port, if one did. A NIC's bytes wait in its receive queue,
    /// which no pause holds.
    pub(super) fn pause_cause(
        &self,
        p: usize,
        prio: u8,
        len: u32,
        to: Option<usize>,
    ) -> (Option<usize>, Option<usize>) {
        let Some(to) = to else {
            return (None, None);
        };
        let node = self.ports[p].node;
        let i = prio as usize;
        let held = |e: usize| -> u64 {
            let queued: u64 = self.ports[e].queues[i]
                .iter()
                .filter(|k| k.ingress == Some(p))
                .map(|k| k.len as u64)
                .sum();
            queued + if e == to { len as u64 } else { 0 }
        };
        let at = (0..self.ports.len())
            .filter(|&e| self.ports[e].node == node)
            .map(|e| (held(e), e == to, std::cmp::Reverse(e)))
            .max()
            .map_or(to, |(_, _, std::cmp::Reverse(e))| e);
        let port = &self.ports[at];
        let cause = (port.paused_until[i] > self.now)
            .then_some(port.paused_by[i])
            .flatten();
        (Some(at), cause)
    }

    pub(super) fn send_pfc(&mut self, p: usize, prio: u8, q: u16) {
        let mut quanta = [0u16; 8];
        quanta[prio as usize] = q;
        let spec = FrameSpec::Pfc(PfcSpec {
            src_mac: self.ports[p].mac,
            dst_mac: MAC_CONTROL_DST,
            enable_vector: 1 << prio,
            quanta,
        });
        let len = spec.frame_len();
        let meta = FrameMeta {
            pause: self.ports[p].pause_id[prio as usize],
            ..FrameMeta::default()
        };
        self.stats.pfc_frames_sent += 1;
        self.ports[p].ctrl.push_back(Pkt {
            spec,
            prio: 7,
            len,
            ingress: None,
            queued: None,
            meta,
            hops: Vec::new(),
        });
        self.try_tx(p);
    }
}
