//! Optional numbers in the room of the number: every flow holds several
//! (docs/analysis.md, "Memory"), and an `Option<u64>` or `Option<usize>`
//! takes 16 bytes, an `Option<u32>` 8, an `Option<u8>` 2.

/// An optional `$t` in the room of a `$t`: its largest value stands for
/// none.
macro_rules! sentinel {
    ($(#[$doc:meta])* $name:ident, $t:ty) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) struct $name($t);

        // Not every width uses both constructors.
        #[allow(dead_code)]
        impl $name {
            pub(crate) const NONE: $name = $name(<$t>::MAX);

            pub(crate) fn get(self) -> Option<$t> {
                (self != Self::NONE).then_some(self.0)
            }

            pub(crate) fn some(v: $t) -> Self {
                $name(v)
            }

            pub(crate) fn of(v: Option<$t>) -> Self {
                v.map_or(Self::NONE, $name)
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::NONE
            }
        }
    };
}

sentinel!(
    /// A `u64` or none, in 8 bytes: `u64::MAX`, a time no capture reaches
    /// and a span none holds, stands for none.
    Opt64,
    u64
);

sentinel!(
    /// A `u32` or none, in 4 bytes: `u32::MAX` stands for none (QPNs and
    /// PSNs are 24 bits wide; a flow's slot is below `u32::MAX`, as its id
    /// is).
    Opt32,
    u32
);

impl Opt32 {
    /// A flow's slot in the flow table (`u32` wide, as its id).
    pub(crate) fn slot(self) -> Option<usize> {
        self.get().map(|s| s as usize)
    }

    pub(crate) fn of_slot(s: Option<usize>) -> Self {
        Self::of(s.and_then(|s| u32::try_from(s).ok()))
    }
}

sentinel!(
    /// A small field of a frame's headers or none, in 1 byte: `u8::MAX`
    /// stands for none (a DSCP is 6 bits wide, a PCP, priority or transport
    /// service 3).
    Opt8,
    u8
);

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
