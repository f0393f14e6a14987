//! More of PostgreSQL's json and jsonb functions: `jsonb_extract_path`
//! and `json_extract_path` (and their `_text` forms), `jsonb_strip_nulls`
//! and `json_strip_nulls`, `jsonb_insert`, `jsonb_object` and
//! `json_object` from text arrays, and `array_to_json`.
//!
//! Documents travel as text marked json or jsonb (`json.rs`); a jsonb
//! result is printed in jsonb's normal form (`text::write_jsonb`), a json
//! result as compact JSON.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::Result;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use serde_json::Value;

use crate::error::SqlError;
use crate::values::json::{parse, refuse, to_value};
use crate::values::types::PG_TYPE_KEY;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    /// `*_extract_path`: as json/jsonb (false) or text (true).
    ExtractPath {
        text: bool,
    },
    StripNulls,
    Insert,
    Object,
    ArrayToJson,
}

const FUNCTIONS: &[(&str, Op, Option<&str>)] = &[
    ("jsonb_extract_path", Op::ExtractPath { text: false }, Some("jsonb")),
    ("json_extract_path", Op::ExtractPath { text: false }, Some("json")),
    ("jsonb_extract_path_text", Op::ExtractPath { text: true }, None),
    ("json_extract_path_text", Op::ExtractPath { text: true }, None),
    ("jsonb_strip_nulls", Op::StripNulls, Some("jsonb")),
    ("json_strip_nulls", Op::StripNulls, Some("json")),
    ("jsonb_insert", Op::Insert, Some("jsonb")),
    ("jsonb_object", Op::Object, Some("jsonb")),
    ("json_object", Op::Object, Some("json")),
    ("array_to_json", Op::ArrayToJson, Some("json")),
];

/// Registers this module's functions.
pub fn register(ctx: &SessionContext) {
    for (name, op, result) in FUNCTIONS {
        ctx.register_udf(ScalarUDF::new_from_impl(JsonMore {
            name,
            op: *op,
            result: *result,
            signature: Signature::variadic_any(Volatility::Immutable),
        }));
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonMore {
    name: &'static str,
    op: Op,
    /// The SQL type of the result (None: text).
    result: Option<&'static str>,
    signature: Signature,
}

fn error(code: &'static str, message: impl Into<String>) -> datafusion::common::DataFusionError {
    refuse(SqlError::new(code, message))
}

/// The elements of a text array cell (NULL elements as None).
fn text_list(a: &ArrayRef, i: usize) -> Result<Option<Vec<Option<String>>>> {
    if a.is_null(i) {
        return Ok(None);
    }
    match a.data_type() {
        DataType::List(_) => {
            let items = a.as_list::<i32>().value(i);
            Ok(Some((0..items.len()).map(|k| crate::values::text::format_cell(&items, k)).collect()))
        }
        // A string constant: PostgreSQL's array text (`'{a,b}'`).
        DataType::Utf8 => {
            let text = a.as_string::<i32>().value(i);
            crate::values::array_types::parse_literal(text).map(Some).map_err(refuse)
        }
        _ => Err(error("42883", "a text array is expected")),
    }
}

fn strip_nulls(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, x)| !x.is_null()).map(|(k, x)| (k, strip_nulls(x))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

/// `jsonb_insert`: `new` at `path`, before (or after) an array element,
/// or as a new key of an object (an existing key is an error).
fn insert(doc: &mut Value, path: &[Option<String>], new: Value, after: bool) -> Result<()> {
    let Some((last, parents)) = path.split_last() else { return Ok(()) };
    let mut at = doc;
    for p in parents {
        let Some(p) = p else { return Err(error("22004", "path element at position 1 is null")) };
        match crate::values::json::step_mut(at, p) {
            Some(n) => at = n,
            None => return Ok(()),
        }
    }
    let Some(last) = last else { return Err(error("22004", "path element is null")) };
    match at {
        Value::Object(map) => {
            if map.contains_key(last) {
                return Err(refuse(
                    SqlError::new("22023", "cannot replace existing key")
                        .with_hint("Try using the function jsonb_set to replace key value."),
                ));
            }
            map.insert(last.clone(), new);
        }
        Value::Array(items) => {
            let k: i64 = last.parse().map_err(|_| {
                error("22P02", format!("path element at position {} is not an integer: \"{last}\"", path.len()))
            })?;
            let len = items.len() as i64;
            let i = if k < 0 { len + k } else { k };
            let at = if after { i + 1 } else { i };
            items.insert(at.clamp(0, len) as usize, new);
        }
        _ => {}
    }
    Ok(())
}

/// `json_object(text[])` (alternating keys and values) or
/// `json_object(keys text[], values text[])`.
fn object(arrays: &[ArrayRef], i: usize) -> Result<Option<Value>> {
    let pairs: Vec<(Option<String>, Option<String>)> = match arrays {
        [one] => {
            let Some(items) = text_list(one, i)? else { return Ok(None) };
            if items.len() % 2 != 0 {
                return Err(error("2202E", "array must have even number of elements"));
            }
            items.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect()
        }
        [keys, values] => {
            let (Some(keys), Some(values)) = (text_list(keys, i)?, text_list(values, i)?) else { return Ok(None) };
            if keys.len() != values.len() {
                return Err(error("2202E", "mismatched array dimensions"));
            }
            keys.into_iter().zip(values).collect()
        }
        _ => return Err(error("42883", "json_object takes one or two text arrays")),
    };
    let mut map = serde_json::Map::new();
    for (k, v) in pairs {
        let k = k.ok_or_else(|| error("22004", "null value not allowed for object key"))?;
        map.insert(k, v.map_or(Value::Null, Value::String));
    }
    Ok(Some(Value::Object(map)))
}

impl JsonMore {
    fn row(&self, arrays: &[ArrayRef], i: usize) -> Result<Option<Value>> {
        let doc = |k: usize| -> Result<Option<Value>> {
            crate::values::text::format_cell(&arrays[k], i).map(|t| parse(&t)).transpose()
        };
        Ok(match self.op {
            Op::ExtractPath { .. } => {
                let Some(mut at) = doc(0)? else { return Ok(None) };
                for a in &arrays[1..] {
                    let Some(key) = crate::values::text::format_cell(a, i) else { return Ok(None) };
                    let next = match &at {
                        Value::Object(map) => map.get(&key).cloned(),
                        Value::Array(items) => key.parse::<i64>().ok().and_then(|k| {
                            let idx = if k < 0 { items.len() as i64 + k } else { k };
                            usize::try_from(idx).ok().and_then(|idx| items.get(idx).cloned())
                        }),
                        _ => None,
                    };
                    match next {
                        Some(n) => at = n,
                        None => return Ok(None),
                    }
                }
                Some(at)
            }
            Op::StripNulls => doc(0)?.map(strip_nulls),
            Op::Insert => {
                let (Some(mut d), Some(path)) = (doc(0)?, text_list(&arrays[1], i)?) else { return Ok(None) };
                // jsonb by its signature: a string constant is read as JSON.
                let new = to_value(&arrays[2], true, i)?;
                let after =
                    arrays.get(3).and_then(|a| crate::values::text::format_cell(a, i)).is_some_and(|t| t == "t");
                insert(&mut d, &path, new, after)?;
                Some(d)
            }
            Op::Object => object(arrays, i)?,
            Op::ArrayToJson => {
                if arrays[0].is_null(i) {
                    return Ok(None);
                }
                let items = arrays[0].as_list::<i32>().value(i);
                let values: Vec<Value> = (0..items.len()).map(|k| to_value(&items, false, k)).collect::<Result<_>>()?;
                Some(Value::Array(values))
            }
        })
    }
}

impl ScalarUDFImpl for JsonMore {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        let field = Field::new(self.name, DataType::Utf8, true);
        Ok(Arc::new(match self.result {
            Some(t) => field.with_metadata(HashMap::from([(PG_TYPE_KEY.to_string(), t.to_string())])),
            None => field,
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let arrays: Vec<ArrayRef> = args.args.iter().map(|a| a.to_array(n)).collect::<Result<_>>()?;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let v = self.row(&arrays, i)?;
            out.push(v.and_then(|v| match (self.result, &v) {
                (None, Value::Null) => None,
                (None, Value::String(s)) => Some(s.clone()),
                (Some("jsonb"), _) => {
                    let mut s = String::new();
                    crate::values::text::write_jsonb(&mut s, &v);
                    Some(s)
                }
                // json_object's own layout: `{"a" : "1", "b" : null}`.
                (Some("json"), Value::Object(map)) if self.op == Op::Object => {
                    let items: Vec<String> =
                        map.iter().map(|(k, x)| format!("{} : {x}", Value::String(k.clone()))).collect();
                    Some(format!("{{{}}}", items.join(", ")))
                }
                _ => Some(v.to_string()),
            }));
        }
        crate::values::udf_values::columnar(Arc::new(StringArray::from(out)), scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_and_inserts() {
        let v: Value = serde_json::from_str(r#"{"a":null,"b":[1,null,{"c":null}]}"#).unwrap();
        assert_eq!(strip_nulls(v).to_string(), r#"{"b":[1,null,{}]}"#);
        let mut d: Value = serde_json::from_str(r#"{"a":[0,1,2]}"#).unwrap();
        let path = |p: &[&str]| p.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>();
        insert(&mut d, &path(&["a", "1"]), Value::from("new"), false).unwrap();
        assert_eq!(d.to_string(), r#"{"a":[0,"new",1,2]}"#);
        insert(&mut d, &path(&["a", "-1"]), Value::from("x"), true).unwrap();
        assert_eq!(d.to_string(), r#"{"a":[0,"new",1,2,"x"]}"#);
        assert!(insert(&mut d, &path(&["a"]), Value::from(1), false).is_err());
    }
}
