//! Prepared reads on the raw extended protocol: the message sequences drivers send for a prepared SELECT (Bind,
//! Describe portal, Execute, Sync), and the ones they send less often around it (Describe statement, Close, a row
//! limit, a second Execute, an error before Sync), each answered as PostgreSQL answers it. The server serves the
//! common sequence on a shorter path than the rest; these tests pin down that both paths agree at every point where
//! a client can switch from one to the other.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::client::{block_on, connect, exec};
use crate::harness::Server;

const LIMIT: Duration = Duration::from_secs(60);
const PROTOCOL_3_0: i32 = 196_608;

/// A backend message: its type byte and body.
struct Message {
    kind: u8,
    body: Vec<u8>,
}

/// A raw protocol-3 session, logged in as `tessera`.
struct Raw {
    stream: TcpStream,
}

fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend((body.len() as i32 + 4).to_be_bytes());
    m.extend(body);
    m
}

fn cstr(out: &mut Vec<u8>, s: &str) {
    out.extend(s.as_bytes());
    out.push(0);
}

fn parse(statement: &str, sql: &str) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, statement);
    cstr(&mut body, sql);
    body.extend(0i16.to_be_bytes());
    message(b'P', &body)
}

/// Bind with text parameters and one result format code for all columns.
fn bind(portal: &str, statement: &str, params: &[&str], binary_results: bool) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, portal);
    cstr(&mut body, statement);
    body.extend(0i16.to_be_bytes());
    body.extend((params.len() as i16).to_be_bytes());
    for p in params {
        body.extend((p.len() as i32).to_be_bytes());
        body.extend(p.as_bytes());
    }
    body.extend(1i16.to_be_bytes());
    body.extend((binary_results as i16).to_be_bytes());
    message(b'B', &body)
}

fn describe(kind: u8, name: &str) -> Vec<u8> {
    let mut body = vec![kind];
    cstr(&mut body, name);
    message(b'D', &body)
}

fn execute(portal: &str, max_rows: i32) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, portal);
    body.extend(max_rows.to_be_bytes());
    message(b'E', &body)
}

fn close(kind: u8, name: &str) -> Vec<u8> {
    let mut body = vec![kind];
    cstr(&mut body, name);
    message(b'C', &body)
}

fn sync() -> Vec<u8> {
    message(b'S', &[])
}

fn query(sql: &str) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, sql);
    message(b'Q', &body)
}

impl Raw {
    fn connect(server: &Server) -> Raw {
        let stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connecting a raw socket");
        stream.set_read_timeout(Some(LIMIT)).unwrap();
        let mut body = PROTOCOL_3_0.to_be_bytes().to_vec();
        for s in ["user", "tessera", "database", "tessera"] {
            cstr(&mut body, s);
        }
        body.push(0);
        let mut startup = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        startup.extend(body);
        let mut raw = Raw { stream };
        raw.stream.write_all(&startup).unwrap();
        let login = raw.until_ready();
        assert_eq!(login.last().map(|m| m.kind), Some(b'Z'), "login did not end in ReadyForQuery");
        raw
    }

    /// Sends `messages` and reads the replies up to and including ReadyForQuery.
    fn round(&mut self, messages: &[Vec<u8>]) -> Vec<Message> {
        self.stream.write_all(&messages.concat()).unwrap();
        self.until_ready()
    }

    fn until_ready(&mut self) -> Vec<Message> {
        let mut out = Vec::new();
        loop {
            let mut head = [0u8; 5];
            self.stream.read_exact(&mut head).expect("reading a backend message");
            let len = i32::from_be_bytes(head[1..5].try_into().unwrap()) as usize;
            let mut body = vec![0u8; len - 4];
            self.stream.read_exact(&mut body).unwrap();
            let done = head[0] == b'Z';
            out.push(Message { kind: head[0], body });
            if done {
                return out;
            }
        }
    }
}

/// The type bytes of `reply`, e.g. "2TDCZ".
fn kinds(reply: &[Message]) -> String {
    reply.iter().map(|m| m.kind as char).collect()
}

/// The text of each column of each DataRow in `reply` (NULL as "NULL").
fn data(reply: &[Message]) -> Vec<Vec<String>> {
    reply
        .iter()
        .filter(|m| m.kind == b'D')
        .map(|m| {
            let n = i16::from_be_bytes(m.body[0..2].try_into().unwrap()) as usize;
            let mut at = 2;
            (0..n)
                .map(|_| {
                    let len = i32::from_be_bytes(m.body[at..at + 4].try_into().unwrap());
                    at += 4;
                    if len < 0 {
                        return "NULL".to_string();
                    }
                    let v = String::from_utf8_lossy(&m.body[at..at + len as usize]).into_owned();
                    at += len as usize;
                    v
                })
                .collect()
        })
        .collect()
}

/// The transaction status byte of the final ReadyForQuery.
fn status(reply: &[Message]) -> char {
    let z = reply.last().expect("a reply");
    assert_eq!(z.kind, b'Z');
    z.body[0] as char
}

/// The SQLSTATE of the first ErrorResponse in `reply`.
fn sqlstate(reply: &[Message]) -> String {
    let e = reply.iter().find(|m| m.kind == b'E').expect("an ErrorResponse");
    let mut fields = e.body.split(|b| *b == 0);
    fields
        .find_map(|f| f.strip_prefix(b"C").map(|c| String::from_utf8_lossy(c).into_owned()))
        .expect("an ErrorResponse carries a SQLSTATE")
}

/// The command tag of each CommandComplete in `reply`.
fn tags(reply: &[Message]) -> Vec<String> {
    reply
        .iter()
        .filter(|m| m.kind == b'C')
        .map(|m| String::from_utf8_lossy(&m.body[..m.body.len() - 1]).into_owned())
        .collect()
}

/// A server with `kv(k int primary key, v text)` holding 1 → one, 2 → two, 3 → NULL, and a raw session that has
/// prepared `get` as a point read on it.
fn setup() -> (Server, Raw) {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        exec(&client, "CREATE TABLE kv (k int PRIMARY KEY, v text)").await;
        exec(&client, "INSERT INTO kv VALUES (1, 'one'), (2, 'two'), (3, NULL)").await;
    });
    let mut raw = Raw::connect(&server);
    let reply = raw.round(&[parse("get", "SELECT k, v FROM kv WHERE k = $1"), sync()]);
    assert_eq!(kinds(&reply), "1Z");
    (server, raw)
}

#[test]
fn the_driver_sequence_runs_again_and_again() {
    let (_server, mut raw) = setup();
    for (k, v) in [("1", "one"), ("2", "two"), ("3", "NULL"), ("1", "one")] {
        let reply = raw.round(&[bind("", "get", &[k], false), describe(b'P', ""), execute("", 0), sync()]);
        assert_eq!(kinds(&reply), "2TDCZ", "key {k}");
        assert_eq!(data(&reply), vec![vec![k.to_string(), v.to_string()]]);
        assert_eq!(tags(&reply), ["SELECT 1"]);
        assert_eq!(status(&reply), 'I');
    }
    // A key with no row: no DataRow, "SELECT 0".
    let reply = raw.round(&[bind("", "get", &["9"], false), describe(b'P', ""), execute("", 0), sync()]);
    assert_eq!(kinds(&reply), "2TCZ");
    assert_eq!(tags(&reply), ["SELECT 0"]);
    // Without Describe, with binary results (tokio-postgres's sequence): the int4 arrives as four bytes.
    let reply = raw.round(&[bind("", "get", &["2"], true), execute("", 0), sync()]);
    assert_eq!(kinds(&reply), "2DCZ");
    let row = reply.iter().find(|m| m.kind == b'D').unwrap();
    assert_eq!(&row.body[2..10], &[0, 0, 0, 4, 0, 0, 0, 2]);
    // Several portals' worth in one round trip, as a pipelining driver sends them.
    let mut batch = Vec::new();
    for k in ["1", "2", "3"] {
        batch.extend([bind("", "get", &[k], false), execute("", 0)]);
    }
    batch.push(sync());
    let reply = raw.round(&batch);
    assert_eq!(kinds(&reply), "2DC2DC2DCZ");
    assert_eq!(data(&reply).len(), 3);
}

#[test]
fn the_row_description_matches_the_statements() {
    let (_server, mut raw) = setup();
    // Describe the statement, then the portal: the same columns.
    let reply = raw.round(&[describe(b'S', "get"), bind("", "get", &["1"], false), describe(b'P', ""), sync()]);
    assert_eq!(kinds(&reply), "tT2TZ");
    let descriptions: Vec<&Vec<u8>> = reply.iter().filter(|m| m.kind == b'T').map(|m| &m.body).collect();
    assert_eq!(descriptions[0], descriptions[1]);
    // Describe statement after Bind (the portal passes to the general path), then Execute.
    let reply = raw.round(&[bind("", "get", &["2"], false), describe(b'S', "get"), execute("", 0), sync()]);
    assert_eq!(kinds(&reply), "2tTDCZ");
    assert_eq!(data(&reply), vec![vec!["2".to_string(), "two".to_string()]]);
}

#[test]
fn a_row_limit_a_second_execute_and_close_behave_as_on_any_portal() {
    let (_server, mut raw) = setup();
    // A row limit larger than the result runs the portal to completion.
    let reply = raw.round(&[bind("", "get", &["1"], false), execute("", 5), sync()]);
    assert_eq!(kinds(&reply), "2DCZ");
    assert_eq!(data(&reply), vec![vec!["1".to_string(), "one".to_string()]]);
    // Executing a finished portal again returns no more rows.
    let reply = raw.round(&[bind("", "get", &["1"], false), execute("", 0), execute("", 0), sync()]);
    assert_eq!(data(&reply).len(), 1, "{}", kinds(&reply));
    assert!(kinds(&reply).starts_with("2DC") && kinds(&reply).ends_with('Z'), "{}", kinds(&reply));
    // A closed portal is gone.
    let reply = raw.round(&[bind("", "get", &["1"], false), close(b'P', ""), execute("", 0), sync()]);
    assert_eq!(&kinds(&reply)[..2], "23");
    assert_eq!(sqlstate(&reply), "34000");
    // A named portal works too, and leaves the unnamed one alone.
    let reply = raw.round(&[
        bind("", "get", &["1"], false),
        bind("p", "get", &["2"], false),
        execute("p", 0),
        execute("", 0),
        sync(),
    ]);
    assert_eq!(kinds(&reply), "22DCDCZ");
    assert_eq!(data(&reply), vec![vec!["2".to_string(), "two".to_string()], vec!["1".to_string(), "one".to_string()]]);
    // After Sync, the unnamed portal is gone.
    let reply = raw.round(&[execute("", 0), sync()]);
    assert_eq!(sqlstate(&reply), "34000");
}

#[test]
fn an_error_skips_to_sync_and_the_session_goes_on() {
    let (_server, mut raw) = setup();
    // A parameter that is not an integer: the error, nothing until Sync, then ReadyForQuery.
    let reply = raw.round(&[bind("", "get", &["x"], false), execute("", 0), describe(b'P', ""), sync()]);
    assert_eq!(kinds(&reply).chars().filter(|c| *c == 'E').count(), 1, "{}", kinds(&reply));
    assert!(kinds(&reply).ends_with("EZ"), "{}", kinds(&reply));
    assert_eq!(sqlstate(&reply), "22P02");
    assert_eq!(status(&reply), 'I');
    let reply = raw.round(&[bind("", "get", &["1"], false), describe(b'P', ""), execute("", 0), sync()]);
    assert_eq!(kinds(&reply), "2TDCZ");
    // The wrong number of parameters.
    let reply = raw.round(&[bind("", "get", &[], false), execute("", 0), sync()]);
    assert_eq!(sqlstate(&reply), "08P01");
    assert!(kinds(&reply).ends_with("EZ"));
    let reply = raw.round(&[bind("", "get", &["3"], false), execute("", 0), sync()]);
    assert_eq!(kinds(&reply), "2DCZ");
}

#[test]
fn inside_a_transaction_reads_see_its_writes_and_report_its_state() {
    let (_server, mut raw) = setup();
    let reply = raw.round(&[query("BEGIN; UPDATE kv SET v = 'uno' WHERE k = 1")]);
    assert_eq!(status(&reply), 'T');
    let reply = raw.round(&[bind("", "get", &["1"], false), execute("", 0), sync()]);
    assert_eq!(data(&reply), vec![vec!["1".to_string(), "uno".to_string()]]);
    assert_eq!(status(&reply), 'T');
    // An error in the transaction fails it; reads are refused until ROLLBACK.
    let reply = raw.round(&[bind("", "get", &["x"], false), execute("", 0), sync()]);
    assert_eq!(status(&reply), 'E');
    let reply = raw.round(&[bind("", "get", &["1"], false), execute("", 0), sync()]);
    assert_eq!(sqlstate(&reply), "25P02");
    assert_eq!(status(&reply), 'E');
    // As in PostgreSQL, the aborted block is reported before parameters
    // are looked at: a bad one gets 25P02 too, not 22P02.
    let reply = raw.round(&[bind("", "get", &["x"], false), execute("", 0), sync()]);
    assert_eq!(sqlstate(&reply), "25P02");
    assert_eq!(status(&reply), 'E');
    let reply = raw.round(&[query("ROLLBACK")]);
    assert_eq!(status(&reply), 'I');
    let reply = raw.round(&[bind("", "get", &["1"], false), execute("", 0), sync()]);
    assert_eq!(data(&reply), vec![vec!["1".to_string(), "one".to_string()]]);
}
