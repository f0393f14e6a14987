//! Keyed databases: the declaration, the schema rule for their tables, and
//! `tessera.databases`, through a real client; the declaration survives a
//! restart.

use std::time::Duration;

use tokio_postgres::NoTls;

use crate::client::block_on;
use crate::harness::Server;

pub(crate) async fn connect(port: u16, db: &str) -> tokio_postgres::Client {
    let (client, conn) =
        tokio_postgres::connect(&format!("host=127.0.0.1 port={port} user=tessera dbname={db}"), NoTls)
            .await
            .unwrap_or_else(|e| panic!("connecting to {db}: {e}"));
    tokio::spawn(conn);
    client
}

/// Runs a transaction (`BEGIN; …; COMMIT`): true when it committed, false
/// when it failed with a retryable serialization failure or deadlock (and
/// was rolled back); any other error fails the test.
pub(crate) async fn commits(c: &tokio_postgres::Client, sql: &str) -> bool {
    match c.batch_execute(sql).await {
        Ok(()) => true,
        Err(e) => {
            let code = e.as_db_error().map(|d| d.code().code().to_string());
            let message = e.as_db_error().map(|d| d.message().to_string());
            assert!(matches!(code.as_deref(), Some("40001" | "40P01")), "{sql}: {code:?} {message:?} ({e})");
            c.batch_execute("ROLLBACK").await.unwrap();
            false
        }
    }
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

/// A read-write transaction in a keyed database stays in one row group: the
/// first write binds it, a write elsewhere fails naming the group, and an
/// UPDATE or DELETE must name its group in WHERE. Reads span row groups.
#[test]
fn transactions_in_a_keyed_database_stay_in_one_row_group() {
    let server = Server::start();
    let port = server.port();
    block_on(Duration::from_secs(120), async move {
        let admin = connect(port, "tessera").await;
        admin.batch_execute("CREATE DATABASE shop WITH (partition_key = 'customer_id bigint')").await.unwrap();
        let c = connect(port, "shop").await;
        c.batch_execute(
            "CREATE TABLE orders (customer_id bigint, order_id int, amount int, PRIMARY KEY (customer_id, order_id));
             INSERT INTO orders VALUES (1, 1, 10), (1, 2, 20)",
        )
        .await
        .unwrap();

        // One statement, two row groups.
        let (code, msg) = fails(&c, "INSERT INTO orders VALUES (1, 3, 5), (2, 1, 7)").await;
        assert_eq!(code, "25000", "{msg}");
        assert!(msg.contains("row group customer_id = 1") && msg.contains("customer_id = 2"), "{msg}");

        // The first write binds the transaction; reads of other groups are fine.
        c.batch_execute("BEGIN; INSERT INTO orders VALUES (2, 1, 7)").await.unwrap();
        c.batch_execute("UPDATE orders SET amount = amount + 1 WHERE customer_id = 2 AND order_id = 1").await.unwrap();
        let total: i64 = c.query_one("SELECT sum(amount) FROM orders", &[]).await.unwrap().get(0);
        assert_eq!(total, 38);
        let (code, msg) = fails(&c, "INSERT INTO orders VALUES (3, 1, 1)").await;
        assert_eq!(code, "25000");
        assert!(msg.contains("bound to row group customer_id = 2"), "{msg}");
        c.batch_execute("ROLLBACK").await.unwrap();

        // Writes must name their row group.
        for sql in [
            "UPDATE orders SET amount = 0",
            "DELETE FROM orders WHERE order_id = 1",
            "UPDATE orders SET amount = 0 WHERE customer_id > 0",
            "DELETE FROM orders WHERE customer_id = 1 OR customer_id = 2",
        ] {
            let (code, msg) = fails(&c, sql).await;
            assert_eq!(code, "0A000", "{sql}: {msg}");
            assert!(msg.contains("customer_id = value"), "{msg}");
        }
        // Moving a row to another row group is a write to two groups.
        let (code, _) = fails(&c, "UPDATE orders SET customer_id = 5 WHERE customer_id = 1 AND order_id = 1").await;
        assert_eq!(code, "25000");

        // Parameters name the row group too (extended protocol).
        let n = c
            .execute("UPDATE orders SET amount = $1 WHERE customer_id = $2 AND order_id = $3", &[&99i32, &1i64, &2i32])
            .await
            .unwrap();
        assert_eq!(n, 1);
        c.execute("DELETE FROM orders WHERE (customer_id = $1) AND order_id = 1", &[&1i64]).await.unwrap();
        let rows: Vec<(i64, i32, i32)> = c
            .query("SELECT customer_id, order_id, amount FROM orders ORDER BY 1, 2", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        assert_eq!(rows, vec![(1, 2, 99)], "nothing of the failed statements is left");

        // Point reads and writes take the fast path, which checks row groups as it writes; an UPDATE that
        // would move a row to another row group takes the general path, which says why it cannot.
        let plan = |sql: &'static str| {
            let c = &c;
            async move {
                let rows = c.simple_query(&format!("EXPLAIN {sql}")).await.unwrap();
                crate::client::text_rows(&rows).into_iter().flatten().flatten().collect::<Vec<_>>().join("\n")
            }
        };
        let read = plan("SELECT amount FROM orders WHERE customer_id = 1 AND order_id = 2").await;
        assert!(read.contains("Tessera fast path"), "{read}");
        let write = plan("UPDATE orders SET amount = 1 WHERE customer_id = 1 AND order_id = 2").await;
        assert!(write.contains("Tessera fast path: Update"), "{write}");
        let insert = plan("INSERT INTO orders VALUES (7, 1, 1)").await;
        assert!(insert.contains("Tessera fast path: Insert"), "{insert}");
        let moving = plan("UPDATE orders SET customer_id = 3 WHERE customer_id = 1 AND order_id = 2").await;
        assert!(moving.contains("Tessera path: general"), "{moving}");

        // A keyless database is not bound.
        admin.batch_execute("CREATE TABLE free (id int PRIMARY KEY, v int)").await.unwrap();
        admin
            .batch_execute("BEGIN; INSERT INTO free VALUES (1, 1), (2, 2); UPDATE free SET v = 0; COMMIT")
            .await
            .unwrap();
    });
}

/// Concurrent transfers, each inside one row group, from several clients:
/// every row group keeps its total.
#[test]
fn concurrent_row_group_transactions_keep_each_groups_total() {
    let server = Server::start();
    let port = server.port();
    block_on(Duration::from_secs(180), async move {
        let admin = connect(port, "tessera").await;
        admin.batch_execute("CREATE DATABASE bank WITH (partition_key = 'customer_id bigint')").await.unwrap();
        let c = connect(port, "bank").await;
        c.batch_execute(
            "CREATE TABLE accounts (customer_id bigint, acct int, bal int, PRIMARY KEY (customer_id, acct))",
        )
        .await
        .unwrap();
        for customer in 1..=4i64 {
            c.execute("INSERT INTO accounts VALUES ($1, 1, 1000), ($1, 2, 1000)", &[&customer]).await.unwrap();
        }
        let mut clients = Vec::new();
        for worker in 0..4i64 {
            clients.push(tokio::spawn(async move {
                let c = connect(port, "bank").await;
                let mut done = 0;
                for i in 0..40i64 {
                    let customer = 1 + (worker + i) % 4;
                    let (from, to) = if i % 2 == 0 { (1, 2) } else { (2, 1) };
                    let amount = (i % 7 + 1) as i32;
                    let sql = format!(
                        "BEGIN; \
                         UPDATE accounts SET bal = bal - {amount} WHERE customer_id = {customer} AND acct = {from}; \
                         UPDATE accounts SET bal = bal + {amount} WHERE customer_id = {customer} AND acct = {to}; \
                         COMMIT"
                    );
                    if commits(&c, &sql).await {
                        done += 1;
                    }
                }
                done
            }));
        }
        let mut committed = 0;
        for t in clients {
            committed += t.await.unwrap();
        }
        assert!(committed > 0);
        let sums: Vec<(i64, i64)> = c
            .query("SELECT customer_id, sum(bal) FROM accounts GROUP BY customer_id ORDER BY 1", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        assert_eq!(sums, (1..=4).map(|c| (c, 2000)).collect::<Vec<_>>(), "after {committed} transfers");
    });
}
