//! The extended query protocol as tokio-postgres speaks it: prepared statements with typed parameters, binary
//! results, the unnamed statement, portals, row counts and SQLSTATEs, plus the simple protocol's text results for
//! the same data.
//!
//! Types tokio-postgres decodes without optional features (bool, integers, floats, text, bytea) are read as Rust
//! values; the others (numeric, date/time, interval, uuid, json) are checked as text, over the simple protocol and
//! cast in SQL, and as raw binary bytes against PostgreSQL's encoding.

use std::time::Duration;

use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};

use crate::client::{Raw, block_on, connect, describe, exec, query_text, rows};
use crate::harness::Server;

/// Generous for a debug build; every test here does a few hundred round trips at most.
const LIMIT: Duration = Duration::from_secs(60);

const CREATE_ALL_TYPES: &str = "CREATE TABLE all_types (
    id integer PRIMARY KEY, b boolean, i2 smallint, i4 integer, i8 bigint, f4 real, f8 double precision,
    n numeric(10,2), s text, vc varchar(10), c char(3), by bytea, d date, tm time, ts timestamp, tz timestamptz,
    iv interval, u uuid, j json, jb jsonb
)";

/// The columns with a binary `ToSql`/`FromSql` in plain tokio-postgres, in table order.
const TYPED_COLUMNS: &str = "id, b, i2, i4, i8, f4, f8, s, vc, c, by";

/// The values a row gets through typed parameters.
struct Typed {
    id: i32,
    b: Option<bool>,
    i2: Option<i16>,
    i4: Option<i32>,
    i8: Option<i64>,
    f4: Option<f32>,
    f8: Option<f64>,
    s: Option<&'static str>,
    vc: Option<String>,
    c: Option<String>,
    by: Option<Vec<u8>>,
}

/// One row of the all-types table: the typed values, SQL literals for the columns without a plain `ToSql`
/// (n, d, tm, ts, tz, iv, u, j, jb), and the whole row in PostgreSQL's text output (session time zone UTC).
struct Case {
    typed: Typed,
    literals: [&'static str; 9],
    text: [&'static str; 20],
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            typed: Typed {
                id: 1,
                b: Some(true),
                i2: Some(12345),
                i4: Some(-7),
                i8: Some(9_000_000_000),
                f4: Some(1.5),
                f8: Some(2.25),
                s: Some("it's \"quoted\", with, commas"),
                vc: Some("abc".into()),
                c: Some("ab".into()),
                by: Some(vec![1, 2, 255]),
            },
            literals: [
                "1234.5",
                "'2024-02-29'",
                "'13:45:06.5'",
                "'2024-02-29 13:45:06'",
                "'2024-02-29 13:45:06+02'",
                "'1 day 2 hours'",
                "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'",
                r#"'{"b": 1, "a": [1, 2]}'"#,
                r#"'{"b": 1, "a": [1, 2]}'"#,
            ],
            text: [
                "1",
                "t",
                "12345",
                "-7",
                "9000000000",
                "1.5",
                "2.25",
                "1234.50",
                "it's \"quoted\", with, commas",
                "abc",
                // char(n) pads to its length.
                "ab ",
                "\\x0102ff",
                "2024-02-29",
                "13:45:06.5",
                "2024-02-29 13:45:06",
                "2024-02-29 11:45:06+00",
                "1 day 02:00:00",
                // uuid is lower-cased; json keeps its text, jsonb normalizes key order and spacing.
                "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
                r#"{"b": 1, "a": [1, 2]}"#,
                r#"{"a": [1, 2], "b": 1}"#,
            ],
        },
        Case {
            typed: Typed {
                id: 2,
                b: Some(false),
                i2: Some(i16::MIN),
                i4: Some(i32::MAX),
                i8: Some(i64::MIN),
                f4: Some(-0.25),
                f8: Some(1e16),
                s: Some(""),
                // Ten characters but more bytes: varchar(n) counts characters.
                vc: Some("ünïcødé✓ab".into()),
                c: Some("xyz".into()),
                by: Some(vec![0, b'\'', b'\\']),
            },
            literals: [
                "-99999999.99",
                "'1999-12-31'",
                "'00:00:00'",
                "'2000-01-01 00:00:00'",
                "'1970-01-01 00:00:00+00'",
                "'90 minutes'",
                "'00000000-0000-0000-0000-000000000000'",
                "'[]'",
                r#"'{"k": null, "a": "x"}'"#,
            ],
            text: [
                "2",
                "f",
                "-32768",
                "2147483647",
                "-9223372036854775808",
                "-0.25",
                "1e+16",
                "-99999999.99",
                "",
                "ünïcødé✓ab",
                "xyz",
                "\\x00275c",
                "1999-12-31",
                "00:00:00",
                "2000-01-01 00:00:00",
                "1970-01-01 00:00:00+00",
                "01:30:00",
                "00000000-0000-0000-0000-000000000000",
                "[]",
                r#"{"a": "x", "k": null}"#,
            ],
        },
        Case {
            typed: Typed {
                id: 3,
                b: None,
                i2: None,
                i4: None,
                i8: None,
                f4: None,
                f8: None,
                s: None,
                vc: None,
                c: None,
                by: None,
            },
            literals: ["NULL"; 9],
            text: [
                "3", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL",
                "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL",
            ],
        },
    ]
}

/// Creates `all_types` and inserts [`cases`]: the typed columns through parameters of a prepared INSERT, the others
/// through literals in the same statement.
async fn load_all_types(client: &tokio_postgres::Client) {
    // The expected timestamptz values are in UTC.
    exec(client, "SET TimeZone = 'UTC'").await;
    exec(client, CREATE_ALL_TYPES).await;
    for case in cases() {
        let sql = format!(
            "INSERT INTO all_types ({TYPED_COLUMNS}, n, d, tm, ts, tz, iv, u, j, jb) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, {})",
            case.literals.join(", ")
        );
        let stmt = client.prepare(&sql).await.unwrap_or_else(|e| panic!("{sql}: {}", describe(&e)));
        let t = &case.typed;
        let params: [&(dyn ToSql + Sync); 11] =
            [&t.id, &t.b, &t.i2, &t.i4, &t.i8, &t.f4, &t.f8, &t.s, &t.vc, &t.c, &t.by];
        let inserted = client.execute(&stmt, &params).await.unwrap_or_else(|e| panic!("{sql}: {}", describe(&e)));
        assert_eq!(inserted, 1, "{sql}");
    }
}

#[test]
fn every_type_round_trips_through_parameters_and_both_result_formats() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        load_all_types(&client).await;

        // The row description carries each column's type.
        let star = client.prepare("SELECT * FROM all_types ORDER BY id").await.unwrap();
        let types: Vec<(&str, &Type)> = star.columns().iter().map(|c| (c.name(), c.type_())).collect();
        let expected_types = [
            ("id", &Type::INT4),
            ("b", &Type::BOOL),
            ("i2", &Type::INT2),
            ("i4", &Type::INT4),
            ("i8", &Type::INT8),
            ("f4", &Type::FLOAT4),
            ("f8", &Type::FLOAT8),
            ("n", &Type::NUMERIC),
            ("s", &Type::TEXT),
            ("vc", &Type::VARCHAR),
            ("c", &Type::BPCHAR),
            ("by", &Type::BYTEA),
            ("d", &Type::DATE),
            ("tm", &Type::TIME),
            ("ts", &Type::TIMESTAMP),
            ("tz", &Type::TIMESTAMPTZ),
            ("iv", &Type::INTERVAL),
            ("u", &Type::UUID),
            ("j", &Type::JSON),
            ("jb", &Type::JSONB),
        ];
        assert_eq!(types, expected_types, "column names and types of SELECT *");

        // Binary results (tokio-postgres always asks for them).
        let binary = client
            .query(&format!("SELECT {TYPED_COLUMNS} FROM all_types ORDER BY id"), &[])
            .await
            .unwrap_or_else(|e| panic!("binary SELECT: {}", describe(&e)));
        let cases = cases();
        assert_eq!(binary.len(), cases.len());
        for (row, case) in binary.iter().zip(&cases) {
            let t = &case.typed;
            let id = t.id;
            assert_eq!(row.get::<_, i32>("id"), id);
            assert_eq!(row.get::<_, Option<bool>>("b"), t.b, "b of row {id}");
            assert_eq!(row.get::<_, Option<i16>>("i2"), t.i2, "i2 of row {id}");
            assert_eq!(row.get::<_, Option<i32>>("i4"), t.i4, "i4 of row {id}");
            assert_eq!(row.get::<_, Option<i64>>("i8"), t.i8, "i8 of row {id}");
            assert_eq!(row.get::<_, Option<f32>>("f4"), t.f4, "f4 of row {id}");
            assert_eq!(row.get::<_, Option<f64>>("f8"), t.f8, "f8 of row {id}");
            assert_eq!(row.get::<_, Option<&str>>("s"), t.s, "s of row {id}");
            assert_eq!(row.get::<_, Option<String>>("vc"), t.vc, "vc of row {id}");
            let padded = t.c.as_ref().map(|c| format!("{c:<3}"));
            assert_eq!(row.get::<_, Option<String>>("c"), padded, "c of row {id}");
            assert_eq!(row.get::<_, Option<Vec<u8>>>("by"), t.by, "by of row {id}");
        }

        // Text results over the simple protocol, every column.
        let text = query_text(&client, "SELECT * FROM all_types ORDER BY id").await;
        let expected: Vec<&[&str]> = cases.iter().map(|c| &c.text[..]).collect();
        assert_eq!(text, rows(&expected), "SELECT * in text format");
    });
}

/// `col::text` is a text column whatever `col` was, so a binary result carries it as text; casting char(n) to text
/// drops the padding.
#[test]
fn casts_to_text_are_text_in_binary_results() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        load_all_types(&client).await;
        let sql = "SELECT n::text, c::text, d::text, tm::text, ts::text, tz::text, iv::text, u::text, j::text, \
                   jb::text FROM all_types ORDER BY id";
        let stmt = client.prepare(sql).await.unwrap_or_else(|e| panic!("{sql}: {}", describe(&e)));
        let types: Vec<&Type> = stmt.columns().iter().map(|c| c.type_()).collect();
        assert_eq!(types, [&Type::TEXT; 10], "column types of {sql}");
        let result = client.query(&stmt, &[]).await.unwrap_or_else(|e| panic!("{sql}: {}", describe(&e)));
        for (row, case) in result.iter().zip(&cases()) {
            let got: Vec<Option<&str>> = (0..10).map(|i| row.get::<_, Option<&str>>(i)).collect();
            let mut expected: Vec<&str> = vec![case.text[7], case.text[10].trim_end()];
            expected.extend(&case.text[12..]);
            let expected: Vec<Option<&str>> = expected.iter().map(|v| (*v != "NULL").then_some(*v)).collect();
            assert_eq!(got, expected, "row {}", case.typed.id);
        }
    });
}

/// PostgreSQL's binary numeric: digit count, weight (of the first base-10000 digit), sign, display scale, digits.
fn numeric(weight: i16, negative: bool, dscale: u16, digits: &[u16]) -> Vec<u8> {
    let sign: u16 = if negative { 0x4000 } else { 0 };
    let mut out = Vec::new();
    for field in [digits.len() as u16, weight as u16, sign, dscale].into_iter().chain(digits.iter().copied()) {
        out.extend(field.to_be_bytes());
    }
    out
}

/// Interval: microseconds, days, months.
fn interval(micros: i64, days: i32, months: i32) -> Vec<u8> {
    [&micros.to_be_bytes()[..], &days.to_be_bytes(), &months.to_be_bytes()].concat()
}

fn jsonb(text: &str) -> Vec<u8> {
    // Version 1 of the format is the text after a version byte.
    [&[1u8][..], text.as_bytes()].concat()
}

/// Drivers such as asyncpg, Npgsql and pgjdbc read numeric, date/time, interval, uuid and json in binary too; the
/// bytes must be PostgreSQL's (dates count days and timestamps microseconds from 2000-01-01).
#[test]
fn binary_encodings_of_numeric_datetime_uuid_and_json() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        load_all_types(&client).await;
        let result = client
            .query("SELECT n, d, tm, ts, tz, iv, u, j, jb FROM all_types ORDER BY id", &[])
            .await
            .unwrap_or_else(|e| panic!("binary SELECT: {}", describe(&e)));
        let got: Vec<Vec<Option<Vec<u8>>>> =
            result.iter().map(|row| (0..9).map(|i| row.get::<_, Option<Raw>>(i).map(|r| r.0)).collect()).collect();
        let uuid = [0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11];
        let expected: Vec<Vec<Option<Vec<u8>>>> = vec![
            vec![
                numeric(0, false, 2, &[1234, 5000]),
                8825i32.to_be_bytes().to_vec(),
                49_506_500_000i64.to_be_bytes().to_vec(),
                762_529_506_000_000i64.to_be_bytes().to_vec(),
                // 13:45:06+02 is 11:45:06 UTC.
                762_522_306_000_000i64.to_be_bytes().to_vec(),
                interval(7_200_000_000, 1, 0),
                uuid.to_vec(),
                br#"{"b": 1, "a": [1, 2]}"#.to_vec(),
                jsonb(r#"{"a": [1, 2], "b": 1}"#),
            ]
            .into_iter()
            .map(Some)
            .collect(),
            vec![
                numeric(1, true, 2, &[9999, 9999, 9900]),
                (-1i32).to_be_bytes().to_vec(),
                0i64.to_be_bytes().to_vec(),
                0i64.to_be_bytes().to_vec(),
                (-946_684_800_000_000i64).to_be_bytes().to_vec(),
                interval(5_400_000_000, 0, 0),
                vec![0; 16],
                b"[]".to_vec(),
                jsonb(r#"{"a": "x", "k": null}"#),
            ]
            .into_iter()
            .map(Some)
            .collect(),
            vec![None; 9],
        ];
        let columns = ["n", "d", "tm", "ts", "tz", "iv", "u", "j", "jb"];
        for (r, (got, expected)) in got.iter().zip(&expected).enumerate() {
            for (c, column) in columns.iter().enumerate() {
                assert_eq!(got[c], expected[c], "binary value of {column} in row {}", r + 1);
            }
        }
        assert_eq!(got.len(), expected.len());
    });
}

/// Numerics beyond Decimal128 in binary: an unconstrained numeric's display scale is its value's (no trailing zeros),
/// a wide numeric(p, s)'s is s.
#[test]
fn binary_encodings_of_unconstrained_and_wide_numerics() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        exec(&client, "CREATE TABLE nums (k int PRIMARY KEY, u numeric, w numeric(50,10))").await;
        exec(
            &client,
            "INSERT INTO nums VALUES (1, 0.000000000001, 123456789012345678901234567890.12345), \
             (2, '1.000000000000000000001', 0), (3, -1.50, -1)",
        )
        .await;
        let result = client.query("SELECT u, w FROM nums ORDER BY k", &[]).await.expect("binary SELECT");
        let got: Vec<(Vec<u8>, Vec<u8>)> =
            result.iter().map(|r| (r.get::<_, Raw>(0).0, r.get::<_, Raw>(1).0)).collect();
        let expected = vec![
            (
                numeric(-3, false, 12, &[1]),
                numeric(7, false, 10, &[12, 3456, 7890, 1234, 5678, 9012, 3456, 7890, 1234, 5000]),
            ),
            (numeric(0, false, 21, &[1, 0, 0, 0, 0, 0, 1000]), numeric(0, false, 10, &[])),
            (numeric(0, true, 1, &[1, 5000]), numeric(0, true, 10, &[1])),
        ];
        assert_eq!(got, expected);
    });
}

/// Parameters whose types the client states (Parse with parameter OIDs) and parameters in WHERE, LIMIT and
/// expressions, where the server must infer the type from context.
#[test]
fn parameters_in_expressions_and_explicit_parameter_types() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        exec(&client, "CREATE TABLE kv (k integer PRIMARY KEY, v text)").await;
        exec(&client, "INSERT INTO kv VALUES (1, 'one'), (2, 'two'), (3, 'three')").await;

        let stmt = client
            .prepare_typed("SELECT v FROM kv WHERE k >= $1 ORDER BY k LIMIT $2", &[Type::INT4, Type::INT8])
            .await
            .unwrap_or_else(|e| panic!("prepare_typed: {}", describe(&e)));
        assert_eq!(stmt.params(), [Type::INT4, Type::INT8]);
        let got: Vec<String> = client.query(&stmt, &[&2i32, &5i64]).await.unwrap().iter().map(|r| r.get(0)).collect();
        assert_eq!(got, ["two", "three"]);

        let stmt = client.prepare("SELECT k FROM kv WHERE v = $1").await.unwrap();
        assert_eq!(stmt.params(), [Type::TEXT]);
        let got: Vec<i32> = client.query(&stmt, &[&"two"]).await.unwrap().iter().map(|r| r.get(0)).collect();
        assert_eq!(got, [2]);

        // A NULL parameter compares as NULL: no row matches.
        let stmt = client.prepare("SELECT count(*) FROM kv WHERE v = $1").await.unwrap();
        let row = client.query_one(&stmt, &[&None::<&str>]).await.unwrap();
        assert_eq!(row.get::<_, i64>(0), 0);
    });
}

/// PostgreSQL gives a parameter in an INSERT's VALUES the type of its target column, so a client can bind a value of
/// exactly that type.
#[test]
fn insert_parameters_take_their_column_types() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        exec(&client, CREATE_ALL_TYPES).await;
        let placeholders: Vec<String> = (1..=20).map(|i| format!("${i}")).collect();
        let sql = format!("INSERT INTO all_types VALUES ({})", placeholders.join(", "));
        let stmt = client.prepare(&sql).await.unwrap_or_else(|e| panic!("{sql}: {}", describe(&e)));
        let expected = [
            Type::INT4,
            Type::BOOL,
            Type::INT2,
            Type::INT4,
            Type::INT8,
            Type::FLOAT4,
            Type::FLOAT8,
            Type::NUMERIC,
            Type::TEXT,
            Type::VARCHAR,
            Type::BPCHAR,
            Type::BYTEA,
            Type::DATE,
            Type::TIME,
            Type::TIMESTAMP,
            Type::TIMESTAMPTZ,
            Type::INTERVAL,
            Type::UUID,
            Type::JSON,
            Type::JSONB,
        ];
        assert_eq!(stmt.params(), expected, "parameter types the server inferred for {sql}");
    });
}

/// A cast fixes a parameter's type, as `SELECT $1::bigint` does in PostgreSQL.
#[test]
fn cast_parameters_take_the_cast_type() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        let sql = "SELECT $1::bigint * 2, $2::text || '!', $3::boolean";
        let stmt = client.prepare(sql).await.unwrap_or_else(|e| panic!("{sql}: {}", describe(&e)));
        assert_eq!(stmt.params(), [Type::INT8, Type::TEXT, Type::BOOL], "parameter types of {sql}");
        let row = client.query_one(&stmt, &[&21i64, &"hi", &true]).await.unwrap_or_else(|e| panic!("{}", describe(&e)));
        assert_eq!((row.get::<_, i64>(0), row.get::<_, String>(1), row.get::<_, bool>(2)), (42, "hi!".into(), true));
    });
}

#[test]
fn one_prepared_statement_runs_many_times() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        exec(&client, "CREATE TABLE many (id bigint PRIMARY KEY, label text, score double precision)").await;
        let insert = client.prepare("INSERT INTO many (id, label, score) VALUES ($1, $2, $3)").await.unwrap();
        const N: i64 = 300;
        for id in 0..N {
            let label = format!("label-{id}");
            let score = id as f64 / 4.0;
            let n = client
                .execute(&insert, &[&id, &label, &score])
                .await
                .unwrap_or_else(|e| panic!("execution {id} of the prepared INSERT: {}", describe(&e)));
            assert_eq!(n, 1);
        }
        let lookup = client.prepare("SELECT label, score FROM many WHERE id = $1").await.unwrap();
        for id in (0..N).rev() {
            let row = client
                .query_one(&lookup, &[&id])
                .await
                .unwrap_or_else(|e| panic!("execution {id} of the prepared SELECT: {}", describe(&e)));
            assert_eq!(row.get::<_, String>(0), format!("label-{id}"));
            assert_eq!(row.get::<_, f64>(1), id as f64 / 4.0);
        }
        // As text: sum(bigint) is numeric in PostgreSQL, which tokio-postgres cannot decode without a feature.
        let totals = query_text(&client, "SELECT count(*), sum(id) FROM many").await;
        assert_eq!(totals, rows(&[&[&N.to_string(), &(N * (N - 1) / 2).to_string()]]));
    });
}

/// `query_typed` sends Parse/Bind/Execute on the unnamed statement in one round trip, with no Describe first; each
/// Parse replaces the previous unnamed statement.
#[test]
fn unnamed_statement() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        exec(&client, "CREATE TABLE u (id integer PRIMARY KEY, name text)").await;
        for (id, name) in [(1i32, "a"), (2, "b"), (3, "c")] {
            let n = client
                .execute_typed("INSERT INTO u VALUES ($1, $2)", &[(&id, Type::INT4), (&name, Type::TEXT)])
                .await
                .unwrap_or_else(|e| panic!("unnamed INSERT: {}", describe(&e)));
            assert_eq!(n, 1);
        }
        let got = client
            .query_typed("SELECT name FROM u WHERE id > $1 ORDER BY id", &[(&1i32, Type::INT4)])
            .await
            .unwrap_or_else(|e| panic!("unnamed SELECT: {}", describe(&e)));
        assert_eq!(got.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>(), ["b", "c"]);
        let row = client
            .query_typed("SELECT $1::int8 + $2::int8", &[(&40i64, Type::INT8), (&2i64, Type::INT8)])
            .await
            .unwrap();
        assert_eq!(row[0].get::<_, i64>(0), 42);
    });
}

/// Execute with a row limit suspends the portal; the next Execute continues where it stopped.
#[test]
fn portal_returns_rows_in_batches() {
    let server = Server::start();
    block_on(LIMIT, async {
        let mut client = connect(&server).await;
        exec(&client, "CREATE TABLE p (id integer PRIMARY KEY)").await;
        let values: Vec<String> = (1..=25).map(|i| format!("({i})")).collect();
        exec(&client, &format!("INSERT INTO p VALUES {}", values.join(", "))).await;

        let tx = client.transaction().await.unwrap();
        let stmt = tx.prepare("SELECT id FROM p WHERE id > $1 ORDER BY id").await.unwrap();
        let portal = tx.bind(&stmt, &[&0i32]).await.unwrap_or_else(|e| panic!("bind: {}", describe(&e)));
        let mut batches = Vec::new();
        loop {
            let batch = tx.query_portal(&portal, 10).await.unwrap_or_else(|e| panic!("execute: {}", describe(&e)));
            if batch.is_empty() {
                break;
            }
            batches.push(batch.iter().map(|r| r.get::<_, i32>(0)).collect::<Vec<_>>());
            assert!(batches.len() <= 3, "more batches than rows: {batches:?}");
        }
        tx.commit().await.unwrap();
        let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
        assert_eq!(sizes, [10, 10, 5]);
        assert_eq!(batches.concat(), (1..=25).collect::<Vec<i32>>());
    });
}

#[test]
fn error_inside_a_transaction_aborts_it_until_rollback() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        exec(&client, "CREATE TABLE tx (id integer PRIMARY KEY)").await;

        // Over the extended protocol.
        exec(&client, "BEGIN").await;
        client.execute("INSERT INTO tx VALUES (1)", &[]).await.unwrap();
        let err = client.query("SELECT 1 / 0", &[]).await.expect_err("division by zero must fail");
        assert_eq!(err.code(), Some(&SqlState::DIVISION_BY_ZERO), "{}", describe(&err));
        let err = client.query("SELECT 1", &[]).await.expect_err("the transaction is aborted");
        assert_eq!(err.code(), Some(&SqlState::IN_FAILED_SQL_TRANSACTION), "{}", describe(&err));
        let err = client.execute("INSERT INTO tx VALUES (2)", &[]).await.expect_err("the transaction is aborted");
        assert_eq!(err.code(), Some(&SqlState::IN_FAILED_SQL_TRANSACTION), "{}", describe(&err));
        exec(&client, "ROLLBACK").await;
        assert_eq!(query_text(&client, "SELECT count(*) FROM tx").await, rows(&[&["0"]]));

        // Over the simple protocol, the failing statement being a missing table.
        exec(&client, "BEGIN; INSERT INTO tx VALUES (3)").await;
        let err = client.simple_query("SELECT * FROM no_such_table").await.expect_err("no such table");
        assert_eq!(err.code(), Some(&SqlState::UNDEFINED_TABLE), "{}", describe(&err));
        let err = client.simple_query("SELECT 1").await.expect_err("the transaction is aborted");
        assert_eq!(err.code(), Some(&SqlState::IN_FAILED_SQL_TRANSACTION), "{}", describe(&err));
        exec(&client, "ROLLBACK").await;
        assert_eq!(query_text(&client, "SELECT count(*) FROM tx").await, rows(&[&["0"]]));

        // The session is usable again.
        assert_eq!(client.execute("INSERT INTO tx VALUES (4)", &[]).await.unwrap(), 1);
        assert_eq!(query_text(&client, "SELECT id FROM tx").await, rows(&[&["4"]]));
    });
}

#[test]
fn unique_violation_is_23505() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        exec(
            &client,
            "CREATE TABLE uq (id integer PRIMARY KEY, email text); CREATE UNIQUE INDEX uq_email ON uq (email)",
        )
        .await;
        let insert = client.prepare("INSERT INTO uq VALUES ($1, $2)").await.unwrap();
        client.execute(&insert, &[&1i32, &"a@example.com"]).await.unwrap();

        let err = client.execute(&insert, &[&1i32, &"b@example.com"]).await.expect_err("duplicate primary key");
        assert_eq!(err.code(), Some(&SqlState::UNIQUE_VIOLATION), "{}", describe(&err));
        let err = client.execute(&insert, &[&2i32, &"a@example.com"]).await.expect_err("duplicate unique index key");
        assert_eq!(err.code(), Some(&SqlState::UNIQUE_VIOLATION), "{}", describe(&err));
        // A duplicate within one statement fails the whole statement.
        let err = client
            .execute("INSERT INTO uq VALUES (5, 'x'), (6, 'y'), (5, 'z')", &[])
            .await
            .expect_err("duplicate within one INSERT");
        assert_eq!(err.code(), Some(&SqlState::UNIQUE_VIOLATION), "{}", describe(&err));

        // Nothing from the failed statements was stored, and the connection still works.
        assert_eq!(query_text(&client, "SELECT id, email FROM uq ORDER BY id").await, rows(&[&["1", "a@example.com"]]));
        client.execute(&insert, &[&2i32, &"b@example.com"]).await.unwrap();
    });
}

#[test]
fn execute_reports_row_counts() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        exec(&client, "CREATE TABLE rc (id integer PRIMARY KEY, grp integer)").await;
        let n = client.execute("INSERT INTO rc VALUES (1, 1), (2, 1), (3, 2), (4, 2), (5, 2)", &[]).await.unwrap();
        assert_eq!(n, 5, "INSERT");
        let n = client.execute("UPDATE rc SET grp = grp + 10 WHERE grp = $1", &[&2i32]).await.unwrap();
        assert_eq!(n, 3, "UPDATE");
        let n = client.execute("UPDATE rc SET grp = 0 WHERE id > 100", &[]).await.unwrap();
        assert_eq!(n, 0, "UPDATE matching nothing");
        let n = client.execute("DELETE FROM rc WHERE id <= $1", &[&2i32]).await.unwrap();
        assert_eq!(n, 2, "DELETE");
        // A SELECT's command tag counts the rows it returned.
        let n = client.execute("SELECT * FROM rc", &[]).await.unwrap();
        assert_eq!(n, 3, "SELECT");
        assert_eq!(
            query_text(&client, "SELECT id, grp FROM rc ORDER BY id").await,
            rows(&[&["3", "12"], &["4", "12"], &["5", "12"]])
        );
    });
}

/// A query, the names of its result columns, and its rows.
type NamedCase = (&'static str, &'static [&'static str], Vec<Vec<i64>>);

#[test]
fn result_columns_are_named_as_postgres_names_them() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        client.batch_execute("CREATE TABLE named (id int PRIMARY KEY, v int)").await.unwrap();
        client.batch_execute("INSERT INTO named SELECT g, g * 10 FROM generate_series(1, 2) g").await.unwrap();
        // INSERT … SELECT with the same expression twice.
        let n = client.execute("INSERT INTO named SELECT g, g FROM generate_series(3, 5) AS g", &[]).await.unwrap();
        assert_eq!(n, 3);
        let cases: [NamedCase; 8] = [
            ("SELECT 1 AS a, 2 AS a", &["a", "a"], vec![vec![1, 2]]),
            ("SELECT id, id, named.id FROM named WHERE id = 2", &["id", "id", "id"], vec![vec![2, 2, 2]]),
            (
                "SELECT *, id FROM named WHERE id < 3 ORDER BY id",
                &["id", "v", "id"],
                vec![vec![1, 10, 1], vec![2, 20, 2]],
            ),
            (
                "SELECT *, v + 1 AS w FROM named WHERE id < 3 ORDER BY w DESC",
                &["id", "v", "w"],
                vec![vec![2, 20, 21], vec![1, 10, 11]],
            ),
            ("SELECT v AS id, id FROM named WHERE id = 4", &["id", "id"], vec![vec![4, 4]]),
            ("SELECT g FROM generate_series(1, 3) g ORDER BY g", &["g"], vec![vec![1], vec![2], vec![3]]),
            ("SELECT * FROM generate_series(7, 8)", &["generate_series"], vec![vec![7], vec![8]]),
            ("SELECT u FROM unnest(ARRAY[5, 6]) AS u ORDER BY u", &["u"], vec![vec![5], vec![6]]),
        ];
        for (sql, names, rows) in cases {
            // Extended protocol: the statement's description and its rows.
            let stmt = client.prepare(sql).await.unwrap_or_else(|e| panic!("{sql}: {}", describe(&e)));
            let got: Vec<&str> = stmt.columns().iter().map(|c| c.name()).collect();
            assert_eq!(got, names, "{sql}");
            let result = client.query(&stmt, &[]).await.unwrap();
            let values: Vec<Vec<i64>> = result
                .iter()
                .map(|r| {
                    (0..r.len())
                        .map(|i| match r.columns()[i].type_() {
                            &Type::INT4 => r.get::<_, i32>(i) as i64,
                            _ => r.get::<_, i64>(i),
                        })
                        .collect()
                })
                .collect();
            assert_eq!(values, rows, "{sql}");
            // Simple protocol: the row description it sends.
            let messages = client.simple_query(sql).await.unwrap();
            let described = messages.iter().find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::RowDescription(cols) => {
                    Some(cols.iter().map(|c| c.name().to_string()).collect::<Vec<_>>())
                }
                _ => None,
            });
            assert_eq!(
                described.as_deref(),
                Some(&names.iter().map(|n| n.to_string()).collect::<Vec<_>>()[..]),
                "{sql}"
            );
        }
        client.batch_execute("DROP TABLE named").await.unwrap();
    });
}
