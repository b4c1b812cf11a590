"""Reads an `analyze --out` directory with polars, as notebooks and users do,
and checks the output contract of docs/tables.md: every table, every column,
signed integers only and UTC microsecond timestamps beside the `*_ns` times."""
import json
import sys
from pathlib import Path

import polars as pl

CONTRACT = {
    "packets.parquet": """frame ts_ns ts iface file kind frame_len cap_len vlan pcp src_mac dst_mac src_ip
        dst_ip dscp ecn roce_version udp_sport opcode se migreq pad_count tver pkey fecn becn dest_qp ack_req psn
        aeth_syndrome aeth_msn reth_va reth_rkey reth_len imm payload_len icrc_ok pfc_enable
        pfc_quanta_0 pfc_quanta_1 pfc_quanta_2 pfc_quanta_3 pfc_quanta_4 pfc_quanta_5 pfc_quanta_6
        pfc_quanta_7 pause_quanta flow_id retrans mirror_copy outer_vlan erspan ieth_rkey deth_qkey
        deth_src_qp atomic_va atomic_rkey atomic_swap_add atomic_compare atomic_orig icrc link
        vcrc_ok transport uet_pds_type uet_next_header uet_flags uet_spdcid uet_dpdcid
        uet_cack_psn uet_ack_psn uet_sack_base uet_sack_bitmap uet_cc_type uet_cc_state
        uet_ccc_id uet_credit_target uet_nack_code uet_pkt_id uet_entropy uet_ses_opcode
        uet_ses_flags uet_message_id uet_job_id""",
    "flows.parquet": """flow_id iface src_ip dst_ip dest_qp paired_qp roce_version udp_sport pcp dscp first_ts_ns
        last_ts_ns first_ts last_ts packets bytes data_packets payload_bytes retrans_packets retrans_rate rewinds
        rewinds_nak rewinds_rnr rewinds_timeout max_rewind_depth spurious_retrans gaps acks naks
        rnr_naks ce cnps gbps goodput_gbps max_idle_us rewinds_timeout_ghost gap_late
        gap_lost_before_tap gap_nak_lost gap_capture_lost gap_unresolved late_max_us late_max_psns
        icrc_errors mirror_copies display_filter decode_as
        nic_timeout_samples nic_timeout_us nic_timeout_max_us
        nic_timeout_exponent nic_timeout_bounded nic_timeout_lower_us nic_timeout_upper_us
        max_rewinds_one_psn livelock_psn dcqcn_reactions dcqcn_reaction_us
        dcqcn_reaction_max_us dcqcn_recovery_us dcqcn_cnps_without_reaction service link becn
        interim transport uet_spdcid uet_dpdcid uet_first_transmissions uet_timeout_resends
        uet_rod_requests uet_acks_ecn uet_nacks_trimmed uet_nacks_no_pdc uet_nacks_no_pkt_buffer
        uet_nacks_psn_oor_window uet_nacks_no_resource uet_nacks_other uet_delivered uet_sacked
        uet_nacked uet_ack_delay_min_us uet_ack_delay_max_us uet_resend_wait_min_us""",
    "events.parquet": "ts_ns ts iface flow_id kind psn depth trigger idle_us detail",
    "pfc.parquet": "iface src_mac priority start_ns end_ns start_ts end_ts frames ended_by",
    "timeline.parquet": """flow_id bin_start_ns bin_start bin_ns packets bytes retrans_packets ce cnps gbps
        goodput_gbps paused_ns""",
    "hops.parquet": """src_ip dst_ip dest_qp up_iface down_iface up_flow_id down_flow_id first_ts_ns
        last_ts_ns first_ts last_ts frames_up matched missing_down down_only delay_min_ns
        delay_p50_ns delay_p99_ns delay_max_ns clock_offset_ns adjacent""",
    "nics.parquet": """nic_mac nic_ip nak_generation_count nak_generation_p50_ns nak_generation_p99_ns
        nak_generation_max_ns nak_reaction_count nak_reaction_p50_ns nak_reaction_p99_ns
        nak_reaction_max_ns timeout_retrans_count timeout_retrans_p50_ns timeout_retrans_p99_ns
        timeout_retrans_max_ns cnp_generation_count cnp_generation_p50_ns cnp_generation_p99_ns
        cnp_generation_max_ns""",
    "telemetry.parquet": """ts_ns ts iface file frame source hop report_index switch_id hw_id ingress_port
        egress_port l2_ingress_port l2_egress_port queue_id queue_occupancy hop_latency ingress_ts
        egress_ts egress_tx_utilization buffer_id buffer_occupancy sequence dropped congested_queue
        tracked_flow intermediate drop_reason ifa_congestion ifa_port_speed ifa_vendor_word5
        ifa_vendor_word6 ifa_vendor_word7 src_ip dst_ip dest_qp psn flow_id""",
    "uet_paths.parquet": """iface src_ip dst_ip spdcid dpdcid entropy pdc_entropies first_ts_ns last_ts_ns
        first_ts last_ts packets bytes payload_bytes retrans_packets trimmed late_packets late_max_psns
        late_max_us late_mean_us""",
}

TIMESTAMPS = {
    "packets.parquet": ("ts",),
    "flows.parquet": ("first_ts", "last_ts"),
    "events.parquet": ("ts",),
    "pfc.parquet": ("start_ts", "end_ts"),
    "timeline.parquet": ("bin_start",),
    "hops.parquet": ("first_ts", "last_ts"),
    "telemetry.parquet": ("ts",),
    "uet_paths.parquet": ("first_ts", "last_ts"),
}


def main(out: Path) -> int:
    failures = []
    for name, cols in CONTRACT.items():
        path = out / name
        if not path.exists():
            failures.append(f"{name}: missing")
            continue
        df = pl.read_parquet(path)
        missing = [c for c in cols.split() if c not in df.columns]
        if missing:
            failures.append(f"{name}: no column {', '.join(missing)}")
        # docs/tables.md, "Conventions": no unsigned type; times beside *_ns.
        unsigned = [c for c, t in df.schema.items() if t.is_unsigned_integer()]
        if unsigned:
            failures.append(f"{name}: unsigned {', '.join(unsigned)}")
        for c in TIMESTAMPS.get(name, ()):
            if c in df.columns and df.schema[c] != pl.Datetime("us", "UTC"):
                failures.append(f"{name}: {c} is {df.schema[c]}, not Datetime(us, UTC)")
        print(f"{name}: {df.height} rows, {len(df.columns)} columns")
    summary = json.loads((out / "summary.json").read_text())
    for key in ("pfc", "findings", "taps", "capture_facts", "clock_offsets", "matching"):
        if key not in summary:
            failures.append(f"summary.json: no {key}")
    for f in summary.get("findings", []):
        for key in ("id", "severity", "title", "detail", "recommendation", "flows"):
            if key not in f:
                failures.append(f"summary.json finding {f.get('id')}: no {key}")
    # docs/tables.md, nics.parquet: Int64 counts; a latency without samples is null.
    nics = pl.read_parquet(out / "nics.parquet")
    for kind in ("nak_generation", "nak_reaction", "timeout_retrans", "cnp_generation"):
        cols = [f"{kind}_{c}" for c in ("count", "p50_ns", "p99_ns", "max_ns")]
        wrong = [c for c in cols if c in nics.columns and nics.schema[c] != pl.Int64]
        if wrong:
            failures.append(f"nics.parquet: {', '.join(wrong)} not Int64")
        elif all(c in nics.columns for c in cols):
            empty = nics[cols[0]] == 0
            for c in cols[1:]:
                if not (nics[c].is_null() == empty).all():
                    failures.append(f"nics.parquet: {c} is null where {cols[0]} is not 0")
    packets = pl.read_parquet(out / "packets.parquet")
    if packets.height and packets["kind"].null_count():
        failures.append("packets.parquet: kind has nulls")
    for line in failures:
        print("FAIL", line)
    print(f"{len(CONTRACT) + 1 - len({f.split(':')[0] for f in failures})} passed, "
          f"{len({f.split(':')[0] for f in failures})} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
