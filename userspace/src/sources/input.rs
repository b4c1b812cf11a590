//! What the command line names as captures: files, `-` for standard input,
//! and directories, turned into the list of captures a run reads.
//!
//! * `-` is standard input (a pcap or pcapng stream, compressed or not),
//!   at most once.
//! * A directory means the capture files under it, recursively, in name
//!   order (byte order of the names, each directory's entries before the
//!   next sibling), recognised by their magic bytes whatever their names;
//!   other files are skipped with a note. Symbolic links to files are
//!   followed, links to directories are not (no loops).
//! * A file that is not a capture is an error when it is the only input,
//!   and a warning (the file is skipped) when there are several.
//! * Regular files are probed up front (their first bytes only), so a typo
//!   or a stray README costs nothing of the captures before it. FIFOs and
//!   other special files (`<(zstd -dc x.zst)`) are not probed: reading
//!   their first bytes would lose them.
use std::fs::{self, File};
use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};

use super::reader::{CaptureReader, probe};
use crate::error::{Error, Result};

/// The name standard input goes by in messages and `summary.json`.
pub const STDIN_NAME: &str = "<stdin>";

/// One capture of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Stdin,
    File(PathBuf),
}

impl Input {
    /// `-` is standard input, anything else a file.
    pub fn from_arg(arg: &Path) -> Input {
        if arg.as_os_str() == "-" {
            Input::Stdin
        } else {
            Input::File(arg.to_path_buf())
        }
    }

    /// The name in messages and `summary.json`.
    pub fn name(&self) -> PathBuf {
        match self {
            Input::Stdin => PathBuf::from(STDIN_NAME),
            Input::File(p) => p.clone(),
        }
    }

    /// Starts reading the capture.
    pub fn open(&self) -> Result<CaptureReader> {
        match self {
            // Waiting for a capture typed at a terminal would look like a hang.
            Input::Stdin if io::stdin().is_terminal() => Err(Error::Usage(
                "- reads a capture from standard input, which is a terminal here: pipe one in, e.g. tcpdump -w - | rocescope report -".into(),
            )),
            Input::Stdin => CaptureReader::from_reader(STDIN_NAME, io::stdin().lock()),
            Input::File(p) => CaptureReader::open(p),
        }
    }
}

/// The captures of a run and what was said about the arguments.
#[derive(Debug, Default)]
pub struct Inputs {
    pub captures: Vec<Input>,
    /// Inputs given that are not captures, skipped (several inputs only).
    pub warnings: Vec<String>,
    /// Files of directories skipped as no captures.
    pub notes: Vec<String>,
}

/// At most this many skipped names are listed per directory.
const NAMES_LISTED: usize = 5;

impl Inputs {
    /// The captures the arguments name (see the module docs).
    pub fn expand(args: &[PathBuf]) -> Result<Inputs> {
        let mut inputs = Inputs::default();
        let several = args.len() > 1;
        let mut stdin_seen = false;
        for arg in args {
            let input = Input::from_arg(arg);
            let Input::File(path) = input else {
                if stdin_seen {
                    return Err(Error::Usage(
                        "- (standard input) is given twice; it can be read once".into(),
                    ));
                }
                stdin_seen = true;
                inputs.captures.push(Input::Stdin);
                continue;
            };
            let meta = fs::metadata(&path).map_err(|source| Error::Open {
                path: path.clone(),
                source,
            })?;
            if meta.is_dir() {
                inputs.directory(&path)?;
            } else if !meta.is_file() {
                inputs.captures.push(Input::File(path));
            } else {
                match probe_file(&path) {
                    Ok(()) => inputs.captures.push(Input::File(path)),
                    Err(e) if several && skippable(&e) => inputs.warnings.push(skipped(&e)),
                    Err(e) => return Err(e),
                }
            }
        }
        if inputs.captures.is_empty() {
            let what = if args.len() == 1 {
                format!("{}: holds no capture file", args[0].display())
            } else {
                "none of the inputs is a capture".to_string()
            };
            return Err(Error::Usage(format!(
                "{what}; give pcap or pcapng files (gzip, zstd or lz4 compressed or not), directories of them, or - for standard input"
            )));
        }
        Ok(inputs)
    }

    /// The captures under `dir`, recursively, in name order.
    fn directory(&mut self, dir: &Path) -> Result<()> {
        let mut not_captures = Vec::new();
        let found = self.captures.len();
        self.walk(dir, &mut not_captures)?;
        if !not_captures.is_empty() {
            let mut names: Vec<String> = not_captures
                .iter()
                .take(NAMES_LISTED)
                .map(|p: &PathBuf| p.strip_prefix(dir).unwrap_or(p).display().to_string())
                .collect();
            if not_captures.len() > NAMES_LISTED {
                names.push(format!("and {} more", not_captures.len() - NAMES_LISTED));
            }
            let what = match not_captures.len() {
                1 => "1 file that is not a capture".to_string(),
                n => format!("{n} files that are not captures"),
            };
            self.notes.push(format!(
                "{}: skipped {what}: {}",
                dir.display(),
                names.join(", ")
            ));
        }
        if self.captures.len() == found {
            self.warnings.push(format!(
                "{}: no capture file in this directory",
                dir.display()
            ));
        }
        Ok(())
    }

    fn walk(&mut self, dir: &Path, not_captures: &mut Vec<PathBuf>) -> Result<()> {
        let open_err = |source| Error::Open {
            path: dir.to_path_buf(),
            source,
        };
        let mut entries = fs::read_dir(dir)
            .map_err(open_err)?
            .collect::<io::Result<Vec<_>>>()
            .map_err(open_err)?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let kind = entry.file_type().map_err(|source| Error::Open {
                path: path.clone(),
                source,
            })?;
            if kind.is_dir() {
                self.walk(&path, not_captures)?;
                continue;
            }
            if kind.is_symlink() {
                match fs::metadata(&path) {
                    Ok(m) if m.is_file() => {}
                    Ok(m) if m.is_dir() => {
                        self.notes.push(format!(
                            "{}: a link to a directory, not followed",
                            path.display()
                        ));
                        continue;
                    }
                    _ => {
                        not_captures.push(path);
                        continue;
                    }
                }
            } else if !kind.is_file() {
                // FIFOs, sockets, devices inside a directory: not captures.
                not_captures.push(path);
                continue;
            }
            match probe_file(&path) {
                Ok(()) => self.captures.push(Input::File(path)),
                Err(e) if skippable(&e) => not_captures.push(path),
                Err(e) => self.warnings.push(skipped(&e)),
            }
        }
        Ok(())
    }
}

/// The warning for an input skipped because it could not be read.
pub fn skipped(e: &Error) -> String {
    format!("{e}; skipped it, read the other inputs")
}

fn probe_file(path: &Path) -> Result<()> {
    let file = File::open(path).map_err(|source| Error::Open {
        path: path.to_path_buf(),
        source,
    })?;
    probe(path, Box::new(file))
}

/// The file is there but is no capture (or its header is damaged).
fn skippable(e: &Error) -> bool {
    matches!(e, Error::NotACapture { .. } | Error::BadCapture { .. })
}

/// The stem that names a capture's interfaces: the file name without its
/// compression and capture extensions (`tap1.pcapng.zst` → `tap1`);
/// `stdin` for standard input.
pub fn capture_stem(name: &Path) -> String {
    if name.as_os_str() == STDIN_NAME {
        return "stdin".into();
    }
    let file = name
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut stem = file.as_str();
    for ext in [".gz", ".zst", ".zstd", ".lz4"] {
        if let Some(s) = stem.strip_suffix(ext) {
            stem = s;
            break;
        }
    }
    let stem = Path::new(stem)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if stem.is_empty() {
        "capture".into()
    } else {
        stem
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcap_header() -> Vec<u8> {
        let mut v = 0xA1B2_C3D4u32.to_le_bytes().to_vec();
        v.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        v.extend_from_slice(&65535u32.to_le_bytes());
        v.extend_from_slice(&1u32.to_le_bytes());
        v
    }

    /// Name order across levels, captures by magic, a link to a directory
    /// not followed, a FIFO passed on unprobed (probing would block or eat
    /// its bytes), `-` once.
    #[test]
    fn expansion_order_links_and_special_files() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let root = dir.path();
        std::fs::create_dir_all(root.join("d/sub")).unwrap();
        std::fs::write(root.join("d/b.pcap"), pcap_header()).unwrap();
        std::fs::write(root.join("d/a.txt"), "text").unwrap();
        std::fs::write(root.join("d/sub/c"), pcap_header()).unwrap();
        std::fs::write(root.join("d/z.pcap"), pcap_header()).unwrap();
        std::os::unix::fs::symlink(root.join("d/sub"), root.join("d/link")).unwrap();
        std::os::unix::fs::symlink(root.join("d/z.pcap"), root.join("d/y")).unwrap();
        let fifo = root.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);

        let args = [root.join("d"), fifo.clone(), PathBuf::from("-")];
        let inputs = Inputs::expand(&args).expect("captures");
        let files: Vec<Input> = ["d/b.pcap", "d/sub/c", "d/y", "d/z.pcap", "fifo"]
            .iter()
            .map(|p| Input::File(root.join(p)))
            .chain([Input::Stdin])
            .collect();
        assert_eq!(inputs.captures, files);
        assert_eq!(inputs.notes.len(), 2, "{:?}", inputs.notes);
        assert!(inputs.notes[0].contains("link") && inputs.notes[0].contains("not followed"));
        assert!(inputs.notes[1].ends_with("skipped 1 file that is not a capture: a.txt"));
        assert!(inputs.warnings.is_empty(), "{:?}", inputs.warnings);

        let twice = Inputs::expand(&[PathBuf::from("-"), PathBuf::from("-")]);
        assert!(matches!(twice, Err(Error::Usage(_))));
        let missing = Inputs::expand(&[root.join("nope")]);
        assert!(matches!(missing, Err(Error::Open { .. })));
        assert_eq!(capture_stem(Path::new("/x/tap1.pcapng.zst")), "tap1");
        assert_eq!(capture_stem(Path::new("tap2.pcap")), "tap2");
        assert_eq!(capture_stem(Path::new(STDIN_NAME)), "stdin");
        assert_eq!(capture_stem(Path::new("mirror.gz")), "mirror");
    }
}
