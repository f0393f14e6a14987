#!/usr/bin/env bash
# pgbench, unmodified, against Tessera and PostgreSQL on this machine.
#
#   bench/pgbench.sh                                     # 3 rounds × 30 s, scale 10
#   ROUNDS=1 DURATION=5 SCALE=1 bench/pgbench.sh         # quick run
#   SKIP_BUILD=1 bench/pgbench.sh                        # use target/release/tessera as it is
#   TESSERA_BIN=target/debug/tessera bench/pgbench.sh    # another binary (nothing is built)
#
# Prints one line per figure on stdout:
#   BENCH <name> <tessera> <postgres> ratio=<tessera/postgres> target=<target>
# for init_seconds, tpcb_durable, tpcb_lazy, select_only,
# select_latency_1client (average latency in ms: lower is better) and rss_mb.
# Throughput figures are the median over the rounds; `ratio=n/a` when the
# PostgreSQL figure is 0. Progress and the per-round values (`# ` lines) go
# to stderr and to $BENCH_LOG (default target/bench/pgbench-<time>.log), which
# also keeps every pgbench output.
#
# Environment: ROUNDS (3), DURATION (seconds per run, 30), SCALE (10),
# CLIENTS (8), THREADS (2), TESSERA_BIN (default: cargo build --release, a
# no-op when up to date; SKIP_BUILD=1 skips it if target/release/tessera
# exists), PG_BINDIR (default: newest /usr/lib/postgresql/*/bin),
# BENCH_USER (unprivileged user for PostgreSQL when run as root,
# default tessera-bench), BENCH_LOG.
#
# Needs PostgreSQL's server and pgbench; installs Debian's postgresql and
# postgresql-contrib (with sudo unless root) if they are missing.
set -euo pipefail

invoked_from="$PWD"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-30}"
SCALE="${SCALE:-10}"
CLIENTS="${CLIENTS:-8}"
THREADS="${THREADS:-2}"
BENCH_USER="${BENCH_USER:-tessera-bench}"
for v in ROUNDS DURATION SCALE CLIENTS THREADS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "pgbench.sh: $v must be a positive integer, not '${!v}'" >&2; exit 2; }
done
# A PGOPTIONS (or PGHOST, …) from the caller's shell would silently change
# what is measured; every connection below says what it needs.
unset PGOPTIONS PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGSERVICE PGPASSWORD

die() {
    echo "pgbench.sh: $*" >&2
    exit 1
}
note() { echo "# $*" >&2; }

# --- log: stderr goes to the terminal and to the log ----------------------

target_dir="${CARGO_TARGET_DIR:-$root/target}"
log="${BENCH_LOG:-$target_dir/bench/pgbench-$(date +%Y%m%d-%H%M%S).log}"
mkdir -p "$(dirname "$log")"
# tee ignores Ctrl-C so that the cleanup's messages still have somewhere to go.
exec 2> >(trap '' INT TERM; exec tee -a "$log" >&2)

# --- the Tessera binary ---------------------------------------------------

if [[ -n ${TESSERA_BIN:-} ]]; then
    [[ $TESSERA_BIN == /* ]] || TESSERA_BIN="$invoked_from/$TESSERA_BIN"
elif [[ ${SKIP_BUILD:-} == 1 && -x $target_dir/release/tessera ]]; then
    TESSERA_BIN="$target_dir/release/tessera"
else
    cargo build --release --quiet --bin tessera
    TESSERA_BIN="$target_dir/release/tessera"
fi
[[ -x $TESSERA_BIN ]] || die "no Tessera binary at $TESSERA_BIN"

# --- PostgreSQL -----------------------------------------------------------

# Debian keeps the server programs off PATH (initdb, pg_ctl, postgres) and
# puts a version-picking wrapper on it for the clients; use the real
# binaries of one version for both.
find_pg_bindir() {
    if [[ -n ${PG_BINDIR:-} ]]; then
        echo "$PG_BINDIR"
        return
    fi
    local d
    d="$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n 1)"
    echo "${d:-/nonexistent}"
}
pg_bin="$(find_pg_bindir)"
have_pg() {
    [[ -x $pg_bin/initdb && -x $pg_bin/pg_ctl && -x $pg_bin/postgres ]] &&
        { [[ -x $pg_bin/pgbench ]] || command -v pgbench >/dev/null; }
}
if ! have_pg; then
    echo "pgbench.sh: PostgreSQL server or pgbench missing, installing Debian's postgresql" >&2
    sudo=()
    [[ $(id -u) == 0 ]] || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql postgresql-contrib >&2
    pg_bin="$(find_pg_bindir)"
    have_pg || die "still no initdb, pg_ctl, postgres and pgbench under /usr/lib/postgresql/*/bin"
fi
client() {
    # The client programs of the server's version, else whatever is on PATH.
    if [[ -x $pg_bin/$1 ]]; then echo "$pg_bin/$1"; else command -v "$1" || die "no $1 found"; fi
}
pgbench_bin="$(client pgbench)"
psql_bin="$(client psql)"

# initdb refuses to run as root: PostgreSQL then runs as an unprivileged user.
as_pg=()
if [[ $(id -u) == 0 ]]; then
    if ! id "$BENCH_USER" >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin "$BENCH_USER"
    fi
    if command -v runuser >/dev/null; then
        as_pg=(runuser -u "$BENCH_USER" --)
    else
        # shellcheck disable=SC2016 # expanded by the user's shell, not here
        as_pg=(su -s /bin/sh "$BENCH_USER" -c '"$0" "$@"')
    fi
fi
# From /, so that the server does not start in a directory its user cannot read.
pg_run() { (cd / && "${as_pg[@]}" "$@"); }

# --- temporary directories, cleanup ---------------------------------------

work="$(mktemp -d "${TMPDIR:-/tmp}/tessera-pgbench.XXXXXX")"
pg_dir="$work/postgres"          # owned by the PostgreSQL user; also its socket directory
pgdata="$pg_dir/data"
ts_dir="$work/tessera"
ts_pid=""
ts_starts=0

alive() {
    # A child that exited stays a zombie until waited for: kill -0 would say yes.
    local state
    state="$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null)" && [[ -n $state && $state != Z ]]
}

stop_tessera() {
    [[ -n $ts_pid ]] || return 0
    kill -TERM "$ts_pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 600; i++)); do
        alive "$ts_pid" || break
        sleep 0.1
    done
    kill -KILL "$ts_pid" 2>/dev/null || true
    wait "$ts_pid" 2>/dev/null || true
    ts_pid=""
}

cleanup() {
    local rc=$?
    set +e
    stop_tessera
    if [[ -f $pgdata/postmaster.pid ]]; then
        pg_run "$pg_bin/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null 2>&1
    fi
    # The servers' own logs die with the temporary directory: keep them.
    local f
    for f in "$work"/tessera-*.log "$pg_dir/server.log"; do
        [[ -f $f ]] && { echo "=== ${f#"$work"/}"; cat "$f"; } >>"$log"
    done
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
    # First port from $1 up that nothing on 127.0.0.1 answers on.
    local p=$1
    while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
    echo "$p"
}

# Connection arguments of each server for pgbench and psql, last on their
# command lines: the database name is positional (pgbench's -d is --debug).
conn() {
    case $1 in
        tessera) echo "-h 127.0.0.1 -p $ts_port -U tessera tessera" ;;
        postgres) echo "-h 127.0.0.1 -p $pg_port -U postgres postgres" ;;
    esac
}

wait_ready() {
    # $1 server, $2 pid to watch (empty: none), $3 its log
    local i
    for ((i = 0; i < 6000; i++)); do
        # shellcheck disable=SC2046 # conn's words are meant to split
        "$psql_bin" -X -q -At -c 'select 1' $(conn "$1") >/dev/null 2>&1 && return 0
        if [[ -n $2 ]] && ! alive "$2"; then
            tail -n 20 "$3" >&2
            die "$1 exited during start-up"
        fi
        sleep 0.1
    done
    tail -n 20 "$3" >&2
    die "$1 did not accept connections within 10 minutes"
}

start_postgres() {
    mkdir -p "$pg_dir"
    if ((${#as_pg[@]})); then
        chmod 711 "$work"
        chown "$BENCH_USER" "$pg_dir"
    fi
    pg_port="$(free_port 55432)"
    # The superuser is named postgres whatever the OS user; trust because
    # nothing but 127.0.0.1 and a private socket directory can reach it.
    pg_run "$pg_bin/initdb" -D "$pgdata" -U postgres --auth=trust -E UTF8 --locale=C >>"$log" 2>&1 ||
        die "initdb failed (see $log)"
    cat >>"$pgdata/postgresql.conf" <<EOF

# bench/pgbench.sh
listen_addresses = '127.0.0.1'
port = $pg_port
unix_socket_directories = '$pg_dir'
max_connections = 100
shared_buffers = 256MB
fsync = on
synchronous_commit = on
EOF
    pg_run "$pg_bin/pg_ctl" -D "$pgdata" -l "$pg_dir/server.log" -w -t 120 start >/dev/null ||
        { tail -n 20 "$pg_dir/server.log" >&2; die "PostgreSQL did not start"; }
    wait_ready postgres "" "$pg_dir/server.log"
}

# Tessera is restarted (same data directory, same port) only when its
# durability has to change and PGOPTIONS cannot do it; see tessera_mode.
ts_mode=""
start_tessera() {
    local mode=$1 lazy=()
    [[ $mode == lazy ]] && lazy=(--lazy-commit)
    ts_starts=$((ts_starts + 1))
    local out="$work/tessera-$ts_starts.log"
    "$TESSERA_BIN" start --data-dir "$ts_dir" --port "$ts_port" --listen 127.0.0.1 "${lazy[@]}" >"$out" 2>&1 &
    ts_pid=$!
    ts_mode=$mode
    wait_ready tessera "$ts_pid" "$out"
    grep -m 1 'listening on' "$out" >&2 || true
}

tessera_mode() {
    [[ $tessera_lazy_via == restart && $1 != "$ts_mode" ]] || return 0
    note "restarting Tessera with ${1} commits"
    stop_tessera
    start_tessera "$1"
}

# --- start both -----------------------------------------------------------

commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
dirty="$(git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo ' (modified)' || true)"
echo "pgbench.sh: commit $commit$dirty, $(nproc) cores, $("$pg_bin/postgres" --version), log $log" >&2
note "rounds=$ROUNDS duration=${DURATION}s scale=$SCALE clients=$CLIENTS threads=$THREADS"
note "tessera binary: $TESSERA_BIN"

start_postgres
note "PostgreSQL on 127.0.0.1:$pg_port (data $pgdata)"
ts_port="$(free_port $((pg_port + 1)))"
start_tessera durable

# Lazy durability goes through the session setting synchronous_commit=off,
# passed by libpq's PGOPTIONS. If Tessera does not take it from the startup
# packet, restart it with --lazy-commit (the same durability for every
# session) around the tpcb_lazy runs.
lazy_opts='-c synchronous_commit=off'
sync_setting() {
    # shellcheck disable=SC2046
    PGOPTIONS="$lazy_opts" "$psql_bin" -X -q -At -c 'show synchronous_commit' $(conn "$1") 2>/dev/null || echo '?'
}
[[ $(sync_setting postgres) == off ]] || note "WARNING: PostgreSQL ignores PGOPTIONS='$lazy_opts'"
if [[ $(sync_setting tessera) == off ]]; then
    tessera_lazy_via=pgoptions
else
    tessera_lazy_via=restart
    note "Tessera ignores PGOPTIONS='$lazy_opts': tpcb_lazy restarts it with --lazy-commit"
fi

# --- figures --------------------------------------------------------------

bench_line() {
    # $1 name, $2 tessera, $3 postgres, $4 target, $5 decimals of the figures
    local line
    line="$(awk -v n="$1" -v t="$2" -v p="$3" -v tg="$4" -v d="$5" 'BEGIN {
        r = (p + 0 == 0) ? "n/a" : sprintf("%.2f", t / p)
        printf "BENCH %s %.*f %.*f ratio=%s target=%s\n", n, d, t, d, p, r, tg }')"
    echo "$line"
    echo "$line" >>"$log"
}

median() {
    # shellcheck disable=SC2048,SC2086 # one word per value
    printf '%s\n' $* | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

now() { date +%s.%N; }

init_seconds() {
    local server=$1 start
    start="$(now)"
    echo "=== pgbench -i -s $SCALE on $server" >>"$log"
    # shellcheck disable=SC2046
    "$pgbench_bin" -i -s "$SCALE" $(conn "$server") >>"$log" 2>&1 ||
        { tail -n 20 "$log" >&2; die "pgbench -i failed on $server"; }
    awk -v s="$start" -v e="$(now)" 'BEGIN { print e - s }'
}

note "pgbench -i -s $SCALE on tessera"
init_t="$(init_seconds tessera)"
note "pgbench -i -s $SCALE on postgres"
init_p="$(init_seconds postgres)"
bench_line init_seconds "$init_t" "$init_p" report 2

tests=(tpcb_durable tpcb_lazy select_only select_latency_1client)
declare -A target=([tpcb_durable]=2.0 [tpcb_lazy]=report [select_only]=1.5 [select_latency_1client]=report)
declare -A values=() # "<test> <server>" -> the per-round figures

# One pgbench run; sets `figure` (tps, or average latency in ms for
# select_latency_1client), 0 if the run failed.
measure() {
    local test=$1 server=$2 opts="" out rc=0 args=()
    case $test in
        tpcb_durable) args=(-c "$CLIENTS" -j "$THREADS") ;;
        tpcb_lazy) args=(-c "$CLIENTS" -j "$THREADS") opts=$lazy_opts ;;
        select_only) args=(-S -M prepared -c "$CLIENTS" -j "$THREADS") ;;
        select_latency_1client) args=(-S -M prepared -c 1 -j 1) ;;
    esac
    [[ $server == tessera && $tessera_lazy_via == restart ]] && opts=""
    # A server that stops answering must not stall the whole benchmark.
    # shellcheck disable=SC2046
    out="$(PGOPTIONS="$opts" timeout -k 10 $((2 * DURATION + 300)) \
        "$pgbench_bin" "${args[@]}" -T "$DURATION" $(conn "$server") 2>&1)" || rc=$?
    {
        echo "=== $test on $server: PGOPTIONS='$opts' pgbench ${args[*]} -T $DURATION (exit $rc)"
        echo "$out"
    } >>"$log"
    local pattern='^tps = ([0-9.]+) \(without initial connection time\)'
    [[ $test == select_latency_1client ]] && pattern='^latency average = ([0-9.]+) ms'
    figure="$(sed -nE "s/$pattern.*/\1/p" <<<"$out" | head -n 1)"
    if [[ $rc != 0 || -z $figure ]] || ! grep -qE '^tps = ' <<<"$out"; then
        echo "pgbench.sh: $test on $server failed (exit $rc), recording 0; output ends:" >&2
        tail -n 15 <<<"$out" >&2
        figure=0
    fi
    # pgbench counts failed transactions (e.g. serialization failures) apart
    # from the tps; say so when there are any.
    sed -nE 's/^number of failed transactions: ([1-9][0-9]*.*)/pgbench.sh: '"$test on $server"': \1 failed transactions/p' \
        <<<"$out" >&2
}

for ((round = 1; round <= ROUNDS; round++)); do
    # Alternate which server goes first, so neither always runs on the
    # other's leftovers (page cache, checkpoints, CPU temperature).
    if ((round % 2)); then servers=(tessera postgres); else servers=(postgres tessera); fi
    for test in "${tests[@]}"; do
        for server in "${servers[@]}"; do
            if [[ $server == tessera ]]; then
                if [[ $test == tpcb_lazy ]]; then tessera_mode lazy; else tessera_mode durable; fi
            fi
            measure "$test" "$server"
            values["$test $server"]+=" $figure"
            note "round $round/$ROUNDS $test $server $figure"
        done
    done
done

for test in "${tests[@]}"; do
    t="$(median "${values["$test tessera"]}")"
    p="$(median "${values["$test postgres"]}")"
    note "$test per round: tessera${values["$test tessera"]}, postgres${values["$test postgres"]}"
    decimals=1
    [[ $test == select_latency_1client ]] && decimals=2
    bench_line "$test" "$t" "$p" "${target[$test]}" "$decimals"
done

# --- memory ---------------------------------------------------------------

# What a server holds in memory, measured the same way for both, after the
# runs (clients gone). Summing VmRSS over PostgreSQL's processes would count
# shared_buffers once per process that touched it; summing Pss shares those
# pages out fairly but misses the ones only exited backends had touched (no
# live process maps them, yet they stay resident with the segment: 30 MB
# instead of ~180 MB after a scale-10 run). So: per process, Pss without
# its shared-memory part (Pss_Shmem), plus, once per shared-memory object
# the processes map, its resident size (fincore on /proc/<pid>/map_files,
# which needs root). Tessera maps no shared memory: its figure is its Pss.
# If that cannot be read, plain Pss, then VmRSS; the `#` line says which.
pg_pids() {
    local pm
    pm="$(head -n 1 "$pgdata/postmaster.pid")"
    echo "$pm"
    # cat, not awk on the files: processes may vanish while being read.
    cat /proc/[0-9]*/status 2>/dev/null | awk -v pm="$pm" '/^Pid:/ { pid = $2 } /^PPid:/ && $2 == pm { print pid }'
}

field_kb() {
    # $1 pid, $2 file under /proc/<pid>, $3 field; fails if it is not there
    local v
    v="$(awk -v f="$3:" '$1 == f { print $2; exit }' "/proc/$1/$2" 2>/dev/null)"
    [[ -n $v ]] && echo "$v"
}

shmem_objects() {
    # "<pid> <address range>" of one mapping per shared-memory object (by
    # device and inode) that the processes $@ map: PostgreSQL's main segment
    # (/dev/zero), its SysV header and dynamic segments (/dev/shm).
    local pid
    for pid in "$@"; do
        awk -v pid="$pid" '$2 ~ /s$/ && $6 ~ /^\/(dev\/zero|SYSV|dev\/shm\/|memfd:)/ { print pid, $1, $4 ":" $5 }' \
            "/proc/$pid/maps" 2>/dev/null
    done | sort -u -k 3,3
}

mem_mb() {
    # $1 method (shmem, pss or rss), then the pids; fails if the method
    # cannot be applied to one of them
    local method=$1 pid kb=0 k s range res
    shift
    for pid in "$@"; do
        case $method in
            shmem)
                k="$(field_kb "$pid" smaps_rollup Pss)" || return 1
                s="$(field_kb "$pid" smaps_rollup Pss_Shmem)" || return 1
                k=$((k - s))
                ;;
            pss) k="$(field_kb "$pid" smaps_rollup Pss)" || return 1 ;;
            rss) k="$(field_kb "$pid" status VmRSS)" || return 1 ;;
        esac
        kb=$((kb + k))
    done
    if [[ $method == shmem ]]; then
        command -v fincore >/dev/null || return 1
        while read -r pid range _; do
            res="$(fincore --bytes --noheadings --output RES "/proc/$pid/map_files/$range" 2>/dev/null)" || return 1
            res="${res//[[:space:]]/}" # right-aligned
            [[ $res =~ ^[0-9]+$ ]] || return 1
            kb=$((kb + res / 1024))
        done < <(shmem_objects "$@")
    fi
    awk -v kb="$kb" 'BEGIN { print kb / 1024 }'
}

mapfile -t pg_procs < <(pg_pids)
ts_mem=0 pg_mem=0
for mem_method in shmem pss rss; do
    ts_mem="$(mem_mb "$mem_method" "$ts_pid")" && pg_mem="$(mem_mb "$mem_method" "${pg_procs[@]}")" && break
done
case $mem_method in
    shmem) note "rss_mb: Pss - Pss_Shmem per process + resident shared memory (fincore), PostgreSQL: ${#pg_procs[@]} processes" ;;
    pss) note "rss_mb: sum of Pss (shared memory residency unreadable: PostgreSQL's figure misses buffers only exited backends touched)" ;;
    rss) note "rss_mb: sum of VmRSS (no smaps_rollup: PostgreSQL's shared memory counted once per process)" ;;
esac
if [[ $tessera_lazy_via == restart ]]; then
    note "rss_mb: Tessera was restarted (recovering from its data directory) during the last round"
fi
bench_line rss_mb "$ts_mem" "$pg_mem" report 1
