//! Hostile and broken clients: raw bytes on the socket, broken protocol messages and random SQL. Whatever a client
//! sends, the server must keep running and keep serving everyone else; a broken session may be closed, but must
//! never hang.
//!
//! The random inputs come from a seeded generator. The seed is printed; `TESSERA_FUZZ_SEED=<n>` replays a run.

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use tokio_postgres::SimpleQueryMessage;
use tokio_postgres::error::SqlState;

use crate::client::{assert_serves, block_on, connect, describe, exec, query_text, rows};
use crate::harness::Server;

const LIMIT: Duration = Duration::from_secs(120);
/// How long a raw session may take to answer and close once the client has stopped sending.
const RAW_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_SEED: u64 = 0x7e55_e4a5_eed0_0001;
const PROTOCOL_3_0: i32 = 196_608;

/// SplitMix64: a few lines, and the same sequence for a seed on every platform and every version of every crate.
struct Rng(u64);

impl Rng {
    fn from_env(what: &str) -> Rng {
        let seed = match std::env::var("TESSERA_FUZZ_SEED") {
            Ok(s) => s.parse().unwrap_or_else(|_| panic!("TESSERA_FUZZ_SEED={s:?} is not a u64")),
            Err(_) => DEFAULT_SEED,
        };
        // Printed so that a failure can be replayed; the test harness shows it with the failure.
        println!("{what}: seed {seed} (replay with TESSERA_FUZZ_SEED={seed})");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// The startup message for protocol 3.0 as user `tessera` on database `tessera`.
fn startup_message() -> Vec<u8> {
    let mut body = PROTOCOL_3_0.to_be_bytes().to_vec();
    for s in ["user", "tessera", "database", "tessera"] {
        body.extend(s.as_bytes());
        body.push(0);
    }
    body.push(0);
    with_length(None, &body)
}

/// A protocol message: the type byte (none for startup-phase messages), the length (which counts itself) and `body`.
fn with_length(tag: Option<u8>, body: &[u8]) -> Vec<u8> {
    let mut message: Vec<u8> = tag.into_iter().collect();
    message.extend((body.len() as i32 + 4).to_be_bytes());
    message.extend(body);
    message
}

/// A message whose length field says `declared` whatever the body really is.
fn with_declared_length(tag: Option<u8>, declared: i32, body: &[u8]) -> Vec<u8> {
    let mut message: Vec<u8> = tag.into_iter().collect();
    message.extend(declared.to_be_bytes());
    message.extend(body);
    message
}

/// A simple Query message for `sql`.
fn query_message(sql: &[u8]) -> Vec<u8> {
    let mut body = sql.to_vec();
    body.push(0);
    with_length(Some(b'Q'), &body)
}

/// What the server sent back to a raw session.
struct Reply {
    bytes: Vec<u8>,
    /// The server closed the connection (EOF or reset) rather than leaving it open.
    closed: bool,
}

impl Reply {
    /// The type bytes of the complete backend messages at the start of the reply (only valid after startup, where
    /// every message has a type byte).
    fn message_types(&self) -> String {
        let mut types = String::new();
        let mut rest = &self.bytes[..];
        while rest.len() >= 5 {
            let len = i32::from_be_bytes(rest[1..5].try_into().unwrap());
            if len < 4 || rest.len() < 1 + len as usize {
                break;
            }
            types.push(rest[0] as char);
            rest = &rest[1 + len as usize..];
        }
        types
    }
}

/// Sends `input` on a fresh connection, half-closes it (so the server sees EOF wherever it is in a message), and
/// collects whatever comes back until the server closes the connection or `RAW_TIMEOUT` passes.
fn raw_session(server: &Server, input: &[u8]) -> Reply {
    finish_raw_session(open_raw(server), input)
}

fn open_raw(server: &Server) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connecting a raw socket");
    stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    stream.set_write_timeout(Some(RAW_TIMEOUT)).unwrap();
    stream
}

/// Sends `input` on `stream`, half-closes it and collects the reply as `raw_session` does.
fn finish_raw_session(mut stream: TcpStream, input: &[u8]) -> Reply {
    // The server may close the connection before it has read everything; a failed write is part of the game.
    let _ = stream.write_all(input);
    let _ = stream.shutdown(Shutdown::Write);
    let mut reply = Reply { bytes: Vec::new(), closed: false };
    let deadline = Instant::now() + RAW_TIMEOUT;
    let mut buf = [0u8; 8192];
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => {
                reply.closed = true;
                break;
            }
            Ok(n) => reply.bytes.extend(&buf[..n]),
            Err(e) if is_timeout(&e) => {}
            Err(_) => {
                reply.closed = true;
                break;
            }
        }
    }
    reply
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted)
}

/// Sends `input`, then checks that the server closed that session, that the process still runs, and that a new
/// client can connect and query.
fn survives(server: &mut Server, what: &str, input: &[u8]) -> Reply {
    let reply = raw_session(server, input);
    assert!(
        reply.closed,
        "{what}: the server kept the connection open for {RAW_TIMEOUT:?} after the client's EOF (sent {} bytes)",
        input.len()
    );
    server.assert_running();
    block_on(LIMIT, assert_serves(server));
    reply
}

#[test]
fn random_bytes_instead_of_a_startup_message() {
    let mut server = Server::start();
    let mut rng = Rng::from_env("random_bytes_instead_of_a_startup_message");
    for round in 0..20 {
        let len = *rng.pick(&[1, 3, 4, 7, 8, 9, 64, 1000, 4096]);
        let input = rng.bytes(len);
        survives(&mut server, &format!("round {round}: {len} random bytes"), &input);
    }
}

#[test]
fn truncated_startup_messages() {
    let mut server = Server::start();
    let startup = startup_message();
    for cut in [1, 3, 4, 5, 7, 8, 12, startup.len() - 1] {
        survives(&mut server, &format!("the first {cut} bytes of a startup message"), &startup[..cut]);
    }
}

#[test]
fn startup_message_followed_by_garbage() {
    let mut server = Server::start();
    let mut rng = Rng::from_env("startup_message_followed_by_garbage");
    for round in 0..10 {
        let mut input = startup_message();
        let len = 1 + rng.below(2000);
        input.extend(rng.bytes(len));
        let reply = survives(&mut server, &format!("round {round}: startup then garbage"), &input);
        // The startup itself was valid, so the server must have accepted it before choking on what followed.
        assert_eq!(reply.bytes.first(), Some(&b'R'), "round {round}: the reply does not start with authentication");
    }
}

#[test]
fn messages_with_absurd_declared_lengths() {
    let mut server = Server::start();
    let startup = startup_message();
    for declared in [i32::MAX, 0x4000_0000, 100_000_000, -1, i32::MIN, 0, 3] {
        let input = with_declared_length(None, declared, &PROTOCOL_3_0.to_be_bytes());
        survives(&mut server, &format!("a startup message declaring {declared} bytes"), &input);

        let mut input = startup.clone();
        input.extend(with_declared_length(Some(b'Q'), declared, b"SELECT 1\0"));
        survives(&mut server, &format!("a Query message declaring {declared} bytes"), &input);
    }
}

#[test]
fn malformed_messages_after_a_valid_startup() {
    let mut server = Server::start();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("a Query without its NUL terminator", with_length(Some(b'Q'), b"SELECT 1")),
        ("an empty Query body", with_length(Some(b'Q'), b"")),
        ("a Query that is not UTF-8", query_message(b"SELECT '\xff\xfe\xc3'")),
        ("a Query with bytes after its terminator", with_length(Some(b'Q'), b"SELECT 1\0SELECT 2\0")),
        ("an unknown message type", with_length(Some(b'z'), b"hello")),
        ("a Parse claiming 1000 parameter types", with_length(Some(b'P'), b"\0SELECT $1\0\x03\xe8\0\0\0\x17")),
        ("a Bind for a statement that does not exist", with_length(Some(b'B'), b"\0nope\0\0\0\0\0\0\0")),
        ("a Bind with a negative parameter count", with_length(Some(b'B'), b"\0\0\0\0\xff\xff\0\0")),
        ("an Execute of a portal that does not exist", with_length(Some(b'E'), b"nope\0\0\0\0\0")),
        ("a Describe of an unknown kind", with_length(Some(b'D'), b"Xname\0")),
        ("a CopyData outside COPY", with_length(Some(b'd'), b"1\t2\n")),
        ("a Sync with a body", with_length(Some(b'S'), b"extra")),
    ];
    for (what, message) in cases {
        let mut input = startup_message();
        input.extend(&message);
        // The server may answer with an error and carry on, or close the session: both are fine.
        let reply = survives(&mut server, what, &input);
        assert_eq!(reply.bytes.first(), Some(&b'R'), "{what}: the reply does not start with authentication");
    }

    // A well-formed session over the same raw socket code gets a complete answer, so the checks above are not
    // vacuous: row description, data row, command complete and ready for query, then the server closes on EOF.
    let mut input = startup_message();
    input.extend(query_message(b"SELECT 1"));
    input.extend(with_length(Some(b'X'), b""));
    let reply = survives(&mut server, "a valid session", &input);
    let types = reply.message_types();
    assert!(types.ends_with("TDCZ"), "a valid session's replies were {types:?}");
}

#[test]
fn ssl_gssenc_and_cancel_requests() {
    let mut server = Server::start();
    let ssl = with_length(None, &80_877_103i32.to_be_bytes());
    let gssenc = with_length(None, &80_877_104i32.to_be_bytes());
    let mut cancel_body = 80_877_102i32.to_be_bytes().to_vec();
    cancel_body.extend(12345i32.to_be_bytes());
    cancel_body.extend(67890i32.to_be_bytes());
    let cancel = with_length(None, &cancel_body);

    // Tessera offers neither TLS nor GSSAPI encryption, so it refuses both with the one byte `N`; the client may
    // then start in plain text on the same connection.
    for (what, request) in [("SSLRequest", &ssl), ("GSSENCRequest", &gssenc)] {
        let reply = survives(&mut server, what, request);
        assert_eq!(reply.bytes.first(), Some(&b'N'), "{what} got {:?}", reply.bytes);

        // As a client does: wait for the answer before going on (PostgreSQL refuses data sent ahead of it).
        let mut stream = open_raw(&server);
        stream.write_all(request).unwrap();
        let deadline = Instant::now() + RAW_TIMEOUT;
        let mut answer = [0u8; 1];
        let answer = loop {
            match stream.read(&mut answer) {
                Ok(1) => break answer[0],
                Ok(_) => panic!("{what}: the server closed the connection instead of answering"),
                Err(e) if is_timeout(&e) && Instant::now() < deadline => {}
                Err(e) => panic!("{what}: no answer: {e}"),
            }
        };
        assert_eq!(answer, b'N', "{what}: the server does not refuse encryption it cannot do");
        let input = [startup_message(), query_message(b"SELECT 1")].concat();
        let reply = finish_raw_session(stream, &input);
        assert!(reply.closed, "{what} then a session: the server kept the connection open after the client's EOF");
        let types = reply.message_types();
        assert!(types.contains("TDCZ"), "{what} then a session: the replies were {types:?}");
    }
    // A cancel request for a session that does not exist is ignored, and the connection closed.
    survives(&mut server, "a CancelRequest for no session", &cancel);
    survives(&mut server, "a CancelRequest followed by garbage", &[cancel, b"garbage".to_vec()].concat());
}

/// Random statements over the simple protocol on one session: each must succeed or fail with a server error
/// (SQLSTATE), never break the session.
#[test]
fn random_sql_never_breaks_the_session() {
    let mut server = Server::start();
    let mut rng = Rng::from_env("random_sql_never_breaks_the_session");
    let statements: Vec<String> = (0..200).map(|_| random_statement(&mut rng)).collect();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        exec(
            &client,
            "CREATE TABLE t (a integer PRIMARY KEY, b text, c double precision);
             CREATE TABLE u (a integer, b text, c double precision);
             INSERT INTO t VALUES (1, 'one', 1.5), (2, 'two', NULL), (3, NULL, -2);
             INSERT INTO u VALUES (1, 'x', 0), (NULL, 'y', NULL), (3, 'one', 2)",
        )
        .await;
        let mut ok = 0;
        let mut failures: BTreeMap<String, usize> = BTreeMap::new();
        for (i, sql) in statements.iter().enumerate() {
            let outcome = tokio::time::timeout(Duration::from_secs(20), client.simple_query(sql)).await;
            match outcome {
                Err(_) => panic!("statement {i} did not finish within 20 s: {sql}"),
                Ok(Ok(_)) => ok += 1,
                Ok(Err(e)) => match e.as_db_error() {
                    Some(db) => {
                        println!("{}: {sql}\n    {}", db.code().code(), db.message());
                        *failures.entry(db.code().code().to_string()).or_default() += 1;
                        // A random BEGIN followed by an error leaves the session refusing everything but ROLLBACK;
                        // ending that transaction keeps the remaining statements meaningful.
                        if db.code() == &SqlState::IN_FAILED_SQL_TRANSACTION {
                            exec(&client, "ROLLBACK").await;
                        }
                    }
                    None => panic!("statement {i} broke the session: {sql}\n{}", describe(&e)),
                },
            }
        }
        println!("{ok} statements succeeded; server errors by SQLSTATE: {failures:?}");
        // A random BEGIN may have left a transaction open, possibly failed; ROLLBACK ends either.
        let messages = client.simple_query("ROLLBACK").await.unwrap_or_else(|e| panic!("ROLLBACK: {}", describe(&e)));
        assert!(messages.iter().any(|m| matches!(m, SimpleQueryMessage::CommandComplete(_))));
        assert_eq!(query_text(&client, "SELECT 1").await, rows(&[&["1"]]));
    });
    server.assert_running();
    block_on(LIMIT, assert_serves(&server));
}

/// Half the statements follow a statement shape with mostly well-typed random expressions (so that they get past
/// the parser and the type checks and exercise planning and execution), half are token soup (exercising the parser
/// and the error paths).
fn random_statement(rng: &mut Rng) -> String {
    if rng.below(2) == 1 {
        return token_soup(rng);
    }
    let table = *rng.pick(&["t", "u"]);
    let int = random_expr(rng, Kind::Int, 2);
    let text = random_expr(rng, Kind::Text, 2);
    let cond = random_expr(rng, Kind::Bool, 2);
    match rng.below(13) {
        0 => format!("SELECT {int}, {text} FROM {table} WHERE {cond}"),
        1 => format!(
            "SELECT t.b, count(*), sum(s.ua) FROM t JOIN (SELECT a AS ua, b AS ub FROM u) s ON t.a = s.ua \
             WHERE {cond} GROUP BY t.b ORDER BY 1 LIMIT {}",
            rng.below(5)
        ),
        2 => format!("INSERT INTO {table} (a, b, c) VALUES ({int}, {text}, {})", random_expr(rng, Kind::Int, 1)),
        3 => format!("UPDATE {table} SET b = {text}, c = {int} WHERE {cond}"),
        4 => format!("DELETE FROM {table} WHERE {cond}"),
        5 => format!("SELECT count(*), sum({int}), max({text}) FROM {table} WHERE {cond}"),
        6 => format!("SELECT CASE WHEN {cond} THEN {text} ELSE NULL END FROM {table} ORDER BY 1"),
        7 => format!("SELECT * FROM {table} WHERE a IN (SELECT {int} FROM u) OR {cond}"),
        8 => format!("SELECT {int}, row_number() OVER (ORDER BY {int}) FROM {table}"),
        9 => format!("SELECT DISTINCT b FROM t UNION SELECT {text} FROM u ORDER BY 1 LIMIT {}", rng.below(4)),
        10 => format!("EXPLAIN SELECT {int} FROM {table} WHERE {cond}"),
        11 => format!("SELECT {text} FROM {table} GROUP BY {text} HAVING count(*) > {}", rng.below(3)),
        _ => rng.pick(&["BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT s", "ROLLBACK TO SAVEPOINT s"]).to_string(),
    }
}

fn token_soup(rng: &mut Rng) -> String {
    const TOKENS: &[&str] = &[
        "SELECT",
        "FROM",
        "WHERE",
        "INSERT",
        "INTO",
        "VALUES",
        "UPDATE",
        "SET",
        "DELETE",
        "CREATE",
        "TABLE",
        "INDEX",
        "ON",
        "DROP",
        "AND",
        "OR",
        "NOT",
        "NULL",
        "IS",
        "IN",
        "AS",
        "CAST",
        "JOIN",
        "LEFT",
        "GROUP",
        "BY",
        "ORDER",
        "LIMIT",
        "OFFSET",
        "HAVING",
        "DISTINCT",
        "UNION",
        "ALL",
        "CASE",
        "WHEN",
        "THEN",
        "ELSE",
        "END",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "SAVEPOINT",
        "EXPLAIN",
        "WITH",
        "EXISTS",
        "BETWEEN",
        "LIKE",
        "PRIMARY",
        "KEY",
        "int",
        "text",
        "bigint",
        "numeric(3,1)",
        "date",
        "boolean",
        "jsonb",
        "t",
        "u",
        "a",
        "b",
        "c",
        "t.a",
        "count(*)",
        "sum(a)",
        "max(b)",
        "0",
        "1",
        "-1",
        "42",
        "2147483648",
        "1.5",
        "1e308",
        "'x'",
        "''",
        "'it''s'",
        "'2024-01-01'",
        "'{\"k\": 1}'",
        "E'\\\\x00'",
        "$1",
        "$$dollar$$",
    ];
    const PUNCTUATION: &[&str] = &[
        "(", ")", ",", ";", "*", "+", "-", "/", "%", "=", "<", ">", "<>", "<=", ">=", "||", "::", ".", "[", "]", "'",
        "\"", "--", "/*", "*/", "\\", "?", "@", "#", "!", "~", "^", "&", "|", "{", "}", "$",
    ];
    let n = 1 + rng.below(15);
    let mut sql = Vec::with_capacity(n);
    for _ in 0..n {
        sql.push(if rng.below(3) == 0 { *rng.pick(PUNCTUATION) } else { *rng.pick(TOKENS) });
    }
    sql.join(if rng.below(4) == 0 { "" } else { " " })
}

#[derive(Clone, Copy)]
enum Kind {
    Int,
    Text,
    Bool,
}

/// An expression over the columns `a integer, b text, c double precision` of `kind`; one in ten subexpressions is
/// a value of some other type, so type errors and odd coercions come up too.
fn random_expr(rng: &mut Rng, kind: Kind, depth: usize) -> String {
    const WILD: &[&str] = &[
        "'2024-02-29'::date",
        "'1 day'::interval",
        "'{\"k\": [1]}'::jsonb",
        "9223372036854775807",
        "1e300",
        "1.5",
        "NULL",
        "'\\x00ff'::bytea",
        "now()",
        "c",
    ];
    if rng.below(10) == 0 {
        return rng.pick(WILD).to_string();
    }
    let leaf = depth == 0 || rng.below(3) == 0;
    let sub = |rng: &mut Rng, kind| random_expr(rng, kind, depth.saturating_sub(1));
    match kind {
        Kind::Int if leaf => rng.pick(&["a", "1", "0", "-7", "2147483647", "NULL", "length(b)"]).to_string(),
        Kind::Int => match rng.below(6) {
            0 | 1 => {
                format!("({} {} {})", sub(rng, Kind::Int), rng.pick(&["+", "-", "*", "/", "%"]), sub(rng, Kind::Int))
            }
            2 => format!("abs({})", sub(rng, Kind::Int)),
            3 => format!("CAST({} AS integer)", sub(rng, Kind::Text)),
            4 => format!("coalesce({}, {})", sub(rng, Kind::Int), sub(rng, Kind::Int)),
            _ => format!(
                "CASE WHEN {} THEN {} ELSE {} END",
                sub(rng, Kind::Bool),
                sub(rng, Kind::Int),
                sub(rng, Kind::Int)
            ),
        },
        Kind::Text if leaf => rng.pick(&["b", "'x'", "''", "'it''s'", "'one'", "NULL"]).to_string(),
        Kind::Text => match rng.below(5) {
            0 => format!("({} || {})", sub(rng, Kind::Text), sub(rng, Kind::Text)),
            1 => format!("{}({})", rng.pick(&["upper", "lower", "trim"]), sub(rng, Kind::Text)),
            2 => format!("CAST({} AS text)", sub(rng, Kind::Int)),
            3 => format!("substr({}, {})", sub(rng, Kind::Text), sub(rng, Kind::Int)),
            _ => format!("coalesce({}, 'z')", sub(rng, Kind::Text)),
        },
        Kind::Bool if leaf => rng.pick(&["true", "false", "NULL", "a > 1", "b IS NULL", "c < 0"]).to_string(),
        Kind::Bool => match rng.below(7) {
            0 => format!("({} {} {})", sub(rng, Kind::Int), rng.pick(&["=", "<>", "<", ">="]), sub(rng, Kind::Int)),
            1 => format!("({} {} {})", sub(rng, Kind::Text), rng.pick(&["=", "<", "LIKE"]), sub(rng, Kind::Text)),
            2 => format!("({} {} {})", sub(rng, Kind::Bool), rng.pick(&["AND", "OR"]), sub(rng, Kind::Bool)),
            3 => format!("NOT {}", sub(rng, Kind::Bool)),
            4 => format!("{} IS NULL", sub(rng, Kind::Int)),
            5 => format!("{} BETWEEN {} AND {}", sub(rng, Kind::Int), sub(rng, Kind::Int), sub(rng, Kind::Int)),
            _ => format!("a IN ({}, {}, 3)", sub(rng, Kind::Int), sub(rng, Kind::Int)),
        },
    }
}
