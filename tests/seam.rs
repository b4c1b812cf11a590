//! The transport seam, measured (docs/build.md, "UET outside its modules"):
//! every non-test source file outside UET's modules that names UET in code
//! — an identifier or a string, not a comment — is one docs/build.md lists,
//! and every file it lists still does, so the list cannot drift.
//!
//! UET's modules are the modules named `uet` (a folder `uet/` or a file
//! `uet.rs`), one per layer that has UET code; test code is a file named
//! `tests.rs` or `*_tests.rs`, anything in a `tests/` folder, and an inline
//! `#[cfg(test)] mod`.
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The source trees the seam is measured over, from the workspace root.
const ROOTS: [&str; 3] = [
    "userspace/src",
    "ebpf/rocescope-common/src",
    "ebpf/rocescope-ebpf/src",
];

/// The section of docs/build.md whose `* `path`` items are the list.
const SECTION: &str = "### UET outside its modules";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// Outside UET's modules and not test code (the module's doc above).
fn counted(rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    let file = parts[parts.len() - 1];
    let dirs = &parts[..parts.len() - 1];
    !(file == "uet.rs"
        || dirs.contains(&"uet")
        || dirs.contains(&"tests")
        || file == "tests.rs"
        || file.ends_with("_tests.rs"))
}

/// `text` with comments blanked (`code`), and also string and character
/// literals blanked (`shape`, for matching braces); both keep every byte's
/// position.
fn lex(text: &str) -> (Vec<u8>, Vec<u8>) {
    let b = text.as_bytes();
    let mut code = b.to_vec();
    let mut shape = b.to_vec();
    let blank = |v: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut v[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let at = |k: usize| b.get(i + k).copied().unwrap_or(0);
        if at(0) == b'/' && at(1) == b'/' {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n);
            blank(&mut code, i, end);
            blank(&mut shape, i, end);
            i = end;
        } else if at(0) == b'/' && at(1) == b'*' {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                    depth += 1;
                    j += 2;
                } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut code, i, j);
            blank(&mut shape, i, j);
            i = j;
        } else if at(0) == b'r' && (at(1) == b'"' || at(1) == b'#') && !ident_byte(prev(b, i)) {
            // A raw string: r"…", r#"…"#, …
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let from = i + 2 + hashes;
            let end = b[from..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |n| from + n + close.len());
            blank(&mut shape, i, end);
            i = end;
        } else if at(0) == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            blank(&mut shape, i, end);
            i = end;
        } else if at(0) == b'\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime.
            let end = if at(1) == b'\\' {
                b.get(i + 3..)
                    .and_then(|r| r.iter().position(|&c| c == b'\''))
                    .map(|n| i + 4 + n)
            } else if at(1) != 0 && at(2) == b'\'' {
                Some(i + 3)
            } else {
                None
            };
            match end {
                Some(end) => {
                    blank(&mut shape, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    (code, shape)
}

fn prev(b: &[u8], i: usize) -> u8 {
    if i == 0 { 0 } else { b[i - 1] }
}

fn ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// `code` without its `#[cfg(test)] mod …` items (a block or `mod x;`).
fn without_tests(mut code: Vec<u8>, shape: &[u8]) -> Vec<u8> {
    const ATTR: &[u8] = b"#[cfg(test)]";
    let mut from = 0;
    while let Some(n) = shape[from..].windows(ATTR.len()).position(|w| w == ATTR) {
        let start = from + n;
        let mut j = start + ATTR.len();
        while j < shape.len() && shape[j].is_ascii_whitespace() {
            j += 1;
        }
        let rest = &shape[j..];
        let is_mod =
            rest.starts_with(b"mod ") || rest.starts_with(b"pub mod ") || rest.starts_with(b"pub(");
        if !is_mod {
            from = j;
            continue;
        }
        let open = rest
            .iter()
            .position(|&c| c == b'{' || c == b';')
            .map_or(shape.len(), |k| j + k);
        let mut end = open + 1;
        if shape.get(open) == Some(&b'{') {
            let mut depth = 1;
            while end < shape.len() && depth > 0 {
                depth += match shape[end] {
                    b'{' => 1,
                    b'}' => -1,
                    _ => 0,
                };
                end += 1;
            }
        }
        let end = end.min(code.len());
        for c in &mut code[start..end] {
            *c = b' ';
        }
        from = end;
    }
    code
}

/// Whether `code` names UET: `UET`, `uet_`, or a word starting `uet`/`Uet`.
fn names_uet(code: &[u8]) -> bool {
    (0..code.len()).any(|i| {
        let w = &code[i..];
        w.starts_with(b"UET")
            || w.starts_with(b"uet_")
            || ((w.starts_with(b"uet") || w.starts_with(b"Uet")) && !ident_byte(prev(code, i)))
    })
}

/// The files outside UET's modules that name UET in code, from the
/// workspace root.
fn touching() -> BTreeSet<String> {
    let root = workspace();
    let mut out = BTreeSet::new();
    for dir in ROOTS {
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        for path in files {
            let rel = path
                .strip_prefix(&root)
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/");
            if !counted(&rel) {
                continue;
            }
            let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
            let (code, shape) = lex(&text);
            if names_uet(&without_tests(code, &shape)) {
                out.insert(rel);
            }
        }
    }
    out
}

/// The paths docs/build.md lists in [`SECTION`]: each item's first
/// backquoted text.
fn documented() -> BTreeSet<String> {
    let text = fs::read_to_string(workspace().join("docs/build.md")).expect("docs/build.md");
    let start = text
        .find(SECTION)
        .unwrap_or_else(|| panic!("docs/build.md has no {SECTION:?}"));
    let body = &text[start + SECTION.len()..];
    let body = &body[..body.find("\n#").unwrap_or(body.len())];
    body.lines()
        .filter_map(|l| l.trim_start().strip_prefix("* `").or_else(|| numbered(l)))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect()
}

/// `1. `path`…` → `path`…
fn numbered(line: &str) -> Option<&str> {
    let l = line.trim_start();
    let digits = l.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0)
        .then(|| l[digits..].strip_prefix(". `"))
        .flatten()
}

#[test]
fn docs_list_every_file_outside_uet_that_names_it() {
    let found = touching();
    let listed = documented();
    let unlisted: Vec<_> = found.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&found).collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "docs/build.md {SECTION:?} lists {} files, the tree has {}:\n\
         naming UET but not listed: {unlisted:#?}\nlisted but not naming UET: {stale:#?}",
        listed.len(),
        found.len()
    );
}

/// The scanner itself, on text whose answer is known.
#[test]
fn comments_and_test_modules_do_not_count() {
    let scan = |s: &str| {
        let (code, shape) = lex(s);
        names_uet(&without_tests(code, &shape))
    };
    assert!(!scan("// UET here\n/* uet_x /* nested Uet */ */ fn f() {}"));
    assert!(!scan(
        "fn f() { let x = '\"'; }\n#[cfg(test)]\nmod t { fn uet() { let s = \"}\"; } }"
    ));
    assert!(!scan("#[cfg(test)]\nmod uet_tests;\nfn roce() {}"));
    assert!(!scan("fn f<'a>(x: &'a Queue) {} // Uet"));
    assert!(!scan("let s = \"http://x\"; fn requeue() {}"));
    assert!(scan("let s = \"http://x\"; let k = Kind::Uet;"));
    assert!(scan("let s = \"RoCE, UET\";"));
    assert!(scan("let s = r#\"a\"#; let uet_paths = 1;"));
    assert!(scan("use crate::transport::uet;"));
    assert!(counted("userspace/src/analyze/mod.rs"));
    assert!(!counted("userspace/src/render/wireshark/uet.rs"));
    assert!(!counted(
        "userspace/src/analyze/findings/transports/uet/pdc.rs"
    ));
    assert!(!counted("userspace/src/transport/sequencing/tests.rs"));
    assert!(!counted("userspace/src/transport/uet/pdc_tests.rs"));
}
