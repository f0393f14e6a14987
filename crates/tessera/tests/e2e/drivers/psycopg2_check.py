"""Drives a Tessera server with psycopg2, as a Python application would.

Usage: python3 psycopg2_check.py PORT

psycopg2 interpolates `%s` parameters into the SQL text on the client side and sends every statement with the
simple query protocol, opening a transaction with BEGIN before the first statement unless autocommit is on.
Results come back in text format and are parsed by psycopg2's typecasters.

Each check prints `ok <name>`; the first failure raises, so the script exits non-zero with a traceback.
Needs: python3 -m pip install psycopg2-binary
"""

import datetime
import decimal
import io
import sys
import uuid

import psycopg2
import psycopg2.errorcodes
import psycopg2.errors
import psycopg2.extras

# psycopg2 adapts uuid.UUID only once this is registered (it then sends '...'::uuid).
psycopg2.extras.register_uuid()

CHECKS = []


def check(name):
    """Registers a check function to run, in order, on one shared connection."""

    def register(fn):
        CHECKS.append((name, fn))
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
        psycopg2.extras.Json({"color": "red", "sizes": [1, 2]}),
        2**40,
    ),
    (2, "pear", decimal.Decimal("0.99"), 0.25, False, datetime.date(1999, 12, 31), None, None, b"", "[]", -1),
    (3, "plum 'quoted'", None, None, None, None, None, None, None, None, None),
]
INSERT = (
    "INSERT INTO items (id, name, price, weight, in_stock, added, updated, tag, data, attrs, big) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


@check("insert with %s parameters")
def insert(conn):
    with conn.cursor() as cur:
        # One statement, then executemany for the rest.
        cur.execute(INSERT, ROWS[0])
        assert cur.rowcount == 1, cur.rowcount
        cur.executemany(INSERT, ROWS[1:])
    conn.commit()
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM items")
        assert cur.fetchone() == (3,)


@check("fetch several types")
def fetch_types(conn):
    with conn.cursor() as cur:
        cur.execute(
            "SELECT id, name, price, weight, in_stock, added, updated, tag, data, attrs, big FROM items ORDER BY id"
        )
        got = cur.fetchall()
        names = [d.name for d in cur.description]
    assert names == ["id", "name", "price", "weight", "in_stock", "added", "updated", "tag", "data", "attrs", "big"]
    expected = []
    for row in ROWS:
        row = list(row)
        # bytea comes back as a memoryview, jsonb parsed.
        row[9] = {"color": "red", "sizes": [1, 2]} if row[0] == 1 else ([] if row[0] == 2 else None)
        expected.append(tuple(row))
    got = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in got]
    assert got == expected, f"\n got {got}\nwant {expected}"
    conn.commit()


@check("parameters in WHERE and expressions")
def parameters(conn):
    apple = ROWS[0]
    with conn.cursor() as cur:
        for column, value in [
            ("id", 1),
            ("name", "apple"),
            ("in_stock", True),
            ("weight", 0.5),
            ("price", decimal.Decimal("1.25")),
            ("added", apple[5]),
            ("updated", apple[6]),
            ("tag", apple[7]),
            ("data", psycopg2.Binary(apple[8])),
            ("big", 2**40),
        ]:
            cur.execute(f"SELECT id FROM items WHERE {column} = %s", (value,))
            assert cur.fetchall() == [(1,)], f"WHERE {column} = {value!r}"
        cur.execute("SELECT name FROM items WHERE price > %s AND id <> %s ORDER BY id", (decimal.Decimal("1"), 99))
        assert cur.fetchall() == [("apple",)]
        cur.execute("SELECT name FROM items WHERE name = %(name)s", {"name": "plum 'quoted'"})
        assert cur.fetchall() == [("plum 'quoted'",)]
        cur.execute("SELECT id FROM items WHERE id IN %s ORDER BY id", ((2, 3, 404),))
        assert cur.fetchall() == [(2,), (3,)]
        cur.execute("SELECT count(*) FROM items WHERE added < %s", (datetime.date(2000, 1, 1),))
        assert cur.fetchone() == (1,)
    conn.commit()


@check("transaction rollback")
def rollback(conn):
    with conn.cursor() as cur:
        cur.execute("INSERT INTO items (id, name) VALUES (%s, %s)", (10, "temporary"))
        cur.execute("UPDATE items SET name = 'changed' WHERE id = 1")
    conn.rollback()
    with conn.cursor() as cur:
        cur.execute("SELECT id, name FROM items ORDER BY id")
        assert cur.fetchall() == [(1, "apple"), (2, "pear"), (3, "plum 'quoted'")], "rollback did not undo"
    conn.commit()


@check("transaction commit through the context manager")
def commit(conn):
    # `with conn:` commits on success.
    with conn:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO items (id, name) VALUES (%s, %s)", (4, "fig"))
    with conn.cursor() as cur:
        cur.execute("SELECT name FROM items WHERE id = 4")
        assert cur.fetchone() == ("fig",)
    conn.commit()


@check("copy_expert with COPY FROM STDIN")
def copy_from(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE measurements (id integer PRIMARY KEY, label text, value double precision)")
        null = "\\N"
        lines = [f"{i}\t{null if i % 10 == 0 else f'label {i}'}\t{i / 4}\n" for i in range(1000)]
        cur.copy_expert("COPY measurements (id, label, value) FROM STDIN", io.StringIO("".join(lines)))
        assert cur.rowcount == 1000, cur.rowcount
        cur.copy_expert("COPY measurements FROM STDIN WITH (FORMAT csv)", io.StringIO('1000,"a, b",1.5\n1001,,-2\n'))
    conn.commit()
    with conn.cursor() as cur:
        cur.execute("SELECT count(*), count(label), sum(value) FROM measurements")
        assert cur.fetchone() == (1002, 901, sum(i / 4 for i in range(1000)) + 1.5 - 2)
        cur.execute("SELECT label FROM measurements WHERE id IN (7, 1000) ORDER BY id")
        assert cur.fetchall() == [("label 7",), ("a, b",)]
        # And back out with COPY TO STDOUT.
        out = io.StringIO()
        cur.copy_expert("COPY (SELECT id, label FROM measurements WHERE id < 3 ORDER BY id) TO STDOUT", out)
        assert out.getvalue() == "0\t\\N\n1\tlabel 1\n2\tlabel 2\n", repr(out.getvalue())
    conn.commit()


@check("server errors carry their SQLSTATE in pgcode")
def server_errors(conn):
    cases = [
        ("INSERT INTO items (id, name) VALUES (1, 'duplicate')", psycopg2.errors.UniqueViolation, "23505"),
        ("SELECT * FROM no_such_table", psycopg2.errors.UndefinedTable, "42P01"),
        ("SELECT 1 / 0", psycopg2.errors.DivisionByZero, "22012"),
        ("SELEC 1", psycopg2.errors.SyntaxError, "42601"),
        ("SELECT no_such_column FROM items", psycopg2.errors.UndefinedColumn, "42703"),
        ("INSERT INTO items (id) VALUES (50)", psycopg2.errors.NotNullViolation, "23502"),
    ]
    for sql, exception, sqlstate in cases:
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
        except exception as e:
            assert e.pgcode == sqlstate, f"{sql}: pgcode {e.pgcode}, expected {sqlstate}"
            assert e.diag.sqlstate == sqlstate and e.diag.message_primary, f"{sql}: diag {e.diag.message_primary!r}"
            conn.rollback()
        except psycopg2.Error as e:
            raise AssertionError(f"{sql}: raised {type(e).__name__} ({e.pgcode}: {e}), expected {exception.__name__}")
        else:
            raise AssertionError(f"{sql}: no error, expected {exception.__name__}")
    assert psycopg2.errorcodes.lookup("23505") == "UNIQUE_VIOLATION"

    # After an error, the transaction refuses everything until rollback.
    with conn.cursor() as cur:
        try:
            cur.execute("SELECT 1 / 0")
        except psycopg2.errors.DivisionByZero:
            pass
        try:
            cur.execute("SELECT 1")
        except psycopg2.errors.InFailedSqlTransaction as e:
            assert e.pgcode == "25P02", e.pgcode
        else:
            raise AssertionError("a statement after an error in a transaction succeeded")
    conn.rollback()
    with conn.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)
    conn.commit()


@check("autocommit connection")
def autocommit(conn):
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("INSERT INTO items (id, name) VALUES (5, 'kiwi')")
    # Visible from another session without a commit.
    other = connect(PORT)
    try:
        with other.cursor() as cur:
            cur.execute("SELECT name FROM items WHERE id = 5")
            assert cur.fetchone() == ("kiwi",)
    finally:
        other.close()
    conn.autocommit = False


def connect(port):
    return psycopg2.connect(host="127.0.0.1", port=port, user="tessera", dbname="tessera", connect_timeout=10)


PORT = None


def main():
    global PORT
    PORT = int(sys.argv[1])
    conn = connect(PORT)
    try:
        for name, fn in CHECKS:
            fn(conn)
            print(f"ok {name}", flush=True)
    finally:
        conn.close()
    print("all checks passed")


if __name__ == "__main__":
    main()
