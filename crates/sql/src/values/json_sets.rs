//! JSON over sets of values: aggregates, set-returning functions, and the
//! key-set operators `?|` and `?&`.
//!
//! - `json_agg`/`jsonb_agg` collect values into an array and
//!   `json_object_agg`/`jsonb_object_agg` pairs into an object (NULL over
//!   no rows, as in PostgreSQL); the `json_` ones write PostgreSQL's json
//!   spacing (`[1, 2]`, `{ "a" : 1 }`), the `jsonb_` ones canonical jsonb.
//!   They are rewritten ([`rewrite`]) as DataFusion's `array_agg` of the
//!   values' JSON (`to_json`), which keeps `ORDER BY`, `DISTINCT`,
//!   `FILTER` and `OVER` as written, under `tessera_json_collected`.
//! - `jsonb_array_elements`, `jsonb_array_elements_text`,
//!   `jsonb_object_keys` (and their `json_` twins) in a SELECT list become
//!   `unnest` of a list this module computes ([`rewrite`]); a document of
//!   the wrong kind raises 22023 as in PostgreSQL. In FROM they work on
//!   constants only (DataFusion's `unnest` cannot see a column of another
//!   FROM item).
//! - `j ?| array['a','b']` and `j ?& …` (any / all of the keys present).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, ListArray, StringArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use serde_json::Value;

use crate::error::{SqlError, code};
use crate::values::json::{has_key, parse, refuse};
use crate::values::types::PG_TYPE_KEY;

/// Registers the functions (see the module's text).
pub fn register(ctx: &SessionContext) {
    let sig = |n| Signature::any(n, Volatility::Immutable);
    ctx.register_udf(ScalarUDF::new_from_impl(SetOf { signature: sig(2) }));
    for all in [false, true] {
        ctx.register_udf(ScalarUDF::new_from_impl(HasKeys { all, signature: sig(2) }));
    }
    ctx.register_udf(ScalarUDF::new_from_impl(Collected { signature: Signature::variadic_any(Volatility::Immutable) }));
}

fn with_type(field: Field, sql_type: &str) -> Field {
    field.with_metadata(HashMap::from([(PG_TYPE_KEY.to_string(), sql_type.to_string())]))
}

fn jsonb_text(v: &Value) -> String {
    let mut s = String::new();
    crate::values::text::write_jsonb(&mut s, v);
    s
}

/// The set-returning functions this module rewrites, with what they list.
const SETS: &[(&str, &str)] = &[
    ("jsonb_array_elements", "jsonb"),
    ("json_array_elements", "json"),
    ("jsonb_array_elements_text", "text"),
    ("json_array_elements_text", "text"),
    ("jsonb_object_keys", "keys"),
    ("json_object_keys", "keys"),
];

/// `jsonb_array_elements(x)` (and the others in [`SETS`]) as `unnest` of
/// `tessera_json_set(x, kind)`, in expressions and in FROM.
pub fn rewrite(e: &mut datafusion::sql::sqlparser::ast::Expr) {
    use datafusion::sql::sqlparser::ast::{Expr, FunctionArguments};
    rewrite_aggregate(e);
    let Expr::Function(f) = e else { return };
    let name = f.name.to_string().to_lowercase();
    let Some((_, kind)) = SETS.iter().find(|(n, _)| *n == name.trim_start_matches("pg_catalog.")) else { return };
    let FunctionArguments::List(list) = &f.args else { return };
    if list.args.len() != 1 {
        return;
    }
    let arg = &list.args[0];
    // Elements keep their json or jsonb type through `unnest`.
    let call = format!("unnest(tessera_json_set({arg}, '{kind}'))");
    let sql = match *kind {
        "jsonb" => format!("tessera_to_jsonb({call})"),
        "json" => format!("tessera_to_json({call})"),
        _ => call,
    };
    if let Ok(new) = crate::parser::parse_expr(&sql) {
        *e = new;
    }
}

/// `json_agg(x …)` as `tessera_json_collected('json', array_agg(to_json(x)
/// …))`, and the object aggregates with a second `array_agg` of the keys
/// (see the module's text).
fn rewrite_aggregate(e: &mut datafusion::sql::sqlparser::ast::Expr) {
    use datafusion::sql::sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectName};
    let Expr::Function(f) = e else { return };
    let name = f.name.to_string().to_lowercase();
    let (kind, object) = match name.as_str() {
        "json_agg" => ("json", false),
        "jsonb_agg" => ("jsonb", false),
        "json_object_agg" => ("json", true),
        "jsonb_object_agg" => ("jsonb", true),
        _ => return,
    };
    let FunctionArguments::List(list) = &f.args else { return };
    let args: Vec<String> = list.args.iter().map(|a| a.to_string()).collect();
    if args.len() != if object { 2 } else { 1 } {
        return;
    }
    let to_json = if kind == "jsonb" { "to_jsonb" } else { "to_json" };
    // One `array_agg` per argument, each with the call's ORDER BY, DISTINCT,
    // FILTER and OVER (the same rows in the same order).
    let mut collected = Vec::new();
    for (k, arg) in args.iter().enumerate() {
        let mut agg = f.clone();
        agg.name = ObjectName::from(vec![datafusion::sql::sqlparser::ast::Ident::new("array_agg")]);
        let value = if object && k == 0 { format!("CAST({arg} AS text)") } else { format!("{to_json}({arg})") };
        let Ok(value) = crate::parser::parse_expr(&value) else { return };
        if let FunctionArguments::List(l) = &mut agg.args {
            l.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(value))];
        }
        collected.push(Expr::Function(agg).to_string());
    }
    if let Ok(new) = crate::parser::parse_expr(&format!("tessera_json_collected('{kind}', {})", collected.join(", "))) {
        *e = new;
    }
}

/// `tessera_json_collected(kind, values)` or `(kind, keys, values)`: the
/// aggregated JSON texts as an array or object of `kind`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Collected {
    signature: Signature,
}

impl ScalarUDFImpl for Collected {
    fn name(&self) -> &str {
        "tessera_json_collected"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let kind = kind_of(args.scalar_arguments.first().copied().flatten())?;
        Ok(Arc::new(with_type(Field::new(self.name(), DataType::Utf8, true), item_type(&kind))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let kind = match &args.args[0] {
            ColumnarValue::Scalar(s) => kind_of(Some(s))?,
            ColumnarValue::Array(_) => kind_of(None)?,
        };
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let lists: Vec<ArrayRef> = args.args[1..].iter().map(|a| a.to_array(n)).collect::<Result<_>>()?;
        let texts = |l: &ArrayRef, i: usize| -> Option<Vec<Option<String>>> {
            let l = l.as_list_opt::<i32>()?;
            if l.is_null(i) {
                return None;
            }
            let v = l.value(i);
            let v = datafusion::arrow::compute::cast(&v, &DataType::Utf8).ok()?;
            Some(v.as_string::<i32>().iter().map(|s| s.map(str::to_string)).collect())
        };
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let Some(values) = texts(&lists[lists.len() - 1], i).filter(|v| !v.is_empty()) else {
                out.push(None);
                continue;
            };
            let values: Vec<String> = values.into_iter().map(|v| v.unwrap_or_else(|| "null".into())).collect();
            let text = if lists.len() == 2 {
                let keys = texts(&lists[0], i).unwrap_or_default();
                if keys.iter().any(Option::is_none) {
                    return Err(refuse(SqlError::new("22004", "field name must not be null")));
                }
                let keys: Vec<String> = keys.into_iter().flatten().collect();
                if kind == "jsonb" {
                    let mut map = serde_json::Map::new();
                    for (k, v) in keys.into_iter().zip(&values) {
                        map.insert(k, parse(v)?);
                    }
                    jsonb_text(&Value::Object(map))
                } else {
                    let pairs: Vec<String> =
                        keys.into_iter().zip(&values).map(|(k, v)| format!("{} : {v}", Value::String(k))).collect();
                    format!("{{ {} }}", pairs.join(", "))
                }
            } else if kind == "jsonb" {
                let items: Vec<Value> = values.iter().map(|t| parse(t)).collect::<Result<_>>()?;
                jsonb_text(&Value::Array(items))
            } else {
                format!("[{}]", values.join(", "))
            };
            out.push(Some(text));
        }
        crate::values::udf_values::columnar(Arc::new(StringArray::from(out)), scalar)
    }
}

/// `tessera_json_set(doc, kind)`: a document's elements (as json, jsonb or
/// text) or keys, as a list.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SetOf {
    signature: Signature,
}

fn kind_of(v: Option<&ScalarValue>) -> Result<String> {
    match v {
        Some(ScalarValue::Utf8(Some(k))) => Ok(k.clone()),
        _ => datafusion::common::plan_err!("tessera_json_set takes a constant kind"),
    }
}

fn item_type(kind: &str) -> &'static str {
    match kind {
        "jsonb" => "jsonb",
        "json" => "json",
        _ => "text",
    }
}

impl ScalarUDFImpl for SetOf {
    fn name(&self) -> &str {
        "tessera_json_set"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        datafusion::common::internal_err!("return_field_from_args is used")
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        let item = Field::new("item", DataType::Utf8, true);
        Ok(Arc::new(Field::new(self.name(), DataType::List(Arc::new(item)), true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let kind = match &args.args[1] {
            ColumnarValue::Scalar(s) => kind_of(Some(s))?,
            ColumnarValue::Array(_) => kind_of(None)?,
        };
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let n = if scalar { 1 } else { args.number_rows };
        let docs = args.args[0].to_array(n)?;
        let (mut items, mut lengths, mut valid) = (Vec::new(), Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            let Some(text) = crate::values::text::format_cell(&docs, i) else {
                lengths.push(0);
                valid.push(false);
                continue;
            };
            let doc = parse(&text)?;
            let before = items.len();
            match (kind.as_str(), doc) {
                ("keys", Value::Object(map)) => items.extend(map.keys().map(|k| Some(k.clone()))),
                ("keys", other) => return Err(wrong_kind("jsonb_object_keys", &other)),
                (k, Value::Array(values)) => items.extend(values.iter().map(|v| match (k, v) {
                    ("text", Value::Null) => None,
                    ("text", Value::String(s)) => Some(s.clone()),
                    ("jsonb" | "text", v) => Some(jsonb_text(v)),
                    (_, v) => Some(v.to_string()),
                })),
                (_, other) => return Err(wrong_kind("jsonb_array_elements", &other)),
            }
            lengths.push(items.len() - before);
            valid.push(true);
        }
        let item = Arc::new(Field::new("item", DataType::Utf8, true));
        let values: ArrayRef = Arc::new(StringArray::from(items));
        let list = ListArray::try_new(
            item,
            OffsetBuffer::from_lengths(lengths),
            values,
            Some(datafusion::arrow::buffer::NullBuffer::from(valid)),
        )?;
        crate::values::udf_values::columnar(Arc::new(list), scalar)
    }
}

fn wrong_kind(function: &str, doc: &Value) -> datafusion::common::DataFusionError {
    let what = match doc {
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        _ => "a scalar",
    };
    let message = if function == "jsonb_object_keys" {
        format!("cannot call {function} on {what}")
    } else {
        format!("cannot extract elements from {what}")
    };
    refuse(SqlError::new(code::INVALID_PARAMETER_VALUE, message))
}

/// `j ?| keys` (any) and `j ?& keys` (all).
#[derive(Debug, PartialEq, Eq, Hash)]
struct HasKeys {
    all: bool,
    signature: Signature,
}

impl ScalarUDFImpl for HasKeys {
    fn name(&self) -> &str {
        if self.all { "tessera_json_has_all" } else { "tessera_json_has_any" }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let (docs, keys) = (args.args[0].to_array(n)?, args.args[1].to_array(n)?);
        let DataType::List(_) = keys.data_type() else {
            return Err(refuse(SqlError::new(code::UNDEFINED_FUNCTION, "operator ?| and ?& take a text[] of keys")));
        };
        let keys = keys.as_list::<i32>();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let (Some(text), false) = (crate::values::text::format_cell(&docs, i), keys.is_null(i)) else {
                out.push(None);
                continue;
            };
            let doc = parse(&text)?;
            let wanted = datafusion::arrow::compute::cast(&keys.value(i), &DataType::Utf8)?;
            // NULL keys are ignored, as in PostgreSQL.
            let mut present = wanted.as_string::<i32>().iter().flatten().map(|k| has_key(&doc, k));
            out.push(Some(if self.all { present.all(|p| p) } else { present.any(|p| p) }));
        }
        crate::values::udf_values::columnar(Arc::new(BooleanArray::from(out)), scalar)
    }
}
