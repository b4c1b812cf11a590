//! What the XDP program and the `live` command agree on besides
//! [`PacketRecord`](crate::PacketRecord): map names, counter slots and the
//! load-time setting.

/// `RingBuf` of [`PacketRecord`](crate::PacketRecord)s, kernel → userspace.
pub const MAP_RECORDS: &str = "RECORDS";
/// `PerCpuArray<u64>` of counters, indexed by the `COUNTER_*` slots.
pub const MAP_COUNTERS: &str = "COUNTERS";
/// Name of the XDP program in the object file.
pub const PROGRAM: &str = "rocescope";
/// The benchmark's baseline program: `XDP_PASS` and the frames counter only.
pub const PROGRAM_PASS: &str = "rocescope_pass";
/// `u8` global: non-zero makes the program return `XDP_DROP` for frames it
/// recorded (mirror copies nobody needs after the tap).
pub const GLOBAL_DROP_AFTER_CAPTURE: &str = "DROP_AFTER_CAPTURE";

/// `u64` global: wake the consumer only once this many bytes wait on the
/// ring buffer (0 = a wake-up whenever the consumer has caught up).
pub const GLOBAL_WAKEUP_BYTES: &str = "WAKEUP_BYTES";

/// Default ring buffer size in bytes (a power of two multiple of the page
/// size): about 320 000 records, a third of a second at 1 M frames/s, to
/// ride out a busy consumer (measured: README "Benchmarks", live).
pub const DEFAULT_RING_BYTES: u32 = 64 << 20;
/// Default wake-up threshold in bytes (see [`GLOBAL_WAKEUP_BYTES`]): about
/// 5 000 records per wake-up instead of up to one per record.
pub const DEFAULT_WAKEUP_BYTES: u64 = 1 << 20;
/// Default interval, in milliseconds, at which the consumer drains the ring
/// without a wake-up (what batched wake-ups leave waiting arrives then).
pub const DEFAULT_POLL_MS: u64 = 5;

/// Frames the program ran on.
pub const COUNTER_FRAMES: u32 = 0;
/// Records put on the ring buffer.
pub const COUNTER_RECORDS: u32 = 1;
/// Records lost because the ring buffer was full (userspace too slow).
pub const COUNTER_RING_FULL: u32 = 2;
/// Frames whose walk stopped at a header that was cut short or invalid
/// (including `Malformed` RoCE datagrams).
pub const COUNTER_PARSE_FAILURES: u32 = 3;
/// Number of counter slots.
pub const COUNTERS: u32 = 4;
