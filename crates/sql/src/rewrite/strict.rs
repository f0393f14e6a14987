//! PostgreSQL's errors where DataFusion would return a value.
//!
//! A wrong value is worse than an error, so where DataFusion computes
//! something PostgreSQL refuses, Tessera refuses too, with PostgreSQL's
//! SQLSTATE and message:
//! - **Constant integer arithmetic** (`'9223372036854775800'::int8 * 2`,
//!   and a parameter's arithmetic once its value is bound): DataFusion's
//!   simplifier folds constants with wrapping kernels (the checked ones,
//!   `overflow::CheckedArithmetic`, only reach the physical plan). The
//!   analyzer rule [`CheckedConstants`] runs before the simplifier and puts
//!   such arithmetic in `tessera_checked_int`, which folds with checked
//!   kernels: 22003, "bigint out of range".
//! - **Logarithms and square roots** of zero or negative numbers are
//!   -Infinity or NaN in DataFusion; `ln`, `log`, `log10` and `sqrt` are
//!   replaced by guards around DataFusion's own that raise 2201E / 2201F.
//! - **Float input out of range** (`'10e400'::float8` is Infinity in
//!   DataFusion, `'1e-400'::float8` zero): a string literal cast to a float
//!   goes through `tessera_text_to_float8`/`…float4`, PostgreSQL's input
//!   rules (22003; `Infinity`, `-Infinity`, `NaN` accepted).
//!
//! And rewrites of meaning:
//! - **char(n)** values are stored without their padding (`text::
//!   enforce_text_type`) and padded on output; a string constant compared
//!   with a char(n) column loses its trailing blanks too
//!   ([`ComparedConstants`]), as PostgreSQL's bpchar comparisons ignore
//!   them.
//! - **Timestamps** are read in PostgreSQL's ISO forms (no seconds, an
//!   offset of hours alone, `T` or a blank; a `timestamp` ignores an
//!   offset): literals cast to a timestamp type, and constants compared
//!   with a timestamp column (`canonical_timestamp`). An explicit cast to
//!   `char(n)` or `varchar(n)` cuts the value to n characters.
//! - `SIMILAR TO` with a literal pattern becomes the regular expression
//!   PostgreSQL makes of it (`%` any string, `_` any character, the whole
//!   string matched; DataFusion reads the pattern as a regular expression
//!   as it stands). A pattern that is not a literal is refused (0A000)
//!   rather than read wrongly.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, Float32Array, Float64Array, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{DataFusionError, ExprSchema, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use crate::error::{SqlError, code};

fn refuse(code: &'static str, message: impl Into<String>) -> DataFusionError {
    DataFusionError::External(Box::new(SqlError::new(code, message.into())))
}

/// Registers the functions of this module (overriding DataFusion's `ln`,
/// `log`, `log10`, `sqrt`, `exp`, `acos`, `asin`, `acosh` and `atanh`).
pub fn register(ctx: &SessionContext) {
    use datafusion::functions::math;
    for (inner, guard) in [
        (math::ln(), Guard::Log),
        (math::log(), Guard::Log),
        (math::log10(), Guard::Log),
        (math::sqrt(), Guard::Sqrt),
        (math::exp(), Guard::Exp),
        (math::acos(), Guard::UnitRange),
        (math::asin(), Guard::UnitRange),
        (math::acosh(), Guard::AtLeastOne),
        (math::atanh(), Guard::UnitRange),
    ] {
        let signature = match guard {
            // A numeric's square root is a numeric (`numeric_sqrt`).
            Guard::Sqrt => Signature::user_defined(Volatility::Immutable),
            Guard::Log | Guard::Exp | Guard::UnitRange | Guard::AtLeastOne => inner.signature().clone(),
        };
        ctx.register_udf(ScalarUDF::new_from_impl(Guarded { inner, guard, signature }));
    }
    for name in ["tessera_text_to_float8", "tessera_text_to_float4"] {
        ctx.register_udf(ScalarUDF::new_from_impl(FloatInput {
            name,
            signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
        }));
    }
    ctx.register_udf(ScalarUDF::new_from_impl(CheckedInt { signature: Signature::any(3, Volatility::Immutable) }));
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Guard {
    Log,
    Sqrt,
    /// `exp`: its result out of double precision's range is 22003, as
    /// PostgreSQL's `dexp` raises (checked on the result).
    Exp,
    /// `acos`, `asin`, `atanh`: an argument outside [-1, 1] is 22003
    /// ("input is out of range"; DataFusion answers NaN).
    UnitRange,
    /// `acosh`: an argument below 1 is 22003.
    AtLeastOne,
}

/// One of DataFusion's math functions, refusing the arguments PostgreSQL
/// refuses.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Guarded {
    inner: Arc<ScalarUDF>,
    guard: Guard,
    signature: Signature,
}

fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..))
}

impl ScalarUDFImpl for Guarded {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args {
            [t] if self.guard == Guard::Sqrt && is_decimal(t) => Ok(crate::values::numeric::UNCONSTRAINED),
            [_] if self.guard == Guard::Sqrt => Ok(DataType::Float64),
            _ => self.inner.return_type(args),
        }
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        if self.guard != Guard::Sqrt {
            return self.inner.coerce_types(args);
        }
        match args {
            [t] if is_decimal(t) => Ok(vec![t.clone()]),
            [t] if t.is_numeric() || t.is_null() => Ok(vec![DataType::Float64]),
            [t] => Err(refuse(code::UNDEFINED_FUNCTION, format!("function sqrt({t}) does not exist"))),
            _ => Err(refuse(code::UNDEFINED_FUNCTION, "function sqrt takes one argument")),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if self.guard == Guard::Sqrt && is_decimal(&args.args[0].data_type()) {
            return numeric_sqrt(&args);
        }
        for arg in &args.args {
            let values = arg.to_array(1)?;
            if !values.data_type().is_numeric() {
                continue;
            }
            let values = datafusion::arrow::compute::cast(&values, &DataType::Float64)?;
            let values = values.as_any().downcast_ref::<Float64Array>().expect("a float array");
            for v in values.iter().flatten() {
                match self.guard {
                    Guard::Log if v == 0.0 => return Err(refuse("2201E", "cannot take logarithm of zero")),
                    Guard::Log if v < 0.0 => return Err(refuse("2201E", "cannot take logarithm of a negative number")),
                    Guard::Sqrt if v < 0.0 => {
                        return Err(refuse("2201F", "cannot take square root of a negative number"));
                    }
                    Guard::UnitRange if !v.is_nan() && !(-1.0..=1.0).contains(&v) => {
                        return Err(refuse(code::OUT_OF_RANGE, "input is out of range"));
                    }
                    Guard::AtLeastOne if v < 1.0 => return Err(refuse(code::OUT_OF_RANGE, "input is out of range")),
                    _ => {}
                }
            }
        }
        if self.guard == Guard::Exp {
            let input = args.args[0].to_array(1)?;
            let out = self.inner.invoke_with_args(args)?;
            check_exp(&input, &out)?;
            return Ok(out);
        }
        self.inner.invoke_with_args(args)
    }
}

/// PostgreSQL's `dexp` checks: a finite argument whose exponential is
/// infinite overflowed, one whose exponential is zero underflowed.
fn check_exp(input: &datafusion::arrow::array::ArrayRef, out: &ColumnarValue) -> Result<()> {
    let out = out.to_array(input.len())?;
    let (Some(x), Some(y)) = (
        datafusion::arrow::compute::cast(input, &DataType::Float64)?.as_any().downcast_ref::<Float64Array>().cloned(),
        datafusion::arrow::compute::cast(&out, &DataType::Float64)?.as_any().downcast_ref::<Float64Array>().cloned(),
    ) else {
        return Ok(());
    };
    for (x, y) in x.iter().zip(y.iter()) {
        if let (Some(x), Some(y)) = (x, y)
            && x.is_finite()
        {
            if y.is_infinite() {
                return Err(refuse(code::OUT_OF_RANGE, "value out of range: overflow"));
            }
            if y == 0.0 {
                return Err(refuse(code::OUT_OF_RANGE, "value out of range: underflow"));
            }
        }
    }
    Ok(())
}

/// `sqrt` of a numeric, as PostgreSQL's `numeric_sqrt`: at the places
/// [`crate::values::numeric::sqrt_scale`] picks for each value, rounded.
fn numeric_sqrt(args: &ScalarFunctionArgs) -> Result<ColumnarValue> {
    use datafusion::arrow::array::{AsArray, Decimal256Array};
    use datafusion::arrow::datatypes::{Decimal256Type, i256};
    let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
    let values = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
    let input = values.data_type().clone();
    let wide = datafusion::arrow::compute::cast(&values, &DataType::Decimal256(76, decimal_scale(&input)))?;
    let scale = decimal_scale(&input);
    let mut out = Vec::with_capacity(wide.len());
    for v in wide.as_primitive::<Decimal256Type>().iter() {
        let Some(v) = v else {
            out.push(None);
            continue;
        };
        if v < i256::ZERO {
            return Err(refuse("2201F", "cannot take square root of a negative number"));
        }
        let dscale = if crate::values::numeric::is_unconstrained(&input) {
            crate::values::numeric::trimmed_scale(v, scale)
        } else {
            scale
        };
        let rscale = crate::values::numeric::sqrt_scale(v, scale, dscale);
        let root = (rscale <= i32::from(crate::values::numeric::UNCONSTRAINED_SCALE))
            .then(|| crate::values::numeric::sqrt(v, scale, rscale))
            .flatten()
            .and_then(|r| crate::values::numeric::rescale(r, rscale as i8, crate::values::numeric::UNCONSTRAINED_SCALE))
            .ok_or_else(|| {
                refuse(code::FEATURE_NOT_SUPPORTED, "the square root needs more places than Tessera's numeric holds")
            })?;
        out.push(Some(root));
    }
    let (p, s) = (crate::values::numeric::MAX_DIGITS, crate::values::numeric::UNCONSTRAINED_SCALE);
    let out: datafusion::arrow::array::ArrayRef = Arc::new(Decimal256Array::from(out).with_precision_and_scale(p, s)?);
    crate::values::udf_values::columnar(out, scalar)
}

fn decimal_scale(t: &DataType) -> i8 {
    match t {
        DataType::Decimal128(_, s) | DataType::Decimal256(_, s) => *s,
        _ => 0,
    }
}

/// Text to `float8` or `float4` as PostgreSQL reads it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct FloatInput {
    name: &'static str,
    signature: Signature,
}

impl FloatInput {
    fn single(&self) -> bool {
        self.name.ends_with('4')
    }
}

impl ScalarUDFImpl for FloatInput {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(if self.single() { DataType::Float32 } else { DataType::Float64 })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let texts = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let texts = texts.as_any().downcast_ref::<StringArray>().expect("text, as the signature says");
        let mut values = Vec::with_capacity(texts.len());
        for t in texts.iter() {
            values.push(match t {
                Some(t) => Some(
                    crate::values::float_arith::parse_float(t, self.single())
                        .map_err(|e| DataFusionError::External(Box::new(e)))?,
                ),
                None => None,
            });
        }
        let out: ArrayRef = if self.single() {
            Arc::new(values.into_iter().map(|v| v.map(|v| v as f32)).collect::<Float32Array>())
        } else {
            Arc::new(values.into_iter().collect::<Float64Array>())
        };
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(out)
        })
    }
}

/// `tessera_checked_int(op, a, b)`: integer `a op b` that raises 22003
/// where the result does not fit (see [`CheckedConstants`]).
#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedInt {
    signature: Signature,
}

impl ScalarUDFImpl for CheckedInt {
    fn name(&self) -> &str {
        "tessera_checked_int"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[1].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::compute::kernels::numeric;
        let ColumnarValue::Scalar(ScalarValue::Utf8(Some(op))) = &args.args[0] else {
            return Err(DataFusionError::Internal("tessera_checked_int takes its operator as text".into()));
        };
        let n = args.number_rows.max(1);
        let (a, b) = (args.args[1].to_array(n)?, args.args[2].to_array(n)?);
        let b = datafusion::arrow::compute::cast(&b, a.data_type())?;
        let result = match op.as_str() {
            "+" => numeric::add(&a, &b),
            "-" => numeric::sub(&a, &b),
            _ => numeric::mul(&a, &b),
        };
        let out = result.map_err(|_| {
            let name = match a.data_type() {
                DataType::Int16 => "smallint",
                DataType::Int32 => "integer",
                _ => "bigint",
            };
            refuse(code::OUT_OF_RANGE, format!("{name} out of range"))
        })?;
        let all_scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        Ok(if all_scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(out)
        })
    }
}

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct CheckedConstants;

impl AnalyzerRule for CheckedConstants {
    fn name(&self) -> &str {
        "tessera_checked_constants"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            let names = NamePreserver::new(&node);
            node.map_expressions(|e| {
                let saved = names.save(&e);
                let new = e.transform_up(check_constant)?;
                Ok(if new.transformed { Transformed::yes(saved.restore(new.data)) } else { new })
            })
        })
        .data()
    }
}

/// Puts `a op b` of two integer constants in `tessera_checked_int`.
fn check_constant(e: Expr) -> Result<Transformed<Expr>> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &e else { return Ok(Transformed::no(e)) };
    let symbol = match op {
        Operator::Plus => "+",
        Operator::Minus => "-",
        Operator::Multiply => "*",
        _ => return Ok(Transformed::no(e)),
    };
    if !(constant_int(left) && constant_int(right)) {
        return Ok(Transformed::no(e));
    }
    let udf = Arc::new(ScalarUDF::new_from_impl(CheckedInt { signature: Signature::any(3, Volatility::Immutable) }));
    let args = vec![Expr::Literal(ScalarValue::Utf8(Some(symbol.into())), None), (**left).clone(), (**right).clone()];
    Ok(Transformed::yes(Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction::new_udf(udf, args))))
}

/// Whether `e` is made of constants only and is of an integer type.
fn constant_int(e: &Expr) -> bool {
    let integer = |t: &DataType| matches!(t, DataType::Int16 | DataType::Int32 | DataType::Int64);
    match e {
        Expr::Literal(v, _) => integer(&v.data_type()),
        Expr::Cast(c) => integer(c.field.data_type()) && constant(&c.expr),
        Expr::TryCast(_) => false,
        Expr::ScalarFunction(f) if f.func.name() == "tessera_checked_int" => true,
        _ => false,
    }
}

fn constant(e: &Expr) -> bool {
    match e {
        Expr::Literal(..) | Expr::Placeholder(_) => true,
        Expr::Cast(c) => constant(&c.expr),
        _ => false,
    }
}

/// The analyzer rule for constants compared with char(n) and timestamp
/// columns (see the module's text).
pub struct ComparedConstants {
    /// The session's time zone, in which a timestamptz constant without an
    /// offset is read.
    pub zone: crate::values::tz::ZoneSource,
}

impl std::fmt::Debug for ComparedConstants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ComparedConstants")
    }
}

impl AnalyzerRule for ComparedConstants {
    fn name(&self) -> &str {
        "tessera_compared_constants"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let zone = (self.zone)();
        crate::values::exact_casts::rewrite_filters(plan, |e, schema| unpad_constants(e, schema, zone))
    }
}

/// A timestamp's text as DataFusion should read it (see `tz`).
fn canonical(text: &str, zoned: bool, zone: crate::values::tz::Zone) -> Option<String> {
    if zoned {
        crate::values::tz::canonical_timestamptz(text, zone)
    } else {
        crate::values::tz::special_timestamp(text, zone, false)
            .or_else(|| crate::values::tz::canonical_timestamp(text, false))
    }
}

/// What a string constant compared with a column becomes.
#[derive(Clone)]
enum Compared {
    /// An array column: the constant is read as PostgreSQL's array text.
    Array(DataType),
    /// A char(n) column: the constant loses its trailing blanks.
    Char,
    /// A date column: the constant is read in PostgreSQL's date forms.
    Date,
    /// A timestamp column (with a time zone or not): the constant is read
    /// in PostgreSQL's forms (see [`canonical_timestamp`]).
    Timestamp(bool),
}

/// In a comparison or IN list of a char(n) or timestamp column, its
/// string constants as PostgreSQL would read them (see [`Compared`]).
fn unpad_constants(
    e: Expr,
    schema: &datafusion::common::DFSchema,
    zone: crate::values::tz::Zone,
) -> Result<Transformed<Expr>> {
    let kind = |e: &Expr| match e {
        Expr::Column(c) => schema.field_from_column(c).ok().and_then(|f| match f.data_type() {
            DataType::Timestamp(_, tz) => Some(Compared::Timestamp(tz.is_some())),
            t @ DataType::List(_) => Some(Compared::Array(t.clone())),
            DataType::Date32 => Some(Compared::Date),
            _ if f.metadata().get(crate::values::types::PG_TYPE_KEY).is_some_and(|t| t.starts_with("character(")) => {
                Some(Compared::Char)
            }
            _ => None,
        }),
        Expr::Literal(..) => None,
        // Any other expression of a timestamp type (`z AT TIME ZONE 'UTC'`).
        other => match datafusion::logical_expr::ExprSchemable::get_type(other, schema) {
            Ok(DataType::Timestamp(_, tz)) => Some(Compared::Timestamp(tz.is_some())),
            _ => None,
        },
    };
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if matches!(
                op,
                Operator::Eq | Operator::NotEq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
            ) && (kind(&left).is_some() || kind(&right).is_some()) =>
        {
            let k = kind(&left).or(kind(&right)).expect("checked");
            let (l, r) = (unpad(*left, &k, zone), unpad(*right, &k, zone));
            let changed = l.transformed || r.transformed;
            let e = Expr::BinaryExpr(BinaryExpr { left: Box::new(l.data), op, right: Box::new(r.data) });
            Ok(if changed { Transformed::yes(e) } else { Transformed::no(e) })
        }
        Expr::InList(mut list) if kind(&list.expr).is_some() => {
            let k = kind(&list.expr).expect("checked");
            let mut changed = false;
            list.list = (list.list.into_iter())
                .map(|e| {
                    let t = unpad(e, &k, zone);
                    changed |= t.transformed;
                    t.data
                })
                .collect();
            let e = Expr::InList(list);
            Ok(if changed { Transformed::yes(e) } else { Transformed::no(e) })
        }
        e => Ok(Transformed::no(e)),
    }
}

/// A string constant as a comparison with a `k` column reads it.
fn unpad(e: Expr, k: &Compared, zone: crate::values::tz::Zone) -> Transformed<Expr> {
    match e {
        Expr::Literal(ScalarValue::Utf8(Some(s)), meta) if matches!(k, Compared::Array(_)) => {
            let Compared::Array(t) = k else { unreachable!("matched") };
            match crate::values::array_types::scalar_from_text(&s, t, zone) {
                Ok(list) => Transformed::yes(Expr::Literal(list, meta)),
                // Left as it is, the comparison reports the mismatch.
                Err(_) => Transformed::no(Expr::Literal(ScalarValue::Utf8(Some(s)), meta)),
            }
        }
        Expr::Literal(ScalarValue::Utf8(Some(s)), meta) => {
            let fixed = match *k {
                Compared::Char if s.ends_with(' ') => Some(s.trim_end_matches(' ').to_string()),
                Compared::Timestamp(zoned) => canonical(&s, zoned, zone).filter(|c| *c != s),
                Compared::Date => crate::values::dates::canonical_date(&s),
                _ => None,
            };
            match fixed {
                Some(f) => Transformed::yes(Expr::Literal(ScalarValue::Utf8(Some(f)), meta)),
                None => Transformed::no(Expr::Literal(ScalarValue::Utf8(Some(s)), meta)),
            }
        }
        Expr::Cast(mut c) if matches!(c.expr.as_ref(), Expr::Literal(..)) => {
            let inner = unpad(*c.expr, k, zone);
            let changed = inner.transformed;
            c.expr = Box::new(inner.data);
            if changed { Transformed::yes(Expr::Cast(c)) } else { Transformed::no(Expr::Cast(c)) }
        }
        e => Transformed::no(e),
    }
}

/// Tessera's rewrites of a statement's expressions before planning: SIMILAR
/// TO into a regular expression, a string literal cast to a float into
/// PostgreSQL's float input.
/// A numeric constant with an exponent cast to a float (`1e300::float8`)
/// is read as the float's text, with its range checked: the value
/// PostgreSQL's numeric-to-float conversion gives, where the decimal the
/// constant would first become cannot hold such exponents.
fn float_constant(e: &mut datafusion::sql::sqlparser::ast::Expr) {
    use datafusion::sql::sqlparser::ast::{Expr as Ast, Value};
    let Ast::Cast { expr, data_type, .. } = e else { return };
    let t = data_type.to_string().to_lowercase();
    let t = t.trim_start_matches("pg_catalog.");
    if !(matches!(t, "double precision" | "double" | "real") || t.starts_with("float")) {
        return;
    }
    if let Ast::Value(v) = expr.as_mut()
        && let Value::Number(n, _) = &v.value
        && n.contains(['e', 'E'])
    {
        v.value = Value::SingleQuotedString(n.clone());
    }
}

pub fn rewrite_statement(
    stmt: &mut datafusion::sql::sqlparser::ast::Statement,
    style: crate::values::text::TextStyle,
) -> std::result::Result<(), SqlError> {
    let zone = style.zone;
    let sql_standard_intervals = style.interval == crate::values::interval_out::IntervalStyle::SqlStandard;
    use datafusion::sql::sqlparser::ast::{Expr as Ast, Value, visit_expressions_mut};
    crate::rewrite::query_checks::check(stmt)?;
    crate::values::regexps::rewrite_from(stmt);
    crate::rewrite::windows::inline_named_windows(stmt);
    keep_subquery_order(stmt);
    let flow = visit_expressions_mut(stmt, |e| {
        if let Err(err) = crate::values::patterns::rewrite_similar_to(e)
            .and_then(|()| crate::values::patterns::rewrite_like_escape(e))
            .and_then(|()| crate::values::patterns::rewrite_similar_substring(e))
        {
            return std::ops::ControlFlow::Break(err);
        }
        float_constant(e);
        // `mod(a, b)`, PostgreSQL's name for `a % b`.
        if let Ast::Function(f) = e
            && f.name.to_string().eq_ignore_ascii_case("mod")
            && let datafusion::sql::sqlparser::ast::FunctionArguments::List(list) = &f.args
            && let [a, b] = list.args.as_slice()
            && let Ok(rem) = crate::parser::parse_expr(&format!("(({a}) % ({b}))"))
        {
            *e = rem;
        }
        // `@ x`, PostgreSQL's prefix absolute value.
        if let Ast::UnaryOp { op: datafusion::sql::sqlparser::ast::UnaryOperator::PGAbs, expr } = e
            && let Ok(abs) = crate::parser::parse_expr(&format!("abs({expr})"))
        {
            *e = abs;
        }
        crate::values::zones::rewrite(e);
        if let Err(err) = crate::values::intervals::rewrite(e, sql_standard_intervals) {
            return std::ops::ControlFlow::Break(err);
        }
        crate::values::array_fns::rewrite_any(e);
        crate::values::json_delete::rewrite_names(e);
        crate::values::json::rewrite(e);
        crate::values::json_sets::rewrite(e);
        crate::values::regexps::rewrite(e);
        crate::values::regexps::dot_matches_newline(e);
        crate::values::datetime_fns::rewrite(e);
        crate::values::date_fields::rewrite(e);
        // An explicit cast to char(n) or varchar(n) cuts the value to n
        // characters (an assignment refuses a longer one instead); char(n)
        // is `bpchar`'s value.
        if let Ast::Cast { expr, data_type, .. } = e
            && let Some(n) = length_limit(&data_type.to_string())
        {
            if is_bpchar(&data_type.to_string()) {
                if let Ok(cast) = crate::parser::parse_expr(&format!("tessera_bpchar(CAST({expr} AS text), {n})")) {
                    *e = cast;
                }
            } else if let Ok(cut) = crate::parser::parse_expr(&format!("substr(CAST({expr} AS text), 1, {n})")) {
                **expr = cut;
            }
        }
        // Timestamps as PostgreSQL reads them: without seconds, with an
        // offset of hours alone; a `timestamp` ignores an offset.
        if let Ast::Cast { expr, data_type, .. } = e
            && let Ast::Value(v) = expr.as_mut()
            && let Value::SingleQuotedString(text) = &mut v.value
            && let Some(zoned) = timestamp_type(&data_type.to_string())
            && let Some(canonical) = canonical(text, zoned, zone)
        {
            *text = canonical;
        }
        // A date's fields out of range (`'2/30/2024'::date`): 22008.
        let date_text = match e {
            Ast::Cast { expr, data_type, .. } if data_type.to_string().eq_ignore_ascii_case("date") => {
                match expr.as_ref() {
                    Ast::Value(v) => match &v.value {
                        Value::SingleQuotedString(t) => Some(t.clone()),
                        _ => None,
                    },
                    _ => None,
                }
            }
            Ast::TypedString(ts) if ts.data_type.to_string().eq_ignore_ascii_case("date") => match &ts.value.value {
                Value::SingleQuotedString(t) => Some(t.clone()),
                _ => None,
            },
            _ => None,
        };
        if let Some(t) = date_text.as_deref()
            && crate::values::dates::out_of_range(t)
        {
            return std::ops::ControlFlow::Break(SqlError::new(
                code::DATETIME_OVERFLOW,
                format!("date/time field value out of range: \"{t}\""),
            ));
        }
        // A month's name in text that is no date (`99-08-Jan`): PostgreSQL's
        // syntax error, in its words.
        if let Some(t) = date_text.as_deref()
            && crate::values::dates::names_a_month(t)
            && crate::values::dates::parse(t).is_none()
        {
            return std::ops::ControlFlow::Break(SqlError::new(
                code::DATETIME_FORMAT,
                format!("invalid input syntax for type date: \"{t}\""),
            ));
        }
        // Dates' special inputs: `'today'::date`, `DATE 'epoch'`.
        if let Ast::Cast { expr, data_type, .. } = e
            && data_type.to_string().eq_ignore_ascii_case("date")
            && let Ast::Value(v) = expr.as_mut()
            && let Value::SingleQuotedString(text) = &mut v.value
            && let Some(day) =
                crate::values::tz::special_date(text, zone).or_else(|| crate::values::dates::canonical_date(text))
        {
            *text = day;
        }
        if let Ast::TypedString(ts) = e
            && ts.data_type.to_string().eq_ignore_ascii_case("date")
            && let Value::SingleQuotedString(text) = &mut ts.value.value
            && let Some(day) =
                crate::values::tz::special_date(text, zone).or_else(|| crate::values::dates::canonical_date(text))
        {
            *text = day;
        }
        if let Ast::TypedString(ts) = e
            && let Some(zoned) = timestamp_type(&ts.data_type.to_string())
            && let Value::SingleQuotedString(text) = &mut ts.value.value
            && let Some(canonical) = canonical(text, zoned, zone)
        {
            *text = canonical;
        }
        if let Ast::Cast { expr, data_type, .. } = e
            && let Ast::Value(v) = expr.as_ref()
            && let Value::SingleQuotedString(text) = &v.value
        {
            let f = match data_type.to_string().to_lowercase().trim_start_matches("pg_catalog.") {
                "double precision" | "float8" | "float" | "double" => Some("tessera_text_to_float8"),
                "real" | "float4" => Some("tessera_text_to_float4"),
                _ => None,
            };
            if let Some(f) = f {
                let quoted = text.replace('\'', "''");
                if let Ok(new) = crate::parser::parse_expr(&format!("{f}('{quoted}')")) {
                    *e = new;
                }
            }
        }
        std::ops::ControlFlow::Continue(())
    });
    match flow {
        std::ops::ControlFlow::Break(err) => Err(err),
        std::ops::ControlFlow::Continue(()) => Ok(()),
    }
}

/// Whether a type name is a timestamp type, and whether with a time zone.
fn timestamp_type(name: &str) -> Option<bool> {
    match name.to_lowercase().as_str() {
        "timestamp" | "timestamp without time zone" => Some(false),
        "timestamptz" | "timestamp with time zone" => Some(true),
        _ => None,
    }
}

/// A subquery in FROM (or a WITH query) whose rows are ordered keeps its
/// order for the query around it, as PostgreSQL's does (`SELECT * FROM
/// (SELECT … ORDER BY k DESC) s LIMIT 1` is the greatest k): DataFusion
/// drops an ORDER BY without a LIMIT from a subquery, so it gets the
/// largest LIMIT, which keeps the sort.
fn keep_subquery_order(stmt: &mut datafusion::sql::sqlparser::ast::Statement) {
    use datafusion::sql::sqlparser::ast::{
        LimitClause, Query, SetExpr, TableFactor, TableWithJoins, VisitMut, VisitorMut,
    };
    fn keep(q: &mut Query) {
        if q.order_by.is_some()
            && q.limit_clause.is_none()
            && q.fetch.is_none()
            && let Ok(all) = crate::parser::parse_expr(&i64::MAX.to_string())
        {
            q.limit_clause = Some(LimitClause::LimitOffset { limit: Some(all), offset: None, limit_by: Vec::new() });
        }
    }
    fn factor(f: &mut TableFactor) {
        match f {
            TableFactor::Derived { subquery, .. } => keep(subquery),
            TableFactor::NestedJoin { table_with_joins, .. } => tables(table_with_joins),
            _ => {}
        }
    }
    fn tables(t: &mut TableWithJoins) {
        factor(&mut t.relation);
        for j in &mut t.joins {
            factor(&mut j.relation);
        }
    }
    struct Keep;
    impl VisitorMut for Keep {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut Query) -> std::ops::ControlFlow<()> {
            if let Some(with) = &mut q.with {
                for cte in &mut with.cte_tables {
                    keep(&mut cte.query);
                }
            }
            if let SetExpr::Select(s) = q.body.as_mut() {
                s.from.iter_mut().for_each(tables);
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Keep);
}

/// The length a character type limits its values to (`char` alone is
/// `char(1)`; `bpchar`, `text` and `varchar` without a length have none).
fn length_limit(data_type: &str) -> Option<u32> {
    let t = data_type.to_lowercase();
    if t == "char" || t == "character" {
        return Some(1);
    }
    let rest = ["character varying(", "varchar(", "character(", "char("].iter().find_map(|p| t.strip_prefix(p))?;
    rest.strip_suffix(')')?.trim().parse().ok()
}

/// Whether a character type is `char(n)` (blank-padded), not `varchar`.
fn is_bpchar(data_type: &str) -> bool {
    let t = data_type.to_lowercase();
    !t.contains("varying") && !t.starts_with("varchar") && (t.starts_with("char") || t.starts_with("character"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_read_in_postgres_iso_forms() {
        let c = |t: &str, z: bool| crate::values::tz::canonical_timestamp(t, z);
        assert_eq!(c("2024-01-01 12:00", false).as_deref(), Some("2024-01-01 12:00:00"));
        assert_eq!(c("2024-01-01T12:00:05.25", false).as_deref(), Some("2024-01-01 12:00:05.25"));
        assert_eq!(c("2024-01-01 10:00+02", true).as_deref(), Some("2024-01-01 10:00:00+02:00"));
        assert_eq!(c("2024-01-01 10:00+02", false).as_deref(), Some("2024-01-01 10:00:00"));
        assert_eq!(c("2024-01-01 10:00:00-0530", true).as_deref(), Some("2024-01-01 10:00:00-05:30"));
        assert_eq!(c("2024-01-01T10:00Z", true).as_deref(), Some("2024-01-01 10:00:00+00:00"));
        assert_eq!(c("2024-01-01", true).as_deref(), Some("2024-01-01 00:00:00"));
        // PostgreSQL's special inputs.
        assert_eq!(c("epoch", false).as_deref(), Some("1970-01-01 00:00:00"));
        assert!(c("yesterday", true).is_some_and(|t| t.ends_with(" 00:00:00")));
        assert_eq!(c("someday", true), None);
        assert_eq!(c("2024-13-01 10:00", false), None);
    }

    #[test]
    fn float_input_is_refused_out_of_range_as_in_postgres() {
        use crate::values::float_arith::parse_float;
        assert_eq!(parse_float(" 1.5e3 ", false).unwrap(), 1500.0);
        assert!(parse_float("-Infinity", false).unwrap().is_infinite());
        assert!(parse_float("nan", false).unwrap().is_nan());
        assert_eq!(parse_float("10e400", false).unwrap_err().code, code::OUT_OF_RANGE);
        assert_eq!(parse_float("1e-400", false).unwrap_err().code, code::OUT_OF_RANGE);
        assert_eq!(parse_float("0e-400", false).unwrap(), 0.0);
        assert_eq!(parse_float("1e39", true).unwrap_err().code, code::OUT_OF_RANGE);
        assert_eq!(parse_float("abc", false).unwrap_err().code, code::INVALID_TEXT);
    }
}
