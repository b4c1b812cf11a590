//! MAC Control frames (802.1Qbb PFC, 802.3x PAUSE) and frames taken as
//! given bytes.

use rocescope_common::proto::{ethernet, mac_control};
use rocescope_common::wire::field;

use super::{EthHeader, MAC_CONTROL_DST, VlanTag, WireFrame, pad_min, put};

/// 802.1Qbb priority flow control frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcFrame {
    /// Normally [`MAC_CONTROL_DST`].
    pub dst: [u8; 6],
    pub src: [u8; 6],
    /// PFC is normally untagged; some switches mirror it with a tag.
    pub vlan: Option<VlanTag>,
    /// Class-enable vector: bit `p` enables `quanta[p]`.
    pub enable: u8,
    /// Pause time per priority, in quanta of 512 bit times.
    pub quanta: [u16; 8],
}

impl Default for PfcFrame {
    fn default() -> Self {
        PfcFrame {
            dst: MAC_CONTROL_DST,
            src: [0x02, 0, 0, 0, 0, 0xFE],
            vlan: None,
            enable: 0,
            quanta: [0; 8],
        }
    }
}

impl PfcFrame {
    /// Pause (or, with `quanta` 0, resume) one priority.
    pub fn single(priority: u8, quanta: u16) -> PfcFrame {
        let mut f = PfcFrame {
            enable: 1 << (priority & 7),
            ..PfcFrame::default()
        };
        f.quanta[usize::from(priority & 7)] = quanta;
        f
    }
}

impl WireFrame for PfcFrame {
    fn append(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let eth = EthHeader {
            dst: self.dst,
            src: self.src,
            outer_vlan: None,
            vlan: self.vlan,
        };
        eth.append(out, ethernet::ETHERTYPE_MAC_CONTROL);
        use field::mac_control as fm;
        let mut h = [0u8; mac_control::PFC_LEN];
        put(&mut h, fm::OPCODE, &mac_control::OPCODE_PFC.to_be_bytes());
        put(
            &mut h,
            fm::CLASS_ENABLE_VECTOR,
            &u16::from(self.enable).to_be_bytes(),
        );
        for (i, q) in self.quanta.iter().enumerate() {
            put(&mut h, fm::TIMES + 2 * i, &q.to_be_bytes());
        }
        out.extend_from_slice(&h);
        pad_min(out, start);
    }
}

/// 802.3x PAUSE frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PauseFrame {
    /// Normally [`MAC_CONTROL_DST`].
    pub dst: [u8; 6],
    pub src: [u8; 6],
    pub vlan: Option<VlanTag>,
    /// Pause time in quanta of 512 bit times (0 resumes).
    pub quanta: u16,
}

impl Default for PauseFrame {
    fn default() -> Self {
        PauseFrame {
            dst: MAC_CONTROL_DST,
            src: [0x02, 0, 0, 0, 0, 0xFE],
            vlan: None,
            quanta: 0xFFFF,
        }
    }
}

impl WireFrame for PauseFrame {
    fn append(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let eth = EthHeader {
            dst: self.dst,
            src: self.src,
            outer_vlan: None,
            vlan: self.vlan,
        };
        eth.append(out, ethernet::ETHERTYPE_MAC_CONTROL);
        use field::mac_control as fm;
        let mut h = [0u8; mac_control::PAUSE_LEN];
        put(&mut h, fm::OPCODE, &mac_control::OPCODE_PAUSE.to_be_bytes());
        put(&mut h, fm::PAUSE_TIME, &self.quanta.to_be_bytes());
        out.extend_from_slice(&h);
        pad_min(out, start);
    }
}

/// Already built frame bytes, to write as they are (or to wrap in ERSPAN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawFrame<'a>(pub &'a [u8]);

impl WireFrame for RawFrame<'_> {
    fn append(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.0);
    }
}
