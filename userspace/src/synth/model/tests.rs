use super::*;

fn summary(name: &str) {
    let t0 = std::time::Instant::now();
    let (run, truth) = run_scenario(name, 1, None).unwrap();
    eprintln!(
        "== {name}: {} frames, {:?}, {:?}",
        run.frames.len(),
        t0.elapsed(),
        run.fabric
    );
    for q in &truth.qps {
        eprintln!("  qp {:?}->{:?}: {:?}", q.src_ip, q.dst_ip, q.stats);
    }
    for f in &truth.flows {
        eprintln!(
            "  {} flow{} data={} rt={} rw={}/{}/{} sp={} gaps={} ce={} cnps={} acks={} naks={} | model rt={} rwn={} rwt={} sp={}",
            f.iface,
            f.flow,
            f.data_packets,
            f.retrans_packets,
            f.rewinds_nak,
            f.rewinds_rnr,
            f.rewinds_timeout,
            f.spurious_retrans,
            f.gaps,
            f.ce,
            f.cnps,
            f.acks,
            f.naks,
            f.model_retrans,
            f.model_rewinds_nak,
            f.model_rewinds_timeout,
            f.model_spurious
        );
    }
    for p in &truth.pfc {
        eprintln!(
            "  pfc {} {} p{} frames={} xon={} paused={} frac={:.4} max={} storms={}",
            p.iface,
            p.src_mac,
            p.priority,
            p.frames,
            p.xon_frames,
            p.paused_ns,
            p.fraction,
            p.max_pause_ns,
            p.storms
        );
    }
}

#[test]
#[ignore]
fn print_all() {
    for s in SCENARIOS {
        summary(s);
    }
}
