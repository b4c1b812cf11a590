//! Connection-management hints: CM REQ/REP MADs name both QPs of a connection,
//! which pairs its two flows exactly (`docs/analysis.md`, *Pairing*).

use rocescope_common::PacketRecord;

use super::Analyzer;

/// A CM REQ awaiting its REP: the active side's QP and the connection's
/// retry count.
#[derive(Clone, Copy, Debug)]
pub(super) struct Request {
    active_qp: u32,
    retry_count: u8,
}

impl Analyzer {
    /// A CM REQ or REP seen in `rec` (a QP1 MAD): once a REP answers a REQ,
    /// both directions of the connection are paired exactly.
    pub fn cm(&mut self, rec: &PacketRecord, msg: crate::transport::roce::cm::CmMessage) {
        use crate::transport::roce::cm::CmMessage;
        match msg {
            CmMessage::Req {
                local_comm_id,
                local_qpn,
                retry_count,
                ..
            } => {
                self.cm_requests.insert(
                    (rec.iface, rec.src_ip, rec.dst_ip, local_comm_id),
                    Request {
                        active_qp: local_qpn,
                        retry_count,
                    },
                );
            }
            CmMessage::Rep {
                remote_comm_id,
                local_qpn: passive_qp,
                ..
            } => {
                let key = (rec.iface, rec.dst_ip, rec.src_ip, remote_comm_id);
                if let Some(Request {
                    active_qp,
                    retry_count,
                }) = self.cm_requests.remove(&key)
                {
                    let (active, passive) = (rec.dst_ip, rec.src_ip);
                    // Both QPs of the connection take the REQ's retry count.
                    for k in [
                        (rec.iface, active, passive, passive_qp),
                        (rec.iface, passive, active, active_qp),
                    ] {
                        self.retry_counts.insert(k, retry_count);
                    }
                    self.pair_hint(rec.iface, active, active_qp, passive, passive_qp);
                    self.pair_hint(rec.iface, passive, passive_qp, active, active_qp);
                }
            }
        }
    }

    /// Hook for connection management (CM REQ/REP MADs name both QPs of a
    /// connection): the requests from `requester_ip` to `responder_qp` on
    /// `responder_ip` are answered on `requester_qp`. Pairs the two flows now
    /// or when they appear.
    pub fn pair_hint(
        &mut self,
        iface: u16,
        requester_ip: [u8; 16],
        requester_qp: u32,
        responder_ip: [u8; 16],
        responder_qp: u32,
    ) {
        let rkey = (iface, requester_ip, responder_ip, responder_qp);
        self.hints.insert(rkey, requester_qp);
        if let Some(r) = self.by_key.get(&self.flows, &rkey) {
            self.apply_hint(r);
        }
    }

    pub(super) fn apply_hint(&mut self, r: usize) {
        if let Some(&n) = self.retry_counts.get(&self.flows[r].key()) {
            self.flows[r].rewind_mut().livelock.retry_count = Some(n);
        }
        let Some(&qp) = self.hints.get(&self.flows[r].key()) else {
            return;
        };
        if self.flows[r].paired().is_some() {
            return;
        }
        self.flows[r].set_paired_qp(qp);
        let f = &self.flows[r];
        let skey = (f.iface, f.dst_ip, f.src_ip, qp);
        if let Some(s) = self.by_key.get(&self.flows, &skey)
            && self.flows[s].paired().is_none()
        {
            self.link(r, s);
        }
    }
}
