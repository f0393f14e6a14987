//! Keyed databases: the declaration and the schema rule.
//!
//! A database is keyless (the default) or keyed. A keyed database declares
//! its partition key once, at creation:
//!
//! ```sql
//! CREATE DATABASE shop WITH (partition_key = 'customer_id bigint');
//! ```
//!
//! Every table in it must then have that column, with that type, and a
//! primary key (if it has one) that includes it: rows sharing a partition key
//! value form a *row group*, and a key that spans row groups could not be
//! enforced one partition at a time.
//!

use datafusion::sql::sqlparser::ast::{Statement, Tag};
use serde::{Deserialize, Serialize};

use crate::error::{Result, SqlError, code};
use crate::storage::partition::MAX_PARTITIONS;
use crate::values::types::SqlType;

/// A keyed database's partition key column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionKey {
    pub column: String,
    pub ty: SqlType,
}

impl std::fmt::Display for PartitionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.column, self.ty)
    }
}

/// What a CREATE DATABASE's options declare.
#[derive(Debug, Default)]
pub struct DatabaseOptions {
    pub key: Option<PartitionKey>,
    /// Split points of the key space (stored key bytes, sorted); empty: one
    /// partition.
    pub splits: Vec<Vec<u8>>,
    /// Replicas of the database's data (None: the cluster's count).
    pub replicas: Option<usize>,
}

/// The most replicas a database may ask for.
pub const MAX_REPLICAS: usize = 7;

/// Reads `partition_key`, `partitions`, `split_points` and `replicas`.
pub fn database_options(tags: Option<&Vec<Tag>>) -> Result<DatabaseOptions> {
    let mut key = None;
    let mut count: Option<usize> = None;
    let mut points: Option<String> = None;
    let mut replicas: Option<usize> = None;
    for tag in tags.into_iter().flatten() {
        let name = tag.key.to_string();
        match name.as_str() {
            "partition_key" => key = Some(parse_partition_key(&tag.value)?),
            "partitions" => {
                let n: usize =
                    tag.value.trim().parse().ok().filter(|n| (1..=MAX_PARTITIONS).contains(n)).ok_or_else(|| {
                        SqlError::new(
                            code::INVALID_PARAMETER_VALUE,
                            format!("partitions must be an integer from 1 to {MAX_PARTITIONS}, not \"{}\"", tag.value),
                        )
                    })?;
                count = Some(n);
            }
            "split_points" => points = Some(tag.value.clone()),
            "replicas" => {
                let n: usize =
                    tag.value.trim().parse().ok().filter(|n| (1..=MAX_REPLICAS).contains(n)).ok_or_else(|| {
                        SqlError::new(
                            code::INVALID_PARAMETER_VALUE,
                            format!("replicas must be an integer from 1 to {MAX_REPLICAS}, not \"{}\"", tag.value),
                        )
                    })?;
                replicas = Some(n);
            }
            _ => {
                return Err(SqlError::new(code::SYNTAX, format!("option \"{name}\" not recognized")).with_hint(
                    "CREATE DATABASE accepts WITH (partition_key = 'column type', partitions = n | split_points = 'v1, v2, …', replicas = n).",
                ));
            }
        }
    }
    let Some(key) = key else {
        if count.is_some() || points.is_some() {
            return Err(SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                "partitions and split_points need a partition_key: a keyless database has one partition",
            ));
        }
        return Ok(DatabaseOptions { replicas, ..Default::default() });
    };
    let splits = match (count, points) {
        (Some(_), Some(_)) => {
            return Err(SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                "give either partitions or split_points, not both",
            ));
        }
        (Some(n), None) => crate::storage::partition::even_splits(key.ty, n)?,
        (None, Some(text)) => crate::storage::partition::parse_split_points(&text, &key)?,
        (None, None) => Vec::new(),
    };
    Ok(DatabaseOptions { key: Some(key), splits, replicas })
}

/// Parses `'customer_id bigint'`.
fn parse_partition_key(text: &str) -> Result<PartitionKey> {
    let text = text.trim();
    let Some((column, ty)) = text.split_once(char::is_whitespace) else {
        return Err(SqlError::new(
            code::INVALID_PARAMETER,
            format!("partition_key must name a column and its type, as in 'customer_id bigint', not '{text}'"),
        ));
    };
    // An identifier: folded to lower case unless double-quoted.
    let column = match column.strip_prefix('"').and_then(|c| c.strip_suffix('"')) {
        Some(quoted) => quoted.to_string(),
        None => column.to_lowercase(),
    };
    let ty = SqlType::parse(ty)?;
    if !partitionable(ty) {
        return Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            format!("a partition key of type {ty} is not supported (use an integer, text, uuid, bytea or date)"),
        ));
    }
    Ok(PartitionKey { column, ty })
}

/// Types whose values compare exactly, so that equal keys are one row group.
fn partitionable(ty: SqlType) -> bool {
    matches!(
        ty,
        SqlType::Int2
            | SqlType::Int4
            | SqlType::Int8
            | SqlType::Text
            | SqlType::Varchar(_)
            | SqlType::Char(_)
            | SqlType::Uuid
            | SqlType::Bytea
            | SqlType::Date
    )
}

/// Checks a new table against its keyed database's rule (see the module
/// documentation). `columns` are the table's (name, type); `primary_key` its
/// primary-key columns (empty: none).
pub fn check_table(
    db: &str,
    key: &PartitionKey,
    table: &str,
    columns: &[(String, SqlType)],
    primary_key: &[String],
) -> Result<()> {
    let Some((_, ty)) = columns.iter().find(|(n, _)| *n == key.column) else {
        return Err(SqlError::new(
            code::INVALID_TABLE_DEFINITION,
            format!(
                "table \"{table}\" must have the partition key column \"{}\" ({}) of keyed database \"{db}\"",
                key.column, key.ty
            ),
        ));
    };
    if *ty != key.ty {
        return Err(SqlError::new(
            code::INVALID_TABLE_DEFINITION,
            format!(
                "column \"{}\" of table \"{table}\" is {ty}, but the partition key of keyed database \"{db}\" is {}",
                key.column, key.ty
            ),
        ));
    }
    if !primary_key.is_empty() && !primary_key.contains(&key.column) {
        return Err(SqlError::new(
            code::INVALID_TABLE_DEFINITION,
            format!(
                "the primary key of table \"{table}\" must include the partition key column \"{}\" of keyed database \"{db}\"",
                key.column
            ),
        ));
    }
    Ok(())
}

/// A unique index or constraint in a keyed database must include the
/// partition key: uniqueness is enforced one partition at a time.
pub fn check_unique(def: &crate::storage::catalog::TableDef, key: &PartitionKey, columns: &[String]) -> Result<()> {
    if columns.contains(&key.column) {
        return Ok(());
    }
    Err(SqlError::new(
        code::INVALID_TABLE_DEFINITION,
        format!(
            "a unique index on table \"{}\" must include the partition key column \"{}\" of keyed database \"{}\"",
            def.name, key.column, def.db
        ),
    ))
}

/// The row group a transaction is bound to: the partition key field's
/// bytes (the order-preserving encoding, equal exactly when the values are;
/// None for NULL) and the value as text, for messages.
#[derive(Debug, Clone)]
pub struct RowGroup {
    pub txn: tessera_engine::mvcc::TxnId,
    pub key: Option<Vec<u8>>,
    pub shown: String,
}

/// Checks that `rows` (engine tuples of table `def`) all belong to the
/// transaction's row group, binding it to the first row's when it has none.
pub fn check_rows<'r>(
    db: &str,
    key: &PartitionKey,
    def: &crate::storage::catalog::TableDef,
    txn: tessera_engine::mvcc::TxnId,
    bound: &mut Option<RowGroup>,
    rows: impl IntoIterator<Item = &'r Vec<u8>>,
) -> Result<()> {
    let Some(col) = def.column(&key.column) else { return Ok(()) };
    let field = col.field as usize;
    for row in rows {
        let tuple = tessera_engine::tuple::Tuple::parse(row).map_err(|e| SqlError::internal(e.to_string()))?;
        check_value(db, key, def, txn, bound, tuple.field(field))?;
    }
    Ok(())
}

/// Checks (or binds) the row group of one partition key value (stored
/// bytes; None for NULL).
pub fn check_value(
    db: &str,
    key: &PartitionKey,
    def: &crate::storage::catalog::TableDef,
    txn: tessera_engine::mvcc::TxnId,
    bound: &mut Option<RowGroup>,
    value: Option<&[u8]>,
) -> Result<()> {
    let shown = || value.map_or_else(|| "NULL".to_string(), |v| crate::storage::partition::show_value(key.ty, v));
    match bound {
        Some(g) if g.txn == txn => {
            if g.key.as_deref() != value {
                return Err(SqlError::new(
                    code::INVALID_TXN_STATE,
                    format!(
                        "the transaction is bound to row group {col} = {} of keyed database \"{db}\" and cannot write {col} = {} in table \"{}\"",
                        g.shown,
                        shown(),
                        def.name,
                        col = key.column,
                    ),
                )
                .with_hint("A transaction in a keyed database writes rows of one partition key value only."));
            }
        }
        _ => *bound = Some(RowGroup { txn, key: value.map(<[u8]>::to_vec), shown: shown() }),
    }
    Ok(())
}

/// What a fast-path write needs to check its rows' row group.
pub struct RowGroupCheck<'a> {
    pub db: &'a str,
    pub key: &'a PartitionKey,
    pub bound: &'a mut Option<RowGroup>,
}

impl RowGroupCheck<'_> {
    pub fn check(
        &mut self,
        def: &crate::storage::catalog::TableDef,
        txn: tessera_engine::mvcc::TxnId,
        row: &Vec<u8>,
    ) -> Result<()> {
        check_rows(self.db, self.key, def, txn, self.bound, [row])
    }

    /// Checks the row group of the row with engine primary key `pk`, which
    /// contains the partition key (the fast path writes only such tables).
    pub fn check_key(
        &mut self,
        def: &crate::storage::catalog::TableDef,
        txn: tessera_engine::mvcc::TxnId,
        pk: &[u8],
    ) -> Result<()> {
        let pos = def.primary_key.iter().position(|c| *c == self.key.column);
        let Some(pos) = pos.filter(|_| def.rowid_field.is_none()) else {
            return Err(SqlError::internal("a fast-path write in a keyed database without the key in its primary key"));
        };
        let value = tessera_engine::tuple::key_field(pk, pos);
        check_value(self.db, self.key, def, txn, self.bound, value.as_deref())
    }
}

/// UPDATE and DELETE in a keyed database must name their row group: a
/// top-level `key = constant` (or parameter) condition in WHERE.
pub fn check_names_row_group(db: &str, key: &PartitionKey, stmt: &Statement) -> Result<()> {
    use datafusion::sql::sqlparser::ast::Statement as S;
    let (what, selection) = match stmt {
        S::Update(u) => ("UPDATE", u.selection.as_ref()),
        S::Delete(d) => ("DELETE", d.selection.as_ref()),
        _ => return Ok(()),
    };
    if selection.is_some_and(|w| names_key(w, &key.column)) {
        return Ok(());
    }
    Err(SqlError::new(
        code::FEATURE_NOT_SUPPORTED,
        format!("{what} in keyed database \"{db}\" must name one row group with a condition {} = value", key.column),
    )
    .with_hint("A write in a keyed database touches the rows of one partition key value."))
}

fn names_key(e: &datafusion::sql::sqlparser::ast::Expr, column: &str) -> bool {
    use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr};
    match e {
        Expr::Nested(inner) => names_key(inner, column),
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => names_key(left, column) || names_key(right, column),
        Expr::BinaryOp { left, op: BinaryOperator::Eq, right } => {
            (is_column(left, column) && is_constant(right)) || (is_column(right, column) && is_constant(left))
        }
        _ => false,
    }
}

fn is_column(e: &datafusion::sql::sqlparser::ast::Expr, column: &str) -> bool {
    use datafusion::sql::sqlparser::ast::{Expr, Ident};
    let name = |i: &Ident| if i.quote_style.is_some() { i.value.clone() } else { i.value.to_lowercase() };
    match e {
        Expr::Identifier(i) => name(i) == column,
        Expr::CompoundIdentifier(parts) => parts.last().is_some_and(|i| name(i) == column),
        Expr::Nested(inner) => is_column(inner, column),
        _ => false,
    }
}

fn is_constant(e: &datafusion::sql::sqlparser::ast::Expr) -> bool {
    use datafusion::sql::sqlparser::ast::Expr;
    match e {
        Expr::Value(_) | Expr::TypedString { .. } => true,
        Expr::Nested(inner) | Expr::UnaryOp { expr: inner, .. } => is_constant(inner),
        Expr::Cast { expr, .. } => is_constant(expr),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::database::{parse_alter_database_split, parse_create_database_with};

    fn options_of(sql: &str) -> Result<DatabaseOptions> {
        match parse_create_database_with(sql).expect("recognized")? {
            Statement::CreateDatabase { with_tags, .. } => database_options(with_tags.as_ref()),
            other => panic!("{other:?}"),
        }
    }

    fn key_of(sql: &str) -> Result<Option<PartitionKey>> {
        options_of(sql).map(|o| o.key)
    }

    #[test]
    fn recognizes_a_split() {
        let split = |sql: &str| match parse_alter_database_split(sql).expect("recognized").unwrap() {
            Statement::AlterSchema(a) => (a.name.to_string(), a.operations[0].to_string()),
            other => panic!("{other:?}"),
        };
        assert_eq!(split("ALTER DATABASE shop SPLIT AT (500);").0, "shop");
        assert!(split("alter database \"Shop\" split at (-5)").1.contains("'-5'"));
        assert!(split("ALTER DATABASE s SPLIT AT ('m')").1.contains("'m'"));
        assert!(parse_alter_database_split("ALTER DATABASE s SPLIT AT 5").unwrap().is_err());
        assert!(parse_alter_database_split("ALTER DATABASE s SPLIT AT (1, 2)").unwrap().is_err());
        assert!(parse_alter_database_split("ALTER DATABASE s RENAME TO t").is_none());
        assert!(parse_alter_database_split("ALTER TABLE t ADD COLUMN split int").is_none());
    }

    #[test]
    fn reads_partition_counts_and_split_points() {
        let o = options_of("CREATE DATABASE s WITH (partition_key = 'id bigint', partitions = 4)").unwrap();
        assert_eq!(o.splits.len(), 3);
        let o = options_of("CREATE DATABASE s WITH (partition_key = 'id int', split_points = '300, -5, 20')").unwrap();
        let shown: Vec<String> =
            o.splits.iter().map(|b| crate::storage::partition::show_value(SqlType::Int4, b)).collect();
        assert_eq!(shown, ["-5", "20", "300"]);
        let bad = |sql: &str| options_of(sql).unwrap_err().code;
        assert_eq!(bad("CREATE DATABASE s WITH (partition_key = 'id int', partitions = 0)"), code::INVALID_PARAMETER);
        assert_eq!(bad("CREATE DATABASE s WITH (partition_key = 'id int', partitions = 'x')"), code::INVALID_PARAMETER);
        assert_eq!(bad("CREATE DATABASE s WITH (partitions = 2)"), code::INVALID_PARAMETER);
        assert_eq!(
            bad("CREATE DATABASE s WITH (partition_key = 'id int', partitions = 2, split_points = '1')"),
            code::INVALID_PARAMETER
        );
        assert_eq!(
            bad("CREATE DATABASE s WITH (partition_key = 'id int', split_points = '1, 1')"),
            code::INVALID_PARAMETER
        );
        assert_eq!(
            bad("CREATE DATABASE s WITH (partition_key = 'id int', split_points = 'a')"),
            code::INVALID_PARAMETER
        );
    }

    #[test]
    fn recognizes_the_declaration() {
        let k = key_of("CREATE DATABASE shop WITH (partition_key = 'customer_id bigint');").unwrap().unwrap();
        assert_eq!(k, PartitionKey { column: "customer_id".into(), ty: SqlType::Int8 });
        let k = key_of("create database if not exists \"Shop\" with (PARTITION_KEY='Region text')").unwrap().unwrap();
        assert_eq!(k, PartitionKey { column: "region".into(), ty: SqlType::Text });
    }

    #[test]
    fn leaves_other_statements_to_sqlparser() {
        assert!(parse_create_database_with("CREATE DATABASE shop").is_none());
        assert!(parse_create_database_with("CREATE TABLE t (a int) WITH (fillfactor = 90)").is_none());
        assert!(parse_create_database_with("SELECT 1").is_none());
    }

    #[test]
    fn rejects_what_it_does_not_understand() {
        assert_eq!(key_of("CREATE DATABASE s WITH (colour = 'red')").unwrap_err().code, code::SYNTAX);
        assert_eq!(key_of("CREATE DATABASE s WITH (partition_key = 'id')").unwrap_err().code, code::INVALID_PARAMETER);
        assert_eq!(
            key_of("CREATE DATABASE s WITH (partition_key = 'id float8')").unwrap_err().code,
            code::FEATURE_NOT_SUPPORTED
        );
        assert!(parse_create_database_with("CREATE DATABASE s WITH partition_key = 'id int'").unwrap().is_err());
        assert!(parse_create_database_with("CREATE DATABASE s WITH (partition_key 'id int')").unwrap().is_err());
        let two = parse_create_database_with("CREATE DATABASE s WITH (partition_key = 'id int'); SELECT 1");
        assert_eq!(two.unwrap().unwrap_err().code, code::ACTIVE_TXN);
    }

    #[test]
    fn tables_must_carry_the_key() {
        let key = PartitionKey { column: "customer_id".into(), ty: SqlType::Int8 };
        let cols = |v: &[(&str, SqlType)]| v.iter().map(|(n, t)| (n.to_string(), *t)).collect::<Vec<_>>();
        let ok = cols(&[("customer_id", SqlType::Int8), ("id", SqlType::Int4)]);
        check_table("shop", &key, "orders", &ok, &["customer_id".into(), "id".into()]).unwrap();
        check_table("shop", &key, "notes", &ok, &[]).unwrap();
        let missing = check_table("shop", &key, "orders", &cols(&[("id", SqlType::Int4)]), &[]).unwrap_err();
        assert_eq!(missing.code, code::INVALID_TABLE_DEFINITION);
        assert!(missing.message.contains("\"customer_id\""), "{}", missing.message);
        let wrong = cols(&[("customer_id", SqlType::Int4)]);
        assert!(check_table("shop", &key, "orders", &wrong, &[]).unwrap_err().message.contains("is integer"));
        let pk = check_table("shop", &key, "orders", &ok, &["id".into()]).unwrap_err();
        assert!(pk.message.contains("primary key"), "{}", pk.message);
    }
}
