//! CREATE TABLE (CREATE TABLE AS is `dispatch`'s): the table's columns,
//! keys, constraints and sequences, then the table itself in every
//! partition of its database, or in none.

use datafusion::sql::sqlparser::ast::{ColumnOption, ColumnOptionDef, CreateTable, GeneratedAs, TableConstraint};
use std::collections::HashSet;

use super::{apply_sequence_options, cmd, engine_spec, fields_of, index_columns, new_sequence};
use crate::error::{Result, SqlError, code};
use crate::parser::{ident, object_name};
use crate::session::{Output, Session};
use crate::storage::catalog::rowid_sequence;
use crate::storage::catalog::{CheckDef, ColumnDef, Identity, IndexDef, IndexMethod, SequenceDef, TableDef};
use crate::values::types::SqlType;

pub(crate) async fn create_table(session: &mut Session, ct: &CreateTable) -> Result<Option<Output>> {
    if ct.query.is_some() {
        return Err(SqlError::internal("CREATE TABLE AS reached the DDL handler (dispatch runs it)"));
    }
    let name = object_name(&ct.name);
    let _g = session.catalog().ddl_lock();
    let db = session.db().to_string();
    if session.catalog().relation_oid(&db, &name).is_some() || session.catalog().sequence(&db, &name).is_some() {
        if ct.if_not_exists {
            return cmd("CREATE TABLE");
        }
        return Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
    }
    refuse_unbuilt_forms(ct)?;
    let oid = session.catalog().alloc_oid_in(&session.info.db)?;
    let mut parts = TableParts {
        def: TableDef {
            oid,
            db: db.clone(),
            name: name.clone(),
            columns: Vec::new(),
            primary_key: Vec::new(),
            indexes: Vec::new(),
            checks: Vec::new(),
            next_field: 0,
            rowid_field: None,
            engine_name: format!("t{oid}"),
        },
        sequences: Vec::new(),
        uniques: Vec::new(),
        pk: None,
    };
    for (i, c) in ct.columns.iter().enumerate() {
        parts.add_column(session, i, c)?;
    }
    parts.def.next_field = parts.def.columns.len() as u16;
    for tc in &ct.constraints {
        parts.add_constraint(tc)?;
    }
    parts.add_key(session)?;
    parts.add_unique_indexes(session)?;
    check_index_names(session, &parts.def)?;
    if let Some(key) = session.catalog().database(&db).and_then(|d| d.partition_key) {
        let def = &parts.def;
        let columns: Vec<(String, SqlType)> = def.columns.iter().map(|c| (c.name.clone(), c.ty)).collect();
        crate::storage::keyed::check_table(&db, &key, &name, &columns, &def.primary_key)?;
        for ix in def.indexes.iter().filter(|i| i.unique) {
            crate::storage::keyed::check_unique(def, &key, &ix.columns)?;
        }
    }
    make_table(session, parts)?;
    cmd("CREATE TABLE")
}

/// Accepted and ignored, these would store rows PostgreSQL refuses or
/// hide rows it shows: refused until they are built.
fn refuse_unbuilt_forms(ct: &CreateTable) -> Result<()> {
    if ct.inherits.is_some() {
        return Err(SqlError::unsupported("table inheritance (INHERITS)"));
    }
    if ct.partition_by.is_some() || ct.partition_of.is_some() {
        return Err(SqlError::unsupported(
            "declarative partitioning (PARTITION BY / PARTITION OF); a keyed database partitions its tables itself",
        ));
    }
    if ct.columns.is_empty() {
        return Err(SqlError::unsupported("a table without columns"));
    }
    Ok(())
}

/// What CREATE TABLE gathers from its columns and constraints before it
/// makes the table.
struct TableParts {
    def: TableDef,
    /// The sequences made with the table (its serial and identity
    /// columns', its hidden row id's).
    sequences: Vec<SequenceDef>,
    /// Its UNIQUE constraints: the name given, if any, and the columns.
    uniques: Vec<(Option<String>, Vec<String>)>,
    pk: Option<Vec<String>>,
}

impl TableParts {
    fn set_primary_key(&mut self, cols: Vec<String>) -> Result<()> {
        if self.pk.is_some() {
            return Err(SqlError::new(
                code::INVALID_PK,
                format!("multiple primary keys for table \"{}\" are not allowed", self.def.name),
            ));
        }
        self.pk = Some(cols);
        Ok(())
    }

    /// Column `i` as `c` declares it, with its options.
    fn add_column(
        &mut self,
        session: &Session,
        i: usize,
        c: &datafusion::sql::sqlparser::ast::ColumnDef,
    ) -> Result<()> {
        let (name, oid) = (self.def.name.clone(), self.def.oid);
        let cname = ident(&c.name);
        if self.def.column(&cname).is_some() {
            return Err(SqlError::new(code::DUPLICATE_COLUMN, format!("column \"{cname}\" specified more than once")));
        }
        let type_name = c.data_type.to_string();
        let resolved = session.catalog().resolve_type(&self.def.db, &type_name)?;
        let domain = resolved.domain.as_ref().and_then(|d| d.domain());
        let mut col = ColumnDef {
            name: cname.clone(),
            ty: resolved.ty,
            not_null: false,
            default: domain.and_then(|d| d.default.clone()),
            identity: None,
            field: i as u16,
            domain: resolved.domain.as_ref().map(|d| d.oid),
        };
        if SqlType::is_serial_name(&type_name) {
            let seq = new_sequence(session, &format!("{name}_{cname}_seq"), Some((oid, cname.clone())))?;
            col.default = Some(format!("nextval('{}'::regclass)", seq.name));
            col.not_null = true;
            self.sequences.push(seq);
        }
        for opt in &c.options {
            self.apply_column_option(session, &mut col, opt)?;
        }
        self.def.columns.push(col);
        Ok(())
    }

    fn apply_column_option(&mut self, session: &Session, col: &mut ColumnDef, opt: &ColumnOptionDef) -> Result<()> {
        let (name, oid) = (self.def.name.clone(), self.def.oid);
        let cname = col.name.clone();
        match &opt.option {
            ColumnOption::NotNull => col.not_null = true,
            ColumnOption::Null => col.not_null = false,
            ColumnOption::Default(e) => col.default = Some(e.to_string()),
            ColumnOption::PrimaryKey(_) => {
                self.set_primary_key(vec![cname.clone()])?;
                col.not_null = true;
            }
            ColumnOption::Unique(_) => self.uniques.push((opt.name.as_ref().map(ident), vec![cname.clone()])),
            ColumnOption::Check(chk) => self.def.checks.push(CheckDef {
                name: opt.name.as_ref().map(ident).unwrap_or_else(|| format!("{name}_{cname}_check")),
                expr: chk.expr.to_string(),
            }),
            ColumnOption::Generated { generated_as, sequence_options, generation_expr: None, .. } => {
                col.identity = Some(match generated_as {
                    GeneratedAs::Always => Identity::Always,
                    _ => Identity::ByDefault,
                });
                let mut seq = new_sequence(session, &format!("{name}_{cname}_seq"), Some((oid, cname.clone())))?;
                if let Some(o) = sequence_options {
                    apply_sequence_options(&mut seq, o)?;
                }
                col.default = Some(format!("nextval('{}'::regclass)", seq.name));
                col.not_null = true;
                self.sequences.push(seq);
            }
            ColumnOption::Generated { .. } => return Err(SqlError::unsupported("generated columns")),
            ColumnOption::ForeignKey(_) => return Err(SqlError::unsupported("FOREIGN KEY constraints")),
            ColumnOption::Collation(_) | ColumnOption::Comment(_) => {}
            other => return Err(SqlError::unsupported(format!("the column option {other}"))),
        }
        Ok(())
    }

    /// A table constraint (one declared apart from the columns).
    fn add_constraint(&mut self, tc: &TableConstraint) -> Result<()> {
        let name = &self.def.name;
        match tc {
            TableConstraint::PrimaryKey(p) => self.set_primary_key(index_columns(&p.columns)?)?,
            TableConstraint::Unique(u) => self.uniques.push((u.name.as_ref().map(ident), index_columns(&u.columns)?)),
            TableConstraint::Check(c) => self.def.checks.push(CheckDef {
                name: c.name.as_ref().map(ident).unwrap_or_else(|| format!("{name}_check")),
                expr: c.expr.to_string(),
            }),
            TableConstraint::ForeignKey(_) => return Err(SqlError::unsupported("FOREIGN KEY constraints")),
            other => return Err(SqlError::unsupported(format!("the table constraint {other}"))),
        }
        Ok(())
    }

    /// The primary key's index, or (without one) a hidden row id with its
    /// sequence.
    fn add_key(&mut self, session: &Session) -> Result<()> {
        let def = &mut self.def;
        let (name, oid) = (def.name.clone(), def.oid);
        match self.pk.take() {
            Some(cols) => {
                for c in &cols {
                    let col = def.columns.iter_mut().find(|x| &x.name == c).ok_or_else(|| {
                        SqlError::new(code::UNDEFINED_COLUMN, format!("column \"{c}\" named in key does not exist"))
                    })?;
                    if !col.ty.indexable() {
                        return Err(SqlError::unsupported(format!("a primary key on a column of type {}", col.ty)));
                    }
                    col.not_null = true;
                }
                def.indexes.push(IndexDef {
                    name: format!("{name}_pkey"),
                    oid: session.catalog().alloc_oid_in(&session.info.db)?,
                    columns: cols.clone(),
                    unique: true,
                    method: IndexMethod::Btree,
                    primary: true,
                    constraint: true,
                });
                def.primary_key = cols;
            }
            None => {
                def.rowid_field = Some(def.next_field);
                def.next_field += 1;
                let mut seq =
                    new_sequence(session, &rowid_sequence(def), Some((oid, crate::storage::catalog::ROWID.into())))?;
                seq.name = rowid_sequence(def);
                self.sequences.push(seq);
            }
        }
        Ok(())
    }

    /// The index of each UNIQUE constraint.
    fn add_unique_indexes(&mut self, session: &Session) -> Result<()> {
        let def = &mut self.def;
        let name = def.name.clone();
        for (cname, cols) in std::mem::take(&mut self.uniques) {
            fields_of(def, &cols)?;
            for c in &cols {
                if let Some(col) = def.column(c)
                    && !col.ty.indexable()
                {
                    return Err(SqlError::unsupported(format!("a unique constraint on a column of type {}", col.ty)));
                }
            }
            let iname = cname.unwrap_or_else(|| format!("{name}_{}_key", cols.join("_")));
            def.indexes.push(IndexDef {
                name: iname,
                oid: session.catalog().alloc_oid_in(&session.info.db)?,
                columns: cols,
                unique: true,
                method: IndexMethod::Btree,
                primary: false,
                constraint: true,
            });
        }
        Ok(())
    }
}

/// Makes the table: its sequences, then its engine table in every
/// partition (undoing those made if one fails), then its catalog entry.
fn make_table(session: &Session, parts: TableParts) -> Result<()> {
    let TableParts { def, sequences, .. } = parts;
    let spec = engine_spec(&def, &def.engine_name)?;
    for s in sequences {
        session.catalog().put_sequence(s)?;
    }
    let engines = session.catalog().engines_of_name(&def.db)?;
    for (i, engine) in engines.iter().enumerate() {
        if let Err(e) = engine.create_table(spec.clone()) {
            for done in &engines[..i] {
                done.drop_table(&def.engine_name)?;
            }
            return Err(e.into());
        }
    }
    session.catalog().put_table(def)?;
    Ok(())
}

fn check_index_names(session: &Session, def: &TableDef) -> Result<()> {
    let mut seen = HashSet::new();
    for ix in &def.indexes {
        if !seen.insert(ix.name.clone())
            || session.catalog().index(&def.db, &ix.name).is_some_and(|(t, _)| t.oid != def.oid)
        {
            return Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{}\" already exists", ix.name)));
        }
    }
    Ok(())
}
