//! The real `psql` against the server: a script with DDL, `\copy` in both directions, a join with GROUP BY and
//! window functions, and the describe commands (`\d`, `\dt`, `\di`, `\du`, `\l`), which run psql's own catalog
//! queries.
//!
//! `psql` must be on PATH (Debian/Ubuntu: `apt-get install postgresql-client`); without it these tests fail.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::harness::Server;

/// One psql run; a debug server answers psql's catalog queries in well under a second each.
const PSQL_TIMEOUT: Duration = Duration::from_secs(60);

const SCHEMA: &str = "
CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, city text);
CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer NOT NULL, amount numeric(10,2), placed date);
CREATE INDEX orders_customer ON orders (customer_id);
";

const CUSTOMERS_CSV: &str = "id,name,city
1,Alice,Paris
2,Bob,\"New York, NY\"
3,Carol,Berlin
4,Dave,
";

const ORDERS_CSV: &str = "id,customer_id,amount,placed
1,1,10.50,2024-01-05
2,1,20.00,2024-02-01
3,2,5.25,2024-01-20
4,3,100.00,2024-03-03
5,3,1.00,2024-03-04
6,2,7.75,2024-02-10
7,1,4.50,2024-03-15
";

struct Output {
    success: bool,
    stdout: String,
    stderr: String,
}

impl Output {
    fn describe(&self) -> String {
        format!("stdout:\n{}\nstderr:\n{}", self.stdout, self.stderr)
    }
}

/// Runs `psql -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p PORT -U tessera -d tessera <args>` in `dir`, with an environment
/// of its own so that no PG* variable or locale of the machine changes what it does or prints.
fn psql(server: &Server, dir: &Path, args: &[&str]) -> Output {
    let port = server.port().to_string();
    let mut child = Command::new("psql")
        .args(["-X", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", &port, "-U", "tessera", "-d", "tessera"])
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LC_ALL", "C.UTF-8")
        .env("PGCLIENTENCODING", "UTF8")
        .env("PGCONNECT_TIMEOUT", "10")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run psql ({e}); it must be on PATH (Debian/Ubuntu: apt-get install postgresql-client)")
        });
    let read = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + PSQL_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for psql") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
            panic!("psql {args:?} did not finish within {PSQL_TIMEOUT:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
        }
        thread::sleep(Duration::from_millis(20));
    };
    Output { success: status.success(), stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}

/// Writes `script` to a file in `dir` and runs it with `psql -f`, failing the test if psql reports an error.
fn run_script(server: &Server, dir: &Path, script: &str) -> Output {
    fs::write(dir.join("script.sql"), script).unwrap();
    let output = psql(server, dir, &["-f", "script.sql"]);
    assert!(output.success && output.stderr.is_empty(), "psql -f script.sql failed:\n{}", output.describe());
    output
}

/// A server with the two tables, loaded through `\copy` from CSV files in a fresh directory.
fn loaded_server() -> (Server, TempDir) {
    let server = Server::start();
    let dir = tempfile::Builder::new().prefix("tessera-psql-").tempdir().unwrap();
    fs::write(dir.path().join("customers.csv"), CUSTOMERS_CSV).unwrap();
    fs::write(dir.path().join("orders.csv"), ORDERS_CSV).unwrap();
    let output = run_script(
        &server,
        dir.path(),
        &format!(
            "{SCHEMA}
\\copy customers FROM 'customers.csv' WITH (FORMAT csv, HEADER)
\\copy orders FROM 'orders.csv' WITH (FORMAT csv, HEADER)
"
        ),
    );
    assert_eq!(
        output.stdout.lines().collect::<Vec<_>>(),
        ["CREATE TABLE", "CREATE TABLE", "CREATE INDEX", "COPY 4", "COPY 7"],
        "{}",
        output.describe()
    );
    (server, dir)
}

/// The cells of each table row in psql's aligned output (`a | b | c`), trimmed.
fn aligned_rows(output: &str) -> Vec<Vec<&str>> {
    output.lines().filter(|l| l.contains(" | ")).map(|l| l.split('|').map(str::trim).collect()).collect()
}

/// Runs one describe command in its own psql invocation, with `-E` so that a failure shows the catalog query.
fn describe_command(command: &str) -> Output {
    let (server, dir) = loaded_server();
    let output = psql(&server, dir.path(), &["-E", "-c", command]);
    assert!(output.success && output.stderr.is_empty(), "psql -c '{command}' failed:\n{}", output.describe());
    output
}

/// Checks that some row of `output` starts with `cells`.
fn assert_has_row(output: &Output, cells: &[&str]) {
    let rows = aligned_rows(&output.stdout);
    assert!(rows.iter().any(|row| row.starts_with(cells)), "no row starting with {cells:?} in:\n{}", output.stdout);
}

#[test]
fn script_with_copy_join_group_by_and_window_functions() {
    let (server, dir) = loaded_server();
    let output = run_script(
        &server,
        dir.path(),
        "\\pset format unaligned
\\pset footer off
SELECT id, name, city, city IS NULL AS no_city FROM customers ORDER BY id;
SELECT c.name, count(*) AS orders, sum(o.amount) AS total, rank() OVER (ORDER BY sum(o.amount) DESC) AS rnk
FROM customers c JOIN orders o ON o.customer_id = c.id
GROUP BY c.name
ORDER BY rnk;
SELECT o.id, o.amount, sum(o.amount) OVER (PARTITION BY o.customer_id ORDER BY o.placed) AS running,
       row_number() OVER (PARTITION BY o.customer_id ORDER BY o.placed DESC) AS newest_first
FROM orders o JOIN customers c ON c.id = o.customer_id
WHERE c.name = 'Alice'
ORDER BY o.placed;
",
    );
    let expected = "\
Output format is unaligned.
id|name|city|no_city
1|Alice|Paris|f
2|Bob|New York, NY|f
3|Carol|Berlin|f
4|Dave||t
name|orders|total|rnk
Carol|2|101.00|1
Alice|3|35.00|2
Bob|2|13.00|3
id|amount|running|newest_first
1|10.50|10.50|3
2|20.00|30.50|2
7|4.50|35.00|1
";
    assert_eq!(output.stdout, expected, "{}", output.describe());
}

/// `\copy (query) TO file` runs `COPY (query) TO STDOUT`; psql prints the row count from the command tag.
#[test]
fn copy_query_to_a_csv_file() {
    let (server, dir) = loaded_server();
    let output = run_script(
        &server,
        dir.path(),
        // A meta-command ends at the end of its line, so this is one line.
        concat!(
            "\\copy (SELECT c.city, count(*) AS n FROM customers c JOIN orders o ON o.customer_id = c.id ",
            "GROUP BY c.city ORDER BY c.city) TO 'cities.csv' WITH (FORMAT csv, HEADER)\n"
        ),
    );
    let csv = fs::read_to_string(dir.path().join("cities.csv")).unwrap();
    assert_eq!(csv, "city,n\nBerlin,2\n\"New York, NY\",2\nParis,3\n");
    assert_eq!(output.stdout, "COPY 3\n");
}

#[test]
fn describe_relations() {
    let output = describe_command("\\d");
    assert_has_row(&output, &["public", "customers", "table", "tessera"]);
    assert_has_row(&output, &["public", "orders", "table", "tessera"]);
}

#[test]
fn describe_one_table() {
    let output = describe_command("\\d customers");
    let text = &output.stdout;
    assert!(text.contains("Table \"public.customers\""), "{text}");
    assert_has_row(&output, &["id", "integer", "", "not null"]);
    assert_has_row(&output, &["name", "text", "", "not null"]);
    assert_has_row(&output, &["city", "text", "", ""]);
    assert!(text.contains("\"customers_pkey\" PRIMARY KEY, btree (id)"), "{text}");
}

#[test]
fn list_tables() {
    let output = describe_command("\\dt");
    assert_has_row(&output, &["public", "customers", "table", "tessera"]);
    assert_has_row(&output, &["public", "orders", "table", "tessera"]);
}

#[test]
fn list_indexes() {
    let output = describe_command("\\di");
    assert_has_row(&output, &["public", "customers_pkey", "index", "tessera", "customers"]);
    assert_has_row(&output, &["public", "orders_pkey", "index", "tessera", "orders"]);
    assert_has_row(&output, &["public", "orders_customer", "index", "tessera", "orders"]);
}

#[test]
fn list_roles() {
    let output = describe_command("\\du");
    assert_has_row(&output, &["tessera"]);
}

#[test]
fn list_databases() {
    let output = describe_command("\\l");
    assert_has_row(&output, &["tessera", "tessera", "UTF8"]);
}

/// psql takes the row count of `INSERT … RETURNING` from the command tag, which must read `INSERT 0 <rows>`.
#[test]
fn insert_returning() {
    let (server, dir) = loaded_server();
    let output = run_script(
        &server,
        dir.path(),
        "\\pset format unaligned
INSERT INTO customers VALUES (5, 'Eve', 'Oslo'), (6, 'Frank', NULL) RETURNING id, name;
",
    );
    assert_eq!(output.stdout, "Output format is unaligned.\nid|name\n5|Eve\n6|Frank\n(2 rows)\nINSERT 0 2\n");
}
