//! Helpers for the end-to-end tests: run the binary, read tables back.
#![allow(dead_code)]
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

pub mod corpus;
pub mod oracle;
pub mod tshark;
pub mod uet;

/// The real captures by others (see `rocescope::testdata`); not every test uses them.
#[allow(unused_imports)]
pub use rocescope::testdata::shared_capture;

pub fn rocescope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .output()
        .expect("the rocescope binary runs")
}

/// Runs the binary and requires success, showing its stderr otherwise.
pub fn rocescope_ok(args: &[&str]) -> Output {
    let out = rocescope(args);
    assert!(
        out.status.success(),
        "rocescope {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// `rocescope analyze CAP --out OUT OPTIONS…`, required to succeed.
pub fn analyze_into(cap: &Path, out: &Path, options: &[&str]) {
    let mut args = vec![
        "analyze",
        cap.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(options);
    rocescope_ok(&args);
}

/// Runs a tool of the test set-up (tshark, editcap, mergecap: scripts/setup.sh
/// --test) and requires success.
pub fn run_tool(tool: &str, args: &[&str]) {
    let out = Command::new(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{tool} runs (scripts/setup.sh --test installs it): {e}"));
    assert!(
        out.status.success(),
        "{tool} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The files in `dir`, in name order.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// The files `editcap -c n` wrote for `whole` into `dir` (in `format`), in
/// name order.
pub fn editcap_split(whole: &Path, n: usize, format: &str, dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let stem = whole.file_stem().unwrap().to_str().unwrap();
    let out = dir.join(format!("{stem}.{format}"));
    run_tool(
        "editcap",
        &[
            "-F",
            format,
            "-c",
            &n.to_string(),
            whole.to_str().unwrap(),
            out.to_str().unwrap(),
        ],
    );
    files_in(dir)
}

/// A Parquet table read whole (tests use small captures).
pub struct Table {
    pub batches: Vec<RecordBatch>,
}

impl Table {
    pub fn read(path: &Path) -> Table {
        let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        Table {
            batches: reader.map(|b| b.unwrap()).collect(),
        }
    }

    pub fn rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    pub fn column_names(&self) -> Vec<String> {
        let schema = match self.batches.first() {
            Some(b) => b.schema(),
            None => return Vec::new(),
        };
        schema.fields().iter().map(|f| f.name().clone()).collect()
    }

    fn columns(&self, name: &str) -> Vec<&dyn Array> {
        self.batches
            .iter()
            .map(|b| {
                b.column_by_name(name)
                    .unwrap_or_else(|| panic!("no column {name}"))
                    .as_ref()
            })
            .collect()
    }

    /// Any integer column, widened.
    pub fn ints(&self, name: &str) -> Vec<Option<i128>> {
        let mut out = Vec::new();
        for a in self.columns(name) {
            for i in 0..a.len() {
                if a.is_null(i) {
                    out.push(None);
                    continue;
                }
                let v: i128 = match a.data_type() {
                    DataType::UInt8 => a.as_primitive::<UInt8Type>().value(i).into(),
                    DataType::UInt16 => a.as_primitive::<UInt16Type>().value(i).into(),
                    DataType::UInt32 => a.as_primitive::<UInt32Type>().value(i).into(),
                    DataType::UInt64 => a.as_primitive::<UInt64Type>().value(i).into(),
                    DataType::Int16 => a.as_primitive::<Int16Type>().value(i).into(),
                    DataType::Int32 => a.as_primitive::<Int32Type>().value(i).into(),
                    DataType::Int64 => a.as_primitive::<Int64Type>().value(i).into(),
                    t => panic!("{name} is {t}, not an integer"),
                };
                out.push(Some(v));
            }
        }
        out
    }

    pub fn floats(&self, name: &str) -> Vec<Option<f64>> {
        let mut out = Vec::new();
        for a in self.columns(name) {
            let a = a.as_primitive::<Float64Type>();
            out.extend((0..a.len()).map(|i| (!a.is_null(i)).then(|| a.value(i))));
        }
        out
    }

    pub fn strings(&self, name: &str) -> Vec<Option<String>> {
        let mut out = Vec::new();
        for a in self.columns(name) {
            let a = a.as_string::<i32>();
            out.extend((0..a.len()).map(|i| (!a.is_null(i)).then(|| a.value(i).to_string())));
        }
        out
    }

    pub fn bools(&self, name: &str) -> Vec<Option<bool>> {
        let mut out = Vec::new();
        for a in self.columns(name) {
            let a = a.as_boolean();
            out.extend((0..a.len()).map(|i| (!a.is_null(i)).then(|| a.value(i))));
        }
        out
    }
}

/// Every column the contract (docs/tables.md) names for packets.parquet.
pub const PACKETS_COLUMNS: &[&str] = &[
    "frame",
    "ts_ns",
    "ts",
    "iface",
    "kind",
    "frame_len",
    "cap_len",
    "vlan",
    "pcp",
    "src_mac",
    "dst_mac",
    "src_ip",
    "dst_ip",
    "dscp",
    "ecn",
    "udp_sport",
    "opcode",
    "se",
    "migreq",
    "pad_count",
    "tver",
    "pkey",
    "fecn",
    "becn",
    "dest_qp",
    "ack_req",
    "psn",
    "aeth_syndrome",
    "aeth_msn",
    "reth_va",
    "reth_rkey",
    "reth_len",
    "imm",
    "payload_len",
    "icrc_ok",
    "pfc_enable",
    "pfc_quanta_0",
    "pfc_quanta_1",
    "pfc_quanta_2",
    "pfc_quanta_3",
    "pfc_quanta_4",
    "pfc_quanta_5",
    "pfc_quanta_6",
    "pfc_quanta_7",
    "pause_quanta",
    "flow_id",
    "retrans",
];
