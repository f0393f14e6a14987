#!/usr/bin/env bash
# In-process benchmark of tessera-engine (see bench/README.md).
#
#   bench/engine.sh                      # 10 M rows, every figure
#   ROWS=1000000 bench/engine.sh         # quick run
#   bench/engine.sh --only memory        # skip the durable engine
#   BENCH_DIR=/mnt/ssd bench/engine.sh   # durable engine on another disk
#
# Prints one line per figure on stdout:
#   BENCH <name> <value> <unit> target=<target> ratio=<value/target>
# Progress, variants and engine stats go to stderr (also kept in
# $BENCH_LOG, default target/bench/engine-<time>.log).
#
# Environment: ROWS, SECS, WARMUP, LOOKUP_BATCH, WRITERS, BENCH_DIR, ONLY
# (same as the example's --rows, --secs, --warmup, --lookup-batch,
# --writers, --dir, --only flags; flags given here are passed through).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

target_dir="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release --quiet -p tessera-engine --example engine_bench
bin="$target_dir/release/examples/engine_bench"

log="${BENCH_LOG:-$target_dir/bench/engine-$(date +%Y%m%d-%H%M%S).log}"
mkdir -p "$(dirname "$log")"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
dirty="$(git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo ' (modified)' || true)"
echo "engine.sh: commit $commit$dirty, $(nproc) cores, log $log" | tee "$log" >&2

# stdout: BENCH lines only; stderr: everything else, also appended to the log
# (pipefail makes the benchmark's exit status the script's).
{ "$bin" "$@" 2>&1 1>&3 3>&- | tee -a "$log" >&2; } 3>&1
