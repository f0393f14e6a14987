//! A column or expression that unites floats with numerics is a float, as
//! in PostgreSQL.
//!
//! Where values of several types meet in one result — the rows of VALUES,
//! the branches of UNION, INTERSECT and EXCEPT, the results of CASE, the
//! arguments of COALESCE, NULLIF, GREATEST, LEAST and ARRAY[…] — PostgreSQL
//! picks the type every other one converts to implicitly: in the numeric
//! category `numeric` converts to `real` and `double precision`, never
//! the reverse, so a float with a numeric is a float (`real` with
//! `numeric` is `real`). DataFusion picks a decimal instead, of 15 places
//! for a double: `VALUES (1e-20::float8), (0.5)` read back `0.000000000000000`,
//! `COALESCE(1e-20::float8, 0.0)` was 0 and `CASE 1e-20::float8 WHEN 0.0`
//! took the zero branch — silent wrong answers. The analyzer rule
//! [`FloatCommonTypes`] runs before DataFusion's type coercion and casts
//! the numeric members of such a group to the widest float among them.
//!
//! VALUES is typed while the plan is built, with a cast of each row to the
//! decimal; those casts are replaced by casts to the float.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::common::{Column, DFSchema, ExprSchema, Result};
use datafusion::logical_expr::expr::{Case, ScalarFunction};
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, Projection, Union, Values, cast};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct FloatCommonTypes;

impl AnalyzerRule for FloatCommonTypes {
    fn name(&self) -> &str {
        "tessera_float_common_types"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let plan = plan
            .transform_up_with_subqueries(|node| match node {
                LogicalPlan::Union(union) => union_as_floats(union),
                LogicalPlan::Values(values) => values_as_floats(values),
                other => Ok(Transformed::no(other)),
            })
            .data()?;
        crate::values::exact_casts::rewrite_expressions(plan, group_as_floats)
    }
}

fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..))
}

/// The float a group of these types has in PostgreSQL when it mixes
/// numerics with floats: the widest float among them.
fn float_of_group<'a>(types: impl IntoIterator<Item = &'a DataType>) -> Option<DataType> {
    let (mut decimal, mut float) = (false, None::<DataType>);
    for t in types {
        match t {
            DataType::Float64 => float = Some(DataType::Float64),
            DataType::Float32 | DataType::Float16 if float.is_none() => float = Some(DataType::Float32),
            t if is_decimal(t) => decimal = true,
            _ => {}
        }
    }
    float.filter(|_| decimal)
}

/// The members of a group, cast to `float` where they are numerics.
fn cast_members(members: Vec<Expr>, types: &[DataType], float: &DataType) -> Vec<Expr> {
    members.into_iter().zip(types).map(|(e, t)| if is_decimal(t) { cast(e, float.clone()) } else { e }).collect()
}

/// Casts the numerics of one group of expressions, if it mixes them with floats.
fn group(members: Vec<Expr>, schema: &DFSchema) -> Result<(Vec<Expr>, bool)> {
    let types = members.iter().map(|e| e.get_type(schema as &dyn ExprSchema)).collect::<Result<Vec<_>>>()?;
    match float_of_group(&types) {
        Some(float) => Ok((cast_members(members, &types, &float), true)),
        None => Ok((members, false)),
    }
}

/// The functions whose arguments form one result type.
fn unites_arguments(name: &str) -> bool {
    matches!(name, "coalesce" | "nullif" | "greatest" | "least" | "make_array")
}

fn group_as_floats(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    match e {
        Expr::Case(case) => case_as_floats(case, schema),
        Expr::ScalarFunction(ScalarFunction { func, args }) if unites_arguments(func.name()) => {
            let (args, changed) = group(args, schema)?;
            let e = Expr::ScalarFunction(ScalarFunction { func, args });
            Ok(if changed { Transformed::yes(e) } else { Transformed::no(e) })
        }
        other => Ok(Transformed::no(other)),
    }
}

/// CASE's results form one group; a simple CASE's operand and its WHEN
/// values another (they are compared).
fn case_as_floats(case: Case, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Case { expr, when_then_expr, else_expr } = case;
    let (whens, thens): (Vec<Expr>, Vec<Expr>) = when_then_expr.into_iter().map(|(w, t)| (*w, *t)).unzip();
    let mut changed = false;
    let mut results = thens;
    let has_else = else_expr.is_some();
    results.extend(else_expr.map(|e| *e));
    let (mut results, c) = group(results, schema)?;
    changed |= c;
    let else_expr = if has_else { results.pop().map(Box::new) } else { None };
    let (expr, whens) = match expr {
        Some(operand) => {
            let mut compared = vec![*operand];
            compared.extend(whens);
            let (mut compared, c) = group(compared, schema)?;
            changed |= c;
            let operand = compared.remove(0);
            (Some(Box::new(operand)), compared)
        }
        None => (None, whens),
    };
    let when_then_expr = whens.into_iter().zip(results).map(|(w, t)| (Box::new(w), Box::new(t))).collect();
    let e = Expr::Case(Case { expr, when_then_expr, else_expr });
    Ok(if changed { Transformed::yes(e) } else { Transformed::no(e) })
}

/// A set operation's column is a float where its branches mix numerics
/// with floats: the numeric branches are cast, under their names.
fn union_as_floats(union: Union) -> Result<Transformed<LogicalPlan>> {
    let columns = union.schema.fields().len();
    let targets: Vec<Option<DataType>> =
        (0..columns).map(|c| float_of_group(union.inputs.iter().map(|i| i.schema().field(c).data_type()))).collect();
    if targets.iter().all(Option::is_none) {
        return Ok(Transformed::no(LogicalPlan::Union(union)));
    }
    let inputs = union
        .inputs
        .iter()
        .map(|input| {
            let schema = input.schema();
            if !targets.iter().enumerate().any(|(c, t)| t.is_some() && is_decimal(schema.field(c).data_type())) {
                return Ok(input.clone());
            }
            let exprs = (0..columns)
                .map(|c| {
                    let (qualifier, field) = schema.qualified_field(c);
                    let column = Expr::Column(Column::new(qualifier.cloned(), field.name()));
                    match &targets[c] {
                        Some(float) if is_decimal(field.data_type()) => {
                            cast(column, float.clone()).alias_qualified(qualifier.cloned(), field.name())
                        }
                        _ => column,
                    }
                })
                .collect();
            Ok(Arc::new(LogicalPlan::Projection(Projection::try_new(exprs, input.clone())?)))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Transformed::yes(LogicalPlan::Union(Union::try_new_with_loose_types(inputs)?)))
}

/// A row's value as written, under the cast to the column's type that
/// building VALUES added.
fn as_written<'a>(e: &'a Expr, column: &DataType) -> &'a Expr {
    match e {
        Expr::Cast(c) if c.field.data_type() == column => &c.expr,
        e => e,
    }
}

/// VALUES columns that mix numerics with floats become floats.
fn values_as_floats(values: Values) -> Result<Transformed<LogicalPlan>> {
    let empty = DFSchema::empty();
    let columns = values.schema.fields().len();
    let mut targets = Vec::with_capacity(columns);
    for (c, field) in values.schema.fields().iter().enumerate() {
        let mut types = Vec::with_capacity(values.values.len());
        if is_decimal(field.data_type()) {
            for row in &values.values {
                types.push(as_written(&row[c], field.data_type()).get_type(&empty as &dyn ExprSchema)?);
            }
        }
        targets.push(float_of_group(&types));
    }
    if targets.iter().all(Option::is_none) {
        return Ok(Transformed::no(LogicalPlan::Values(values)));
    }
    let rows = values
        .values
        .iter()
        .map(|row| {
            row.iter()
                .enumerate()
                .map(|(c, e)| match &targets[c] {
                    Some(float) => {
                        let written = as_written(e, values.schema.field(c).data_type()).clone();
                        let ty = written.get_type(&empty as &dyn ExprSchema)?;
                        Ok(if ty == *float { written } else { cast(written, float.clone()) })
                    }
                    None => Ok(e.clone()),
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    let fields: Vec<Field> = values
        .schema
        .fields()
        .iter()
        .enumerate()
        .map(|(c, f)| match &targets[c] {
            Some(float) => f.as_ref().clone().with_data_type(float.clone()),
            None => f.as_ref().clone(),
        })
        .collect();
    let schema = DFSchema::from_unqualified_fields(fields.into(), values.schema.as_arrow().metadata().clone())?;
    Ok(Transformed::yes(LogicalPlan::Values(Values { schema: Arc::new(schema), values: rows })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_float_with_a_numeric_is_the_float() {
        let d = DataType::Decimal128(30, 15);
        assert_eq!(float_of_group(&[DataType::Float64, d.clone()]), Some(DataType::Float64));
        assert_eq!(float_of_group(&[d.clone(), DataType::Float32]), Some(DataType::Float32));
        assert_eq!(float_of_group(&[DataType::Float32, d.clone(), DataType::Float64]), Some(DataType::Float64));
        assert_eq!(float_of_group(&[DataType::Float64, DataType::Int64]), None);
        assert_eq!(float_of_group(&[d, DataType::Int32]), None);
    }
}
