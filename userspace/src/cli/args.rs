//! The options several subcommands share: the captures and how they are read
//! (`Input`), how records are analysed (`AnalysisArgs`), the dataset
//! (`DatasetArgs`).

use std::path::PathBuf;

use clap::Args;

use crate::offline::Options;
use crate::units::{self, TapSpeed};
use crate::{Error, Result, analyze};

/// `analyze`/`live --dataset`: DIR/TABLE/host=NAME/date=YYYY-MM-DD/hour=H/part-<run>-<start>.parquet.
#[derive(Args)]
pub(crate) struct DatasetArgs {
    /// Also write the tables into this hive-partitioned dataset (a root per table; by host, UTC date and hour).
    #[arg(long, value_name = "DIR")]
    pub(crate) dataset: Option<PathBuf>,
    /// The host= partition [default: this machine's host name].
    #[arg(long, value_name = "NAME", requires = "dataset")]
    pub(crate) host: Option<String>,
    /// Start a new dataset file once a file spans this much capture time (e.g. 10m) [default: hourly].
    #[arg(long, value_name = "DURATION", requires = "dataset", value_parser = units::positive_duration)]
    pub(crate) rotate: Option<u64>,
    /// Start a new dataset file once a file holds about this much (e.g. 256MB).
    #[arg(
        long,
        value_name = "BYTES",
        default_value = "512MB",
        requires = "dataset",
        value_parser = units::bytes
    )]
    pub(crate) rotate_size: u64,
}

impl DatasetArgs {
    /// `identity`: what names the run in the dataset besides its start
    /// (docs/tables.md, "Dataset layout").
    pub(crate) fn writer(
        &self,
        identity: String,
    ) -> Result<Option<Box<dyn crate::output::Output>>> {
        self.writer_with(identity, |_| {})
    }

    /// [`DatasetArgs::writer`], its options adjusted by `adjust` (the live
    /// tap's findings table and `--tables`).
    pub(crate) fn writer_with(
        &self,
        identity: String,
        adjust: impl FnOnce(&mut crate::tables::dataset::DatasetOptions),
    ) -> Result<Option<Box<dyn crate::output::Output>>> {
        use crate::tables::dataset::{DatasetOptions, DatasetWriter, local_host_name};
        let Some(dir) = &self.dataset else {
            return Ok(None);
        };
        let host = self.host.clone().unwrap_or_else(local_host_name);
        let mut opts = DatasetOptions::new(dir, &host)?;
        opts.rotate_ns = self.rotate.unwrap_or(0);
        opts.rotate_bytes = self.rotate_size;
        opts.identity = identity;
        adjust(&mut opts);
        Ok(Some(Box::new(DatasetWriter::create(&opts)?)))
    }
}

/// `--analyzers`: the analysis split across analyzer threads (`analyze`,
/// `live`; docs/live.md, "Sharded analysis").
#[derive(Args, Clone, Copy, Debug)]
pub(crate) struct ShardArgs {
    /// Split the analysis across N analyzer threads by address pair (1 to 64), for more frames a second than one
    /// analyzer thread keeps up with. Flow ids are then numbered per analyzer; the findings are judged once over the N
    /// together (docs/live.md, "Sharded analysis").
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        value_parser = clap::value_parser!(u16).range(1..=crate::shard::MAX_ANALYZERS as i64)
    )]
    pub(crate) analyzers: u16,
}

impl ShardArgs {
    /// The number of analyzers, refused with what is not built for more
    /// than one: `others` names each option given that cannot go with it
    /// and what to do instead.
    pub(crate) fn analyzers(&self, others: &[(bool, &str, &str)]) -> Result<usize> {
        let n = usize::from(self.analyzers);
        if n > 1 {
            for (given, option, instead) in others {
                if *given {
                    return Err(Error::Usage(format!(
                        "--analyzers {n} cannot go with {option}: {instead}"
                    )));
                }
            }
        }
        Ok(n)
    }
}

#[derive(Args)]
pub(crate) struct Input {
    /// pcap or pcapng files (Ethernet, Linux cooked v1/v2, raw IP, BSD loopback; gzip, zstd or lz4
    /// compressed or not), directories of them, or - for standard input.
    #[arg(required = true, value_name = "CAPTURE")]
    pub(crate) captures: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) analysis: AnalysisArgs,
    /// Only frames matching this tcpdump-syntax filter (compiled by libpcap).
    #[arg(long, value_name = "EXPR")]
    pub(crate) filter: Option<String>,
    /// Counter snapshots of the same minutes (series text or counters.parquet): compared with the
    /// capture (capture-incomplete, counters-mismatch) and tabled in summary.json.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub(crate) counters: Vec<PathBuf>,
    /// 1: read, analyse and write on one thread; otherwise reading, analysis
    /// and table writing run on threads of their own (bounded queues between).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub(crate) threads: usize,
    /// These capture files are one tap called NAME, whatever their interfaces and times
    /// (repeatable; files not named are grouped as docs/inputs.md says).
    #[arg(long = "tap", value_name = "NAME=FILE,FILE…")]
    pub(crate) taps: Vec<crate::sources::TapSpec>,
    #[command(flatten)]
    pub(crate) transports: TransportArgs,
    #[command(flatten)]
    pub(crate) telemetry: TelemetryArgs,
    /// Frame times from the capture's clock, the switch's ERSPAN III timestamps or the NIC's clock in
    /// an RDMA sniffer capture's source MACs (docs/inputs.md, "Hardware time"); by default the MAC
    /// clock where a whole file shows one, else ERSPAN III time when a file's first record has it
    /// within 1 s.
    #[arg(long, value_enum, default_value_t = crate::sources::TimeChoice::Auto, value_name = "CLOCK")]
    pub(crate) time: crate::sources::TimeChoice,
}

/// Where the transports are recognised (docs/inputs.md, "Transports and
/// their ports"): shared by `analyze`, `report` and `live`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct TransportArgs {
    /// Recognise TRANSPORT on this UDP destination port instead of its default (roce: 4791, uet:
    /// 4793, which are then not theirs); repeatable.
    #[arg(long = "udp-port", value_name = "TRANSPORT=PORT", value_parser = crate::transport::parse_udp_port)]
    pub(crate) udp_ports: Vec<crate::transport::UdpPort>,
    /// Recognise TRANSPORT in its native IP mode on this IP protocol number (uet: no IANA number;
    /// the UEC reference provider uses 253), e.g. uet=253; repeatable.
    #[arg(long = "ip-proto", value_name = "TRANSPORT=PROTOCOL", value_parser = crate::transport::parse_ip_protocol)]
    pub(crate) ip_protocols: Vec<crate::transport::IpProtocol>,
}

/// Where switch telemetry is marked (docs/inputs.md, "Switch telemetry"):
/// shared by `analyze`, `report` and `live`.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct TelemetryArgs {
    /// The DSCP value (0-63) that marks INT-MD over UDP (the shim after the UDP header); none: no
    /// INT by DSCP.
    #[arg(long = "int-dscp", default_value = "none", value_name = "DSCP", value_parser = crate::telemetry::marks::parse_dscp)]
    pub(crate) int_dscp: u8,
    /// The UDP destination port that marks INT-MD (the original port in the shim); none: no INT
    /// by port.
    #[arg(long = "int-port", default_value = "none", value_name = "PORT", value_parser = crate::telemetry::marks::parse_port)]
    pub(crate) int_port: u16,
    /// The UDP destination port of Telemetry Report v2.0 packets (rows of telemetry.parquet);
    /// none: reports are not read.
    #[arg(long = "telemetry-report-port", default_value = "none", value_name = "PORT", value_parser = crate::telemetry::marks::parse_port)]
    pub(crate) report_port: u16,
    /// The IP protocol number that marks IFA 2.0 (some vendors use 253); none: no IFA.
    #[arg(long = "ifa-proto", default_value = "131", value_name = "PROTOCOL", value_parser = crate::telemetry::marks::parse_protocol)]
    pub(crate) ifa_proto: u8,
}

impl TelemetryArgs {
    /// The transports' recognition (`--udp-port`, `--ip-proto`) with the
    /// telemetry marks.
    pub(crate) fn recognition(
        &self,
        transports: &TransportArgs,
    ) -> std::result::Result<rocescope_common::wire::Recognition, String> {
        let reg = crate::transport::recognition(&transports.udp_ports, &transports.ip_protocols)?;
        let marks = rocescope_common::wire::telemetry::TelemetryMarks {
            int_port: self.int_port,
            report_port: self.report_port,
            ifa_protocol: self.ifa_proto,
            int_dscp: self.int_dscp,
            ..rocescope_common::wire::telemetry::TelemetryMarks::DEFAULT
        };
        crate::telemetry::marks::apply(reg, marks)
    }
}

impl Input {
    pub(crate) fn options(&self) -> Result<Options> {
        Ok(Options {
            analyzer: self.analysis.config(),
            filter: self.filter.clone(),
            progress: true,
            threads: crate::pipeline::Threads::from_count(self.threads),
            // The process ends with the run: its reader may yield for good.
            source_yields: true,
            taps: self.taps.clone(),
            recognition: self
                .telemetry
                .recognition(&self.transports)
                .map_err(Error::Usage)?,
            time: self.time,
            analyzers: 1,
        })
    }
}

/// How records are analysed: shared by `analyze`, `report` and `live`.
#[derive(Args)]
pub(crate) struct AnalysisArgs {
    /// Link speed of the paused ports, to turn PFC quanta into time (e.g. 100G, 400G);
    /// TAP=SPEED sets one tap's (interface name as in the tables), repeatable.
    #[arg(long, default_value = "100G", value_name = "[TAP=]SPEED", value_parser = units::tap_link_speed)]
    pub(crate) link_speed: Vec<TapSpeed>,
    /// A frame recorded again at the same tap within this time is a mirror copy, not a
    /// retransmission (0 turns the check off).
    #[arg(long, default_value = "10us", value_name = "DURATION", value_parser = units::duration_or_off)]
    pub(crate) dup_window: u64,
    /// Frames of one transmission seen at several taps lie within this time of each other
    /// (cross-tap matching; memory holds one window of frames).
    #[arg(long, default_value = "2ms", value_name = "DURATION", value_parser = units::positive_duration)]
    pub(crate) match_window: u64,
    /// TAP's clock minus the other taps' (e.g. node1=+48us), instead of the offset estimated
    /// from traffic both ways; repeatable.
    #[arg(long, value_name = "TAP=±DURATION", value_parser = units::tap_clock_offset, allow_hyphen_values = true)]
    pub(crate) clock_offset: Vec<units::TapOffset>,
    /// A flow with no frame for this much capture time is finished: its row is written and its
    /// state freed; a frame of its QP after that starts a new flow (docs/analysis.md, "Retirement").
    #[arg(long, default_value = "60s", value_name = "DURATION", value_parser = units::positive_duration)]
    pub(crate) flow_idle: u64,
    /// A flow active longer than this writes an interim row for each such interval of capture
    /// time (docs/tables.md, flows' `interim`).
    #[arg(long, default_value = "1h", value_name = "DURATION", value_parser = units::positive_duration)]
    pub(crate) flow_active: u64,
    /// Width of a timeline bin (e.g. 100us, 1ms).
    #[arg(long, default_value = "100us", value_name = "DURATION", value_parser = units::positive_duration)]
    pub(crate) bin: u64,
    /// A continuous pause longer than this is a PFC storm (e.g. 200ms, SONiC's watchdog default).
    #[arg(long, default_value = "200ms", value_name = "DURATION", value_parser = units::positive_duration)]
    pub(crate) storm: u64,
    /// The same as --storm; a bare number is milliseconds.
    #[arg(long, value_name = "MS", value_parser = units::milliseconds, conflicts_with = "storm")]
    pub(crate) storm_ms: Option<u64>,
    /// DSCP to priority for untagged frames, e.g. "26=3,48=6"; DSCPs not listed map to DSCP/8.
    #[arg(long, value_name = "MAP", value_parser = units::dscp_map)]
    pub(crate) dscp_map: Option<[u8; 64]>,
    /// Interfaces that are parallel paths (an ECMP group), by name as in the tables, e.g.
    /// "leaf0-spine0,leaf0-spine1": their load balance is judged; repeatable.
    #[arg(long = "ecmp-group", value_name = "IF,IF…")]
    pub(crate) ecmp_group: Vec<analyze::EcmpGroup>,
    /// A JSON file naming the fabric: tap → device and port, MAC → device, ECMP groups
    /// (docs/topology.md); findings then name devices beside MACs and taps.
    #[arg(long, value_name = "FILE", value_parser = |p: &str| analyze::topology::Topology::load(std::path::Path::new(p)))]
    pub(crate) topology: Option<analyze::topology::Topology>,
}

impl AnalysisArgs {
    pub(crate) fn config(&self) -> analyze::Config {
        let mut link_speed_bps = 100_000_000_000;
        let mut tap_link_speed_bps = Vec::new();
        for item in &self.link_speed {
            match &item.tap {
                Some(tap) => tap_link_speed_bps.push((tap.clone(), item.bps)),
                None => link_speed_bps = item.bps,
            }
        }
        analyze::Config {
            link_speed_bps,
            bin_ns: self.bin,
            storm_ns: self.storm_ms.unwrap_or(self.storm),
            dscp_to_priority: self.dscp_map,
            tap_link_speed_bps,
            dup_window_ns: self.dup_window,
            // --ecmp-group and the topology file's groups alike.
            ecmp_groups: self
                .ecmp_group
                .iter()
                .cloned()
                .chain(self.topology.iter().flat_map(|t| t.ecmp_groups.clone()))
                .collect(),
            topology: self.topology.clone(),
            match_window_ns: self.match_window,
            flow_idle_ns: self.flow_idle,
            flow_active_ns: self.flow_active,
            rows_held: analyze::DEFAULT_ROWS_HELD,
            recognition: Default::default(),
            one_tap: false,
            match_thread: false,
            leave_at_exit: false,
            clock_offsets: self
                .clock_offset
                .iter()
                .map(|o| (o.tap.clone(), o.ns))
                .collect(),
        }
    }
}
