//! Every timestamp in microseconds, PostgreSQL's unit, and text cast to a
//! timestamp read as PostgreSQL reads it.
//!
//! DataFusion plans `timestamp` and `timestamptz` as nanoseconds, whose
//! 64 bits end in 1677 and 2262, while columns (`types`), the row store
//! and the wire formats hold microseconds, which reach PostgreSQL's whole
//! range. Mixed, DataFusion's coercion picks the finer unit, so comparing
//! a column with `now()` converted the column to nanoseconds and failed on
//! any value outside those years. Three pieces keep one unit:
//! - [`MicrosecondTypes`], a type planner: the SQL types `timestamp`,
//!   `timestamp(6)`, `timestamp(9)` and their `with time zone` forms are
//!   planned as microseconds (a cast, a typed literal, a column definition);
//! - `now()` (with its alias `current_timestamp`) is [`Now`], in
//!   microseconds (DataFusion's gives nanoseconds) and, as PostgreSQL's,
//!   the transaction's start: in a block the block's, else the statement's;
//! - [`TextTimestamps`], an analyzer rule after type coercion: a cast of
//!   text to a timestamp, written or made by coercion (`ts > '1997-01-02'`),
//!   becomes `tessera_text_to_timestamp` (or, for timestamptz,
//!   `tessera_text_to_tstz` in the session's zone), which reads it with
//!   `timestamp_in`: BC years, years past 9999 and `±infinity` included;
//!   the same rule gives functions of infinite timestamps PostgreSQL's
//!   answers (`timestamp_infinity`).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{DataType, FieldRef, TimeUnit};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::config::ConfigOptions;
use datafusion::common::datatype::DataTypeExt;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DataFusionError, ExprSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::TypePlanner;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    Cast, ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::sql::sqlparser::ast::{DataType as SqlDataType, TimezoneInfo};

use crate::values::tz::{Zone, ZoneSource};

/// Plans PostgreSQL's timestamp types in microseconds.
#[derive(Debug)]
pub struct MicrosecondTypes;

impl TypePlanner for MicrosecondTypes {
    fn plan_type_field(&self, sql_type: &SqlDataType) -> Result<Option<FieldRef>> {
        let SqlDataType::Timestamp(precision, zone) = sql_type else { return Ok(None) };
        if !matches!(precision, None | Some(6) | Some(9)) {
            return Ok(None);
        }
        let tz =
            matches!(zone, TimezoneInfo::Tz | TimezoneInfo::WithTimeZone).then(|| Arc::from(crate::values::types::UTC));
        Ok(Some(DataType::Timestamp(TimeUnit::Microsecond, tz).into_nullable_field_ref()))
    }
}

/// When the session's open transaction block began (µs), if one is open.
pub type BlockStart = Arc<dyn Fn() -> Option<i64> + Send + Sync>;

/// `now()`, `current_timestamp`: the transaction's start in microseconds
/// (in a block, the block's; otherwise the statement's).
#[derive(PartialEq, Eq, Hash)]
pub struct Now {
    signature: Signature,
    aliases: Vec<String>,
    block_start: StartHolder,
}

/// [`BlockStart`], compared by nothing (one per session context).
struct StartHolder(BlockStart);

impl PartialEq for StartHolder {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for StartHolder {}

impl std::hash::Hash for StartHolder {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl std::fmt::Debug for Now {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("now")
    }
}

impl Now {
    pub fn udf(block_start: BlockStart) -> ScalarUDF {
        ScalarUDF::new_from_impl(Now {
            signature: Signature::nullary(Volatility::Stable),
            aliases: vec!["current_timestamp".to_string()],
            block_start: StartHolder(block_start),
        })
    }
}

impl ScalarUDFImpl for Now {
    fn name(&self) -> &str {
        "now"
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(crate::values::types::SqlType::TimestampTz.arrow_type())
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        let start = match ((self.block_start.0)(), info.query_execution_start_time()) {
            (Some(block), _) => block,
            (None, Some(statement)) => statement.timestamp_micros(),
            (None, None) => return Ok(ExprSimplifyResult::Original(args)),
        };
        Ok(ExprSimplifyResult::Simplified(Expr::Literal(
            ScalarValue::TimestampMicrosecond(Some(start), Some(Arc::from(crate::values::types::UTC))),
            None,
        )))
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // Simplified away before execution (as DataFusion's own): the
        // statement's start is not known here, and the moment of the call
        // would make two calls differ (`now() = now()` false).
        match (self.block_start.0)() {
            Some(start) => Ok(ColumnarValue::Scalar(ScalarValue::TimestampMicrosecond(
                Some(start),
                Some(Arc::from(crate::values::types::UTC)),
            ))),
            None => Err(DataFusionError::Internal("now() is replaced by its value before it runs".into())),
        }
    }
}

/// `tessera_text_to_timestamp(text)`: text read as a `timestamp`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TextToTimestamp {
    signature: Signature,
}

fn text_to_timestamp() -> ScalarUDF {
    ScalarUDF::new_from_impl(TextToTimestamp { signature: Signature::any(1, Volatility::Immutable) })
}

impl ScalarUDFImpl for TextToTimestamp {
    fn name(&self) -> &str {
        "tessera_text_to_timestamp"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Timestamp(TimeUnit::Microsecond, None))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let input = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let out = read_texts(&input, false, Zone::Utc)?;
        crate::values::udf_values::columnar(Arc::new(out), scalar)
    }
}

/// Text values read with `timestamp_in` (a timestamptz's labelled UTC).
pub fn read_texts(input: &ArrayRef, zoned: bool, zone: Zone) -> Result<TimestampMicrosecondArray> {
    let texts = datafusion::arrow::compute::cast(input, &DataType::Utf8)?;
    let out = texts
        .as_string::<i32>()
        .iter()
        .map(|t| t.map(|t| crate::values::timestamp_in::read(t, zoned, zone)).transpose())
        .collect::<std::result::Result<TimestampMicrosecondArray, _>>()
        .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
    Ok(if zoned { out.with_timezone(crate::values::types::UTC) } else { out })
}

/// Registers the functions the rule calls and `now()` (the block's start
/// from `block_start`).
pub fn register(ctx: &datafusion::execution::context::SessionContext, block_start: BlockStart) {
    ctx.register_udf(text_to_timestamp());
    ctx.register_udf(Now::udf(block_start));
    crate::values::timestamp_infinity::register(ctx);
    if let Ok(inner) = datafusion::execution::FunctionRegistry::udf(ctx, "date_trunc") {
        ctx.register_udf(ScalarUDF::new_from_impl(WideDateTrunc { inner }));
    }
    for name in ["generate_series", "range"] {
        if let Ok(f) = ctx.table_function(name) {
            ctx.register_udtf(name, Arc::new(NanosecondSeries { inner: f.function().clone() }));
        }
    }
}

/// DataFusion's `generate_series` and `range` over timestamps, which take
/// their bounds in nanoseconds only: bounds in microseconds are handed to
/// them converted (the series' values are nanoseconds, in their range).
#[derive(Debug)]
struct NanosecondSeries {
    inner: Arc<dyn TableFunctionImpl>,
}

impl TableFunctionImpl for NanosecondSeries {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args
            .exprs()
            .iter()
            .map(|e| match e {
                Expr::Literal(ScalarValue::TimestampMicrosecond(v, tz), meta) => {
                    let nanos = v.map(|v| v.checked_mul(1000)).map(|n| {
                        n.ok_or_else(|| {
                            DataFusionError::External(Box::new(crate::error::SqlError::unsupported(
                                "generate_series over timestamps before 1677 or after 2262",
                            )))
                        })
                    });
                    Ok(Expr::Literal(ScalarValue::TimestampNanosecond(nanos.transpose()?, tz.clone()), meta.clone()))
                }
                other => Ok(other.clone()),
            })
            .collect::<Result<Vec<_>>>()?;
        self.inner.call_with_args(TableFunctionArgs::new(&exprs, args.session()))
    }
}

/// The analyzer rule (see the module's text).
pub struct TextTimestamps {
    pub zone: ZoneSource,
}

impl std::fmt::Debug for TextTimestamps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TextTimestamps")
    }
}

impl AnalyzerRule for TextTimestamps {
    fn name(&self) -> &str {
        "tessera_text_timestamps"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let zone = (self.zone)().setting_name();
        crate::values::exact_casts::rewrite_expressions_retyped(plan, |e, schema| {
            in_microseconds(e, schema, &zone)?
                .transform_data(|e| nanosecond_origin(e, schema))?
                .transform_data(|e| truncated_date_is_instant(e, schema))?
                .transform_data(|e| crate::values::timestamp_infinity::guard(e, schema))
        })
    }
}

/// `date_bin`'s stride as PostgreSQL takes it: no months or years (0A000;
/// DataFusion counts them as 30 days), and longer than zero (22008).
fn check_stride(stride: &Expr) -> Result<()> {
    let Expr::Literal(ScalarValue::IntervalMonthDayNano(Some(v)), _) = stride else { return Ok(()) };
    let refuse =
        |code: &'static str, m: &str| DataFusionError::External(Box::new(crate::error::SqlError::new(code, m)));
    if v.months != 0 {
        return Err(refuse(
            crate::error::code::FEATURE_NOT_SUPPORTED,
            "timestamps cannot be binned into intervals containing months or years",
        ));
    }
    if i128::from(v.days) * 86_400_000_000_000 + i128::from(v.nanoseconds) <= 0 {
        return Err(refuse(crate::error::code::DATETIME_OVERFLOW, "stride must be greater than zero"));
    }
    Ok(())
}

/// `date_trunc(unit, date)`: PostgreSQL casts the date to a timestamptz
/// (its midnight in the session's zone), so the result is one.
fn truncated_date_is_instant(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    match e {
        Expr::ScalarFunction(mut f) if f.func.name() == "date_trunc" && f.args.len() == 2 => match &f.args[1] {
            Expr::Cast(c)
                if matches!(c.field.data_type(), DataType::Timestamp(_, None))
                    && c.expr.get_type(schema as &dyn ExprSchema).ok() == Some(DataType::Date32) =>
            {
                let date = c.expr.as_ref().clone();
                f.args[1] =
                    Expr::Cast(Cast::new(Box::new(date), crate::values::types::SqlType::TimestampTz.arrow_type()));
                Ok(Transformed::yes(Expr::ScalarFunction(f)))
            }
            _ => Ok(Transformed::no(Expr::ScalarFunction(f))),
        },
        other => Ok(Transformed::no(other)),
    }
}

/// `date_bin`'s origin in nanoseconds, the only unit DataFusion's takes
/// there (the value binned keeps its own).
fn nanosecond_origin(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    match e {
        Expr::ScalarFunction(mut f) if f.func.name() == "date_bin" && f.args.len() == 3 => {
            check_stride(&f.args[0])?;
            match f.args[2].get_type(schema as &dyn ExprSchema) {
                Ok(DataType::Timestamp(TimeUnit::Microsecond, tz)) => {
                    let origin = f.args[2].clone();
                    f.args[2] = Expr::Cast(Cast::new(Box::new(origin), DataType::Timestamp(TimeUnit::Nanosecond, tz)));
                    Ok(Transformed::yes(Expr::ScalarFunction(f)))
                }
                _ => Ok(Transformed::no(Expr::ScalarFunction(f))),
            }
        }
        other => Ok(Transformed::no(other)),
    }
}

/// A cast to a timestamp in microseconds (DataFusion's coercion casts
/// text, dates and timestamps it compares to nanoseconds), and text read
/// with `timestamp_in`.
fn in_microseconds(e: Expr, schema: &DFSchema, zone: &str) -> Result<Transformed<Expr>> {
    let Expr::Cast(mut c) = e else { return Ok(Transformed::no(e)) };
    let DataType::Timestamp(unit, tz) = c.field.data_type().clone() else {
        return Ok(Transformed::no(Expr::Cast(c)));
    };
    let from = c.expr.get_type(schema as &dyn ExprSchema).ok();
    if !matches!(from, Some(DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)) {
        if unit != TimeUnit::Nanosecond {
            return Ok(Transformed::no(Expr::Cast(c)));
        }
        let micros = DataType::Timestamp(TimeUnit::Microsecond, tz);
        c.field = Arc::new(c.field.as_ref().clone().with_data_type(micros.clone()));
        return Ok(Transformed::yes(if from.as_ref() == Some(&micros) { *c.expr } else { Expr::Cast(c) }));
    }
    let target = match unit {
        TimeUnit::Nanosecond => DataType::Timestamp(TimeUnit::Microsecond, tz.clone()),
        _ => c.field.data_type().clone(),
    };
    let tz = &tz;
    let read = match tz {
        None => Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(text_to_timestamp()), vec![*c.expr])),
        Some(_) => crate::values::local_time::text_to_tstz(*c.expr, zone),
    };
    let micros = DataType::Timestamp(TimeUnit::Microsecond, tz.clone());
    Ok(Transformed::yes(if target == micros { read } else { Expr::Cast(Cast::new(Box::new(read), target)) }))
}

/// DataFusion's `date_trunc`, which computes in nanoseconds and so fails
/// on a timestamp before 1677 or after 2262: such values are truncated
/// here (to the units PostgreSQL and DataFusion share), the rest by it;
/// `decade`, `century` and `millennium`, which DataFusion lacks, always
/// here.
/// It keeps its name, so the session time zone's rule still finds it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct WideDateTrunc {
    inner: Arc<ScalarUDF>,
}

/// The microseconds that nanoseconds in 64 bits reach, either side of 1970.
const NANOSECOND_REACH: i64 = i64::MAX / 1000;

impl ScalarUDFImpl for WideDateTrunc {
    fn name(&self) -> &str {
        "date_trunc"
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        self.inner.return_type(args)
    }

    fn return_field_from_args(&self, args: datafusion::logical_expr::ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let unit = match &args.args[0] {
            ColumnarValue::Scalar(ScalarValue::Utf8(Some(u)) | ScalarValue::Utf8View(Some(u))) => u.to_lowercase(),
            _ => return self.inner.invoke_with_args(args),
        };
        let DataType::Timestamp(TimeUnit::Microsecond, tz) = args.args[1].data_type() else {
            return self.inner.invoke_with_args(args);
        };
        let scalar = matches!(args.args[1], ColumnarValue::Scalar(_));
        let values = args.args[1].to_array(if scalar { 1 } else { args.number_rows })?;
        let micros = values.as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>();
        let wide = micros.iter().flatten().any(|v| !(-NANOSECOND_REACH..=NANOSECOND_REACH).contains(&v));
        let ours_only = matches!(unit.as_str(), "decade" | "century" | "millennium");
        if !(wide || ours_only) || truncate(&unit, 0).is_none() {
            return self.inner.invoke_with_args(args);
        }
        let out: TimestampMicrosecondArray = micros.iter().map(|v| v.and_then(|v| truncate(&unit, v))).collect();
        crate::values::udf_values::columnar(Arc::new(out.with_timezone_opt(tz)), scalar)
    }
}

/// `micros` truncated to `unit` as a UTC wall time; None for a unit not
/// handled here.
fn truncate(unit: &str, micros: i64) -> Option<i64> {
    use chrono::Datelike;
    const SECOND: i64 = 1_000_000;
    if crate::values::timestamp_in::is_infinite(micros) {
        return Some(micros);
    }
    let down = |step: i64| micros - micros.rem_euclid(step);
    let date = chrono::DateTime::from_timestamp_micros(micros)?.date_naive();
    let midnight = |d: chrono::NaiveDate| d.and_hms_opt(0, 0, 0).map(|t| t.and_utc().timestamp_micros());
    match unit {
        "microsecond" | "microseconds" => Some(micros),
        "millisecond" | "milliseconds" => Some(down(1000)),
        "second" => Some(down(SECOND)),
        "minute" => Some(down(60 * SECOND)),
        "hour" => Some(down(3600 * SECOND)),
        "day" => Some(down(86_400 * SECOND)),
        "week" => midnight(date - chrono::Days::new(u64::from(date.weekday().num_days_from_monday()))),
        "month" => midnight(date.with_day(1)?),
        "quarter" => midnight(chrono::NaiveDate::from_ymd_opt(date.year(), (date.month0() / 3) * 3 + 1, 1)?),
        "year" => midnight(chrono::NaiveDate::from_ymd_opt(date.year(), 1, 1)?),
        // PostgreSQL's first years of a decade, century and millennium
        // (its `timestamp_trunc`, on the astronomical year).
        "decade" | "century" | "millennium" => {
            let y = date.year();
            let first = match unit {
                "decade" if y > 0 => (y / 10) * 10,
                "decade" => -((8 - (y - 1)) / 10) * 10,
                "century" if y > 0 => ((y + 99) / 100) * 100 - 99,
                "century" => -((99 - (y - 1)) / 100) * 100 + 1,
                _ if y > 0 => ((y + 999) / 1000) * 1000 - 999,
                _ => -((999 - (y - 1)) / 1000) * 1000 + 1,
            };
            midnight(chrono::NaiveDate::from_ymd_opt(first, 1, 1)?)
        }
        _ => None,
    }
}
