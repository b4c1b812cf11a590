//! The names of the counts every flow keeps (docs/analysis.md, "Memory"):
//! a leaf the trackers that count (`sequence`, `responses`) and the flow
//! table that holds the counts (`flows::counts`) both name.

/// The counts every flow keeps.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Count {
    Packets,
    Bytes,
    DataPackets,
    PayloadBytes,
    GoodputBytes,
    Retrans,
    Acks,
    Ce,
    Responses,
    /// CNPs resolved at the end.
    Cnps,
}

pub(crate) const COUNTS: usize = 10;

/// The low 32 bits of each [`Count`].
pub(crate) type Low = [u32; COUNTS];

/// The high 32 bits of each [`Count`], held from the first carry on.
pub(crate) type High = [u32; COUNTS];
