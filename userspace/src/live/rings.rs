//! The ring buffers between the XDP program and rocescope: their layout
//! (one shared, or one per CPU), size and wake-up batching, creating the
//! per-CPU rings, and reading their items.
use aya::maps::{ArrayOfMaps, Map, MapData, RingBuf};
use rocescope_common::summary::{FLOW_DELTA_SIZE, FlowDelta};
use rocescope_common::{PACKET_RECORD_SIZE, PacketRecord, live};

use crate::{Error, Result};

/// The smallest ring buffer (a page).
pub(super) const PAGE: u32 = 4096;

/// `--rings`: where the XDP program puts its records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum RingLayout {
    /// A ring per CPU: each CPU that receives frames writes to its own
    /// ring, drained by its own rocescope thread.
    #[default]
    PerCpu,
    /// One ring all CPUs share (their writes serialise on its lock).
    Shared,
}

impl RingLayout {
    pub fn as_str(self) -> &'static str {
        match self {
            RingLayout::PerCpu => "per-cpu",
            RingLayout::Shared => "shared",
        }
    }
}

/// Ring-buffer size and wake-up batching (see `rocescope live --help`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingTuning {
    /// Ring size in bytes: a power of two, a multiple of the page size.
    pub bytes: u32,
    /// Wake the consumer each time the bytes waiting cross a multiple of
    /// this (0: whenever it has caught up, the kernel's default).
    pub wakeup_bytes: u64,
    /// How often the consumer drains the ring without being woken.
    pub poll: std::time::Duration,
}

impl Default for RingTuning {
    fn default() -> Self {
        RingTuning {
            bytes: live::DEFAULT_RING_BYTES,
            wakeup_bytes: live::DEFAULT_WAKEUP_BYTES,
            poll: std::time::Duration::from_millis(live::DEFAULT_POLL_MS),
        }
    }
}

impl RingTuning {
    /// The defaults with a user's `--ring-size` and `--wakeup`, checked.
    pub fn new(bytes: Option<u64>, wakeup_bytes: Option<u64>) -> Result<RingTuning> {
        let d = RingTuning::default();
        let bytes = bytes.unwrap_or(u64::from(d.bytes));
        let wakeup_bytes = wakeup_bytes.unwrap_or(d.wakeup_bytes);
        let page = u64::from(PAGE);
        if !bytes.is_power_of_two() || bytes < page || bytes > 1 << 31 {
            return Err(Error::Usage(format!(
                "--ring-size {bytes}: give a power of two between 4KiB and 2GiB (e.g. 64MiB)"
            )));
        }
        if wakeup_bytes >= bytes {
            return Err(Error::Usage(format!(
                "--wakeup {wakeup_bytes}: give less than the ring size ({bytes} bytes), or 0 to wake on every catch-up"
            )));
        }
        Ok(RingTuning {
            bytes: bytes as u32,
            wakeup_bytes,
            ..d
        })
    }
}

/// One item of the ring buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingItem {
    Record(PacketRecord),
    Delta(FlowDelta),
}

impl RingItem {
    /// The item's kernel time: a record's stamp, a delta's last counted frame.
    pub fn kernel_ts(&self) -> u64 {
        match self {
            RingItem::Record(r) => r.ts_ns,
            RingItem::Delta(d) => d.last_ts_ns,
        }
    }
}

/// A ring the program writes to, with the CPU it belongs to (`None`: the
/// shared ring).
pub struct TapRing {
    pub cpu: Option<u32>,
    pub ring: RingBuf<MapData>,
}

/// Creates a ring of `bytes` for each online CPU and inserts it into the
/// program's `RINGS` array at the CPU's number. A CPU brought online later
/// has no ring: its records count as ring-full drops.
pub(super) fn create_cpu_rings(rings: Map, bytes: u32) -> Result<Vec<TapRing>> {
    let mut outer: ArrayOfMaps<MapData, MapData> = ArrayOfMaps::try_from(rings)
        .map_err(|e| Error::Live(format!("RINGS map: {}", chain(&e))))?;
    let cpus = aya::util::online_cpus()
        .map_err(|(what, e)| Error::Live(format!("listing the online CPUs ({what}): {e}")))?;
    let mut out = Vec::with_capacity(cpus.len());
    for cpu in cpus {
        let def = aya_obj::Map::new_from_params(
            aya_obj::generated::bpf_map_type::BPF_MAP_TYPE_RINGBUF as u32,
            0,
            0,
            bytes,
            0,
        );
        let fail = |e: &dyn std::error::Error| {
            Error::Live(format!(
                "creating the ring buffer of CPU {cpu}: {} (kernels before 5.10 take only --rings shared)",
                chain(e)
            ))
        };
        let ring = MapData::create(def, "rocescope_cpu", None).map_err(|e| fail(&e))?;
        outer.set(cpu, &ring, 0).map_err(|e| fail(&e))?;
        let ring = RingBuf::try_from(Map::from_map_data(ring).map_err(|e| fail(&e))?)
            .map_err(|e| fail(&e))?;
        out.push(TapRing {
            cpu: Some(cpu),
            ring,
        });
    }
    Ok(out)
}

/// A ring buffer item as a record (`None` if it is not one record long).
pub fn record_from_bytes(bytes: &[u8]) -> Option<PacketRecord> {
    if bytes.len() != PACKET_RECORD_SIZE {
        return None;
    }
    // SAFETY: PacketRecord is repr(C) plain old data of exactly this size
    // (every bit pattern is valid: integers and byte arrays only).
    Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<PacketRecord>()) })
}

/// A ring buffer item, told apart by its length (`None` for any other length).
pub fn item_from_bytes(bytes: &[u8]) -> Option<RingItem> {
    match bytes.len() {
        PACKET_RECORD_SIZE => record_from_bytes(bytes).map(RingItem::Record),
        FLOW_DELTA_SIZE => {
            // SAFETY: FlowDelta is repr(C) plain old data of exactly this size.
            Some(RingItem::Delta(unsafe {
                std::ptr::read_unaligned(bytes.as_ptr().cast::<FlowDelta>())
            }))
        }
        _ => None,
    }
}

/// An error and its sources on one line.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_tuning_checks_what_the_kernel_would_refuse() {
        let d = RingTuning::new(None, None).unwrap();
        assert_eq!(d, RingTuning::default());
        let t = RingTuning::new(Some(16 << 20), Some(0)).unwrap();
        assert_eq!((t.bytes, t.wakeup_bytes), (16 << 20, 0));
        for (bytes, wakeup) in [(3 << 20, 0), (1024, 0), (4 << 30, 0), (16 << 20, 16 << 20)] {
            let e = RingTuning::new(Some(bytes), Some(wakeup))
                .unwrap_err()
                .to_string();
            assert!(e.contains("--ring-size") || e.contains("--wakeup"), "{e}");
        }
    }
}
