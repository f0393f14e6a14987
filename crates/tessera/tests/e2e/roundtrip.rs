//! A property test of values' round trips: random numerics, timestamps, timestamptz values, dates and intervals go
//! in and come back out exactly as PostgreSQL 15 returns them.
//!
//! The values come from a fixed seed (so the same on every machine): unconstrained numerics of up to 30 digits on
//! each side of the point, `numeric(20,6)` values written with up to 9 places (rounded on the way in), timestamps
//! between 1900 and 2200 with microseconds, timestamptz values written with offsets, and intervals of months, days
//! and microseconds of either sign. Half the rows go in as SQL literals, half through COPY; they come back out as
//! text (simple query), in the binary format (extended query), through COPY in text and through binary COPY, and
//! each of those is compared with PostgreSQL's recorded answer for the same rows (`tests/roundtrip/`).
//!
//! Unconstrained numerics are generated without trailing zeros: Tessera prints an unconstrained numeric without
//! them (see docs/sql.md), which is the same value and, for these, the same text.
//!
//! To record PostgreSQL's answers again (after changing the generator), give a connection string to a scratch
//! database on PostgreSQL 15:
//!
//! ```text
//! TESSERA_ROUNDTRIP_RECORD='host=127.0.0.1 port=5432 user=postgres dbname=postgres' \
//!     cargo test -p tessera --test e2e roundtrip
//! ```

use std::fmt::Write as _;
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use tokio_postgres::{Client, NoTls};

use crate::client::{Raw, block_on, connect, describe, exec, query_text};
use crate::harness::Server;

const ROWS: usize = 400;
const LIMIT: Duration = Duration::from_secs(120);
const EXPECTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/roundtrip");
const COLUMNS: &str = "n, d, ts, tz, dt, iv";

/// xorshift64*: small, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }

    fn digits(&mut self, n: usize, leading_nonzero: bool, trailing_nonzero: bool) -> String {
        let mut s: String = (0..n).map(|_| char::from(b'0' + self.below(10) as u8)).collect();
        if n > 0 && leading_nonzero {
            s.replace_range(0..1, &(1 + self.below(9)).to_string());
        }
        if n > 0 && trailing_nonzero {
            s.replace_range(n - 1..n, &(1 + self.below(9)).to_string());
        }
        s
    }
}

/// One row's values as SQL text (NULL sometimes).
fn row(rng: &mut Rng) -> [Option<String>; 6] {
    let sign = |rng: &mut Rng| if rng.below(2) == 0 { "" } else { "-" };
    let null_or = |rng: &mut Rng, v: String| if rng.below(25) == 0 { None } else { Some(v) };
    let n = {
        let (int, frac) = (rng.below(31) as usize, rng.below(31) as usize);
        let int = if int == 0 { "0".to_string() } else { rng.digits(int, true, false) };
        let v = if frac == 0 { int } else { format!("{int}.{}", rng.digits(frac, false, true)) };
        if v == "0" { v } else { format!("{}{v}", sign(rng)) }
    };
    let d = {
        let (int_len, frac_len) = (rng.below(15) as usize, rng.below(10) as usize);
        let int = rng.digits(int_len, true, false);
        let frac = rng.digits(frac_len, false, false);
        let int = if int.is_empty() { "0".to_string() } else { int };
        format!("{}{int}{}{frac}", sign(rng), if frac.is_empty() { "" } else { "." })
    };
    let stamp = |rng: &mut Rng| {
        let (y, mo, day) = (rng.range(1900, 2199), rng.range(1, 12), rng.range(1, 28));
        let (h, mi, s, us) = (rng.range(0, 23), rng.range(0, 59), rng.range(0, 59), rng.range(0, 999_999));
        format!("{y:04}-{mo:02}-{day:02} {h:02}:{mi:02}:{s:02}.{us:06}")
    };
    let ts = stamp(rng);
    let tz =
        format!("{}{}{:02}:{:02}", stamp(rng), ["+", "-"][rng.below(2) as usize], rng.below(14), 15 * rng.below(4));
    let dt = format!("{:04}-{:02}-{:02}", rng.range(1900, 2199), rng.range(1, 12), rng.range(1, 28));
    let iv = {
        let micros = rng.range(-8_640_000_000_000, 8_640_000_000_000);
        let secs = format!(
            "{}{}.{:06}",
            if micros < 0 { "-" } else { "" },
            micros.abs() / 1_000_000,
            micros.abs() % 1_000_000
        );
        format!("{} months {} days {secs} seconds", rng.range(-1200, 1200), rng.range(-400, 400))
    };
    [null_or(rng, n), null_or(rng, d), null_or(rng, ts), null_or(rng, tz), null_or(rng, dt), null_or(rng, iv)]
}

fn rows() -> Vec<[Option<String>; 6]> {
    let mut rng = Rng(0x7e55_e4a0_2026_1127);
    (0..ROWS).map(|_| row(&mut rng)).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
        write!(s, "{b:02x}").unwrap();
        s
    })
}

/// Loads the rows (half as literals, half through COPY) and reads them back every way; the answers by name.
async fn answers(client: &Client) -> Vec<(&'static str, String)> {
    exec(client, "SET TimeZone = 'UTC'").await;
    exec(client, "DROP TABLE IF EXISTS roundtrip").await;
    exec(
        client,
        "CREATE TABLE roundtrip (id int PRIMARY KEY, n numeric, d numeric(20,6), ts timestamp, tz timestamptz, dt date, \
         iv interval)",
    )
    .await;
    let all = rows();
    let literal = |v: &Option<String>| v.as_ref().map_or("NULL".to_string(), |v| format!("'{v}'"));
    for (i, r) in all.iter().enumerate().take(ROWS / 2) {
        let values: Vec<String> = r.iter().map(literal).collect();
        exec(client, &format!("INSERT INTO roundtrip VALUES ({i}, {})", values.join(", "))).await;
    }
    let mut copy = String::new();
    for (i, r) in all.iter().enumerate().skip(ROWS / 2) {
        let values: Vec<&str> = r.iter().map(|v| v.as_deref().unwrap_or("\\N")).collect();
        writeln!(copy, "{i}\t{}", values.join("\t")).unwrap();
    }
    let sink =
        client.copy_in("COPY roundtrip FROM STDIN").await.unwrap_or_else(|e| panic!("COPY FROM: {}", describe(&e)));
    let mut sink = std::pin::pin!(sink);
    sink.send(Bytes::from(copy)).await.unwrap_or_else(|e| panic!("COPY FROM data: {}", describe(&e)));
    sink.as_mut().finish().await.unwrap_or_else(|e| panic!("COPY FROM end: {}", describe(&e)));

    let select = format!("SELECT {COLUMNS} FROM roundtrip ORDER BY id");
    let text: Vec<String> = query_text(client, &select)
        .await
        .iter()
        .map(|r| r.iter().map(|v| v.clone().unwrap_or_else(|| "NULL".into())).collect::<Vec<_>>().join("\t"))
        .collect();
    let binary: Vec<String> = client
        .query(&select, &[])
        .await
        .unwrap_or_else(|e| panic!("binary SELECT: {}", describe(&e)))
        .iter()
        .map(|r| {
            (0..6)
                .map(|c| r.get::<_, Option<Raw>>(c).map_or("NULL".into(), |v| hex(&v.0)))
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect();
    let copy_out = |format: &'static str| {
        let sql = format!("COPY (SELECT {COLUMNS} FROM roundtrip ORDER BY id) TO STDOUT{format}");
        async move {
            let stream = client.copy_out(&sql).await.unwrap_or_else(|e| panic!("{sql}: {}", describe(&e)));
            let chunks: Vec<Bytes> = stream.map(|c| c.expect("COPY data")).collect().await;
            chunks.concat()
        }
    };
    let copy_text = String::from_utf8(copy_out("").await).expect("COPY text is UTF-8");
    let copy_binary = copy_out(" WITH (FORMAT binary)").await;
    vec![
        ("text.tsv", text.join("\n") + "\n"),
        ("binary.tsv", binary.join("\n") + "\n"),
        ("copy.tsv", copy_text),
        (
            "copy_binary.hex",
            hex(&copy_binary).as_bytes().chunks(128).map(|c| String::from_utf8_lossy(c) + "\n").collect(),
        ),
    ]
}

#[test]
fn values_round_trip_as_postgresql_returns_them() {
    if let Ok(conn) = std::env::var("TESSERA_ROUNDTRIP_RECORD") {
        block_on(LIMIT, async {
            let (client, connection) = tokio_postgres::connect(&conn, NoTls).await.expect("connecting to PostgreSQL");
            tokio::spawn(connection);
            for (name, answer) in answers(&client).await {
                std::fs::write(format!("{EXPECTED}/{name}"), answer).expect("writing an expected answer");
            }
            exec(&client, "DROP TABLE roundtrip").await;
        });
    }
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        for (name, got) in answers(&client).await {
            let expected = std::fs::read_to_string(format!("{EXPECTED}/{name}")).expect("a recorded answer");
            if got != expected {
                let (g, e): (Vec<&str>, Vec<&str>) = (got.lines().collect(), expected.lines().collect());
                let first = (0..g.len().max(e.len())).find(|i| g.get(*i) != e.get(*i)).unwrap_or(0);
                panic!(
                    "{name} differs from PostgreSQL's first at line {}:\n  tessera : {:?}\n  postgres: {:?}",
                    first + 1,
                    g.get(first),
                    e.get(first)
                );
            }
        }
    });
}
