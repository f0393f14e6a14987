#!/usr/bin/env bash
# bench/remote.sh: see bench/cluster_bench.py and bench/README.md.
#
#   bench/remote.sh                 # builds target/release/tessera, then measures
#   SKIP_BUILD=1 bench/remote.sh    # uses target/release/tessera as it is
#   TESSERA_BIN=path bench/remote.sh
#
# Needs psycopg 3 (python3 -m pip install "psycopg[binary]").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ -z "${TESSERA_BIN:-}" ] && [ "${SKIP_BUILD:-0}" != 1 ]; then
    cargo build --release -p tessera >&2
fi
export TESSERA_BIN="${TESSERA_BIN:-${CARGO_TARGET_DIR:-target}/release/tessera}"
exec python3 bench/cluster_bench.py remote
