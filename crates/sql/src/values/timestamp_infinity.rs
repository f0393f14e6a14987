//! What PostgreSQL's timestamp functions answer for `infinity` and
//! `-infinity`, which DataFusion's would compute as ordinary instants
//! (the extreme 64-bit values `timestamp_in` gives them) and answer
//! nonsense: `date_trunc('day', 'infinity')` printed a number and
//! `extract(epoch …)` a finite count of seconds.
//!
//! `isfinite(x)` answers whether a timestamp is neither infinity.
//!
//! Called by the `timestamp_units` rule (after type coercion) for each
//! expression, [`guard`] rewrites, for a timestamp `x`:
//! - `date_trunc(u, x)` and `date_bin(s, x, o)` to `x` itself when it is
//!   infinite, as PostgreSQL keeps it;
//! - `x ± interval` likewise;
//! - `date_part(f, x)` (which `extract` becomes) to PostgreSQL's answer:
//!   ±Infinity for `epoch`, `julian` and the year fields when the result
//!   is a float, NULL for the other fields; a year field whose result is
//!   an integer cannot hold Infinity and is refused (0A000);
//! - `to_char(x, …)` to NULL;
//! - `x - y` of two timestamps to PostgreSQL's error when either is
//!   infinite ("cannot subtract infinite timestamps");
//!
//! A cast of an infinite `x` to a date or from `timestamp` to
//! `timestamptz` is still refused (by Arrow's cast) where PostgreSQL
//! keeps the infinity: dates have no infinity in Tessera yet.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, BooleanArray};
use datafusion::arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DataFusionError, ExprSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::{Case, ScalarFunction};
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, Operator, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use crate::error::{SqlError, code};
use crate::values::timestamp_in::{NEG_INFINITY, is_infinite};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// `tessera_timestamp_is_infinite(x)`: whether `x` is ±infinity.
    IsInfinite,
    /// `isfinite(x)`: PostgreSQL's, of a timestamp, a date or an interval
    /// (the last two always finite in Tessera).
    IsFinite,
    /// `tessera_finite_timestamp(x, message)`: `x`, or 22008 with the message.
    Finite,
    /// `tessera_infinite_part(field, x, typed NULL)`: `date_part`'s answer
    /// for an infinite `x`, of the NULL's type.
    InfinitePart,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct InfinityFn {
    kind: Kind,
    signature: Signature,
}

fn udf(kind: Kind) -> ScalarUDF {
    let arity = match kind {
        Kind::IsInfinite | Kind::IsFinite => 1,
        Kind::Finite => 2,
        Kind::InfinitePart => 3,
    };
    ScalarUDF::new_from_impl(InfinityFn { kind, signature: Signature::any(arity, Volatility::Immutable) })
}

/// Registers the functions [`guard`] calls.
pub fn register(ctx: &datafusion::execution::context::SessionContext) {
    for kind in [Kind::IsInfinite, Kind::IsFinite, Kind::Finite, Kind::InfinitePart] {
        ctx.register_udf(udf(kind));
    }
}

impl ScalarUDFImpl for InfinityFn {
    fn name(&self) -> &str {
        match self.kind {
            Kind::IsInfinite => "tessera_timestamp_is_infinite",
            Kind::IsFinite => "isfinite",
            Kind::Finite => "tessera_finite_timestamp",
            Kind::InfinitePart => "tessera_infinite_part",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::IsInfinite | Kind::IsFinite => DataType::Boolean,
            Kind::Finite => args[0].clone(),
            Kind::InfinitePart => args[2].clone(),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let x = match self.kind {
            Kind::InfinitePart => args.args[1].to_array(n)?,
            _ => args.args[0].to_array(n)?,
        };
        if self.kind == Kind::IsFinite && matches!(x.data_type(), DataType::Date32 | DataType::Interval(_)) {
            let out: BooleanArray = (0..x.len()).map(|i| (!x.is_null(i)).then_some(true)).collect();
            return crate::values::udf_values::columnar(Arc::new(out), scalar);
        }
        let micros = match x.data_type() {
            DataType::Timestamp(TimeUnit::Microsecond, _) => x.as_primitive::<TimestampMicrosecondType>().clone(),
            other if self.kind == Kind::IsFinite => {
                return Err(DataFusionError::External(Box::new(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function isfinite({other}) does not exist"),
                ))));
            }
            _ => return Err(DataFusionError::Internal(format!("{}: not a timestamp", self.name()))),
        };
        match self.kind {
            Kind::IsInfinite => {
                let out: BooleanArray = micros.iter().map(|v| v.map(is_infinite)).collect();
                crate::values::udf_values::columnar(Arc::new(out), scalar)
            }
            Kind::IsFinite => {
                let out: BooleanArray = micros.iter().map(|v| v.map(|v| !is_infinite(v))).collect();
                crate::values::udf_values::columnar(Arc::new(out), scalar)
            }
            Kind::Finite => {
                if micros.iter().flatten().any(is_infinite) {
                    let message = match &args.args[1] {
                        ColumnarValue::Scalar(ScalarValue::Utf8(Some(m))) => m.clone(),
                        _ => "timestamp out of range".to_string(),
                    };
                    return Err(DataFusionError::External(Box::new(SqlError::new(code::DATETIME_OVERFLOW, message))));
                }
                Ok(args.args[0].clone())
            }
            Kind::InfinitePart => {
                let field = match &args.args[0] {
                    ColumnarValue::Scalar(ScalarValue::Utf8(Some(f))) => f.to_ascii_lowercase(),
                    _ => String::new(),
                };
                let ty = args.return_field.data_type().clone();
                let infinite_field = matches!(
                    field.as_str(),
                    "epoch"
                        | "julian"
                        | "year"
                        | "years"
                        | "isoyear"
                        | "decade"
                        | "decades"
                        | "century"
                        | "centuries"
                        | "millennium"
                        | "millennia"
                );
                let cells = micros
                    .iter()
                    .map(|v| match v {
                        Some(v) if infinite_field => {
                            let inf = if v == NEG_INFINITY { f64::NEG_INFINITY } else { f64::INFINITY };
                            match ty {
                                DataType::Float64 => Ok(ScalarValue::Float64(Some(inf))),
                                _ => Err(DataFusionError::External(Box::new(SqlError::unsupported(format!(
                                    "date_part('{field}') of an infinite timestamp: Infinity, which its integer result \
                                     cannot hold"
                                ))))),
                            }
                        }
                        _ => ScalarValue::try_from(&ty),
                    })
                    .collect::<Result<Vec<_>>>()?;
                let out = ScalarValue::iter_to_array(cells)?;
                crate::values::udf_values::columnar(out, scalar)
            }
        }
    }
}

fn call(kind: Kind, args: Vec<Expr>) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(udf(kind)), args))
}

fn text(s: &str) -> Expr {
    Expr::Literal(ScalarValue::Utf8(Some(s.to_string())), None)
}

/// `CASE WHEN x is infinite THEN then ELSE otherwise END`.
fn when_infinite(x: Expr, then: Expr, otherwise: Expr) -> Expr {
    Expr::Case(Case::new(
        None,
        vec![(Box::new(call(Kind::IsInfinite, vec![x])), Box::new(then))],
        Some(Box::new(otherwise)),
    ))
}

fn is_micros(t: &Option<DataType>) -> bool {
    matches!(t, Some(DataType::Timestamp(TimeUnit::Microsecond, _)))
}

/// `e` with PostgreSQL's answers for infinite timestamps (see the module's text).
pub fn guard(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let type_of = |x: &Expr| x.get_type(schema as &dyn ExprSchema).ok();
    match e {
        Expr::ScalarFunction(f) => {
            let name = f.func.name().to_string();
            let at = match name.as_str() {
                "date_trunc" | "date_bin" | "date_part" => 1,
                "to_char" => 0,
                _ => return Ok(Transformed::no(Expr::ScalarFunction(f))),
            };
            let Some(x) = f.args.get(at).cloned().filter(|x| is_micros(&type_of(x))) else {
                return Ok(Transformed::no(Expr::ScalarFunction(f)));
            };
            let field = f.args[0].clone();
            let whole = Expr::ScalarFunction(f);
            let ty = whole.get_type(schema as &dyn ExprSchema)?;
            let null = Expr::Literal(ScalarValue::try_from(&ty)?, None);
            Ok(Transformed::yes(match name.as_str() {
                "date_part" => when_infinite(x.clone(), call(Kind::InfinitePart, vec![field, x, null]), whole),
                "to_char" => when_infinite(x, null, whole),
                _ => when_infinite(x.clone(), x, whole),
            }))
        }
        Expr::BinaryExpr(BinaryExpr { left, op: op @ (Operator::Plus | Operator::Minus), right }) => {
            let (lt, rt) = (type_of(&left), type_of(&right));
            let interval = |t: &Option<DataType>| matches!(t, Some(DataType::Interval(_)));
            if is_micros(&lt) && is_micros(&rt) && op == Operator::Minus {
                let message = text("cannot subtract infinite timestamps");
                let (l, r) =
                    (call(Kind::Finite, vec![*left, message.clone()]), call(Kind::Finite, vec![*right, message]));
                return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(Box::new(l), op, Box::new(r)))));
            }
            let ts = if is_micros(&lt) && interval(&rt) {
                Some(left.as_ref().clone())
            } else if interval(&lt) && is_micros(&rt) && op == Operator::Plus {
                Some(right.as_ref().clone())
            } else {
                None
            };
            let whole = Expr::BinaryExpr(BinaryExpr { left, op, right });
            Ok(match ts {
                Some(ts) => Transformed::yes(when_infinite(ts.clone(), ts, whole)),
                None => Transformed::no(whole),
            })
        }
        other => Ok(Transformed::no(other)),
    }
}
