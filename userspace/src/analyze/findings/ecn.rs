//! ECN findings: CE marks without CNPs and CNPs without CE marks
//! (`docs/analysis.md`, *CNPs*).

use serde_json::json;

use crate::analyze::{Finding, Flow, fmt_count, fmt_duration, fmt_ip};

use super::input::{Input, params, share};

pub(super) fn ce_cnp(x: &Input, out: &mut Vec<Finding>) {
    let unattributed = x.summary.totals.cnps_unattributed;
    let reaction = x.summary.ce_to_cnp.as_ref().map(|r| {
        format!(
            "\nCE→CNP reaction {} to {} (mean {} over {}).",
            fmt_duration((r.min_us * 1e3).round() as u64),
            fmt_duration((r.max_us * 1e3).round() as u64),
            fmt_duration((r.mean_us * 1e3).round() as u64),
            fmt_count(r.samples, "CNP")
        )
    });
    // On InfiniBand the destination may answer FECN with BECN on the
    // packets it sends back instead of CNPs (docs/analysis.md, "CNPs").
    let becn_back = |r: &Flow| {
        r.ib_link
            && x.flows().any(|p| {
                p.iface == r.iface
                    && (p.src_ip, p.dst_ip) == (r.dst_ip, r.src_ip)
                    && Some(p.dest_qp) == r.paired_qp
                    && p.becn > 0
            })
    };
    let silent: Vec<&Flow> = x
        .flows()
        .filter(|f| f.ce > 0 && f.cnps == 0 && (f.cnp_qp().is_some() || unattributed == 0))
        .filter(|f| !becn_back(f))
        .collect();
    if !silent.is_empty() {
        let ce: u64 = silent.iter().map(|r| r.ce).sum();
        let parts: Vec<String> = silent
            .iter()
            .take(5)
            .map(|r| {
                format!(
                    "flow {} ({} → {} QP {}, DSCP {}): {}, 0 CNPs{}.",
                    r.id,
                    fmt_ip(&r.src_ip),
                    fmt_ip(&r.dst_ip),
                    r.dest_qp,
                    r.dscp.map(|d| d.to_string()).unwrap_or("-".into()),
                    fmt_count(r.ce, "CE mark"),
                    if r.paired_qp.is_none() {
                        " (reverse direction never seen)"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        out.push(Finding {
            wireshark: None,
            id: "ce-without-cnp",
            impact: x.traffic_share(&silent.iter().map(|r| r.id).collect::<Vec<_>>()),
            severity: "warning",
            title: format!(
                "{} on {} got no CNP back",
                fmt_count(ce, "CE-marked packet"),
                fmt_count(silent.len() as u64, "flow")
            ),
            detail: parts.join("\n") + reaction.as_deref().unwrap_or(""),
            recommendation: "The ECN→CNP path is broken: enable DCQCN's notification point (CNP generation) for this priority on the receiving NICs, check the DSCP of data packets maps to the ECN-enabled queue and priority, and that CNPs get a DSCP/priority the fabric forwards (and the tap sees).".into(),
            flows: silent.iter().map(|r| r.id).collect(),
            params: params([("ce_packets", json!(ce)), ("silent_flows", json!(silent.len()))]),
        });
    }
    let loud: Vec<&Flow> = x.flows().filter(|r| r.cnps > 0 && r.ce == 0).collect();
    if !loud.is_empty() || unattributed > 0 {
        let cnps: u64 = loud.iter().map(|r| r.cnps).sum();
        let mut detail = format!(
            "{} to {} that carried no CE mark.",
            fmt_count(cnps, "CNP"),
            fmt_count(loud.len() as u64, "flow")
        );
        if unattributed > 0 {
            detail.push_str(&format!(
                "\n{} matched no flow (no request flow paired with their QP).",
                fmt_count(unattributed, "CNP")
            ));
        }
        out.push(Finding {
            wireshark: None,
            id: "cnp-without-ce",
            impact: share(cnps + unattributed, x.summary.frames.cnp),
            severity: "info",
            title: format!(
                "{} without a CE mark seen at the tap",
                fmt_count(cnps + unattributed, "CNP")
            ),
            detail: detail + reaction.as_deref().unwrap_or(""),
            recommendation: "Usually the tap sits upstream of the marking queue (the CE mark was set after it); otherwise check which device sends these CNPs and whether their QPs match live connections.".into(),
            flows: loud.iter().map(|r| r.id).collect(),
            params: params([
                ("cnps_without_ce", json!(cnps)),
                ("cnps_unattributed", json!(unattributed)),
            ]),
        });
    }
}
