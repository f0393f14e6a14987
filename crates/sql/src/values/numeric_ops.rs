//! DataFusion's side of the wide numeric (`numeric.rs`): conversions,
//! products, quotients and averages of `Decimal256` values.
//!
//! - `tessera_to_numeric(x)` is `x::numeric` (the statement rewrite in
//!   [`rewrite_cast`] puts it there, since DataFusion would cast to
//!   `Decimal128(38, 10)` and round): a decimal or an integer keeps its
//!   scale, text and floats become unconstrained numerics, exactly.
//! - `tessera_numeric_as(x, p, s)` stores `x` in a `numeric(p, s)` wider
//!   than 38 digits (rounded half away from zero, 22003 if it overflows),
//!   and `tessera_numeric_default(x)` in an unconstrained numeric (exact,
//!   or refused with 0A000 if it needs more than 38 places or digits).
//! - The analyzer rule [`WideArithmetic`] (after type coercion) replaces
//!   `a * b` with an exact product and `a / b` with PostgreSQL's rounded
//!   quotient whenever an operand is a `Decimal256`: Arrow would multiply
//!   at the sum of the scales (overflowing 256 bits at once) and divide
//!   by truncating.
//! - `avg` of a `Decimal256` is the sum over the count, as PostgreSQL
//!   divides it ([`WideAvg`], used by `numeric_div`'s `avg`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal256Array};
use datafusion::arrow::datatypes::{DataType, Decimal256Type, Float64Type, i256};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DataFusionError, ExprSchema, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    Accumulator, BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ReturnFieldArgs,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use crate::error::{SqlError, code};
use crate::values::numeric::{self, InputError, MAX_DIGITS, UNCONSTRAINED, UNCONSTRAINED_SCALE};
use crate::values::numeric_special::Special;

/// `'1.50'::numeric` as the number literal `1.50` (a Decimal128 of its own
/// scale, printed as written), when the text is a plain decimal of at
/// most 38 digits.
pub fn numeric_literal(text: &str) -> Option<datafusion::sql::sqlparser::ast::Expr> {
    let t = text.trim();
    let unsigned = t.strip_prefix(['-', '+']).unwrap_or(t);
    let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let plain = !(int.is_empty() && frac.is_empty()) && int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit());
    if !plain || int.trim_start_matches('0').len() + frac.len() > 38 {
        return None;
    }
    let int = if int.is_empty() { "0" } else { int };
    let body = if frac.is_empty() { int.to_string() } else { format!("{int}.{frac}") };
    let sign = if t.starts_with('-') { "-" } else { "" };
    // A whole number becomes `CAST(n AS numeric(p, 0))`, not an integer.
    let sql = if frac.is_empty() {
        let digits = int.trim_start_matches('0').len().max(1);
        format!("CAST({sign}{body} AS DECIMAL({digits}, 0))")
    } else {
        format!("{sign}{body}")
    };
    crate::parser::parse_expr(&sql).ok()
}

/// `numeric(p, s)` (as a lower-case type name) when p is beyond
/// Decimal128's 38 digits: (p, s). Values of a precision beyond 76 hold
/// 76 digits (`tessera_numeric_as` refuses more, 0A000).
pub fn wide_declared(type_name: &str) -> Option<(u16, i8)> {
    let args = ["numeric(", "decimal(", "dec("].iter().find_map(|k| type_name.strip_prefix(k))?.strip_suffix(')')?;
    let (p, s) = args.split_once(',').unwrap_or((args, "0"));
    let (p, s): (u16, i8) = (p.trim().parse().ok()?, s.trim().parse().ok()?);
    (p > 38 && p <= 1000 && s >= 0 && s as u8 <= MAX_DIGITS).then_some((p, s))
}

fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// Registers this module's functions.
pub fn register(ctx: &SessionContext) {
    let any = |n| Signature::any(n, Volatility::Immutable);
    ctx.register_udf(ScalarUDF::new_from_impl(Convert { kind: ConvertKind::Cast, signature: any(1) }));
    ctx.register_udf(ScalarUDF::new_from_impl(Convert { kind: ConvertKind::Default, signature: any(1) }));
    ctx.register_udf(ScalarUDF::new_from_impl(Convert { kind: ConvertKind::Declared, signature: any(3) }));
    ctx.register_udf(arith_udf(ArithKind::Mul));
    ctx.register_udf(arith_udf(ArithKind::Div));
}

/// A value Tessera cannot hold as an unconstrained numeric.
fn too_wide(what: &str) -> SqlError {
    SqlError::new(
        code::FEATURE_NOT_SUPPORTED,
        format!(
            "the numeric value {what} needs more digits than Tessera's numeric holds (76 in all, and at most 38 before and 38 after the decimal point when unconstrained)"
        ),
    )
    .with_hint("PostgreSQL would keep every digit; Tessera refuses rather than round.")
}

fn overflow(p: u8, s: i8) -> SqlError {
    SqlError::new(code::OUT_OF_RANGE, "numeric field overflow").with_detail(format!(
        "A field with precision {p}, scale {s} must round to an absolute value less than 10^{}.",
        i16::from(p) - i16::from(s)
    ))
}

/// Text as `numeric(p, s)` of at most 38 digits: Arrow's cast, and NaN
/// (an infinity does not fit, 22003).
fn text_to_decimal128(values: &ArrayRef, p: u8, s: i8) -> std::result::Result<ArrayRef, SqlError> {
    let options = datafusion::arrow::compute::CastOptions { safe: false, ..Default::default() };
    let target = DataType::Decimal128(p, s);
    if (0..values.len()).all(|i| values.is_null(i) || Special::input(values, i).is_none()) {
        return Ok(datafusion::arrow::compute::cast_with_options(values, &target, &options)?);
    }
    let mut cells = Vec::with_capacity(values.len());
    for i in 0..values.len() {
        cells.push(match Special::input(values, i).filter(|_| !values.is_null(i)) {
            Some(Special::NaN) => ScalarValue::Decimal128(Some(Special::NaN.i128()), p, s),
            Some(_) => return Err(crate::values::numeric_special::infinite_overflow(p, s)),
            None => {
                let one = datafusion::arrow::compute::cast_with_options(&values.slice(i, 1), &target, &options)?;
                ScalarValue::try_from_array(&one, 0)?
            }
        });
    }
    Ok(ScalarValue::iter_to_array(cells)?)
}

/// One value of `array` (any number or text) as an integer and its scale.
fn exact_value(array: &ArrayRef, i: usize) -> std::result::Result<(i256, i8), SqlError> {
    let from_text = |t: &str| -> std::result::Result<(i256, i8), SqlError> {
        let t = t.trim();
        // The scale the text is written at: its places less its exponent.
        let (mantissa, exp) = match t.find(['e', 'E']) {
            Some(k) => (&t[..k], t[k + 1..].parse::<i32>().unwrap_or(0)),
            None => (t, 0),
        };
        let places = mantissa.split_once('.').map_or(0, |(_, f)| f.len() as i32) - exp;
        let scale = places.clamp(0, i32::from(MAX_DIGITS)) as i8;
        match numeric::parse(t, scale) {
            Ok(v) => Ok((v, scale)),
            Err(InputError::TooWide) => Err(too_wide(t)),
            Err(InputError::Syntax)
                if ["nan", "infinity", "+infinity", "-infinity", "inf", "-inf"]
                    .contains(&t.to_ascii_lowercase().as_str()) =>
            {
                Err(SqlError::new(code::FEATURE_NOT_SUPPORTED, "numeric NaN and infinities are not supported yet"))
            }
            Err(InputError::Syntax) => {
                Err(SqlError::new(code::INVALID_TEXT, format!("invalid input syntax for type numeric: \"{t}\"")))
            }
        }
    };
    Ok(match array.data_type() {
        DataType::Decimal128(_, s) => {
            (i256::from_i128(array.as_primitive::<datafusion::arrow::datatypes::Decimal128Type>().value(i)), *s)
        }
        DataType::Decimal256(_, s) => (array.as_primitive::<Decimal256Type>().value(i), *s),
        DataType::Utf8 => from_text(array.as_string::<i32>().value(i))?,
        DataType::LargeUtf8 => from_text(array.as_string::<i64>().value(i))?,
        DataType::Utf8View => from_text(array.as_string_view().value(i))?,
        DataType::Float32 | DataType::Float64 => {
            let single = array.data_type() == &DataType::Float32;
            let wide = datafusion::arrow::compute::cast(array, &DataType::Float64).map_err(SqlError::from)?;
            let v = wide.as_primitive::<Float64Type>().value(i);
            if !v.is_finite() {
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "numeric NaN and infinities are not supported yet",
                ));
            }
            // PostgreSQL's float-to-numeric: the float's 15 (6) significant digits.
            from_text(&format!("{:.*e}", if single { 5 } else { 14 }, v))?
        }
        t if t.is_integer() => {
            let wide = datafusion::arrow::compute::cast(&array.slice(i, 1), &DataType::Decimal128(38, 0))
                .map_err(SqlError::from)?;
            (i256::from_i128(wide.as_primitive::<datafusion::arrow::datatypes::Decimal128Type>().value(0)), 0)
        }
        other => {
            return Err(SqlError::new(code::DATATYPE_MISMATCH, format!("cannot cast type {other} to numeric")));
        }
    })
}

/// `array` as `Decimal256(p, s)`: exactly (`exact`: an unconstrained
/// numeric, refusing what it cannot hold) or rounded half away from zero
/// (a declared `numeric(p, s)`, 22003 on overflow).
pub fn to_decimal256(array: &ArrayRef, p: u8, s: i8, exact: bool) -> std::result::Result<ArrayRef, SqlError> {
    let mut out = Vec::with_capacity(array.len());
    for i in 0..array.len() {
        if array.is_null(i) || array.data_type() == &DataType::Null {
            out.push(None);
            continue;
        }
        if let Some(special) = Special::input(array, i) {
            if special != Special::NaN && !exact {
                return Err(crate::values::numeric_special::infinite_overflow(p, s));
            }
            out.push(Some(special.i256()));
            continue;
        }
        let (v, from) = exact_value(array, i)?;
        let moved = if exact {
            numeric::rescale(v, from, s).filter(|v| numeric::fits(*v, p)).ok_or_else(|| {
                let mut text = String::new();
                numeric::write(&mut text, v, from, false);
                too_wide(&text)
            })?
        } else {
            numeric::round_to(v, from, s).filter(|v| numeric::fits(*v, p)).ok_or_else(|| overflow(p, s))?
        };
        out.push(Some(moved));
    }
    Ok(Arc::new(Decimal256Array::from(out).with_precision_and_scale(p, s).map_err(SqlError::from)?))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ConvertKind {
    /// `x::numeric`.
    Cast,
    /// Into an unconstrained numeric column.
    Default,
    /// Into a `numeric(p, s)` beyond Decimal128 (`x, p, s`).
    Declared,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Convert {
    kind: ConvertKind,
    signature: Signature,
}

fn constant_int(v: Option<&ScalarValue>) -> Result<i64> {
    match v.map(|v| v.cast_to(&DataType::Int64)) {
        Some(Ok(ScalarValue::Int64(Some(n)))) => Ok(n),
        _ => Err(DataFusionError::Plan("tessera_numeric_as takes a constant precision and scale".into())),
    }
}

impl Convert {
    fn target(&self, input: &DataType, scalars: &[Option<&ScalarValue>]) -> Result<DataType> {
        Ok(match self.kind {
            ConvertKind::Cast => match input {
                DataType::Decimal128(..) | DataType::Decimal256(..) => input.clone(),
                t if t.is_integer() => DataType::Decimal128(20, 0),
                _ => UNCONSTRAINED,
            },
            ConvertKind::Default => UNCONSTRAINED,
            ConvertKind::Declared => {
                let p = constant_int(scalars.get(1).copied().flatten())?;
                let s = constant_int(scalars.get(2).copied().flatten())?;
                if p <= 38 {
                    DataType::Decimal128(p as u8, s as i8)
                } else {
                    DataType::Decimal256(p.min(i64::from(MAX_DIGITS)) as u8, s as i8)
                }
            }
        })
    }
}

impl ScalarUDFImpl for Convert {
    fn name(&self) -> &str {
        match self.kind {
            ConvertKind::Cast => "tessera_to_numeric",
            ConvertKind::Default => "tessera_numeric_default",
            ConvertKind::Declared => "tessera_numeric_as",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Err(DataFusionError::Internal("return_field_from_args is used".into()))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<datafusion::arrow::datatypes::FieldRef> {
        let t = self.target(args.arg_fields[0].data_type(), args.scalar_arguments)?;
        Ok(Arc::new(datafusion::arrow::datatypes::Field::new(self.name(), t, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let out = match args.return_field.data_type() {
            t if t == values.data_type() => values,
            DataType::Decimal256(p, s) => {
                let declared = match (&self.kind, args.args.get(1)) {
                    (ConvertKind::Declared, Some(ColumnarValue::Scalar(d))) => constant_int(Some(d))?,
                    _ => i64::from(*p),
                };
                to_decimal256(&values, *p, *s, self.kind != ConvertKind::Declared).map_err(|e| {
                    let infinite = e.detail.as_deref().is_some_and(|d| d.contains("infinite"));
                    external(if infinite {
                        crate::values::numeric_special::infinite_overflow(declared.min(1000) as u16, *s)
                    } else if e.code == code::OUT_OF_RANGE && declared > i64::from(*p) {
                        // PostgreSQL would take it: refused, not said to overflow.
                        SqlError::unsupported(format!(
                            "a value of more than {p} digits in numeric({declared},{s}) (Tessera's numeric holds 76)"
                        ))
                    } else {
                        e
                    })
                })?
            }
            DataType::Decimal128(p, s) if values.data_type() == &DataType::Utf8 => {
                text_to_decimal128(&values, *p, *s).map_err(external)?
            }
            t => datafusion::arrow::compute::cast(&values, t)?,
        };
        crate::values::udf_values::columnar(out, scalar)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ArithKind {
    Mul,
    Div,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct WideArith {
    kind: ArithKind,
    signature: Signature,
}

fn arith_udf(kind: ArithKind) -> ScalarUDF {
    ScalarUDF::new_from_impl(WideArith { kind, signature: Signature::any(2, Volatility::Immutable) })
}

fn decimal_parts(array: &ArrayRef) -> Result<(Vec<Option<i256>>, i8)> {
    let wide = match array.data_type() {
        DataType::Decimal128(p, s) => datafusion::arrow::compute::cast(array, &DataType::Decimal256(*p, *s))?,
        DataType::Decimal256(..) => array.clone(),
        other => return Err(DataFusionError::Internal(format!("wide numeric arithmetic on {other}"))),
    };
    let DataType::Decimal256(_, s) = wide.data_type() else { unreachable!() };
    Ok((wide.as_primitive::<Decimal256Type>().iter().collect(), *s))
}

/// The display scale PostgreSQL would give a value: the declared scale,
/// or (unconstrained) the places it needs.
fn display_scale(t: &DataType, v: i256, s: i8) -> i8 {
    if numeric::is_unconstrained(t) { numeric::trimmed_scale(v, s) } else { s }
}

impl ScalarUDFImpl for WideArith {
    fn name(&self) -> &str {
        match self.kind {
            ArithKind::Mul => "tessera_numeric_mul",
            ArithKind::Div => "tessera_numeric_div_wide",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(self.result_type(&args[0], &args[1]))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let target = args.return_field.data_type().clone();
        let DataType::Decimal256(_, target_scale) = target else { unreachable!("wide arithmetic into {target}") };
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let (a, b) = (args.args[0].to_array(n)?, args.args[1].to_array(n)?);
        let (ta, tb) = (a.data_type().clone(), b.data_type().clone());
        let ((xs, sa), (ys, sb)) = (decimal_parts(&a)?, decimal_parts(&b)?);
        let mut out = Vec::with_capacity(n);
        for (x, y) in xs.into_iter().zip(ys) {
            let (Some(x), Some(y)) = (x, y) else {
                out.push(None);
                continue;
            };
            let v = match self.kind {
                ArithKind::Mul => numeric::multiply(x, sa, y, sb, target_scale)
                    .ok_or_else(|| external(too_wide(&format!("{} * {}", show(x, sa), show(y, sb)))))?,
                ArithKind::Div => {
                    if y == i256::ZERO {
                        return Err(external(SqlError::new(code::DIVISION_BY_ZERO, "division by zero")));
                    }
                    let (da, db) = (display_scale(&ta, x, sa), display_scale(&tb, y, sb));
                    let rscale = numeric::quotient_scale(x, sa, da, y, sb, db);
                    let q = (rscale <= i32::from(UNCONSTRAINED_SCALE))
                        .then(|| numeric::divide(x, sa, y, sb, rscale))
                        .flatten()
                        .and_then(|q| numeric::rescale(q, rscale as i8, UNCONSTRAINED_SCALE))
                        .filter(|q| numeric::fits(*q, MAX_DIGITS));
                    q.ok_or_else(|| external(too_wide(&format!("{} / {}", show(x, sa), show(y, sb)))))?
                }
            };
            out.push(Some(v));
        }
        let out: ArrayRef = Arc::new(Decimal256Array::from(out).with_precision_and_scale(MAX_DIGITS, target_scale)?);
        crate::values::udf_values::columnar(out, scalar)
    }
}

impl WideArith {
    /// A product of declared numerics has the sum of their scales, as in
    /// PostgreSQL; anything else is unconstrained (a quotient's scale
    /// depends on its values).
    fn result_type(&self, a: &DataType, b: &DataType) -> DataType {
        let scale = |t: &DataType| match t {
            DataType::Decimal128(_, s) | DataType::Decimal256(_, s) if !numeric::is_unconstrained(t) => Some(*s),
            _ => None,
        };
        match (self.kind, scale(a), scale(b)) {
            (ArithKind::Mul, Some(x), Some(y)) if (0..=UNCONSTRAINED_SCALE).contains(&(x + y)) => {
                DataType::Decimal256(MAX_DIGITS, x + y)
            }
            _ => UNCONSTRAINED,
        }
    }
}

fn show(v: i256, s: i8) -> String {
    let mut out = String::new();
    numeric::write(&mut out, v, s, true);
    out
}

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct WideArithmetic;

impl AnalyzerRule for WideArithmetic {
    fn name(&self) -> &str {
        "tessera_wide_numeric_arithmetic"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::values::exact_casts::rewrite_expressions(plan, wide_arithmetic)
    }
}

/// `a * b` or `a / b` as the wide functions, when either operand is a
/// `Decimal256` and both are decimals.
pub(crate) fn wide_arithmetic(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::BinaryExpr(BinaryExpr { left, op: op @ (Operator::Multiply | Operator::Divide), right }) = &e else {
        return Ok(Transformed::no(e));
    };
    let ty = |x: &Expr| x.get_type(schema as &dyn ExprSchema).ok();
    let (lt, rt) = (ty(left), ty(right));
    let decimal = |t: &Option<DataType>| matches!(t, Some(DataType::Decimal128(..) | DataType::Decimal256(..)));
    let wide = |t: &Option<DataType>| matches!(t, Some(DataType::Decimal256(..)));
    if !(decimal(&lt) && decimal(&rt) && (wide(&lt) || wide(&rt))) {
        return Ok(Transformed::no(e));
    }
    let kind = if *op == Operator::Multiply { ArithKind::Mul } else { ArithKind::Div };
    let args = vec![(**left).clone(), (**right).clone()];
    Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(arith_udf(kind)), args))))
}

/// `avg` of `Decimal256` values: their exact sum over their count, as
/// PostgreSQL divides (see the module's text).
#[derive(Debug)]
pub struct WideAvg {
    /// The input's type (its scale, and whether it is unconstrained).
    input: DataType,
    sum: i256,
    count: i64,
}

impl WideAvg {
    pub fn new(input: DataType) -> Self {
        WideAvg { input, sum: i256::ZERO, count: 0 }
    }

    fn scale(&self) -> i8 {
        match self.input {
            DataType::Decimal256(_, s) => s,
            _ => 0,
        }
    }

    fn add(&mut self, values: &ArrayRef, counts: Option<&ArrayRef>) -> Result<()> {
        let overflowed = || external(SqlError::new(code::OUT_OF_RANGE, "value overflows numeric format"));
        for (i, v) in values.as_primitive::<Decimal256Type>().iter().enumerate() {
            let Some(v) = v else { continue };
            self.sum = self.sum.checked_add(v).ok_or_else(overflowed)?;
            self.count += match counts {
                Some(c) => c.as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(i),
                None => 1,
            };
        }
        Ok(())
    }
}

impl Accumulator for WideAvg {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0], None)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.count == 0 {
            return Ok(ScalarValue::Decimal256(None, MAX_DIGITS, UNCONSTRAINED_SCALE));
        }
        let s = self.scale();
        let d = display_scale(&self.input, self.sum, s);
        Ok(ScalarValue::Decimal256(Some(average(self.sum, s, d, self.count)?), MAX_DIGITS, UNCONSTRAINED_SCALE))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let DataType::Decimal256(p, s) = self.input else { unreachable!("WideAvg of {}", self.input) };
        Ok(vec![ScalarValue::Decimal256(Some(self.sum), p, s), ScalarValue::Int64(Some(self.count))])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.add(&states[0], Some(&states[1]))
    }
}

/// PostgreSQL's average of `count` (> 0) values summing to `sum` (at scale
/// `s`, display scale `d`): the sum over the count, as `numeric_div`
/// divides them (`select_div_scale`), as an unconstrained numeric.
pub fn average(sum: i256, s: i8, d: i8, count: i64) -> Result<i256> {
    let n = i256::from_i128(i128::from(count));
    let rscale = numeric::quotient_scale(sum, s, d, n, 0, 0);
    (rscale <= i32::from(UNCONSTRAINED_SCALE))
        .then(|| numeric::divide(sum, s, n, 0, rscale))
        .flatten()
        .and_then(|q| numeric::rescale(q, rscale as i8, UNCONSTRAINED_SCALE))
        .ok_or_else(|| external(too_wide(&format!("avg {} / {count}", show(sum, s)))))
}

/// The quotient of two numerics as PostgreSQL computes it (see
/// [`WideArith`]), for `numeric_div`'s rule.
pub fn division_udf() -> ScalarUDF {
    arith_udf(ArithKind::Div)
}

/// The product of two numerics, one of them wider than Decimal128 (see
/// [`WideArith`]), for `numeric_div`'s planner.
pub fn multiplication_udf() -> ScalarUDF {
    arith_udf(ArithKind::Mul)
}

/// The state fields of [`WideAvg`].
pub fn wide_avg_state(name: &str, input: &DataType) -> Vec<datafusion::arrow::datatypes::FieldRef> {
    use datafusion::arrow::datatypes::Field;
    vec![
        Arc::new(Field::new(format!("{name}[sum]"), input.clone(), true)),
        Arc::new(Field::new(format!("{name}[count]"), DataType::Int64, true)),
    ]
}
