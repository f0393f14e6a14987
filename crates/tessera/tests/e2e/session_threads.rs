//! Sessions share their threads (`tessera start --session-threads`): a session that waits, or computes, must not
//! hold up the others on its thread. With one session thread every session below is on the same runtime.

use std::time::{Duration, Instant};

use crate::client::{block_on, connect, describe, exec};
use crate::harness::Server;

const LIMIT: Duration = Duration::from_secs(120);
/// Far more than a point read takes in a debug build, far less than the waits below.
const PROMPT: Duration = Duration::from_secs(3);

fn others_go_on_while_one_waits_and_one_computes(threads: &str) {
    let server = Server::start_with(&["--session-threads", threads]);
    block_on(LIMIT, async {
        let holder = connect(&server).await;
        exec(&holder, "CREATE TABLE acct (id int PRIMARY KEY, bal int)").await;
        exec(&holder, "INSERT INTO acct SELECT g, 0 FROM generate_series(1, 2000) g").await;
        exec(&holder, "BEGIN").await;
        exec(&holder, "UPDATE acct SET bal = bal + 1 WHERE id = 1").await;

        // A write that must wait for the holder's row, and a query that computes for a while.
        let waiter = connect(&server).await;
        let waiting = tokio::spawn(async move {
            let n = waiter.execute("UPDATE acct SET bal = bal + 10 WHERE id = 1", &[]).await;
            n.map_err(|e| describe(&e))
        });
        let computer = connect(&server).await;
        let computing = tokio::spawn(async move {
            let n = computer.query_one("SELECT count(*) FROM acct x JOIN acct y ON x.bal <= y.bal", &[]).await;
            n.map(|r| r.get::<_, i64>(0)).map_err(|e| describe(&e))
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiting.is_finished(), "--session-threads {threads}: the write did not wait for the held row");

        // Meanwhile a new session connects and reads, promptly, again and again.
        let reader = connect(&server).await;
        let read = reader.prepare("SELECT bal FROM acct WHERE id = $1").await.unwrap();
        for id in [2, 3, 1, 4] {
            let started = Instant::now();
            let bal: i32 = reader.query_one(&read, &[&id]).await.unwrap().get(0);
            assert_eq!(bal, 0, "--session-threads {threads}: id {id}");
            assert!(
                started.elapsed() < PROMPT,
                "--session-threads {threads}: a point read took {:?} beside a waiting write and a long query",
                started.elapsed()
            );
        }
        assert!(!waiting.is_finished(), "--session-threads {threads}: the write stopped waiting by itself");

        exec(&holder, "COMMIT").await;
        assert_eq!(waiting.await.unwrap(), Ok(1), "--session-threads {threads}");
        assert_eq!(computing.await.unwrap(), Ok(2000 * 2000), "--session-threads {threads}");
        let bal: i32 = reader.query_one(&read, &[&1]).await.unwrap().get(0);
        assert_eq!(bal, 11, "--session-threads {threads}");
    });
}

#[test]
fn one_session_thread_serves_everyone() {
    others_go_on_while_one_waits_and_one_computes("1");
}

#[test]
fn the_shared_runtime_serves_everyone() {
    others_go_on_while_one_waits_and_one_computes("0");
}
