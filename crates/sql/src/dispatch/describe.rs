//! The extended protocol's Describe: a statement's parameter and result
//! types, found by planning it without running it.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::Statement;

use crate::error::Result;
use crate::plan::parse_sql;
use crate::session::{Session, rename_schema};

/// What Describe reports about a statement before it runs.
pub struct Described {
    /// Inferred Arrow type of each `$n` (1-based).
    pub params: std::collections::HashMap<usize, datafusion::arrow::datatypes::DataType>,
    /// The SQL type of a `$n` when known more precisely than its Arrow type
    /// (an INSERT into a uuid column, an explicit `$1::varchar`).
    pub param_sql: std::collections::HashMap<usize, crate::values::types::SqlType>,
    /// The result columns, when the statement returns rows.
    pub schema: Option<SchemaRef>,
}

impl Session {
    /// Parameter types and result columns of a statement, for the extended protocol.
    pub async fn describe(&mut self, stmt: &Statement) -> Result<Described> {
        let mut resolved = stmt.clone();
        self.temp.resolve(&mut resolved)?;
        let stmt = &resolved;
        // A secondary's catalog follows DDL replicated since it was loaded.
        self.shared.catalog.refresh_if_changed()?;
        let mut params = std::collections::HashMap::new();
        let mut param_sql = std::collections::HashMap::new();
        let mut schema = None;
        // `$n::type` fixes the parameter's type (DataFusion does not infer it).
        let _ = datafusion::sql::sqlparser::ast::visit_expressions(stmt, |e| {
            if let datafusion::sql::sqlparser::ast::Expr::Cast { expr, data_type, .. } = e
                && let datafusion::sql::sqlparser::ast::Expr::Value(v) = expr.as_ref()
                && let datafusion::sql::sqlparser::ast::Value::Placeholder(p) = &v.value
                && let Some(n) = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok())
                && let Ok(t) = crate::values::types::SqlType::parse(&data_type.to_string())
            {
                params.entry(n).or_insert(t.arrow_type());
                param_sql.entry(n).or_insert(t);
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        let add =
            |plan: &LogicalPlan,
             params: &mut std::collections::HashMap<usize, datafusion::arrow::datatypes::DataType>| {
                if let Ok(types) = plan.get_parameter_types() {
                    for (k, v) in types {
                        if let (Some(n), Some(t)) = (k.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()), v) {
                            params.entry(n).or_insert(t);
                        }
                    }
                }
            };
        // `col = $n` with a uuid, json or char column: DataFusion sees text,
        // the client should see the column's type.
        let mut tables = Vec::new();
        let _ = datafusion::sql::sqlparser::ast::visit_relations(stmt, |r| {
            if let Some(name) = r.0.last().and_then(|p| p.as_ident())
                && let Some(t) =
                    self.catalog().table(self.db(), &crate::parser::normalize(&name.value, name.quote_style))
            {
                tables.push(t);
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        let _ = datafusion::sql::sqlparser::ast::visit_expressions(stmt, |e| {
            use datafusion::sql::sqlparser::ast::Expr;
            if let Expr::BinaryOp { left, right, .. } = e {
                let placeholder = |x: &Expr| match x {
                    Expr::Value(v) => match &v.value {
                        datafusion::sql::sqlparser::ast::Value::Placeholder(p) => {
                            p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok())
                        }
                        _ => None,
                    },
                    _ => None,
                };
                let column = |x: &Expr| match x {
                    Expr::Identifier(i) => Some(crate::parser::normalize(&i.value, i.quote_style)),
                    Expr::CompoundIdentifier(p) => p.last().map(|i| crate::parser::normalize(&i.value, i.quote_style)),
                    _ => None,
                };
                let pair = match (placeholder(left), placeholder(right)) {
                    (None, Some(n)) => column(left).map(|c| (c, n)),
                    (Some(n), None) => column(right).map(|c| (c, n)),
                    _ => None,
                };
                if let Some((c, n)) = pair {
                    let types: Vec<crate::values::types::SqlType> =
                        tables.iter().filter_map(|t| t.column(&c).map(|c| c.ty)).collect();
                    if let [ty] = types.as_slice()
                        && matches!(
                            ty,
                            crate::values::types::SqlType::Uuid
                                | crate::values::types::SqlType::Json
                                | crate::values::types::SqlType::Jsonb
                                | crate::values::types::SqlType::Char(_)
                                | crate::values::types::SqlType::Varchar(_)
                        )
                    {
                        param_sql.entry(n).or_insert(*ty);
                    }
                }
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        match stmt {
            Statement::Query(q) => {
                let state = self.ctx.state();
                let mut q = q.clone();
                let names = crate::rewrite::naming::alias_projection(&mut q);
                let mut stmt = Statement::Query(q);
                self.expand_views(&mut stmt)?;
                self.expand_using_wildcards(&mut stmt)?;
                crate::values::enums::rewrite_casts(&mut stmt, &|name| self.catalog().user_type(self.db(), name))?;
                crate::rewrite::strict::rewrite_statement(&mut stmt, self.text_style())?;
                crate::plan::functions::rewrite_casts(&mut stmt);
                crate::rewrite::naming::name_function_columns(&mut stmt);
                let plan = state.statement_to_plan(DFStatement::Statement(Box::new(stmt))).await?;
                add(&plan, &mut params);
                // The result's types are those after Tessera's analyzer rules
                // (`1` is an integer, a quotient has its scale), as the
                // execution's will be; a plan they cannot analyze before its
                // parameters have types keeps the planner's.
                let analyzed = state.analyzer().execute_and_check(plan.clone(), state.config_options(), |_, _| {});
                let plan = analyzed.unwrap_or(plan);
                let s: SchemaRef = Arc::new(plan.schema().as_arrow().clone());
                schema = Some(match &names {
                    Some(n) => rename_schema(&s, n),
                    None => s,
                });
            }
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                for (n, t) in crate::exec::dml_params::dml_param_types(self, stmt)? {
                    params.insert(n, t.arrow_type());
                    param_sql.insert(n, t);
                }
                if let Some(sql) = crate::exec::dml_params::where_probe(self, stmt)? {
                    let probe = parse_sql(&sql)?.pop().expect("statement");
                    let state = self.ctx.state();
                    if let Ok(plan) = state.statement_to_plan(DFStatement::Statement(Box::new(probe))).await {
                        add(&plan, &mut params);
                    }
                }
                schema = crate::exec::dml_returning::returning_schema(self, stmt).await?;
            }
            Statement::ShowVariable { variable } => {
                let name: Vec<String> = variable.iter().map(|i| i.value.clone()).collect();
                let name = name.join(" ");
                let col = if name.eq_ignore_ascii_case("all") { "name".to_string() } else { name.to_lowercase() };
                schema = Some(Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
                    datafusion::arrow::datatypes::Field::new(col, datafusion::arrow::datatypes::DataType::Utf8, true),
                ])));
                if name.eq_ignore_ascii_case("all") {
                    schema = None;
                }
            }
            Statement::Explain { .. } => {
                schema = Some(Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
                    datafusion::arrow::datatypes::Field::new(
                        "QUERY PLAN",
                        datafusion::arrow::datatypes::DataType::Utf8,
                        false,
                    ),
                ])));
            }
            _ => {}
        }
        Ok(Described { params, param_sql, schema })
    }

    /// Undoes a statement that was interrupted (statement timeout, cancel).
    pub fn abort_statement(&mut self) {
        match &mut self.block {
            None => {
                if let Some(t) = self.txn.lock().take() {
                    t.abort();
                }
            }
            Some(b) => b.failed = true,
        }
    }
}
