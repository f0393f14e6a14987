//! Array functions under PostgreSQL's names with PostgreSQL's meaning.
//!
//! DataFusion's `array_remove` and `array_replace` act on the first
//! matching element only; PostgreSQL's on every one (`array_remove(ARRAY[1,
//! 2, 2, 3], 2)` is `{1,3}`), which DataFusion calls `array_remove_all` and
//! `array_replace_all`. The PostgreSQL names are registered here as those.
//! `array_remove(a, NULL)` removes the NULL elements, as PostgreSQL's does
//! (DataFusion's answers NULL).
//!
//! An empty array has no dimensions in PostgreSQL: `array_length('{}', 1)`,
//! `array_ndims`, `array_dims`, `array_lower` and `array_upper` of it are
//! NULL (DataFusion answers 0), as is a dimension other than the first of
//! Tessera's one-dimensional arrays; the lengths are `integer`. Those five
//! are Tessera's own ([`Dimension`]).
//!
//! `x op ANY (array)` is three-valued in PostgreSQL: true if some element
//! compares true, else NULL if an element (or `x`) is NULL, else false
//! (false for an empty array). DataFusion's `= ANY` ignores NULL elements
//! and its `< ANY` compares with the bounds it finds, so
//! [`rewrite_any`] makes such comparisons `tessera_any(x, array, 'op')`
//! ([`AnyOp`]), except against a parameter (`op ANY($1)`), whose type only
//! DataFusion's own planning infers: there the analyzer rule
//! [`AnyParameters`] replaces the `array_has` that DataFusion plans for
//! `= ANY($1)` once types are known (the other operators against a
//! parameter keep DataFusion's reading, where a NULL element counts as no
//! match).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int32Array, StringArray};
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::Result;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// Registers `array_remove` and `array_replace`.
pub fn register(ctx: &SessionContext) {
    use datafusion::functions_nested::{remove::array_remove_all_udf, replace::array_replace_all_udf};
    ctx.register_udf(ScalarUDF::new_from_impl(Renamed { name: "array_remove", inner: array_remove_all_udf() }));
    ctx.register_udf(ScalarUDF::new_from_impl(Renamed { name: "array_replace", inner: array_replace_all_udf() }));
    ctx.register_udf(ScalarUDF::new_from_impl(AnyOp { signature: Signature::user_defined(Volatility::Immutable) }));
    for kind in [Kind::Length, Kind::Ndims, Kind::Dims, Kind::Lower, Kind::Upper] {
        let args = if matches!(kind, Kind::Ndims | Kind::Dims) { 1 } else { 2 };
        let signature = Signature::any(args, Volatility::Immutable);
        ctx.register_udf(ScalarUDF::new_from_impl(Dimension { kind, signature }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Length,
    Ndims,
    Dims,
    Lower,
    Upper,
}

/// `array_length(a, d)`, `array_ndims(a)`, `array_dims(a)`,
/// `array_lower(a, d)`, `array_upper(a, d)` as PostgreSQL answers them.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Dimension {
    kind: Kind,
    signature: Signature,
}

/// An array's length in each dimension (see [`Dimension`]).
fn dimensions(values: ArrayRef) -> Vec<usize> {
    let mut out = vec![values.len()];
    let mut level = values;
    while let DataType::List(_) = level.data_type() {
        let inner = level.as_list::<i32>();
        if inner.is_empty() || inner.is_null(0) {
            break;
        }
        level = inner.value(0);
        out.push(level.len());
    }
    out
}

impl ScalarUDFImpl for Dimension {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Length => "array_length",
            Kind::Ndims => "array_ndims",
            Kind::Dims => "array_dims",
            Kind::Lower => "array_lower",
            Kind::Upper => "array_upper",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(if self.kind == Kind::Dims { DataType::Utf8 } else { DataType::Int32 })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let lists = args.args[0].to_array(n)?;
        // Each row's lengths per dimension: the outer list's, then its
        // first element's, … (an expression can nest lists,
        // `ARRAY[[1,2],[3,4]]`; PostgreSQL's arrays are rectangular).
        let lengths: Vec<Option<Vec<usize>>> = match lists.data_type() {
            DataType::List(_) => {
                let l = lists.as_list::<i32>();
                (0..n).map(|i| (!l.is_null(i)).then(|| dimensions(l.value(i)))).collect()
            }
            DataType::Null => vec![None; n],
            other => {
                return Err(datafusion::common::DataFusionError::Plan(format!(
                    "function {}({other}) does not exist",
                    self.name()
                )));
            }
        };
        let dims: Vec<Option<i64>> = match args.args.get(1) {
            Some(d) => {
                let d = datafusion::arrow::compute::cast(&d.to_array(n)?, &DataType::Int64)?;
                d.as_primitive::<datafusion::arrow::datatypes::Int64Type>().iter().collect()
            }
            None => vec![Some(1); n],
        };
        // An empty array has no dimensions; nor has any array a dimension
        // beyond its own.
        let shape = |i: usize| lengths[i].as_ref().filter(|l| l.first().is_some_and(|n| *n > 0));
        let length = |i: usize| {
            let d = usize::try_from(dims[i]?).ok()?.checked_sub(1)?;
            shape(i)?.get(d).copied()
        };
        let out: ArrayRef = match self.kind {
            Kind::Dims => Arc::new(
                (0..n)
                    .map(|i| shape(i).map(|l| l.iter().map(|len| format!("[1:{len}]")).collect::<String>()))
                    .collect::<StringArray>(),
            ),
            Kind::Ndims => Arc::new((0..n).map(|i| shape(i).map(|l| l.len() as i32)).collect::<Int32Array>()),
            Kind::Lower => Arc::new((0..n).map(|i| length(i).map(|_| 1)).collect::<Int32Array>()),
            Kind::Length | Kind::Upper => Arc::new((0..n).map(|i| length(i).map(|l| l as i32)).collect::<Int32Array>()),
        };
        crate::values::udf_values::columnar(out, scalar)
    }
}

/// `inner` under another name.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Renamed {
    name: &'static str,
    inner: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for Renamed {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        self.inner.return_type(args)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match &args.args[..] {
            [lists, ColumnarValue::Scalar(e)] if self.name == "array_remove" && e.is_null() => without_nulls(lists),
            _ => self.inner.invoke_with_args(args),
        }
    }
}

/// `array_remove(a, NULL)`: each array without its NULL elements.
fn without_nulls(lists: &ColumnarValue) -> Result<ColumnarValue> {
    use datafusion::common::ScalarValue;
    let scalar = matches!(lists, ColumnarValue::Scalar(_));
    let array = lists.to_array(1)?;
    let DataType::List(field) = array.data_type() else { return Ok(lists.clone()) };
    let l = array.as_list::<i32>();
    let mut out = Vec::with_capacity(l.len());
    for i in 0..l.len() {
        if l.is_null(i) {
            out.push(ScalarValue::try_from(array.data_type())?);
            continue;
        }
        let values = l.value(i);
        let kept = datafusion::arrow::compute::filter(&values, &datafusion::arrow::compute::is_not_null(&values)?)?;
        let cells = (0..kept.len()).map(|j| ScalarValue::try_from_array(&kept, j)).collect::<Result<Vec<_>>>()?;
        out.push(ScalarValue::List(ScalarValue::new_list_nullable(&cells, field.data_type())));
    }
    let result = ScalarValue::iter_to_array(out)?;
    crate::values::udf_values::columnar(result, scalar)
}

/// Rewrites `x op ANY (array)` (not a subquery, not a parameter) into
/// `tessera_any` (see the module's text).
pub fn rewrite_any(e: &mut datafusion::sql::sqlparser::ast::Expr) {
    use datafusion::sql::sqlparser::ast::{BinaryOperator as B, Expr, Value};
    let Expr::AnyOp { left, compare_op, right, .. } = e else { return };
    let op = match compare_op {
        B::Eq => "=",
        B::NotEq => "<>",
        B::Lt => "<",
        B::LtEq => "<=",
        B::Gt => ">",
        B::GtEq => ">=",
        _ => return,
    };
    let parameter = |x: &Expr| matches!(x, Expr::Value(v) if matches!(v.value, Value::Placeholder(_)));
    let under_cast = match right.as_ref() {
        Expr::Cast { expr, .. } => parameter(expr),
        _ => false,
    };
    if matches!(right.as_ref(), Expr::Subquery(_)) || parameter(right) || under_cast {
        return;
    }
    // A quoted array (`x = ANY ('{1,2,3}')`) is read as an array of x's type.
    let quoted = matches!(right.as_ref(), Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)))
        || matches!(right.as_ref(), Expr::Nested(inner)
            if matches!(inner.as_ref(), Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_))));
    let right = if quoted { format!("tessera_array_like({left}, {right})") } else { right.to_string() };
    if let Ok(new) = crate::parser::parse_expr(&format!("tessera_any({left}, {right}, '{op}')")) {
        *e = new;
    }
}

/// `tessera_any(x, array, op)`: PostgreSQL's `x op ANY (array)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct AnyOp {
    signature: Signature,
}

impl ScalarUDFImpl for AnyOp {
    fn name(&self) -> &str {
        "tessera_any"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        use datafusion::logical_expr::type_coercion::binary::comparison_coercion;
        let [x, list, op] = args else {
            return datafusion::common::plan_err!("tessera_any takes a value, an array and an operator");
        };
        let elem = match list {
            DataType::List(f) | DataType::LargeList(f) => f.data_type().clone(),
            DataType::Null => x.clone(),
            other => return datafusion::common::plan_err!("op ANY/SOME (array) requires an array, not {other}"),
        };
        let common = comparison_coercion(x, &elem).ok_or_else(|| {
            datafusion::common::DataFusionError::Plan(format!("operator does not exist: {x} = {elem}"))
        })?;
        let list = DataType::List(Arc::new(datafusion::arrow::datatypes::Field::new("item", common.clone(), true)));
        Ok(vec![common, list, op.clone()])
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::array::{BooleanArray, Scalar};
        use datafusion::arrow::compute::kernels::cmp;
        let op = match &args.args[2] {
            ColumnarValue::Scalar(datafusion::common::ScalarValue::Utf8(Some(op))) => op.clone(),
            _ => return datafusion::common::plan_err!("tessera_any takes a constant operator"),
        };
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let (xs, lists) = (args.args[0].to_array(n)?, args.args[1].to_array(n)?);
        let lists = lists.as_list::<i32>();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            if lists.is_null(i) {
                out.push(None);
                continue;
            }
            let elems = lists.value(i);
            if elems.is_empty() {
                out.push(Some(false));
                continue;
            }
            if xs.is_null(i) {
                out.push(None);
                continue;
            }
            let x = Scalar::new(xs.slice(i, 1));
            let hits: BooleanArray = if elems.data_type().is_nested() {
                // Rows and arrays compare field by field (Arrow's kernels
                // take flat values only).
                nested_hits(&elems, &xs.slice(i, 1), &op)?
            } else {
                match op.as_str() {
                    "=" => cmp::eq(&elems, &x)?,
                    "<>" => cmp::neq(&elems, &x)?,
                    // `x < elem` is `elem > x`.
                    "<" => cmp::gt(&elems, &x)?,
                    "<=" => cmp::gt_eq(&elems, &x)?,
                    ">" => cmp::lt(&elems, &x)?,
                    ">=" => cmp::lt_eq(&elems, &x)?,
                    other => return datafusion::common::plan_err!("tessera_any: unknown operator {other}"),
                }
            };
            out.push(if hits.true_count() > 0 {
                Some(true)
            } else if hits.null_count() > 0 {
                None
            } else {
                Some(false)
            });
        }
        let out: ArrayRef = Arc::new(BooleanArray::from(out));
        crate::values::udf_values::columnar(out, scalar)
    }
}

/// `elem op x` for each element of a nested type (NULL for a NULL element).
fn nested_hits(elems: &ArrayRef, x: &ArrayRef, op: &str) -> Result<datafusion::arrow::array::BooleanArray> {
    use std::cmp::Ordering;
    let cmp = datafusion::arrow::array::make_comparator(elems.as_ref(), x.as_ref(), Default::default())?;
    Ok((0..elems.len())
        .map(|k| {
            if elems.is_null(k) {
                return None;
            }
            let o = cmp(k, 0);
            // `x op elem`, so the element is on the right of `op`.
            Some(match op {
                "=" => o == Ordering::Equal,
                "<>" => o != Ordering::Equal,
                "<" => o == Ordering::Greater,
                "<=" => o != Ordering::Less,
                ">" => o == Ordering::Less,
                _ => o != Ordering::Greater,
            })
        })
        .collect())
}

/// `a @> b` of arrays, row by row: whether every element of `b` equals
/// some element of `a` (a NULL element equals nothing; an empty `b` is
/// contained in anything), NULL where either array is NULL.
pub fn contains(a: &ArrayRef, b: &ArrayRef) -> Result<datafusion::arrow::array::BooleanArray> {
    use datafusion::arrow::array::{BooleanArray, Scalar};
    use datafusion::arrow::compute::kernels::cmp;
    let (la, lb) = (a.as_list::<i32>(), b.as_list::<i32>());
    let common =
        datafusion::logical_expr::type_coercion::binary::comparison_coercion(&la.value_type(), &lb.value_type())
            .ok_or_else(|| {
                datafusion::common::DataFusionError::Plan(format!(
                    "operator does not exist: {} @> {}",
                    a.data_type(),
                    b.data_type()
                ))
            })?;
    let mut out = Vec::with_capacity(la.len());
    for i in 0..la.len() {
        if la.is_null(i) || lb.is_null(i) {
            out.push(None);
            continue;
        }
        let haystack = datafusion::arrow::compute::cast(&la.value(i), &common)?;
        let needles = datafusion::arrow::compute::cast(&lb.value(i), &common)?;
        let mut all = true;
        for k in 0..needles.len() {
            let found = !needles.is_null(k) && cmp::eq(&haystack, &Scalar::new(needles.slice(k, 1)))?.true_count() > 0;
            if !found {
                all = false;
                break;
            }
        }
        out.push(Some(all));
    }
    Ok(BooleanArray::from(out))
}

/// `= ANY($1)` as PostgreSQL answers it (see the module's text): after
/// type coercion, DataFusion's `array_has(array, x)` becomes
/// `tessera_any(x, array, '=')`. (PostgreSQL has no `array_has`, so every
/// call of it here came from an `= ANY`.)
#[derive(Debug)]
pub struct AnyParameters;

impl datafusion::optimizer::AnalyzerRule for AnyParameters {
    fn name(&self) -> &str {
        "tessera_any_parameters"
    }

    fn analyze(
        &self,
        plan: datafusion::logical_expr::LogicalPlan,
        _config: &datafusion::common::config::ConfigOptions,
    ) -> Result<datafusion::logical_expr::LogicalPlan> {
        crate::values::exact_casts::rewrite_expressions(plan, |e, _schema| {
            use datafusion::common::tree_node::Transformed;
            use datafusion::logical_expr::Expr;
            use datafusion::logical_expr::expr::ScalarFunction;
            let Expr::ScalarFunction(f) = &e else { return Ok(Transformed::no(e)) };
            if f.func.name() != "array_has" || f.args.len() != 2 {
                return Ok(Transformed::no(e));
            }
            let any =
                Arc::new(ScalarUDF::new_from_impl(AnyOp { signature: Signature::user_defined(Volatility::Immutable) }));
            let op = Expr::Literal(datafusion::common::ScalarValue::Utf8(Some("=".into())), None);
            let args = vec![f.args[1].clone(), f.args[0].clone(), op];
            Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(any, args))))
        })
    }
}
