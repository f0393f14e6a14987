#!/usr/bin/env bash
# PostgreSQL 15's own regression files (crates/tessera/tests/regress) against a
# release build of Tessera: the share of their statements Tessera answers as
# PostgreSQL did.
#
#   bench/compat.sh                   # builds target/release/tessera, then measures (~1-2 min)
#   SKIP_BUILD=1 bench/compat.sh      # uses target/release/tessera as it is
#   TESSERA_BIN=path bench/compat.sh  # another binary (nothing is built)
#
# The harness is the e2e test `regress` (crates/tessera/tests/e2e/regress.rs),
# pointed with TESSERA_REGRESS_SERVER at the server this script starts; cargo
# builds the test in its default (debug) profile. Stdout carries the harness's
# line per file and its total,
#   regress <file>: <agree>/<total> statements agree (<pct>%); …
# then one figure:
#   BENCH pg_regress_agreement <percent> target=95
# Every disagreeing statement, with both outcomes, goes to $BENCH_LOG.report;
# the harness's whole output to $BENCH_LOG (default
# target/bench/compat-<time>.log).
set -euo pipefail

invoked_from="$PWD"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# A PGHOST or PGOPTIONS from the caller's shell must not reach anything here.
unset PGOPTIONS PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGSERVICE PGPASSWORD

die() {
    echo "compat.sh: $*" >&2
    exit 1
}

target_dir="${CARGO_TARGET_DIR:-$root/target}"
log="${BENCH_LOG:-$target_dir/bench/compat-$(date +%Y%m%d-%H%M%S).log}"
mkdir -p "$(dirname "$log")"

if [[ -n ${TESSERA_BIN:-} ]]; then
    [[ $TESSERA_BIN == /* ]] || TESSERA_BIN="$invoked_from/$TESSERA_BIN"
elif [[ ${SKIP_BUILD:-} == 1 && -x $target_dir/release/tessera ]]; then
    TESSERA_BIN="$target_dir/release/tessera"
else
    cargo build --release -p tessera >&2
    TESSERA_BIN="$target_dir/release/tessera"
fi
[[ -x $TESSERA_BIN ]] || die "no Tessera binary at $TESSERA_BIN"
# Build the harness before the server starts, so that the build does not share
# the machine with the run.
cargo test -p tessera --test e2e --no-run >&2

data="$(mktemp -d "${TMPDIR:-/tmp}/tessera-compat.XXXXXX")"
server_pid=""
cleanup() {
    if [[ -n $server_pid ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$data"
}
trap cleanup EXIT

# --port 0: the server picks a free port and names it on stdout.
"$TESSERA_BIN" start --data-dir "$data/db" --port 0 >"$data/stdout" 2>"$data/stderr" &
server_pid=$!
port=""
for _ in $(seq 600); do
    port="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$data/stdout" | head -n 1)"
    [[ -n $port ]] && break
    kill -0 "$server_pid" 2>/dev/null || die "tessera exited before listening: $(cat "$data/stderr")"
    sleep 0.1
done
[[ -n $port ]] || die "tessera did not report its port within 60 s"
echo "# $(git rev-parse --short HEAD 2>/dev/null || echo unknown) $TESSERA_BIN on port $port" >>"$log"

status=0
TESSERA_REGRESS_SERVER="host=127.0.0.1 port=$port user=tessera dbname=tessera" \
    TESSERA_REGRESS_REPORT="$log.report" \
    cargo test -q -p tessera --test e2e regress::postgres_regression_files -- --exact --nocapture \
    >>"$log" 2>&1 || status=$?

kill -0 "$server_pid" 2>/dev/null || die "the server exited during the run (see $log): $(tail -n 20 "$data/stderr")"
grep '^regress [^:]*: [0-9]' "$log" || true
total="$(sed -n 's/^regress total: [0-9]*\/[0-9]* statements agree (\([0-9.]*\)%).*/\1/p' "$log" | tail -n 1)"
[[ -n $total ]] || die "the harness printed no total (exit status $status; see $log)"
if [[ $status != 0 ]]; then
    echo "compat.sh: statements disagree that differences.txt does not list (see $log)" >&2
fi
echo "BENCH pg_regress_agreement $total target=95"
