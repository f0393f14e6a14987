//! DDL: databases, tables, indexes, sequences, roles, TRUNCATE (CREATE
//! TABLE is in `create_table`, ALTER TABLE in `alter`, types and domains in
//! `type_ddl`, views in `view_ddl`).
//! It sits above `exec` (whose row checks ALTER reuses) and below
//! `dispatch`, which routes statements here.
//!
//! Each statement takes the catalog's DDL lock, changes the engine (durably)
//! and then the catalog entry. DDL is not transactional: it takes effect at
//! once, inside or outside a transaction block, and ROLLBACK does not undo it.

pub(crate) mod alter;
pub(crate) mod create_table;
pub(crate) mod type_ddl;
pub(crate) mod view_ddl;

use datafusion::sql::sqlparser::ast::{
    AlterRoleOperation, AlterSchema, AlterSchemaOperation, CreateIndex, CreateRole, Expr, Ident, IndexType, ObjectName,
    ObjectType, Password, RoleOption, SequenceOptions, SqlOption, Statement, Tag, Truncate, Value,
};
use tessera_engine::{EngineError, IndexKind, IndexSpec};

use crate::error::{Result, SqlError, code};
use crate::exec::dml::target_table;
use crate::parser::ident;
use crate::parser::object_name;
use crate::session::{Output, Session};
use crate::storage::catalog::{
    Catalog, DatabaseDef, IndexDef, IndexMethod, RoleDef, ScramSecret, SequenceDef, TableDef,
};

fn cmd(tag: &str) -> Result<Option<Output>> {
    Ok(Some(Output::Command(tag.to_string())))
}

pub async fn try_execute(session: &mut Session, stmt: &Statement) -> Result<Option<Output>> {
    // In a keyed database a schema change is a job over the partitions.
    let keyed = session.catalog().database(session.db()).is_some_and(|d| !d.partitions.is_empty());
    if keyed && crate::storage::jobs::is_schema_change(stmt) {
        let job = session.catalog().begin_job(session.db(), stmt.to_string())?;
        let result = execute(session, stmt).await;
        let error = result.as_ref().err().map(|e| format!("{}: {}", e.code, e.message));
        session.catalog().end_job(job, error)?;
        return result;
    }
    execute(session, stmt).await
}

async fn execute(session: &mut Session, stmt: &Statement) -> Result<Option<Output>> {
    if let Some(done) = crate::ddl::type_ddl::try_execute(session, stmt) {
        return done.map(Some);
    }
    if let Some(done) = crate::ddl::view_ddl::try_execute(session, stmt).await {
        return done.map(Some);
    }
    match stmt {
        Statement::CreateTable(ct) => crate::ddl::create_table::create_table(session, ct).await,
        Statement::CreateIndex(ci) => create_index(session, ci),
        Statement::Drop { object_type, if_exists, names, cascade, .. } => {
            drop_objects(session, *object_type, *if_exists, names, *cascade)
        }
        Statement::AlterTable(at) => {
            crate::ddl::alter::alter_table(session, &at.name, at.if_exists, &at.operations).await
        }
        Statement::Truncate(t) => truncate(session, t),
        Statement::AlterSchema(a) if is_split_at(a) => split_database(session, a),
        Statement::CreateDatabase { db_name, if_not_exists, with_tags, .. } => {
            create_database(session, db_name, *if_not_exists, with_tags.as_ref())
        }
        Statement::CreateSequence { if_not_exists, name, sequence_options, .. } => {
            create_sequence(session, name, *if_not_exists, sequence_options)
        }
        Statement::CreateRole(cr) => create_role(session, cr),
        Statement::AlterRole { name, operation } => alter_role(session, name, operation),
        Statement::CreateSchema { .. } => Err(SqlError::unsupported("CREATE SCHEMA (Tessera has one schema, public)")),
        Statement::CreateFunction(_) => Err(SqlError::unsupported("CREATE FUNCTION")),
        Statement::CreateTrigger(_) => Err(SqlError::unsupported("CREATE TRIGGER")),
        Statement::CreateExtension(_) => Err(SqlError::unsupported("CREATE EXTENSION")),
        Statement::Analyze(_) => {
            // Statistics are kept continuously (per-table live rows and bytes).
            cmd("ANALYZE")
        }
        Statement::Vacuum(_) => vacuum(session),
        _ => Ok(None),
    }
}

fn truncate(session: &mut Session, t: &Truncate) -> Result<Option<Output>> {
    let restart = matches!(t.identity, Some(datafusion::sql::sqlparser::ast::TruncateIdentityOption::Restart));
    let _g = session.catalog().ddl_lock();
    let mut defs = Vec::new();
    for target in &t.table_names {
        defs.push(target_table(session, &target.name)?);
    }
    for def in defs {
        for engine in session.catalog().engines_of_name(&def.db)? {
            engine.truncate_table(&def.engine_name)?;
        }
        session.catalog().touch();
        if restart {
            for s in session.catalog().sequences(&def.db) {
                if s.owned_by.as_ref().map(|o| o.0) == Some(def.oid) {
                    session.catalog().setval(&s, s.start, false)?;
                }
            }
        }
    }
    cmd("TRUNCATE TABLE")
}

/// `ALTER DATABASE name SPLIT AT (value)`, as the parser carries it (see
/// `parser::database`).
fn is_split_at(a: &AlterSchema) -> bool {
    matches!(a.operations.as_slice(), [AlterSchemaOperation::SetOptionsParens { options }]
        if matches!(options.as_slice(), [SqlOption::KeyValue { key, .. }] if key.value == crate::parser::database::SPLIT_AT_OPTION))
}

/// `ALTER DATABASE name SPLIT AT (value)`: the partition holding the value
/// is split there (see `storage::split`).
fn split_database(session: &mut Session, a: &AlterSchema) -> Result<Option<Output>> {
    let [AlterSchemaOperation::SetOptionsParens { options }] = a.operations.as_slice() else { unreachable!() };
    let [SqlOption::KeyValue { value, .. }] = options.as_slice() else { unreachable!() };
    let value = match value {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    };
    let db = object_name(&a.name);
    require_owner_or_superuser(session, &db)?;
    // On a cluster a database with a home is split by its own
    // group's primary, where its sessions run.
    if db != session.db()
        && session.catalog().groups().is_some()
        && session.catalog().database(&db).is_some_and(|d| d.home.is_some())
    {
        return Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            format!("database \"{db}\" is split from a session of its own"),
        )
        .with_hint(format!("Connect to database \"{db}\" to run it.")));
    }
    let _g = session.catalog().ddl_lock();
    let catalog = session.catalog().clone();
    crate::storage::blocking(|| crate::storage::split::split(&catalog, &db, &value))?;
    cmd("ALTER DATABASE")
}

fn create_database(
    session: &mut Session,
    db_name: &ObjectName,
    if_not_exists: bool,
    with_tags: Option<&Vec<Tag>>,
) -> Result<Option<Output>> {
    let name = object_name(db_name);
    let options = crate::storage::keyed::database_options(with_tags)?;
    let _g = session.catalog().ddl_lock();
    if session.catalog().database(&name).is_some() {
        if if_not_exists {
            return cmd("CREATE DATABASE");
        }
        return Err(SqlError::new(code::DUPLICATE_DATABASE, format!("database \"{name}\" already exists")));
    }
    let oid = session.catalog().alloc_oid();
    // A keyed database's rows live in its partitions; a keyless
    // one gets a home engine of its own (see `catalog/home.rs`).
    let (partitions, home, next_stream) = match options.key {
        Some(_) => {
            let ranges = crate::storage::partition::ranges(&options.splits);
            let (home, parts, next) =
                crate::storage::blocking(|| session.catalog().create_keyed_home(options.replicas, ranges))?;
            (parts, Some(home), next)
        }
        None => (Vec::new(), Some(crate::storage::blocking(|| session.catalog().create_home(options.replicas))?), 0),
    };
    let partitions_made = partitions.clone();
    let made = session.catalog().put_database(DatabaseDef {
        oid,
        name,
        owner: session.info.user.clone(),
        partition_key: options.key,
        partitions,
        schema_version: 0,
        home,
        next_stream,
    });
    if let Some(home) = home {
        let catalog = session.catalog().clone();
        match &made {
            Ok(()) => crate::storage::blocking(|| catalog.place_home(home, &partitions_made)),
            Err(_) => crate::storage::blocking(|| catalog.abandon_home(home, &partitions_made)),
        }
    }
    made?;
    cmd("CREATE DATABASE")
}

fn create_sequence(
    session: &mut Session,
    name: &ObjectName,
    if_not_exists: bool,
    sequence_options: &[SequenceOptions],
) -> Result<Option<Output>> {
    let name = object_name(name);
    let _g = session.catalog().ddl_lock();
    if session.catalog().sequence(session.db(), &name).is_some()
        || session.catalog().relation_oid(session.db(), &name).is_some()
    {
        if if_not_exists {
            return cmd("CREATE SEQUENCE");
        }
        return Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
    }
    let mut seq = new_sequence(session, &name, None)?;
    apply_sequence_options(&mut seq, sequence_options)?;
    session.catalog().put_sequence(seq)?;
    cmd("CREATE SEQUENCE")
}

fn create_role(session: &mut Session, cr: &CreateRole) -> Result<Option<Output>> {
    let _g = session.catalog().ddl_lock();
    require_superuser(session)?;
    for n in &cr.names {
        let name = object_name(n);
        if session.catalog().role(&name).is_some() {
            if cr.if_not_exists {
                continue;
            }
            return Err(SqlError::new(code::DUPLICATE_OBJECT, format!("role \"{name}\" already exists")));
        }
        let password = match &cr.password {
            Some(Password::Password(e)) => Some(scram_secret(&password_text(e)?)),
            _ => None,
        };
        let oid = session.catalog().alloc_oid_in(&session.info.db)?;
        session.catalog().put_role(RoleDef {
            oid,
            name,
            superuser: cr.superuser.unwrap_or(false),
            login: cr.login.unwrap_or(false),
            create_db: cr.create_db.unwrap_or(false),
            password,
        })?;
    }
    cmd("CREATE ROLE")
}

fn alter_role(session: &mut Session, name: &Ident, operation: &AlterRoleOperation) -> Result<Option<Output>> {
    let _g = session.catalog().ddl_lock();
    let name = ident(name);
    let mut role = session
        .catalog()
        .role(&name)
        .ok_or_else(|| SqlError::new(code::UNDEFINED_OBJECT, format!("role \"{name}\" does not exist")))?;
    if name != session.info.user {
        require_superuser(session)?;
    }
    match operation {
        AlterRoleOperation::WithOptions { options } => {
            for o in options {
                match o {
                    RoleOption::Password(Password::Password(e)) => {
                        role.password = Some(scram_secret(&password_text(e)?))
                    }
                    RoleOption::Password(Password::NullPassword) => role.password = None,
                    RoleOption::Login(b) => role.login = *b,
                    RoleOption::SuperUser(b) => {
                        require_superuser(session)?;
                        role.superuser = *b
                    }
                    RoleOption::CreateDB(b) => role.create_db = *b,
                    _ => {}
                }
            }
        }
        AlterRoleOperation::RenameRole { role_name } => role.name = ident(role_name),
        _ => return Err(SqlError::unsupported("this form of ALTER ROLE")),
    }
    session.catalog().put_role(role)?;
    cmd("ALTER ROLE")
}

fn vacuum(session: &mut Session) -> Result<Option<Output>> {
    session.catalog().engine().collect_garbage();
    // (The partitions led elsewhere collect on their primaries.)
    for engine in session.catalog().engines_of_name(&session.info.db)? {
        engine.engine.collect_garbage();
    }
    cmd("VACUUM")
}

/// Creates an index in every partition of the table's database, or in none:
/// a failure (duplicate values for a unique index) undoes the ones made.
pub(crate) fn create_index_everywhere(session: &Session, def: &TableDef, spec: IndexSpec) -> Result<()> {
    let engines = session.catalog().engines_of_name(&def.db)?;
    for (i, engine) in engines.iter().enumerate() {
        if let Err(e) = engine.create_index(&def.engine_name, spec.clone()) {
            for done in &engines[..i] {
                done.drop_index(&def.engine_name, &spec.name)?;
            }
            return Err(match e {
                EngineError::UniqueViolation { .. } => {
                    SqlError::new(code::UNIQUE, format!("could not create unique index \"{}\"", spec.name))
                        .with_detail("The table contains duplicated values.")
                }
                other => other.into(),
            });
        }
    }
    Ok(())
}

/// The database's owner or a superuser may change a database.
fn require_owner_or_superuser(session: &Session, db: &str) -> Result<()> {
    let owner = session.catalog().database(db).map(|d| d.owner);
    if owner.as_deref() == Some(session.info.user.as_str()) {
        return Ok(());
    }
    require_superuser(session)
        .map_err(|_| SqlError::new(code::INSUFFICIENT_PRIVILEGE, format!("must be owner of database {db}")))
}

fn require_superuser(session: &Session) -> Result<()> {
    match session.catalog().role(&session.info.user) {
        Some(r) if r.superuser => Ok(()),
        _ => Err(SqlError::new(code::INSUFFICIENT_PRIVILEGE, "permission denied: must be superuser")),
    }
}

fn password_text(e: &Expr) -> Result<String> {
    match e {
        Expr::Value(v) => match &v.value {
            datafusion::sql::sqlparser::ast::Value::SingleQuotedString(s) => Ok(s.clone()),
            _ => Err(SqlError::syntax("a password must be a string literal")),
        },
        _ => Err(SqlError::syntax("a password must be a string literal")),
    }
}

/// PBKDF2 iterations of stored SCRAM secrets (PostgreSQL's default).
pub const SCRAM_ITERATIONS: u32 = 4096;

/// The SCRAM-SHA-256 verifier of a password (RFC 5802: SaltedPassword).
pub fn scram_secret(password: &str) -> ScramSecret {
    use ring::rand::SecureRandom;
    let mut salt = vec![0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut salt).expect("random salt");
    let iterations = SCRAM_ITERATIONS;
    let mut salted = vec![0u8; 32];
    ring::pbkdf2::derive(
        ring::pbkdf2::PBKDF2_HMAC_SHA256,
        std::num::NonZeroU32::new(iterations).unwrap(),
        &salt,
        password.as_bytes(),
        &mut salted,
    );
    ScramSecret { salt, iterations, salted_password: salted }
}

fn new_sequence(session: &Session, name: &str, owned_by: Option<(u32, String)>) -> Result<SequenceDef> {
    Ok(SequenceDef {
        oid: session.catalog().alloc_oid_in(&session.info.db)?,
        db: session.db().to_string(),
        name: name.to_string(),
        start: 1,
        increment: 1,
        min: 1,
        max: i64::MAX,
        owned_by,
    })
}

fn const_i64(e: &Expr) -> Result<i64> {
    let s = e.to_string().replace(' ', "");
    s.parse::<i64>().map_err(|_| SqlError::syntax(format!("expected an integer, found {e}")))
}

fn apply_sequence_options(
    seq: &mut SequenceDef,
    options: &[datafusion::sql::sqlparser::ast::SequenceOptions],
) -> Result<()> {
    use datafusion::sql::sqlparser::ast::SequenceOptions as O;
    let mut start_given = false;
    // None: the default for the direction (also NO MINVALUE / NO MAXVALUE).
    let (mut min, mut max) = (None, None);
    for o in options {
        match o {
            O::IncrementBy(e, _) => seq.increment = const_i64(e)?,
            O::MinValue(e) => min = e.as_ref().map(const_i64).transpose()?,
            O::MaxValue(e) => max = e.as_ref().map(const_i64).transpose()?,
            O::StartWith(e, _) => {
                seq.start = const_i64(e)?;
                start_given = true;
            }
            // Refused rather than ignored: a sequence here stops at its end.
            O::Cycle(false) => return Err(SqlError::unsupported("CYCLE on a sequence")),
            // CACHE: every session draws from the one counter already.
            O::Cycle(true) | O::Cache(_) => {}
        }
    }
    if seq.increment == 0 {
        return Err(SqlError::new(code::INVALID_PARAMETER_VALUE, "INCREMENT must not be zero"));
    }
    let (default_min, default_max) = if seq.increment > 0 { (1, i64::MAX) } else { (i64::MIN, -1) };
    seq.min = min.unwrap_or(default_min);
    seq.max = max.unwrap_or(default_max);
    if seq.min >= seq.max {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("MINVALUE ({}) must be less than MAXVALUE ({})", seq.min, seq.max),
        ));
    }
    if !start_given {
        seq.start = if seq.increment > 0 { seq.min } else { seq.max };
    }
    if seq.start < seq.min {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("START value ({}) cannot be less than MINVALUE ({})", seq.start, seq.min),
        ));
    }
    if seq.start > seq.max {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("START value ({}) cannot be greater than MAXVALUE ({})", seq.start, seq.max),
        ));
    }
    Ok(())
}

pub(crate) fn index_columns(cols: &[datafusion::sql::sqlparser::ast::IndexColumn]) -> Result<Vec<String>> {
    cols.iter()
        .map(|c| match &c.column.expr {
            Expr::Identifier(i) => Ok(ident(i)),
            Expr::CompoundIdentifier(p) => Ok(p.last().map(ident).unwrap_or_default()),
            other => Err(SqlError::unsupported(format!("an index on the expression {other}"))),
        })
        .collect()
}

pub(crate) use crate::storage::catalog::{engine_spec, fields_of};

fn create_index(session: &mut Session, ci: &CreateIndex) -> Result<Option<Output>> {
    let _g = session.catalog().ddl_lock();
    let def = target_table(session, &ci.table_name)?;
    let cols = index_columns(&ci.columns)?;
    for c in &cols {
        let col = def
            .column(c)
            .ok_or_else(|| SqlError::new(code::UNDEFINED_COLUMN, format!("column \"{c}\" does not exist")))?;
        if !col.ty.indexable() {
            return Err(SqlError::unsupported(format!("an index on a column of type {}", col.ty)));
        }
    }
    if ci.predicate.is_some() {
        return Err(SqlError::unsupported("partial indexes"));
    }
    let method = match &ci.using {
        None | Some(IndexType::BTree) => IndexMethod::Btree,
        Some(IndexType::Hash) => IndexMethod::Hash,
        Some(other) => return Err(SqlError::unsupported(format!("index method {other}"))),
    };
    let name = match &ci.name {
        Some(n) => object_name(n),
        None => {
            let base = format!("{}_{}_{}", def.name, cols.join("_"), if ci.unique { "key" } else { "idx" });
            let mut n = base.clone();
            let mut k = 1;
            while session.catalog().index(&def.db, &n).is_some() {
                n = format!("{base}{k}");
                k += 1;
            }
            n
        }
    };
    if session.catalog().index(&def.db, &name).is_some() || session.catalog().relation_oid(&def.db, &name).is_some() {
        if ci.if_not_exists {
            return cmd("CREATE INDEX");
        }
        return Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
    }
    let kind = if method == IndexMethod::Hash { IndexKind::Hash } else { IndexKind::Ordered };
    if ci.unique
        && let Some(key) = session.catalog().database(&def.db).and_then(|d| d.partition_key)
    {
        crate::storage::keyed::check_unique(&def, &key, &cols)?;
    }
    let fields = fields_of(&def, &cols)?;
    create_index_everywhere(session, &def, IndexSpec::new(name.clone(), kind, ci.unique, fields))?;
    let mut new_def = (*def).clone();
    new_def.indexes.push(IndexDef {
        name,
        oid: session.catalog().alloc_oid_in(&session.info.db)?,
        columns: cols,
        unique: ci.unique,
        method,
        primary: false,
        constraint: false,
    });
    session.catalog().put_table(new_def)?;
    cmd("CREATE INDEX")
}

/// Drops every temporary relation of a session (it is ending): its
/// views, the views that read them, and its tables.
pub(crate) fn drop_temporary(
    temp: &mut crate::plan::temp_tables::TempTables,
    catalog: &crate::storage::catalog::Catalog,
    db: &str,
) -> Result<()> {
    let _g = catalog.ddl_lock();
    let views: Vec<u32> = catalog.views(db).iter().filter(|v| temp.owns(&v.name)).map(|v| v.oid).collect();
    let mut doomed = views.clone();
    for v in views {
        doomed.extend(catalog.dependent_views_deep(db, v).iter().map(|d| d.oid));
    }
    doomed.sort_unstable();
    doomed.dedup();
    catalog.drop_view_entries(&doomed)?;
    for t in catalog.tables(db).iter().filter(|t| temp.owns(&t.name)) {
        drop_table_def(catalog, t, true)?;
    }
    temp.forget_all();
    Ok(())
}

/// Drops table `def` (callers hold `ddl_lock`), and with `cascade` the
/// views reading it (2BP01 if there are some, without).
pub(crate) fn drop_table_def(catalog: &crate::storage::catalog::Catalog, def: &TableDef, cascade: bool) -> Result<()> {
    let views = crate::ddl::view_ddl::views_dropped_with(catalog, &def.db, &def.name, def.oid, cascade)?;
    catalog.drop_view_entries(&views)?;
    // The entry goes first: a stop between leaves engine tables no entry
    // owns, which the next open drops.
    let engines = catalog.engines_of_name(&def.db)?;
    catalog.drop_table_entry(def)?;
    for engine in engines {
        engine.drop_table(&def.engine_name)?;
    }
    Ok(())
}

fn drop_objects(
    session: &mut Session,
    kind: ObjectType,
    if_exists: bool,
    names: &[ObjectName],
    cascade: bool,
) -> Result<Option<Output>> {
    let _g = session.catalog().ddl_lock();
    let catalog = session.catalog().clone();
    let db = session.db().to_string();
    for n in names {
        let name = object_name(n);
        match kind {
            ObjectType::Table => drop_table(&catalog, &db, &name, if_exists, cascade)?,
            ObjectType::Index => drop_index(&catalog, &db, &name, if_exists)?,
            ObjectType::Sequence => drop_sequence(&catalog, &db, &name, if_exists, cascade)?,
            ObjectType::Database => drop_database(session, &catalog, &db, &name, if_exists)?,
            ObjectType::Role | ObjectType::User => drop_role(session, &catalog, &name, if_exists)?,
            ObjectType::View => missing(if_exists, "view", &name)?,
            ObjectType::Schema => return Err(SqlError::unsupported("DROP SCHEMA")),
            other => return Err(SqlError::unsupported(format!("DROP {other}"))),
        }
    }
    let tag = match kind {
        ObjectType::Table => "DROP TABLE",
        ObjectType::Index => "DROP INDEX",
        ObjectType::Sequence => "DROP SEQUENCE",
        ObjectType::Database => "DROP DATABASE",
        ObjectType::Role | ObjectType::User => "DROP ROLE",
        ObjectType::View => "DROP VIEW",
        _ => "DROP",
    };
    cmd(tag)
}

/// A `what` named `name` that DROP did not find: nothing to do with IF
/// EXISTS, an error without.
fn missing(if_exists: bool, what: &str, name: &str) -> Result<()> {
    if if_exists {
        Ok(())
    } else {
        let code = match what {
            "database" => code::UNDEFINED_DATABASE,
            "index" | "role" => code::UNDEFINED_OBJECT,
            _ => code::UNDEFINED_TABLE,
        };
        Err(SqlError::new(code, format!("{what} \"{name}\" does not exist")))
    }
}

fn drop_table(catalog: &Catalog, db: &str, name: &str, if_exists: bool, cascade: bool) -> Result<()> {
    match catalog.table(db, name) {
        Some(def) => drop_table_def(catalog, &def, cascade)?,
        None if catalog.view(db, name).is_some() => {
            return Err(SqlError::new(code::WRONG_OBJECT_TYPE, format!("\"{name}\" is not a table"))
                .with_hint("Use DROP VIEW to remove a view."));
        }
        None => missing(if_exists, "table", name)?,
    }
    Ok(())
}

/// Drops an index that no constraint needs (its constraint is dropped
/// instead, with ALTER TABLE).
fn drop_index(catalog: &Catalog, db: &str, name: &str, if_exists: bool) -> Result<()> {
    match catalog.index(db, name) {
        Some((def, ix)) => {
            if ix.constraint {
                return Err(SqlError::new(
                    code::DEPENDENT_OBJECTS,
                    format!("cannot drop index {name} because constraint {name} on table {} requires it", def.name),
                )
                .with_hint(format!("You can drop constraint {name} on table {} instead.", def.name)));
            }
            let mut new_def = (*def).clone();
            new_def.indexes.retain(|i| i.name != name);
            catalog.put_table(new_def)?;
            for engine in catalog.engines_of_name(db)? {
                engine.drop_index(&def.engine_name, name)?;
            }
        }
        None => missing(if_exists, "index", name)?,
    }
    Ok(())
}

/// Drops a sequence; one a column's default uses only with CASCADE.
fn drop_sequence(catalog: &Catalog, db: &str, name: &str, if_exists: bool, cascade: bool) -> Result<()> {
    match catalog.sequence(db, name) {
        Some(s) => {
            if s.owned_by.is_some() && !cascade {
                let owner = s.owned_by.as_ref().and_then(|o| catalog.tables(db).into_iter().find(|t| t.oid == o.0));
                if let Some(t) = owner {
                    return Err(SqlError::new(
                        code::DEPENDENT_OBJECTS,
                        format!("cannot drop sequence {name} because other objects depend on it"),
                    )
                    .with_detail(format!("default value for column of table {} depends on sequence {name}", t.name)));
                }
            }
            catalog.drop_sequence_entry(s.oid)?;
        }
        None => missing(if_exists, "sequence", name)?,
    }
    Ok(())
}

/// Drops database `name` (not `db`, the session's own), which no session
/// may be using, with everything in it.
fn drop_database(session: &Session, catalog: &Catalog, db: &str, name: &str, if_exists: bool) -> Result<()> {
    let Some(d) = catalog.database(name) else {
        return missing(if_exists, "database", name);
    };
    if name == db {
        return Err(SqlError::new(code::OBJECT_IN_USE, "cannot drop the currently open database"));
    }
    refuse_database_in_use(session, catalog, name, &d)?;
    // On a cluster a home is a replication group of its
    // own, whose primary may be elsewhere: the database's
    // entry goes, and with it every way to its home; then
    // the group goes, with its tables and rows, from every
    // node (its stream is never reused).
    if let (Some(home), Some(groups)) = (d.home, catalog.groups()) {
        catalog.drop_database_entry(d.oid)?;
        // Its partitions' groups too (a split's partition
        // is in its parent's).
        let own = d.partitions.iter().map(|p| p.stream).filter(|s| groups.group_of(*s) == Some(*s));
        for group in std::iter::once(home).chain(own.collect::<Vec<_>>()) {
            let groups = groups.clone();
            if let Err(e) = crate::storage::blocking(move || groups.remove(group)) {
                tracing::warn!(
                    group,
                    "database \"{name}\" was dropped, but its replicas were not removed: {}",
                    e.reason()
                );
            }
        }
        return Ok(());
    }
    let engines = catalog.engines_of(&d)?;
    for t in catalog.tables(name) {
        if d.partitions.is_empty() {
            for engine in &engines {
                engine.drop_table(&t.engine_name)?;
            }
        }
        catalog.drop_table_entry(&t)?;
    }
    for s in catalog.sequences(name) {
        catalog.drop_sequence_entry(s.oid)?;
    }
    for t in catalog.user_types(name) {
        catalog.drop_type_entry(t.oid)?;
    }
    catalog.drop_database_entry(d.oid)?;
    // The partitions and the home go with their database,
    // files and all.
    drop(engines);
    crate::storage::blocking(|| catalog.drop_partitions(&d.partitions))?;
    if let Some(home) = d.home {
        crate::storage::blocking(|| catalog.drop_home(home))?;
    }
    Ok(())
}

/// A database other sessions are using is not dropped (55006).
fn refuse_database_in_use(session: &Session, catalog: &Catalog, name: &str, d: &DatabaseDef) -> Result<()> {
    let mut others = session.shared.sessions_on(name);
    // A database with a group of its own has its sessions
    // where that group's primary is.
    if let (Some(home), Some(groups)) = (d.home, catalog.groups()) {
        let groups = groups.clone();
        others += crate::storage::blocking(move || groups.sessions_on(home)).map_err(|e| {
            SqlError::new(
                code::CANNOT_CONNECT_NOW,
                format!("cannot tell whether database \"{name}\" is in use: {}", e.reason()),
            )
        })?;
    }
    if others > 0 {
        return Err(SqlError::new(
            code::OBJECT_IN_USE,
            format!("database \"{name}\" is being accessed by other users"),
        )
        .with_detail(format!(
            "There {} {others} other session{} using the database.",
            if others == 1 { "is" } else { "are" },
            if others == 1 { "" } else { "s" }
        )));
    }
    Ok(())
}

fn drop_role(session: &Session, catalog: &Catalog, name: &str, if_exists: bool) -> Result<()> {
    require_superuser(session)?;
    match catalog.role(name) {
        Some(r) if r.name == session.info.user => {
            return Err(SqlError::new(code::OBJECT_IN_USE, "current user cannot be dropped"));
        }
        Some(r) => catalog.drop_role(r.oid)?,
        None => missing(if_exists, "role", name)?,
    }
    Ok(())
}
