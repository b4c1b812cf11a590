#!/usr/bin/env bash
# Installs what rocescope needs on a fresh Debian machine with rustup, gcc and
# python. Idempotent: what is already there is left alone, so a second run
# takes seconds.
#
#   scripts/setup.sh          build dependencies (libpcap)
#   scripts/setup.sh --test   also what the test suite uses (tshark, polars)
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

if [ "$want_test" = 1 ]; then
  apt_install tshark
  if ! python3 -c 'import polars' 2>/dev/null; then
    say "pip install polars"
    python3 -m pip install -q --disable-pip-version-check polars
  fi
fi

command -v cargo >/dev/null || { echo "setup.sh: cargo not found; install rustup first" >&2; exit 1; }
say "set-up complete"
