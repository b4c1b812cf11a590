//! Optional numbers in the room of the number: every flow holds several
//! (docs/analysis.md, "Memory"), and an `Option<u64>` or `Option<usize>`
//! takes 16 bytes, an `Option<u32>` 8, an `Option<u8>` 2.

/// A `u64` or none, in 8 bytes: `u64::MAX`, a time no capture reaches and
/// a span none holds, stands for none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Opt64(u64);

impl Opt64 {
    pub(crate) const NONE: Opt64 = Opt64(u64::MAX);

    pub(crate) fn get(self) -> Option<u64> {
        (self != Self::NONE).then_some(self.0)
    }

    pub(crate) fn some(v: u64) -> Self {
        Opt64(v)
    }
}

impl Default for Opt64 {
    fn default() -> Self {
        Self::NONE
    }
}

/// A `u32` or none, in 4 bytes: `u32::MAX` stands for none (QPNs and PSNs
/// are 24 bits wide; a flow's slot is below `u32::MAX`, as its id is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Opt32(u32);

impl Opt32 {
    pub(crate) const NONE: Opt32 = Opt32(u32::MAX);

    pub(crate) fn get(self) -> Option<u32> {
        (self != Self::NONE).then_some(self.0)
    }

    pub(crate) fn of(v: Option<u32>) -> Self {
        v.map_or(Self::NONE, Opt32)
    }

    /// A flow's slot in the flow table (`u32` wide, as its id).
    pub(crate) fn slot(self) -> Option<usize> {
        self.get().map(|s| s as usize)
    }

    pub(crate) fn of_slot(s: Option<usize>) -> Self {
        Self::of(s.and_then(|s| u32::try_from(s).ok()))
    }
}

impl Default for Opt32 {
    fn default() -> Self {
        Self::NONE
    }
}

/// A small field of a frame's headers or none, in 1 byte: `u8::MAX`
/// stands for none (a DSCP is 6 bits wide, a PCP, priority or transport
/// service 3, a RoCE version 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Opt8(u8);

impl Opt8 {
    pub(crate) const NONE: Opt8 = Opt8(u8::MAX);

    pub(crate) fn get(self) -> Option<u8> {
        (self != Self::NONE).then_some(self.0)
    }

    pub(crate) fn of(v: Option<u8>) -> Self {
        v.map_or(Self::NONE, Opt8)
    }
}

impl Default for Opt8 {
    fn default() -> Self {
        Self::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_and_values_round_trip_in_the_room_of_the_value() {
        assert_eq!(std::mem::size_of::<Opt64>(), 8);
        assert_eq!(std::mem::size_of::<Opt32>(), 4);
        assert_eq!(std::mem::size_of::<Opt8>(), 1);
        assert_eq!(Opt8::of(Some(63)).get(), Some(63));
        assert_eq!(Opt8::default().get(), None);
        assert_eq!(Opt64::default().get(), None);
        assert_eq!(Opt64::some(0).get(), Some(0));
        assert_eq!(Opt32::of(Some(0xff_ffff)).get(), Some(0xff_ffff));
        assert_eq!(Opt32::of(None).get(), None);
        assert_eq!(Opt32::of_slot(Some(7)).slot(), Some(7));
        assert_eq!(Opt32::of_slot(None).slot(), None);
    }
}
