//! `SELECT *` over a join with `USING` or `NATURAL`, in PostgreSQL's
//! column order.
//!
//! PostgreSQL puts a USING join's merged columns first, then the left
//! side's other columns, then the right side's (`SELECT * FROM a JOIN b
//! USING (k)` with `a(x, k)` and `b(y, k)` is `k, x, y`); DataFusion keeps
//! each side's order (`x, k, y`). A client that reads columns by position
//! would get the wrong values, so such a `*` is written out here, before
//! planning, as the list PostgreSQL would expand it to: `a.k AS k, a.x AS
//! x, b.y AS y`. Its columns come from the catalog (tables), the WITH
//! query or the subquery's select list; where they cannot be known here
//! (a table function, a nested join, a subquery's `*` or unnamed
//! expression), the query is refused (0A000) rather than answered in
//! another order.
//!
//! A RIGHT or FULL join's merged column is the right side's, or the
//! COALESCE of both sides (DataFusion's is the left side's, NULL for the
//! rows only on the right): its USING becomes ON, and the select's
//! unqualified references to the merged column (outside subqueries) become
//! that expression. (`query_checks` refuses a RIGHT or FULL USING join
//! that reaches it unrewritten.)

use std::collections::HashMap;

use datafusion::sql::sqlparser::ast::{
    Expr, Ident, JoinConstraint, JoinOperator, Query, Select, SelectItem, SetExpr, Statement, TableFactor,
    TableWithJoins, VisitMut, VisitorMut,
};

use crate::error::{SqlError, code};

/// One column of a FROM item: how to reference it, and its name.
#[derive(Clone)]
struct Column {
    expr: Expr,
    name: String,
}

/// Expands the `*` of every select over a USING or NATURAL join in `stmt`.
/// `table_columns` gives a table's column names (None: not a table).
pub fn expand(stmt: &mut Statement, table_columns: &dyn Fn(&str) -> Option<Vec<String>>) -> Result<(), SqlError> {
    let mut ctes = HashMap::new();
    collect_ctes(stmt, &mut ctes);
    let mut expander = Expander { table_columns, ctes, error: None };
    let _ = stmt.visit(&mut expander);
    expander.error.map_or(Ok(()), Err)
}

/// The output names of every WITH query in `stmt` (scopes aside).
fn collect_ctes(stmt: &mut Statement, ctes: &mut HashMap<String, Option<Vec<String>>>) {
    struct Collect<'a>(&'a mut HashMap<String, Option<Vec<String>>>);
    impl VisitorMut for Collect<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut Query) -> std::ops::ControlFlow<()> {
            if let Some(with) = &q.with {
                for cte in &with.cte_tables {
                    let names = if cte.alias.columns.is_empty() {
                        output_names(&cte.query)
                    } else {
                        Some(cte.alias.columns.iter().map(|c| ident_name(&c.name)).collect())
                    };
                    self.0.insert(ident_name(&cte.alias.name), names);
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Collect(ctes));
}

fn ident_name(i: &Ident) -> String {
    if i.quote_style.is_some() { i.value.clone() } else { i.value.to_lowercase() }
}

/// The column names a query's select list gives, when each is plain.
fn output_names(q: &Query) -> Option<Vec<String>> {
    let SetExpr::Select(s) = q.body.as_ref() else { return None };
    s.projection
        .iter()
        .map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(ident_name(alias)),
            SelectItem::UnnamedExpr(Expr::Identifier(i)) => Some(ident_name(i)),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => parts.last().map(ident_name),
            _ => None,
        })
        .collect()
}

struct Expander<'a> {
    table_columns: &'a dyn Fn(&str) -> Option<Vec<String>>,
    ctes: HashMap<String, Option<Vec<String>>>,
    error: Option<SqlError>,
}

fn unknown() -> SqlError {
    SqlError::new(code::FEATURE_NOT_SUPPORTED, "SELECT * over this USING or NATURAL join is not supported yet")
        .with_hint("Name the columns to select.")
}

fn quoted(name: &str) -> Ident {
    Ident::with_quote('"', name)
}

impl Expander<'_> {
    /// The columns of one FROM item, referenced through its name or alias.
    fn item_columns(&self, factor: &TableFactor) -> Result<Vec<Column>, SqlError> {
        let (qualifier, names): (Vec<Ident>, Vec<String>) = match factor {
            TableFactor::Table { name, alias, args: None, .. } => {
                let last = name.0.last().and_then(|p| p.as_ident()).map(ident_name).unwrap_or_default();
                let names = if name.0.len() == 1 && self.ctes.contains_key(&last) {
                    self.ctes.get(&last).cloned().flatten()
                } else {
                    (self.table_columns)(&last)
                };
                let qualifier = match alias {
                    Some(a) => vec![a.name.clone()],
                    None => name.0.iter().filter_map(|p| p.as_ident().cloned()).collect(),
                };
                (qualifier, with_alias_columns(names.ok_or_else(unknown)?, alias))
            }
            TableFactor::Derived { subquery, alias: Some(alias), .. } => (
                vec![alias.name.clone()],
                with_alias_columns(output_names(subquery).ok_or_else(unknown)?, &Some(alias.clone())),
            ),
            _ => return Err(unknown()),
        };
        Ok(names
            .into_iter()
            .map(|name| {
                let mut parts = qualifier.clone();
                parts.push(quoted(&name));
                Column { expr: Expr::CompoundIdentifier(parts), name }
            })
            .collect())
    }

    /// The columns of a FROM entry and its joins, in PostgreSQL's order.
    /// A RIGHT or FULL join's USING becomes ON (DataFusion's merged column
    /// would be the left side's), and its merged columns, named in
    /// `merged_exprs`, are the right side's or the COALESCE of both.
    fn joined_columns(
        &self,
        t: &mut TableWithJoins,
        merged_exprs: &mut HashMap<String, Expr>,
    ) -> Result<Vec<Column>, SqlError> {
        let mut left = self.item_columns(&t.relation)?;
        for j in &mut t.joins {
            let right = self.item_columns(&j.relation)?;
            let (constraint, kind) = match &mut j.join_operator {
                JoinOperator::Join(c) | JoinOperator::Inner(c) | JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => {
                    (Some(c), Merge::Left)
                }
                JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (Some(c), Merge::Right),
                JoinOperator::FullOuter(c) => (Some(c), Merge::Both),
                JoinOperator::CrossJoin(_) => (None, Merge::Left),
                _ => return Err(unknown()),
            };
            let merged: Vec<String> = match constraint.as_deref() {
                Some(JoinConstraint::Using(names)) => names
                    .iter()
                    .map(|n| n.0.last().and_then(|p| p.as_ident()).map(ident_name).unwrap_or_default())
                    .collect(),
                Some(JoinConstraint::Natural) => {
                    left.iter().filter(|l| right.iter().any(|r| r.name == l.name)).map(|l| l.name.clone()).collect()
                }
                _ => Vec::new(),
            };
            let mut out: Vec<Column> = Vec::new();
            let mut on: Option<Expr> = None;
            for m in &merged {
                let l = left.iter().find(|l| &l.name == m).cloned().ok_or_else(unknown)?;
                let r = right.iter().find(|r| &r.name == m).cloned().ok_or_else(unknown)?;
                let expr = match kind {
                    Merge::Left => l.expr.clone(),
                    Merge::Right => r.expr.clone(),
                    Merge::Both => crate::parser::parse_expr(&format!("COALESCE({}, {})", l.expr, r.expr))
                        .map_err(|_| unknown())?,
                };
                if kind != Merge::Left {
                    let eq = Expr::BinaryOp {
                        left: Box::new(l.expr.clone()),
                        op: datafusion::sql::sqlparser::ast::BinaryOperator::Eq,
                        right: Box::new(r.expr.clone()),
                    };
                    on = Some(match on.take() {
                        None => eq,
                        Some(prev) => Expr::BinaryOp {
                            left: Box::new(prev),
                            op: datafusion::sql::sqlparser::ast::BinaryOperator::And,
                            right: Box::new(eq),
                        },
                    });
                    merged_exprs.insert(m.clone(), expr.clone());
                }
                out.push(Column { expr, name: m.clone() });
            }
            if let (Some(c), Some(on)) = (constraint, on) {
                *c = JoinConstraint::On(on);
            }
            out.extend(left.into_iter().filter(|l| !merged.contains(&l.name)));
            out.extend(right.into_iter().filter(|r| !merged.contains(&r.name)));
            left = out;
        }
        Ok(left)
    }

    /// The selects of a query's body (both sides of a UNION, …).
    fn expand_set(&self, set: &mut SetExpr) -> Result<(), SqlError> {
        match set {
            SetExpr::Select(select) => self.expand_select(select),
            SetExpr::SetOperation { left, right, .. } => {
                self.expand_set(left)?;
                self.expand_set(right)
            }
            _ => Ok(()),
        }
    }

    fn expand_select(&self, select: &mut Select) -> Result<(), SqlError> {
        let star = select.projection.iter().any(|i| matches!(i, SelectItem::Wildcard(opts) if is_plain(opts)));
        let outer_merge = select.from.iter().any(|t| t.joins.iter().any(|j| merges_outer(&j.join_operator)));
        let any_merge = select.from.iter().any(|t| t.joins.iter().any(|j| merges(&j.join_operator)));
        if !any_merge || !(star || outer_merge) {
            return Ok(());
        }
        let mut all: Vec<Column> = Vec::new();
        let mut merged_exprs = HashMap::new();
        for t in &mut select.from {
            all.extend(self.joined_columns(t, &mut merged_exprs)?);
        }
        if star {
            let mut projection = Vec::new();
            for item in select.projection.drain(..) {
                match item {
                    SelectItem::Wildcard(ref opts) if is_plain(opts) => projection.extend(
                        all.iter().map(|c| SelectItem::ExprWithAlias { expr: c.expr.clone(), alias: quoted(&c.name) }),
                    ),
                    other => projection.push(other),
                }
            }
            select.projection = projection;
        }
        if !merged_exprs.is_empty() {
            refer_to_merged(select, &merged_exprs);
        }
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Merge {
    /// Inner and left joins: the left side's column.
    Left,
    /// Right joins: the right side's.
    Right,
    /// Full joins: the COALESCE of both.
    Both,
}

/// Unqualified references in `select` (outside its subqueries) to a RIGHT
/// or FULL join's merged column, made references to its expression; an
/// output column keeps the name.
fn refer_to_merged(select: &mut Select, merged: &HashMap<String, Expr>) {
    /// Replaces the references outside subqueries (`depth` counts the
    /// queries entered).
    struct Refer<'a> {
        merged: &'a HashMap<String, Expr>,
        depth: usize,
    }
    impl VisitorMut for Refer<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &mut Query) -> std::ops::ControlFlow<()> {
            self.depth += 1;
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut Query) -> std::ops::ControlFlow<()> {
            self.depth -= 1;
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, x: &mut Expr) -> std::ops::ControlFlow<()> {
            if self.depth == 0
                && let Expr::Identifier(i) = x
                && let Some(m) = self.merged.get(&ident_name(i))
            {
                *x = Expr::Nested(Box::new(m.clone()));
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let replace = |e: &mut Expr| {
        let _ = e.visit(&mut Refer { merged, depth: 0 });
    };
    for item in &mut select.projection {
        match item {
            SelectItem::UnnamedExpr(Expr::Identifier(i)) if merged.contains_key(&ident_name(i)) => {
                let alias = i.clone();
                let expr = merged[&ident_name(i)].clone();
                *item = SelectItem::ExprWithAlias { expr, alias };
            }
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => replace(e),
            _ => {}
        }
    }
    if let Some(w) = &mut select.selection {
        replace(w);
    }
    if let Some(h) = &mut select.having {
        replace(h);
    }
    if let datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(list, _) = &mut select.group_by {
        list.iter_mut().for_each(replace);
    }
}

/// Whether a join is RIGHT or FULL with USING or NATURAL.
fn merges_outer(op: &JoinOperator) -> bool {
    match op {
        JoinOperator::Right(c) | JoinOperator::RightOuter(c) | JoinOperator::FullOuter(c) => {
            matches!(c, JoinConstraint::Using(_) | JoinConstraint::Natural)
        }
        _ => false,
    }
}

/// Whether a join merges columns (USING or NATURAL).
fn merges(op: &JoinOperator) -> bool {
    match op {
        JoinOperator::Join(c)
        | JoinOperator::Inner(c)
        | JoinOperator::Left(c)
        | JoinOperator::LeftOuter(c)
        | JoinOperator::Right(c)
        | JoinOperator::RightOuter(c)
        | JoinOperator::FullOuter(c) => matches!(c, JoinConstraint::Using(_) | JoinConstraint::Natural),
        _ => false,
    }
}

fn with_alias_columns(names: Vec<String>, alias: &Option<datafusion::sql::sqlparser::ast::TableAlias>) -> Vec<String> {
    match alias {
        Some(a) if !a.columns.is_empty() => {
            let renamed: Vec<String> = a.columns.iter().map(|c| ident_name(&c.name)).collect();
            renamed.iter().cloned().chain(names.into_iter().skip(renamed.len())).collect()
        }
        _ => names,
    }
}

/// A `*` without EXCEPT, REPLACE or other options.
fn is_plain(opts: &datafusion::sql::sqlparser::ast::WildcardAdditionalOptions) -> bool {
    opts.opt_exclude.is_none() && opts.opt_except.is_none() && opts.opt_replace.is_none() && opts.opt_rename.is_none()
}

impl VisitorMut for Expander<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut Query) -> std::ops::ControlFlow<()> {
        if let Err(e) = self.expand_set(q.body.as_mut()) {
            self.error = Some(e);
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    }
}
