//! One error type for the library. Every variant names the file (and byte
//! offset) or interface, and its message says what to do.
use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: cannot open: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path}: not a pcap or pcapng capture ({detail}); give a capture written by tcpdump, tshark or dumpcap"
    )]
    NotACapture { path: PathBuf, detail: String },
    #[error("{path}: at byte {offset}: {detail}")]
    BadCapture {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    #[error("{path}: read error at byte {offset}: {source}")]
    Read {
        path: PathBuf,
        offset: u64,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "filter {expr:?}: {detail}; the filter takes tcpdump syntax, e.g. \"udp dst port 4791\""
    )]
    Filter { expr: String, detail: String },
    #[error("{path}: cannot write: {detail}")]
    Write { path: PathBuf, detail: String },
    #[error("{0}")]
    Usage(String),
    /// A network interface the live tap or replay was given.
    #[error("interface {iface}: {detail}")]
    Interface { iface: String, detail: String },
    /// The live tap could not load or run its XDP program.
    #[error("{0}")]
    Live(String),
}
