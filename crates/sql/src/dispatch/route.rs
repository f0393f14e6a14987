//! The one place that decides where a statement goes.
//!
//! Every statement a session runs is classified here, once, by its kind;
//! the session then runs it the way its [`Route`] says (inside or outside
//! the statement's transaction, in an aborted block or not) and hands it to
//! the route's handler. Adding a statement means adding it here and to its
//! handler; a statement no route names is refused (0A000).

use datafusion::sql::sqlparser::ast::Statement;

/// Where a statement goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// BEGIN, COMMIT, ROLLBACK and savepoints (`dispatch::blocks`): they work
    /// even in an aborted block.
    Control,
    /// SET, SHOW, RESET, DISCARD, CLOSE ALL, UNLISTEN
    /// (`session::settings`): no transaction.
    Settings,
    /// Schema changes (`ddl`): they take effect at once, outside the
    /// statement's transaction.
    Ddl,
    /// CREATE TABLE … AS (`dispatch::create_as`): a CREATE TABLE, then an
    /// INSERT of the query's rows in the statement's transaction.
    CreateTableAs,
    /// A query, planned and run by DataFusion in the statement's transaction.
    Query,
    /// INSERT, UPDATE, DELETE (`exec::dml`).
    Dml,
    /// EXPLAIN (`exec::explain`).
    Explain,
    /// COPY (`exec::copy`).
    Copy,
    /// Nothing runs it: refused with 0A000.
    Unsupported,
}

/// The route of `stmt`.
pub(crate) fn route(stmt: &Statement) -> Route {
    use Statement as S;
    match stmt {
        S::StartTransaction { .. }
        | S::Commit { .. }
        | S::Rollback { .. }
        | S::Savepoint { .. }
        | S::ReleaseSavepoint { .. } => Route::Control,
        S::Set(_) | S::ShowVariable { .. } | S::Reset(_) | S::Discard { .. } | S::Close { .. } | S::UNLISTEN { .. } => {
            Route::Settings
        }
        S::CreateTable(ct) if ct.query.is_some() => Route::CreateTableAs,
        S::CreateTable(_)
        | S::CreateIndex(_)
        | S::CreateView(_)
        | S::CreateDatabase { .. }
        | S::CreateSequence { .. }
        | S::CreateRole(_)
        | S::CreateType { .. }
        | S::CreateDomain(_)
        | S::CreateSchema { .. }
        | S::CreateFunction(_)
        | S::CreateTrigger(_)
        | S::CreateExtension(_)
        | S::AlterTable(_)
        | S::AlterSchema(_)
        | S::AlterRole { .. }
        | S::AlterType(_)
        | S::Drop { .. }
        | S::DropDomain(_)
        | S::Truncate(_)
        | S::Analyze(_)
        | S::Vacuum(_) => Route::Ddl,
        S::Query(_) => Route::Query,
        S::Insert(_) | S::Update(_) | S::Delete(_) => Route::Dml,
        S::Explain { .. } => Route::Explain,
        S::Copy { .. } => Route::Copy,
        _ => Route::Unsupported,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route_of(sql: &str) -> Route {
        route(&crate::parser::parse_sql(sql).unwrap().remove(0))
    }

    #[test]
    fn each_kind_of_statement_has_one_route() {
        assert_eq!(route_of("BEGIN"), Route::Control);
        assert_eq!(route_of("ROLLBACK TO SAVEPOINT a"), Route::Control);
        assert_eq!(route_of("SET search_path = public"), Route::Settings);
        assert_eq!(route_of("SHOW TimeZone"), Route::Settings);
        assert_eq!(route_of("CREATE TABLE t AS SELECT 1"), Route::CreateTableAs);
        assert_eq!(route_of("CREATE TABLE t (a int)"), Route::Ddl);
        assert_eq!(route_of("DROP VIEW v"), Route::Ddl);
        assert_eq!(route_of("CREATE DOMAIN d AS int NOT NULL"), Route::Ddl);
        assert_eq!(route_of("SELECT 1"), Route::Query);
        assert_eq!(route_of("UPDATE t SET a = 1"), Route::Dml);
        assert_eq!(route_of("EXPLAIN SELECT 1"), Route::Explain);
        assert_eq!(route_of("COPY t FROM STDIN"), Route::Copy);
        assert_eq!(route_of("LISTEN x"), Route::Unsupported);
    }
}
