//! Temporary tables (and views): private to the session that creates them,
//! dropped when it ends, and free to have the name of a permanent table,
//! which they hide from that session, as PostgreSQL's `pg_temp` schema does.
//!
//! A temporary relation is an ordinary one in the catalog and the engine,
//! under a name no SQL identifier of a user collides with: the session's
//! own prefix, `pg_temp_<token>.`, then the name it was given (one catalog
//! name, dot included). Before a statement of a session that has such
//! relations is planned or executed, [`TempTables::resolve`] rewrites each
//! name that denotes one of them (in FROM, as the target of INSERT, UPDATE,
//! DELETE, COPY, TRUNCATE, ALTER, DROP and CREATE INDEX, or written
//! `pg_temp.name`) into the stored name, aliased by the name the statement
//! used, so that everything after — DataFusion's planner, DML, DDL — sees
//! ordinary tables. A WITH query of the statement still hides a temporary
//! table of its name, as it hides any table.
//!
//! The catalog's system views show a session its own temporary relations
//! under their own names, in schema `pg_temp_<token>` with persistence `t`,
//! and not other sessions' ones. The fast path stays off in a session with
//! temporary relations (its plans name tables as the catalog does).
//!
//! `ON COMMIT DROP` drops a temporary table, and `ON COMMIT DELETE ROWS`
//! empties it, when the transaction it is used in ends ([`TempTables::due`],
//! run by the session at COMMIT, ROLLBACK and the end of an autocommitted
//! statement; since DDL is not transactional, a ROLLBACK does not undo
//! the creation, so it ends the table as a COMMIT would).
//!
//! Not built: removing the temporary relations of sessions a crash ended
//! (they stay, under their prefixed names, until dropped).

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    CopySource, Ident, ObjectName, ObjectNamePart, ObjectType, OnCommit, Statement, TableAlias, TableFactor,
    TableObject, VisitMut, VisitorMut,
};

use crate::error::{Result, SqlError};
use crate::storage::temp_names::{PREFIX, split};

/// A session's temporary relations.
#[derive(Debug)]
pub struct TempTables {
    /// `pg_temp_<token>`: the session's schema name and stored-name prefix.
    schema: String,
    /// The names the session gave its temporary relations.
    names: BTreeSet<String>,
    /// The names the session gave the indexes of its temporary tables.
    indexes: BTreeSet<String>,
    /// What the end of a transaction does to which tables (`ON COMMIT`).
    on_commit: std::collections::BTreeMap<String, AtCommit>,
}

/// A temporary table's `ON COMMIT` action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtCommit {
    Drop,
    DeleteRows,
}

/// A temporary relation a statement creates: its name, and its `ON
/// COMMIT` action.
#[derive(Debug)]
pub struct Creating {
    pub name: String,
    pub at_commit: Option<AtCommit>,
}

impl TempTables {
    pub fn new() -> TempTables {
        // Random, not the backend pid: sessions of every node of a cluster
        // share a database's catalog.
        use ring::rand::SecureRandom;
        let mut token = [0u8; 6];
        ring::rand::SystemRandom::new().fill(&mut token).expect("random bytes");
        let hex: String = token.iter().map(|b| format!("{b:02x}")).collect();
        TempTables {
            schema: format!("{PREFIX}{hex}"),
            names: BTreeSet::new(),
            indexes: BTreeSet::new(),
            on_commit: Default::default(),
        }
    }

    /// The session's temporary schema's name.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The stored name of the session's temporary relation `name`.
    pub fn stored(&self, name: &str) -> String {
        format!("{}.{name}", self.schema)
    }

    /// Whether `stored` is one of this session's relations.
    pub fn owns(&self, stored: &str) -> bool {
        split(stored).is_some_and(|(schema, _)| schema == self.schema)
    }

    /// An error naming the session's temporary relations by their stored
    /// names, made to name them as the session does.
    pub fn unmangle(&self, mut e: SqlError) -> SqlError {
        let stored = format!("{}.", self.schema);
        if e.message.contains(&stored) {
            e.message = e.message.replace(&stored, "");
        }
        if let Some(d) = e.detail.as_mut() {
            *d = d.replace(&stored, "");
        }
        e
    }

    pub fn created(&mut self, c: Creating) {
        if let Some(action) = c.at_commit {
            self.on_commit.insert(c.name.clone(), action);
        }
        self.names.insert(c.name);
    }

    /// The stored names of the tables the end of a transaction drops or
    /// empties, and what it does to each; the dropped ones are forgotten.
    pub fn due(&mut self) -> Vec<(String, AtCommit)> {
        if self.on_commit.is_empty() {
            return vec![];
        }
        let due: Vec<(String, AtCommit)> =
            self.on_commit.iter().filter(|(n, _)| self.names.contains(*n)).map(|(n, a)| (self.stored(n), *a)).collect();
        self.on_commit.retain(|n, a| *a == AtCommit::DeleteRows && self.names.contains(n));
        due
    }

    /// Learns the session's temporary relations from the catalog again
    /// (after DDL, which may have dropped or renamed some).
    pub fn sync(&mut self, catalog: &crate::storage::catalog::Catalog, db: &str) {
        let tables = catalog.tables(db);
        let own = |n: &str| split(n).filter(|(s, _)| *s == self.schema).map(|(_, own)| own.to_string());
        let indexes = tables.iter().flat_map(|t| t.indexes.iter().map(|ix| ix.name.clone()));
        self.indexes = indexes.filter_map(|n| own(&n)).collect();
        let stored = tables.iter().map(|t| t.name.clone());
        let stored = stored.chain(catalog.views(db).into_iter().map(|v| v.name.clone()));
        self.names = stored.filter_map(|n| own(&n)).collect();
        let names = &self.names;
        self.on_commit.retain(|n, _| names.contains(n));
    }

    /// Forgets every temporary relation (`ddl::drop_temporary` dropped them).
    pub fn forget_all(&mut self) {
        self.names.clear();
        self.indexes.clear();
    }

    /// Rewrites `stmt`'s names of the session's temporary relations into
    /// their stored names (see the module's text). For `CREATE TEMP TABLE`
    /// and `CREATE TEMP VIEW`, the statement is made to create the stored
    /// name, and the name given is returned, to [`Self::created`] once the
    /// statement has succeeded.
    pub fn resolve(&self, stmt: &mut Statement) -> Result<Option<Creating>> {
        let creating = self.creation(stmt)?;
        if self.names.is_empty() && !matches!(stmt, Statement::CreateTable(_) | Statement::CreateView(_)) {
            return Ok(creating);
        }
        self.rename_targets(stmt);
        let mut renamer = Renamer { temp: self, ctes: crate::plan::views::CteScope::default() };
        let _ = stmt.visit(&mut renamer);
        Ok(creating)
    }

    /// A temporary relation's CREATE, made to create its stored name.
    fn creation(&self, stmt: &mut Statement) -> Result<Option<Creating>> {
        let (name, what, at_commit) = match stmt {
            Statement::CreateTable(ct) if ct.temporary => {
                let at_commit = match ct.on_commit.take() {
                    Some(OnCommit::Drop) => Some(AtCommit::Drop),
                    Some(OnCommit::DeleteRows) => Some(AtCommit::DeleteRows),
                    Some(OnCommit::PreserveRows) | None => None,
                };
                ct.temporary = false;
                (&mut ct.name, "table", at_commit)
            }
            Statement::CreateTable(ct) if ct.on_commit.is_some() => {
                return Err(SqlError::new(
                    crate::error::code::INVALID_TABLE_DEFINITION,
                    "ON COMMIT can only be used on temporary tables",
                ));
            }
            Statement::CreateView(cv) if cv.temporary => {
                cv.temporary = false;
                (&mut cv.name, "view", None)
            }
            _ => return Ok(None),
        };
        let given = match name.0.as_slice() {
            [n] => n.as_ident().map(crate::parser::ident),
            [s, n] if s.as_ident().is_some_and(|s| crate::parser::ident(s) == "pg_temp") => {
                n.as_ident().map(crate::parser::ident)
            }
            _ => None,
        };
        let Some(given) = given else {
            return Err(SqlError::new(
                crate::error::code::INVALID_TABLE_DEFINITION,
                format!("cannot create temporary {what} {name} in a schema other than pg_temp"),
            ));
        };
        *name = self.object_name(&given);
        Ok(Some(Creating { name: given, at_commit }))
    }

    fn object_name(&self, given: &str) -> ObjectName {
        ObjectName(vec![ObjectNamePart::Identifier(Ident::with_quote('"', self.stored(given)))])
    }

    /// The stored name for a name as a statement wrote it, if it denotes
    /// one of the session's temporary relations.
    fn lookup(&self, name: &ObjectName) -> Option<ObjectName> {
        let parts: Vec<&Ident> = name.0.iter().map(|p| p.as_ident()).collect::<Option<_>>()?;
        let own = match parts.as_slice() {
            [n] => crate::parser::ident(n),
            [s, n] if crate::parser::ident(s) == "pg_temp" || crate::parser::ident(s) == self.schema => {
                crate::parser::ident(n)
            }
            _ => return None,
        };
        self.names.contains(&own).then(|| self.object_name(&own))
    }

    /// The targets of DML and DDL that are not table factors.
    fn rename_targets(&self, stmt: &mut Statement) {
        let swap = |n: &mut ObjectName| {
            if let Some(stored) = self.lookup(n) {
                *n = stored;
            }
        };
        match stmt {
            Statement::Insert(insert) => {
                if let TableObject::TableName(n) = &mut insert.table
                    && let Some(stored) = self.lookup(n)
                {
                    if insert.table_alias.is_none() {
                        insert.table_alias = n.0.last().and_then(|p| p.as_ident()).map(|alias| {
                            datafusion::sql::sqlparser::ast::TableAliasWithoutColumns {
                                explicit: true,
                                alias: alias.clone(),
                            }
                        });
                    }
                    *n = stored;
                }
            }
            Statement::Drop { object_type: ObjectType::Table | ObjectType::View, names, .. } => {
                names.iter_mut().for_each(swap);
            }
            Statement::Drop { object_type: ObjectType::Index, names, .. } => {
                for n in names.iter_mut() {
                    let given = crate::parser::object_name(n);
                    if n.0.len() == 1 && self.indexes.contains(&given) {
                        *n = self.object_name(&given);
                    }
                }
            }
            Statement::AlterTable(at) => {
                let renamed = self.lookup(&at.name).is_some();
                swap(&mut at.name);
                if renamed {
                    // A temporary table renamed stays in the session's schema.
                    for op in at.operations.iter_mut() {
                        if let datafusion::sql::sqlparser::ast::AlterTableOperation::RenameTable { table_name } = op {
                            let (datafusion::sql::sqlparser::ast::RenameTableNameKind::As(n)
                            | datafusion::sql::sqlparser::ast::RenameTableNameKind::To(n)) = table_name;
                            let new = crate::parser::object_name(n);
                            *n = self.object_name(&new);
                        }
                    }
                }
            }
            Statement::Truncate(t) => t.table_names.iter_mut().for_each(|t| swap(&mut t.name)),
            Statement::CreateIndex(ci) => {
                if self.lookup(&ci.table_name).is_some() {
                    // Its index is the session's too: another session's
                    // index of the same name on its own table is no clash.
                    if let Some(name) = &mut ci.name {
                        let given = crate::parser::object_name(name);
                        *name = self.object_name(&given);
                    }
                }
                swap(&mut ci.table_name);
            }
            Statement::Copy { source: CopySource::Table { table_name, .. }, .. } => swap(table_name),
            _ => {}
        }
    }
}

impl Default for TempTables {
    fn default() -> Self {
        TempTables::new()
    }
}

/// Renames the table factors naming a temporary relation.
struct Renamer<'a> {
    temp: &'a TempTables,
    ctes: crate::plan::views::CteScope,
}

impl VisitorMut for Renamer<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut datafusion::sql::sqlparser::ast::Query) -> ControlFlow<()> {
        self.ctes.enter(q);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut datafusion::sql::sqlparser::ast::Query) -> ControlFlow<()> {
        self.ctes.leave();
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table { name, alias, args: None, .. } = tf else { return ControlFlow::Continue(()) };
        if name.0.len() == 1
            && let Some(i) = name.0[0].as_ident()
            && self.ctes.contains(&crate::parser::ident(i))
        {
            return ControlFlow::Continue(());
        }
        if let Some(stored) = self.temp.lookup(name) {
            if alias.is_none() {
                let own = name.0.last().and_then(|p| p.as_ident()).cloned().unwrap_or_else(|| Ident::new(""));
                *alias = Some(TableAlias { explicit: true, name: own, columns: vec![], at: None });
            }
            *name = stored;
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
impl TempTables {
    fn forget_for_test(&mut self, name: &str) {
        self.names.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::temp_names::is_temp;

    fn resolved(temp: &TempTables, sql: &str) -> String {
        let mut stmt = crate::plan::parse_sql(sql).unwrap().pop().unwrap();
        temp.resolve(&mut stmt).unwrap();
        stmt.to_string()
    }

    #[test]
    fn names_of_temporary_tables_become_their_stored_names() {
        let mut temp = TempTables::new();
        let s = temp.schema().to_string();
        let mut create = crate::plan::parse_sql("CREATE TEMP TABLE foo (a int)").unwrap().pop().unwrap();
        let creating = temp.resolve(&mut create).unwrap().unwrap();
        assert_eq!(creating.name, "foo");
        assert_eq!(create.to_string(), format!("CREATE TABLE \"{s}.foo\" (a INT)"));
        temp.created(creating);
        assert_eq!(resolved(&temp, "SELECT foo.a FROM foo"), format!("SELECT foo.a FROM \"{s}.foo\" AS foo"));
        assert_eq!(resolved(&temp, "SELECT a FROM pg_temp.foo f"), format!("SELECT a FROM \"{s}.foo\" f"));
        assert_eq!(resolved(&temp, "INSERT INTO foo VALUES (1)"), format!("INSERT INTO \"{s}.foo\" AS foo VALUES (1)"));
        assert_eq!(resolved(&temp, "DROP TABLE foo, bar"), format!("DROP TABLE \"{s}.foo\", bar"));
        // A WITH query of the same name, and other schemas, are not it.
        let with = "WITH foo AS (SELECT 1 AS a) SELECT a FROM foo";
        assert_eq!(resolved(&temp, with), with);
        assert_eq!(resolved(&temp, "SELECT a FROM public.foo"), "SELECT a FROM public.foo");
    }

    #[test]
    fn on_commit_actions_come_due_at_the_end_of_each_transaction() {
        let mut temp = TempTables::new();
        for sql in ["CREATE TEMP TABLE d (a int) ON COMMIT DROP", "CREATE TEMP TABLE r (a int) ON COMMIT DELETE ROWS"] {
            let mut stmt = crate::plan::parse_sql(sql).unwrap().pop().unwrap();
            let creating = temp.resolve(&mut stmt).unwrap().unwrap();
            assert!(!stmt.to_string().contains("ON COMMIT"), "{stmt}");
            temp.created(creating);
        }
        let due = temp.due();
        assert_eq!(due, vec![(temp.stored("d"), AtCommit::Drop), (temp.stored("r"), AtCommit::DeleteRows)]);
        // The dropped table is not due again; the emptied one is, each time.
        temp.forget_for_test("d");
        assert_eq!(temp.due(), vec![(temp.stored("r"), AtCommit::DeleteRows)]);
    }

    #[test]
    fn stored_names_say_whose_they_are() {
        let temp = TempTables::new();
        let stored = temp.stored("foo");
        assert!(is_temp(&stored) && temp.owns(&stored));
        assert!(!TempTables::new().owns(&stored));
        assert_eq!(split(&stored), Some((temp.schema(), "foo")));
        assert!(!is_temp("pg_temp_table"));
    }
}
