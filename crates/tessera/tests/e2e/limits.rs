//! Limits: statement timeout, idle-in-transaction timeout, connection count,
//! and TLS when a certificate is configured.

use std::process::Command;
use std::time::Duration;

use tokio_postgres::NoTls;

use crate::harness::Server;

async fn connect(port: u16) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, conn) =
        tokio_postgres::connect(&format!("host=127.0.0.1 port={port} user=tessera dbname=tessera"), NoTls).await?;
    tokio::spawn(conn);
    Ok(client)
}

fn code(e: &tokio_postgres::Error) -> Option<&str> {
    e.as_db_error().map(|d| d.code().code())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_cancels_a_long_query_and_the_session_goes_on() {
    let server = Server::start();
    let port = server.port();
    tokio::time::timeout(Duration::from_secs(120), async move {
        let c = connect(port).await.unwrap();
        c.batch_execute(
            "CREATE TABLE big (a int PRIMARY KEY, b int); \
             INSERT INTO big SELECT g, g % 10 FROM generate_series(1, 100000) g",
        )
        .await
        .unwrap();
        c.batch_execute("SET statement_timeout = '200ms'").await.unwrap();
        let started = std::time::Instant::now();
        // A join of 10^9 rows: far longer than the timeout.
        let err = c.query("SELECT count(*) FROM big x JOIN big y ON x.b = y.b", &[]).await.unwrap_err();
        assert_eq!(code(&err), Some("57014"), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(20), "the timeout took {:?}", started.elapsed());
        // The session goes on. (Without the 200 ms budget: on a debug build the aborted join may still be
        // winding down on the query threads, and a full count must not race it.)
        c.batch_execute("SET statement_timeout = 0").await.unwrap();
        let row = c.query_one("SELECT count(*) FROM big", &[]).await.unwrap();
        assert_eq!(row.get::<_, i64>(0), 100000);
    })
    .await
    .expect("timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_in_transaction_timeout_rolls_back_and_closes() {
    let server = Server::start();
    let port = server.port();
    tokio::time::timeout(Duration::from_secs(60), async move {
        let c = connect(port).await.unwrap();
        c.batch_execute("CREATE TABLE t (id int PRIMARY KEY)").await.unwrap();
        c.batch_execute("SET idle_in_transaction_session_timeout = 300").await.unwrap();
        c.batch_execute("BEGIN; INSERT INTO t VALUES (1)").await.unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let err = c.batch_execute("COMMIT").await.unwrap_err();
        assert!(err.is_closed() || code(&err) == Some("25P03"), "{err:?}");
        let other = connect(port).await.unwrap();
        let n: i64 = other.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get(0);
        assert_eq!(n, 0, "the idle transaction was rolled back");
        // Outside a transaction, idling is fine.
        other.batch_execute("SET idle_in_transaction_session_timeout = 300").await.unwrap();
        tokio::time::sleep(Duration::from_millis(800)).await;
        other.batch_execute("SELECT 1").await.unwrap();
    })
    .await
    .expect("timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_are_refused_with_53300() {
    let server = Server::start_with(&["--max-connections", "2"]);
    let port = server.port();
    tokio::time::timeout(Duration::from_secs(60), async move {
        let a = connect(port).await.unwrap();
        let _b = connect(port).await.unwrap();
        let err = connect(port).await.unwrap_err();
        assert_eq!(code(&err), Some("53300"), "{err:?}");
        // libpq asks for TLS first (sslmode=prefer): it must still read the refusal as PostgreSQL's error.
        let psql = tokio::task::spawn_blocking(move || {
            Command::new("psql")
                .args(["-X", "-h", "127.0.0.1", "-p", &port.to_string(), "-U", "tessera", "-c", "SELECT 1"])
                .env("PGSSLMODE", "prefer")
                .output()
                .expect("psql is needed (Debian: postgresql-client)")
        })
        .await
        .unwrap();
        let stderr = String::from_utf8_lossy(&psql.stderr);
        assert!(stderr.contains("too many clients"), "psql over the limit said: {stderr}");
        drop(a);
        // The slot frees once the first connection is gone.
        for _ in 0..50 {
            if connect(port).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("a freed connection slot was not reused");
    })
    .await
    .expect("timed out");
}

/// Makes a self-signed certificate and its key (PEM) in `dir`.
pub(crate) fn make_certificate(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let status = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl is needed to make a test certificate");
    assert!(status.status.success(), "openssl failed: {}", String::from_utf8_lossy(&status.stderr));
    (cert, key)
}

/// With a certificate, `sslmode=require` clients connect over TLS.
#[test]
fn tls_with_a_configured_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = make_certificate(dir.path());
    let server = Server::start_with(&["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()]);
    let out = Command::new("psql")
        .arg(format!("host=127.0.0.1 port={} user=tessera dbname=tessera sslmode=require", server.port()))
        .args(["-X", "-A", "-t", "-c", "SELECT 'over tls'"])
        .output()
        .expect("psql is needed (Debian: postgresql-client)");
    assert!(out.status.success(), "psql failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "over tls");

    // SCRAM with channel binding to the certificate (SCRAM-SHA-256-PLUS)
    // over TLS, as libpq's channel_binding=require demands; offered on TLS
    // connections only, as in PostgreSQL.
    let psql = |conninfo: String, sql: &str| {
        Command::new("psql").arg(conninfo).args(["-X", "-A", "-t", "-c", sql]).output().expect("psql")
    };
    let port = server.port();
    let out = psql(
        format!("host=127.0.0.1 port={port} user=tessera dbname=tessera sslmode=require"),
        "CREATE ROLE alice LOGIN PASSWORD 'wonderland'",
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let alice = |options: &str| {
        psql(
            format!("host=127.0.0.1 port={port} user=alice password=wonderland dbname=tessera {options}"),
            "SELECT 'bound'",
        )
    };
    let out = alice("sslmode=require channel_binding=require");
    assert!(out.status.success(), "channel binding over TLS: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "bound");
    let out = alice("sslmode=disable channel_binding=require");
    assert!(!out.status.success(), "channel binding cannot be had without TLS");
    let out = alice("sslmode=disable");
    assert!(out.status.success(), "plain SCRAM without TLS: {}", String::from_utf8_lossy(&out.stderr));
    let out = alice("sslmode=require password=wrong");
    assert!(!out.status.success(), "a wrong password over TLS was accepted");
}

/// A CancelRequest (on its own connection, naming the backend by its key)
/// ends the running statement with 57014; the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_request_ends_the_running_statement() {
    let server = Server::start();
    let port = server.port();
    tokio::time::timeout(Duration::from_secs(120), async move {
        let c = connect(port).await.unwrap();
        c.batch_execute(
            "CREATE TABLE big (a int PRIMARY KEY, b int); \
             INSERT INTO big SELECT g, g % 10 FROM generate_series(1, 100000) g",
        )
        .await
        .unwrap();
        let token = c.cancel_token();
        let canceller = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            token.cancel_query(NoTls).await
        });
        let started = std::time::Instant::now();
        let err = c.query("SELECT count(*) FROM big x JOIN big y ON x.b = y.b", &[]).await.unwrap_err();
        assert_eq!(code(&err), Some("57014"), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(20), "the cancel took {:?}", started.elapsed());
        canceller.await.unwrap().expect("sending the cancel request");
        let n: i64 = c.query_one("SELECT count(*) FROM big", &[]).await.unwrap().get(0);
        assert_eq!(n, 100000);
    })
    .await
    .expect("timed out");
}

/// A write waiting for another transaction's row gives up when the
/// statement timeout runs out, on the fast path and on the general path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_ends_a_wait_for_a_held_row() {
    let server = Server::start();
    let port = server.port();
    tokio::time::timeout(Duration::from_secs(120), async move {
        let holder = connect(port).await.unwrap();
        holder.batch_execute("CREATE TABLE acct (id int PRIMARY KEY, bal int)").await.unwrap();
        holder.batch_execute("INSERT INTO acct VALUES (1, 0)").await.unwrap();
        holder.batch_execute("BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 1").await.unwrap();
        for fast_path in ["on", "off"] {
            let waiter = connect(port).await.unwrap();
            waiter
                .batch_execute(&format!("SET tessera.fast_path = {fast_path}; SET statement_timeout = 300"))
                .await
                .unwrap();
            let started = std::time::Instant::now();
            let err = waiter.execute("UPDATE acct SET bal = bal + 10 WHERE id = 1", &[]).await.unwrap_err();
            assert_eq!(code(&err), Some("57014"), "fast_path={fast_path}: {err:?}");
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "fast_path={fast_path}: the wait took {:?}",
                started.elapsed()
            );
            // The session goes on, and the failed write left nothing behind.
            waiter.batch_execute("SET statement_timeout = 0").await.unwrap();
            let bal: i32 = waiter.query_one("SELECT bal FROM acct WHERE id = 1", &[]).await.unwrap().get(0);
            assert_eq!(bal, 0, "fast_path={fast_path}");
        }
        holder.batch_execute("COMMIT").await.unwrap();
        let bal: i32 = holder.query_one("SELECT bal FROM acct WHERE id = 1", &[]).await.unwrap().get(0);
        assert_eq!(bal, 1);
    })
    .await
    .expect("timed out");
}

/// A transaction whose changes do not fit in one log record (over 1 GiB)
/// fails alone, with 54000 and nothing committed: other sessions write on
/// meanwhile and after it, and the engine stays writable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_over_the_log_record_limit_fails_alone() {
    let server = Server::start();
    let port = server.port();
    tokio::time::timeout(Duration::from_secs(400), async move {
        let c = connect(port).await.unwrap();
        c.batch_execute(
            "CREATE TABLE big (id int PRIMARY KEY, pad text); CREATE TABLE small (id int PRIMARY KEY, v int)",
        )
        .await
        .unwrap();
        // Another session writes all along.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let stop = stop.clone();
            tokio::spawn(async move {
                let w = connect(port).await.unwrap();
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    n += 1;
                    w.execute("INSERT INTO small VALUES ($1, 0)", &[&n]).await.map_err(|e| format!("{e:?}"))?;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Ok::<i32, String>(n)
            })
        };
        // 1,100 rows of 1 MiB: one commit record of about 1.1 GiB.
        let err = c
            .execute("INSERT INTO big SELECT g, repeat('x', 1048576) FROM generate_series(1, 1100) g", &[])
            .await
            .unwrap_err();
        assert_eq!(code(&err), Some("54000"), "{err:?}");
        let message = err.as_db_error().unwrap().message().to_string();
        assert!(message.contains("transaction too large"), "{message}");
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let written = writer.await.unwrap().expect("the other session's writes");
        assert!(written > 0);
        // Nothing of the large transaction stayed; the engine takes writes.
        let n: i64 = c.query_one("SELECT count(*) FROM big", &[]).await.unwrap().get(0);
        assert_eq!(n, 0);
        c.batch_execute("INSERT INTO big VALUES (1, 'after')").await.unwrap();
        let n: i64 = c.query_one("SELECT count(*) FROM small", &[]).await.unwrap().get(0);
        assert_eq!(n, written as i64);
    })
    .await
    .expect("the test took too long");
}

async fn count_t(c: &tokio_postgres::Client) -> i64 {
    c.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get(0)
}

/// Sends `data` to `copy` (COPY … FROM STDIN); the server's answer.
pub(crate) async fn copy_rows(
    c: &tokio_postgres::Client,
    copy: &str,
    data: &str,
) -> Result<u64, tokio_postgres::Error> {
    use futures::SinkExt;
    let sink = c.copy_in(copy).await?;
    let mut sink = std::pin::pin!(sink);
    sink.send(bytes::Bytes::from(data.to_string())).await?;
    sink.as_mut().finish().await
}

/// `tessera.copy_commit_rows` commits a COPY outside a transaction block
/// in parts of that many rows: a failure keeps the parts before it. Off
/// (0, the default) or inside a block, a COPY is all or nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_commits_in_parts_when_asked() {
    let server = Server::start();
    let port = server.port();
    tokio::time::timeout(Duration::from_secs(120), async move {
        let c = connect(port).await.unwrap();
        c.batch_execute("CREATE TABLE t (id int PRIMARY KEY)").await.unwrap();
        // Row 5 is bad.
        let data = "1\n2\n3\n4\nfive\n6\n";
        let e = copy_rows(&c, "COPY t FROM STDIN", data).await.unwrap_err();
        assert_eq!(code(&e), Some("22P02"), "{e:?}");
        assert_eq!(count_t(&c).await, 0, "by default a COPY is one transaction");

        c.batch_execute("SET tessera.copy_commit_rows = 2").await.unwrap();
        let shown: String = c.query_one("SHOW tessera.copy_commit_rows", &[]).await.unwrap().get(0);
        assert_eq!(shown, "2");
        let e = copy_rows(&c, "COPY t FROM STDIN", data).await.unwrap_err();
        assert_eq!(code(&e), Some("22P02"), "{e:?}");
        assert_eq!(count_t(&c).await, 4, "the two parts before the bad row are committed");

        // Inside a block the block decides.
        c.batch_execute("BEGIN").await.unwrap();
        assert_eq!(copy_rows(&c, "COPY t FROM STDIN", "10\n11\n12\n").await.unwrap(), 3);
        c.batch_execute("ROLLBACK").await.unwrap();
        assert_eq!(count_t(&c).await, 4);

        // A whole COPY in parts is whole.
        assert_eq!(copy_rows(&c, "COPY t FROM STDIN", "20\n21\n22\n23\n24\n").await.unwrap(), 5);
        assert_eq!(count_t(&c).await, 9);
        let e = c.batch_execute("SET tessera.copy_commit_rows = -1").await.unwrap_err();
        assert_eq!(code(&e), Some("22023"), "{e:?}");
    })
    .await
    .expect("the test took too long");
}
