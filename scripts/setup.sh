#!/usr/bin/env bash
# Installs what a fresh Debian-like machine lacks for building and testing sandbox.
# As root: apt packages (runc, crun, bubblewrap, util-linux). Always: the Rust components and
# the macOS std target used for `cargo check`. Safe to run again; it installs only what is missing.
set -euo pipefail
export PATH="$HOME/.cargo/bin:$PATH"

if [ "$(id -u)" = 0 ]; then
  missing=()
  for pkg_cmd in runc:runc crun:crun bubblewrap:bwrap util-linux:unshare nodejs:node time:/usr/bin/time python3:python3 procps:pgrep curl:curl openssl:openssl gcc:cc; do
    command -v "${pkg_cmd#*:}" >/dev/null 2>&1 || missing+=("${pkg_cmd%%:*}")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
else
  for cmd in runc crun; do
    command -v "$cmd" >/dev/null 2>&1 || echo "setup: WARNING: $cmd is missing and only root can install it"
  done
fi

command -v cargo >/dev/null 2>&1 || { echo "setup: cargo not found (install Rust with rustup)"; exit 1; }
installed=$(rustup component list --installed 2>/dev/null || true)
for c in clippy rustfmt; do
  grep -q "^$c" <<<"$installed" || rustup component add "$c"
done
rustup target list --installed 2>/dev/null | grep -q '^aarch64-apple-darwin$' || rustup target add aarch64-apple-darwin
