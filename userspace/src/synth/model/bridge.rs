//! From the model's [`FrameSpec`]s to bytes (the frame builder in
//! [`crate::synth::frame`]) and to capture files, one per tap.

use super::fabric::Run;
use super::spec::FrameSpec;
use crate::proto::ib;
use crate::synth::capture_writer::CaptureWrite;
use crate::synth::frame::{
    Bth, EthHeader, ExtHeaders, IcrcMode, IpAddrs, IpHeader, PfcFrame, RoceFrame, VlanTag,
    WireFrame,
};
use std::io;
use std::path::Path;

use crate::synth::capture_writer::{PcapWriter, PcapngWriter};
use crate::synth::frame::{Erspan, ErspanVersion, RawFrame};
use crate::synth::model::postcards::{Postcard, TelemetryCfg};
use crate::synth::telemetry::{IntHop, Report};
use crate::{Error, Result};
use rocescope_common::hw_time;
use rocescope_common::proto::linktype;
use rocescope_common::wire::{Recognition, TransportId};

/// RoCEv2's port, as the transport registry has it.
const ROCE_PORT: u16 = Recognition::DEFAULT.udp_port(TransportId::Roce);

/// Model time 0 in a capture: 2026-01-01T00:00:00Z, so timestamps look real.
pub const EPOCH_NS: u64 = 1_767_225_600_000_000_000;

/// Appends the Ethernet frame (no FCS) for `spec` to `out`.
pub fn append_frame(spec: &FrameSpec, out: &mut Vec<u8>) {
    match spec {
        FrameSpec::Roce(r) => {
            let mut ext = ExtHeaders::default();
            if let Some(x) = r.reth {
                ext.reth_va = x.va;
                ext.reth_rkey = x.rkey;
                ext.reth_len = x.len;
            }
            if let Some(a) = r.aeth {
                ext.aeth_syndrome = a.syndrome;
                ext.aeth_msn = a.msn;
            }
            let f = RoceFrame {
                eth: EthHeader {
                    dst: r.dst_mac,
                    src: r.src_mac,
                    outer_vlan: None,
                    vlan: r.vlan.map(|v| VlanTag::dot1q(v.vid, v.pcp)),
                },
                ip: IpHeader {
                    addrs: IpAddrs::V4 {
                        src: r.src_ip,
                        dst: r.dst_ip,
                    },
                    dscp: r.dscp,
                    ecn: r.ecn,
                    ttl: r.ttl,
                    ..IpHeader::default()
                },
                udp_sport: r.udp_sport,
                bth: Bth {
                    opcode: r.opcode,
                    fecn: r.fecn,
                    becn: r.becn,
                    dest_qp: r.dest_qp,
                    ack_req: r.ack_req,
                    psn: r.psn,
                    ..Bth::default()
                },
                ext,
                payload_len: r.payload_len as usize,
                payload_seed: r.psn as u8,
                // A trimmed frame carries no valid ICRC: the switch cut
                // the bytes it covered and computes none.
                icrc: if r.corrupt || r.trimmed {
                    IcrcMode::Corrupt
                } else {
                    IcrcMode::Valid
                },
                ..RoceFrame::default()
            };
            f.append(out);
        }
        FrameSpec::Cnp(c) => {
            let mut f = RoceFrame::cnp(c.dest_qp);
            f.eth = EthHeader {
                dst: c.dst_mac,
                src: c.src_mac,
                outer_vlan: None,
                vlan: c.vlan.map(|v| VlanTag::dot1q(v.vid, v.pcp)),
            };
            f.ip = IpHeader {
                addrs: IpAddrs::V4 {
                    src: c.src_ip,
                    dst: c.dst_ip,
                },
                dscp: c.dscp,
                ecn: c.ecn,
                ttl: c.ttl,
                ..IpHeader::default()
            };
            f.udp_sport = c.udp_sport;
            f.bth.fecn = c.fecn;
            f.bth.becn = c.becn;
            debug_assert_eq!(f.bth.opcode, ib::OPCODE_CNP);
            f.append(out);
        }
        FrameSpec::Pfc(p) => {
            let f = PfcFrame {
                dst: p.dst_mac,
                src: p.src_mac,
                vlan: None,
                enable: p.enable_vector as u8,
                quanta: p.quanta,
            };
            f.append(out);
        }
        FrameSpec::Transport(t) => t.append(out),
    }
}

/// The collector's MAC and address: where every switch sends its reports.
const COLLECTOR_MAC: [u8; 6] = [0x02, 0x43, 0x4F, 0x4C, 0x00, 0x01];
const COLLECTOR_IP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(192, 0, 2, 254);

/// The Telemetry Report v2.0 frame a switch sent for `card` (UDP from the
/// switch's 192.0.2.ID to the collector, docs/synth-truth.md "telemetry"):
/// its hop metadata, a drop report's queue and reason, and the first
/// `cfg.truncate` bytes of the packet. Occupancy past 24 bits reads as
/// 0xFFFFFF, as a saturating switch would say it.
pub fn report_frame(card: &Postcard, cfg: &TelemetryCfg) -> Vec<u8> {
    let mut packet = Vec::with_capacity(256);
    append_frame(&card.packet, &mut packet);
    let id = card.switch_id;
    Report {
        dst_mac: COLLECTOR_MAC,
        src_mac: [0x02, 0x53, 0x57, 0x00, (id >> 8) as u8, id as u8],
        ip: IpHeader {
            addrs: IpAddrs::V4 {
                src: std::net::Ipv4Addr::new(192, 0, 2, id as u8),
                dst: COLLECTOR_IP,
            },
            dscp: 0,
            ecn: 0,
            ..IpHeader::default()
        },
        dport: cfg.collector_port,
        hw_id: 0,
        sequence: card.sequence,
        node_id: id,
        dropped: card.dropped,
        congested_queue: card.congested,
        tracked_flow: true,
        hop: IntHop {
            node_id: id,
            ingress_port: card.ingress_port,
            egress_port: card.egress_port,
            hop_latency: card.hop_latency_ns,
            queue_id: card.queue,
            queue_occupancy: card.occupancy.min(0x00FF_FFFF),
            ingress_ts: EPOCH_NS + card.arrival_ns,
            egress_ts: EPOCH_NS + card.ts_ns,
        },
        drop: card.drop_reason.map(|reason| (card.queue, reason)),
        truncate: cfg.truncate as usize,
    }
    .frame(&packet)
}

/// Writes every frame tap `tap` recorded into `w` (interface id `iface`),
/// timestamps offset by `epoch_ns`. Returns the number of frames written.
pub fn write_tap(
    run: &Run,
    tap: usize,
    iface: u32,
    epoch_ns: u64,
    w: &mut impl CaptureWrite,
) -> io::Result<usize> {
    let mut buf = Vec::with_capacity(9000);
    let mut n = 0;
    for f in run.frames.iter().filter(|f| f.tap == tap) {
        buf.clear();
        append_frame(&f.frame, &mut buf);
        w.write_frame(iface, epoch_ns + f.ts_ns, &buf)?;
        n += 1;
    }
    Ok(n)
}

/// How [`write_capture`] writes a run.
#[derive(Clone, Debug, Default)]
pub struct CaptureOptions {
    /// Keep at most this many bytes of each frame (0: everything).
    pub snaplen: u32,
    /// Deliver every mirrored frame inside ERSPAN over GRE, as a remote
    /// mirror session does.
    pub erspan: Option<ErspanVersion>,
    /// How ERSPAN III stamps each frame with the model's time.
    pub erspan_time: ErspanTime,
    /// Only these taps (indices into `run.taps`); `None`: every tap.
    pub taps: Option<Vec<usize>>,
    /// Write each tap as a NIC's RDMA sniffer (`tcpdump -i mlx5_N`) records
    /// it: every RoCE frame (CNPs included) with its UDP source port
    /// rewritten to 4791 and its source MAC to the NIC's nanosecond clock
    /// ([`sniffer_mac`]) — so no ICRC matches — and frames longer than this
    /// many bytes cut to it, with the record's original length saying the
    /// cut length (only the IP total length shows the cut); every frame
    /// timestamped to the microsecond, as libpcap's `gettimeofday` does.
    /// `Some(0)` rewrites without cutting.
    pub sniffer: Option<u32>,
}

/// How the mirror session stamps ERSPAN III frames: the model's time of
/// the frame (the capture's timestamp of it), in the granularity's units
/// (`rocescope_common::hw_time::GRA_*`), with or without the platform
/// subheader's upper word. By default IEEE 1588 nanoseconds without the
/// seconds: frame times read from it are the capture's, to the nanosecond.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErspanTime {
    pub granularity: u8,
    pub upper: bool,
}

impl Default for ErspanTime {
    fn default() -> Self {
        ErspanTime {
            granularity: hw_time::GRA_IEEE_1588,
            upper: false,
        }
    }
}

impl ErspanTime {
    /// Platform ids of the subheader (Wireshark's `packet-cisco-erspan.c`):
    /// 3 carries the upper 32 bits, 5 the IEEE 1588 seconds.
    const PLATFORM_UPPER: u8 = 3;
    const PLATFORM_SECONDS: u8 = 5;

    /// The header's timestamp word and subheader for a frame at `ns` since
    /// the epoch; `None` for a user-defined granularity, which has no
    /// units to write in.
    pub fn stamp(self, ns: u64) -> Option<(u32, Option<[u8; 8]>)> {
        let (value, upper, id) = match self.granularity {
            hw_time::GRA_100_US => (ns / 100_000, (ns / 100_000) >> 32, Self::PLATFORM_UPPER),
            hw_time::GRA_100_NS => (ns / 100, (ns / 100) >> 32, Self::PLATFORM_UPPER),
            hw_time::GRA_IEEE_1588 => (ns % NS_PER_SEC, ns / NS_PER_SEC, Self::PLATFORM_SECONDS),
            _ => return None,
        };
        let platform = self.upper.then(|| {
            let mut p = [0u8; 8];
            p[0] = id << 2;
            p[4..].copy_from_slice(&(upper as u32).to_be_bytes());
            p
        });
        Some((value as u32, platform))
    }

    /// The subheader's bytes in every frame.
    fn platform_len(self) -> usize {
        if self.upper { 8 } else { 0 }
    }
}

const NS_PER_SEC: u64 = 1_000_000_000;

/// The reading of tap `tap`'s NIC clock at the model's time 0: the NIC
/// booted 5 hours before, each tap's a second and a bit later than the one
/// before (its own clock, not the capture host's).
pub fn sniffer_boot_ns(tap: usize) -> u64 {
    5 * 3600 * NS_PER_SEC + tap as u64 * 1_000_123_457
}

/// The source MAC a sniffer capture of tap `tap` shows on a RoCE frame at
/// the model's time `ts_ns`: the NIC's nanosecond clock, 48 bits, as the
/// real ConnectX sniffer captures show it (docs/inputs.md, "Hardware time").
pub fn sniffer_mac(tap: usize, ts_ns: u64) -> [u8; 6] {
    let clock = (sniffer_boot_ns(tap) + ts_ns).to_be_bytes();
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&clock[2..]);
    mac
}

/// A sniffer capture's timestamp of a frame at the model's `ts_ns`: the
/// capture host's clock to the microsecond (libpcap's RDMA sniffer stamps
/// each completion with `gettimeofday`).
pub fn sniffer_capture_ns(ts_ns: u64) -> u64 {
    (EPOCH_NS + ts_ns) / 1000 * 1000
}

/// What a capture written with `opts` holds of `frame`: the bytes kept of
/// it (ERSPAN encapsulation included) and whether that is all of it.
pub fn recorded_len(frame: &FrameSpec, opts: &CaptureOptions) -> (u32, bool) {
    recorded_len_with(frame, 0, opts)
}

/// [`recorded_len`] of a frame carrying `inband` bytes of in-band telemetry.
pub fn recorded_len_with(frame: &FrameSpec, inband: usize, opts: &CaptureOptions) -> (u32, bool) {
    // frame_len counts the FCS, which captures do not hold.
    let mut len = frame.frame_len() - 4 + inband as u32;
    let mut whole = true;
    if let Some(cut) = opts.sniffer.filter(|&c| c > 0 && len > c) {
        len = cut;
        whole = false;
    }
    if let Some(version) = opts.erspan {
        let subheader = match version {
            ErspanVersion::III => opts.erspan_time.platform_len(),
            ErspanVersion::II => 0,
        };
        len += (Erspan {
            version,
            ..Erspan::default()
        }
        .overhead()
            + subheader) as u32;
    }
    if opts.snaplen > 0 && len > opts.snaplen {
        len = opts.snaplen;
        whole = false;
    }
    (len, whole)
}

/// Whether the ICRC of `frame`, as written with `opts`, fails: a bit error
/// hit it, a switch trimmed it, or the sniffer rewrote its UDP source port.
/// `None`: not RoCE.
pub fn icrc_fails(frame: &FrameSpec, opts: &CaptureOptions) -> Option<bool> {
    let (corrupt, sport) = match frame {
        FrameSpec::Roce(r) => (r.corrupt || r.trimmed, r.udp_sport),
        FrameSpec::Cnp(c) => (false, c.udp_sport),
        FrameSpec::Pfc(_) | FrameSpec::Transport(_) => return None,
    };
    Some(corrupt || (opts.sniffer.is_some() && sport != ROCE_PORT))
}

/// Rewrites a RoCE frame `bytes` (as [`append_frame`] wrote it) the way a
/// NIC's RDMA sniffer records it, and cuts it to `cut` bytes (0: not cut).
fn sniff(frame: &FrameSpec, tap: usize, ts_ns: u64, bytes: &mut Vec<u8>, cut: u32) {
    let vlan = match frame {
        FrameSpec::Roce(r) => r.vlan.is_some(),
        FrameSpec::Cnp(c) => c.vlan.is_some(),
        FrameSpec::Pfc(_) | FrameSpec::Transport(_) => return,
    };
    // The model writes IPv4 headers without options.
    let udp = 14 + if vlan { 4 } else { 0 } + 20;
    if bytes.len() >= udp + 2 {
        bytes[6..12].copy_from_slice(&sniffer_mac(tap, ts_ns));
        bytes[udp..udp + 2].copy_from_slice(&ROCE_PORT.to_be_bytes());
    }
    if cut > 0 {
        bytes.truncate(cut as usize);
    }
}

/// Writes a run's tap frames to `path`: pcapng (one interface per tap,
/// named after it) when the name ends in `.pcapng`, classic pcap otherwise —
/// which holds one tap only, since frames seen at two taps in one stream
/// would look like resends. Returns the number of frames written.
///
/// The capture is written under a temporary name (`.NAME.partial` beside
/// it) and renamed when complete: `path` never holds half a capture, and a
/// failed write (disk full, …) removes the partial file.
pub fn write_capture(run: &Run, path: &Path, opts: &CaptureOptions) -> Result<u64> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let partial = path.with_file_name(format!(".{name}.partial"));
    let written = write_capture_to(run, path, &partial, opts).and_then(|n| {
        std::fs::rename(&partial, path).map_err(|e| Error::WriteIo {
            path: path.to_path_buf(),
            detail: e.to_string(),
            source: e,
        })?;
        Ok(n)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// [`write_capture`] into the file `partial`; errors name `path`.
fn write_capture_to(run: &Run, path: &Path, partial: &Path, opts: &CaptureOptions) -> Result<u64> {
    let taps: Vec<usize> = match &opts.taps {
        Some(t) => t.clone(),
        None => (0..run.taps.len()).collect(),
    };
    if opts.sniffer.is_some() && opts.erspan.is_some() {
        return Err(Error::Usage(
            "a sniffer capture is a host's, not a mirror session's: choose --sniffer or --erspan"
                .into(),
        ));
    }
    if opts.sniffer.is_some() && run.switch_log.in_band().is_some() {
        return Err(Error::Usage(
            "a sniffer capture is a host's, and the last switch strips in-band telemetry before the host: choose --sniffer or --telemetry int-md|ifa"
                .into(),
        ));
    }
    if let Some(&bad) = taps.iter().find(|&&t| t >= run.taps.len()) {
        return Err(Error::Usage(format!(
            "tap {bad} does not exist; this scenario has taps 0..{}",
            run.taps.len()
        )));
    }
    let pcapng = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pcapng"));
    let io_err = |e: io::Error| Error::WriteIo {
        path: path.to_path_buf(),
        detail: e.to_string(),
        source: e,
    };
    let telemetry = run
        .switch_log
        .cfg
        .as_ref()
        .filter(|_| !run.switch_log.reports.is_empty());
    let mut collector = 0;
    // iface id in the file for each tap of the run.
    let mut iface_of = vec![None; run.taps.len()];
    let create = || {
        std::fs::File::create(partial).map_err(|source| Error::Open {
            path: path.to_path_buf(),
            source,
        })
    };
    let mut writer: Box<dyn CaptureWrite> = if pcapng {
        let mut w = PcapngWriter::new(create()?).map_err(io_err)?;
        for &t in &taps {
            iface_of[t] = Some(
                w.add_interface(&run.taps[t].name, linktype::ETHERNET as u16, opts.snaplen)
                    .map_err(io_err)?,
            );
        }
        if telemetry.is_some() {
            collector = w
                .add_interface("collector", linktype::ETHERNET as u16, 0)
                .map_err(io_err)?;
        }
        Box::new(w)
    } else {
        if taps.len() != 1 {
            return Err(Error::Usage(format!(
                "{}: a classic pcap holds one tap and this run has {}; write .pcapng, or choose one tap with --tap",
                path.display(),
                taps.len()
            )));
        }
        iface_of[taps[0]] = Some(0);
        Box::new(PcapWriter::new(create()?, linktype::ETHERNET, opts.snaplen).map_err(io_err)?)
    };

    // The switches' reports reach the collector out of band: its own
    // interface (a classic pcap's only one, cut to its snaplen), not in ERSPAN.
    let mut reports = telemetry.map(|cfg| (cfg, run.switch_log.reports.as_slice()));
    let mut inner = Vec::with_capacity(9216);
    let mut outer = Vec::with_capacity(9216 + 64);
    let mut written = 0u64;
    let mut send_reports = |until: u64, writer: &mut dyn CaptureWrite| -> io::Result<u64> {
        let mut n = 0;
        if let Some((cfg, left)) = &mut reports {
            while let Some((card, rest)) = left.split_first()
                && card.ts_ns <= until
            {
                writer.write_frame(collector, EPOCH_NS + card.ts_ns, &report_frame(card, cfg))?;
                *left = rest;
                n += 1;
            }
        }
        Ok(n)
    };
    for (i, f) in run.frames.iter().enumerate() {
        written += send_reports(f.ts_ns, &mut *writer).map_err(io_err)?;
        let Some(iface) = iface_of.get(f.tap).copied().flatten() else {
            continue;
        };
        inner.clear();
        append_frame(&f.frame, &mut inner);
        if let (Some(mode), Some(hops)) = (run.switch_log.in_band(), run.switch_log.inband.get(&i))
        {
            inner = super::inband::with_hops(mode, &f.frame, &inner, hops, EPOCH_NS);
        }
        let mut at = EPOCH_NS + f.ts_ns;
        if let Some(cut) = opts.sniffer {
            sniff(&f.frame, f.tap, f.ts_ns, &mut inner, cut);
            at = sniffer_capture_ns(f.ts_ns);
        }
        let bytes = match opts.erspan {
            Some(version) => {
                let (timestamp, platform) = match version {
                    ErspanVersion::III => opts.erspan_time.stamp(EPOCH_NS + f.ts_ns),
                    ErspanVersion::II => None,
                }
                .unwrap_or((0, None));
                let session = Erspan {
                    version,
                    gre_seq: written as u32,
                    // ERSPAN's 10-bit session ID: wraps past 1023 taps.
                    session_id: ((f.tap + 1) & 0x3FF) as u16,
                    timestamp,
                    granularity: opts.erspan_time.granularity,
                    platform,
                    ..Erspan::default()
                };
                session.write(&RawFrame(&inner), &mut outer);
                &outer
            }
            None => &inner,
        };
        writer.write_frame(iface, at, bytes).map_err(io_err)?;
        written += 1;
    }
    written += send_reports(u64::MAX, &mut *writer).map_err(io_err)?;
    writer.flush().map_err(io_err)?;
    Ok(written)
}
