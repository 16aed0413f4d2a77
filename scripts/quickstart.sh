#!/usr/bin/env bash
# Builds Plinth and runs the quickstart: a local controller and three agents deploy a sample graph of real
# shell tasks, with live progress and the final report. Needs only the Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
cargo build --release --bins --locked --quiet
exec target/release/plinthctl quickstart "$@"
