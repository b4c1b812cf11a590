//! `live --analyzers 2` on a veth pair: a capture of many host pairs
//! replayed into the tap gives the flows `analyze` finds offline in it
//! (on the columns that do not depend on timing, as `live.rs` compares
//! one analyzer's), every record in `packets.parquet`, and the frame
//! counts; the options not built over several analyzers are refused before
//! anything is attached. Root and iproute2, as `live.rs`.
use crate::common;
use crate::live::{Veth, analyze_offline, flows, live_facts, quiet, replay, usable};
use crate::sharded::summary;

use std::time::Duration;

use common::{Table, rocescope_ok};

#[test]
fn two_live_analyzers_give_the_offline_flows() {
    if !usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The incast's first tap: eight senders to one receiver, no pause
    // there (pause times would follow the replay's pace, not the file's);
    // frames cut as a mirror port cuts them (the veth's MTU takes them).
    let cap = tmp.path().join("incast.pcapng");
    rocescope_ok(&[
        "synth",
        "incast",
        "--out",
        cap.to_str().unwrap(),
        "--tap",
        "0",
        "--snaplen",
        "128",
    ]);
    let offline = analyze_offline(&cap, tmp.path());
    let records = Table::read(&offline.join("packets.parquet")).rows();
    let want = flows(&offline);
    let pairs: std::collections::BTreeSet<_> = want
        .keys()
        .map(|(s, d, _)| if s <= d { (s, d) } else { (d, s) })
        .collect();
    assert!(pairs.len() >= 2, "{} address pairs", pairs.len());

    let veth = Veth::new();
    quiet(&veth);
    let out = tmp.path().join("live");
    let count = records.to_string();
    let live = veth.live(&out, &["--count", &count, "--analyzers", "2"]);
    replay(&veth, &cap, Some("20000"));
    let (ok, stdout, stderr) = live.wait(Duration::from_secs(60));
    assert!(ok, "live failed: {stdout}\n{stderr}");

    // `bytes` counts what reached the tap: the file's frame lengths
    // offline, the cut frames' live (the replay sends what the file kept).
    let uncut = |f: std::collections::BTreeMap<_, Vec<(String, String)>>| {
        f.into_iter()
            .map(|(k, cols)| {
                let cols: Vec<_> = cols.into_iter().filter(|(c, _)| c != "bytes").collect();
                (k, cols)
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    assert_eq!(
        uncut(flows(&out)),
        uncut(want.clone()),
        "live with 2 analyzers (left) and offline (right) flows differ"
    );
    let facts = live_facts(&out);
    assert_eq!(facts["ring_full_drops"], 0, "{facts}");
    assert_eq!(facts["records"], records as u64, "{facts}");
    assert_eq!(
        Table::read(&out.join("packets.parquet")).rows(),
        records,
        "packets"
    );
    let (mut live, mut off) = (summary(&out), summary(&offline));
    // Frames cut short: the file's (offline); live sees whole short frames.
    for s in [&mut live, &mut off] {
        s["frames"].as_object_mut().unwrap().remove("cut");
    }
    assert_eq!(live["frames"], off["frames"], "frame counts");
    assert_eq!(
        live["totals"]["flows"], off["totals"]["flows"],
        "summary.json totals.flows"
    );
}

#[test]
fn live_analyzers_refuse_what_is_not_built_before_attaching() {
    if !usable() {
        return;
    }
    let veth = Veth::new();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("live");
    let o = out.to_str().unwrap();
    for (extra, option) in [
        (&["--findings", "-"][..], "--findings"),
        (&["--metrics", "127.0.0.1:0"][..], "--metrics"),
        (&["--mode", "summary"][..], "--mode summary"),
    ] {
        let mut args = vec!["live", "--iface", &veth.b, "--out", o, "--analyzers", "3"];
        args.extend_from_slice(extra);
        let r = veth.rocescope(&args).output().unwrap();
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "{option} accepted");
        assert!(
            err.contains("--analyzers 3") && err.contains(option),
            "{option}: {err}"
        );
        assert!(!out.exists(), "{option}: the output directory was made");
    }
}
