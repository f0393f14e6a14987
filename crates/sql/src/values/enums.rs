//! Enum types in queries: casts to them, and their order.
//!
//! An enum value travels as its label (`user_types.rs`), so equality,
//! hashing and grouping are text's. Three things are not:
//! - a cast to an enum (`'happy'::mood`) must refuse a string that is not
//!   a label (22P02): [`rewrite_casts`] turns it, before planning, into
//!   `tessera_enum(text, oid)`, which checks and marks its result as the
//!   enum type; a cast to a domain becomes the base type's cast checked by
//!   the domain's constraints (`domains.rs`);
//! - order is the labels' declared order, not the alphabet's: the analyzer
//!   rule [`EnumOrder`] compares and sorts enum values by
//!   `tessera_enum_order(value, oid)`, the label's position (comparisons,
//!   BETWEEN, ORDER BY, window and aggregate orders);
//! - a string compared with an enum value is read as the enum's input
//!   (`mood = 'bogus'` is 22P02, as in PostgreSQL), by wrapping it in
//!   `tessera_enum`.
//!
//! `min` and `max` of enum values are `enum_aggregates.rs`'s. Where an
//! enum value would be ordered after passing through an expression that
//! DataFusion types as plain text (`coalesce`, `CASE`, `greatest`,
//! `least`), the statement is refused (0A000) rather than ordered
//! alphabetically.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int32Array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::expr::{ScalarFunction, Sort};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::sql::sqlparser::ast::{DataType as AstType, Expr as Ast, Statement, visit_expressions_mut};

use crate::error::SqlError;
use crate::values::types::{PG_TYPE_KEY, SqlType};
use crate::values::user_types::TypeDef;

/// Registers `tessera_enum`, `tessera_enum_order` and `tessera_domain_check`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(EnumInput { signature: Signature::any(2, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::new_from_impl(EnumOrderFn { signature: Signature::any(2, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::new_from_impl(DomainCheck { signature: Signature::any(4, Volatility::Immutable) }));
}

fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// PostgreSQL's types that Tessera has no `SqlType` for: casts to them
/// are left to the planner and the other rewrites (`regclass`, `oid`), or
/// refused there (0A000); any other unknown name is not a type (42704).
const POSTGRES_TYPES: &[&str] = &[
    "regclass",
    "regtype",
    "regproc",
    "regprocedure",
    "regoper",
    "regoperator",
    "regnamespace",
    "regrole",
    "regconfig",
    "oid",
    "xid",
    "xid8",
    "cid",
    "tid",
    "money",
    "point",
    "line",
    "lseg",
    "box",
    "path",
    "polygon",
    "circle",
    "inet",
    "cidr",
    "macaddr",
    "macaddr8",
    "xml",
    "tsvector",
    "tsquery",
    "bit",
    "varbit",
    "int4range",
    "int8range",
    "numrange",
    "tsrange",
    "tstzrange",
    "daterange",
    "pg_lsn",
    "txid_snapshot",
    "jsonpath",
    "timetz",
    "unknown",
    "record",
    "void",
    "anyelement",
    "anyarray",
    "cstring",
    "int2vector",
    "oidvector",
    "aclitem",
    "pg_node_tree",
    "refcursor",
];

/// Rewrites casts to the database's enum types and domains (see the
/// module's text). Statements naming no user type are left as they are.
pub fn rewrite_casts(
    stmt: &mut Statement,
    user_type: &dyn Fn(&str) -> Option<Arc<TypeDef>>,
) -> crate::error::Result<()> {
    let flow = visit_expressions_mut(stmt, |e| {
        let (operand, data_type) = match e {
            Ast::Cast { expr, data_type: data_type @ AstType::Custom(..), .. } => ((**expr).clone(), data_type.clone()),
            Ast::TypedString(ts) if matches!(ts.data_type, AstType::Custom(..)) => {
                (Ast::Value(ts.value.clone()), ts.data_type.clone())
            }
            _ => return std::ops::ControlFlow::Continue(()),
        };
        let name = data_type.to_string();
        if SqlType::parse(&name).is_ok() {
            return std::ops::ControlFlow::Continue(());
        }
        let key = crate::values::user_types::type_key(&name);
        let Some(t) = user_type(&key) else {
            if POSTGRES_TYPES.contains(&key.as_str()) || !key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                // DataFusion's planner, or another rewrite, answers for it.
                return std::ops::ControlFlow::Continue(());
            }
            let e = SqlError::new(crate::error::code::UNDEFINED_OBJECT, format!("type \"{key}\" does not exist"));
            return std::ops::ControlFlow::Break(e);
        };
        let new = match t.domain() {
            Some(d) => crate::values::domains::cast_expr(&t, d, &operand),
            None => crate::parser::parse_expr(&format!("tessera_enum(CAST(({operand}) AS TEXT), {})", t.oid)),
        };
        match new {
            Ok(new) => {
                *e = new;
                std::ops::ControlFlow::Continue(())
            }
            Err(err) => std::ops::ControlFlow::Break(err),
        }
    });
    match flow {
        std::ops::ControlFlow::Break(e) => Err(e),
        std::ops::ControlFlow::Continue(()) => Ok(()),
    }
}

/// The enum type OID argument of the functions here: a constant.
fn oid_arg(arg: Option<&ScalarValue>) -> Result<u32> {
    match arg {
        Some(ScalarValue::Int64(Some(n))) => u32::try_from(*n).ok(),
        Some(ScalarValue::Int32(Some(n))) => u32::try_from(*n).ok(),
        _ => None,
    }
    .ok_or_else(|| DataFusionError::Plan("an enum type's OID must be an integer constant".into()))
}

fn scalar_oid(args: &ScalarFunctionArgs) -> Result<u32> {
    match &args.args[1] {
        ColumnarValue::Scalar(s) => oid_arg(Some(s)),
        ColumnarValue::Array(_) => oid_arg(None),
    }
}

/// The first argument as text, and whether the call is on constants.
fn text_values(args: &ScalarFunctionArgs) -> Result<(ArrayRef, bool)> {
    let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
    let values = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
    Ok((datafusion::arrow::compute::cast(&values, &DataType::Utf8)?, scalar))
}

fn output(array: ArrayRef, scalar: bool) -> Result<ColumnarValue> {
    Ok(if scalar {
        ColumnarValue::Scalar(ScalarValue::try_from_array(&array, 0)?)
    } else {
        ColumnarValue::Array(array)
    })
}

/// `tessera_enum(text, oid)`: the enum input function.
#[derive(Debug, PartialEq, Eq, Hash)]
struct EnumInput {
    signature: Signature,
}

impl ScalarUDFImpl for EnumInput {
    fn name(&self) -> &str {
        "tessera_enum"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let oid = oid_arg(args.scalar_arguments.get(1).copied().flatten())?;
        let meta = HashMap::from([(PG_TYPE_KEY.to_string(), SqlType::Enum(oid).meta_name())]);
        let nullable = args.arg_fields.first().is_none_or(|f| f.is_nullable());
        Ok(Arc::new(Field::new(self.name(), DataType::Utf8, nullable).with_metadata(meta)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let oid = scalar_oid(&args)?;
        let (values, scalar) = text_values(&args)?;
        crate::values::user_types::check_labels(oid, &values).map_err(external)?;
        output(values, scalar)
    }
}

/// `tessera_enum_order(value, oid)`: the label's position in its type.
#[derive(Debug, PartialEq, Eq, Hash)]
struct EnumOrderFn {
    signature: Signature,
}

impl ScalarUDFImpl for EnumOrderFn {
    fn name(&self) -> &str {
        "tessera_enum_order"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let t = crate::values::user_types::require_enum(scalar_oid(&args)?).map_err(external)?;
        let (values, scalar) = text_values(&args)?;
        let positions: Int32Array = values
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(|v| t.require(v).map(|p| p as i32)).transpose())
            .collect::<crate::error::Result<_>>()
            .map_err(external)?;
        output(Arc::new(positions), scalar)
    }
}

/// `tessera_domain_check(value, ok, domain, constraint)`: the value, or
/// the domain's error where `ok` is false (a NOT NULL when `constraint`
/// is empty).
#[derive(Debug, PartialEq, Eq, Hash)]
struct DomainCheck {
    signature: Signature,
}

impl ScalarUDFImpl for DomainCheck {
    fn name(&self) -> &str {
        "tessera_domain_check"
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
        let text = |i: usize| match &args.args[i] {
            ColumnarValue::Scalar(ScalarValue::Utf8(Some(s))) => Ok(s.clone()),
            _ => Err(DataFusionError::Plan("tessera_domain_check takes constant names".into())),
        };
        let (domain, constraint) = (text(2)?, text(3)?);
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let ok = args.args[1].to_array(if scalar { 1 } else { args.number_rows })?;
        let failed = match ok.as_boolean_opt() {
            Some(b) => b.iter().any(|v| v == Some(false)),
            None => ok.data_type() != &DataType::Null,
        };
        if failed {
            let t = TypeDef {
                oid: 0,
                db: String::new(),
                name: domain,
                body: crate::values::user_types::TypeKind::Enum { labels: vec![] },
            };
            return Err(external(if constraint.is_empty() {
                crate::values::domains::null_error(&t)
            } else {
                crate::values::domains::check_error(&t, &constraint)
            }));
        }
        Ok(args.args[0].clone())
    }
}

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct EnumOrder;

impl datafusion::optimizer::AnalyzerRule for EnumOrder {
    fn name(&self) -> &str {
        "tessera_enum_order"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &datafusion::common::config::ConfigOptions) -> Result<LogicalPlan> {
        let changed = std::cell::Cell::new(false);
        let plan = crate::values::exact_casts::rewrite_expressions(plan, |e, schema| {
            let t = order_expression(e, schema)?;
            changed.set(changed.get() || t.transformed);
            Ok(t)
        })?;
        let changed = changed.get();
        plan.transform_up_with_subqueries(|node| {
            // Schemas again, bottom up: an enum's min or max now says it
            // is the enum type, for the sorts above it.
            let node = if changed { node.recompute_schema()? } else { node };
            let LogicalPlan::Sort(mut sort) = node else { return Ok(Transformed::new_transformed(node, changed)) };
            let schema = sort.input.schema().clone();
            let changed = order_sort_keys(&mut sort.expr, &schema)?;
            Ok(Transformed::new_transformed(LogicalPlan::Sort(sort), changed))
        })
        .data()
    }
}

/// The enum type of `e`'s values, if it is one. A cast's result is the
/// cast's type (DataFusion keeps a column's metadata through it).
fn enum_of(e: &Expr, schema: &DFSchema) -> Result<Option<u32>> {
    if matches!(e, Expr::Cast(_) | Expr::TryCast(_)) {
        return Ok(None);
    }
    if let Expr::Alias(a) = e {
        return enum_of(&a.expr, schema);
    }
    let (_, field) = e.to_field(schema)?;
    Ok(match SqlType::of_field(&field) {
        SqlType::Enum(oid) => Some(oid),
        _ => None,
    })
}

/// Refuses ordering `e` when it hides an enum value inside an expression
/// typed as text (see the module's text).
fn refuse_hidden_enum(e: &Expr, schema: &DFSchema) -> Result<()> {
    let inner: Vec<&Expr> = match e {
        Expr::Case(c) => c.when_then_expr.iter().map(|(_, t)| t.as_ref()).chain(c.else_expr.as_deref()).collect(),
        Expr::ScalarFunction(f) if matches!(f.func.name(), "coalesce" | "nullif" | "greatest" | "least") => {
            f.args.iter().collect()
        }
        _ => return Ok(()),
    };
    for x in inner {
        if enum_of(x, schema)?.is_some() {
            return Err(external(
                SqlError::unsupported(format!("ordering enum values through {e}"))
                    .with_hint("Cast the result to the enum type."),
            ));
        }
    }
    Ok(())
}

fn order_of(e: Expr, oid: u32) -> Expr {
    let f = Arc::new(ScalarUDF::new_from_impl(EnumOrderFn { signature: Signature::any(2, Volatility::Immutable) }));
    Expr::ScalarFunction(ScalarFunction::new_udf(f, vec![e, Expr::Literal(ScalarValue::Int64(Some(oid.into())), None)]))
}

fn input_of(e: Expr, oid: u32) -> Expr {
    let f = Arc::new(ScalarUDF::new_from_impl(EnumInput { signature: Signature::any(2, Volatility::Immutable) }));
    Expr::ScalarFunction(ScalarFunction::new_udf(f, vec![e, Expr::Literal(ScalarValue::Int64(Some(oid.into())), None)]))
}

/// Orders the enum-typed keys of `keys` by their labels' positions.
fn order_sort_keys(keys: &mut [Sort], schema: &DFSchema) -> Result<bool> {
    let mut changed = false;
    for k in keys.iter_mut() {
        refuse_hidden_enum(&k.expr, schema)?;
        if let Some(oid) = enum_of(&k.expr, schema)? {
            k.expr = order_of(k.expr.clone(), oid);
            changed = true;
        }
    }
    Ok(changed)
}

/// The two operands' enum type; two different enum types do not compare.
fn common_enum(a: &Expr, b: &Expr, op: &str, schema: &DFSchema) -> Result<Option<u32>> {
    match (enum_of(a, schema)?, enum_of(b, schema)?) {
        (Some(x), Some(y)) if x != y => Err(external(SqlError::new(
            crate::error::code::UNDEFINED_FUNCTION,
            format!("operator does not exist: {} {op} {}", SqlType::Enum(x).name(), SqlType::Enum(y).name()),
        ))),
        (x, y) => Ok(x.or(y)),
    }
}

fn order_expression(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    match e {
        Expr::BinaryExpr(mut b) => {
            let ordering = matches!(b.op, Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq);
            let equality =
                matches!(b.op, Operator::Eq | Operator::NotEq | Operator::IsDistinctFrom | Operator::IsNotDistinctFrom);
            if !(ordering || equality) {
                return Ok(Transformed::no(Expr::BinaryExpr(b)));
            }
            if ordering {
                refuse_hidden_enum(&b.left, schema)?;
                refuse_hidden_enum(&b.right, schema)?;
            }
            let Some(oid) = common_enum(&b.left, &b.right, &b.op.to_string(), schema)? else {
                return Ok(Transformed::no(Expr::BinaryExpr(b)));
            };
            if ordering {
                b.left = Box::new(order_of(*b.left, oid));
                b.right = Box::new(order_of(*b.right, oid));
            } else if enum_of(&b.left, schema)?.is_none() {
                b.left = Box::new(input_of(*b.left, oid));
            } else if enum_of(&b.right, schema)?.is_none() {
                b.right = Box::new(input_of(*b.right, oid));
            } else {
                return Ok(Transformed::no(Expr::BinaryExpr(b)));
            }
            Ok(Transformed::yes(Expr::BinaryExpr(b)))
        }
        Expr::Between(mut b) => {
            let oid = match common_enum(&b.expr, &b.low, "BETWEEN", schema)? {
                Some(oid) => Some(oid),
                None => common_enum(&b.expr, &b.high, "BETWEEN", schema)?,
            };
            let Some(oid) = oid else { return Ok(Transformed::no(Expr::Between(b))) };
            b.expr = Box::new(order_of(*b.expr, oid));
            b.low = Box::new(order_of(*b.low, oid));
            b.high = Box::new(order_of(*b.high, oid));
            Ok(Transformed::yes(Expr::Between(b)))
        }
        Expr::InList(mut list) => {
            let Some(oid) = enum_of(&list.expr, schema)? else { return Ok(Transformed::no(Expr::InList(list))) };
            let mut changed = false;
            for item in list.list.iter_mut() {
                if enum_of(item, schema)?.is_none() {
                    *item = input_of(item.clone(), oid);
                    changed = true;
                }
            }
            Ok(Transformed::new_transformed(Expr::InList(list), changed))
        }
        Expr::ScalarFunction(ref f) if matches!(f.func.name(), "greatest" | "least") => {
            refuse_hidden_enum(&e, schema)?;
            Ok(Transformed::no(e))
        }
        Expr::WindowFunction(mut w) => {
            let changed = order_sort_keys(&mut w.params.order_by, schema)?;
            Ok(Transformed::new_transformed(Expr::WindowFunction(w), changed))
        }
        Expr::AggregateFunction(mut a) => {
            let mut changed = false;
            if matches!(a.func.name(), "min" | "max")
                && let Some(arg) = a.params.args.first()
                && let Some(oid) = enum_of(arg, schema)?
            {
                a.func = crate::values::enum_aggregates::extreme(oid, a.func.name() == "max");
                changed = true;
            }
            changed |= order_sort_keys(&mut a.params.order_by, schema)?;
            Ok(Transformed::new_transformed(Expr::AggregateFunction(a), changed))
        }
        other => Ok(Transformed::no(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::StringArray;

    #[test]
    fn labels_order_by_position() {
        crate::values::user_types::publish_enum(999_101, "size", &["small".into(), "medium".into(), "large".into()]);
        let values: ArrayRef = Arc::new(StringArray::from(vec![Some("large"), None, Some("small")]));
        let f = EnumOrderFn { signature: Signature::any(2, Volatility::Immutable) };
        let args = ScalarFunctionArgs {
            args: vec![ColumnarValue::Array(values), ColumnarValue::Scalar(ScalarValue::Int64(Some(999_101)))],
            arg_fields: vec![
                Arc::new(Field::new("a", DataType::Utf8, true)),
                Arc::new(Field::new("b", DataType::Int64, false)),
            ],
            number_rows: 3,
            return_field: Arc::new(Field::new("r", DataType::Int32, true)),
            config_options: Arc::new(Default::default()),
        };
        let ColumnarValue::Array(out) = f.invoke_with_args(args).unwrap() else { panic!("an array") };
        let out = out.as_primitive::<datafusion::arrow::datatypes::Int32Type>();
        assert_eq!(out.iter().collect::<Vec<_>>(), vec![Some(2), None, Some(0)]);
    }
}
