#!/usr/bin/env bash
# Cross-build the core for aarch64-unknown-linux-gnu and run its tests under qemu-user: the NEON block
# classifier against the table and the char-by-char scanners, and every other core test, on aarch64.
#
# Needs rustup and Debian/Ubuntu's apt (run as root, or with the packages already installed):
#   scripts/check_aarch64.sh [extra cargo test args, e.g. a test filter]
# Builds in $CARGO_TARGET_DIR (default target/aarch64-cross/, apart from the host build), in release mode: the differential tests
# take minutes under qemu in a debug build.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=aarch64-unknown-linux-gnu
if ! rustup target list --installed | grep -qx "$TARGET"; then
    rustup target add "$TARGET"
fi
if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
    sudo_if_needed=""
    if [ "$(id -u)" != 0 ]; then sudo_if_needed=sudo; fi
    $sudo_if_needed apt-get update -q
    $sudo_if_needed apt-get install -y -q gcc-aarch64-linux-gnu qemu-user
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target/aarch64-cross}"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
cargo test -p bpeforge --release --locked --target "$TARGET" "$@"
