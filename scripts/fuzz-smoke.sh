#!/usr/bin/env bash
# Fuzz smoke test for the expression engine: builds the cargo-fuzz target `expr` and runs it for
# about a minute (FUZZ_SECONDS overrides), starting from the committed seeds.
#
# cargo-fuzz needs nightly-only compiler flags (-Zsanitizer=address, sanitizer coverage);
# RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them. If the address sanitizer runtime is
# unavailable the target is built without a sanitizer (still libFuzzer with coverage).
set -euo pipefail

cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

sanitizer=()
if ! cargo fuzz build expr >/dev/null 2>&1; then
    echo "fuzz-smoke: building with the address sanitizer failed; building without one" >&2
    sanitizer=(--sanitizer none)
    cargo fuzz build "${sanitizer[@]}" expr
fi

mkdir -p fuzz/corpus/expr
# The first corpus directory collects new inputs; the seeds are read only.
cargo fuzz run "${sanitizer[@]}" expr fuzz/corpus/expr fuzz/seeds/expr -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
