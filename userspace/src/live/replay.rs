//! `rocescope replay`: a capture's frames out of an interface through an
//! AF_PACKET raw socket, optionally paced.
//!
//! * Only Ethernet captures can be replayed (a Linux cooked capture has no
//!   Ethernet header to send). Frames are sent as captured: a frame cut by
//!   the capture's snaplen goes out cut.
//! * Frames shorter than an Ethernet header are skipped; frames the
//!   interface refuses (longer than its MTU) are counted as skipped, with a
//!   warning, and the replay goes on.
//! * `--pps N` schedules frame *i* at `start + i / N` (no drift: a late frame
//!   is sent at once, the schedule does not shift); without it frames go as
//!   fast as the socket takes them.
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use rocescope_common::proto::{ethernet, linktype};

use super::netif;
use crate::sources::CaptureReader;
use crate::{Error, Result};

/// A raw AF_PACKET socket bound to one interface, for sending only.
pub struct RawSender {
    fd: OwnedFd,
    iface: String,
}

impl RawSender {
    pub fn open(iface: &str) -> Result<RawSender> {
        let ifindex = netif::index(iface).ok_or_else(|| Error::Interface {
            iface: iface.into(),
            detail: "no such interface (see `ip link`)".into(),
        })?;
        // Protocol 0: the socket receives nothing.
        // SAFETY: plain socket call; the fd is owned right away.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            let detail = if e.kind() == io::ErrorKind::PermissionDenied {
                "sending raw frames needs root or CAP_NET_RAW".to_string()
            } else {
                format!("cannot open an AF_PACKET socket: {e}")
            };
            return Err(Error::Interface {
                iface: iface.into(),
                detail,
            });
        }
        // SAFETY: fd is a fresh, valid descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: a zeroed sockaddr_ll with family and index set.
        let r = unsafe {
            let mut addr: libc::sockaddr_ll = std::mem::zeroed();
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_ifindex = ifindex as i32;
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if r < 0 {
            return Err(Error::Interface {
                iface: iface.into(),
                detail: format!("cannot bind a raw socket: {}", io::Error::last_os_error()),
            });
        }
        Ok(RawSender {
            fd,
            iface: iface.to_string(),
        })
    }

    /// Sends one frame; waits out a full transmit queue (ENOBUFS).
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        loop {
            // SAFETY: a valid buffer of the given length.
            let n =
                unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
            if n >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::ENOBUFS) | Some(libc::EAGAIN) => {
                    std::thread::sleep(Duration::from_micros(50))
                }
                Some(libc::EINTR) => {}
                _ => return Err(e),
            }
        }
    }

    pub fn iface(&self) -> &str {
        &self.iface
    }
}

/// What a replay did.
#[derive(Clone, Debug, Default)]
pub struct ReplayOutcome {
    pub sent: u64,
    pub skipped: u64,
    /// Frames of other capture interfaces than `--tap` names.
    pub other_taps: u64,
    pub elapsed: Duration,
    pub warnings: Vec<String>,
}

/// Sends every frame of `capture` out of `iface`, `pps` frames per second
/// if given; with `tap`, only the frames captured on the pcapng interface
/// of that name. A multi-tap capture replayed whole into one interface
/// shows each frame once per tap that saw it, which the analyzer (rightly)
/// takes for resends: replay one tap at a time.
pub fn replay(
    capture: &Path,
    iface: &str,
    pps: Option<u64>,
    tap: Option<&str>,
) -> Result<ReplayOutcome> {
    if pps == Some(0) {
        return Err(Error::Usage("--pps must be at least 1".into()));
    }
    let mut reader = CaptureReader::open(capture)?;
    let sender = RawSender::open(iface)?;
    let mut out = ReplayOutcome::default();
    let interval_ns = pps.map(|p| 1e9 / p as f64);
    // Per capture interface (in the order the file defines them): send its frames?
    let mut wanted: Vec<bool> = Vec::new();
    let refresh = |reader: &CaptureReader, wanted: &mut Vec<bool>| {
        let known = reader.interfaces();
        wanted.extend(
            known[wanted.len().min(known.len())..]
                .iter()
                .map(|i| tap.is_none_or(|t| i.name.as_deref() == Some(t))),
        );
    };
    let mut owned = Vec::new();
    let start = Instant::now();
    let mut index = 0u64;
    loop {
        refresh(&reader, &mut wanted);
        let Some(frame) = reader.next_frame()? else {
            break;
        };
        let (number, linktype, on) = (frame.number, frame.linktype, frame.iface as usize);
        let data: &[u8] = if on < wanted.len() {
            frame.data
        } else {
            // Its interface was defined while reading it: learn its name first.
            owned.clear();
            owned.extend_from_slice(frame.data);
            refresh(&reader, &mut wanted);
            &owned
        };
        if !wanted.get(on).copied().unwrap_or(tap.is_none()) {
            out.other_taps += 1;
            continue;
        }
        if linktype != linktype::ETHERNET {
            return Err(Error::Usage(format!(
                "{}: frame {number}: link type {linktype} is not Ethernet; only Ethernet captures can be replayed",
                capture.display(),
            )));
        }
        if data.len() < ethernet::HEADER_LEN {
            out.skipped += 1;
            continue;
        }
        if let Some(ns) = interval_ns {
            let due = start + Duration::from_nanos((index as f64 * ns) as u64);
            wait_until(due);
        }
        index += 1;
        match sender.send(data) {
            Ok(()) => out.sent += 1,
            Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
                out.skipped += 1;
                out.warnings.push(format!(
                    "frame {number}: {} bytes is more than {iface} takes (MTU); skipped",
                    data.len()
                ));
            }
            Err(e) => {
                return Err(Error::Interface {
                    iface: iface.into(),
                    detail: format!("sending frame {number}: {e}"),
                });
            }
        }
    }
    out.warnings
        .extend(reader.take_warnings().into_iter().map(|w| w.to_string()));
    out.elapsed = start.elapsed();
    if let Some(t) = tap
        && !wanted.contains(&true)
    {
        let names: Vec<&str> = reader
            .interfaces()
            .iter()
            .filter_map(|i| i.name.as_deref())
            .collect();
        return Err(Error::Usage(format!(
            "{}: no capture interface is named {t:?} (--tap); its interfaces: {}",
            capture.display(),
            if names.is_empty() {
                "none named (a classic pcap has one, unnamed: replay it without --tap)".to_string()
            } else {
                names.join(", ")
            }
        )));
    }
    Ok(out)
}

/// Sleeps until `due`, spinning for the last stretch (sleep is too coarse
/// for high rates).
fn wait_until(due: Instant) {
    loop {
        let now = Instant::now();
        if now >= due {
            return;
        }
        let left = due - now;
        if left > Duration::from_micros(200) {
            std::thread::sleep(left - Duration::from_micros(100));
        } else {
            std::hint::spin_loop();
        }
    }
}
