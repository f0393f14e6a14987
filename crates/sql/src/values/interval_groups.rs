//! GROUP BY and DISTINCT on intervals, as PostgreSQL groups them.
//!
//! PostgreSQL's interval equality is equal length (a month counted as 30
//! days, a day as 24 hours), so `1 mon` and `30 days` are one group;
//! DataFusion groups by the stored fields and would make two. The
//! analyzer rule [`IntervalGroups`] groups by `tessera_interval_span(x)`
//! instead and shows, for each group, one of its values (`first_value`,
//! as PostgreSQL shows whichever it met first), renamed back to the
//! column the plan above refers to. `DISTINCT` over intervals becomes
//! that grouping too, and `count(DISTINCT d)` counts distinct lengths.
//!
//! Not covered yet: window `PARTITION BY` an interval still tells `1 mon`
//! from `30 days`.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::common::{Column, DFSchema, Result};
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Aggregate, Distinct, Expr, ExprSchemable, LogicalPlan, Projection};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct IntervalGroups;

impl AnalyzerRule for IntervalGroups {
    fn name(&self) -> &str {
        "tessera_interval_groups"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &datafusion::common::config::ConfigOptions) -> Result<LogicalPlan> {
        // `count(DISTINCT d)`: distinct lengths.
        let plan = crate::values::exact_casts::rewrite_expressions(plan, |e, schema| match e {
            Expr::AggregateFunction(mut a)
                if a.params.distinct
                    && a.func.name() == "count"
                    && a.params.args.len() == 1
                    && is_interval(&a.params.args[0], schema) =>
            {
                let span = Arc::new(crate::values::intervals::span_udf());
                let arg = a.params.args.remove(0);
                a.params.args.push(Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction::new_udf(
                    span,
                    vec![arg],
                )));
                Ok(Transformed::yes(Expr::AggregateFunction(a)))
            }
            other => Ok(Transformed::no(other)),
        })?;
        plan.transform_up_with_subqueries(|node| match node {
            LogicalPlan::Aggregate(agg) => regroup(agg),
            LogicalPlan::Distinct(Distinct::All(input)) if interval_columns(input.schema()) => {
                let group: Vec<Expr> = input.schema().columns().into_iter().map(Expr::Column).collect();
                let agg = Aggregate::try_new(input, group, vec![])?;
                Ok(Transformed::yes(regroup(agg)?.data))
            }
            other => Ok(Transformed::no(other)),
        })
        .data()
    }
}

fn is_interval(e: &Expr, schema: &DFSchema) -> bool {
    matches!(e.get_type(schema), Ok(datafusion::arrow::datatypes::DataType::Interval(_)))
}

fn interval_columns(schema: &DFSchema) -> bool {
    schema.fields().iter().any(|f| matches!(f.data_type(), datafusion::arrow::datatypes::DataType::Interval(_)))
}

/// An aggregate grouping by intervals, regrouped by their lengths under
/// a projection that gives the plan above its columns back.
fn regroup(agg: Aggregate) -> Result<Transformed<LogicalPlan>> {
    let schema = agg.input.schema().clone();
    let intervals: Vec<bool> = agg.group_expr.iter().map(|g| is_interval(g, &schema)).collect();
    let grouping_sets = agg.group_expr.iter().any(|g| matches!(g, Expr::GroupingSet(_)));
    if grouping_sets || !intervals.contains(&true) {
        return Ok(Transformed::no(LogicalPlan::Aggregate(agg)));
    }
    let span = Arc::new(crate::values::intervals::span_udf());
    let mut group = Vec::with_capacity(agg.group_expr.len());
    let mut aggregates = agg.aggr_expr.clone();
    for (i, g) in agg.group_expr.iter().enumerate() {
        if !intervals[i] {
            group.push(g.clone());
            continue;
        }
        let length = Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction::new_udf(
            span.clone(),
            vec![g.clone()],
        ));
        group.push(length.alias(format!("__tessera_interval_length_{i}")));
        let first = datafusion::functions_aggregate::first_last::first_value_udaf();
        let shown =
            Expr::AggregateFunction(AggregateFunction::new_udf(first, vec![g.clone()], false, None, vec![], None));
        aggregates.push(shown.alias(format!("__tessera_interval_shown_{i}")));
    }
    let before = agg.schema.clone();
    let regrouped = Aggregate::try_new(agg.input.clone(), group, aggregates)?;
    let after = regrouped.schema.clone();
    let (groups, aggrs) = (agg.group_expr.len(), agg.aggr_expr.len());
    let mut shown = groups + aggrs;
    let mut columns = Vec::with_capacity(before.fields().len());
    for k in 0..before.fields().len() {
        let (qualifier, field) = before.qualified_field(k);
        let source = if intervals.get(k).copied().unwrap_or(false) {
            shown += 1;
            shown - 1
        } else {
            k
        };
        let (sq, sf) = after.qualified_field(source);
        columns
            .push(Expr::Column(Column::new(sq.cloned(), sf.name())).alias_qualified(qualifier.cloned(), field.name()));
    }
    let projection = Projection::try_new(columns, Arc::new(LogicalPlan::Aggregate(regrouped)))?;
    Ok(Transformed::yes(LogicalPlan::Projection(projection)))
}
