//! String constants in a UNION, INTERSECT or EXCEPT typed as PostgreSQL
//! types them: by the other branches.
//!
//! In PostgreSQL a quoted constant has no type of its own ("unknown")
//! until its context gives it one; a set operation's column takes the
//! type of its branches that have one, and the constants are read as
//! that type. So `SELECT 1 UNION SELECT '2'` is an `integer` column, and
//! `SELECT 1 UNION SELECT 'x'` fails (22P02). DataFusion types the
//! constant as text and makes the whole column text: the same rows, but
//! as text, which drivers hand to applications as strings, and which
//! sort and compare as text.
//!
//! This analyzer rule runs before type coercion (and after integer
//! constants have their PostgreSQL types, `int_literals`). Where a column's
//! branches are string constants beside branches that all have one and
//! the same type (an integer, a float, a boolean, a date or a timestamp),
//! the constants become casts to that type, planned like a user's
//! `'2'::int` (PostgreSQL's input rules and errors). Other columns keep
//! DataFusion's typing, as do branches whose column is not a plain
//! constant of a projection.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{Cast, Expr, LogicalPlan, Projection, Union};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct UnionLiterals;

impl AnalyzerRule for UnionLiterals {
    fn name(&self) -> &str {
        "tessera_union_literals"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            let LogicalPlan::Union(union) = &node else { return Ok(Transformed::no(node)) };
            let targets = literal_targets(union);
            if targets.iter().all(Option::is_none) {
                return Ok(Transformed::no(node));
            }
            let inputs = union.inputs.iter().map(|input| cast_literals(input, &targets)).collect::<Result<Vec<_>>>()?;
            Ok(Transformed::yes(LogicalPlan::Union(Union::try_new_with_loose_types(inputs)?)))
        })
        .data()
    }
}

/// The expression under any aliases.
fn unaliased(e: &Expr) -> &Expr {
    match e {
        Expr::Alias(a) => unaliased(&a.expr),
        e => e,
    }
}

/// Whether column `column` of `input` is a string constant of a projection.
fn is_string_constant(input: &LogicalPlan, column: usize) -> bool {
    let LogicalPlan::Projection(p) = input else { return false };
    p.expr.get(column).is_some_and(|e| matches!(unaliased(e), Expr::Literal(ScalarValue::Utf8(Some(_)), _)))
}

/// The types PostgreSQL would read a set operation's string constants
/// as, by column (None: leave the column to DataFusion).
fn literal_targets(union: &Union) -> Vec<Option<DataType>> {
    (0..union.schema.fields().len())
        .map(|column| {
            let mut constants = false;
            let mut typed: Option<&DataType> = None;
            for input in &union.inputs {
                if is_string_constant(input, column) {
                    constants = true;
                    continue;
                }
                let ty = input.schema().field(column).data_type();
                match typed {
                    _ if *ty == DataType::Null => {}
                    None => typed = Some(ty),
                    Some(t) if t == ty => {}
                    Some(_) => return None,
                }
            }
            let ty = typed?;
            let readable = matches!(
                ty,
                DataType::Int16
                    | DataType::Int32
                    | DataType::Int64
                    | DataType::Float32
                    | DataType::Float64
                    | DataType::Boolean
                    | DataType::Date32
                    | DataType::Timestamp(..)
            );
            (constants && readable).then(|| ty.clone())
        })
        .collect()
}

/// `input` with its string constants in the `targets` columns cast to
/// those types, under their names.
fn cast_literals(input: &Arc<LogicalPlan>, targets: &[Option<DataType>]) -> Result<Arc<LogicalPlan>> {
    let LogicalPlan::Projection(p) = input.as_ref() else { return Ok(input.clone()) };
    let mut exprs = p.expr.clone();
    let mut changed = false;
    for (column, target) in targets.iter().enumerate() {
        let Some(ty) = target else { continue };
        if !is_string_constant(input, column) {
            continue;
        }
        let (qualifier, field) = p.schema.qualified_field(column);
        let cast = Expr::Cast(Cast::new(Box::new(unaliased(&exprs[column]).clone()), ty.clone()));
        exprs[column] = cast.alias_qualified(qualifier.cloned(), field.name());
        changed = true;
    }
    if !changed {
        return Ok(input.clone());
    }
    Ok(Arc::new(LogicalPlan::Projection(Projection::try_new(exprs, p.input.clone())?)))
}
