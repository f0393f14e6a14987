//! Keyed databases: the declaration, the schema rule for their tables, and
//! `tessera.databases`, through a real client; the declaration survives a
//! restart.

use std::time::Duration;

use tokio_postgres::NoTls;

use crate::client::block_on;
use crate::harness::Server;

async fn connect(port: u16, db: &str) -> tokio_postgres::Client {
    let (client, conn) =
        tokio_postgres::connect(&format!("host=127.0.0.1 port={port} user=tessera dbname={db}"), NoTls)
            .await
            .unwrap_or_else(|e| panic!("connecting to {db}: {e}"));
    tokio::spawn(conn);
    client
}

/// The SQLSTATE and message of a failed statement.
async fn fails(c: &tokio_postgres::Client, sql: &str) -> (String, String) {
    let e = c.batch_execute(sql).await.expect_err(sql);
    let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"));
    (db.code().code().to_string(), db.message().to_string())
}

async fn databases(c: &tokio_postgres::Client) -> Vec<(String, String, Option<String>)> {
    c.query("SELECT name, kind, partition_key FROM tessera.databases ORDER BY name", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

#[test]
fn keyed_database_declares_its_partition_key_and_its_tables_must_carry_it() {
    let mut server = Server::start();
    let port = server.port();
    block_on(Duration::from_secs(120), async move {
        let admin = connect(port, "tessera").await;
        admin.batch_execute("CREATE DATABASE shop WITH (partition_key = 'customer_id bigint')").await.unwrap();
        admin.batch_execute("CREATE DATABASE plain").await.unwrap();
        let (code, msg) = fails(&admin, "CREATE DATABASE bad WITH (colour = 'red')").await;
        assert_eq!((code.as_str(), msg.as_str()), ("42601", "option \"colour\" not recognized"));
        let (code, _) = fails(&admin, "CREATE DATABASE bad WITH (partition_key = 'x double precision')").await;
        assert_eq!(code, "0A000");
        let dbs = databases(&admin).await;
        assert!(dbs.contains(&("shop".into(), "keyed".into(), Some("customer_id bigint".into()))), "{dbs:?}");
        assert!(dbs.contains(&("plain".into(), "keyless".into(), None)), "{dbs:?}");

        let shop = connect(port, "shop").await;
        shop.batch_execute(
            "CREATE TABLE customers (customer_id bigint PRIMARY KEY, name text);
             CREATE TABLE orders (customer_id bigint, order_id int, amount int, PRIMARY KEY (customer_id, order_id))",
        )
        .await
        .unwrap();
        let (code, msg) = fails(&shop, "CREATE TABLE notes (id int PRIMARY KEY, body text)").await;
        assert_eq!(code, "42P16");
        assert!(msg.contains("partition key column \"customer_id\""), "{msg}");
        let (code, msg) = fails(&shop, "CREATE TABLE wrong (customer_id int)").await;
        assert_eq!(code, "42P16");
        assert!(msg.contains("is integer"), "{msg}");
        let (code, msg) = fails(&shop, "CREATE TABLE lines (customer_id bigint, line int PRIMARY KEY)").await;
        assert_eq!(code, "42P16");
        assert!(msg.contains("primary key"), "{msg}");
        let (code, _) = fails(&shop, "ALTER TABLE orders DROP COLUMN customer_id").await;
        assert_eq!(code, "42P16");
        let (code, _) = fails(&shop, "ALTER TABLE orders RENAME COLUMN customer_id TO cid").await;
        assert_eq!(code, "42P16");
        let (code, _) = fails(&shop, "ALTER TABLE orders ALTER COLUMN customer_id TYPE int").await;
        assert_eq!(code, "42P16");
        shop.batch_execute("CREATE TABLE visits (customer_id bigint, visit int)").await.unwrap();
        let (code, _) = fails(&shop, "ALTER TABLE visits ADD PRIMARY KEY (visit)").await;
        assert_eq!(code, "42P16");
        shop.batch_execute("ALTER TABLE visits ADD PRIMARY KEY (customer_id, visit)").await.unwrap();
        // Other changes are fine.
        shop.batch_execute("ALTER TABLE orders ADD COLUMN note text; ALTER TABLE orders DROP COLUMN amount")
            .await
            .unwrap();
        // A keyless database takes any schema.
        let plain = connect(port, "plain").await;
        plain.batch_execute("CREATE TABLE notes (id int PRIMARY KEY, body text)").await.unwrap();
    });
    server.restart();
    let port = server.port();
    block_on(Duration::from_secs(60), async move {
        let admin = connect(port, "tessera").await;
        let dbs = databases(&admin).await;
        assert!(dbs.contains(&("shop".into(), "keyed".into(), Some("customer_id bigint".into()))), "{dbs:?}");
        let shop = connect(port, "shop").await;
        let (code, _) = fails(&shop, "CREATE TABLE notes (id int PRIMARY KEY)").await;
        assert_eq!(code, "42P16", "the rule holds after a restart");
    });
}
