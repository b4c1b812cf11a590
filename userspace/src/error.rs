//! One error type for the library. Every variant names the file (and byte
//! offset) or interface, and its message says what to do.
use std::path::PathBuf;
use std::sync::Arc;

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
    /// A write the file system refused: `detail` says what was being done
    /// (and quotes `source`), `source` is kept for the caller.
    #[error("{path}: cannot write: {detail}")]
    WriteIo {
        path: PathBuf,
        detail: String,
        #[source]
        source: std::io::Error,
    },
    /// What the user asked for cannot be done as asked.
    #[error("{0}")]
    Usage(String),
    /// A bug: a thread panicked, a stage ended without a reason. Not the
    /// user's doing.
    #[error("internal error: {0}")]
    Internal(String),
    /// A pipeline stage failed earlier (its error, the source here, was
    /// returned then); every later call says so.
    #[error("the analysis stopped earlier: {}", stopped_text(.0))]
    Stopped(#[source] Option<Arc<Error>>),
    /// The first report of an error that is kept for later calls (see
    /// [`Error::Stopped`]): shown as the error itself.
    #[error(transparent)]
    Shared(Arc<Error>),
    /// A network interface the live tap or replay was given.
    #[error("interface {iface}: {detail}")]
    Interface { iface: String, detail: String },
    /// The live tap could not load or run its XDP program.
    #[error("{0}")]
    Live(String),
}

fn stopped_text(cause: &Option<Arc<Error>>) -> String {
    cause.as_ref().map(|e| e.to_string()).unwrap_or_default()
}
