//! Numeric division and `avg`, as PostgreSQL computes them.
//!
//! Arrow's decimal division and DataFusion's `avg` of decimals give the
//! result four more decimal places than the dividend and *truncate* the
//! rest: `2.00 / 3.00` is 0.666666 and `avg` of 0, 1 and 1 too, where
//! PostgreSQL answers 0.66666666666666666667. A truncated last digit is a
//! wrong digit, so Tessera divides itself, as PostgreSQL's `numeric_div`:
//! - `a / b` of two decimals becomes `numeric_ops`' exact division (the
//!   analyzer rule [`NumericDivision`], after type coercion): each
//!   quotient is rounded half away from zero to the scale PostgreSQL's
//!   `select_div_scale` picks for its two values (16 significant digits,
//!   no fewer places than either operand shows), and is an unconstrained
//!   numeric, as PostgreSQL's quotient is (no typmod);
//! - `avg` of a decimal, and of an integer (which PostgreSQL averages as
//!   numeric, not double precision), is DataFusion's exact sum and count,
//!   divided the same way when the group is evaluated ([`Avg`]).
//!
//! An unconstrained numeric prints without trailing zeros (`numeric.rs`),
//! so a quotient PostgreSQL shows as 1.5000000000000000 prints 1.5: the
//! same value and, where its last place is not a zero, the same digits.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal256Array};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Field, FieldRef, UInt64Type, i256};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DataFusionError, ExprSchema, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, BinaryExpr, EmitTo, Expr, ExprSchemable, GroupsAccumulator,
    LogicalPlan, Operator, Signature, Volatility, cast,
};
use datafusion::optimizer::AnalyzerRule;

use crate::error::{SqlError, code};

/// Decimal128's digits.
const MAX_PRECISION: u8 = 38;
/// The type integers are averaged as (any 64-bit integer fits).
const INTEGER_AS_DECIMAL: DataType = DataType::Decimal128(20, 0);

/// Registers the `avg` that divides as PostgreSQL.
pub fn register(ctx: &SessionContext) {
    ctx.register_udaf(AggregateUDF::new_from_impl(Avg {
        inner: datafusion::functions_aggregate::average::avg_udaf(),
        signature: Signature::user_defined(Volatility::Immutable),
    }));
}

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct NumericDivision;

impl AnalyzerRule for NumericDivision {
    fn name(&self) -> &str {
        "tessera_numeric_division"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::values::exact_casts::rewrite_expressions(plan, exact_division)
    }
}

/// A division of decimals the planner left to DataFusion (an operand that
/// became a decimal only through coercion): PostgreSQL's quotient, at the
/// fixed 20 places the planned Decimal128 type can hold.
fn exact_division(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::BinaryExpr(BinaryExpr { left, op: Operator::Divide, right }) = &e else {
        return Ok(Transformed::no(e));
    };
    let decimal = |x: &Expr| matches!(x.get_type(schema as &dyn ExprSchema), Ok(DataType::Decimal128(..)));
    if !(decimal(left) && decimal(right)) {
        return Ok(Transformed::no(e));
    }
    let args = vec![(**left).clone(), (**right).clone()];
    let quotient =
        Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(crate::values::numeric_ops::division_udf()), args));
    Ok(Transformed::yes(cast(quotient, DataType::Decimal128(MAX_PRECISION, FALLBACK_SCALE))))
}

/// The places of a quotient that only coercion made a division of decimals.
const FALLBACK_SCALE: i8 = 20;

/// Plans, while the expression is planned, the numeric arithmetic whose
/// type DataFusion would derive otherwise than PostgreSQL (and which the
/// analyzer cannot change afterwards, the plan's types being fixed):
/// - `a / b` where either operand is a numeric and the other a numeric or
///   an integer, as PostgreSQL's `numeric_div` (`numeric_ops`' division):
///   its type is the unconstrained numeric PostgreSQL's quotient is, not
///   a fixed-scale decimal;
/// - `a * b` where either operand is wider than Decimal128 (an
///   unconstrained numeric), as `numeric_ops`' exact product, which is an
///   unconstrained numeric too: DataFusion would add the scales to 76
///   places, a type nothing else can be compared with.
#[derive(Debug)]
pub struct ExactNumericPlanner;

impl ExprPlanner for ExactNumericPlanner {
    fn plan_binary_op(&self, expr: RawBinaryExpr, schema: &DFSchema) -> Result<PlannerResult<RawBinaryExpr>> {
        use datafusion::sql::sqlparser::ast::BinaryOperator;
        if !matches!(expr.op, BinaryOperator::Divide | BinaryOperator::Multiply) {
            return Ok(PlannerResult::Original(expr));
        }
        let (Ok(lt), Ok(rt)) = (expr.left.get_type(schema), expr.right.get_type(schema)) else {
            return Ok(PlannerResult::Original(expr));
        };
        let decimal = |t: &DataType| matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..));
        let wide = |t: &DataType| matches!(t, DataType::Decimal256(..));
        let operands = (decimal(&lt) || lt.is_integer()) && (decimal(&rt) || rt.is_integer());
        let udf = match expr.op {
            BinaryOperator::Divide if operands && (decimal(&lt) || decimal(&rt)) => {
                crate::values::numeric_ops::division_udf()
            }
            BinaryOperator::Multiply if operands && (wide(&lt) || wide(&rt)) => {
                crate::values::numeric_ops::multiplication_udf()
            }
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let as_decimal = |e: Expr, t: &DataType| if t.is_integer() { cast(e, INTEGER_AS_DECIMAL) } else { e };
        let args = vec![as_decimal(expr.left, &lt), as_decimal(expr.right, &rt)];
        Ok(PlannerResult::Planned(Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(udf), args))))
    }
}

/// DataFusion's `avg`, except that integers are averaged as numerics and
/// the average of decimals is PostgreSQL's (see the module's text).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Avg {
    inner: Arc<AggregateUDF>,
    signature: Signature,
}

/// For a decimal average: the field DataFusion's accumulators are made
/// with (their own result, which Tessera does not use: it divides the sum
/// and count of their state).
fn decimal_input(args: &AccumulatorArgs) -> Option<FieldRef> {
    match args.expr_fields.first().map(|f| f.data_type()) {
        Some(DataType::Decimal128(_, s)) => {
            Some(Arc::new(Field::new(args.return_field.name(), DataType::Decimal128(MAX_PRECISION, *s), true)))
        }
        _ => None,
    }
}

impl AggregateUDFImpl for Avg {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let [t] = args else {
            return Err(DataFusionError::Plan(format!("avg takes one argument, not {}", args.len())));
        };
        Ok(vec![match t {
            t if t.is_integer() => INTEGER_AS_DECIMAL,
            DataType::Float16 | DataType::Float32 | DataType::Float64 | DataType::Null => DataType::Float64,
            DataType::Decimal128(..) | DataType::Decimal256(..) | DataType::Duration(_) => t.clone(),
            other => {
                return Err(DataFusionError::External(Box::new(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!(
                        "function avg({}) does not exist",
                        crate::values::types::SqlType::from_arrow(other)
                            .map_or_else(|| other.to_string(), |t| t.name())
                    ),
                ))));
            }
        }])
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args.first() {
            Some(DataType::Decimal128(..) | DataType::Decimal256(..)) => Ok(crate::values::numeric::UNCONSTRAINED),
            _ => self.inner.return_type(args),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        match args.input_fields.first().map(|f| f.data_type()) {
            Some(t @ DataType::Decimal256(..)) if !args.is_distinct => {
                Ok(crate::values::numeric_ops::wide_avg_state(args.name, t))
            }
            Some(DataType::Decimal128(_, s)) => {
                let field = Arc::new(Field::new(args.name, DataType::Decimal128(MAX_PRECISION, *s), true));
                self.inner.inner().state_fields(StateFieldsArgs { return_field: field, ..args })
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
            return Ok(Box::new(crate::values::numeric_ops::WideAvg::new(t.clone())));
        }
        match decimal_input(&args) {
            Some(field) => {
                let distinct = args.is_distinct;
                let inner = self.inner.accumulator(AccumulatorArgs { return_field: field, ..args })?;
                Ok(Box::new(PgAvg { inner, distinct }))
            }
            None => self.inner.accumulator(args),
        }
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if args.expr_fields.first().is_some_and(|f| f.data_type() == &DataType::Float64) {
            // PostgreSQL recomputes a float average per frame (frame_recompute).
            let mean = crate::values::float_var::Statistic::Mean;
            return Ok(Box::new(crate::values::frame_recompute::FrameRecompute::new(Box::new(move || {
                Box::new(crate::values::float_var::Moments::new(mean))
            }))));
        }
        self.accumulator(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        let wide = matches!(args.expr_fields.first().map(|f| f.data_type()), Some(DataType::Decimal256(..)));
        match decimal_input(&args) {
            Some(field) => self.inner.groups_accumulator_supported(AccumulatorArgs { return_field: field, ..args }),
            None => !wide && self.inner.groups_accumulator_supported(args),
        }
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        match decimal_input(&args) {
            Some(field) => {
                let inner = self.inner.create_groups_accumulator(AccumulatorArgs { return_field: field, ..args })?;
                Ok(Box::new(PgGroupsAvg { inner }))
            }
            None => self.inner.create_groups_accumulator(args),
        }
    }
}

/// PostgreSQL's averages of groups whose counts and (Decimal128) sums are
/// `counts` and `sums` (the state of DataFusion's decimal average).
fn averages(counts: &ArrayRef, sums: &ArrayRef) -> Result<ArrayRef> {
    let DataType::Decimal128(_, s) = sums.data_type() else {
        return Err(DataFusionError::Internal(format!("an average's sum of type {}", sums.data_type())));
    };
    let counts = counts.as_primitive::<UInt64Type>();
    let sums = sums.as_primitive::<Decimal128Type>();
    let mut out = Vec::with_capacity(sums.len());
    for i in 0..sums.len() {
        if sums.is_null(i) || counts.is_null(i) || counts.value(i) == 0 {
            out.push(None);
            continue;
        }
        let count = i64::try_from(counts.value(i))
            .map_err(|_| DataFusionError::Internal("an average of too many rows".into()))?;
        out.push(Some(crate::values::numeric_ops::average(i256::from_i128(sums.value(i)), *s, *s, count)?));
    }
    let (p, s) = (crate::values::numeric::MAX_DIGITS, crate::values::numeric::UNCONSTRAINED_SCALE);
    Ok(Arc::new(Decimal256Array::from(out).with_precision_and_scale(p, s)?))
}

/// The average of a DISTINCT decimal accumulator's state: its values.
fn distinct_average(state: &ScalarValue) -> Result<ScalarValue> {
    let ScalarValue::List(list) = state else {
        return Err(DataFusionError::Internal(format!("avg(DISTINCT …) state {state:?}")));
    };
    let values = list.value(0);
    let DataType::Decimal128(_, s) = values.data_type() else {
        return Err(DataFusionError::Internal(format!("avg(DISTINCT …) of {}", values.data_type())));
    };
    let (mut sum, mut count) = (i256::ZERO, 0i64);
    for v in values.as_primitive::<Decimal128Type>().iter().flatten() {
        sum = sum.checked_add(i256::from_i128(v)).ok_or_else(|| DataFusionError::Internal("avg overflow".into()))?;
        count += 1;
    }
    let (p, scale) = (crate::values::numeric::MAX_DIGITS, crate::values::numeric::UNCONSTRAINED_SCALE);
    if count == 0 {
        return Ok(ScalarValue::Decimal256(None, p, scale));
    }
    Ok(ScalarValue::Decimal256(Some(crate::values::numeric_ops::average(sum, *s, *s, count)?), p, scale))
}

/// DataFusion's decimal average, evaluated as PostgreSQL's.
#[derive(Debug)]
struct PgAvg {
    inner: Box<dyn Accumulator>,
    distinct: bool,
}

impl Accumulator for PgAvg {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.update_batch(values)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let state = self.inner.state()?;
        if self.distinct {
            return distinct_average(&state[0]);
        }
        let (counts, sums) = (state[0].to_array()?, state[1].to_array()?);
        ScalarValue::try_from_array(&averages(&counts, &sums)?, 0)
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

struct PgGroupsAvg {
    inner: Box<dyn GroupsAccumulator>,
}

impl GroupsAccumulator for PgGroupsAvg {
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
        let state = self.inner.state(emit_to)?;
        averages(&state[0], &state[1])
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

    fn decimals(v: Vec<i128>, s: i8) -> ArrayRef {
        Arc::new(datafusion::arrow::array::Decimal128Array::from(v).with_precision_and_scale(38, s).unwrap())
    }

    #[test]
    fn averages_divide_as_postgres() {
        // avg of 0, 1 and 1 (scale 0): 0.66666666666666666667; of 1 and 2: 1.5.
        let counts: ArrayRef = Arc::new(datafusion::arrow::array::UInt64Array::from(vec![3, 2, 0]));
        let out = averages(&counts, &decimals(vec![2, 3, 0], 0)).unwrap();
        let out = out.as_primitive::<datafusion::arrow::datatypes::Decimal256Type>();
        let text = |i: usize| {
            let mut t = String::new();
            crate::values::numeric::write(&mut t, out.value(i), 38, true);
            t
        };
        assert_eq!(text(0), "0.66666666666666666667");
        assert_eq!(text(1), "1.5");
        assert!(out.is_null(2));
        // A sum at scale 2 of 3 rows: 1.00 + 2.00 + 2.00 = 5.00 → 1.6666666666666667.
        let counts: ArrayRef = Arc::new(datafusion::arrow::array::UInt64Array::from(vec![3]));
        let out = averages(&counts, &decimals(vec![500], 2)).unwrap();
        let out = out.as_primitive::<datafusion::arrow::datatypes::Decimal256Type>();
        let mut t = String::new();
        crate::values::numeric::write(&mut t, out.value(0), 38, true);
        assert_eq!(t, "1.6666666666666667");
    }
}
