//! Temporary tables across sessions: each session's are its own, even under
//! the same name, and they are dropped when the session ends.

use std::time::Duration;

use tokio_postgres::NoTls;

use crate::harness::Server;

async fn connect(port: u16) -> (tokio_postgres::Client, tokio::task::JoinHandle<()>) {
    let (client, conn) =
        tokio_postgres::connect(&format!("host=127.0.0.1 port={port} user=tessera dbname=tessera"), NoTls)
            .await
            .unwrap();
    let task = tokio::spawn(async move {
        let _ = conn.await;
    });
    (client, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_tables_are_private_to_their_session_and_dropped_with_it() {
    let server = Server::start();
    let port = server.port();
    tokio::time::timeout(Duration::from_secs(120), async move {
        let (a, a_task) = connect(port).await;
        let (b, _b_task) = connect(port).await;
        a.batch_execute("CREATE TABLE t (v text); INSERT INTO t VALUES ('permanent')").await.unwrap();
        a.batch_execute("CREATE TEMP TABLE t (v text); INSERT INTO t VALUES ('a')").await.unwrap();
        b.batch_execute("CREATE TEMP TABLE t (v text); INSERT INTO t VALUES ('b1'), ('b2')").await.unwrap();
        // Extended protocol (prepared statements) and simple queries alike.
        let a_rows: Vec<String> = a.query("SELECT v FROM t", &[]).await.unwrap().iter().map(|r| r.get(0)).collect();
        assert_eq!(a_rows, vec!["a"]);
        let b_rows = b.query("SELECT v FROM t ORDER BY v", &[]).await.unwrap();
        assert_eq!(b_rows.len(), 2);
        let perm: String = b.query_one("SELECT v FROM public.t", &[]).await.unwrap().get(0);
        assert_eq!(perm, "permanent");
        // A third session sees only the permanent table.
        let (c, _c_task) = connect(port).await;
        let only: String = c.query_one("SELECT v FROM t", &[]).await.unwrap().get(0);
        assert_eq!(only, "permanent");
        let visible: i64 = c.query_one("SELECT count(*) FROM pg_class WHERE relname = 't'", &[]).await.unwrap().get(0);
        assert_eq!(visible, 1);

        // When session a ends, its table goes.
        let schema: String = a
            .query_one("SELECT table_schema FROM information_schema.tables WHERE table_type = 'LOCAL TEMPORARY'", &[])
            .await
            .unwrap()
            .get(0);
        assert!(schema.starts_with("pg_temp_"), "{schema}");
        let stored = format!("SELECT count(*) FROM \"{schema}.t\"");
        assert_eq!(c.query_one(&stored, &[]).await.unwrap().get::<_, i64>(0), 1);
        drop(a);
        a_task.await.unwrap();
        let mut gone = false;
        for _ in 0..100 {
            if let Err(e) = c.query_one(&stored, &[]).await {
                assert_eq!(e.as_db_error().map(|d| d.code().code()), Some("42P01"), "{e:?}");
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(gone, "session a's temporary table outlived it");
        // Session b's is untouched.
        let b_count: i64 = b.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get(0);
        assert_eq!(b_count, 2);
    })
    .await
    .expect("timed out");
}
