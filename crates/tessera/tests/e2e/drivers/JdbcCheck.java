// Drives a Tessera server with the PostgreSQL JDBC driver (pgjdbc), as a Java application would.
//
// Usage: java -cp postgresql-42.7.x.jar:. JdbcCheck PORT
//
// pgjdbc uses the extended query protocol for everything: a PreparedStatement is sent as Parse/Bind/Execute with
// its parameters typed by the setXxx calls (setString sends an untyped `varchar`, setBigDecimal `numeric`,
// setTimestamp an `unspecified` type so the server infers it); after five executions the driver switches to a
// named server-side statement and binary results. Transactions are opened with BEGIN when autocommit is off.
//
// Each check prints `ok <name>`; the first failure throws, so the program exits non-zero with a stack trace.
// Needs Java 17 and the driver jar, e.g.:
//   mvn dependency:copy -Dartifact=org.postgresql:postgresql:42.7.4 -DoutputDirectory=DIR
//   javac -d OUT JdbcCheck.java && java -cp DIR/postgresql-42.7.4.jar:OUT JdbcCheck PORT

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.Date;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

public class JdbcCheck {
    private static String url;

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: JdbcCheck PORT");
            System.exit(2);
        }
        url = "jdbc:postgresql://127.0.0.1:" + Integer.parseInt(args[0]) + "/tessera";
        try (Connection conn = connect()) {
            check("connect and server metadata", () -> metadata(conn));
            check("create table", () -> createTable(conn));
            check("PreparedStatement insert with typed setters", () -> insert(conn));
            check("PreparedStatement select with parameters", () -> select(conn));
            check("result set metadata", () -> resultSetMetaData(conn));
            check("repeated execution switches to server-side prepare", () -> repeated(conn));
            check("transaction rollback", () -> rollback(conn));
            check("transaction commit", () -> commit(conn));
            check("batch insert", () -> batch(conn));
            check("server errors carry their SQLSTATE", () -> errors(conn));
        }
        System.out.println("all checks passed");
    }

    static Connection connect() throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", "tessera");
        props.setProperty("connectTimeout", "10");
        props.setProperty("socketTimeout", "60");
        return DriverManager.getConnection(url, props);
    }

    interface Check {
        void run() throws Exception;
    }

    static void check(String name, Check body) throws Exception {
        body.run();
        System.out.println("ok " + name);
        System.out.flush();
    }

    static void expect(boolean condition, String message) {
        if (!condition) {
            throw new AssertionError(message);
        }
    }

    static void expectEq(Object got, Object want, String what) {
        boolean same = got == null ? want == null : got.equals(want);
        expect(same, what + ": got " + got + ", want " + want);
    }

    static void metadata(Connection conn) throws SQLException {
        DatabaseMetaData md = conn.getMetaData();
        expectEq(md.getDatabaseProductName(), "PostgreSQL", "product name");
        expect(md.getDatabaseMajorVersion() >= 10, "server major version " + md.getDatabaseMajorVersion());
        expectEq(md.getUserName(), "tessera", "user name");
        expect(conn.isValid(5), "connection not valid");
    }

    static void createTable(Connection conn) throws SQLException {
        try (Statement st = conn.createStatement()) {
            st.execute(
                "CREATE TABLE items ("
                    + " id integer PRIMARY KEY,"
                    + " name text NOT NULL,"
                    + " price numeric(10,2),"
                    + " weight double precision,"
                    + " in_stock boolean,"
                    + " added date,"
                    + " updated timestamp,"
                    + " big bigint)");
        }
    }

    static final String INSERT =
        "INSERT INTO items (id, name, price, weight, in_stock, added, updated, big) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";

    static void insert(Connection conn) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(INSERT)) {
            ps.setInt(1, 1);
            ps.setString(2, "apple");
            ps.setBigDecimal(3, new BigDecimal("1.25"));
            ps.setDouble(4, 0.5);
            ps.setBoolean(5, true);
            // A LocalDate travels as a typed `date` parameter. (PreparedStatement.setDate is not used: it sends the
            // date with a zone suffix, "2024-02-29 +00", which the server does not accept as a date yet.)
            ps.setObject(6, LocalDate.of(2024, 2, 29));
            ps.setTimestamp(7, Timestamp.valueOf("2024-02-29 13:45:06"));
            ps.setLong(8, 1L << 40);
            expectEq(ps.executeUpdate(), 1, "update count");

            ps.setInt(1, 2);
            ps.setString(2, "plum 'quoted'");
            ps.setNull(3, Types.NUMERIC);
            ps.setNull(4, Types.DOUBLE);
            ps.setNull(5, Types.BOOLEAN);
            ps.setNull(6, Types.DATE);
            ps.setNull(7, Types.TIMESTAMP);
            ps.setNull(8, Types.BIGINT);
            expectEq(ps.executeUpdate(), 1, "update count");
        }
    }

    static void select(Connection conn) throws SQLException {
        String sql = "SELECT id, name, price, weight, in_stock, added, updated, big FROM items WHERE id = ?";
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setInt(1, 1);
            try (ResultSet rs = ps.executeQuery()) {
                expect(rs.next(), "no row for id 1");
                expectEq(rs.getInt("id"), 1, "id");
                expectEq(rs.getString("name"), "apple", "name");
                expectEq(rs.getBigDecimal("price"), new BigDecimal("1.25"), "price");
                expectEq(rs.getDouble("weight"), 0.5, "weight");
                expectEq(rs.getBoolean("in_stock"), true, "in_stock");
                expectEq(rs.getDate("added"), Date.valueOf("2024-02-29"), "added");
                expectEq(rs.getTimestamp("updated"), Timestamp.valueOf("2024-02-29 13:45:06"), "updated");
                expectEq(rs.getLong("big"), 1L << 40, "big");
                expect(!rs.next(), "more than one row for id 1");
            }
            ps.setInt(1, 2);
            try (ResultSet rs = ps.executeQuery()) {
                expect(rs.next(), "no row for id 2");
                expectEq(rs.getString("name"), "plum 'quoted'", "name");
                expect(rs.getBigDecimal("price") == null, "price not null");
                expect(rs.getTimestamp("updated") == null, "updated not null");
                rs.getLong("big");
                expect(rs.wasNull(), "big not null");
            }
        }
        // Parameters of each setter type in a WHERE clause.
        String[] wheres = {"name = ?", "price = ?", "updated = ?", "price > ? AND big > ?"};
        try (PreparedStatement ps = conn.prepareStatement("SELECT id FROM items WHERE " + wheres[0])) {
            ps.setString(1, "apple");
            expectEq(ids(ps), List.of(1), wheres[0]);
        }
        try (PreparedStatement ps = conn.prepareStatement("SELECT id FROM items WHERE " + wheres[1])) {
            ps.setBigDecimal(1, new BigDecimal("1.25"));
            expectEq(ids(ps), List.of(1), wheres[1]);
        }
        try (PreparedStatement ps = conn.prepareStatement("SELECT id FROM items WHERE " + wheres[2])) {
            ps.setTimestamp(1, Timestamp.valueOf("2024-02-29 13:45:06"));
            expectEq(ids(ps), List.of(1), wheres[2]);
        }
        try (PreparedStatement ps = conn.prepareStatement("SELECT id FROM items WHERE " + wheres[3])) {
            ps.setBigDecimal(1, new BigDecimal("1"));
            ps.setLong(2, 0);
            expectEq(ids(ps), List.of(1), wheres[3]);
        }
    }

    static List<Integer> ids(PreparedStatement ps) throws SQLException {
        List<Integer> ids = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                ids.add(rs.getInt(1));
            }
        }
        return ids;
    }

    static void resultSetMetaData(Connection conn) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("SELECT id, name, price, updated, big FROM items");
             ResultSet rs = ps.executeQuery()) {
            ResultSetMetaData md = rs.getMetaData();
            expectEq(md.getColumnCount(), 5, "column count");
            String[] names = {"id", "name", "price", "updated", "big"};
            int[] types = {Types.INTEGER, Types.VARCHAR, Types.NUMERIC, Types.TIMESTAMP, Types.BIGINT};
            String[] typeNames = {"int4", "text", "numeric", "timestamp", "int8"};
            for (int i = 0; i < names.length; i++) {
                expectEq(md.getColumnName(i + 1), names[i], "column name " + (i + 1));
                expectEq(md.getColumnType(i + 1), types[i], "column type of " + names[i]);
                expectEq(md.getColumnTypeName(i + 1), typeNames[i], "column type name of " + names[i]);
            }
        }
    }

    static void repeated(Connection conn) throws SQLException {
        // pgjdbc's prepareThreshold is 5: from the fifth execution on it uses a named statement (S_1, ...) and
        // asks for binary results.
        try (PreparedStatement ps = conn.prepareStatement("SELECT name, price FROM items WHERE id = ?")) {
            for (int i = 0; i < 10; i++) {
                ps.setInt(1, 1);
                try (ResultSet rs = ps.executeQuery()) {
                    expect(rs.next(), "no row on execution " + i);
                    expectEq(rs.getString(1), "apple", "name on execution " + i);
                    expectEq(rs.getBigDecimal(2), new BigDecimal("1.25"), "price on execution " + i);
                }
            }
        }
    }

    static void rollback(Connection conn) throws SQLException {
        conn.setAutoCommit(false);
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO items (id, name) VALUES (?, ?)");
             Statement st = conn.createStatement()) {
            ps.setInt(1, 10);
            ps.setString(2, "temporary");
            ps.executeUpdate();
            st.executeUpdate("UPDATE items SET name = 'changed' WHERE id = 1");
            try (ResultSet rs = st.executeQuery("SELECT count(*) FROM items")) {
                rs.next();
                expectEq(rs.getLong(1), 3L, "count inside the transaction");
            }
        }
        conn.rollback();
        try (Statement st = conn.createStatement();
             ResultSet rs = st.executeQuery("SELECT id, name FROM items ORDER BY id")) {
            List<String> rows = new ArrayList<>();
            while (rs.next()) {
                rows.add(rs.getInt(1) + ":" + rs.getString(2));
            }
            expectEq(rows, List.of("1:apple", "2:plum 'quoted'"), "rows after rollback");
        }
        conn.commit();
        conn.setAutoCommit(true);
    }

    static void commit(Connection conn) throws SQLException {
        conn.setAutoCommit(false);
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO items (id, name) VALUES (?, ?)")) {
            ps.setInt(1, 3);
            ps.setString(2, "fig");
            ps.executeUpdate();
        }
        conn.commit();
        conn.setAutoCommit(true);
        // Visible from another connection.
        try (Connection other = connect();
             PreparedStatement ps = other.prepareStatement("SELECT name FROM items WHERE id = ?")) {
            ps.setInt(1, 3);
            try (ResultSet rs = ps.executeQuery()) {
                expect(rs.next(), "committed row not visible");
                expectEq(rs.getString(1), "fig", "committed name");
            }
        }
    }

    static void batch(Connection conn) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO items (id, name, price) VALUES (?, ?, ?)")) {
            for (int i = 100; i < 200; i++) {
                ps.setInt(1, i);
                ps.setString(2, "item " + i);
                ps.setBigDecimal(3, new BigDecimal(i).movePointLeft(2));
                ps.addBatch();
            }
            int[] counts = ps.executeBatch();
            expectEq(counts.length, 100, "batch size");
            for (int c : counts) {
                expect(c == 1 || c == Statement.SUCCESS_NO_INFO, "batch update count " + c);
            }
        }
        try (Statement st = conn.createStatement();
             ResultSet rs = st.executeQuery("SELECT count(*), sum(price) FROM items WHERE id >= 100")) {
            rs.next();
            expectEq(rs.getLong(1), 100L, "batch rows");
            expectEq(rs.getBigDecimal(2), new BigDecimal("149.50"), "batch sum");
        }
    }

    static void errors(Connection conn) throws SQLException {
        String[][] cases = {
            {"INSERT INTO items (id, name) VALUES (1, 'duplicate')", "23505"},
            {"SELECT * FROM no_such_table", "42P01"},
            {"SELECT 1 / 0", "22012"},
            {"SELEC 1", "42601"},
            {"SELECT no_such_column FROM items", "42703"},
            {"INSERT INTO items (id) VALUES (50)", "23502"},
        };
        for (String[] c : cases) {
            try (Statement st = conn.createStatement()) {
                st.execute(c[0]);
                throw new AssertionError(c[0] + ": no error, expected SQLSTATE " + c[1]);
            } catch (SQLException e) {
                expectEq(e.getSQLState(), c[1], c[0] + " (" + e.getMessage() + ")");
            }
        }
        // The same through a PreparedStatement.
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO items (id, name) VALUES (?, ?)")) {
            ps.setInt(1, 1);
            ps.setString(2, "duplicate");
            ps.executeUpdate();
            throw new AssertionError("duplicate key through a PreparedStatement: no error");
        } catch (SQLException e) {
            expectEq(e.getSQLState(), "23505", "duplicate key through a PreparedStatement (" + e.getMessage() + ")");
        }
        // Inside a transaction, an error aborts it until rollback.
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
            try {
                st.execute("SELECT 1 / 0");
                throw new AssertionError("SELECT 1 / 0: no error");
            } catch (SQLException e) {
                expectEq(e.getSQLState(), "22012", "division by zero");
            }
            try {
                st.execute("SELECT 1");
                throw new AssertionError("a statement after an error in a transaction succeeded");
            } catch (SQLException e) {
                expectEq(e.getSQLState(), "25P02", "statement in a failed transaction");
            }
        }
        conn.rollback();
        conn.setAutoCommit(true);
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT 1")) {
            expect(rs.next() && rs.getInt(1) == 1, "connection unusable after errors");
        }
    }
}
