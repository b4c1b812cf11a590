//! Any sequence of records through the analyzer: it must never panic,
//! whatever the PSNs (wrapping at 2^24, absurd 32-bit values), timestamps
//! (going backwards, near 0 or u64::MAX), QPNs, opcodes and flags, and the
//! text report and summary.json of what it found must render.
//!
//! Layout: 3 bytes of configuration (link speed, bin width, storm
//! threshold, DSCP map; in their spare bits a tap's own link speed, the
//! duplicate and cross-tap matching windows, an ECMP group, clock
//! offsets), then one record per [`REC`] bytes (see `record`). Hosts,
//! QPNs and PSNs are drawn from small sets most of the time so that records
//! meet in the same flows, pair up and rewind; a mode bit turns each into
//! an arbitrary value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocescope::analyze::{Config, EcmpGroup};
use rocescope::render::render_text;
use rocescope::output::RunFacts;
use rocescope::pipeline::RecordPipeline;
use rocescope::{Kind, PacketRecord, RoceView, flags};

const REC: usize = 24;

struct Gen {
    psn: u32,
    ts: u64,
}

fn host(i: u8, v6: bool) -> [u8; 16] {
    let mut a = [0u8; 16];
    if v6 {
        a[0] = 0xfd;
        a[15] = i;
    } else {
        a[10] = 0xff;
        a[11] = 0xff;
        a[12] = 10;
        a[15] = i;
    }
    a
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn record(g: &mut Gen, n: u64, b: &[u8]) -> PacketRecord {
    let mut r = PacketRecord {
        frame: n,
        kind: b[0] % 6,
        flags: u32::from_le_bytes([b[3], b[4], b[5], 0]),
        iface: if b[6] == 0xff {
            u16::MAX
        } else {
            u16::from(b[6] % 4)
        },
        ..Default::default()
    };
    // Most records look like RoCE with a BTH, so the flow logic runs.
    if b[0] & 0x80 == 0 {
        r.flags |= flags::HAS_BTH | flags::HAS_UDP | flags::HAS_IPV4;
    }
    let v6 = b[7] & 0x80 != 0;
    r.src_ip = host(b[7] & 3, v6);
    r.dst_ip = host((b[7] >> 2) & 3, v6);
    // The block holds PFC's and PAUSE's fields on their records, RoCE's on
    // every other (as the decoder fills them).
    let link_control = matches!(r.kind(), Kind::Pfc | Kind::Pause);
    let dest_qp = if b[8] & 0x80 != 0 {
        u32_at(b, 8) // absurd: beyond 24 bits
    } else {
        0x100 + u32::from(b[9] % 8)
    };
    g.psn = match b[12] % 4 {
        0 => g.psn.wrapping_add(1) & 0xff_ffff,
        1 => {
            g.psn
                .wrapping_add(u32::from(i16::from_le_bytes([b[13], b[14]]) as u16 as u32))
                & 0xff_ffff
        }
        2 => 0xff_fff0 + u32::from(b[13] % 0x20), // around the wrap, sometimes beyond 24 bits
        _ => u32_at(b, 12),
    };
    let delta = i64::from(i16::from_le_bytes([b[16], b[17]]));
    g.ts = match b[18] % 8 {
        0 => 0,
        1 => u64::MAX - u64::from(b[19]),
        2 => g.ts.wrapping_add_signed(delta * 1_000_000), // ms steps, backwards too
        _ => g.ts.wrapping_add_signed(delta * 100),
    };
    r.ts_ns = g.ts;
    let q = u16::from_le_bytes([b[21], b[22]]);
    if link_control {
        let l = r.link_control_mut();
        l.pfc_enable = b[20];
        for (k, quanta) in l.pfc_quanta.iter_mut().enumerate() {
            if b[20] & (1 << k) != 0 {
                *quanta = q;
            }
        }
        l.pause_quanta = q;
    } else {
        *r.roce_mut() = RoceView {
            opcode: b[1],
            aeth_syndrome: b[2],
            dest_qp,
            psn: g.psn,
            reth_len: u32::from(q) * 64,
            aeth_msn: u32::from(b[15]),
            ..RoceView::default()
        };
    }
    r.ecn = b[23] & 3;
    r.dscp = b[23] >> 2;
    r.pcp = b[23] >> 5;
    r.vlan = u16::from(b[23]);
    r.src_mac = [2, 0, 0, 0, 0, b[7]];
    r.dst_mac = [2, 0, 0, 0, 1, b[7]];
    r.payload_len = u32::from(b[22]) * 16;
    r.frame_len = r.payload_len.saturating_add(u32::from(b[21]));
    r.cap_len = r.frame_len.min(u32::from(b[19]) * 8);
    r.udp_sport = u16::from(b[10]);
    r
}

fuzz_target!(|data: &[u8]| {
    let Some((cfg, rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let config = Config {
        link_speed_bps: [1, 10, 25, 100, 400, 800, 1600, 0][usize::from(cfg[0] % 8)].max(1)
            * 1_000_000_000,
        bin_ns: [1, 1_000, 100_000, 1_000_000_000, u64::MAX][usize::from(cfg[1] % 5)],
        storm_ns: [0, 1_000, 200_000_000, u64::MAX][usize::from(cfg[2] % 4)],
        dscp_to_priority: (cfg[2] & 0x80 != 0).then_some([7; 64]),
        // The bits the three choices above leave free pick the rest, each
        // as the CLI can set it: the default, off, or an extreme.
        tap_link_speed_bps: if cfg[0] & 0x08 != 0 {
            vec![("tap1".into(), 1)]
        } else {
            Vec::new()
        },
        dup_window_ns: [Config::default().dup_window_ns, 0, 1, u64::MAX]
            [usize::from(cfg[0] >> 4 & 3)],
        match_window_ns: [Config::default().match_window_ns, 1, 1_000, u64::MAX]
            [usize::from(cfg[0] >> 6)],
        ecmp_groups: if cfg[1] & 0x08 != 0 {
            vec![EcmpGroup {
                members: vec!["tap0".into(), "tap1".into()],
            }]
        } else {
            Vec::new()
        },
        clock_offsets: match cfg[1] >> 4 & 3 {
            0 => Vec::new(),
            1 => vec![("tap1".into(), 48_000)],
            2 => vec![("tap1".into(), -i64::MAX)],
            _ => vec![("tap0".into(), i64::MAX), ("tap1".into(), -1)],
        },
        topology: None,
        // Retirement from the first frame on (1 ns), never, or the default.
        flow_idle_ns: [Config::default().flow_idle_ns, 1, 1_000_000, u64::MAX]
            [usize::from(cfg[2] >> 2 & 3)],
        flow_active_ns: [Config::default().flow_active_ns, 1, 1_000_000, u64::MAX]
            [usize::from(cfg[2] >> 4 & 3)],
    };
    let Ok(mut pipe) = RecordPipeline::new(config, None) else {
        return;
    };
    pipe.name_iface(0, "tap0");
    pipe.name_iface(1, "tap1");
    let mut g = Gen {
        psn: 0xff_fff8,
        ts: 1_700_000_000_000_000_000,
    };
    for (n, chunk) in rest.chunks_exact(REC).enumerate() {
        let rec = record(&mut g, n as u64 + 1, chunk);
        pipe.push(&rec).expect("no tables, no write error");
    }
    let analysis = pipe
        .finish(RunFacts::default())
        .expect("no tables, no write error");
    std::hint::black_box(render_text(
        &analysis,
        analysis.summary.frames.total,
        Some(80),
    ));
    std::hint::black_box(serde_json::to_vec(&analysis.summary).expect("summary serialises"));
});
