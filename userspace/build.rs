//! With the `live` feature (the default): builds the XDP program
//! (`ebpf/rocescope-ebpf`, target bpfel-unknown-none) with aya-build, which
//! runs `cargo +nightly build -Z build-std=core`; `src/live` embeds the
//! object with `include_bytes_aligned!`. That needs the nightly toolchain
//! with `rust-src` and `bpf-linker` on PATH (`scripts/setup.sh` installs
//! both).
//!
//! Without it (`--no-default-features`) there is no XDP program to build:
//! this script does nothing, so offline analysis builds on stable Rust with
//! only libpcap (docs/build.md).
fn main() {
    // Without it cargo would rerun this script on any change in the package.
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "live")]
    build_xdp_program();
}

#[cfg(feature = "live")]
fn build_xdp_program() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ebpf/rocescope-ebpf");
    let root = root.to_str().expect("the repository path is UTF-8");
    // The common crate is the program's path dependency: rebuild on change.
    println!("cargo:rerun-if-changed=../ebpf/rocescope-common/src");
    // aya-build relays the inner cargo's stderr as warnings: keep it to errors.
    // SAFETY: build scripts are single-threaded.
    unsafe { std::env::set_var("CARGO_TERM_QUIET", "true") };
    let pkg = aya_build::Package {
        name: "rocescope-ebpf",
        root_dir: root,
        ..Default::default()
    };
    if let Err(e) = aya_build::build_ebpf([pkg], aya_build::Toolchain::default()) {
        panic!(
            "building the XDP program failed: {e:#}\n\
             it needs the nightly toolchain with rust-src and bpf-linker: run scripts/setup.sh,\n\
             or build without the live tap: cargo build --no-default-features (docs/build.md)"
        );
    }
}
