//! What the XDP program and the `live` command agree on besides
//! [`PacketRecord`](crate::PacketRecord): map names, counter slots and the
//! load-time settings.

/// `RingBuf` of [`PacketRecord`](crate::PacketRecord)s, kernel → userspace.
pub const MAP_RECORDS: &str = "RECORDS";
/// `ArrayOfMaps` of `RingBuf`s, one per CPU, indexed by CPU number: where
/// records go when [`GLOBAL_PER_CPU_RINGS`] is set. Userspace creates the
/// rings and inserts them.
pub const MAP_RINGS: &str = "RINGS";
/// Entries of [`MAP_RINGS`] in the object; the loader sets the possible
/// CPUs' count.
pub const MAX_RINGS: u32 = 1024;
/// `u8` global: non-zero sends records to this CPU's ring in
/// [`MAP_RINGS`], zero to the one shared [`MAP_RECORDS`].
pub const GLOBAL_PER_CPU_RINGS: &str = "PER_CPU_RINGS";
/// `PerCpuArray<CounterSlots>` with one entry: the counters, indexed by
/// the `COUNTER_*` slots (one map lookup per frame for all of them).
pub const MAP_COUNTERS: &str = "COUNTERS";
/// Name of the XDP program in the object file.
pub const PROGRAM: &str = "rocescope";
/// The benchmark's baseline program: `XDP_PASS` and the frames counter only.
pub const PROGRAM_PASS: &str = "rocescope_pass";
/// `u8` global: non-zero makes the program return `XDP_DROP` for frames it
/// recorded (mirror copies nobody needs after the tap).
pub const GLOBAL_DROP_AFTER_CAPTURE: &str = "DROP_AFTER_CAPTURE";

/// `u8` global: non-zero selects summary mode (see [`crate::summary`]):
/// in-order requests and plain ACKs of paired flows are counted in the
/// kernel, everything else is forwarded as a record after its flow's delta.
pub const GLOBAL_SUMMARY: &str = "SUMMARY";
/// `u64` global: in summary mode, a flow's counters go up as a delta when a
/// packet of it arrives this long (ns) after its last delta.
pub const GLOBAL_FLUSH_NS: &str = "FLUSH_NS";
/// Default of [`GLOBAL_FLUSH_NS`]: 10 ms.
pub const DEFAULT_FLUSH_NS: u64 = 10_000_000;
/// `LruHashMap<FlowKey, FlowState>`: summary mode's per-flow kernel state.
pub const MAP_FLOWS: &str = "FLOWS";
/// Flows [`MAP_FLOWS`] holds before the least recently used is evicted.
pub const FLOWS_MAX: u32 = 65_536;
/// `HashMap<FlowKey, Pairing>`: flows the analyzer has paired, written by
/// userspace (both directions of each pair).
pub const MAP_PAIRS: &str = "PAIRS";
/// Entries of [`MAP_PAIRS`] (two per pair).
pub const PAIRS_MAX: u32 = 65_536;

/// `[u16; TRANSPORT_COUNT]` global: each transport's UDP destination port
/// (`wire::Recognition::udp_ports`; 0 = not over UDP).
pub const GLOBAL_UDP_PORTS: &str = "UDP_PORTS";
/// `[u16; TRANSPORT_COUNT]` global: each transport's native IP protocol
/// number (`wire::Recognition::ip_protocols`; 0 = none).
pub const GLOBAL_IP_PROTOCOLS: &str = "IP_PROTOCOLS";
/// `wire::telemetry::TelemetryMarks` global: where switch telemetry is
/// marked (`wire::Recognition::telemetry`).
pub const GLOBAL_TELEMETRY: &str = "TELEMETRY";

/// `u64` global: wake the consumer only when the bytes waiting on the ring
/// buffer cross a multiple of this (0 = a wake-up whenever the consumer
/// has caught up).
pub const GLOBAL_WAKEUP_BYTES: &str = "WAKEUP_BYTES";

/// Default ring buffer size in bytes (a power of two multiple of the page
/// size): about 320 000 records, a third of a second at 1 M frames/s, to
/// ride out a busy consumer (measured: docs/benchmarks.md, "Live").
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

/// Frames counted into a flow's kernel state instead of becoming a record
/// (summary mode).
pub const COUNTER_SUMMARIZED: u32 = 4;
/// [`FlowDelta`](crate::summary::FlowDelta)s put on the ring buffer (summary mode).
pub const COUNTER_DELTAS: u32 = 5;
/// Number of counter slots.
pub const COUNTERS: u32 = 6;
/// The value of [`MAP_COUNTERS`]: one CPU's counters.
pub type CounterSlots = [u64; COUNTERS as usize];
