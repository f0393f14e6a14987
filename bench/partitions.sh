#!/usr/bin/env bash
# A keyed database with 1 partition against the same with 8, on one node.
#
#   bench/partitions.sh                          # 3 rounds × 30 s
#   ROUNDS=1 DURATION=10 bench/partitions.sh     # quick run
#   SKIP_BUILD=1 bench/partitions.sh             # use target/release/tessera as it is
#
# Each database, `p1` and `p8`, is keyed by the account id (`aid bigint`) and
# holds ACCOUNTS rows; p8's split points cut the ids into 8 equal ranges. A
# pgbench custom script moves money inside one row group per transaction
# (read, update, read back), so every transaction stays in one partition.
# The two databases are measured in alternation on one server (which goes
# first alternates too), and each
# figure is the median over the rounds. Prints on stdout:
#   BENCH partitions_8_vs_1 <tps8/tps1> tps_1=<n> tps_8=<n> target=0.9
# On a 2-core machine the ratio measures the overhead of partitioning, not
# scale-out. Progress and pgbench's output go to stderr and $BENCH_LOG.
#
# Environment: ROUNDS (3), DURATION (30), ACCOUNTS (100000), CLIENTS (8),
# THREADS (2), TESSERA_BIN, SKIP_BUILD, BENCH_LOG. Needs psql and pgbench
# (Debian's postgresql-client); installs it if missing.
set -euo pipefail

invoked_from="$PWD"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-30}"
ACCOUNTS="${ACCOUNTS:-100000}"
CLIENTS="${CLIENTS:-8}"
THREADS="${THREADS:-2}"
for v in ROUNDS DURATION ACCOUNTS CLIENTS THREADS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "partitions.sh: $v must be a positive integer, not '${!v}'" >&2; exit 2; }
done
(( ACCOUNTS >= 8 )) || { echo "partitions.sh: ACCOUNTS must be at least 8" >&2; exit 2; }
unset PGOPTIONS PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGSERVICE PGPASSWORD

die() {
    echo "partitions.sh: $*" >&2
    exit 1
}
note() { echo "# $*" >&2; }

target_dir="${CARGO_TARGET_DIR:-$root/target}"
log="${BENCH_LOG:-$target_dir/bench/partitions-$(date +%Y%m%d-%H%M%S).log}"
mkdir -p "$(dirname "$log")"
exec 2> >(trap '' INT TERM; exec tee -a "$log" >&2)

if [[ -n ${TESSERA_BIN:-} ]]; then
    [[ $TESSERA_BIN == /* ]] || TESSERA_BIN="$invoked_from/$TESSERA_BIN"
elif [[ ${SKIP_BUILD:-} == 1 && -x $target_dir/release/tessera ]]; then
    TESSERA_BIN="$target_dir/release/tessera"
else
    cargo build --release --quiet --bin tessera
    TESSERA_BIN="$target_dir/release/tessera"
fi
[[ -x $TESSERA_BIN ]] || die "no Tessera binary at $TESSERA_BIN"

if ! command -v pgbench >/dev/null || ! command -v psql >/dev/null; then
    echo "partitions.sh: psql or pgbench missing, installing Debian's postgresql-client" >&2
    sudo=()
    [[ $(id -u) == 0 ]] || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql-client >&2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/tessera-partitions.XXXXXX")"
ts_pid=""
cleanup() {
    local rc=$?
    set +e
    if [[ -n $ts_pid ]]; then
        kill -TERM "$ts_pid" 2>/dev/null
        wait "$ts_pid" 2>/dev/null
    fi
    [[ -f $work/tessera.log ]] && { echo "=== tessera.log"; cat "$work/tessera.log"; } >>"$log"
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port=55480
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
"$TESSERA_BIN" start --data-dir "$work/data" --port "$port" >"$work/tessera.log" 2>&1 &
ts_pid=$!
for ((i = 0; i < 600; i++)); do
    psql -X -q -At -h 127.0.0.1 -p "$port" -U tessera -c 'select 1' tessera >/dev/null 2>&1 && break
    kill -0 "$ts_pid" 2>/dev/null || { tail -n 20 "$work/tessera.log" >&2; die "tessera exited during start-up"; }
    sleep 0.1
done
sql() { psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U tessera "$@"; }

# Split points cutting 1..ACCOUNTS into 8 equal ranges.
points="$(for k in 1 2 3 4 5 6 7; do echo $((1 + k * ACCOUNTS / 8)); done | paste -sd, -)"
note "loading $ACCOUNTS accounts into p1 (1 partition) and p8 (split at $points)"
sql -c "CREATE DATABASE p1 WITH (partition_key = 'aid bigint')" tessera
sql -c "CREATE DATABASE p8 WITH (partition_key = 'aid bigint', split_points = '$points')" tessera
for db in p1 p8; do
    sql -c "CREATE TABLE accounts (aid bigint PRIMARY KEY, abalance int NOT NULL, filler text)" "$db"
    seq 1 "$ACCOUNTS" | awk '{ print $1 "\t0\taccount " $1 }' | sql -c "COPY accounts FROM STDIN" "$db"
done
sql -c "SELECT database, partition, rows FROM tessera.partitions WHERE database IN ('p1', 'p8') ORDER BY 1, 2" tessera >&2

cat >"$work/rowgroup.sql" <<EOF
\set aid random(1, $ACCOUNTS)
\set delta random(-5000, 5000)
BEGIN;
SELECT abalance FROM accounts WHERE aid = :aid;
UPDATE accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM accounts WHERE aid = :aid;
END;
EOF

run() {
    # $1 database; prints its TPS
    local out
    out="$(pgbench -n -M prepared -f "$work/rowgroup.sql" -c "$CLIENTS" -j "$THREADS" -T "$DURATION" \
        -h 127.0.0.1 -p "$port" -U tessera "$1" 2>&1)" || { echo "$out" >&2; die "pgbench on $1 failed"; }
    echo "$out" >>"$log"
    awk '/^tps = / { printf "%.0f\n", $3 }' <<<"$out"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

t1=()
t8=()
for ((r = 1; r <= ROUNDS; r++)); do
    # Alternate which goes first, so neither always follows the other's run.
    if ((r % 2)); then
        a="$(run p1)"
        b="$(run p8)"
    else
        b="$(run p8)"
        a="$(run p1)"
    fi
    note "round $r: p1 $a TPS, p8 $b TPS"
    t1+=("$a")
    t8+=("$b")
done
m1="$(printf '%s\n' "${t1[@]}" | median)"
m8="$(printf '%s\n' "${t8[@]}" | median)"
ratio="$(awk -v a="$m8" -v b="$m1" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')"
echo "BENCH partitions_8_vs_1 $ratio tps_1=$m1 tps_8=$m8 target=0.9"
