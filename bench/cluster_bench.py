#!/usr/bin/env python3
"""Cluster benchmarks: replication cost and failover time.

    cluster_bench.py replication   # BENCH replication_keep <ratio> ratio target=0.85
                                   # and replication_cpu_us_per_txn_{1,3}: the CPU time of
                                   # all the cluster's nodes per committed transaction
                                   # (steadier than throughput on a shared machine)
    cluster_bench.py failover      # BENCH failover_p95_seconds <s> s target=2 (and p50, max)
    DATABASE=orders cluster_bench.py failover
                                   # the same for a database with a group of its own:
                                   # BENCH failover_db_p95_seconds … (and p50, max)
    cluster_bench.py idle          # BENCH idle_cpu_per_database_percent <p> % target=report
                                   # (CPU of an idle node per database it replicates)
    DATABASE=shop KEYED=1 cluster_bench.py failover
                                   # the same for a keyed database (four partitions,
                                   # each a group): BENCH failover_keyed_p95_seconds …
    cluster_bench.py remote        # BENCH remote_update_{local,remote}_ms: an UPDATE by key on a
                                   # partition led by the session's node, and by another
    DATABASE=orders IDLE=1 cluster_bench.py failover
                                   # an idle database, its group quiet when its
                                   # primary dies: BENCH failover_quiet_p95_seconds …

Run through bench/replication.sh and bench/failover.sh, which build the
release binary first. Nodes run on 127.0.0.1 with temporary data
directories and stop when the script ends. With TESSERA_BENCH_LOGS=DIR each
node's log is appended to DIR/node<N>.log (TESSERA_LOG sets its level,
warn by default).
"""

import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import psycopg

BIN = os.environ.get("TESSERA_BIN", "target/release/tessera")
SECRET = "bench-secret"


def note(msg):
    print(f"# {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    def __init__(self, node_id, root, rpc_ports):
        self.id = node_id
        self.dir = os.path.join(root, f"node{node_id}")
        self.rpc = rpc_ports[node_id - 1]
        self.join = ",".join(f"127.0.0.1:{p}" for p in rpc_ports)
        self.port = free_port()
        self.proc = None

    def start(self):
        env = dict(os.environ, TESSERA_CLUSTER_SECRET=SECRET, TESSERA_LOG=os.environ.get("TESSERA_LOG", "warn"))
        logs = os.environ.get("TESSERA_BENCH_LOGS")
        if logs:
            os.makedirs(logs, exist_ok=True)
            stderr = open(os.path.join(logs, f"node{self.id}.log"), "a")
        else:
            stderr = subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [BIN, "start", "--node-id", str(self.id), "--data-dir", self.dir, "--port", str(self.port),
             "--rpc-port", str(self.rpc), "--join", self.join],
            stdout=subprocess.PIPE, stderr=stderr, env=env, text=True)
        if logs:
            stderr.close()
        for line in self.proc.stdout:
            if "listening on" in line:
                break
        threading.Thread(target=lambda: self.proc.stdout.read(), daemon=True).start()

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def stop(self):
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None


class Cluster:
    def __init__(self, n):
        self.root = tempfile.mkdtemp(prefix="tessera-bench-")
        rpc = [free_port() for _ in range(n)]
        self.nodes = [Node(i + 1, self.root, rpc) for i in range(n)]
        for node in self.nodes:
            node.start()
        self.wait_ready()

    def alive(self):
        return [n for n in self.nodes if n.proc]

    def conninfo(self, node, db="tessera"):
        return f"host=127.0.0.1 port={node.port} user=tessera dbname={db} connect_timeout=5"

    def primary(self):
        """The node serving as primary, once every live node reports in."""
        deadline = time.time() + 60
        while time.time() < deadline:
            for node in self.alive():
                try:
                    with psycopg.connect(self.conninfo(node), autocommit=True) as c:
                        rows = c.execute("SELECT node_id, role FROM tessera.nodes").fetchall()
                    live = {r[0] for r in rows if r[1] in ("primary", "secondary")}
                    primary = [r[0] for r in rows if r[1] == "primary"]
                    if primary and live >= {n.id for n in self.alive()}:
                        return self.nodes[primary[0] - 1]
                except psycopg.Error:
                    pass
            time.sleep(0.1)
        raise SystemExit("no primary within 60 s")

    def wait_ready(self):
        self.primary()

    def primary_of(self, db, partition=None):
        """The node serving database `db`'s sessions (its home's primary,
        as tessera.databases shows it), or with `partition` the primary of
        that partition (tessera.replicas); once every node holds a voting
        replica of the database."""
        deadline = time.time() + 60
        while time.time() < deadline:
            for node in self.alive():
                try:
                    with psycopg.connect(self.conninfo(node), autocommit=True) as c:
                        voting = c.execute(
                            "SELECT DISTINCT node_id FROM tessera.replicas WHERE database = %s "
                            "AND role IN ('primary', 'secondary')", (db,)).fetchall()
                        if partition is None:
                            rows = c.execute("SELECT primary_node FROM tessera.databases WHERE name = %s",
                                             (db,)).fetchall()
                        else:
                            rows = c.execute(
                                "SELECT node_id FROM tessera.replicas WHERE database = %s AND partition = %s "
                                "AND role = 'primary'", (db, partition)).fetchall()
                    if len(rows) == 1 and rows[0][0] is not None and len(voting) == len(self.nodes):
                        return self.nodes[rows[0][0] - 1]
                except psycopg.Error:
                    pass
            time.sleep(0.1)
        raise SystemExit(f"database {db} has no primary within 60 s")

    def caught_up(self):
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with psycopg.connect(self.conninfo(self.primary()), autocommit=True) as c:
                    rows = c.execute("SELECT behind FROM tessera.nodes").fetchall()
                if len(rows) == len(self.nodes) and all(r[0] == 0 for r in rows):
                    return
            except psycopg.Error:
                pass
            time.sleep(0.2)
        raise SystemExit("a node did not catch up within 120 s")

    def close(self):
        for node in self.nodes:
            node.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def pgbench(args, port):
    out = subprocess.run(["pgbench", "-h", "127.0.0.1", "-p", str(port), "-U", "tessera", *args, "tessera"],
                         capture_output=True, text=True, env=dict(os.environ, PGOPTIONS=""))
    if out.returncode != 0:
        raise SystemExit(f"pgbench {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")
    return out.stdout


def tps(output):
    for line in output.splitlines():
        if line.startswith("tps = "):
            return float(line.split()[2])
    raise SystemExit(f"no tps in pgbench output:\n{output}")


def replication():
    # Scale 1: pgbench -i loads each table in one transaction, and a
    # transaction of tens of megabytes still strains replication (see
    # bench/README.md).
    scale = os.environ.get("SCALE", "1")
    clients = os.environ.get("CLIENTS", "8")
    duration = os.environ.get("DURATION", "30")
    rounds = int(os.environ.get("ROUNDS", "3"))
    clusters = {1: Cluster(1), 3: Cluster(3)}
    try:
        for n, cluster in clusters.items():
            port = cluster.primary().port
            note(f"{n}-node cluster: pgbench -i -s {scale}")
            pgbench(["-i", "-q", "-s", scale], port)
        results = {1: [], 3: []}
        cpu = {1: [], 3: []}
        for r in range(rounds):
            for n in (1, 3) if r % 2 == 0 else (3, 1):
                port = clusters[n].primary().port
                used = cluster_cpu_seconds(clusters[n])
                # -N: the TPC-B-like script without the updates of the ten
                # tellers and one branch, which at this scale would
                # serialize every transaction on one row and measure
                # commit latency rather than throughput.
                out = pgbench(["-N", "-c", clients, "-j", "2", "-T", duration, "-M", "prepared"], port)
                per_txn = (cluster_cpu_seconds(clusters[n]) - used) / max(transactions(out), 1) * 1e6
                t = tps(out)
                results[n].append(t)
                cpu[n].append(per_txn)
                note(f"round {r + 1}: {n} replica(s): {t:.0f} tps, {per_txn:.0f} µs of CPU per transaction")
        one, three = statistics.median(results[1]), statistics.median(results[3])
        note(f"median tps: 1 replica {one:.0f}, 3 replicas {three:.0f}")
        print(f"BENCH replication_keep {three / one:.3f} ratio target=0.85", flush=True)
        for n in (1, 3):
            print(f"BENCH replication_cpu_us_per_txn_{n} {statistics.median(cpu[n]):.0f} us target=report",
                  flush=True)
    finally:
        for cluster in clusters.values():
            cluster.close()


def failover():
    runs = int(os.environ.get("RUNS", "20"))
    # The first group's primary (database tessera), or that of a database
    # with a group of its own.
    db = os.environ.get("DATABASE", "tessera")
    keyed = os.environ.get("KEYED") == "1" and db != "tessera"
    # IDLE=1: no writers; the database sits idle before each kill, so its
    # group is quiet (no Raft heartbeats) when its primary dies.
    idle = os.environ.get("IDLE") == "1" and db != "tessera"
    name = "failover" if db == "tessera" else ("failover_keyed" if keyed else "failover_db")
    name = "failover_quiet" if idle else name
    # VICTIM=partition (keyed): kill the primary of the partition the
    # writers write (partition 3 of 4), wherever the sessions run.
    by_partition = keyed and os.environ.get("VICTIM") == "partition"
    name = "failover_partition" if by_partition else name
    cluster = Cluster(3)
    stop = threading.Event()
    ports = lambda: [n.port for n in cluster.alive()]  # noqa: E731
    primary = (lambda: cluster.primary()) if db == "tessera" else (  # noqa: E731
        lambda: cluster.primary_of(db, 3 if by_partition else None))
    try:
        if db != "tessera":
            with psycopg.connect(cluster.conninfo(cluster.primary()), autocommit=True) as c:
                options = " WITH (partition_key = 'id bigint', partitions = 4)" if keyed else ""
                c.execute(f"CREATE DATABASE {db}{options}")
        with psycopg.connect(cluster.conninfo(cluster.primary(), db), autocommit=True) as c:
            c.execute("CREATE TABLE load (id bigint PRIMARY KEY, v int)")

        def writer(w):
            k = w * 10_000_000
            while not stop.is_set():
                try:
                    conninfo = f"host=127.0.0.1 port={random.choice(ports())} user=tessera dbname={db} connect_timeout=2"
                    with psycopg.connect(conninfo, autocommit=True) as c:
                        while not stop.is_set():
                            k += 1
                            c.execute("INSERT INTO load VALUES (%s, 1)", (k,))
                except (psycopg.Error, IndexError):
                    time.sleep(0.05)

        writers = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(0 if idle else 4)]
        for t in writers:
            t.start()
        times = []
        probe = 0
        for run in range(runs):
            time.sleep(4 if idle else 0.5)
            victim = primary()
            victim.kill9()
            killed = time.time()
            errors = {}
            while True:
                if time.time() - killed > 60:
                    raise SystemExit(f"run {run + 1}: no commit on {db} within 60 s of killing node {victim.id}; "
                                     f"last error through each node: {errors}")
                probe += 1
                node = random.choice(cluster.alive())
                try:
                    with psycopg.connect(f"host=127.0.0.1 port={node.port} user=tessera dbname={db} connect_timeout=2",
                                         autocommit=True) as c:
                        # (Into the writers' partition, for a keyed database.)
                        c.execute("INSERT INTO load VALUES (%s, 2)", (10**15 + probe if keyed else -probe,))
                    break
                except psycopg.Error as e:
                    errors[node.id] = f"{e.sqlstate}: {e}"
                    time.sleep(0.01)
            took = time.time() - killed
            if db != "tessera" and took < 0.05:
                # A commit that did not wait for an election: the group's
                # primary had moved off the victim since it was looked up.
                note(f"run {run + 1}: node {victim.id} killed, but it no longer led {db}; not counted")
                victim.start()
                cluster.caught_up()
                primary()
                continue
            times.append(took)
            note(f"run {run + 1}: node {victim.id} killed; first commit on the new primary after {took:.3f} s")
            victim.start()
            cluster.caught_up()
            primary()
        times.sort()
        p50 = statistics.median(times)
        p95 = times[min(len(times) - 1, int(round(0.95 * len(times))) - 1)]
        print(f"BENCH {name}_p50_seconds {p50:.3f} s target=report", flush=True)
        print(f"BENCH {name}_p95_seconds {p95:.3f} s target=2", flush=True)
        print(f"BENCH {name}_max_seconds {times[-1]:.3f} s target=report", flush=True)
    finally:
        stop.set()
        cluster.close()


def cpu_seconds(pid):
    """The CPU time (user and system) process `pid` has used so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cluster_cpu_seconds(cluster):
    """The CPU time all of the cluster's live nodes have used so far."""
    return sum(cpu_seconds(n.proc.pid) for n in cluster.alive())


def transactions(output):
    """The transactions a pgbench run committed."""
    for line in output.splitlines():
        if line.startswith("number of transactions actually processed:"):
            return int(line.split(":")[1].split("/")[0])
    raise SystemExit(f"pgbench printed no transaction count:\n{output}")


def cpu_percent(cluster, seconds):
    """Each node's CPU over `seconds`, in percent of one core; their mean."""
    used = cpu_seconds
    pids = [n.proc.pid for n in cluster.alive()]
    before = [used(p) for p in pids]
    time.sleep(seconds)
    after = [used(p) for p in pids]
    return statistics.mean((a - b) / seconds * 100 for a, b in zip(after, before))


def idle():
    """What replicating a database costs a node while nobody uses it: each
    database is a Raft group whose primary heartbeats its secondaries."""
    count = int(os.environ.get("DATABASES", "50"))
    seconds = float(os.environ.get("SAMPLE_SECONDS", "10"))
    cluster = Cluster(3)
    try:
        cluster.primary()
        time.sleep(2)
        base = cpu_percent(cluster, seconds)
        for i in range(count):
            with psycopg.connect(cluster.conninfo(cluster.primary()), autocommit=True) as c:
                c.execute(f"CREATE DATABASE idle{i}")
        cluster.caught_up()
        time.sleep(5)
        loaded = cpu_percent(cluster, seconds)
        note(f"mean CPU of a node: {base:.1f}% of a core with no database, {loaded:.1f}% with {count}")
        print(f"BENCH idle_cpu_base_percent {base:.2f} % target=report", flush=True)
        print(f"BENCH idle_cpu_per_database_percent {(loaded - base) / count:.3f} % target=report", flush=True)
    finally:
        cluster.close()


def remote():
    """What working on a partition led by another node costs a statement:
    a keyed database of four partitions, each a group of its own, on a
    3-node cluster; one session (on the node serving the database) runs
    single-row UPDATEs by key, in turn on each partition, and the mean
    latency is reported for the partitions led by that node and for those
    led elsewhere. Then the time of a query reading every partition
    (`scans`)."""
    count = int(os.environ.get("STATEMENTS", "2000"))
    cluster = Cluster(3)
    # A key in each partition (bigint split evenly in four).
    keys = {1: -6 * 10**18, 2: -7, 3: 7, 4: 6 * 10**18}
    try:
        with psycopg.connect(cluster.conninfo(cluster.primary()), autocommit=True) as c:
            c.execute("CREATE DATABASE rp WITH (partition_key = 'id bigint', partitions = 4)")
        home = cluster.primary_of("rp")
        with psycopg.connect(cluster.conninfo(home, "rp"), autocommit=True) as c:
            c.execute("CREATE TABLE t (id bigint PRIMARY KEY, v bigint)")
            for k in keys.values():
                c.execute("INSERT INTO t VALUES (%s, 0)", (k,))
        # Wait for the primaries to spread and settle.
        deadline = time.time() + 60
        while True:
            home = cluster.primary_of("rp")
            leaders = {p: cluster.primary_of("rp", p).id for p in keys}
            if any(n != home.id for n in leaders.values()) and any(n == home.id for n in leaders.values()):
                break
            if time.time() > deadline:
                raise SystemExit(f"partitions' primaries did not spread around node {home.id}: {leaders}")
            time.sleep(1)
        time.sleep(2)
        took = {"local": [], "remote": []}
        with psycopg.connect(cluster.conninfo(home, "rp"), autocommit=True) as c:
            for i in range(count):
                p = 1 + i % 4
                t0 = time.perf_counter()
                c.execute("UPDATE t SET v = v + 1 WHERE id = %s", (keys[p],))
                where = "local" if leaders[p] == home.id else "remote"
                took[where].append(time.perf_counter() - t0)
        after = {p: cluster.primary_of("rp", p).id for p in keys}
        if after != leaders:
            note(f"a primary moved during the run ({leaders} → {after}); figures may mix both")
        local = statistics.mean(took["local"]) * 1000
        far = statistics.mean(took["remote"]) * 1000
        note(f"sessions on node {home.id}; partitions' primaries {leaders}")
        print(f"BENCH remote_update_local_ms {local:.3f} ms target=report", flush=True)
        print(f"BENCH remote_update_remote_ms {far:.3f} ms target=report", flush=True)
        scans(cluster)
    finally:
        cluster.close()


def scans(cluster):
    """A query reading every partition: the same SCAN_ROWS rows (an id
    spread over the whole bigint range, a bigint, SCAN_PAD (40) bytes of
    text) in the keyed database `rp`, whose partitions are led by several nodes, and in
    a keyless database on one node; the median of 5 runs of a sum over the
    whole table, of one over the 1% of rows a filter keeps, and of a count
    of the first 10 rows (LIMIT), from a session on each database's
    primary."""
    rows = int(os.environ.get("SCAN_ROWS", "400000"))
    pad = "x" * int(os.environ.get("SCAN_PAD", "40"))
    step = (2**64 - 2**20) // rows
    with psycopg.connect(cluster.conninfo(cluster.primary()), autocommit=True) as c:
        c.execute("CREATE DATABASE kl")
    took = {}
    kept = rows // 100
    queries = {
        "all": ("SELECT sum(v), count(*) FROM s", (rows * (rows - 1) // 2, rows)),
        "filtered": (f"SELECT sum(v), count(*) FROM s WHERE v < {kept}", (kept * (kept - 1) // 2, kept)),
        "limit": ("SELECT count(*) FROM (SELECT id FROM s LIMIT 10) AS first", (10,)),
    }
    for db in ("rp", "kl"):
        with psycopg.connect(cluster.conninfo(cluster.primary_of(db), db), autocommit=True) as c:
            c.execute("CREATE TABLE s (id bigint PRIMARY KEY, v bigint, pad text)")
            with c.cursor().copy("COPY s FROM STDIN") as copy:
                for i in range(rows):
                    copy.write_row((-(2**63) + 2**19 + i * step, i, pad))
    time.sleep(2)
    for db in ("rp", "kl"):
        with psycopg.connect(cluster.conninfo(cluster.primary_of(db), db), autocommit=True) as c:
            c.execute("SELECT count(*) FROM s").fetchall()
            for name, (sql, want) in queries.items():
                runs = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    got = c.execute(sql).fetchone()
                    runs.append(time.perf_counter() - t0)
                if got != want:
                    raise SystemExit(f"{db}: {sql} read {got}, not {want}")
                took[db, name] = statistics.median(runs) * 1000
    leaders = {p: cluster.primary_of("rp", p).id for p in (1, 2, 3, 4)}
    note(f"{rows} rows; rp's sessions on node {cluster.primary_of('rp').id}, partitions' primaries {leaders}")
    print(f"BENCH scan_partitions_led_elsewhere_ms {took['rp', 'all']:.1f} ms target=report", flush=True)
    print(f"BENCH scan_one_node_ms {took['kl', 'all']:.1f} ms target=report", flush=True)
    print(f"BENCH scan_filtered_led_elsewhere_ms {took['rp', 'filtered']:.1f} ms target=report", flush=True)
    print(f"BENCH scan_filtered_one_node_ms {took['kl', 'filtered']:.1f} ms target=report", flush=True)
    print(f"BENCH scan_limit_led_elsewhere_ms {took['rp', 'limit']:.1f} ms target=report", flush=True)
    print(f"BENCH scan_limit_one_node_ms {took['kl', 'limit']:.1f} ms target=report", flush=True)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "replication":
        replication()
    elif mode == "idle":
        idle()
    elif mode == "failover":
        failover()
    elif mode == "remote":
        remote()
    else:
        raise SystemExit(__doc__)
