//! `json` and `jsonb`: PostgreSQL's operators and common functions.
//!
//! Values of both types travel as text (jsonb in its canonical form, see
//! `text::enforce_text_type`), marked by their field's SQL type. DataFusion
//! knows no JSON operators, and would read `jsonb || jsonb` as a string
//! concatenation, a silent wrong answer. So:
//! - before planning ([`rewrite`]), `a -> k`, `a ->> k`, `a #> path`, `a
//!   #>> path`, `a @> b`, `a <@ b` and `a ? k` become calls of
//!   `tessera_json_get`, `…_get_text`, `…_path`, `…_path_text`,
//!   `…_contains` and `…_has_key`, computed with `serde_json`;
//! - after type coercion, `a || b` where either side is json or jsonb
//!   becomes `tessera_jsonb_concat` (the analyzer rule [`JsonConcat`]);
//! - `jsonb_build_object`/`json_build_object`, `jsonb_build_array`/
//!   `json_build_array`, `to_jsonb`/`to_json`, `jsonb_typeof`/
//!   `json_typeof`, `jsonb_array_length`/`json_array_length` and
//!   `jsonb_set` are Tessera's functions.
//!
//! What they return is jsonb (canonical text) except `->>`/`#>>` (text)
//! and the `json_` builders (json, in PostgreSQL's `{"k" : v}` form).
//! `?|`, `?&`, the aggregates and the set-returning functions are in
//! `json_sets`; `jsonb_each` and JSON path are not built yet (42883). Numbers are kept exactly, with the scale they were written
//! with (`text::json_number`); `=` between jsonb values and `@>` compare
//! numbers by value (`1.0` equals `1`).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, Int32Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DataFusionError, ExprSchema, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use serde_json::Value;

use crate::error::{SqlError, code};
use crate::values::types::PG_TYPE_KEY;

/// What a function computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Get,
    GetText,
    Path,
    PathText,
    Contains,
    HasKey,
    Equal,
    Concat,
    BuildObject(bool),
    BuildArray(bool),
    To(bool),
    TypeOf,
    ArrayLength,
    Set,
}

const FUNCTIONS: &[(&str, Op)] = &[
    ("tessera_json_get", Op::Get),
    ("tessera_json_get_text", Op::GetText),
    ("tessera_json_path", Op::Path),
    ("tessera_json_path_text", Op::PathText),
    ("tessera_json_contains", Op::Contains),
    ("tessera_json_has_key", Op::HasKey),
    ("tessera_jsonb_equal", Op::Equal),
    ("tessera_jsonb_concat", Op::Concat),
    ("jsonb_build_object", Op::BuildObject(true)),
    ("json_build_object", Op::BuildObject(false)),
    ("jsonb_build_array", Op::BuildArray(true)),
    ("json_build_array", Op::BuildArray(false)),
    ("to_jsonb", Op::To(true)),
    ("to_json", Op::To(false)),
    ("jsonb_typeof", Op::TypeOf),
    ("json_typeof", Op::TypeOf),
    ("jsonb_array_length", Op::ArrayLength),
    ("json_array_length", Op::ArrayLength),
    ("jsonb_set", Op::Set),
];

/// Registers the functions (see the module's text).
pub fn register(ctx: &SessionContext) {
    for (name, op) in FUNCTIONS {
        ctx.register_udf(udf(name, *op));
    }
}

/// `tessera_json_get(doc, key | index)`: `->`.
pub(crate) fn get_udf() -> ScalarUDF {
    udf("tessera_json_get", Op::Get)
}

fn udf(name: &'static str, op: Op) -> ScalarUDF {
    ScalarUDF::new_from_impl(JsonFn { name, op, signature: Signature::variadic_any(Volatility::Immutable) })
}

/// Rewrites a JSON operator into its function, before planning.
pub fn rewrite(e: &mut datafusion::sql::sqlparser::ast::Expr) {
    use datafusion::sql::sqlparser::ast::{BinaryOperator as B, Expr as Ast};
    let Ast::BinaryOp { left, op, right } = e else { return };
    let (f, l, r) = match op {
        B::Arrow => ("tessera_json_get", &left, &right),
        B::LongArrow => ("tessera_json_get_text", &left, &right),
        B::HashArrow => ("tessera_json_path", &left, &right),
        B::HashLongArrow => ("tessera_json_path_text", &left, &right),
        B::AtArrow => ("tessera_json_contains", &left, &right),
        B::ArrowAt => ("tessera_json_contains", &right, &left),
        B::Question => ("tessera_json_has_key", &left, &right),
        B::QuestionPipe => ("tessera_json_has_any", &left, &right),
        B::QuestionAnd => ("tessera_json_has_all", &left, &right),
        _ => return,
    };
    if let Ok(call) = crate::parser::parse_expr(&format!("{f}({l}, {r})")) {
        *e = call;
    }
}

/// The analyzer rule for `||` of json values (see the module's text).
#[derive(Debug)]
pub struct JsonConcat;

impl AnalyzerRule for JsonConcat {
    fn name(&self) -> &str {
        "tessera_json_concat"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::values::exact_casts::rewrite_expressions(plan, concat_json)
    }
}

/// The SQL type of a json-valued expression: its field's, or that of the
/// cast (`'…'::jsonb` is `tessera_to_jsonb('…')`).
fn json_type(e: &Expr, schema: &DFSchema) -> Option<String> {
    if let Expr::ScalarFunction(f) = e {
        match f.func.name() {
            "tessera_to_jsonb" => return Some("jsonb".into()),
            "tessera_to_json" => return Some("json".into()),
            _ => {}
        }
    }
    e.to_field(schema as &dyn ExprSchema).ok().and_then(|(_, f)| f.metadata().get(PG_TYPE_KEY).cloned())
}

pub(crate) fn is_jsonb_field(e: &Expr, schema: &DFSchema) -> bool {
    json_type(e, schema).is_some_and(|t| t == "jsonb")
}

fn is_json_field(e: &Expr, schema: &DFSchema) -> bool {
    json_type(e, schema).is_some_and(|t| t == "jsonb" || t == "json")
}

fn concat_json(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    // jsonb = jsonb compares values (`1.0` equals `1`), not their text.
    if let Expr::BinaryExpr(BinaryExpr { left, op: op @ (Operator::Eq | Operator::NotEq), right }) = &e
        && is_jsonb_field(left, schema)
        && is_jsonb_field(right, schema)
    {
        let args = vec![(**left).clone(), (**right).clone()];
        let eq = Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(udf("tessera_jsonb_equal", Op::Equal)), args));
        return Ok(Transformed::yes(if *op == Operator::Eq { eq } else { Expr::Not(Box::new(eq)) }));
    }
    let Expr::BinaryExpr(BinaryExpr { left, op: Operator::StringConcat, right }) = &e else {
        return Ok(Transformed::no(e));
    };
    if !(is_json_field(left, schema) || is_json_field(right, schema)) {
        return Ok(Transformed::no(e));
    }
    let args = vec![(**left).clone(), (**right).clone()];
    Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(udf("tessera_jsonb_concat", Op::Concat)),
        args,
    ))))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonFn {
    name: &'static str,
    op: Op,
    signature: Signature,
}

pub(crate) fn refuse(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

pub(crate) fn parse(text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| {
        refuse(SqlError::new(code::INVALID_TEXT, "invalid input syntax for type json").with_detail(e.to_string()))
    })
}

/// The SQL type name a result is marked with.
fn result_type(op: Op) -> Option<&'static str> {
    match op {
        Op::Get | Op::Path | Op::Concat | Op::Set | Op::BuildObject(true) | Op::BuildArray(true) | Op::To(true) => {
            Some("jsonb")
        }
        Op::BuildObject(false) | Op::BuildArray(false) | Op::To(false) => Some("json"),
        _ => None,
    }
}

impl ScalarUDFImpl for JsonFn {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.op {
            Op::Contains | Op::HasKey | Op::Equal => DataType::Boolean,
            Op::ArrayLength => DataType::Int32,
            _ => DataType::Utf8,
        })
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let _ = args;
        let field = Field::new(self.name, self.return_type(&[])?, true);
        Ok(Arc::new(match result_type(self.op) {
            Some(t) => field.with_metadata(HashMap::from([(PG_TYPE_KEY.to_string(), t.to_string())])),
            None => field,
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let arrays: Vec<ArrayRef> = args.args.iter().map(|a| a.to_array(n)).collect::<Result<_>>()?;
        let json_arg: Vec<bool> = args
            .arg_fields
            .iter()
            .map(|f| f.metadata().get(PG_TYPE_KEY).is_some_and(|t| t == "jsonb" || t == "json"))
            .collect();
        let out: ArrayRef = match self.op {
            // `@>` and `<@` of arrays (the operators are rewritten before
            // their operands' types are known).
            Op::Contains
                if arrays.iter().any(|a| matches!(a.data_type(), DataType::List(_)))
                    && arrays.iter().all(|a| matches!(a.data_type(), DataType::List(_) | DataType::Utf8)) =>
            {
                // An array literal's text (`i @> '{1,2}'`) is an array of
                // the other side's type.
                let list = arrays.iter().find(|a| matches!(a.data_type(), DataType::List(_))).expect("a list");
                let want = list.data_type().clone();
                let as_list = |a: &ArrayRef| -> Result<ArrayRef> {
                    if a.data_type() == &want {
                        return Ok(a.clone());
                    }
                    let texts = datafusion::arrow::array::AsArray::as_string::<i32>(a);
                    let values = texts
                        .iter()
                        .map(|t| match t {
                            Some(t) => crate::values::array_types::scalar_from_text(t, &want, Default::default())
                                .map_err(refuse),
                            None => datafusion::common::ScalarValue::try_from(&want),
                        })
                        .collect::<Result<Vec<_>>>()?;
                    datafusion::common::ScalarValue::iter_to_array(values)
                };
                let contained = crate::values::array_fns::contains(&as_list(&arrays[0])?, &as_list(&arrays[1])?)?;
                Arc::new(contained)
            }
            Op::Contains | Op::HasKey | Op::Equal => {
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    out.push(match (text_at(&arrays[0], i)?, arrays.get(1).and_then(|a| cell(a, i))) {
                        (Some(a), Some(b)) => Some(match self.op {
                            Op::Contains => contains(&parse(&a)?, &parse(&b)?, true),
                            Op::Equal => equal(&parse(&a)?, &parse(&b)?),
                            _ => has_key(&parse(&a)?, &b),
                        }),
                        _ => None,
                    });
                }
                Arc::new(BooleanArray::from(out))
            }
            Op::ArrayLength => {
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    out.push(match text_at(&arrays[0], i)? {
                        Some(a) => match parse(&a)? {
                            Value::Array(items) => Some(items.len() as i32),
                            _ => {
                                return Err(refuse(SqlError::new("22023", "cannot get array length of a non-array")));
                            }
                        },
                        None => None,
                    });
                }
                Arc::new(Int32Array::from(out))
            }
            _ => {
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    out.push(self.text_result(&arrays, &json_arg, i)?);
                }
                Arc::new(StringArray::from(out))
            }
        };
        crate::values::udf_values::columnar(out, scalar)
    }
}

impl JsonFn {
    /// One row of a function returning text (json, jsonb or text).
    fn text_result(&self, arrays: &[ArrayRef], json_arg: &[bool], i: usize) -> Result<Option<String>> {
        let jsonb = |v: &Value| {
            let mut s = String::new();
            crate::values::text::write_jsonb(&mut s, v);
            s
        };
        Ok(match self.op {
            Op::Get | Op::GetText | Op::Path | Op::PathText => {
                let (Some(doc), Some(key)) = (text_at(&arrays[0], i)?, arrays.get(1).and_then(|a| cell(a, i))) else {
                    return Ok(None);
                };
                let doc = parse(&doc)?;
                let found = match self.op {
                    Op::Get | Op::GetText => step(&doc, &key, is_integer(&arrays[1])),
                    _ => path_steps(&key).iter().try_fold(&doc, |d, k| step(d, k, false)),
                };
                match (found, self.op) {
                    (None, _) => None,
                    (Some(Value::Null), Op::GetText | Op::PathText) => None,
                    (Some(Value::String(s)), Op::GetText | Op::PathText) => Some(s.clone()),
                    (Some(v), _) => Some(jsonb(v)),
                }
            }
            Op::Concat => {
                let (Some(a), Some(b)) = (text_at(&arrays[0], i)?, text_at(&arrays[1], i)?) else { return Ok(None) };
                Some(jsonb(&concat(parse(&a)?, parse(&b)?)))
            }
            Op::Set => {
                let (Some(doc), Some(path), Some(new)) =
                    (text_at(&arrays[0], i)?, cell(&arrays[1], i), text_at(&arrays[2], i)?)
                else {
                    return Ok(None);
                };
                let create = arrays.get(3).and_then(|a| cell(a, i)).is_none_or(|c| c == "true");
                let mut doc = parse(&doc)?;
                set(&mut doc, &checked_path(&path)?, parse(&new)?, create)?;
                Some(jsonb(&doc))
            }
            Op::BuildObject(b) => {
                if !arrays.len().is_multiple_of(2) {
                    return Err(refuse(SqlError::new("22023", "argument list must have even number of elements")));
                }
                let mut pairs = Vec::new();
                for k in (0..arrays.len()).step_by(2) {
                    let key = cell(&arrays[k], i)
                        .ok_or_else(|| refuse(SqlError::new("22004", "null value not allowed for object key")))?;
                    pairs.push((key, to_value(&arrays[k + 1], json_arg[k + 1], i)?));
                }
                Some(if b {
                    jsonb(&Value::Object(pairs.into_iter().collect()))
                } else {
                    let items: Vec<String> =
                        pairs.iter().map(|(k, v)| format!("{} : {}", Value::String(k.clone()), v)).collect();
                    format!("{{{}}}", items.join(", "))
                })
            }
            Op::BuildArray(b) => {
                let items: Vec<Value> =
                    (0..arrays.len()).map(|k| to_value(&arrays[k], json_arg[k], i)).collect::<Result<_>>()?;
                Some(if b {
                    jsonb(&Value::Array(items))
                } else {
                    let items: Vec<String> = items.iter().map(|v| v.to_string()).collect();
                    format!("[{}]", items.join(", "))
                })
            }
            Op::To(b) => {
                if arrays[0].is_null(i) {
                    return Ok(None);
                }
                let v = to_value(&arrays[0], json_arg[0], i)?;
                Some(if b { jsonb(&v) } else { v.to_string() })
            }
            Op::TypeOf => text_at(&arrays[0], i)?.map(|t| parse(&t)).transpose()?.map(|v| {
                match v {
                    Value::Object(_) => "object",
                    Value::Array(_) => "array",
                    Value::String(_) => "string",
                    Value::Number(_) => "number",
                    Value::Bool(_) => "boolean",
                    Value::Null => "null",
                }
                .to_string()
            }),
            Op::Contains | Op::HasKey | Op::Equal | Op::ArrayLength => None,
        })
    }
}

fn is_integer(a: &ArrayRef) -> bool {
    a.data_type().is_integer()
}

/// A value's text form (None for NULL).
fn cell(a: &ArrayRef, i: usize) -> Option<String> {
    crate::values::text::format_cell(a, i)
}

/// A json argument's text.
fn text_at(a: &ArrayRef, i: usize) -> Result<Option<String>> {
    Ok(cell(a, i))
}

/// A SQL value as JSON: json arguments embedded, numbers and booleans as
/// themselves, everything else as its text.
pub(crate) fn to_value(a: &ArrayRef, json: bool, i: usize) -> Result<Value> {
    let Some(text) = cell(a, i) else { return Ok(Value::Null) };
    Ok(match a.data_type() {
        _ if json => parse(&text)?,
        DataType::Boolean => Value::Bool(text == "t"),
        t if t.is_numeric() => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        // Timestamps in ISO 8601, as PostgreSQL writes them in JSON
        // (`2014-05-28T12:22:35.614298`, a timestamptz with `+00:00`).
        DataType::Timestamp(_, zone) => {
            let iso = text.replacen(' ', "T", 1);
            Value::String(if zone.is_some() && iso.ends_with("+00") { format!("{iso}:00") } else { iso })
        }
        _ => Value::String(text),
    })
}

/// One step into a document: an object's key, or an array's index
/// (negative from the end).
fn step<'a>(doc: &'a Value, key: &str, integer: bool) -> Option<&'a Value> {
    match doc {
        Value::Object(map) if !integer => map.get(key),
        Value::Array(items) => {
            let k: i64 = key.parse().ok()?;
            let index = if k < 0 { items.len() as i64 + k } else { k };
            usize::try_from(index).ok().and_then(|i| items.get(i))
        }
        _ => None,
    }
}

/// A text[] path (`{a,2,c}`) as its steps.
pub(crate) fn path_steps(path: &str) -> Vec<String> {
    let inner = path.trim().trim_start_matches('{').trim_end_matches('}');
    if inner.is_empty() {
        return Vec::new();
    }
    inner.split(',').map(|s| s.trim().trim_matches('"').to_string()).collect()
}

/// PostgreSQL's jsonb containment (`@>`); `top` allows a scalar on the
/// right to be contained in an array on the left.
fn contains(a: &Value, b: &Value, top: bool) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => y.iter().all(|(k, v)| x.get(k).is_some_and(|w| contains(w, v, false))),
        (Value::Array(x), Value::Array(y)) => y.iter().all(|v| x.iter().any(|w| contains(w, v, false))),
        (Value::Array(x), scalar) if top && !scalar.is_object() => x.iter().any(|w| equal(w, scalar)),
        (x, y) => equal(x, y),
    }
}

/// jsonb equality: numbers by value (`1.0` equals `1`), as PostgreSQL's.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_key(&x.to_string()) == number_key(&y.to_string()),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| equal(v, w)),
        (x, y) => x == y,
    }
}

/// A number's value as text without trailing fractional zeros.
fn number_key(text: &str) -> String {
    let plain = crate::values::text::json_number(text);
    if plain.contains('.') { plain.trim_end_matches('0').trim_end_matches('.').to_string() } else { plain }
}

/// `?`: an object's key, an array's string element, or the string itself.
pub(crate) fn has_key(doc: &Value, key: &str) -> bool {
    match doc {
        Value::Object(map) => map.contains_key(key),
        Value::Array(items) => items.iter().any(|v| v.as_str() == Some(key)),
        Value::String(s) => s == key,
        _ => false,
    }
}

/// jsonb `||`: objects merged (the right side's keys win), arrays joined,
/// anything else made an array.
fn concat(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Object(mut x), Value::Object(y)) => {
            x.extend(y);
            Value::Object(x)
        }
        (Value::Array(mut x), Value::Array(y)) => {
            x.extend(y);
            Value::Array(x)
        }
        (Value::Array(mut x), y) => {
            x.push(y);
            Value::Array(x)
        }
        (x, Value::Array(mut y)) => {
            y.insert(0, x);
            Value::Array(y)
        }
        (x, y) => Value::Array(vec![x, y]),
    }
}

/// `jsonb_set(doc, path, new, create)`.
/// One step into a document for a change: an object's key, or an
/// array's index (negative from the end).
pub(crate) fn step_mut<'a>(doc: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    match doc {
        Value::Object(map) => map.get_mut(key),
        Value::Array(items) => key.parse::<i64>().ok().and_then(|k| {
            let i = if k < 0 { items.len() as i64 + k } else { k };
            usize::try_from(i).ok().and_then(|i| items.get_mut(i))
        }),
        _ => None,
    }
}

/// A path given to a function that changes a document (`jsonb_set`,
/// `#-`): its elements, an unquoted NULL element being 22004.
pub(crate) fn checked_path(path: &str) -> Result<Vec<String>> {
    let inner = path.trim().trim_start_matches('{').trim_end_matches('}');
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    inner
        .split(',')
        .enumerate()
        .map(|(k, raw)| {
            let raw = raw.trim();
            if raw.eq_ignore_ascii_case("null") {
                return Err(refuse(SqlError::new("22004", format!("path element at position {} is null", k + 1))));
            }
            Ok(raw.trim_matches('"').to_string())
        })
        .collect()
}

/// An array index in a path being changed (22P02 when not an integer).
fn path_index(step: &str, position: usize) -> Result<i64> {
    step.parse::<i64>().map_err(|_| {
        refuse(SqlError::new(
            code::INVALID_TEXT,
            format!("path element at position {position} is not an integer: \"{step}\""),
        ))
    })
}

/// PostgreSQL's `jsonb_set`: the value at `path` replaced (or added, with
/// `create`, as the last step only); a missing parent changes nothing.
pub(crate) fn set(doc: &mut Value, path: &[String], new: Value, create: bool) -> Result<()> {
    if !matches!(doc, Value::Object(_) | Value::Array(_)) {
        return Err(refuse(SqlError::new("22023", "cannot set path in scalar")));
    }
    let Some((last, parents)) = path.split_last() else { return Ok(()) };
    let mut at = doc;
    for (k, p) in parents.iter().enumerate() {
        if matches!(at, Value::Array(_)) {
            path_index(p, k + 1)?;
        }
        match step_mut(at, p) {
            Some(n) => at = n,
            None => return Ok(()),
        }
    }
    match at {
        Value::Object(map) if create || map.contains_key(last) => {
            map.insert(last.clone(), new);
        }
        Value::Array(items) => {
            let k = path_index(last, path.len())?;
            let i = if k < 0 { items.len() as i64 + k } else { k };
            match usize::try_from(i) {
                Ok(i) if i < items.len() => items[i] = new,
                Ok(_) if create => items.push(new),
                Err(_) if create => items.insert(0, new),
                _ => {}
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn numbers_keep_every_digit_and_their_scale() {
        use crate::values::text::json_number;
        assert_eq!(json_number("1.50"), "1.50");
        assert_eq!(json_number("1E-3"), "0.001");
        assert_eq!(json_number("1.0e1"), "10");
        assert_eq!(json_number("-1.25e1"), "-12.5");
        assert_eq!(json_number("-0.0"), "0.0");
        assert_eq!(json_number("12345678901234567890"), "12345678901234567890");
        assert_eq!(json_number("1.3e5"), "130000");
        let mut s = String::new();
        crate::values::text::write_jsonb(&mut s, &v(r#"{"id": 12345678901234567890, "price": 19.90}"#));
        assert_eq!(s, r#"{"id": 12345678901234567890, "price": 19.90}"#);
    }

    #[test]
    fn containment_keys_and_concatenation_as_postgres_computes_them() {
        assert!(contains(&v(r#"{"a": 1, "b": [1, 2]}"#), &v(r#"{"b": [2]}"#), true));
        assert!(!contains(&v(r#"{"a": 1}"#), &v(r#"{"a": 2}"#), true));
        assert!(contains(&v(r#"["foo", "bar"]"#), &v(r#""foo""#), true));
        assert!(equal(&v(r#"{"a": 1.0}"#), &v(r#"{"a": 1}"#)) && !equal(&v("1.01"), &v("1.1")));
        assert!(contains(&v(r#"{"a": 12345678901234567890}"#), &v(r#"{"a": 12345678901234567890.0}"#), true));
        assert!(has_key(&v(r#"{"a": 1}"#), "a") && has_key(&v(r#"["a"]"#), "a") && !has_key(&v("[1]"), "1"));
        assert_eq!(concat(v(r#"{"a": 1, "b": 2}"#), v(r#"{"b": 3}"#)), v(r#"{"a": 1, "b": 3}"#));
        assert_eq!(concat(v("[1]"), v("2")), v("[1, 2]"));
        let doc = v(r#"{"a": [1, {"c": "x"}]}"#);
        assert_eq!(step(&doc, "a", false).and_then(|a| step(a, "-1", true)), Some(&v(r#"{"c": "x"}"#)));
        assert_eq!(path_steps("{a,1,c}"), vec!["a", "1", "c"]);
        let mut d = v(r#"{"a": {"b": 1}}"#);
        set(&mut d, &path_steps("{a,b}"), v("2"), true).unwrap();
        set(&mut d, &path_steps("{a,z}"), v("3"), false).unwrap();
        assert_eq!(d, v(r#"{"a": {"b": 2}}"#));
    }
}
