//! Authentication: trust for roles without a password, SCRAM-SHA-256 for
//! roles with one (the default `--auth auto`), roles that may not log in.

use std::time::Duration;

use tokio_postgres::NoTls;

use crate::harness::Server;

async fn connect(
    port: u16,
    user: &str,
    password: Option<&str>,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let mut cfg = tokio_postgres::Config::new();
    cfg.host("127.0.0.1").port(port).user(user).dbname("tessera").connect_timeout(Duration::from_secs(10));
    if let Some(p) = password {
        cfg.password(p);
    }
    let (client, conn) = cfg.connect(NoTls).await?;
    tokio::spawn(conn);
    Ok(client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_for_roles_with_a_password() {
    let server = Server::start();
    let port = server.port();
    tokio::time::timeout(Duration::from_secs(60), async move {
        let admin = connect(port, "tessera", None).await.expect("trusted bootstrap user");
        admin.batch_execute("CREATE ROLE alice LOGIN PASSWORD 'secret'; CREATE ROLE nologin").await.unwrap();

        let alice = connect(port, "alice", Some("secret")).await.expect("right password");
        let row = alice.query_one("SELECT current_user", &[]).await.unwrap();
        assert_eq!(row.get::<_, String>(0), "alice");

        let err = connect(port, "alice", Some("wrong")).await.expect_err("wrong password refused");
        assert_eq!(err.as_db_error().map(|e| e.code().code()), Some("28P01"), "{err:?}");
        assert!(connect(port, "alice", None).await.is_err(), "a password is required");

        admin.batch_execute("ALTER ROLE alice WITH PASSWORD 'changed'").await.unwrap();
        assert!(connect(port, "alice", Some("secret")).await.is_err(), "old password no longer works");
        connect(port, "alice", Some("changed")).await.expect("new password");

        let err = connect(port, "nologin", None).await.expect_err("role without LOGIN refused");
        assert_eq!(err.as_db_error().map(|e| e.code().code()), Some("28000"), "{err}");
        let err = connect(port, "nobody", None).await.expect_err("unknown role refused");
        assert_eq!(err.as_db_error().map(|e| e.code().code()), Some("28000"), "{err}");
    })
    .await
    .expect("auth test timed out");
}
