//! A flow's counts in 32 bits each (docs/analysis.md, "Memory"): what one
//! flow counts past 2^32 (a flow of more than 4 GiB, or 4 billion packets)
//! carries its high part into the rare counts, so every count reads as the
//! `u64` it was.

use super::Flow;
use crate::analyze::count::Count;

impl Flow {
    /// Count `c` as a `u64`.
    pub(crate) fn count(&self, c: Count) -> u64 {
        let high = self.rare().high.as_ref().map_or(0, |h| h[c as usize]);
        u64::from(high) << 32 | u64::from(self.low[c as usize])
    }

    /// Adds `n` to count `c`.
    pub(in crate::analyze) fn add(&mut self, c: Count, n: u64) {
        let sum = u64::from(self.low[c as usize]) + n;
        self.low[c as usize] = sum as u32;
        let carry = (sum >> 32) as u32;
        if carry > 0 {
            let high = self.rare_mut().high.get_or_insert_with(Box::default);
            high[c as usize] = high[c as usize].wrapping_add(carry);
        }
    }

    /// Sets count `c` to `n`.
    pub(in crate::analyze) fn set(&mut self, c: Count, n: u64) {
        self.low[c as usize] = n as u32;
        let high = (n >> 32) as u32;
        if high > 0 || self.rare().high.is_some() {
            self.rare_mut().high.get_or_insert_with(Box::default)[c as usize] = high;
        }
    }

    pub(crate) fn packets(&self) -> u64 {
        self.count(Count::Packets)
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.count(Count::Bytes)
    }

    pub(crate) fn data_packets(&self) -> u64 {
        self.count(Count::DataPackets)
    }

    pub(crate) fn payload_bytes(&self) -> u64 {
        self.count(Count::PayloadBytes)
    }

    pub(crate) fn goodput_bytes(&self) -> u64 {
        self.count(Count::GoodputBytes)
    }

    pub(crate) fn retrans(&self) -> u64 {
        self.count(Count::Retrans)
    }

    pub(crate) fn acks(&self) -> u64 {
        self.count(Count::Acks)
    }

    pub(crate) fn ce(&self) -> u64 {
        self.count(Count::Ce)
    }

    pub(crate) fn responses(&self) -> u64 {
        self.count(Count::Responses)
    }

    pub(crate) fn cnps(&self) -> u64 {
        self.count(Count::Cnps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_past_two_to_the_32_carries_into_the_rare_counts() {
        let mut f = Flow::new(0, (0, [0; 16], [0; 16], 1), 0);
        f.add(Count::Bytes, u64::from(u32::MAX));
        assert!(f.rare.is_none());
        f.add(Count::Bytes, 2);
        f.add(Count::Bytes, 3 << 32);
        assert_eq!(f.bytes(), u64::from(u32::MAX) + 2 + (3 << 32));
        f.add(Count::Packets, 1);
        assert_eq!((f.packets(), f.payload_bytes()), (1, 0));
    }
}
