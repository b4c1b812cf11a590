#!/usr/bin/env bash
# Installs what rocescope needs on a fresh Debian machine with rustup, gcc and
# python. Idempotent: what is already there is left alone, so a second run
# takes seconds.
#
#   scripts/setup.sh          build dependencies (libpcap; the eBPF toolchain
#                             for the live tap's XDP program: LLVM 22, nightly
#                             Rust with rust-src, bpf-linker)
#   scripts/setup.sh --test   also what the test suite uses (tshark, chromium,
#                             iproute2, libcap2-bin, systemd, prometheus; Python polars, matplotlib, duckdb,
#                             nbclient, pytest)
set -euo pipefail

want_test=0
for arg in "$@"; do
  case "$arg" in
    --test) want_test=1 ;;
    *) echo "setup.sh: unknown option $arg (use --test)" >&2; exit 2 ;;
  esac
done

say() { printf '\033[1m== %s\033[0m\n' "$*"; }

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then echo sudo; else
      echo "setup.sh: installing Debian packages needs root (or sudo)" >&2; exit 1
    fi
  fi
}

# Debian packages, installed only when missing.
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo; sudo=$(need_root)
  say "apt-get install ${missing[*]}"
  $sudo apt-get update -qq
  # tshark asks whether non-root users may capture; the answer does not matter here.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

apt_install libpcap-dev pkg-config

command -v cargo >/dev/null || { echo "setup.sh: cargo not found; install rustup first" >&2; exit 1; }
command -v rustup >/dev/null || { echo "setup.sh: rustup not found; the XDP program needs a nightly toolchain through rustup" >&2; exit 1; }

# The live tap's XDP program (ebpf/rocescope-ebpf) is built by
# userspace/build.rs with `cargo +nightly -Z build-std=core` and linked by
# bpf-linker, which is built against LLVM 22.
apt_install llvm-22-dev zlib1g-dev libzstd-dev
if ! rustup toolchain list | grep -q '^nightly'; then
  say "rustup toolchain install nightly (rust-src)"
  rustup toolchain install nightly --profile minimal --component rust-src
fi
if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src'; then
  say "rustup component add rust-src --toolchain nightly"
  rustup component add rust-src --toolchain nightly
fi
if ! command -v bpf-linker >/dev/null; then
  say "cargo install bpf-linker (LLVM 22; takes several minutes)"
  PATH="/usr/lib/llvm-22/bin:$PATH" LLVM_SYS_221_PREFIX=/usr/lib/llvm-22 \
    cargo install bpf-linker --version 0.13.0 --no-default-features --features llvm-22
fi

if [ "$want_test" = 1 ]; then
  # chromium: the HTML report's screenshot test (headless, no network);
  # libcap2-bin: setcap, for the test of a file-capability binary;
  # gzip, zstd, lz4: the compressed-capture tests pipe through the tools;
  # openjdk-17-jre-headless: Spark, which tests/test_dataset.py reads the
  # dataset with (pyspark in local mode).
  # systemd: systemd-analyze verify, for the test of the service unit.
  # prometheus: the server (and promtool) the tests of `live --metrics`
  # scrape with and check contrib/prometheus/rocescope.rules.yml with.
  apt_install tshark chromium iproute2 libcap2-bin gzip zstd lz4 openjdk-17-jre-headless systemd prometheus
  # Python modules the notebooks and their tests import; pip package names
  # differ from module names for none of these.
  py_missing=()
  for m in polars matplotlib duckdb nbformat nbclient ipykernel pytest pyarrow pandas pyspark; do
    python3 -c "import $m" 2>/dev/null || py_missing+=("$m")
  done
  if [ ${#py_missing[@]} -gt 0 ]; then
    say "pip install ${py_missing[*]}"
    python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "${py_missing[@]}"
  fi
  # nbclient runs notebooks on the "python3" kernel: make sure one is registered.
  if ! python3 -m jupyter kernelspec list 2>/dev/null | grep -q '^ *python3 '; then
    say "register the python3 Jupyter kernel"
    python3 -m ipykernel install --sys-prefix >/dev/null
  fi
fi

say "set-up complete"
