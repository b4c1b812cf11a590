//! Loading the XDP program, attaching it, reading its ring buffer and its
//! counters (aya).
use std::io;

use aya::maps::{HashMap, MapData, PerCpuArray, PerCpuValues};
use aya::programs::{ProgramError, TestRun, TestRunOptions, Xdp, XdpMode};
use aya::{Ebpf, EbpfLoader};
use rocescope_common::summary::{
    FLOW_DELTA_SIZE, FLOW_KEY_SIZE, FLOW_STATE_SIZE, FlowDelta, FlowKey, FlowState, PAIRING_SIZE,
    Pairing, delta_flags,
};
use rocescope_common::wire::Recognition;
use rocescope_common::{PACKET_RECORD_SIZE, PacketRecord, live};

use super::netif;
use super::rings::{self, PAGE, RingItem, RingLayout, RingTuning, TapRing, chain};
use crate::{Error, Result};

/// The XDP program object, built by build.rs.
static PROGRAM_OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/rocescope-ebpf"));

/// `--xdp-mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum XdpModeArg {
    /// Native (driver) XDP where the driver supports it, generic (SKB) otherwise.
    #[default]
    Auto,
    /// Driver mode only: fail if the driver has no XDP support.
    Native,
    /// Generic XDP in the kernel stack: works on every interface, slower.
    Skb,
}

/// The XDP program's counters, summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub frames: u64,
    pub records: u64,
    pub ring_full: u64,
    pub parse_failures: u64,
    /// Summary mode: frames counted in the kernel (no record).
    pub summarized: u64,
    /// Summary mode: flow deltas put on the ring buffer.
    pub deltas: u64,
}

impl Counters {
    /// Bytes of records and deltas put on the ring buffer (payload only;
    /// the ring adds an 8-byte header to each).
    pub fn ring_bytes(&self) -> u64 {
        self.records * PACKET_RECORD_SIZE as u64 + self.deltas * FLOW_DELTA_SIZE as u64
    }
}

/// How the XDP program is loaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// `XDP_DROP` the frames the tap captured (`--drop-after-capture`).
    pub drop_after_capture: bool,
    /// Ring buffer size (per ring) and wake-up batching.
    pub ring: RingTuning,
    /// A ring per CPU or one shared (`--rings`).
    pub layout: RingLayout,
    /// Summary mode (`--mode summary`): see `rocescope_common::summary`.
    pub summary: bool,
    /// Summary mode: the longest a flow's counts wait in the kernel while
    /// it is active (default `live::DEFAULT_FLUSH_NS`).
    pub flush_ns: Option<u64>,
    /// Where transports are recognised (`--udp-port`).
    pub recognition: Recognition,
}

/// Entries of `FLOWS` and `PAIRS` in records mode, where they stay empty.
const RECORDS_MODE_MAP_ENTRIES: u32 = 256;

/// Key and value bytes of the `FLOWS` and `PAIRS` maps.
type KeyBytes = [u8; FLOW_KEY_SIZE];
type FlowsMap = HashMap<MapData, KeyBytes, [u8; FLOW_STATE_SIZE]>;
type PairsMap = HashMap<MapData, KeyBytes, [u8; PAIRING_SIZE]>;

/// Which program of the object to load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// The decoder (`rocescope`).
    Decoder,
    /// `XDP_PASS` plus the frames counter (`rocescope_pass`), the benchmark baseline.
    BarePass,
}

impl Program {
    fn name(self) -> &'static str {
        match self {
            Program::Decoder => live::PROGRAM,
            Program::BarePass => live::PROGRAM_PASS,
        }
    }
}

/// The loaded program with its maps; detaches on drop.
pub struct Tap {
    ebpf: Ebpf,
    program: Program,
    /// The rings not yet taken out (see [`Tap::take_rings`]).
    rings: Vec<TapRing>,
    counters: PerCpuArray<MapData, live::CounterSlots>,
    flows: FlowsMap,
    pairs: PairsMap,
    link: Option<(aya::programs::xdp::XdpLinkId, String, &'static str)>,
}

impl Tap {
    /// Loads (and verifies) the program with one shared ring; nothing is
    /// attached yet.
    pub fn load(program: Program, drop_after_capture: bool, ring: RingTuning) -> Result<Tap> {
        Tap::load_with(
            program,
            &LoadOptions {
                drop_after_capture,
                ring,
                layout: RingLayout::Shared,
                ..LoadOptions::default()
            },
        )
    }

    /// [`Tap::load`] with every option.
    pub fn load_with(program: Program, opts: &LoadOptions) -> Result<Tap> {
        check_privileges()?;
        raise_memlock();
        let drop = u8::from(opts.drop_after_capture);
        let summary = u8::from(opts.summary);
        let flush_ns = opts.flush_ns.unwrap_or(live::DEFAULT_FLUSH_NS);
        let mut loader = EbpfLoader::new();
        loader.override_global(live::GLOBAL_DROP_AFTER_CAPTURE, &drop, true);
        loader.override_global(live::GLOBAL_WAKEUP_BYTES, &opts.ring.wakeup_bytes, true);
        let per_cpu = u8::from(opts.layout == RingLayout::PerCpu);
        loader.override_global(live::GLOBAL_PER_CPU_RINGS, &per_cpu, true);
        if opts.layout == RingLayout::PerCpu {
            // The shared ring stays unused: a page.
            loader.map_max_entries(live::MAP_RECORDS, PAGE);
            let cpus = aya::util::nr_cpus()
                .map_err(|(what, e)| Error::Live(format!("counting CPUs ({what}): {e}")))?;
            loader.map_max_entries(live::MAP_RINGS, cpus as u32);
        } else {
            loader.map_max_entries(live::MAP_RECORDS, opts.ring.bytes);
            loader.map_max_entries(live::MAP_RINGS, 1);
        }
        loader.override_global(live::GLOBAL_SUMMARY, &summary, true);
        loader.override_global(live::GLOBAL_FLUSH_NS, &flush_ns, true);
        loader.override_global(live::GLOBAL_UDP_PORTS, &opts.recognition.udp_ports, true);
        loader.override_global(
            live::GLOBAL_IP_PROTOCOLS,
            &opts.recognition.ip_protocols,
            true,
        );
        let telemetry = opts.recognition.telemetry.to_ne_bytes();
        loader.override_global(live::GLOBAL_TELEMETRY, &telemetry, true);
        if !opts.summary {
            // Records mode never touches the summary maps: keep them small
            // (hash maps are preallocated).
            loader.map_max_entries(live::MAP_FLOWS, RECORDS_MODE_MAP_ENTRIES);
            loader.map_max_entries(live::MAP_PAIRS, RECORDS_MODE_MAP_ENTRIES);
        }
        let mut ebpf = loader
            .load(PROGRAM_OBJECT)
            .map_err(|e| Error::Live(format!("cannot load the XDP program: {}", chain(&e))))?;
        {
            let prog = xdp_mut(&mut ebpf, program)?;
            load_retrying(prog)?;
        }
        let mut take = |name: &str| {
            ebpf.take_map(name)
                .ok_or_else(|| Error::Live(format!("the XDP object has no {name} map")))
        };
        let rings = match opts.layout {
            RingLayout::PerCpu => rings::create_cpu_rings(take(live::MAP_RINGS)?, opts.ring.bytes)?,
            RingLayout::Shared => {
                let ring = aya::maps::RingBuf::try_from(take(live::MAP_RECORDS)?)
                    .map_err(|e| Error::Live(format!("RECORDS map: {}", chain(&e))))?;
                vec![TapRing { cpu: None, ring }]
            }
        };
        let counters = ebpf
            .take_map(live::MAP_COUNTERS)
            .ok_or_else(|| Error::Live("the XDP object has no COUNTERS map".into()))?;
        let counters = PerCpuArray::try_from(counters)
            .map_err(|e| Error::Live(format!("COUNTERS map: {}", chain(&e))))?;
        let mut hash = |name: &str| {
            ebpf.take_map(name)
                .ok_or_else(|| Error::Live(format!("the XDP object has no {name} map")))
        };
        let flows = FlowsMap::try_from(hash(live::MAP_FLOWS)?)
            .map_err(|e| Error::Live(format!("FLOWS map: {}", chain(&e))))?;
        let pairs = PairsMap::try_from(hash(live::MAP_PAIRS)?)
            .map_err(|e| Error::Live(format!("PAIRS map: {}", chain(&e))))?;
        Ok(Tap {
            ebpf,
            program,
            rings,
            counters,
            flows,
            pairs,
            link: None,
        })
    }

    /// Summary mode: tells the kernel that the analyzer paired flows `a`
    /// and `b`, so their in-order requests and plain ACKs may be counted
    /// there from now on.
    ///
    /// Three writes: `a → b` not ready, `b → a` ready, `a → b` ready. A flow
    /// is counted in the kernel only once its entry is ready, and by then
    /// its partner's entry exists, so the partner's deltas can always read
    /// its highest ACKed PSN.
    pub fn pair(&mut self, a: &FlowKey, b: &FlowKey) -> Result<()> {
        for (key, partner, ready) in [(a, b, 0), (b, a, 1), (a, b, 1)] {
            let value = Pairing {
                partner: *partner,
                ready,
            };
            self.pairs
                .insert(key_bytes(key), pairing_bytes(&value), 0)
                .map_err(|e| Error::Live(format!("writing the PAIRS map: {}", chain(&e))))?;
        }
        Ok(())
    }

    /// Summary mode, once detached: the deltas of every flow the kernel
    /// still holds counts (or a highest ACKed PSN) for, oldest activity
    /// first, with the partner values filled in as the kernel would.
    pub fn remaining_deltas(&self) -> Result<Vec<FlowDelta>> {
        let read =
            |e: aya::maps::MapError| Error::Live(format!("reading the FLOWS map: {}", chain(&e)));
        let mut states: std::collections::HashMap<FlowKey, FlowState> =
            std::collections::HashMap::new();
        for item in self.flows.iter() {
            let (_, value) = item.map_err(read)?;
            let st = flow_state_from_bytes(&value);
            states.insert(st.delta.key, st);
        }
        let mut out = Vec::new();
        for st in states.values() {
            let mut d = st.delta;
            d.flags &= delta_flags::ACKED;
            if let Ok(p) = self.pairs.get(&key_bytes(&d.key), 0)
                && let Some(ps) = states.get(&pairing_from_bytes(&p).partner)
            {
                d.flags |= delta_flags::PARTNER;
                d.partner_mtu = ps.delta.mtu;
                if ps.delta.has(delta_flags::ACKED) {
                    d.flags |= delta_flags::PARTNER_ACKED;
                    d.partner_acked_psn = ps.delta.acked_psn;
                }
            }
            if d.packets > 0 || d.flags != 0 {
                out.push(d);
            }
        }
        out.sort_by_key(|d| (d.last_ts_ns, d.key));
        Ok(out)
    }

    /// Attaches to `iface`; returns the mode used (`native` or `skb`).
    pub fn attach(&mut self, iface: &str, mode: XdpModeArg) -> Result<&'static str> {
        if netif::index(iface).is_none() {
            return Err(Error::Interface {
                iface: iface.into(),
                detail: "no such interface (see `ip link`)".into(),
            });
        }
        let program = self.program;
        let prog = xdp_mut(&mut self.ebpf, program)?;
        let attempts: &[(XdpMode, &'static str)] = match mode {
            XdpModeArg::Native => &[(XdpMode::Driver, "native")],
            XdpModeArg::Skb => &[(XdpMode::Skb, "skb")],
            XdpModeArg::Auto => &[(XdpMode::Driver, "native"), (XdpMode::Skb, "skb")],
        };
        let mut last = String::new();
        for &(m, name) in attempts {
            match prog.attach(iface, m) {
                Ok(id) => {
                    self.link = Some((id, iface.to_string(), name));
                    return Ok(name);
                }
                Err(e) => last = format!("{name} mode: {}", chain(&e)),
            }
        }
        Err(Error::Interface {
            iface: iface.into(),
            detail: format!(
                "cannot attach the XDP program ({last}); try --xdp-mode skb, and check that no other XDP program is attached (`ip link show {iface}`)"
            ),
        })
    }

    /// Detaches from the interface (if attached). Errors are ignored: the
    /// interface may be gone already, which detaches too.
    pub fn detach(&mut self) {
        if let Some((id, _, _)) = self.link.take() {
            let program = self.program;
            if let Ok(prog) = xdp_mut(&mut self.ebpf, program) {
                let _ = prog.detach(id);
            }
        }
    }

    /// Runs the program once on `frame` (BPF_PROG_TEST_RUN) and returns
    /// its verdict; a record, if any, is then on the ring buffer.
    pub fn test_run(&mut self, frame: &[u8]) -> Result<u32> {
        let program = self.program;
        let prog = xdp_mut(&mut self.ebpf, program)?;
        let opts = TestRunOptions {
            data_in: Some(frame),
            ..Default::default()
        };
        let r = prog
            .test_run(opts)
            .map_err(|e| Error::Live(format!("BPF_PROG_TEST_RUN: {}", chain(&e))))?;
        Ok(r.return_value)
    }

    /// Runs the program once on `frame` with only its first `linear` bytes
    /// in the linear part and the rest in fragments (a multi-buffer frame,
    /// as a NIC with jumbo frames or header split hands it over): what the
    /// program reads beyond `linear` goes through `bpf_xdp_load_bytes`.
    /// Needs a kernel whose BPF_PROG_TEST_RUN takes the linear size from
    /// `xdp_md.data_end` (6.18 does; older ones reject the context, an
    /// error here).
    pub fn test_run_split(&mut self, frame: &[u8], linear: u32) -> Result<u32> {
        let program = self.program;
        let prog = xdp_mut(&mut self.ebpf, program)?;
        // struct xdp_md: data, data_end, data_meta, ingress_ifindex,
        // rx_queue_index, egress_ifindex (u32 each).
        let mut ctx = [0u8; 24];
        ctx[4..8].copy_from_slice(&linear.to_ne_bytes());
        let opts = TestRunOptions {
            data_in: Some(frame),
            ctx_in: Some(&ctx),
            ..Default::default()
        };
        let r = prog
            .test_run(opts)
            .map_err(|e| Error::Live(format!("BPF_PROG_TEST_RUN: {}", chain(&e))))?;
        Ok(r.return_value)
    }

    /// Runs the program `repeat` times on `frame` (BPF_PROG_TEST_RUN) and
    /// returns its verdict and the kernel's mean time per run: what the
    /// program costs per frame, without a NIC or a sender in the way (the
    /// live benchmark). Records pile up on the ring buffer meanwhile.
    pub fn test_run_repeat(
        &mut self,
        frame: &[u8],
        repeat: u32,
    ) -> Result<(u32, std::time::Duration)> {
        let program = self.program;
        let prog = xdp_mut(&mut self.ebpf, program)?;
        let opts = TestRunOptions {
            data_in: Some(frame),
            repeat,
            ..Default::default()
        };
        let r = prog
            .test_run(opts)
            .map_err(|e| Error::Live(format!("BPF_PROG_TEST_RUN: {}", chain(&e))))?;
        Ok((r.return_value, r.duration))
    }

    /// Instructions the verifier walked to accept the program (its
    /// complexity; the limit is 1M), if the kernel reports it.
    pub fn verified_instructions(&mut self) -> Option<u32> {
        let program = self.program;
        let prog = xdp_mut(&mut self.ebpf, program).ok()?;
        prog.info().ok()?.verified_instruction_count()
    }

    /// The rings, taken out to drain them (each on its own thread).
    pub fn take_rings(&mut self) -> Vec<TapRing> {
        std::mem::take(&mut self.rings)
    }

    /// The next record on the rings, if any (the first ring holding one;
    /// the rings must not have been taken).
    pub fn next_record(&mut self) -> Option<PacketRecord> {
        match self.next_item()? {
            RingItem::Record(r) => Some(r),
            RingItem::Delta(_) => None,
        }
    }

    /// The next item (record or delta) on the rings, if any.
    pub fn next_item(&mut self) -> Option<RingItem> {
        self.rings.iter_mut().find_map(|r| {
            let item = r.ring.next()?;
            rings::item_from_bytes(&item)
        })
    }

    /// Records each CPU's program runs put on the rings (index: CPU number).
    pub fn records_per_cpu(&self) -> Result<Vec<u64>> {
        let per_cpu = self
            .counters
            .get(&0, 0)
            .map_err(|e| Error::Live(format!("reading the counters: {}", chain(&e))))?;
        Ok(per_cpu
            .iter()
            .map(|c| c[live::COUNTER_RECORDS as usize])
            .collect())
    }

    pub fn counters(&self) -> Result<Counters> {
        let per_cpu = self
            .counters
            .get(&0, 0)
            .map_err(|e| Error::Live(format!("reading the counters: {}", chain(&e))))?;
        let get = |slot: u32| -> Result<u64> { Ok(per_cpu.iter().map(|c| c[slot as usize]).sum()) };
        Ok(Counters {
            frames: get(live::COUNTER_FRAMES)?,
            records: get(live::COUNTER_RECORDS)?,
            ring_full: get(live::COUNTER_RING_FULL)?,
            parse_failures: get(live::COUNTER_PARSE_FAILURES)?,
            summarized: get(live::COUNTER_SUMMARIZED)?,
            deltas: get(live::COUNTER_DELTAS)?,
        })
    }

    /// Sets every counter back to 0.
    pub fn reset_counters(&mut self) -> Result<()> {
        let cpus = aya::util::nr_cpus()
            .map_err(|(what, e)| Error::Live(format!("counting CPUs ({what}): {e}")))?;
        let zero = PerCpuValues::try_from(vec![[0u64; live::COUNTERS as usize]; cpus])
            .map_err(|e| Error::Live(format!("resetting the counters: {e}")))?;
        self.counters
            .set(0, zero, 0)
            .map_err(|e| Error::Live(format!("resetting the counters: {}", chain(&e))))?;
        Ok(())
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.detach();
    }
}

fn key_bytes(k: &FlowKey) -> KeyBytes {
    // SAFETY: FlowKey is repr(C) plain old data of exactly this size.
    unsafe { std::mem::transmute::<FlowKey, KeyBytes>(*k) }
}

fn pairing_bytes(p: &Pairing) -> [u8; PAIRING_SIZE] {
    // SAFETY: Pairing is repr(C) plain old data of exactly this size.
    unsafe { std::mem::transmute::<Pairing, [u8; PAIRING_SIZE]>(*p) }
}

fn pairing_from_bytes(b: &[u8; PAIRING_SIZE]) -> Pairing {
    // SAFETY: as above; every bit pattern is valid.
    unsafe { std::ptr::read_unaligned(b.as_ptr().cast::<Pairing>()) }
}

fn flow_state_from_bytes(b: &[u8; FLOW_STATE_SIZE]) -> FlowState {
    // SAFETY: FlowState is repr(C) plain old data of exactly this size.
    unsafe { std::ptr::read_unaligned(b.as_ptr().cast::<FlowState>()) }
}

fn xdp_mut(ebpf: &mut Ebpf, program: Program) -> Result<&mut Xdp> {
    let name = program.name();
    ebpf.program_mut(name)
        .ok_or_else(|| Error::Live(format!("the XDP object has no program {name}")))?
        .try_into()
        .map_err(|e: ProgramError| Error::Live(format!("program {name}: {}", chain(&e))))
}

/// Loads `prog`, again when the verifier was interrupted: it gives up
/// with `EAGAIN` whenever the loading thread has a signal pending (its
/// main loop checks `signal_pending(current)`), as when a SIGCHLD of a
/// process the program spawned is routed to this thread — the live bench
/// polling `ip link` did so on every run. libbpf retries the same way
/// (`PROG_LOAD_ATTEMPTS`, 5).
fn load_retrying(prog: &mut Xdp) -> Result<()> {
    const ATTEMPTS: usize = 5;
    for attempt in 1..=ATTEMPTS {
        match prog.load() {
            Ok(()) => return Ok(()),
            Err(ProgramError::LoadError { io_error, .. })
                if io_error.raw_os_error() == Some(libc::EAGAIN) && attempt < ATTEMPTS => {}
            Err(e) => return Err(load_error(&e)),
        }
    }
    unreachable!("the last attempt returns")
}

fn load_error(e: &ProgramError) -> Error {
    if let ProgramError::LoadError {
        io_error,
        verifier_log,
    } = e
    {
        if io_error.kind() == io::ErrorKind::PermissionDenied {
            return privilege_error();
        }
        return Error::Live(format!(
            "the kernel rejected the XDP program: {io_error}\nverifier log:\n{verifier_log}"
        ));
    }
    Error::Live(format!("cannot load the XDP program: {}", chain(e)))
}

const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

fn privilege_error() -> Error {
    Error::Live(
        "rocescope live needs root, or the capabilities CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON \
         (e.g. `sudo setcap cap_bpf,cap_net_admin,cap_perfmon+ep $(command -v rocescope)`), \
         to load and attach its XDP program"
            .into(),
    )
}

/// Fails early, with what is needed, when loading a BPF program cannot work.
pub fn check_privileges() -> Result<()> {
    // SAFETY: no arguments, no failure.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    let has = |cap: u32| eff & (1u64 << cap) != 0;
    let bpf = has(CAP_BPF) || has(CAP_SYS_ADMIN);
    let perfmon = has(CAP_PERFMON) || has(CAP_SYS_ADMIN);
    if bpf && perfmon && has(CAP_NET_ADMIN) {
        Ok(())
    } else {
        Err(privilege_error())
    }
}

/// Older kernels charge BPF maps to RLIMIT_MEMLOCK; newer ones ignore it.
fn raise_memlock() {
    let unlimited = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: a valid rlimit; failure only means the old limit stays.
    let _ = unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &unlimited) };
}

/// Wall clock minus the monotonic clock `bpf_ktime_get_ns` reads: add it to
/// a kernel timestamp to get nanoseconds since the Unix epoch. Measured once,
/// at start (the two clocks drift apart only by NTP slewing).
pub fn monotonic_to_wall_offset() -> i128 {
    let read = |clock| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec pointer.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
    };
    // Bracket the wall clock between two monotonic reads.
    let m0 = read(libc::CLOCK_MONOTONIC);
    let w = read(libc::CLOCK_REALTIME);
    let m1 = read(libc::CLOCK_MONOTONIC);
    w - (m0 + m1) / 2
}
