//! `ce-without-cnp` and `cnp-without-ce` in words.

use serde_json::json;

use crate::analyze::Reaction;
use crate::analyze::findings::{CeWithoutCnp, CnpWithoutCe};
use crate::render::{fmt_count, fmt_duration, fmt_ip};

use super::{Words, params};

/// The capture's CE → CNP reaction time, as a last line.
fn reaction_line(r: Option<&Reaction>) -> String {
    r.map(|r| {
        format!(
            "\nCE→CNP reaction {} to {} (mean {} over {}).",
            fmt_duration((r.min_us * 1e3).round() as u64),
            fmt_duration((r.max_us * 1e3).round() as u64),
            fmt_duration((r.mean_us * 1e3).round() as u64),
            fmt_count(r.samples, "CNP")
        )
    })
    .unwrap_or_default()
}

pub(super) fn ce_without_cnp(e: &CeWithoutCnp) -> Words {
    let parts: Vec<String> = e
        .shown
        .iter()
        .map(|r| {
            format!(
                "flow {} ({} → {} QP {}, DSCP {}): {}, 0 CNPs{}.",
                r.flow.id,
                fmt_ip(&r.flow.src_ip),
                fmt_ip(&r.flow.dst_ip),
                r.flow.dest_qp,
                r.dscp.map(|d| d.to_string()).unwrap_or("-".into()),
                fmt_count(r.ce, "CE mark"),
                if r.paired {
                    ""
                } else {
                    " (reverse direction never seen)"
                }
            )
        })
        .collect();
    Words {
        title: format!(
            "{} on {} got no CNP back",
            fmt_count(e.ce, "CE-marked packet"),
            fmt_count(e.flows, "flow")
        ),
        detail: parts.join("\n") + &reaction_line(e.reaction.as_ref()),
        recommendation: "The ECN→CNP path is broken: enable DCQCN's notification point (CNP generation) for this priority on the receiving NICs, check the DSCP of data packets maps to the ECN-enabled queue and priority, and that CNPs get a DSCP/priority the fabric forwards (and the tap sees).".into(),
        params: params([("ce_packets", json!(e.ce)), ("silent_flows", json!(e.flows))]),
    }
}

pub(super) fn cnp_without_ce(e: &CnpWithoutCe) -> Words {
    let mut detail = format!(
        "{} to {} that carried no CE mark.",
        fmt_count(e.cnps, "CNP"),
        fmt_count(e.flows, "flow")
    );
    if e.unattributed > 0 {
        detail.push_str(&format!(
            "\n{} matched no flow (no request flow paired with their QP).",
            fmt_count(e.unattributed, "CNP")
        ));
    }
    Words {
        title: format!(
            "{} without a CE mark seen at the tap",
            fmt_count(e.cnps + e.unattributed, "CNP")
        ),
        detail: detail + &reaction_line(e.reaction.as_ref()),
        recommendation: "Usually the tap sits upstream of the marking queue (the CE mark was set after it); otherwise check which device sends these CNPs and whether their QPs match live connections.".into(),
        params: params([
            ("cnps_without_ce", json!(e.cnps)),
            ("cnps_unattributed", json!(e.unattributed)),
        ]),
    }
}
