//! Views: stored queries that a statement reads like tables.
//!
//! A view is kept as the text of its defining query, made to mean at every
//! use what it meant when it was created, as PostgreSQL's views (which it
//! keeps as a parsed, bound query tree) do:
//!
//! - every table or view the query names is written schema-qualified and
//!   aliased by its own name (`FROM t` is stored as `FROM public.t AS t`), so
//!   a WITH query of the statement that reads the view cannot stand in for
//!   one of the view's tables, and renaming a table rewrites one name;
//! - a `*` in its select list is expanded into the columns it stood for at
//!   creation (`view_ddl.rs`), so a column added to a table later does not
//!   appear in the view;
//! - its columns' names and types are recorded.
//!
//! Before a statement is planned, [`expand`] replaces each reference to a
//! view in FROM with its query as a derived table named like the view, its
//! columns named as the view's (PostgreSQL's rewriter does the same with the
//! view's `_RETURN` rule). Everything after sees an ordinary query: the
//! rewrites of `strict.rs` and friends, DataFusion's planner and optimizer.
//! The catalog records which tables and views each view reads, so that
//! dropping or changing them is refused (2BP01) or cascades as PostgreSQL's
//! dependency tracking does.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    Ident, ObjectName, ObjectNamePart, Query, Statement, TableAlias, TableAliasColumnDef, TableFactor, VisitMut,
    VisitorMut,
};

use crate::error::{Result, SqlError, code};
pub use crate::storage::catalog::views::ViewDef;

/// How many views one statement may expand (a view reading a view …):
/// more means a cycle that `CREATE OR REPLACE VIEW` made.
const MAX_EXPANSIONS: usize = 1000;

impl ViewDef {
    /// The defining query, parsed.
    pub fn parsed_query(&self) -> Result<Query> {
        parse_query(&self.query)
    }
}

/// Parses the text of a query.
pub fn parse_query(sql: &str) -> Result<Query> {
    match crate::plan::parse_sql(sql)?.pop() {
        Some(Statement::Query(q)) => Ok(*q),
        _ => Err(SqlError::internal(format!("a stored view query did not parse as a query: {sql}"))),
    }
}

/// The relation an unqualified or `public.`-qualified name in FROM is, if
/// it is one of the database's own; `None` for any other (pg_catalog's,
/// a WITH query's, a table function's).
fn user_relation(name: &ObjectName) -> Option<(String, bool)> {
    let parts: Vec<&Ident> = name.0.iter().map(|p| p.as_ident()).collect::<Option<_>>()?;
    let norm = |i: &Ident| if i.quote_style.is_some() { i.value.clone() } else { i.value.to_lowercase() };
    match parts.as_slice() {
        [t] => Some((norm(t), false)),
        [s, t] if norm(s) == "public" => Some((norm(t), true)),
        _ => None,
    }
}

/// Tracks the names of the WITH queries in scope while a visitor walks a
/// statement (an unqualified name in FROM may be one of them).
#[derive(Default)]
pub(crate) struct CteScope(Vec<Vec<String>>);

impl CteScope {
    pub(crate) fn enter(&mut self, q: &Query) {
        let names =
            q.with.iter().flat_map(|w| w.cte_tables.iter()).map(|c| c.alias.name.value.to_lowercase()).collect();
        self.0.push(names);
    }

    pub(crate) fn leave(&mut self) {
        self.0.pop();
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|names| names.iter().any(|n| n == name))
    }
}

/// Replaces every reference to a view in `stmt` by the view's query (see
/// the module's text). `view` finds a view of the session's database by name.
pub fn expand(stmt: &mut Statement, view: &dyn Fn(&str) -> Option<Arc<ViewDef>>) -> Result<()> {
    let mut expander = Expander { view, ctes: CteScope::default(), expansions: 0 };
    match stmt.visit(&mut expander) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Whether `stmt` names a view anywhere (cheap, before [`expand`]).
pub fn names_a_view(stmt: &Statement, view: &dyn Fn(&str) -> bool) -> bool {
    let mut found = false;
    let _ = datafusion::sql::sqlparser::ast::visit_relations(stmt, |r| {
        if let Some((name, _)) = user_relation(r)
            && view(&name)
        {
            found = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    found
}

struct Expander<'a> {
    view: &'a dyn Fn(&str) -> Option<Arc<ViewDef>>,
    ctes: CteScope,
    expansions: usize,
}

impl VisitorMut for Expander<'_> {
    type Break = SqlError;

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<SqlError> {
        self.ctes.enter(q);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<SqlError> {
        self.ctes.leave();
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<SqlError> {
        let TableFactor::Table { name, alias, args: None, .. } = tf else { return ControlFlow::Continue(()) };
        let Some((view_name, qualified)) = user_relation(name) else { return ControlFlow::Continue(()) };
        if !qualified && self.ctes.contains(&view_name) {
            return ControlFlow::Continue(());
        }
        let Some(view) = (self.view)(&view_name) else { return ControlFlow::Continue(()) };
        self.expansions += 1;
        if self.expansions > MAX_EXPANSIONS {
            return ControlFlow::Break(SqlError::new(
                code::INVALID_OBJECT_DEFINITION,
                format!("infinite recursion detected in rules for relation \"{view_name}\""),
            ));
        }
        let query = match view.parsed_query() {
            Ok(q) => q,
            Err(e) => return ControlFlow::Break(e),
        };
        let mut alias = alias.take().unwrap_or_else(|| TableAlias {
            explicit: true,
            name: Ident::with_quote('"', &view.name),
            columns: vec![],
            at: None,
        });
        if alias.columns.len() > view.columns.len() {
            return ControlFlow::Break(SqlError::new(
                code::INVALID_COLUMN_REFERENCE,
                format!(
                    "table \"{}\" has {} columns available but {} columns specified",
                    alias.name.value,
                    view.columns.len(),
                    alias.columns.len()
                ),
            ));
        }
        // The view's column names, but for those the reference renames.
        let quoted = |name: String| TableAliasColumnDef { name: Ident::with_quote('"', name), data_type: None };
        let mut columns: Vec<TableAliasColumnDef> = std::mem::take(&mut alias.columns)
            .into_iter()
            .map(|c| quoted(if c.name.quote_style.is_some() { c.name.value } else { c.name.value.to_lowercase() }))
            .collect();
        for c in view.columns.iter().skip(columns.len()) {
            columns.push(quoted(c.name.clone()));
        }
        alias.columns = columns;
        *tf = TableFactor::Derived { lateral: false, subquery: Box::new(query), alias: Some(alias), sample: None };
        ControlFlow::Continue(())
    }
}

/// Writes each of the database's tables and views that `query` names as
/// `public.name AS name` (see the module's text) and returns their OIDs.
/// `relation` finds a table's or view's OID by name.
pub fn qualify(query: &mut Query, relation: &dyn Fn(&str) -> Option<u32>) -> Result<Vec<u32>> {
    struct Qualifier<'a> {
        relation: &'a dyn Fn(&str) -> Option<u32>,
        ctes: CteScope,
        found: Vec<u32>,
    }
    impl VisitorMut for Qualifier<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
            self.ctes.enter(q);
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
            self.ctes.leave();
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<()> {
            let TableFactor::Table { name, alias, args: None, .. } = tf else { return ControlFlow::Continue(()) };
            let Some((table, qualified)) = user_relation(name) else { return ControlFlow::Continue(()) };
            if !qualified && self.ctes.contains(&table) {
                return ControlFlow::Continue(());
            }
            let Some(oid) = (self.relation)(&table) else { return ControlFlow::Continue(()) };
            if !self.found.contains(&oid) {
                self.found.push(oid);
            }
            let own = name.0.last().and_then(|p| p.as_ident()).cloned().unwrap_or_else(|| Ident::new(&table));
            if alias.is_none() {
                *alias = Some(TableAlias { explicit: true, name: own, columns: vec![], at: None });
            }
            *name = public_name(&table);
            ControlFlow::Continue(())
        }
    }
    let mut q = Qualifier { relation, ctes: CteScope::default(), found: Vec::new() };
    let _ = query.visit(&mut q);
    Ok(q.found)
}

fn public_name(table: &str) -> ObjectName {
    ObjectName(vec![
        ObjectNamePart::Identifier(Ident::new("public")),
        ObjectNamePart::Identifier(Ident::with_quote('"', table)),
    ])
}

/// A stored view query with table or view `old` renamed to `new`.
pub fn rename_relation(query: &str, old: &str, new: &str) -> Result<String> {
    let mut q = parse_query(query)?;
    let _ = datafusion::sql::sqlparser::ast::visit_relations_mut(&mut q, |r| {
        if let Some((name, true)) = user_relation(r)
            && name == old
        {
            *r = public_name(new);
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(q.to_string())
}

/// Whether a stored view query names column `column` anywhere (alone or
/// qualified): whether dropping such a column could change the view.
pub fn mentions_column(query: &str, column: &str) -> bool {
    use datafusion::sql::sqlparser::ast::Expr;
    let Ok(q) = parse_query(query) else { return true };
    let norm = |i: &Ident| if i.quote_style.is_some() { i.value.clone() } else { i.value.to_lowercase() };
    let mut found = false;
    let _ = datafusion::sql::sqlparser::ast::visit_expressions(&q, |e| {
        let hit = match e {
            Expr::Identifier(i) => norm(i) == column,
            Expr::CompoundIdentifier(parts) => parts.iter().any(|i| norm(i) == column),
            _ => false,
        };
        if hit {
            found = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    // USING (column) and NATURAL joins name columns outside expressions:
    // such a view may read any column.
    let text = q.to_string().to_uppercase();
    found || text.contains(" USING") || text.contains("NATURAL ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::catalog::views::ViewColumn;
    use crate::values::types::SqlType;

    fn view(name: &str, query: &str, columns: &[&str]) -> Arc<ViewDef> {
        Arc::new(ViewDef {
            oid: 1,
            db: "d".into(),
            name: name.into(),
            query: query.into(),
            columns: columns.iter().map(|c| ViewColumn { name: c.to_string(), ty: SqlType::Int4 }).collect(),
            depends_on: vec![],
        })
    }

    fn expanded(sql: &str) -> String {
        let v = view("v", "SELECT t.a, t.b FROM public.t AS t", &["a", "b"]);
        let mut stmt = crate::plan::parse_sql(sql).unwrap().pop().unwrap();
        expand(&mut stmt, &|n| (n == "v").then(|| v.clone())).unwrap();
        stmt.to_string()
    }

    #[test]
    fn a_view_in_from_becomes_its_query() {
        assert_eq!(
            expanded("SELECT a FROM v WHERE b > 1"),
            "SELECT a FROM (SELECT t.a, t.b FROM public.t AS t) AS \"v\" (\"a\", \"b\") WHERE b > 1"
        );
        assert_eq!(
            expanded("SELECT x FROM public.v AS w (x)"),
            "SELECT x FROM (SELECT t.a, t.b FROM public.t AS t) AS w (\"x\", \"b\")"
        );
    }

    #[test]
    fn a_with_query_of_the_same_name_hides_the_view() {
        let sql = "WITH v AS (SELECT 1 AS a) SELECT a FROM v";
        assert_eq!(expanded(sql), sql);
        assert!(expanded("WITH v AS (SELECT 1) SELECT a FROM public.v").contains("public.t"));
    }

    #[test]
    fn a_cycle_of_views_is_refused() {
        let v = view("v", "SELECT a FROM public.v AS v", &["a"]);
        let mut stmt = crate::plan::parse_sql("SELECT * FROM v").unwrap().pop().unwrap();
        let err = expand(&mut stmt, &|n| (n == "v").then(|| v.clone())).unwrap_err();
        assert!(err.message.contains("infinite recursion"), "{}", err.message);
    }

    #[test]
    fn queries_are_stored_with_qualified_relations() {
        let mut q = parse_query("WITH w AS (SELECT 1) SELECT * FROM t JOIN u x ON t.a = x.a, w, pg_class").unwrap();
        let deps = qualify(&mut q, &|n| match n {
            "t" => Some(10),
            "u" => Some(11),
            "w" => Some(12),
            _ => None,
        })
        .unwrap();
        assert_eq!(deps, vec![10, 11]);
        assert_eq!(
            q.to_string(),
            "WITH w AS (SELECT 1) SELECT * FROM public.\"t\" AS t JOIN public.\"u\" x ON t.a = x.a, w, pg_class"
        );
        let renamed = rename_relation(&q.to_string(), "t", "t2").unwrap();
        assert!(renamed.contains("FROM public.\"t2\" AS t JOIN public.\"u\""), "{renamed}");
    }

    #[test]
    fn column_mentions_are_found() {
        assert!(mentions_column("SELECT t.a FROM public.t AS t", "a"));
        assert!(!mentions_column("SELECT t.a FROM public.t AS t", "b"));
    }
}
