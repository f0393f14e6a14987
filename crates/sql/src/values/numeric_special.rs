//! numeric's special values: `NaN`, `Infinity` and `-Infinity`.
//!
//! Arrow's decimals have no such values, so each is a reserved integer
//! beyond every precision a decimal column can have (|v| < 10^p, and
//! 10^38 < i128::MAX, 10^76 < i256::MAX): NaN is the type's largest
//! integer, Infinity one less, -Infinity its negation. Their integer order
//! is PostgreSQL's order of numerics (-Infinity < every number < Infinity
//! < NaN, and NaN equal to itself), so storage (whose encoding preserves
//! order), indexes, comparisons, sorting, grouping, joins, `min` and `max`
//! need nothing more. Input reads them (`'NaN'`, `'Infinity'`, `'inf'`,
//! float NaN and infinities), output prints them (`text`, `pg_binary`).
//!
//! Everything else would compute with the reserved integers as if they
//! were numbers, so the analyzer rule [`NumericSpecials`] puts every
//! decimal that reaches a computation through `tessera_numeric_finite`,
//! which refuses a special value (0A000), and every cast of a decimal
//! through `tessera_numeric_cast`, which converts special values as
//! PostgreSQL does (to text, floats, other numerics) or raises its error
//! (integers). A special value is therefore shown, stored, compared and
//! cast exactly, and any arithmetic on one is refused rather than wrong.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Decimal256Type, FieldRef, i256};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

use crate::error::{SqlError, code};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    NaN,
    PosInf,
    NegInf,
}

impl Special {
    /// PostgreSQL's input spellings (any case, blanks around).
    pub fn parse(text: &str) -> Option<Special> {
        match text.trim().to_ascii_lowercase().as_str() {
            "nan" => Some(Special::NaN),
            "infinity" | "+infinity" | "inf" | "+inf" => Some(Special::PosInf),
            "-infinity" | "-inf" => Some(Special::NegInf),
            _ => None,
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            Special::NaN => "NaN",
            Special::PosInf => "Infinity",
            Special::NegInf => "-Infinity",
        }
    }

    pub fn of_f64(v: f64) -> Option<Special> {
        if v.is_nan() {
            Some(Special::NaN)
        } else if v == f64::INFINITY {
            Some(Special::PosInf)
        } else if v == f64::NEG_INFINITY {
            Some(Special::NegInf)
        } else {
            None
        }
    }

    pub fn to_f64(self) -> f64 {
        match self {
            Special::NaN => f64::NAN,
            Special::PosInf => f64::INFINITY,
            Special::NegInf => f64::NEG_INFINITY,
        }
    }

    pub fn i128(self) -> i128 {
        match self {
            Special::NaN => i128::MAX,
            Special::PosInf => i128::MAX - 1,
            Special::NegInf => -(i128::MAX - 1),
        }
    }

    pub fn i256(self) -> i256 {
        match self {
            Special::NaN => i256::MAX,
            Special::PosInf => i256::MAX.wrapping_sub(i256::ONE),
            Special::NegInf => i256::MAX.wrapping_sub(i256::ONE).wrapping_neg(),
        }
    }

    pub fn of_i128(v: i128) -> Option<Special> {
        [Special::NaN, Special::PosInf, Special::NegInf].into_iter().find(|s| s.i128() == v)
    }

    pub fn of_i256(v: i256) -> Option<Special> {
        [Special::NaN, Special::PosInf, Special::NegInf].into_iter().find(|s| s.i256() == v)
    }

    /// A special value at row `i` of an input to a numeric: text spelling
    /// one, a float that is one, or a decimal holding one.
    pub fn input(array: &dyn Array, i: usize) -> Option<Special> {
        if array.is_null(i) {
            return None;
        }
        match array.data_type() {
            DataType::Utf8 => Special::parse(array.as_string::<i32>().value(i)),
            DataType::LargeUtf8 => Special::parse(array.as_string::<i64>().value(i)),
            DataType::Utf8View => Special::parse(array.as_string_view().value(i)),
            DataType::Float32 => {
                Special::of_f64(f64::from(array.as_primitive::<datafusion::arrow::datatypes::Float32Type>().value(i)))
            }
            DataType::Float64 => {
                Special::of_f64(array.as_primitive::<datafusion::arrow::datatypes::Float64Type>().value(i))
            }
            _ => Special::at(array, i),
        }
    }

    /// The special value at row `i` of a decimal array, if it is one.
    pub fn at(array: &dyn Array, i: usize) -> Option<Special> {
        if array.is_null(i) {
            return None;
        }
        match array.data_type() {
            DataType::Decimal128(..) => Special::of_i128(array.as_primitive::<Decimal128Type>().value(i)),
            DataType::Decimal256(..) => Special::of_i256(array.as_primitive::<Decimal256Type>().value(i)),
            _ => None,
        }
    }
}

/// The error for a special value where numeric(p, s) holds only numbers
/// (PostgreSQL's, for infinities; NaN fits any numeric).
pub fn infinite_overflow(p: impl std::fmt::Display, s: i8) -> SqlError {
    SqlError::new(code::OUT_OF_RANGE, "numeric field overflow")
        .with_detail(format!("A field with precision {p}, scale {s} cannot hold an infinite value."))
}

fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..))
}

fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// Registers `tessera_numeric_finite` and `tessera_numeric_cast`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(finite_udf().as_ref().clone());
    ctx.register_udf(cast_udf().as_ref().clone());
}

fn finite_udf() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(Finite { signature: Signature::any(1, Volatility::Immutable) }))
}

fn cast_udf() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(SpecialCast { signature: Signature::any(2, Volatility::Immutable) }))
}

/// `tessera_numeric_finite(x)`: x, refusing NaN and infinities.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Finite {
    signature: Signature,
}

impl ScalarUDFImpl for Finite {
    fn name(&self) -> &str {
        "tessera_numeric_finite"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(args.arg_fields[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let values = match &args.args[0] {
            ColumnarValue::Scalar(s) => s.to_array()?,
            ColumnarValue::Array(a) => a.clone(),
        };
        if let Some(s) = (0..values.len()).find_map(|i| Special::at(&values, i)) {
            return Err(external(SqlError::unsupported(format!(
                "computing with numeric {} (only comparing, sorting, storing and casting it)",
                s.text()
            ))));
        }
        Ok(args.args[0].clone())
    }
}

/// `tessera_numeric_cast(x, CAST(NULL AS t))`: `CAST(x AS t)` of a
/// decimal, special values included.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SpecialCast {
    signature: Signature,
}

impl ScalarUDFImpl for SpecialCast {
    fn name(&self) -> &str {
        "tessera_numeric_cast"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[1].clone())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let nullable = args.arg_fields[0].is_nullable();
        Ok(Arc::new(args.arg_fields[1].as_ref().clone().with_nullable(nullable).with_name(self.name())))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let target = args.return_field.data_type().clone();
        let out = cast_with_specials(&values, &target).map_err(external)?;
        crate::values::udf_values::columnar(out, scalar)
    }
}

/// Casts decimals to `target` as PostgreSQL casts numerics, special
/// values included; the other rows as Arrow casts them.
pub fn cast_with_specials(values: &ArrayRef, target: &DataType) -> std::result::Result<ArrayRef, SqlError> {
    let specials: Vec<Option<Special>> = (0..values.len()).map(|i| Special::input(values, i)).collect();
    let options = datafusion::arrow::compute::CastOptions { safe: false, ..Default::default() };
    if specials.iter().all(Option::is_none) {
        return Ok(datafusion::arrow::compute::cast_with_options(values, target, &options)?);
    }
    // The numbers cast as usual (specials as NULL there), then patched.
    let mask: datafusion::arrow::array::BooleanArray = specials.iter().map(|s| Some(s.is_none())).collect();
    let numbers = datafusion::arrow::compute::nullif(values, &datafusion::arrow::compute::not(&mask)?)?;
    let cast = datafusion::arrow::compute::cast_with_options(&numbers, target, &options)?;
    let patch = |i: usize, s: Special| -> std::result::Result<ScalarValue, SqlError> {
        Ok(match target {
            DataType::Utf8 => ScalarValue::Utf8(Some(s.text().into())),
            DataType::LargeUtf8 => ScalarValue::LargeUtf8(Some(s.text().into())),
            DataType::Utf8View => ScalarValue::Utf8View(Some(s.text().into())),
            DataType::Float64 => ScalarValue::Float64(Some(s.to_f64())),
            DataType::Float32 => ScalarValue::Float32(Some(s.to_f64() as f32)),
            DataType::Decimal128(p, sc) => {
                if s != Special::NaN {
                    return Err(infinite_overflow(*p, *sc));
                }
                ScalarValue::Decimal128(Some(s.i128()), *p, *sc)
            }
            DataType::Decimal256(p, sc) => {
                if s != Special::NaN && !crate::values::numeric::is_unconstrained(target) {
                    return Err(infinite_overflow(*p, *sc));
                }
                ScalarValue::Decimal256(Some(s.i256()), *p, *sc)
            }
            t if t.is_integer() => {
                // PostgreSQL's SQLSTATE for it is 0A000.
                let what = if s == Special::NaN { "NaN" } else { "infinity" };
                let name = crate::values::types::SqlType::from_arrow(t).map_or("integer".into(), |t| t.name());
                return Err(SqlError::new(code::FEATURE_NOT_SUPPORTED, format!("cannot convert {what} to {name}")));
            }
            other => {
                let _ = i;
                return Err(SqlError::unsupported(format!("casting numeric {} to {other}", s.text())));
            }
        })
    };
    let mut cells: Vec<ScalarValue> = Vec::with_capacity(values.len());
    for (i, s) in specials.iter().enumerate() {
        cells.push(match s {
            Some(s) => patch(i, *s)?,
            None => ScalarValue::try_from_array(&cast, i)?,
        });
    }
    Ok(ScalarValue::iter_to_array(cells)?)
}

/// The analyzer rule that refuses [`FLOAT_ONLY`] functions of numerics
/// (`numeric_var.rs` computes the variances exactly); it runs before type coercion,
/// where an argument's type is still the one written (`x::float8` is a
/// float, a numeric column is a numeric).
#[derive(Debug)]
pub struct FloatOnlyOfNumeric;

impl datafusion::optimizer::AnalyzerRule for FloatOnlyOfNumeric {
    fn name(&self) -> &str {
        "tessera_float_only_of_numeric"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &datafusion::common::config::ConfigOptions) -> Result<LogicalPlan> {
        crate::values::exact_casts::rewrite_expressions(plan, |e, schema| {
            let (name, args) = match &e {
                Expr::ScalarFunction(f) if FLOAT_ONLY.contains(&f.func.name()) => (f.func.name(), &f.args),
                _ => return Ok(Transformed::no(e)),
            };
            if args.iter().any(|a| decimal(a, schema).unwrap_or(false)) {
                return Err(external(SqlError::unsupported(format!("{name}() of a numeric")).with_hint(
                    "PostgreSQL computes it in numeric, Tessera only in double precision: cast the argument to float8.",
                )));
            }
            Ok(Transformed::no(e))
        })
    }
}

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct NumericSpecials;

impl datafusion::optimizer::AnalyzerRule for NumericSpecials {
    fn name(&self) -> &str {
        "tessera_numeric_specials"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &datafusion::common::config::ConfigOptions) -> Result<LogicalPlan> {
        crate::values::exact_casts::rewrite_expressions(plan, guard)
    }
}

/// Functions that only pass values along or compare them (and this
/// module's, and the numeric conversions that read special values).
const PASSING: &[&str] = &[
    "coalesce",
    "nullif",
    "greatest",
    "least",
    "pg_typeof",
    "tessera_cast_kept",
    "tessera_numeric_finite",
    "tessera_numeric_cast",
    "tessera_to_numeric",
    "tessera_numeric_default",
    "tessera_numeric_as",
    "tessera_to_text",
    "tessera_to_int2",
    "tessera_to_int4",
    "tessera_to_int8",
    "tessera_any",
    "make_array",
    "array_agg",
    "count",
    "min",
    "max",
    "first_value",
    "last_value",
    "lead",
    "lag",
    "nth_value",
    // Reads special values itself (`small_fns.rs`).
    "min_scale",
    "trim_scale",
];

/// Functions PostgreSQL computes in numeric for a numeric argument, and
/// DataFusion in double precision (15 significant digits, where
/// PostgreSQL gives at least 16 and as many as the argument's scale): a
/// numeric argument is refused rather than answered approximately.
const FLOAT_ONLY: &[&str] = &["cbrt", "ln", "log", "log10", "log2", "exp", "power", "pow"];

fn decimal(e: &Expr, schema: &DFSchema) -> Result<bool> {
    Ok(is_decimal(&e.get_type(schema)?))
}

fn finite(e: Expr) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(finite_udf(), vec![e]))
}

fn guard_all(args: &mut [Expr], schema: &DFSchema) -> Result<bool> {
    let mut changed = false;
    for a in args.iter_mut() {
        if decimal(a, schema)? && !is_guarded(a) {
            *a = finite(a.clone());
            changed = true;
        }
    }
    Ok(changed)
}

/// Whether `e` cannot hold a special value: it is guarded already, or
/// computed by arithmetic on guarded inputs (a computation never makes
/// one: decimal overflow is an error).
fn is_guarded(e: &Expr) -> bool {
    use datafusion::logical_expr::Operator;
    match e {
        // Not other functions: some pass their argument along.
        Expr::ScalarFunction(f) => matches!(f.func.name(), "tessera_numeric_finite" | "tessera_numeric_cast"),
        Expr::BinaryExpr(b) => {
            matches!(b.op, Operator::Plus | Operator::Minus | Operator::Multiply | Operator::Divide | Operator::Modulo)
        }
        Expr::Negative(_) => true,
        _ => false,
    }
}

/// A cast between decimals that keeps the representation (the same Arrow
/// width and scale: only the precision changes), so special values stay
/// what they are; such a cast stays a cast (filters on it still reach
/// indexes).
fn keeps_specials(from: &DataType, to: &DataType) -> bool {
    matches!(
        (from, to),
        (DataType::Decimal128(_, a), DataType::Decimal128(_, b)) | (DataType::Decimal256(_, a), DataType::Decimal256(_, b))
            if a == b
    )
}

fn guard(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    use datafusion::logical_expr::Operator;
    match e {
        Expr::BinaryExpr(mut b)
            if matches!(
                b.op,
                Operator::Plus | Operator::Minus | Operator::Multiply | Operator::Divide | Operator::Modulo
            ) =>
        {
            let mut sides = [*b.left, *b.right];
            let changed = guard_all(&mut sides, schema)?;
            let [l, r] = sides;
            (b.left, b.right) = (Box::new(l), Box::new(r));
            Ok(Transformed::new_transformed(Expr::BinaryExpr(b), changed))
        }
        Expr::Negative(inner) => {
            let mut one = [*inner];
            let changed = guard_all(&mut one, schema)?;
            let [x] = one;
            Ok(Transformed::new_transformed(Expr::Negative(Box::new(x)), changed))
        }
        // Text read as a numeric may spell a special value.
        Expr::Cast(c)
            if is_decimal(c.field.data_type())
                && matches!(c.expr.get_type(schema)?, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) =>
        {
            let target = Expr::Literal(ScalarValue::try_from(c.field.data_type())?, None);
            Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(cast_udf(), vec![*c.expr, target]))))
        }
        Expr::Cast(c)
            if decimal(&c.expr, schema)?
                && !is_guarded(&c.expr)
                && !keeps_specials(&c.expr.get_type(schema)?, c.field.data_type()) =>
        {
            let target = Expr::Literal(ScalarValue::try_from(c.field.data_type())?, None);
            let f = Expr::ScalarFunction(ScalarFunction::new_udf(cast_udf(), vec![*c.expr, target]));
            Ok(Transformed::yes(f))
        }
        Expr::TryCast(c) if decimal(&c.expr, schema)? && !is_guarded(&c.expr) => {
            let mut one = [*c.expr];
            guard_all(&mut one, schema)?;
            let [x] = one;
            Ok(Transformed::yes(Expr::TryCast(datafusion::logical_expr::TryCast::new_from_field(Box::new(x), c.field))))
        }
        Expr::ScalarFunction(mut f) if !PASSING.contains(&f.func.name()) => {
            let changed = guard_all(&mut f.args, schema)?;
            Ok(Transformed::new_transformed(Expr::ScalarFunction(f), changed))
        }
        Expr::AggregateFunction(mut a) if !PASSING.contains(&a.func.name()) => {
            let changed = guard_all(&mut a.params.args, schema)?;
            Ok(Transformed::new_transformed(Expr::AggregateFunction(a), changed))
        }
        Expr::WindowFunction(mut w) if !PASSING.contains(&w.fun.name()) => {
            let changed = guard_all(&mut w.params.args, schema)?;
            Ok(Transformed::new_transformed(Expr::WindowFunction(w), changed))
        }
        other => Ok(Transformed::no(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Decimal128Array;

    #[test]
    fn specials_order_as_postgres_orders_them() {
        assert!(Special::NegInf.i128() < -(10i128.pow(38)));
        assert!(Special::PosInf.i128() > 10i128.pow(38) && Special::PosInf.i128() < Special::NaN.i128());
        assert!(Special::NegInf.i256() < Special::PosInf.i256() && Special::PosInf.i256() < Special::NaN.i256());
        for s in [Special::NaN, Special::PosInf, Special::NegInf] {
            assert_eq!(Special::of_i128(s.i128()), Some(s));
            assert_eq!(Special::of_i256(s.i256()), Some(s));
            assert_eq!(Special::parse(s.text()), Some(s));
        }
        assert_eq!(Special::parse(" -inf "), Some(Special::NegInf));
        assert_eq!(Special::parse("nan1"), None);
    }

    #[test]
    fn casts_convert_specials() {
        let a: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(150), Some(Special::NaN.i128()), None, Some(Special::NegInf.i128())])
                .with_precision_and_scale(10, 2)
                .unwrap(),
        );
        let text = cast_with_specials(&a, &DataType::Utf8).unwrap();
        let text: Vec<Option<&str>> = text.as_string::<i32>().iter().collect();
        assert_eq!(text, vec![Some("1.50"), Some("NaN"), None, Some("-Infinity")]);
        let floats = cast_with_specials(&a, &DataType::Float64).unwrap();
        assert!(floats.as_primitive::<datafusion::arrow::datatypes::Float64Type>().value(1).is_nan());
        let e = cast_with_specials(&a, &DataType::Int32).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (code::FEATURE_NOT_SUPPORTED, "cannot convert NaN to integer"));
        assert_eq!(cast_with_specials(&a, &DataType::Decimal128(12, 2)).unwrap_err().code, code::OUT_OF_RANGE);
    }
}
