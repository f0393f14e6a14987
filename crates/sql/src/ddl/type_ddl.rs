//! DDL of users' types: `CREATE TYPE … AS ENUM`, `ALTER TYPE` (the forms
//! migration tools issue: ADD VALUE, RENAME VALUE, RENAME TO), `CREATE
//! DOMAIN`, and DROP TYPE / DROP DOMAIN.
//!
//! Enum values are stored as their labels, so adding a label (anywhere in
//! the order) changes only the catalog; renaming one rewrites the rows
//! holding it, in one transaction per table. A type that a column uses
//! cannot be dropped (2BP01), as in PostgreSQL; CASCADE, which would drop
//! those columns, is not built.

use datafusion::sql::sqlparser::ast::{
    AlterType, AlterTypeAddValuePosition, AlterTypeOperation, CreateDomain, Ident, ObjectName, Statement,
    TableConstraint, UserDefinedTypeRepresentation,
};

use crate::error::{Result, SqlError, code};
use crate::session::{Output, Session};
use crate::values::types::SqlType;
use crate::values::user_types::{DomainCheck, DomainDef, TypeDef, TypeKind};

/// The constraint name `CREATE DOMAIN … NOT NULL` is parsed into (see
/// [`normalize_create_domain`]).
pub use crate::parser::normalize::NOT_NULL_MARK;

/// Runs a statement this module owns; `None` for any other.
pub fn try_execute(session: &mut Session, stmt: &Statement) -> Option<Result<Output>> {
    Some(match stmt {
        Statement::CreateType { name, representation } => create_type(session, name, representation.as_ref()),
        Statement::CreateDomain(d) => create_domain(session, d),
        Statement::AlterType(a) => alter_type(session, a),
        Statement::DropDomain(d) => drop_types(session, "domain", d.if_exists, std::slice::from_ref(&d.name), false),
        Statement::Drop {
            object_type: datafusion::sql::sqlparser::ast::ObjectType::Type, if_exists, names, ..
        } => drop_types(session, "type", *if_exists, names, false),
        _ => return None,
    })
}

fn type_name(n: &ObjectName) -> Result<String> {
    match n.0.as_slice() {
        [one] => one.as_ident().map(crate::parser::ident).ok_or_else(|| SqlError::syntax("a type name is expected")),
        [schema, one] if schema.as_ident().is_some_and(|s| s.value.eq_ignore_ascii_case("public")) => {
            one.as_ident().map(crate::parser::ident).ok_or_else(|| SqlError::syntax("a type name is expected"))
        }
        _ => Err(SqlError::unsupported(format!("the type name {n}: Tessera has one schema, public"))),
    }
}

/// A label as written: `'happy'` (sqlparser hands labels over as
/// identifiers quoted with `'`).
fn label(i: &Ident) -> Result<String> {
    if i.value.is_empty() {
        return Err(SqlError::new(code::INVALID_NAME, "invalid enum label \"\""));
    }
    if i.value.len() > 63 {
        return Err(SqlError::new(code::INVALID_NAME, format!("invalid enum label \"{}\"", i.value))
            .with_detail("Labels must be 63 bytes or less."));
    }
    Ok(i.value.clone())
}

/// A new type's name must not be taken by another of the database's
/// types. (A built-in's name is free, as in PostgreSQL, where the user's
/// type goes to schema `public`, behind `pg_catalog`'s.)
fn check_free(session: &Session, name: &str) -> Result<()> {
    if session.catalog().user_type(session.db(), name).is_some() {
        return Err(SqlError::new(code::DUPLICATE_OBJECT, format!("type \"{name}\" already exists")));
    }
    Ok(())
}

fn create_type(
    session: &mut Session,
    name: &ObjectName,
    rep: Option<&UserDefinedTypeRepresentation>,
) -> Result<Output> {
    let Some(UserDefinedTypeRepresentation::Enum { labels }) = rep else {
        return Err(SqlError::unsupported("CREATE TYPE other than AS ENUM (composite, range and base types)"));
    };
    let name = type_name(name)?;
    let catalog = session.catalog().clone();
    let _g = catalog.ddl_lock();
    check_free(session, &name)?;
    let oid = catalog.alloc_oid_in(session.db())?;
    let mut out: Vec<String> = Vec::with_capacity(labels.len());
    for l in labels {
        let l = label(l)?;
        if out.contains(&l) {
            return Err(SqlError::new(
                code::UNIQUE,
                "duplicate key value violates unique constraint \"pg_enum_typid_label_index\"",
            )
            .with_detail(format!("Key (enumtypid, enumlabel)=({oid}, {l}) already exists.")));
        }
        out.push(l);
    }
    catalog.put_type(TypeDef { oid, db: session.db().to_string(), name, body: TypeKind::Enum { labels: out } })?;
    Ok(Output::Command("CREATE TYPE".into()))
}

fn create_domain(session: &mut Session, d: &CreateDomain) -> Result<Output> {
    let name = type_name(&d.name)?;
    let catalog = session.catalog().clone();
    let _g = catalog.ddl_lock();
    check_free(session, &name)?;
    let base = catalog.resolve_type(session.db(), &d.data_type.to_string())?;
    if base.domain.is_some() {
        return Err(SqlError::unsupported("a domain over another domain"));
    }
    let mut def = DomainDef {
        base: base.ty,
        not_null: false,
        default: d.default.as_ref().map(|e| e.to_string()),
        checks: vec![],
    };
    for c in &d.constraints {
        let TableConstraint::Check(check) = c else {
            return Err(SqlError::unsupported(format!("the domain constraint {c}")));
        };
        let cname = check.name.as_ref().map(crate::parser::ident);
        if cname.as_deref() == Some(NOT_NULL_MARK) {
            def.not_null = true;
            continue;
        }
        def.checks
            .push(DomainCheck { name: cname.unwrap_or_else(|| format!("{name}_check")), expr: check.expr.to_string() });
    }
    let oid = catalog.alloc_oid_in(session.db())?;
    catalog.put_type(TypeDef { oid, db: session.db().to_string(), name, body: TypeKind::Domain(def) })?;
    Ok(Output::Command("CREATE DOMAIN".into()))
}

fn alter_type(session: &mut Session, a: &AlterType) -> Result<Output> {
    let name = type_name(&a.name)?;
    let catalog = session.catalog().clone();
    let _g = catalog.ddl_lock();
    let t = catalog
        .user_type(session.db(), &name)
        .ok_or_else(|| SqlError::new(code::UNDEFINED_OBJECT, format!("type \"{name}\" does not exist")))?;
    let mut new = (*t).clone();
    match (&a.operation, &mut new.body) {
        (AlterTypeOperation::Rename(r), _) => {
            let to = crate::parser::ident(&r.new_name);
            check_free(session, &to)?;
            new.name = to;
        }
        (AlterTypeOperation::AddValue(add), TypeKind::Enum { labels }) => {
            let value = label(&add.value)?;
            if labels.contains(&value) {
                if add.if_not_exists {
                    return Ok(Output::Command("ALTER TYPE".into()));
                }
                return Err(SqlError::new(code::DUPLICATE_OBJECT, format!("enum label \"{value}\" already exists")));
            }
            let at = match &add.position {
                None => labels.len(),
                Some(AlterTypeAddValuePosition::Before(n)) | Some(AlterTypeAddValuePosition::After(n)) => {
                    let neighbour = label(n)?;
                    let i = labels.iter().position(|l| *l == neighbour).ok_or_else(|| {
                        SqlError::new(code::INVALID_PARAMETER, format!("\"{neighbour}\" is not an existing enum label"))
                    })?;
                    if matches!(add.position, Some(AlterTypeAddValuePosition::After(_))) { i + 1 } else { i }
                }
            };
            labels.insert(at, value);
        }
        (AlterTypeOperation::RenameValue(r), TypeKind::Enum { labels }) => {
            let (from, to) = (label(&r.from)?, label(&r.to)?);
            let i = labels.iter().position(|l| *l == from).ok_or_else(|| {
                SqlError::new(code::INVALID_PARAMETER, format!("\"{from}\" is not an existing enum label"))
            })?;
            if labels.contains(&to) {
                return Err(SqlError::new(code::DUPLICATE_OBJECT, format!("enum label \"{to}\" already exists")));
            }
            labels[i] = to.clone();
            rename_stored_label(session, t.oid, &from, &to)?;
        }
        (_, TypeKind::Domain(_)) => {
            return Err(SqlError::new(code::WRONG_OBJECT_TYPE, format!("\"{name}\" is not an enum")));
        }
    }
    catalog.put_type(new)?;
    Ok(Output::Command("ALTER TYPE".into()))
}

/// Rewrites the stored values `from` of every column of enum type `oid`
/// to `to` (labels are what rows hold).
fn rename_stored_label(session: &Session, oid: u32, from: &str, to: &str) -> Result<()> {
    let catalog = session.catalog();
    let db = catalog.database(session.db());
    let partition_key = db.as_ref().and_then(|d| d.partition_key.as_ref()).map(|k| k.column.clone());
    for def in catalog.tables(session.db()) {
        let fields: Vec<(u16, &str)> =
            def.columns.iter().filter(|c| c.ty == SqlType::Enum(oid)).map(|c| (c.field, c.name.as_str())).collect();
        if fields.is_empty() {
            continue;
        }
        for (_, column) in &fields {
            let keyed = def.primary_key.iter().any(|k| k == column) || partition_key.as_deref() == Some(*column);
            if keyed {
                return Err(SqlError::unsupported(format!(
                    "ALTER TYPE … RENAME VALUE of a type in the key of table \"{}\" (column \"{column}\")",
                    def.name
                )));
            }
        }
        crate::ddl::alter::rewrite_rows(session, &def, |row| {
            for (f, _) in &fields {
                if let Some(Some(v)) = row.get_mut(*f as usize)
                    && v.as_slice() == from.as_bytes()
                {
                    *v = to.as_bytes().to_vec();
                }
            }
        })?;
    }
    Ok(())
}

fn drop_types(
    session: &mut Session,
    what: &str,
    if_exists: bool,
    names: &[ObjectName],
    cascade: bool,
) -> Result<Output> {
    let catalog = session.catalog().clone();
    let _g = catalog.ddl_lock();
    for n in names {
        let name = type_name(n)?;
        let Some(t) = catalog.user_type(session.db(), &name) else {
            if if_exists {
                continue;
            }
            return Err(SqlError::new(code::UNDEFINED_OBJECT, format!("type \"{name}\" does not exist")));
        };
        if what == "domain" && t.domain().is_none() {
            return Err(SqlError::new(code::WRONG_OBJECT_TYPE, format!("\"{name}\" is not a domain")));
        }
        let users = catalog.type_users(session.db(), t.oid);
        if !users.is_empty() {
            let e = if cascade {
                SqlError::unsupported(format!("DROP {} … CASCADE (it would drop columns)", what.to_uppercase()))
            } else {
                SqlError::new(
                    code::DEPENDENT_OBJECTS,
                    format!("cannot drop type {name} because other objects depend on it"),
                )
                .with_detail(users.iter().map(|u| format!("{u} depends on type {name}")).collect::<Vec<_>>().join("\n"))
                .with_hint("Use DROP ... CASCADE to drop the dependent objects too.")
            };
            return Err(e);
        }
        catalog.drop_type_entry(t.oid)?;
    }
    Ok(Output::Command(format!("DROP {}", what.to_uppercase())))
}
