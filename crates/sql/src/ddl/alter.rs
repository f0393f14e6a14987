//! ALTER TABLE: add, drop and rename columns, rename the table, add and
//! drop constraints (PRIMARY KEY, UNIQUE, CHECK), NOT NULL and DEFAULT.
//!
//! Like all DDL it takes effect at once (see `ddl`). Adding a column with a
//! default rewrites existing rows; ADD PRIMARY KEY on a table that has only
//! a hidden row id rebuilds it under the new key.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    AlterColumnOperation, AlterTableOperation, ColumnOption, Ident, ObjectName, RenameTableNameKind, TableConstraint,
};
use tessera_engine::tuple::{Tuple, TupleBuilder};
use tessera_engine::{EngineError, IndexKind, IndexSpec, Isolation, KeyRange, PRIMARY};

use crate::ddl::view_ddl::{ColumnChange, alter_view};
use crate::ddl::{create_index_everywhere, engine_spec, fields_of, index_columns};
use crate::error::{Result, SqlError, code};
use crate::exec::dml::target_table;
use crate::parser::{ident, object_name};
use crate::session::{Output, Session};
use crate::storage::catalog::{CheckDef, ColumnDef, IndexDef, IndexMethod, TableDef};
use crate::values::types::SqlType;

fn cmd(tag: &str) -> Result<Option<Output>> {
    Ok(Some(Output::Command(tag.to_string())))
}

pub(crate) async fn alter_table(
    session: &mut Session,
    name: &ObjectName,
    if_exists: bool,
    ops: &[AlterTableOperation],
) -> Result<Option<Output>> {
    if let Some(view) = session.catalog().view(session.db(), &object_name(name)) {
        return alter_view(session, &view, ops);
    }
    for op in ops {
        let def = match target_table(session, name) {
            Ok(d) => d,
            Err(_) if if_exists => return cmd("ALTER TABLE"),
            Err(e) => return Err(e),
        };
        alter_one(session, def, op).await?;
    }
    cmd("ALTER TABLE")
}

/// Runs a query in the session's open transaction, or in one begun (and
/// ended) for it when there is none: a transaction block's own writes are
/// seen, and the block itself is left as it was.
async fn run_query(session: &mut Session, sql: &str) -> Result<Output> {
    let stmt = crate::plan::parse_sql(sql)?.pop().expect("statement");
    let started = session.txn.lock().is_none();
    if started {
        *session.txn.lock() = Some(session.begin_txn(Isolation::Snapshot)?);
    }
    let plan = session.plan_query(stmt, &[]).await;
    let result = match plan {
        Ok(p) => session.collect(p).await,
        Err(e) => Err(e),
    };
    if started && let Some(t) = session.txn.lock().take() {
        t.abort();
    }
    result
}

/// DDL is not transactional: what rewrites a table's rows does so in a
/// transaction of its own, which would neither see the rows a transaction
/// block has written so far nor keep them (they would be lost at its
/// COMMIT, or the rewrite would undo them). So inside a block that has
/// written, such a statement is refused (and the block fails, as after any
/// error) rather than losing those writes.
fn refuse_rewrite_after_writes(session: &Session, what: &str) -> Result<()> {
    if session.txn.lock().as_ref().is_some_and(|t| !t.is_read_only()) {
        return Err(SqlError::new(
            code::ACTIVE_TXN,
            format!("{what} cannot run in a transaction block that has written rows: it rewrites the table's rows in a transaction of its own"),
        )
        .with_hint("Run it before the block's writes, or in a transaction of its own.".to_string()));
    }
    Ok(())
}

/// Runs a SQL query expected to return one integer.
async fn count(session: &mut Session, sql: &str) -> Result<i64> {
    match run_query(session, sql).await? {
        Output::Rows { batches, .. } => {
            let b = batches.iter().find(|b| b.num_rows() > 0).ok_or_else(|| SqlError::internal("no count"))?;
            let v = datafusion::common::ScalarValue::try_from_array(b.column(0), 0)?;
            Ok(v.to_string().parse().unwrap_or(0))
        }
        _ => Err(SqlError::internal("no count")),
    }
}

async fn alter_one(session: &mut Session, def: Arc<TableDef>, op: &AlterTableOperation) -> Result<()> {
    if let Some(key) = session.catalog().database(&def.db).and_then(|d| d.partition_key) {
        keyed_guard(&def, &key, op)?;
    }
    match op {
        AlterTableOperation::AddColumn { if_not_exists, column_def, .. } => {
            add_column(session, &def, *if_not_exists, column_def).await
        }
        AlterTableOperation::DropColumn { column_names, if_exists, .. } => {
            drop_columns(session, &def, column_names, *if_exists)
        }
        AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
            rename_column(session, &def, old_column_name, new_column_name)
        }
        AlterTableOperation::RenameTable { table_name } => rename_table(session, &def, table_name),
        AlterTableOperation::AddConstraint { constraint, .. } => add_constraint(session, &def, constraint).await,
        AlterTableOperation::DropConstraint { if_exists, name, .. } => drop_constraint(session, &def, *if_exists, name),
        AlterTableOperation::AlterColumn { column_name, op } => alter_column(session, &def, column_name, op).await,
        other => Err(SqlError::unsupported(format!("ALTER TABLE {other}"))),
    }
}

/// The table's name as an SQL identifier, for the queries ALTER runs on it.
fn quoted_name(def: &TableDef) -> String {
    format!("\"{}\"", def.name.replace('"', "\"\""))
}

/// ADD COLUMN, of any type but a serial one or a domain with constraints.
async fn add_column(
    session: &mut Session,
    def: &TableDef,
    if_not_exists: bool,
    column_def: &datafusion::sql::sqlparser::ast::ColumnDef,
) -> Result<()> {
    let quoted = quoted_name(def);
    let cname = ident(&column_def.name);
    if def.column(&cname).is_some() {
        if if_not_exists {
            return Ok(());
        }
        return Err(SqlError::new(
            code::DUPLICATE_COLUMN,
            format!("column \"{cname}\" of relation \"{}\" already exists", def.name),
        ));
    }
    let type_name = column_def.data_type.to_string();
    let resolved = session.catalog().resolve_type(&def.db, &type_name)?;
    if let Some(d) = resolved.domain.as_ref().and_then(|d| d.domain())
        && (d.not_null || !d.checks.is_empty())
    {
        return Err(SqlError::unsupported(format!(
            "ALTER TABLE ADD COLUMN of a domain with constraints ({type_name})"
        )));
    }
    let mut col = ColumnDef {
        name: cname.clone(),
        ty: resolved.ty,
        not_null: false,
        default: resolved.domain.as_ref().and_then(|d| d.domain()).and_then(|d| d.default.clone()),
        identity: None,
        field: def.next_field,
        domain: resolved.domain.as_ref().map(|d| d.oid),
    };
    let ty = col.ty;
    for opt in &column_def.options {
        match &opt.option {
            ColumnOption::NotNull => col.not_null = true,
            ColumnOption::Null => {}
            ColumnOption::Default(e) => col.default = Some(e.to_string()),
            other => return Err(SqlError::unsupported(format!("ALTER TABLE ADD COLUMN with {other}"))),
        }
    }
    if SqlType::is_serial_name(&type_name) {
        return Err(SqlError::unsupported("ADD COLUMN of a serial column"));
    }
    // Existing rows take the default (or NULL); compute it once.
    let rows = count(session, &format!("SELECT count(*) FROM {quoted}")).await?;
    let fill: Option<Vec<u8>> = match (&col.default, rows > 0) {
        (Some(d), true) => {
            refuse_rewrite_after_writes(session, "ALTER TABLE ADD COLUMN with a default")?;
            let sql = format!("SELECT CAST({d} AS {})", crate::exec::dml::cast_type(ty));
            match run_query(session, &sql).await? {
                Output::Rows { batches, .. } => {
                    let b = &batches[0];
                    let arr = crate::values::assign::cast_to(b.column(0), ty, &cname, session.zone())?;
                    crate::values::rowcodec::encode_column(ty, &arr)?.pop().flatten()
                }
                _ => None,
            }
        }
        _ => None,
    };
    if col.not_null && rows > 0 && fill.is_none() {
        return Err(SqlError::new(
            code::NOT_NULL,
            format!("column \"{cname}\" of relation \"{}\" contains null values", def.name),
        ));
    }
    let _g = session.catalog().ddl_lock();
    if let Some(value) = fill {
        rewrite_rows(session, def, |fields| {
            while fields.len() <= col.field as usize {
                fields.push(None);
            }
            fields[col.field as usize] = Some(value.clone());
        })?;
    }
    let mut new_def = def.clone();
    new_def.columns.push(col);
    new_def.next_field += 1;
    session.catalog().put_table(new_def)?;
    Ok(())
}

fn drop_columns(session: &mut Session, def: &TableDef, column_names: &[Ident], if_exists: bool) -> Result<()> {
    let _g = session.catalog().ddl_lock();
    let mut new_def = def.clone();
    for c in column_names {
        let cname = ident(c);
        if new_def.column(&cname).is_none() {
            if if_exists {
                continue;
            }
            return Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column \"{cname}\" of relation \"{}\" does not exist", def.name),
            ));
        }
        if new_def.primary_key.contains(&cname) {
            return Err(SqlError::unsupported("dropping a primary key column"));
        }
        let catalog = session.catalog();
        crate::ddl::view_ddl::check_column_change(catalog, &def.db, &def.name, def.oid, &cname, ColumnChange::Drop)?;
        for ix in new_def.indexes.iter().filter(|i| i.columns.contains(&cname)) {
            for engine in session.catalog().engines_of_name(&def.db)? {
                engine.drop_index(&def.engine_name, &ix.name)?;
            }
        }
        new_def.indexes.retain(|i| !i.columns.contains(&cname));
        new_def.columns.retain(|x| x.name != cname);
    }
    session.catalog().put_table(new_def)?;
    Ok(())
}

fn rename_column(
    session: &mut Session,
    def: &TableDef,
    old_column_name: &Ident,
    new_column_name: &Ident,
) -> Result<()> {
    let _g = session.catalog().ddl_lock();
    let (old, new) = (ident(old_column_name), ident(new_column_name));
    let catalog = session.catalog();
    crate::ddl::view_ddl::check_column_change(catalog, &def.db, &def.name, def.oid, &old, ColumnChange::Rename)?;
    let mut new_def = def.clone();
    if new_def.column(&new).is_some() {
        return Err(SqlError::new(
            code::DUPLICATE_COLUMN,
            format!("column \"{new}\" of relation \"{}\" already exists", def.name),
        ));
    }
    let col = new_def
        .columns
        .iter_mut()
        .find(|c| c.name == old)
        .ok_or_else(|| SqlError::new(code::UNDEFINED_COLUMN, format!("column \"{old}\" does not exist")))?;
    col.name = new.clone();
    for c in new_def.primary_key.iter_mut().chain(new_def.indexes.iter_mut().flat_map(|i| i.columns.iter_mut())) {
        if *c == old {
            *c = new.clone();
        }
    }
    session.catalog().put_table(new_def)?;
    Ok(())
}

fn rename_table(session: &mut Session, def: &TableDef, table_name: &RenameTableNameKind) -> Result<()> {
    let _g = session.catalog().ddl_lock();
    let new = match table_name {
        RenameTableNameKind::As(n) | RenameTableNameKind::To(n) => object_name(n),
    };
    if session.catalog().relation_oid(&def.db, &new).is_some() {
        return Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{new}\" already exists")));
    }
    let mut new_def = def.clone();
    new_def.name = new.clone();
    session.catalog().put_table(new_def)?;
    crate::ddl::view_ddl::relation_renamed(session.catalog(), &def.db, def.oid, &def.name, &new)?;
    Ok(())
}

/// ADD CONSTRAINT: PRIMARY KEY, UNIQUE or CHECK (which every row must pass).
async fn add_constraint(session: &mut Session, def: &TableDef, constraint: &TableConstraint) -> Result<()> {
    match constraint {
        TableConstraint::PrimaryKey(p) => {
            let cols = index_columns(&p.columns)?;
            if let Some(key) = session.catalog().database(&def.db).and_then(|d| d.partition_key) {
                let columns: Vec<_> = def.columns.iter().map(|c| (c.name.clone(), c.ty)).collect();
                crate::storage::keyed::check_table(&def.db, &key, &def.name, &columns, &cols)?;
            }
            add_primary_key(session, def, cols).await?;
        }
        TableConstraint::Unique(u) => {
            let cols = index_columns(&u.columns)?;
            let ci = CreateIndexLite { name: u.name.as_ref().map(ident), cols, unique: true };
            add_unique(session, def, ci)?;
        }
        TableConstraint::Check(c) => {
            let quoted = quoted_name(def);
            let bad = count(session, &format!("SELECT count(*) FROM {quoted} WHERE NOT ({})", c.expr)).await?;
            let cname = c.name.as_ref().map(ident).unwrap_or_else(|| format!("{}_check", def.name));
            if bad > 0 {
                return Err(SqlError::new(
                    code::CHECK,
                    format!("check constraint \"{cname}\" of relation \"{}\" is violated by some row", def.name),
                ));
            }
            let _g = session.catalog().ddl_lock();
            let mut new_def = def.clone();
            new_def.checks.push(CheckDef { name: cname, expr: c.expr.to_string() });
            session.catalog().put_table(new_def)?;
        }
        other => return Err(SqlError::unsupported(format!("ADD CONSTRAINT {other}"))),
    }
    Ok(())
}

/// DROP CONSTRAINT: a UNIQUE constraint (with its index) or a CHECK.
fn drop_constraint(session: &mut Session, def: &TableDef, if_exists: bool, name: &Ident) -> Result<()> {
    let _g = session.catalog().ddl_lock();
    let cname = ident(name);
    let mut new_def = def.clone();
    if let Some(ix) = new_def.indexes.iter().find(|i| i.name == cname && i.constraint).cloned() {
        if ix.primary {
            return Err(SqlError::unsupported("dropping a primary key constraint"));
        }
        for engine in session.catalog().engines_of_name(&def.db)? {
            engine.drop_index(&def.engine_name, &ix.name)?;
        }
        new_def.indexes.retain(|i| i.name != cname);
    } else if new_def.checks.iter().any(|c| c.name == cname) {
        new_def.checks.retain(|c| c.name != cname);
    } else if if_exists {
        return Ok(());
    } else {
        return Err(SqlError::new(
            code::UNDEFINED_OBJECT,
            format!("constraint \"{cname}\" of relation \"{}\" does not exist", def.name),
        ));
    }
    session.catalog().put_table(new_def)?;
    Ok(())
}

/// ALTER COLUMN: SET or DROP NOT NULL (SET checks the rows first), and
/// SET or DROP DEFAULT.
async fn alter_column(
    session: &mut Session,
    def: &TableDef,
    column_name: &Ident,
    op: &AlterColumnOperation,
) -> Result<()> {
    let quoted = quoted_name(def);
    let cname = ident(column_name);
    if def.column(&cname).is_none() {
        return Err(SqlError::new(
            code::UNDEFINED_COLUMN,
            format!("column \"{cname}\" of relation \"{}\" does not exist", def.name),
        ));
    }
    if matches!(op, AlterColumnOperation::SetDataType { .. }) {
        let catalog = session.catalog();
        crate::ddl::view_ddl::check_column_change(catalog, &def.db, &def.name, def.oid, &cname, ColumnChange::Retype)?;
    }
    if matches!(op, AlterColumnOperation::SetNotNull) {
        let nulls = count(session, &format!("SELECT count(*) FROM {quoted} WHERE \"{cname}\" IS NULL")).await?;
        if nulls > 0 {
            return Err(SqlError::new(
                code::NOT_NULL,
                format!("column \"{cname}\" of relation \"{}\" contains null values", def.name),
            ));
        }
    }
    let _g = session.catalog().ddl_lock();
    let mut new_def = def.clone();
    let col = new_def.columns.iter_mut().find(|c| c.name == cname).expect("column");
    match op {
        AlterColumnOperation::SetNotNull => col.not_null = true,
        AlterColumnOperation::DropNotNull => {
            if def.primary_key.contains(&cname) {
                return Err(SqlError::new(code::INVALID_PK, format!("column \"{cname}\" is in a primary key")));
            }
            col.not_null = false
        }
        AlterColumnOperation::SetDefault { value } => col.default = Some(value.to_string()),
        AlterColumnOperation::DropDefault => col.default = None,
        _ => return Err(SqlError::unsupported("changing a column's type")),
    }
    session.catalog().put_table(new_def)?;
    Ok(())
}

struct CreateIndexLite {
    name: Option<String>,
    cols: Vec<String>,
    unique: bool,
}

fn add_unique(session: &mut Session, def: &TableDef, ci: CreateIndexLite) -> Result<()> {
    let _g = session.catalog().ddl_lock();
    let name = ci.name.unwrap_or_else(|| format!("{}_{}_key", def.name, ci.cols.join("_")));
    if session.catalog().index(&def.db, &name).is_some() {
        return Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
    }
    if ci.unique
        && let Some(key) = session.catalog().database(&def.db).and_then(|d| d.partition_key)
    {
        crate::storage::keyed::check_unique(def, &key, &ci.cols)?;
    }
    for c in &ci.cols {
        if let Some(col) = def.column(c)
            && !col.ty.indexable()
        {
            return Err(SqlError::unsupported(format!("a unique constraint on a column of type {}", col.ty)));
        }
    }
    let fields = fields_of(def, &ci.cols)?;
    create_index_everywhere(session, def, IndexSpec::new(name.clone(), IndexKind::Ordered, ci.unique, fields))?;
    let mut new_def = def.clone();
    new_def.indexes.push(IndexDef {
        name,
        oid: session.catalog().alloc_oid_in(&session.info.db)?,
        columns: ci.cols,
        unique: ci.unique,
        method: IndexMethod::Btree,
        primary: false,
        constraint: true,
    });
    session.catalog().put_table(new_def)
}

/// ADD PRIMARY KEY on a table with a hidden row id: the table is rebuilt
/// under the new key (a new engine table in each partition, its rows
/// copied there by the partition's primary, then the catalog switches
/// over), so lookups by the key are direct.
async fn add_primary_key(session: &mut Session, def: &TableDef, cols: Vec<String>) -> Result<()> {
    if def.rowid_field.is_none() {
        return Err(SqlError::new(
            code::INVALID_PK,
            format!("multiple primary keys for table \"{}\" are not allowed", def.name),
        ));
    }
    refuse_rewrite_after_writes(session, "ALTER TABLE ADD PRIMARY KEY")?;
    let _g = session.catalog().ddl_lock();
    let mut new_def = def.clone();
    for c in &cols {
        let col = new_def.columns.iter_mut().find(|x| &x.name == c).ok_or_else(|| {
            SqlError::new(code::UNDEFINED_COLUMN, format!("column \"{c}\" of relation \"{}\" does not exist", def.name))
        })?;
        col.not_null = true;
    }
    let pk_name = format!("{}_pkey", def.name);
    if session.catalog().index(&def.db, &pk_name).is_some() {
        return Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{pk_name}\" already exists")));
    }
    new_def.primary_key = cols.clone();
    new_def.rowid_field = None;
    new_def.indexes.push(IndexDef {
        name: pk_name.clone(),
        oid: session.catalog().alloc_oid_in(&session.info.db)?,
        columns: cols.clone(),
        unique: true,
        method: IndexMethod::Btree,
        primary: true,
        constraint: true,
    });
    let new_engine_name = format!("t{}_{}", def.oid, session.catalog().alloc_oid_in(&session.info.db)?);
    new_def.engine_name = new_engine_name.clone();
    let spec = engine_spec(&new_def, &new_engine_name)?;
    let parts = session.catalog().engines_of_name(&def.db)?;
    // Each partition copies its own rows, where they are (on its primary):
    // a primary key that includes the partition key (the rule in keyed
    // databases) is unique per partition.
    let copied = tokio::task::block_in_place(|| {
        for (i, part) in parts.iter().enumerate() {
            if let Err(e) = part.copy_table(&def.engine_name, spec.clone()) {
                // The partition that failed dropped its copy; the others go.
                for done in &parts[..i] {
                    if let Err(e) = done.drop_table(&new_engine_name) {
                        tracing::warn!(stream = done.stream, "a copy of \"{}\" stays behind: {e}", def.name);
                    }
                }
                return Err(e);
            }
        }
        Ok(())
    });
    copied.map_err(|e| match e {
        EngineError::UniqueViolation { .. } => {
            SqlError::new(code::UNIQUE, format!("could not create unique index \"{pk_name}\""))
                .with_detail("The table contains duplicated values.")
        }
        EngineError::NullInKey { .. } => {
            // (The copy does not say which field; with one there is no doubt.)
            let column = match cols.as_slice() {
                [one] => format!("column \"{one}\""),
                _ => "a column of the primary key".to_string(),
            };
            SqlError::new(code::NOT_NULL, format!("{column} of relation \"{}\" contains null values", def.name))
        }
        other => other.into(),
    })?;
    session.catalog().put_table(new_def)?;
    // The table is the new one from here on: an old copy left behind (its
    // partition's primary unreachable just now) only takes space.
    for part in &parts {
        if let Err(e) = part.drop_table(&def.engine_name) {
            tracing::warn!(stream = part.stream, "the old rows of \"{}\" stay behind: {e}", def.name);
        }
    }
    Ok(())
}

/// Rewrites every row of a table in one transaction.
pub(crate) fn rewrite_rows(
    session: &Session,
    def: &TableDef,
    mut f: impl FnMut(&mut Vec<Option<Vec<u8>>>),
) -> Result<()> {
    let table = session.catalog().engine_table(def)?;
    let (stream, base) = session.catalog().base_engine(&def.db)?;
    let mut txn = crate::storage::txn::Txn::begin(&base, stream, Isolation::Snapshot)?;
    txn.allow_multi_partition_writes();
    let rows = txn.scan_collect(&table, PRIMARY, &KeyRange::all())?;
    for r in rows {
        let t = Tuple::parse(&r).map_err(|e| SqlError::internal(e.to_string()))?;
        let mut fields: Vec<Option<Vec<u8>>> = (0..t.len()).map(|i| t.field(i).map(|b| b.to_vec())).collect();
        f(&mut fields);
        let mut b = TupleBuilder::new();
        for x in &fields {
            b.push(x.as_deref());
        }
        txn.update(&table, b.finish())?;
    }
    txn.commit_blocking()
}

/// In a keyed database the partition key column stays as declared: it may
/// not be dropped, renamed or retyped.
fn keyed_guard(def: &TableDef, key: &crate::storage::keyed::PartitionKey, op: &AlterTableOperation) -> Result<()> {
    use crate::parser::ident;
    let touches = match op {
        AlterTableOperation::DropColumn { column_names, .. } => column_names.iter().any(|c| ident(c) == key.column),
        AlterTableOperation::RenameColumn { old_column_name, .. } => ident(old_column_name) == key.column,
        AlterTableOperation::AlterColumn { column_name, op: AlterColumnOperation::SetDataType { .. } } => {
            ident(column_name) == key.column
        }
        _ => false,
    };
    if touches {
        return Err(SqlError::new(
            code::INVALID_TABLE_DEFINITION,
            format!(
                "column \"{}\" of table \"{}\" is the partition key of keyed database \"{}\" and cannot be dropped, renamed or retyped",
                key.column, def.name, def.db
            ),
        ));
    }
    Ok(())
}
