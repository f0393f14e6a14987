//! Queries whose meaning DataFusion would read otherwise than PostgreSQL,
//! refused (with PostgreSQL's SQLSTATE, or 0A000) before they are planned.
//!
//! A refusal is better than rows that differ from PostgreSQL's: each check
//! here names a construct Tessera cannot yet answer as PostgreSQL does,
//! and goes when it can.

use std::collections::HashMap;

use datafusion::sql::sqlparser::ast::{
    Expr as Ast, FunctionArguments, ObjectName, Query, SetExpr, Statement, TableFactor, Visit, Visitor,
};

use crate::error::{SqlError, code};

/// Runs every check on a statement about to be planned.
pub fn check(stmt: &Statement) -> Result<(), SqlError> {
    refuse_misread_joins(stmt)?;
    refuse_misread_ctes(stmt)?;
    refuse_unordered_arrays(stmt)?;
    refuse_nonpositive_nth_value(stmt)?;
    Ok(())
}

/// Functions whose every call gives another value.
const VOLATILE: &[&str] =
    &["random", "nextval", "setval", "gen_random_uuid", "uuid", "clock_timestamp", "timeofday", "random_normal"];

fn last_name(name: &ObjectName) -> String {
    name.0.last().and_then(|p| p.as_ident()).map(|i| i.value.to_lowercase()).unwrap_or_default()
}

/// WITH queries DataFusion would compute otherwise than PostgreSQL:
/// - one with a volatile function, read more than once: DataFusion
///   computes it once per reference, PostgreSQL once (its rows are the
///   same everywhere the query reads them);
/// - a recursive one whose recursive term aggregates (42P19), or with
///   ORDER BY, LIMIT or OFFSET (0A000): PostgreSQL refuses them, DataFusion
///   would loop until cancelled.
fn refuse_misread_ctes(stmt: &Statement) -> Result<(), SqlError> {
    struct Ctes {
        volatile: Vec<String>,
        references: HashMap<String, usize>,
        error: Option<SqlError>,
    }
    fn calls_volatile(q: &Query) -> bool {
        struct Calls(bool);
        impl Visitor for Calls {
            type Break = ();
            fn pre_visit_expr(&mut self, e: &Ast) -> std::ops::ControlFlow<()> {
                if let Ast::Function(f) = e
                    && VOLATILE.contains(&last_name(&f.name).as_str())
                {
                    self.0 = true;
                    return std::ops::ControlFlow::Break(());
                }
                std::ops::ControlFlow::Continue(())
            }
        }
        let mut calls = Calls(false);
        let _ = q.visit(&mut calls);
        calls.0
    }
    fn aggregates(set: &SetExpr) -> bool {
        const AGGREGATES: &[&str] =
            &["count", "sum", "avg", "min", "max", "array_agg", "string_agg", "bool_and", "bool_or", "every"];
        let SetExpr::Select(select) = set else { return false };
        select.projection.iter().any(|item| {
            struct Agg(bool);
            impl Visitor for Agg {
                type Break = ();
                fn pre_visit_expr(&mut self, e: &Ast) -> std::ops::ControlFlow<()> {
                    match e {
                        // An aggregate inside a subquery is that subquery's.
                        Ast::Subquery(_) | Ast::Exists { .. } | Ast::InSubquery { .. } => {
                            std::ops::ControlFlow::Continue(())
                        }
                        Ast::Function(f) if AGGREGATES.contains(&last_name(&f.name).as_str()) && f.over.is_none() => {
                            self.0 = true;
                            std::ops::ControlFlow::Break(())
                        }
                        _ => std::ops::ControlFlow::Continue(()),
                    }
                }
            }
            let mut agg = Agg(false);
            let _ = item.visit(&mut agg);
            agg.0
        }) || select.having.is_some()
    }
    impl Visitor for Ctes {
        type Break = ();
        fn pre_visit_query(&mut self, q: &Query) -> std::ops::ControlFlow<()> {
            let Some(with) = &q.with else { return std::ops::ControlFlow::Continue(()) };
            for cte in &with.cte_tables {
                let name = cte.alias.name.value.to_lowercase();
                if calls_volatile(&cte.query) {
                    self.volatile.push(name.clone());
                }
                let recursive_term = match cte.query.body.as_ref() {
                    SetExpr::SetOperation { right, .. } if with.recursive => Some(right.as_ref()),
                    _ => None,
                };
                if let Some(term) = recursive_term {
                    if aggregates(term) {
                        self.error = Some(SqlError::new(
                            "42P19",
                            "aggregate functions are not allowed in a recursive query's recursive term",
                        ));
                    }
                    let q = &cte.query;
                    let clause = if q.order_by.is_some() {
                        Some("ORDER BY")
                    } else if q.limit_clause.is_some() {
                        Some("LIMIT/OFFSET")
                    } else if !q.locks.is_empty() {
                        Some("FOR UPDATE/SHARE")
                    } else {
                        None
                    };
                    if let Some(clause) = clause {
                        self.error = Some(SqlError::new(
                            code::FEATURE_NOT_SUPPORTED,
                            format!("{clause} in a recursive query is not implemented"),
                        ));
                    }
                }
            }
            std::ops::ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, t: &TableFactor) -> std::ops::ControlFlow<()> {
            if let TableFactor::Table { name, .. } = t
                && name.0.len() == 1
            {
                *self.references.entry(last_name(name)).or_default() += 1;
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut ctes = Ctes { volatile: Vec::new(), references: HashMap::new(), error: None };
    let _ = stmt.visit(&mut ctes);
    if let Some(e) = ctes.error {
        return Err(e);
    }
    if let Some(name) = ctes.volatile.iter().find(|n| ctes.references.get(*n).copied().unwrap_or(0) > 1) {
        return Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            format!("WITH query \"{name}\" calls a volatile function and is read more than once; that is not supported yet"),
        )
        .with_hint("Tessera would compute it once per reference, where PostgreSQL computes it once. Read it once, or store its rows in a table first."));
    }
    Ok(())
}

/// `ARRAY(SELECT … ORDER BY …)`: DataFusion gathers the rows without their
/// order; refused (0A000) rather than returned in another order.
fn refuse_unordered_arrays(stmt: &Statement) -> Result<(), SqlError> {
    struct Arrays(bool);
    impl Visitor for Arrays {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Ast) -> std::ops::ControlFlow<()> {
            if let Ast::Function(f) = e
                && last_name(&f.name) == "array"
                && let FunctionArguments::Subquery(q) = &f.args
                && q.order_by.is_some()
            {
                self.0 = true;
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut arrays = Arrays(false);
    let _ = stmt.visit(&mut arrays);
    if arrays.0 {
        return Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            "ARRAY(SELECT … ORDER BY …) is not supported yet: the order would be lost",
        )
        .with_hint("Write (SELECT array_agg(x ORDER BY …) FROM …)."));
    }
    Ok(())
}

/// `nth_value(x, n)` with a constant `n` below 1: PostgreSQL refuses it
/// (22016), where DataFusion answers NULL for 0 and counts a negative `n`
/// from the frame's end.
fn refuse_nonpositive_nth_value(stmt: &Statement) -> Result<(), SqlError> {
    use datafusion::sql::sqlparser::ast::{FunctionArg, FunctionArgExpr, UnaryOperator, Value};
    fn constant(e: &Ast) -> Option<f64> {
        match e {
            Ast::Value(v) => match &v.value {
                Value::Number(n, _) => n.parse().ok(),
                _ => None,
            },
            Ast::UnaryOp { op: UnaryOperator::Minus, expr } => constant(expr).map(|n| -n),
            Ast::UnaryOp { op: UnaryOperator::Plus, expr } | Ast::Nested(expr) => constant(expr),
            _ => None,
        }
    }
    struct NthValue(bool);
    impl Visitor for NthValue {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Ast) -> std::ops::ControlFlow<()> {
            if let Ast::Function(f) = e
                && last_name(&f.name) == "nth_value"
                && let FunctionArguments::List(list) = &f.args
                && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(n))) = list.args.get(1)
                && constant(n).is_some_and(|n| n < 1.0)
            {
                self.0 = true;
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut found = NthValue(false);
    let _ = stmt.visit(&mut found);
    if found.0 {
        return Err(SqlError::new(code::INVALID_NTH_VALUE_ARGUMENT, "argument of nth_value must be greater than zero"));
    }
    Ok(())
}

/// What DataFusion reads otherwise than PostgreSQL, refused (0A000) until
/// Tessera gives PostgreSQL's answer: `FULL JOIN … USING` and `RIGHT JOIN
/// … USING` (DataFusion's merged key column is the left side's, NULL for
/// rows only on the right, where PostgreSQL's is the COALESCE of both), `count(t.*)` beside an
/// outer join (DataFusion counts the NULL-extended rows, PostgreSQL does
/// not), and `EXCEPT ALL`/`INTERSECT ALL` (DataFusion's duplicate counts
/// differ).
fn refuse_misread_joins(stmt: &Statement) -> Result<(), SqlError> {
    use datafusion::sql::sqlparser::ast::{
        Expr as Ast, FunctionArg, FunctionArgExpr, FunctionArguments, JoinConstraint, JoinOperator, Query, SetExpr,
        SetOperator, SetQuantifier, TableFactor, TableWithJoins, Visit, Visitor,
    };
    #[derive(Default)]
    struct Found {
        outer: bool,
        merged_using: Option<&'static str>,
        count_row: bool,
        except_all: Option<&'static str>,
    }
    fn tables(t: &TableWithJoins, found: &mut Found) {
        if let TableFactor::NestedJoin { table_with_joins, .. } = &t.relation {
            tables(table_with_joins, found);
        }
        for j in &t.joins {
            if let TableFactor::NestedJoin { table_with_joins, .. } = &j.relation {
                tables(table_with_joins, found);
            }
            match &j.join_operator {
                JoinOperator::FullOuter(c) => {
                    found.outer = true;
                    if matches!(c, JoinConstraint::Using(_) | JoinConstraint::Natural) {
                        found.merged_using = Some("FULL");
                    }
                }
                JoinOperator::Right(c) | JoinOperator::RightOuter(c) => {
                    found.outer = true;
                    if matches!(c, JoinConstraint::Using(_) | JoinConstraint::Natural) {
                        found.merged_using = found.merged_using.or(Some("RIGHT"));
                    }
                }
                JoinOperator::Left(_) | JoinOperator::LeftOuter(_) => found.outer = true,
                _ => {}
            }
        }
    }
    fn body(set: &SetExpr, found: &mut Found) {
        match set {
            SetExpr::Select(s) => s.from.iter().for_each(|t| tables(t, found)),
            SetExpr::SetOperation { left, right, op, set_quantifier } => {
                if matches!(set_quantifier, SetQuantifier::All | SetQuantifier::AllByName) {
                    match op {
                        SetOperator::Except | SetOperator::Minus => found.except_all = Some("EXCEPT ALL"),
                        SetOperator::Intersect => found.except_all = Some("INTERSECT ALL"),
                        _ => {}
                    }
                }
                body(left, found);
                body(right, found);
            }
            _ => {}
        }
    }
    impl Visitor for Found {
        type Break = ();
        fn pre_visit_query(&mut self, q: &Query) -> std::ops::ControlFlow<()> {
            body(&q.body, self);
            std::ops::ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Ast) -> std::ops::ControlFlow<()> {
            if let Ast::Function(f) = e
                && f.name.to_string().eq_ignore_ascii_case("count")
                && let FunctionArguments::List(list) = &f.args
                && list.args.iter().any(|a| matches!(a, FunctionArg::Unnamed(FunctionArgExpr::QualifiedWildcard(_))))
            {
                self.count_row = true;
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut found = Found::default();
    let _ = stmt.visit(&mut found);
    if let Some(kind) = found.merged_using {
        return Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            format!("{kind} JOIN with USING or NATURAL is not supported yet"),
        )
        .with_hint(format!(
            "Write {kind} JOIN … ON and COALESCE the key columns (a.k and b.k) where the merged key is wanted{}.",
            if kind == "RIGHT" { ", or a LEFT JOIN with the tables swapped" } else { "" }
        )));
    }
    if let Some(what) = found.except_all {
        return Err(SqlError::new(code::FEATURE_NOT_SUPPORTED, format!("{what} is not supported yet"))
            .with_hint("DataFusion keeps another count of duplicates than PostgreSQL; write it without ALL where duplicates do not matter."));
    }
    if found.outer && found.count_row {
        return Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            "count(table.*) beside an outer join is not supported yet",
        )
        .with_hint("Count a column of the table that is never NULL, such as its primary key."));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(sql: &str) -> Result<(), SqlError> {
        let stmt = crate::plan::parse_sql(sql).unwrap().pop().unwrap();
        check(&stmt)
    }

    #[test]
    fn refuses_what_datafusion_would_misread() {
        // Rewritten into array_agg(… ORDER BY …) where it can be; refused where not.
        assert!(checked("SELECT ARRAY(SELECT f FROM t ORDER BY f)").is_ok());
        assert!(checked("SELECT ARRAY(SELECT f FROM t ORDER BY f LIMIT 2)").is_err());
        let volatile = "WITH q AS (SELECT random() r) SELECT * FROM q a, q b";
        assert_eq!(checked(volatile).unwrap_err().code, code::FEATURE_NOT_SUPPORTED);
        assert!(checked("WITH q AS (SELECT random() r) SELECT * FROM q").is_ok());
        let aggregating = "WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT count(*) FROM x) SELECT * FROM x";
        assert_eq!(checked(aggregating).unwrap_err().code, "42P19");
        assert!(
            checked("WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM x WHERE n < 3) SELECT * FROM x")
                .is_ok()
        );
    }
}
