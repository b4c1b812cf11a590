//! QoS mismatch: RoCE data on a priority PFC never pauses while it pauses
//! another, and flows whose DSCP or PCP differs from tap to tap (remarked
//! on the path); with the DSCP → priority map in use as the frames show it
//! (see "QoS mismatch" in `docs/analysis.md`).
//!
//! RoCE needs its data on the lossless priority, the one PFC protects and
//! ECN marks: a NIC left at TOS 0 sends on priority 0, which drops instead
//! of pausing, and a switch that rewrites DSCP on the way moves the flow to
//! another queue at the next hop (or takes it out of the ECN-enabled one).
//!
//! O(1) per record (an OR into a bitmap per tap, one per flow). The marks
//! here; the finding, `qos-mismatch`, in `findings/qos.rs`.

use super::hash::FastMap;
use super::rows::FlowKey;

/// DSCP values seen per tap and PCP: index 0-7 the PCP of tagged frames, 8
/// untagged frames; bit N is DSCP N.
#[derive(Clone, Debug, Default)]
pub(crate) struct Marks {
    per_tap: Vec<[u64; 9]>,
    /// The marks of the CNPs per `(iface, CNP src, CNP dst, CNP dest QP)`.
    pub(super) cnps: FastMap<FlowKey, FlowMarks>,
}

impl Marks {
    /// A RoCE frame or CNP with DSCP `dscp` and, when tagged, PCP `pcp`.
    pub fn frame(&mut self, iface: u16, dscp: u8, pcp: Option<u8>) {
        let i = usize::from(iface);
        if self.per_tap.len() <= i {
            self.per_tap.resize(i + 1, [0; 9]);
        }
        let slot = pcp.map_or(8, |p| usize::from(p & 7));
        self.per_tap[i][slot] |= 1 << (dscp & 63);
    }

    /// A CNP to `key`'s QP with DSCP `dscp` and, when tagged, PCP `pcp`.
    pub fn cnp(&mut self, key: FlowKey, dscp: u8, pcp: Option<u8>) {
        self.cnps.entry(key).or_default().frame(Some(dscp), pcp);
    }

    /// Another analyzer's marks of the same run added (a sharded run's
    /// findings judged together): the DSCPs seen per tap and PCP joined,
    /// the CNPs' marks per QP joined.
    pub fn add(&mut self, more: &Marks) {
        if self.per_tap.len() < more.per_tap.len() {
            self.per_tap.resize(more.per_tap.len(), [0; 9]);
        }
        for (a, b) in self.per_tap.iter_mut().zip(&more.per_tap) {
            for (x, y) in a.iter_mut().zip(b) {
                *x |= y;
            }
        }
        for (k, m) in &more.cnps {
            let to = self.cnps.entry(*k).or_default();
            let (dscps, pcps) = (m.dscps, m.pcps);
            to.dscps |= dscps;
            to.pcps |= pcps;
        }
    }

    /// `(iface, dscp, pcp)` seen, in order; `pcp` `None` for untagged.
    pub(super) fn pairs(&self) -> Vec<(u16, u8, Option<u8>)> {
        let mut out = Vec::new();
        for (iface, slots) in self.per_tap.iter().enumerate() {
            for dscp in 0..64u8 {
                for (slot, bits) in slots.iter().enumerate() {
                    if bits & (1 << dscp) != 0 {
                        let pcp = (slot < 8).then_some(slot as u8);
                        out.push((iface as u16, dscp, pcp));
                    }
                }
            }
        }
        out
    }
}

/// The DSCPs and PCPs of a flow's frames at its tap. Packed: 9 bytes in
/// every flow, not 16.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, packed)]
pub struct FlowMarks {
    pub dscps: u64,
    pub pcps: u8,
}

impl FlowMarks {
    pub fn frame(&mut self, dscp: Option<u8>, pcp: Option<u8>) {
        if let Some(d) = dscp {
            self.dscps |= 1 << (d & 63);
        }
        if let Some(p) = pcp {
            self.pcps |= 1 << (p & 7);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_keep_each_dscp_and_pcp_pair_per_tap() {
        let mut m = Marks::default();
        m.frame(2, 26, Some(3));
        m.frame(2, 26, Some(3));
        m.frame(2, 48, Some(6));
        m.frame(0, 0, None);
        assert_eq!(
            m.pairs(),
            [(0, 0, None), (2, 26, Some(3)), (2, 48, Some(6))]
        );
        let mut f = FlowMarks::default();
        f.frame(Some(26), Some(3));
        f.frame(Some(10), Some(3));
        assert_eq!(crate::render::marks_words(&f), "DSCP 10/26 PCP 3");
    }
}
