//! A quoted constant in arithmetic typed by the other operand, as
//! PostgreSQL types it.
//!
//! A quoted constant has no type of its own in PostgreSQL ("unknown")
//! until its context gives one: in `f1 * '-10'` with `f1 real`, the
//! constant is read as a `real`, the product is a `real`. DataFusion
//! types it as text and refuses the arithmetic (`Cannot coerce arithmetic
//! expression Float32 * Utf8`). [`UnknownLiteralPlanner`], an expression
//! planner (it sees the operands' types while the statement is planned),
//! reads such a constant beside an integer or a float operand as that
//! operand's type, with PostgreSQL's input rules and errors (22P02 for
//! text that is no number, 22003 for one out of the type's range). Other
//! operands (numeric, dates, intervals, jsonb) keep DataFusion's reading.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{Expr, ExprSchemable};
use datafusion::sql::sqlparser::ast::BinaryOperator;

use crate::error::{SqlError, code};

/// The expression planner (see the module's text).
#[derive(Debug)]
pub struct UnknownLiteralPlanner;

impl ExprPlanner for UnknownLiteralPlanner {
    fn plan_binary_op(&self, mut expr: RawBinaryExpr, schema: &DFSchema) -> Result<PlannerResult<RawBinaryExpr>> {
        use BinaryOperator as B;
        if !matches!(expr.op, B::Plus | B::Minus | B::Multiply | B::Divide | B::Modulo | B::PGExp) {
            return Ok(PlannerResult::Original(expr));
        }
        // `^` exists for floats (and numerics) only: an integer operand
        // does not type the constant.
        let floats_only = matches!(expr.op, B::PGExp);
        let text = |e: &Expr| match e {
            Expr::Literal(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)), _) => Some(s.clone()),
            _ => None,
        };
        match (text(&expr.left), text(&expr.right)) {
            (None, Some(s)) => {
                if let Some(v) = typed_like(&s, &expr.left, schema, floats_only)? {
                    expr.right = Expr::Literal(v, None);
                }
            }
            (Some(s), None) => {
                if let Some(v) = typed_like(&s, &expr.right, schema, floats_only)? {
                    expr.left = Expr::Literal(v, None);
                }
            }
            _ => {}
        }
        Ok(PlannerResult::Original(expr))
    }
}

/// `text` read as the type of `other`, when that is an integer or a float.
fn typed_like(text: &str, other: &Expr, schema: &DFSchema, floats_only: bool) -> Result<Option<ScalarValue>> {
    let Ok(ty) = other.get_type(schema) else { return Ok(None) };
    if floats_only && !matches!(ty, DataType::Float32 | DataType::Float64) {
        return Ok(None);
    }
    let external = |e: SqlError| DataFusionError::External(Box::new(e));
    let integer = |name: &str, lo: i64, hi: i64| -> Result<i64> {
        let v: i64 = text.trim().parse().map_err(|_| {
            external(SqlError::new(code::INVALID_TEXT, format!("invalid input syntax for type {name}: \"{text}\"")))
        })?;
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(external(SqlError::new(
                code::OUT_OF_RANGE,
                format!("value \"{text}\" is out of range for type {name}"),
            )))
        }
    };
    Ok(Some(match ty {
        DataType::Int16 => ScalarValue::Int16(Some(integer("smallint", i16::MIN.into(), i16::MAX.into())? as i16)),
        DataType::Int32 => ScalarValue::Int32(Some(integer("integer", i32::MIN.into(), i32::MAX.into())? as i32)),
        DataType::Int64 => ScalarValue::Int64(Some(integer("bigint", i64::MIN, i64::MAX)?)),
        DataType::Float32 => {
            ScalarValue::Float32(Some(crate::values::float_arith::parse_float(text, true).map_err(external)? as f32))
        }
        DataType::Float64 => {
            ScalarValue::Float64(Some(crate::values::float_arith::parse_float(text, false).map_err(external)?))
        }
        _ => return Ok(None),
    }))
}
