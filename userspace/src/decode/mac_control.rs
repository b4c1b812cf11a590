//! MAC Control frames (EtherType 0x8808): IEEE 802.3 Annex 31B PAUSE and
//! IEEE 802.1Qbb priority-based flow control.
use rocescope_common::proto::mac_control;

use super::field;

fixed_view! {
    /// The opcode every MAC Control frame starts with.
    MacControl, 2
}

impl<T: AsRef<[u8]>> MacControl<T> {
    pub fn opcode(&self) -> u16 {
        field::be16(self.bytes(), 0)
    }
}

fixed_view! {
    /// 802.3x PAUSE: opcode 0x0001, pause_time.
    Pause, mac_control::PAUSE_LEN
}

impl<T: AsRef<[u8]>> Pause<T> {
    pub fn opcode(&self) -> u16 {
        field::be16(self.bytes(), 0)
    }

    /// Quanta of 512 bit times; 0 resumes at once.
    pub fn pause_time(&self) -> u16 {
        field::be16(self.bytes(), 2)
    }
}

fixed_view! {
    /// 802.1Qbb PFC: opcode 0x0101, class-enable vector, eight times.
    Pfc, mac_control::PFC_LEN
}

impl<T: AsRef<[u8]>> Pfc<T> {
    pub fn opcode(&self) -> u16 {
        field::be16(self.bytes(), 0)
    }

    /// One bit per priority (bit n = priority n); the top byte is reserved.
    pub fn class_enable_vector(&self) -> u16 {
        field::be16(self.bytes(), 2)
    }

    pub fn enabled(&self, priority: usize) -> bool {
        priority < mac_control::PRIORITIES && self.class_enable_vector() & (1 << priority) != 0
    }

    /// Pause time of `priority` (meaningful when [`Pfc::enabled`]); 0 for
    /// priorities past 7.
    pub fn time(&self, priority: usize) -> u16 {
        if priority < mac_control::PRIORITIES {
            field::be16(self.bytes(), 4 + 2 * priority)
        } else {
            0
        }
    }

    pub fn times(&self) -> [u16; mac_control::PRIORITIES] {
        core::array::from_fn(|p| self.time(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pause_fields() {
        let b = [0x00, 0x01, 0xFF, 0xFF];
        assert_eq!(MacControl::new_checked(&b[..]).unwrap().opcode(), 0x0001);
        let p = Pause::new_checked(&b[..]).unwrap();
        assert_eq!(p.opcode(), mac_control::OPCODE_PAUSE);
        assert_eq!(p.pause_time(), 0xFFFF);
        assert!(Pause::new_checked(&b[..3]).is_err());
        assert!(MacControl::new_checked(&b[..1]).is_err());
    }

    #[test]
    fn pfc_fields() {
        let b = [
            0x01, 0x01, // PFC
            0xFF, 0x88, // reserved byte set, priorities 3 and 7
            0x00, 0x00, 0x00, 0x01, 0x00, 0x02, 0xFF, 0xFF, // times 0-3
            0x00, 0x04, 0x00, 0x05, 0x00, 0x06, 0x12, 0x34, // times 4-7
        ];
        let p = Pfc::new_checked(&b[..]).unwrap();
        assert_eq!(p.opcode(), mac_control::OPCODE_PFC);
        assert_eq!(p.class_enable_vector(), 0xFF88);
        assert!(p.enabled(3) && p.enabled(7) && !p.enabled(0) && !p.enabled(8));
        assert_eq!(p.times(), [0, 1, 2, 0xFFFF, 4, 5, 6, 0x1234]);
        assert_eq!(p.time(8), 0);
        assert!(Pfc::new_checked(&b[..19]).is_err());
    }
}
