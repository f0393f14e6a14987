"""Drives a Tessera server with psycopg 3, as a Python application would.

Usage: python3 psycopg_check.py PORT [GROUP]

GROUP is `main` (the default) or `prepared`. `main` turns psycopg's automatic server-side prepared statements off,
so that its checks do not depend on them; `prepared` checks them on their own: psycopg prepares a query it has run
a few times, and later sends `DEALLOCATE name` when its cache overflows and `DEALLOCATE ALL` after a rollback.

Each check prints `ok <name>`; the first failure raises, so the script exits non-zero with a traceback.
"""

import datetime
import decimal
import sys
import uuid

import psycopg
from psycopg import errors


def connect(port, **kwargs):
    return psycopg.connect(
        host="127.0.0.1", port=port, user="tessera", dbname="tessera", connect_timeout=10, **kwargs
    )


CHECKS = {"main": [], "prepared": []}


def check(name, group="main"):
    """Registers a check function to run, in order, when its group runs."""

    def register(fn):
        CHECKS[group].append((name, fn))
        return fn

    return register


@check("create table")
def create_table(conn):
    with conn.cursor() as cur:
        cur.execute(
            """
            CREATE TABLE items (
                id integer PRIMARY KEY,
                name text NOT NULL,
                price numeric(10,2),
                weight double precision,
                in_stock boolean,
                added date,
                updated timestamp,
                tag uuid,
                data bytea,
                attrs jsonb,
                big bigint
            )
            """
        )
    conn.commit()


ROWS = [
    (
        1,
        "apple",
        decimal.Decimal("1.25"),
        0.5,
        True,
        datetime.date(2024, 2, 29),
        datetime.datetime(2024, 2, 29, 13, 45, 6),
        uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        b"\x00\x01\xff",
        '{"color": "red", "sizes": [1, 2]}',
        2**40,
    ),
    (2, "pear", decimal.Decimal("0.99"), 0.25, False, datetime.date(1999, 12, 31), None, None, b"", "[]", -1),
    (3, "plum 'quoted'", None, None, None, None, None, None, None, None, None),
]


@check("executemany with parameters")
def executemany(conn):
    with conn.cursor() as cur:
        # Parameters travel separately from the SQL (extended protocol); psycopg also pipelines executemany.
        cur.executemany(
            "INSERT INTO items (id, name, price, weight, in_stock, added, updated, tag, data, attrs, big) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s)",
            ROWS,
        )
        assert cur.rowcount == 3, cur.rowcount
    conn.commit()
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM items")
        assert cur.fetchone() == (3,)


@check("fetch several types in text format")
def fetch_text(conn):
    fetch_and_compare(conn, binary=False)


@check("fetch several types in binary format")
def fetch_binary(conn):
    fetch_and_compare(conn, binary=True)


def fetch_and_compare(conn, binary):
    with conn.cursor(binary=binary) as cur:
        cur.execute(
            "SELECT id, name, price, weight, in_stock, added, updated, tag, data, attrs, big FROM items ORDER BY id"
        )
        got = cur.fetchall()
    expected = []
    for row in ROWS:
        row = list(row)
        # bytea comes back as bytes, jsonb parsed.
        row[9] = {"color": "red", "sizes": [1, 2]} if row[0] == 1 else ([] if row[0] == 2 else None)
        expected.append(tuple(row))
    got = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in got]
    assert got == expected, f"binary={binary}:\n got {got}\nwant {expected}"


@check("parameters in WHERE and expressions")
def parameters(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT name FROM items WHERE price > %s AND id <> %s ORDER BY id", (decimal.Decimal("1"), 99))
        assert cur.fetchall() == [("apple",)]
        cur.execute("SELECT name FROM items WHERE name = %(name)s", {"name": "plum 'quoted'"})
        assert cur.fetchall() == [("plum 'quoted'",)]
        cur.execute("SELECT count(*) FROM items WHERE added < %s", (datetime.date(2000, 1, 1),))
        assert cur.fetchone() == (1,)


@check("RETURNING with parameters and the FROM table's columns")
def returning_from(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE ret_t (a int, b text)")
        cur.execute("CREATE TABLE ret_u (a int, z float8)")
        cur.execute("INSERT INTO ret_t VALUES (1, 'x'), (2, 'y')")
        cur.execute("INSERT INTO ret_u VALUES (1, 1.5)")
        cur.execute(
            "UPDATE ret_t SET b = b || %s FROM ret_u q WHERE ret_t.a = q.a RETURNING *, q.z * %s AS zz", ("!", 2)
        )
        assert [d.name for d in cur.description] == ["a", "b", "a", "z", "zz"], cur.description
        assert cur.fetchall() == [(1, "x!", 1, 1.5, 3.0)]
        cur.execute("DELETE FROM ret_t USING ret_u WHERE ret_t.a = ret_u.a AND ret_u.z > %s RETURNING ret_u.*", (1,))
        assert cur.fetchall() == [(1, 1.5)]
        cur.execute("INSERT INTO ret_t VALUES (%s, %s) RETURNING a + %s", (5, "q", 10))
        assert cur.fetchall() == [(15,)]
        cur.execute("DROP TABLE ret_t")
        cur.execute("DROP TABLE ret_u")
    conn.commit()


@check("transaction rollback")
def rollback(conn):
    with conn.cursor() as cur:
        cur.execute("INSERT INTO items (id, name) VALUES (10, 'temporary')")
        cur.execute("UPDATE items SET name = 'changed' WHERE id = 1")
    conn.rollback()
    # The same with the transaction context manager and an explicit Rollback.
    with conn.transaction() as tx:
        with conn.cursor() as cur:
            cur.execute("DELETE FROM items")
        raise psycopg.Rollback(tx)
    with conn.cursor() as cur:
        cur.execute("SELECT id, name FROM items ORDER BY id")
        assert cur.fetchall() == [(1, "apple"), (2, "pear"), (3, "plum 'quoted'")], "rollback did not undo"
    conn.commit()


@check("transaction commit through the context manager")
def commit(conn):
    with conn.transaction():
        with conn.cursor() as cur:
            cur.execute("INSERT INTO items (id, name) VALUES (%s, %s)", (4, "fig"))
    with conn.cursor() as cur:
        cur.execute("SELECT name FROM items WHERE id = 4")
        assert cur.fetchone() == ("fig",)
    conn.commit()


@check("COPY FROM STDIN")
def copy_from(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE measurements (id integer PRIMARY KEY, label text, value double precision)")
        with cur.copy("COPY measurements FROM STDIN") as copy:
            for i in range(1000):
                copy.write_row((i, None if i % 10 == 0 else f"label\t{i}", i / 4))
        assert cur.rowcount == 1000, cur.rowcount
        # Raw text-format data written in pieces that split rows.
        with cur.copy("COPY measurements (id, label, value) FROM STDIN") as copy:
            copy.write("1000\tra")
            copy.write("w\t1.5\n1001\t\\N\t-2\n")
    conn.commit()
    with conn.cursor() as cur:
        cur.execute("SELECT count(*), count(label), sum(value) FROM measurements")
        assert cur.fetchone() == (1002, 901, sum(i / 4 for i in range(1000)) + 1.5 - 2)
        cur.execute("SELECT label FROM measurements WHERE id IN (7, 1000) ORDER BY id")
        assert cur.fetchall() == [("label\t7",), ("raw",)]


@check("server errors map to psycopg exceptions with their SQLSTATE")
def server_errors(conn):
    cases = [
        ("INSERT INTO items (id, name) VALUES (1, 'duplicate')", errors.UniqueViolation, "23505"),
        ("SELECT * FROM no_such_table", errors.UndefinedTable, "42P01"),
        ("SELECT 1 / 0", errors.DivisionByZero, "22012"),
        ("SELEC 1", errors.SyntaxError, "42601"),
        ("SELECT no_such_column FROM items", errors.UndefinedColumn, "42703"),
        ("INSERT INTO items (id) VALUES (50)", errors.NotNullViolation, "23502"),
        ("SELECT 'abc'::integer", errors.InvalidTextRepresentation, "22P02"),
    ]
    for sql, exception, sqlstate in cases:
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
        except exception as e:
            assert e.sqlstate == sqlstate, f"{sql}: sqlstate {e.sqlstate}, expected {sqlstate}"
            conn.rollback()
        except psycopg.Error as e:
            raise AssertionError(f"{sql}: raised {type(e).__name__} ({e.sqlstate}: {e}), expected {exception.__name__}")
        else:
            raise AssertionError(f"{sql}: no error, expected {exception.__name__}")

    # After an error, the transaction refuses everything until rollback.
    with conn.cursor() as cur:
        try:
            cur.execute("SELECT 1 / 0")
        except errors.DivisionByZero:
            pass
        try:
            cur.execute("SELECT 1")
        except errors.InFailedSqlTransaction as e:
            assert e.sqlstate == "25P02"
        else:
            raise AssertionError("a statement after an error in a transaction succeeded")
    conn.rollback()
    with conn.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)
    conn.commit()


@check("array columns and list parameters, text and binary")
def arrays(conn):
    conn.execute("CREATE TABLE pa (k int PRIMARY KEY, a int[], t text[])")
    conn.execute("INSERT INTO pa VALUES (%s, %s, %s)", (1, [1, None, 3], ["x", "y z"]))
    conn.cursor().executemany("INSERT INTO pa VALUES (%s, %s, %s)", [(2, [], None), (3, [4], ["q"])])
    with conn.cursor(binary=True) as cur:
        cur.execute("INSERT INTO pa VALUES (%s, %s, %s)", (4, [5, 6], ['b"c', "NULL"]))
        rows = cur.execute("SELECT a, t FROM pa ORDER BY k").fetchall()
    expected = [([1, None, 3], ["x", "y z"]), ([], None), ([4], ["q"]), ([5, 6], ['b"c', "NULL"])]
    assert rows == expected, rows
    assert conn.execute("SELECT a, t FROM pa ORDER BY k").fetchall() == expected
    got = conn.execute("SELECT k FROM pa WHERE k = ANY(%s) ORDER BY k", ([1, 3],)).fetchall()
    assert got == [(1,), (3,)], got
    assert conn.execute("SELECT k FROM pa WHERE 3 = ANY(a)").fetchall() == [(1,)]
    # = ANY against a parameter is three-valued too: a NULL element makes a miss unknown.
    got = conn.execute("SELECT 2 = ANY(%s), 1 = ANY(%s)", ([1, None], [1, None])).fetchone()
    assert got == (None, True), got
    assert conn.execute("SELECT k FROM pa WHERE NOT (k = ANY(%s))", ([1, None],)).fetchall() == []
    assert conn.execute("SELECT %s::text[]", (["a", "b"],)).fetchone() == (["a", "b"],)
    conn.commit()


@check("an enum type: labels in order, its OID on the wire, psycopg's EnumInfo and register_enum")
def enums(conn):
    import enum

    from psycopg.types.enum import EnumInfo, register_enum

    conn.execute("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
    conn.execute("CREATE TABLE pe (k int PRIMARY KEY, m mood)")
    conn.cursor().executemany("INSERT INTO pe VALUES (%s, %s)", [(1, "happy"), (2, "sad"), (3, "ok")])
    conn.commit()
    oid = conn.execute("SELECT oid FROM pg_type WHERE typname = 'mood'").fetchone()[0]
    cur = conn.execute("SELECT m FROM pe ORDER BY m")
    assert cur.description[0].type_code == oid, (cur.description[0].type_code, oid)
    assert cur.fetchall() == [("sad",), ("ok",), ("happy",)]
    info = EnumInfo.fetch(conn, "mood")
    assert info is not None and info.labels == ["sad", "ok", "happy"], info and info.labels

    class Mood(enum.Enum):
        sad = "sad"
        ok = "ok"
        happy = "happy"

    register_enum(info, conn, Mood)
    assert conn.execute("SELECT m FROM pe WHERE m > %s ORDER BY k", (Mood.sad,)).fetchall() == [(Mood.happy,), (Mood.ok,)]
    with conn.cursor(binary=True) as cur:
        assert cur.execute("SELECT m FROM pe WHERE k = %s", (2,)).fetchone() == (Mood.sad,)
    try:
        conn.execute("INSERT INTO pe VALUES (4, %s)", ("meh",))
        raise AssertionError("a value that is not a label was stored")
    except errors.InvalidTextRepresentation:
        conn.rollback()


@check("autocommit connection")
def autocommit(conn):
    conn.autocommit = True
    conn.execute("INSERT INTO items (id, name) VALUES (5, 'kiwi')")
    # Visible from another session without a commit.
    with connect(PORT, prepare_threshold=None) as other:
        assert other.execute("SELECT name FROM items WHERE id = 5").fetchone() == ("kiwi",)
    conn.autocommit = False


@check("the session's time zone, asked at connect and set later")
def time_zones(conn):
    with connect(PORT, prepare_threshold=None, options="-c TimeZone=Asia/Tokyo", autocommit=True) as tokyo:
        # Reported at startup, so psycopg shows values in the zone.
        assert tokyo.info.parameter_status("TimeZone") == "Asia/Tokyo"
        tokyo.execute("CREATE TABLE tz_check (id int PRIMARY KEY, at timestamptz)")
        # Text without an offset is Tokyo's wall time, in a parameter and in COPY.
        tokyo.execute("INSERT INTO tz_check VALUES (%s, %s::text::timestamptz)", (1, "2024-07-01 09:00"))
        with tokyo.cursor().copy("COPY tz_check FROM STDIN") as copy:
            copy.write("2\t2024-07-01 09:00\n")
        utc = datetime.timezone.utc
        for (at,) in tokyo.execute("SELECT at FROM tz_check ORDER BY id"):
            assert at == datetime.datetime(2024, 7, 1, 0, 0, tzinfo=utc), at
            assert at.utcoffset() == datetime.timedelta(hours=9), at
        assert tokyo.execute("SELECT at::text FROM tz_check WHERE id = 1").fetchone() == ("2024-07-01 09:00:00+09",)
        tokyo.execute("SET TIME ZONE 'America/New_York'")
        assert tokyo.info.parameter_status("TimeZone") == "America/New_York"
        assert tokyo.execute("SELECT at::text FROM tz_check WHERE id = 2").fetchone() == ("2024-06-30 20:00:00-04",)
        tokyo.execute("DROP TABLE tz_check")


@check("timestamps over PostgreSQL's range in text parameters: BC, past 9999, infinity")
def timestamp_range(conn):
    with connect(PORT, prepare_threshold=None, autocommit=True) as c:
        c.execute("CREATE TABLE ts_range (id int PRIMARY KEY, t timestamp, z timestamptz)")
        values = ["infinity", "1997-02-16 17:32:01 BC", "10000-01-01 00:00", "2024-01-01 10:00+02"]
        for i, v in enumerate(values):
            # Text parameters (psycopg sends str as text), read as PostgreSQL reads them.
            c.execute("INSERT INTO ts_range VALUES (%s, %s, %s)", (i, v, v))
        got = c.execute("SELECT t::text, z::text FROM ts_range WHERE t < %s ORDER BY id", ("infinity",)).fetchall()
        assert got == [
            ("1997-02-16 17:32:01 BC", "1997-02-16 17:32:01+00 BC"),
            ("10000-01-01 00:00:00", "10000-01-01 00:00:00+00"),
            ("2024-01-01 10:00:00", "2024-01-01 08:00:00+00"),
        ], got
        assert c.execute("SELECT count(*) FROM ts_range WHERE z = %s", ("infinity",)).fetchone() == (1,)
        c.execute("DROP TABLE ts_range")


@check("a COMMIT that fails leaves the connection idle")
def failed_commit_ends_the_block(conn):
    # A serializable transaction whose scan a concurrent insert changes
    # fails at COMMIT (40001) and is rolled back: the server must then say
    # the connection is idle, as PostgreSQL does, or psycopg takes its next
    # transaction for a savepoint of a block that no longer exists.
    conn.autocommit = True
    conn.execute("CREATE TABLE fc (id int PRIMARY KEY, v int)")
    conn.execute("INSERT INTO fc VALUES (1, 0), (2, 0)")
    with connect(PORT, prepare_threshold=None, autocommit=True) as other:
        try:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                conn.execute("SELECT count(*) FROM fc WHERE v >= 0").fetchall()
                other.execute("INSERT INTO fc VALUES (3, 0)")
                conn.execute("UPDATE fc SET v = v + 1 WHERE id = 2")
            raise AssertionError("the COMMIT succeeded")
        except psycopg.errors.SerializationFailure:
            pass
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE, conn.info.transaction_status
    with conn.transaction():
        conn.execute("UPDATE fc SET v = v + 10 WHERE id = 2")
    assert conn.execute("SELECT v FROM fc WHERE id = 2").fetchone() == (10,)
    conn.autocommit = False


@check("a query run several times is prepared", "prepared")
def prepared_automatically(conn):
    conn.execute("CREATE TABLE p (id integer PRIMARY KEY, v text)")
    conn.commit()
    # The default threshold is 5 executions; after that psycopg uses a named server-side statement.
    for i in range(10):
        conn.execute("INSERT INTO p VALUES (%s, %s)", (i, f"v{i}"))
    for i in range(10):
        assert conn.execute("SELECT v FROM p WHERE id = %s", (i,)).fetchone() == (f"v{i}",)
    conn.commit()


@check("rollback deallocates prepared statements", "prepared")
def rollback_deallocates(conn):
    conn.execute("SELECT v FROM p WHERE id = %s", (1,), prepare=True)
    # psycopg forgets its prepared statements on rollback and sends DEALLOCATE ALL.
    conn.rollback()
    assert conn.execute("SELECT v FROM p WHERE id = %s", (2,), prepare=True).fetchone() == ("v2",)
    conn.rollback()


@check("cache overflow deallocates one statement", "prepared")
def cache_overflow(conn):
    conn.prepared_max = 2
    for i in range(5):
        # Distinct queries, each prepared at once; the oldest leaves the cache with DEALLOCATE name.
        row = conn.execute(f"SELECT v, {i} FROM p WHERE id = %s", (i,), prepare=True).fetchone()
        assert row == (f"v{i}", i), row
    conn.commit()


PORT = None


def main():
    global PORT
    PORT = int(sys.argv[1])
    group = sys.argv[2] if len(sys.argv) > 2 else "main"
    # Prepared statements stay at psycopg's default in their own group, off elsewhere (see the module docstring).
    threshold = {} if group == "prepared" else {"prepare_threshold": None}
    with connect(PORT, **threshold) as conn:
        for name, fn in CHECKS[group]:
            fn(conn)
            print(f"ok {name}", flush=True)
    print("all checks passed")


if __name__ == "__main__":
    main()
