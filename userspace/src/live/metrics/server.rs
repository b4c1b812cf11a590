//! The HTTP side of `--metrics`: `tiny_http` on a thread of its own
//! answers `GET /metrics` with [`Metrics::render`]. The thread only reads
//! snapshots (a copy under a short lock), so a scraper that is slow to
//! read holds up this thread alone, never the ring drains or the analyzer.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use tiny_http::{Header, Method, Response, Server};

use super::Metrics;
use crate::{Error, Result};

/// The running server; stopped (and its thread joined) on drop.
pub struct Exporter {
    server: Arc<Server>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

impl Exporter {
    /// Listens on `addr` (port 0: any free port, see [`Exporter::addr`]).
    pub fn start(addr: SocketAddr, metrics: Arc<Metrics>) -> Result<Exporter> {
        let server = Server::http(addr).map_err(|e| {
            Error::Usage(format!(
                "--metrics {addr}: cannot listen there: {e} (another process on the port, or an address of no interface here)"
            ))
        })?;
        let addr = server.server_addr().to_ip().unwrap_or(addr);
        let server = Arc::new(server);
        let serving = server.clone();
        let thread = std::thread::Builder::new()
            .name("rocescope-metrics".into())
            .spawn(move || serve(&serving, &metrics))
            .map_err(|e| Error::Internal(format!("cannot start the metrics thread: {e}")))?;
        Ok(Exporter {
            server,
            thread: Some(thread),
            addr,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(server: &Server, metrics: &Arc<Metrics>) {
    // Ends when unblocked (or the listener fails).
    while let Ok(request) = server.recv() {
        let get = matches!(request.method(), Method::Get | Method::Head);
        let path = request.url().split('?').next().unwrap_or("");
        let response = match (get, path) {
            (true, "/metrics") => Response::from_string(metrics.render()).with_header(header(
                prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            )),
            (true, "/") => Response::from_string(
                "rocescope live: the metrics are on /metrics (docs/live.md, \"Metrics\")\n",
            )
            .with_header(header("text/plain; charset=utf-8")),
            (true, _) => Response::from_string("not found: the metrics are on /metrics\n")
                .with_status_code(404),
            (false, _) => Response::from_string("only GET and HEAD\n").with_status_code(405),
        };
        // A scraper that went away is its own problem.
        let _ = request.respond(response);
    }
}

fn header(content_type: &str) -> Header {
    Header::from_bytes("Content-Type", content_type).expect("a constant, valid header")
}
