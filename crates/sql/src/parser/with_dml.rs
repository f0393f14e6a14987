//! `WITH … INSERT | UPDATE | DELETE`: a statement whose read-only common
//! table expressions feed a data-changing statement, which sqlparser reads
//! as a query around the statement and DataFusion does not run.
//!
//! - **INSERT:** the WITH moves onto the INSERT's source query (`INSERT
//!   INTO t WITH c AS (…) SELECT … FROM c`), where it means the same.
//! - **UPDATE … FROM, DELETE … USING:** each reference to a CTE in the
//!   FROM or USING list, the WHERE clause or the SET values becomes a
//!   derived table (`(WITH … SELECT * FROM c) AS c`); the target table is
//!   never replaced (`WITH t AS (…) UPDATE t …` updates the table `t`).
//!   A CTE referenced more than once is not inlined (PostgreSQL evaluates
//!   it once, which matters for volatile functions): the statement stays
//!   refused. A recursive WITH is inlined whole, so its CTEs keep their
//!   own references.
//!
//! A CTE that itself changes data (`WITH d AS (DELETE … RETURNING *)`) is
//! never rewritten: the statement stays refused.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    SetExpr, Statement, TableFactor, UpdateTableFromKind, VisitMut, VisitorMut, With,
};

/// The statement with its WITH moved or inlined, or unchanged.
pub fn with_before_dml(stmt: Statement) -> Statement {
    let Statement::Query(q) = &stmt else { return stmt };
    let Some(with) = &q.with else { return stmt };
    let read_only = with.cte_tables.iter().all(|c| {
        matches!(
            *c.query.body,
            SetExpr::Select(_) | SetExpr::Query(_) | SetExpr::SetOperation { .. } | SetExpr::Values(_)
        )
    });
    let plain = q.order_by.is_none() && q.limit_clause.is_none() && q.fetch.is_none() && q.locks.is_empty();
    let dml = matches!(*q.body, SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_));
    if !read_only || !plain || !dml {
        return stmt;
    }
    let original = stmt.clone();
    let Statement::Query(q) = stmt else { unreachable!("matched above") };
    let q = *q;
    let with = q.with.clone().expect("checked above");
    match *q.body {
        SetExpr::Insert(Statement::Insert(mut insert)) => match insert.source.as_mut() {
            Some(source) => {
                match source.with.as_mut() {
                    None => source.with = Some(with),
                    Some(inner) => {
                        let mut ctes = with.cte_tables;
                        ctes.append(&mut inner.cte_tables);
                        inner.cte_tables = ctes;
                        inner.recursive |= with.recursive;
                    }
                }
                Statement::Insert(insert)
            }
            None => original,
        },
        SetExpr::Update(Statement::Update(mut update)) => {
            let mut inliner = Inliner::new(&with);
            if let Some(UpdateTableFromKind::BeforeSet(from) | UpdateTableFromKind::AfterSet(from)) =
                update.from.as_mut()
            {
                let _ = from.visit(&mut inliner);
            }
            let _ = update.selection.visit(&mut inliner);
            let _ = update.assignments.visit(&mut inliner);
            if inliner.refused {
                return original;
            }
            Statement::Update(update)
        }
        SetExpr::Delete(Statement::Delete(mut delete)) => {
            let mut inliner = Inliner::new(&with);
            let _ = delete.using.visit(&mut inliner);
            let _ = delete.selection.visit(&mut inliner);
            if inliner.refused {
                return original;
            }
            Statement::Delete(delete)
        }
        _ => original,
    }
}

/// Replaces references to the CTEs by derived tables.
struct Inliner<'a> {
    with: &'a With,
    /// How many times each CTE is referenced.
    uses: HashMap<String, usize>,
    refused: bool,
}

impl<'a> Inliner<'a> {
    fn new(with: &'a With) -> Self {
        Inliner { with, uses: HashMap::new(), refused: false }
    }
}

impl VisitorMut for Inliner<'_> {
    type Break = ();

    // After the factor's own contents, so the derived table put in its place
    // is not visited again.
    fn post_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table { name, alias, args: None, .. } = tf else { return ControlFlow::Continue(()) };
        let [part] = name.0.as_slice() else { return ControlFlow::Continue(()) };
        let Some(ident) = part.as_ident() else { return ControlFlow::Continue(()) };
        let cte_name = crate::parser::ident(ident);
        let Some(cte) = self.with.cte_tables.iter().find(|c| crate::parser::ident(&c.alias.name) == cte_name) else {
            return ControlFlow::Continue(());
        };
        let uses = self.uses.entry(cte_name.clone()).or_default();
        *uses += 1;
        if *uses > 1 {
            self.refused = true;
            return ControlFlow::Break(());
        }
        let shown_as = alias.as_ref().map(|a| a.name.to_string()).unwrap_or_else(|| cte.alias.name.to_string());
        let columns = if cte.alias.columns.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = cte.alias.columns.iter().map(|c| c.name.to_string()).collect();
            format!("({})", names.join(", "))
        };
        let sql = format!("SELECT * FROM ({} SELECT * FROM {}) AS {shown_as}{columns}", self.with, cte.alias.name);
        match crate::parser::parse_statement(&sql) {
            Ok(Statement::Query(q)) => match *q.body {
                SetExpr::Select(mut select) if select.from.len() == 1 => {
                    *tf = select.from.remove(0).relation;
                    ControlFlow::Continue(())
                }
                _ => {
                    self.refused = true;
                    ControlFlow::Break(())
                }
            },
            _ => {
                self.refused = true;
                ControlFlow::Break(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(sql: &str) -> String {
        let stmt = crate::parser::parse_statement(sql).unwrap();
        with_before_dml(stmt).to_string()
    }

    #[test]
    fn insert_takes_the_with_onto_its_source() {
        assert_eq!(
            rewrite("WITH t AS (SELECT a FROM y) INSERT INTO y SELECT a + 20 FROM t RETURNING *"),
            "INSERT INTO y WITH t AS (SELECT a FROM y) SELECT a + 20 FROM t RETURNING *"
        );
        // The target is the table, not the CTE of the same name.
        assert_eq!(
            rewrite("WITH with_test AS (SELECT 42) INSERT INTO with_test SELECT * FROM with_test"),
            "INSERT INTO with_test WITH with_test AS (SELECT 42) SELECT * FROM with_test"
        );
    }

    #[test]
    fn update_and_delete_inline_their_ctes() {
        assert_eq!(
            rewrite("WITH r AS (SELECT sum(id) AS total FROM p) UPDATE p SET id = id + total FROM r"),
            "UPDATE p SET id = id + total FROM (WITH r AS (SELECT sum(id) AS total FROM p) SELECT * FROM r) AS r"
        );
        assert_eq!(
            rewrite("WITH r(m) AS (SELECT max(id) FROM p) DELETE FROM p USING r WHERE id = m"),
            "DELETE FROM p USING (WITH r (m) AS (SELECT max(id) FROM p) SELECT * FROM r) AS r (m) WHERE id = m"
        );
        // Data-changing CTEs and twice-used ones stay as they are.
        let kept = "WITH d AS (DELETE FROM p RETURNING *) INSERT INTO p SELECT * FROM d";
        assert_eq!(rewrite(kept), kept);
        let twice = "WITH r AS (SELECT 1 AS x) DELETE FROM p USING r WHERE id IN (SELECT x FROM r)";
        assert_eq!(rewrite(twice), twice);
    }
}
