//! Numeric division and `avg`, rounded as PostgreSQL rounds.
//!
//! Arrow's decimal division and DataFusion's `avg` of decimals give the
//! result four more decimal places than the dividend and *truncate* the
//! rest: `2.00 / 3.00` is 0.666666 and `avg` of 0, 1 and 1 too, where
//! PostgreSQL answers 0.66666666666666666667. A truncated last digit is a
//! wrong digit, so Tessera divides itself:
//! - `a / b` of two decimals becomes `tessera_numeric_div(a, b)` (the
//!   analyzer rule [`NumericDivision`], after type coercion), which
//!   computes the quotient exactly (in 256 bits) and rounds it half away
//!   from zero, as PostgreSQL does, to [`quotient_scale`] places;
//! - `avg` of a decimal is DataFusion's accumulation with one more place,
//!   rounded to the same scale when the group is evaluated ([`Avg`]).
//!
//! PostgreSQL's numeric carries a display scale per value (a quotient
//! shows at least 16 significant digits: 20 places below 1, 16 from 1 to
//! 9999, fewer above); Tessera's decimals have one scale per column, so a
//! quotient shows 20 places (or its operands' scale, if larger): the same
//! digits where PostgreSQL shows 20, more digits otherwise, each correctly
//! rounded. A quotient whose integer part needs more than the 18 digits
//! left is refused (22003) rather than cut.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Field, FieldRef, i256};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DataFusionError, ExprSchema, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, BinaryExpr, ColumnarValue, EmitTo, Expr, ExprSchemable,
    GroupsAccumulator, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use crate::error::{SqlError, code};

/// The fewest decimal places of a quotient or an average.
const MIN_SCALE: i8 = 20;
/// Decimal128's digits.
const MAX_PRECISION: u8 = 38;

/// Registers `tessera_numeric_div` and the `avg` that rounds.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(div_udf());
    ctx.register_udaf(AggregateUDF::new_from_impl(Avg { inner: datafusion::functions_aggregate::average::avg_udaf() }));
}

fn div_udf() -> ScalarUDF {
    ScalarUDF::new_from_impl(NumericDiv { signature: Signature::any(2, Volatility::Immutable) })
}

/// The scale of a quotient of decimals of scales `a` and `b`.
pub fn quotient_scale(a: i8, b: i8) -> i8 {
    MIN_SCALE.max(a).max(b).min(MAX_PRECISION as i8 - 1)
}

fn overflow() -> DataFusionError {
    DataFusionError::External(Box::new(SqlError::new(code::OUT_OF_RANGE, "value overflows numeric format")))
}

/// `a / b` (of scales `sa`, `sb`) at scale `s`, rounded half away from
/// zero (`numeric::divide`); None if it does not fit in 38 digits.
fn divide(a: i128, sa: i8, b: i128, sb: i8, s: i8) -> Option<i128> {
    let q = crate::numeric::divide(i256::from_i128(a), sa, i256::from_i128(b), sb, i32::from(s))?.to_i128()?;
    (q.unsigned_abs() < 10u128.pow(u32::from(MAX_PRECISION))).then_some(q)
}

/// `tessera_numeric_div(a, b)` of two decimals (see the module's text).
#[derive(Debug, PartialEq, Eq, Hash)]
struct NumericDiv {
    signature: Signature,
}

fn scale_of(t: &DataType) -> Result<i8> {
    match t {
        DataType::Decimal128(_, s) => Ok(*s),
        other => Err(DataFusionError::Internal(format!("tessera_numeric_div of {other}"))),
    }
}

impl ScalarUDFImpl for NumericDiv {
    fn name(&self) -> &str {
        "tessera_numeric_div"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(MAX_PRECISION, quotient_scale(scale_of(&args[0])?, scale_of(&args[1])?)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (sa, sb) = (scale_of(&args.args[0].data_type())?, scale_of(&args.args[1].data_type())?);
        let s = quotient_scale(sa, sb);
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let (a, b) = (args.args[0].to_array(n)?, args.args[1].to_array(n)?);
        let (a, b) = (a.as_primitive::<Decimal128Type>(), b.as_primitive::<Decimal128Type>());
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            if a.is_null(i) || b.is_null(i) {
                out.push(None);
                continue;
            }
            if b.value(i) == 0 {
                return Err(DataFusionError::External(Box::new(SqlError::new(
                    code::DIVISION_BY_ZERO,
                    "division by zero",
                ))));
            }
            out.push(Some(divide(a.value(i), sa, b.value(i), sb, s).ok_or_else(overflow)?));
        }
        let out: ArrayRef = Arc::new(Decimal128Array::from(out).with_precision_and_scale(MAX_PRECISION, s)?);
        crate::udf_values::columnar(out, scalar)
    }
}

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct NumericDivision;

impl AnalyzerRule for NumericDivision {
    fn name(&self) -> &str {
        "tessera_numeric_division"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::exact_casts::rewrite_expressions(plan, exact_division)
    }
}

fn exact_division(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::BinaryExpr(BinaryExpr { left, op: Operator::Divide, right }) = &e else {
        return Ok(Transformed::no(e));
    };
    let decimal = |x: &Expr| matches!(x.get_type(schema as &dyn ExprSchema), Ok(DataType::Decimal128(..)));
    if !(decimal(left) && decimal(right)) {
        return Ok(Transformed::no(e));
    }
    let args = vec![(**left).clone(), (**right).clone()];
    Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(div_udf()), args))))
}

/// DataFusion's `avg`, except that the average of decimals is rounded (see
/// the module's text).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Avg {
    inner: Arc<AggregateUDF>,
}

/// The scale `avg` of a decimal of scale `s` returns.
fn avg_scale(s: i8) -> i8 {
    // One place more is accumulated, within Decimal128's 38.
    quotient_scale(s, s).min(MAX_PRECISION as i8 - 2)
}

/// For a decimal average: the field DataFusion's accumulators compute
/// into (one place more) and the scale to round it to.
fn rounding(args: &AccumulatorArgs) -> Option<(FieldRef, i8)> {
    match args.return_field.data_type() {
        DataType::Decimal128(_, s) if !args.is_distinct => {
            let wider = Field::new(args.return_field.name(), DataType::Decimal128(MAX_PRECISION, *s + 1), true);
            Some((Arc::new(wider), *s))
        }
        _ => None,
    }
}

impl AggregateUDFImpl for Avg {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.inner().coerce_types(args)
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args.first() {
            Some(DataType::Decimal128(_, s)) => Ok(DataType::Decimal128(MAX_PRECISION, avg_scale(*s))),
            Some(DataType::Decimal256(..)) => Ok(crate::numeric::UNCONSTRAINED),
            _ => self.inner.return_type(args),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        match args.input_fields.first().map(|f| f.data_type()) {
            Some(t @ DataType::Decimal256(..)) if !args.is_distinct => {
                Ok(crate::numeric_ops::wide_avg_state(args.name, t))
            }
            _ => self.inner.inner().state_fields(args),
        }
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if let Some(t @ DataType::Decimal256(..)) = args.expr_fields.first().map(|f| f.data_type()) {
            if args.is_distinct {
                return Err(DataFusionError::External(Box::new(SqlError::unsupported(
                    "avg(DISTINCT …) of an unconstrained or wide numeric",
                ))));
            }
            return Ok(Box::new(crate::numeric_ops::WideAvg::new(t.clone())));
        }
        match rounding(&args) {
            Some((wider, scale)) => {
                let inner = self.inner.accumulator(AccumulatorArgs { return_field: wider, ..args })?;
                Ok(Box::new(RoundedAvg { inner, scale }))
            }
            None => self.inner.accumulator(args),
        }
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        let wide = matches!(args.expr_fields.first().map(|f| f.data_type()), Some(DataType::Decimal256(..)));
        !wide && self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        match rounding(&args) {
            Some((wider, scale)) => {
                let inner = self.inner.create_groups_accumulator(AccumulatorArgs { return_field: wider, ..args })?;
                Ok(Box::new(RoundedGroupsAvg { inner, scale }))
            }
            None => self.inner.create_groups_accumulator(args),
        }
    }
}

/// An average computed with one place more, rounded to `scale`.
fn round_last_place(values: &ArrayRef, scale: i8) -> Result<ArrayRef> {
    let out: Decimal128Array = values.as_primitive::<Decimal128Type>().unary(|v| {
        // Truncated one place below: its last digit decides the rounding.
        let (q, r) = (v / 10, v % 10);
        if r.abs() >= 5 { q + v.signum() } else { q }
    });
    Ok(Arc::new(out.with_precision_and_scale(MAX_PRECISION, scale)?))
}

#[derive(Debug)]
struct RoundedAvg {
    inner: Box<dyn Accumulator>,
    scale: i8,
}

impl Accumulator for RoundedAvg {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.update_batch(values)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let v = self.inner.evaluate()?.to_array()?;
        ScalarValue::try_from_array(&round_last_place(&v, self.scale)?, 0)
    }

    fn size(&self) -> usize {
        self.inner.size()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.inner.state()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.inner.merge_batch(states)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.retract_batch(values)
    }

    fn supports_retract_batch(&self) -> bool {
        self.inner.supports_retract_batch()
    }
}

struct RoundedGroupsAvg {
    inner: Box<dyn GroupsAccumulator>,
    scale: i8,
}

impl GroupsAccumulator for RoundedGroupsAvg {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&datafusion::arrow::array::BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner.update_batch(values, group_indices, opt_filter, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        round_last_place(&self.inner.evaluate(emit_to)?, self.scale)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.inner.state(emit_to)
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.inner.merge_batch(values, group_indices, total_num_groups)
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&datafusion::arrow::array::BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        self.inner.convert_to_state(values, opt_filter)
    }

    fn size(&self) -> usize {
        self.inner.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotients_round_half_away_from_zero() {
        // 2.00 / 3.00 at 20 places.
        assert_eq!(divide(200, 2, 300, 2, 20), Some(66_666_666_666_666_666_667));
        assert_eq!(divide(-200, 2, 300, 2, 20), Some(-66_666_666_666_666_666_667));
        // 1 / 8 at 2 places: 0.125 → 0.13.
        assert_eq!(divide(1, 0, 8, 0, 2), Some(13));
        assert_eq!(divide(-1, 0, 8, 0, 2), Some(-13));
        // A quotient too large for 38 digits is refused.
        assert_eq!(divide(10i128.pow(30), 0, 1, 10, 20), None);
    }

    #[test]
    fn averages_round_their_last_place() {
        let wide: ArrayRef =
            Arc::new(Decimal128Array::from(vec![6666, -6666, 6664]).with_precision_and_scale(38, 4).unwrap());
        let out = round_last_place(&wide, 3).unwrap();
        let out = out.as_primitive::<Decimal128Type>();
        assert_eq!(out.values().to_vec(), vec![667, -667, 666]);
    }
}
