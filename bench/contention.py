#!/usr/bin/env python3
"""Writers contending for shared row groups, against a running server.

Each client loops over `BEGIN; UPDATE t … WHERE cid = $1 AND id = 1;
UPDATE t … WHERE cid = $1 AND id = 2; COMMIT` for a row group `cid` drawn
from `--groups` shared ones, and keeps a journal of what it committed. A
monitor thread samples the commit count every 50 ms and the server's
resident memory. At the end the table must equal the journal: every row's
counter is the number of transactions that committed on its row group.

Prints, for the run:
  BENCH contention_commits_per_s N …
  BENCH contention_max_stall_ms N … target=1000
  BENCH contention_rss_growth_pct N … target=20
and exits non-zero when a transaction failed with an error that is not
retryable, when the table differs from the journal, or (with --check)
when a target is missed.

With --drain-at S (on a cluster: --rpc-addr, and TESSERA_CLUSTER_SECRET in
the environment) the database's primary is drained S seconds into the run
(`tessera node drain`), and it also prints
  BENCH contention_drain_errors N … target=0
  BENCH contention_drain_reconnects N … target=0
the errors clients saw and the connections they had to open again from the
drain to the end of the run (sessions follow a moved primary: the target
is none of either).

  python3 bench/contention.py --port 5433 --clients 4 --groups 4 --seconds 60 [--keyed] [--pid PID]
"""

import argparse
import os
import random
import subprocess
import sys
import threading
import time

import psycopg

# What a client may get and retry: serialization failures, deadlocks, a
# primary that moved, a statement or lock timeout, a lost quorum.
RETRYABLE = {"40001", "40P01", "40003", "55P03", "57014", "57P01", "57P03", "08006"}


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def setup(args):
    admin = psycopg.connect(host=args.host, port=args.port, user="tessera", dbname="tessera", autocommit=True)
    admin.execute(f"DROP DATABASE IF EXISTS {args.db}")
    if args.keyed:
        admin.execute(f"CREATE DATABASE {args.db} WITH (partition_key = 'cid bigint', partitions = 4)")
    else:
        admin.execute(f"CREATE DATABASE {args.db}")
    admin.close()
    conn = connect(args)
    conn.execute("CREATE TABLE t (cid bigint, id int, v bigint NOT NULL, PRIMARY KEY (cid, id))")
    with conn.cursor() as cur:
        for g in range(args.groups):
            cur.execute("INSERT INTO t VALUES (%s, 1, 0), (%s, 2, 0)", (group_key(g), group_key(g)))
    conn.close()


def group_key(g):
    # Spread the row groups over the key space (and so over partitions).
    return (g * 0x9E3779B97F4A7C15) % (1 << 62) - (1 << 61)


def connect(args):
    return psycopg.connect(
        host=args.host,
        port=args.port,
        user="tessera",
        dbname=args.db,
        autocommit=True,
        connect_timeout=10,
        options=f"-c statement_timeout={args.statement_timeout_ms}",
    )


class Journal:
    def __init__(self, groups):
        self.lock = threading.Lock()
        self.committed = [0] * groups
        self.total = 0
        self.retried = {}
        self.failed = []
        self.unknown = 0
        self.errors = 0
        self.connects = 0

    def commit(self, g):
        with self.lock:
            self.committed[g] += 1
            self.total += 1

    def error(self, state, msg):
        with self.lock:
            self.errors += 1
            if state in RETRYABLE:
                self.retried[state] = self.retried.get(state, 0) + 1
            else:
                self.failed.append(f"{state}: {msg}")


def client(args, journal, stop, seed):
    rng = random.Random(seed)
    conn = None
    while not stop.is_set():
        if conn is None:
            try:
                conn = connect(args)
                with journal.lock:
                    journal.connects += 1
            except psycopg.Error as e:
                journal.error(getattr(e, "sqlstate", None) or "08006", str(e).strip())
                time.sleep(0.05)
                continue
        g = rng.randrange(args.groups)
        key = group_key(g)
        committing = False
        try:
            with conn.transaction():
                conn.execute("UPDATE t SET v = v + 1 WHERE cid = %s AND id = 1", (key,))
                conn.execute("UPDATE t SET v = v + 1 WHERE cid = %s AND id = 2", (key,))
                committing = True
            journal.commit(g)
        except psycopg.Error as e:
            state = getattr(e, "sqlstate", None)
            if state is None:
                # The connection broke; during COMMIT the outcome is unknown.
                if committing:
                    with journal.lock:
                        journal.unknown += 1
                state = "08006"
            journal.error(state, str(e).strip())
            if conn.closed or conn.broken:
                conn = None
    if conn is not None:
        conn.close()


def drain(args, journal):
    """Drains the database's primary; returns the error and connection
    counts at that moment."""
    with journal.lock:
        before = (journal.errors, journal.connects)
    admin = psycopg.connect(host=args.host, port=args.port, user="tessera", dbname="tessera", autocommit=True)
    node = admin.execute("SELECT primary_node FROM tessera.databases WHERE name = %s", (args.db,)).fetchone()[0]
    admin.close()
    out = subprocess.run(
        [args.tessera, "node", "drain", str(node), "--rpc-addr", args.rpc_addr], capture_output=True, text=True
    )
    print(f"drained node {node}: {(out.stdout + out.stderr).strip()}")
    return before


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=5433)
    p.add_argument("--db", default="contention")
    p.add_argument("--keyed", action="store_true")
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--groups", type=int, default=4)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--statement-timeout-ms", type=int, default=10000)
    p.add_argument("--pid", type=int, help="the server's process, for its memory")
    p.add_argument("--check", action="store_true", help="exit non-zero when a target is missed")
    p.add_argument("--drain-at", type=float, help="drain the database's primary this many seconds in")
    p.add_argument("--rpc-addr", default="127.0.0.1:7001", help="a node's cluster RPC address, for the drain")
    p.add_argument("--tessera", default="tessera", help="the tessera binary, for the drain")
    args = p.parse_args()

    setup(args)
    journal = Journal(args.groups)
    stop = threading.Event()
    threads = [threading.Thread(target=client, args=(args, journal, stop, i)) for i in range(args.clients)]
    rss_start = rss_kb(args.pid) if args.pid else None
    rss_max = rss_start or 0
    started = time.monotonic()
    for t in threads:
        t.start()
    last_total, last_change, max_stall = 0, started, 0.0
    drained = None
    while time.monotonic() - started < args.seconds:
        time.sleep(0.05)
        now = time.monotonic()
        if args.drain_at is not None and drained is None and now - started >= args.drain_at:
            drained = drain(args, journal)
        with journal.lock:
            total = journal.total
        if total != last_total:
            max_stall = max(max_stall, now - last_change)
            last_total, last_change = total, now
        if args.pid:
            rss_max = max(rss_max, rss_kb(args.pid) or 0)
    max_stall = max(max_stall, time.monotonic() - last_change)
    stop.set()
    for t in threads:
        t.join(timeout=args.statement_timeout_ms / 1000 + 10)
    hung = sum(t.is_alive() for t in threads)
    elapsed = time.monotonic() - started

    conn = connect(args)
    rows = conn.execute("SELECT cid, id, v FROM t").fetchall()
    conn.close()
    by_key = {(cid, i): v for cid, i, v in rows}
    wrong = []
    for g in range(args.groups):
        for i in (1, 2):
            got = by_key.get((group_key(g), i))
            if got != journal.committed[g]:
                wrong.append(f"cid {group_key(g)} id {i}: {got} in the table, {journal.committed[g]} committed")

    label = f"clients={args.clients} groups={args.groups} {'keyed' if args.keyed else 'keyless'}"
    print(f"BENCH contention_commits_per_s {journal.total / elapsed:.0f} {label}")
    print(f"BENCH contention_max_stall_ms {max_stall * 1000:.0f} {label} target=1000")
    growth = None
    if rss_start:
        growth = 100.0 * (rss_max - rss_start) / rss_start
        print(f"BENCH contention_rss_growth_pct {growth:.1f} {label} start={rss_start}kB max={rss_max}kB target=20")
    if drained is not None:
        errors, connects = journal.errors - drained[0], journal.connects - drained[1]
        print(f"BENCH contention_drain_errors {errors} {label} target=0")
        print(f"BENCH contention_drain_reconnects {connects} {label} target=0")
    print(f"retried by SQLSTATE: {dict(sorted(journal.retried.items()))}; unknown outcomes: {journal.unknown}")
    bad = False
    for f in journal.failed[:10]:
        print(f"failed: {f}")
    if journal.failed or wrong or hung or journal.unknown:
        bad = True
    for w in wrong:
        print(f"wrong: {w}")
    if hung:
        print(f"hung: {hung} clients still in a statement")
    if args.check and (max_stall > 1.0 or (growth is not None and growth > 20)):
        bad = True
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
