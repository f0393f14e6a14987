"""Drives a Tessera server with asyncpg, as an asyncio Python application would.

Usage: python3 asyncpg_check.py PORT

asyncpg speaks only the extended query protocol with binary formats: every query is prepared (Parse/Describe),
its parameter and result types are learned from the server's ParameterDescription and RowDescription, and values
travel in binary. It also introspects unknown type OIDs through pg_catalog and copies with binary COPY.

Each check prints `ok <name>`; the first failure raises, so the script exits non-zero with a traceback.
Needs: python3 -m pip install asyncpg
"""

import asyncio
import datetime
import decimal
import io
import json
import sys
import uuid

import asyncpg

CHECKS = []


def check(name):
    """Registers a check coroutine to run, in order, on one shared connection."""

    def register(fn):
        CHECKS.append((name, fn))
        return fn

    return register


@check("create table")
async def create_table(conn):
    await conn.execute(
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
async def executemany(conn):
    # asyncpg encodes jsonb as text by default (a str, prefixed with the jsonb version byte in binary).
    await conn.executemany(
        "INSERT INTO items (id, name, price, weight, in_stock, added, updated, tag, data, attrs, big) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        ROWS,
    )
    assert await conn.fetchval("SELECT count(*) FROM items") == 3


@check("fetch several types")
async def fetch_types(conn):
    rows = await conn.fetch(
        "SELECT id, name, price, weight, in_stock, added, updated, tag, data, attrs, big FROM items ORDER BY id"
    )
    got = [tuple(r) for r in rows]
    expected = []
    for row in ROWS:
        row = list(row)
        # jsonb comes back as text; compare it parsed, since the server may normalise spacing.
        row[9] = None if row[9] is None else json.loads(row[9])
        expected.append(tuple(row))
    got = [tuple(json.loads(v) if i == 9 and v is not None else v for i, v in enumerate(r)) for r in got]
    assert got == expected, f"\n got {got}\nwant {expected}"
    # Columns are addressable by name.
    assert rows[0]["name"] == "apple" and rows[0]["tag"] == ROWS[0][7]


@check("parameters of each type in WHERE")
async def typed_parameters(conn):
    apple = ROWS[0]
    cases = [
        ("id = $1", 1),
        ("name = $1", "apple"),
        ("in_stock = $1", True),
        ("weight = $1", 0.5),
        ("price = $1", decimal.Decimal("1.25")),
        ("added = $1", apple[5]),
        ("updated = $1", apple[6]),
        ("tag = $1", apple[7]),
        ("data = $1", apple[8]),
        ("big = $1", 2**40),
    ]
    for where, value in cases:
        got = await conn.fetch(f"SELECT id FROM items WHERE {where}", value)
        assert [r["id"] for r in got] == [1], f"WHERE {where} with {value!r}: {got}"
    got = await conn.fetch("SELECT name FROM items WHERE price > $1 AND id <> $2 ORDER BY id", decimal.Decimal("1"), 99)
    assert [r[0] for r in got] == ["apple"], got
    assert await conn.fetchval("SELECT count(*) FROM items WHERE added < $1", datetime.date(2000, 1, 1)) == 1
    # A parameter used only in the select list, with an explicit cast.
    assert await conn.fetchval("SELECT $1::integer + 1", 41) == 42
    assert await conn.fetchrow("SELECT id, name FROM items WHERE id = $1", 404) is None


@check("transaction rollback")
async def rollback(conn):
    try:
        async with conn.transaction():
            await conn.execute("INSERT INTO items (id, name) VALUES ($1, $2)", 10, "temporary")
            await conn.execute("UPDATE items SET name = 'changed' WHERE id = 1")
            assert await conn.fetchval("SELECT count(*) FROM items") == 4
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    rows = await conn.fetch("SELECT id, name FROM items ORDER BY id")
    assert [tuple(r) for r in rows] == [(1, "apple"), (2, "pear"), (3, "plum 'quoted'")], "rollback did not undo"


@check("transaction commit")
async def commit(conn):
    async with conn.transaction():
        await conn.execute("INSERT INTO items (id, name) VALUES ($1, $2)", 4, "fig")
    assert await conn.fetchval("SELECT name FROM items WHERE id = $1", 4) == "fig"


@check("copy_to_table and copy_from_table")
async def copy(conn):
    await conn.execute("CREATE TABLE measurements (id integer PRIMARY KEY, label text, value double precision)")
    # copy_to_table sends COPY ... FROM STDIN (FORMAT text) and streams the bytes of the source as CopyData.
    null = "\\N"
    lines = [f"{i}\t{null if i % 10 == 0 else f'label {i}'}\t{i / 4}\n" for i in range(1000)]
    source = io.BytesIO("".join(lines).encode())
    result = await conn.copy_to_table("measurements", source=source, columns=["id", "label", "value"], format="text")
    assert result == "COPY 1000", result
    # CSV, with a quoted field containing the delimiter.
    source = io.BytesIO(b'1000,"a, b",1.5\n1001,,-2\n')
    result = await conn.copy_to_table("measurements", source=source, format="csv")
    assert result == "COPY 2", result
    row = await conn.fetchrow("SELECT count(*), count(label), sum(value) FROM measurements")
    assert tuple(row) == (1002, 901, sum(i / 4 for i in range(1000)) + 1.5 - 2), tuple(row)
    assert await conn.fetchval("SELECT label FROM measurements WHERE id = $1", 1000) == "a, b"
    # And back out with COPY ... TO STDOUT.
    output = io.BytesIO()
    result = await conn.copy_from_table("measurements", output=output, columns=["id", "label"], format="csv")
    assert result == "COPY 1002", result
    out_lines = output.getvalue().decode().splitlines()
    assert len(out_lines) == 1002 and "7,label 7" in out_lines and '1000,"a, b"' in out_lines, out_lines[:5]


@check("binary COPY: copy_records_to_table and copy_from_table(format='binary')")
async def binary_copy(conn):
    columns = (
        "(id int PRIMARY KEY, b bool, s smallint, big bigint, r real, d float8, n numeric(12,3), "
        "u numeric, t text, by bytea, dt date, ts timestamp, tz timestamptz, iv interval, uu uuid, j jsonb)"
    )
    await conn.execute("CREATE TABLE typed " + columns)
    records = [
        (
            1, True, 3, 9007199254740993, 1.5, 2.25, decimal.Decimal("123.456"), decimal.Decimal("0.000000000001"),
            "h\u00e9llo\ttab", b"\x00\xff", datetime.date(2024, 2, 29), datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
            datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc), datetime.timedelta(days=1, seconds=3600),
            uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), '{"a": [1, 2]}',
        ),
        (2,) + (None,) * 15,
        (
            3, False, -1, -5, -0.5, 1e300, decimal.Decimal("-0.001"), decimal.Decimal("-12345678901234567890.5"), "", b"",
            datetime.date(1999, 1, 8), datetime.datetime(1970, 1, 1), datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc),
            datetime.timedelta(0), uuid.UUID(int=0), "[]",
        ),
    ]
    assert await conn.copy_records_to_table("typed", records=records) == "COPY 3"
    got = [tuple(r) for r in await conn.fetch("SELECT * FROM typed ORDER BY id")]
    assert got == records, got
    # Back out in binary: the stream starts with PostgreSQL's signature and ends with its trailer.
    output = io.BytesIO()
    assert await conn.copy_from_table("typed", output=output, format="binary") == "COPY 3"
    data = output.getvalue()
    assert data.startswith(b"PGCOPY\n\xff\r\n\x00") and data.endswith(b"\xff\xff"), data[:20]
    # ... and in again, into a copy of the table.
    await conn.execute("CREATE TABLE typed_again " + columns)
    assert await conn.copy_to_table("typed_again", source=io.BytesIO(data), format="binary") == "COPY 3"
    again = [tuple(r) for r in await conn.fetch("SELECT * FROM typed_again ORDER BY id")]
    assert again == records, again
    # A malformed stream is refused with 22P04 and loads nothing.
    try:
        await conn.copy_to_table("typed_again", source=io.BytesIO(data[:-7]), format="binary")
    except asyncpg.PostgresError as e:
        assert e.sqlstate == "22P04", e.sqlstate
    else:
        raise AssertionError("a truncated binary COPY stream was accepted")
    assert await conn.fetchval("SELECT count(*) FROM typed_again") == 3


@check("server errors map to asyncpg exceptions")
async def server_errors(conn):
    cases = [
        ("INSERT INTO items (id, name) VALUES (1, 'duplicate')", asyncpg.UniqueViolationError, "23505"),
        ("SELECT * FROM no_such_table", asyncpg.UndefinedTableError, "42P01"),
        ("SELECT 1 / 0", asyncpg.DivisionByZeroError, "22012"),
        ("SELEC 1", asyncpg.PostgresSyntaxError, "42601"),
        ("INSERT INTO items (id) VALUES (50)", asyncpg.NotNullViolationError, "23502"),
    ]
    for sql, exception, sqlstate in cases:
        try:
            await conn.execute(sql)
        except exception as e:
            assert e.sqlstate == sqlstate, f"{sql}: sqlstate {e.sqlstate}, expected {sqlstate}"
        except asyncpg.PostgresError as e:
            raise AssertionError(f"{sql}: raised {type(e).__name__} ({e.sqlstate}: {e}), expected {exception.__name__}")
        else:
            raise AssertionError(f"{sql}: no error, expected {exception.__name__}")
    # The same through a prepared statement with parameters.
    try:
        await conn.execute("INSERT INTO items (id, name) VALUES ($1, $2)", 2, "duplicate")
    except asyncpg.UniqueViolationError:
        pass
    else:
        raise AssertionError("duplicate key through parameters: no error")
    # The connection is still usable afterwards.
    assert await conn.fetchval("SELECT 1") == 1


async def main():
    port = int(sys.argv[1])
    conn = await asyncpg.connect(host="127.0.0.1", port=port, user="tessera", database="tessera", timeout=10)
    try:
        for name, fn in CHECKS:
            await fn(conn)
            print(f"ok {name}", flush=True)
    finally:
        await conn.close()
    print("all checks passed")


if __name__ == "__main__":
    asyncio.run(main())
