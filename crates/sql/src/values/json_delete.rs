//! jsonb's deleting operators and their function names:
//! - `j - 'key'`, `j - '{k1,k2}'::text[]`: an object without those keys,
//!   an array without the string elements equal to them;
//! - `j - 2`: an array without its element at that index (from the end
//!   when negative; out of range changes nothing);
//! - `j #- '{a,0}'`: the document without the value at that path.
//!
//! A scalar, or an object indexed by a number, is 22023 as in PostgreSQL.
//! `jsonb_delete` and `jsonb_delete_path` are the same functions by name;
//! `jsonb_contains`, `jsonb_contained`, `jsonb_exists`, `jsonb_exists_any`
//! and `jsonb_exists_all` are the containment and key operators'
//! (`rewrite_names`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use serde_json::Value;

use crate::error::SqlError;
use crate::values::json::{parse, refuse};
use crate::values::types::PG_TYPE_KEY;

/// `tessera_jsonb_delete(doc, key | keys | index)`.
pub const DELETE: &str = "tessera_jsonb_delete";
/// `tessera_jsonb_delete_path(doc, path)`.
pub const DELETE_PATH: &str = "tessera_jsonb_delete_path";

/// Registers the functions, under their internal and PostgreSQL names.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(SetLax { signature: Signature::variadic_any(Volatility::Immutable) }));
    for (name, path) in [(DELETE, false), ("jsonb_delete", false), (DELETE_PATH, true), ("jsonb_delete_path", true)] {
        ctx.register_udf(ScalarUDF::new_from_impl(JsonDelete {
            name,
            path,
            signature: Signature::any(2, Volatility::Immutable),
        }));
    }
}

/// `jsonb - x`, which DataFusion would plan as arithmetic on text.
#[derive(Debug)]
pub struct JsonbMinusPlanner;

impl datafusion::logical_expr::planner::ExprPlanner for JsonbMinusPlanner {
    fn plan_binary_op(
        &self,
        expr: datafusion::logical_expr::planner::RawBinaryExpr,
        schema: &datafusion::common::DFSchema,
    ) -> Result<datafusion::logical_expr::planner::PlannerResult<datafusion::logical_expr::planner::RawBinaryExpr>>
    {
        use datafusion::logical_expr::planner::PlannerResult;
        if !matches!(expr.op, datafusion::sql::sqlparser::ast::BinaryOperator::Minus)
            || !crate::values::json::is_jsonb_field(&expr.left, schema)
        {
            return Ok(PlannerResult::Original(expr));
        }
        let udf = ScalarUDF::new_from_impl(JsonDelete {
            name: DELETE,
            path: false,
            signature: Signature::any(2, Volatility::Immutable),
        });
        Ok(PlannerResult::Planned(datafusion::logical_expr::Expr::ScalarFunction(
            datafusion::logical_expr::expr::ScalarFunction::new_udf(Arc::new(udf), vec![expr.left, expr.right]),
        )))
    }
}

/// PostgreSQL's function names for jsonb operators, before planning.
pub fn rewrite_names(e: &mut datafusion::sql::sqlparser::ast::Expr) {
    use datafusion::sql::sqlparser::ast::{BinaryOperator as B, Expr, FunctionArguments};
    if let Expr::BinaryOp { left, op: B::HashMinus, right } = e
        && let Ok(call) = crate::parser::parse_expr(&format!("{DELETE_PATH}({left}, {right})"))
    {
        *e = call;
        return;
    }
    let Expr::Function(f) = e else { return };
    let name = f.name.to_string().to_lowercase();
    if name.trim_start_matches("pg_catalog.") == "jsonb_set_lax" {
        crate::parser::positional_args(f, &SET_LAX_PARAMETERS);
        return;
    }
    let (target, swap) = match name.trim_start_matches("pg_catalog.") {
        "jsonb_contains" => ("tessera_json_contains", false),
        "jsonb_contained" => ("tessera_json_contains", true),
        "jsonb_exists" => ("tessera_json_has_key", false),
        "jsonb_exists_any" => ("tessera_json_has_any", false),
        "jsonb_exists_all" => ("tessera_json_has_all", false),
        _ => return,
    };
    let FunctionArguments::List(list) = &f.args else { return };
    let [a, b] = list.args.as_slice() else { return };
    let (a, b) = if swap { (b, a) } else { (a, b) };
    if let Ok(call) = crate::parser::parse_expr(&format!("{target}({a}, {b})")) {
        *e = call;
    }
}

/// `jsonb_set_lax`'s parameters and the defaults of the last two.
const SET_LAX_PARAMETERS: [(&str, Option<&str>); 5] = [
    ("jsonb_in", None),
    ("path", None),
    ("replacement", None),
    ("create_if_missing", Some("true")),
    ("null_value_treatment", Some("'use_json_null'")),
];

/// `jsonb_set_lax(doc, path, new, create_if_missing, null_value_treatment)`:
/// `jsonb_set`, except that an SQL NULL new value is handled as the last
/// argument says.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SetLax {
    signature: Signature,
}

impl ScalarUDFImpl for SetLax {
    fn name(&self) -> &str {
        "jsonb_set_lax"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        let field = Field::new("jsonb_set_lax", DataType::Utf8, true);
        Ok(Arc::new(field.with_metadata([(PG_TYPE_KEY.to_string(), "jsonb".to_string())].into())))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if args.args.len() != 5 {
            return Err(DataFusionError::Plan("jsonb_set_lax takes three to five arguments".into()));
        }
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let arrays: Vec<ArrayRef> = args.args.iter().map(|a| a.to_array(n)).collect::<Result<_>>()?;
        let cell = |k: usize, i: usize| crate::values::text::format_cell(&arrays[k], i);
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let (Some(doc), Some(path), Some(create)) = (cell(0, i), cell(1, i), cell(3, i)) else {
                out.push(None);
                continue;
            };
            let Some(treatment) = cell(4, i) else {
                return Err(invalid(
                    "null_value_treatment must be \"delete_key\", \"return_target\", \"use_json_null\", or \"raise_exception\"",
                ));
            };
            let mut v = parse(&doc)?;
            let path = crate::values::json::checked_path(&path)?;
            let new = match (cell(2, i), treatment.as_str()) {
                (Some(new), _) => parse(&new)?,
                (None, "use_json_null") => Value::Null,
                (None, "return_target") => {
                    let mut s = String::new();
                    crate::values::text::write_jsonb(&mut s, &v);
                    out.push(Some(s));
                    continue;
                }
                (None, "delete_key") => {
                    delete_path(&mut v, &path)?;
                    let mut s = String::new();
                    crate::values::text::write_jsonb(&mut s, &v);
                    out.push(Some(s));
                    continue;
                }
                (None, "raise_exception") => {
                    return Err(refuse(
                        SqlError::new("22004", "JSON value must not be null")
                            .with_detail("Exception was raised because null_value_treatment is \"raise_exception\".")
                            .with_hint(
                                "To avoid, either change the null_value_treatment argument or ensure that an SQL NULL is not passed."
                                    .to_string(),
                            ),
                    ));
                }
                _ => {
                    return Err(invalid(
                        "null_value_treatment must be \"delete_key\", \"return_target\", \"use_json_null\", or \"raise_exception\"",
                    ));
                }
            };
            crate::values::json::set(&mut v, &path, new, create == "t")?;
            let mut s = String::new();
            crate::values::text::write_jsonb(&mut s, &v);
            out.push(Some(s));
        }
        crate::values::udf_values::columnar(Arc::new(StringArray::from(out)), scalar)
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonDelete {
    name: &'static str,
    path: bool,
    signature: Signature,
}

fn invalid(msg: &str) -> DataFusionError {
    refuse(SqlError::new("22023", msg.to_string()))
}

impl ScalarUDFImpl for JsonDelete {
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
        Ok(Arc::new(field.with_metadata([(PG_TYPE_KEY.to_string(), "jsonb".to_string())].into())))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let doc = datafusion::arrow::compute::cast(&args.args[0].to_array(n)?, &DataType::Utf8)?;
        let what = args.args[1].to_array(n)?;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            if doc.is_null(i) || what.is_null(i) {
                out.push(None);
                continue;
            }
            let mut v = parse(doc.as_string::<i32>().value(i))?;
            if self.path {
                let path = match what.data_type() {
                    DataType::List(_) => keys(&what, i)?,
                    _ => crate::values::json::path_steps(&keys(&what, i)?.concat()),
                };
                delete_path(&mut v, &path)?;
            } else if what.data_type().is_integer() {
                let index = datafusion::arrow::compute::cast(&what.slice(i, 1), &DataType::Int64)?;
                delete_index(&mut v, index.as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0))?;
            } else {
                delete_keys(&mut v, &keys(&what, i)?)?;
            }
            let mut s = String::new();
            crate::values::text::write_jsonb(&mut s, &v);
            out.push(Some(s));
        }
        crate::values::udf_values::columnar(Arc::new(StringArray::from(out)), scalar)
    }
}

/// The key (text) or keys (a text array, or its `{…}` text) of row `i`.
fn keys(a: &ArrayRef, i: usize) -> Result<Vec<String>> {
    match a.data_type() {
        DataType::List(_) => {
            let items = a.as_list::<i32>().value(i);
            let items = datafusion::arrow::compute::cast(&items, &DataType::Utf8)?;
            let items = items.as_string::<i32>();
            Ok((0..items.len()).filter(|k| !items.is_null(*k)).map(|k| items.value(k).to_string()).collect())
        }
        _ => {
            let text = crate::values::text::format_cell(a, i).unwrap_or_default();
            Ok(vec![text])
        }
    }
}

fn delete_keys(v: &mut Value, keys: &[String]) -> Result<()> {
    match v {
        Value::Object(map) => keys.iter().for_each(|k| {
            map.remove(k);
        }),
        Value::Array(items) => items.retain(|x| !matches!(x, Value::String(s) if keys.contains(s))),
        _ => return Err(invalid("cannot delete from scalar")),
    }
    Ok(())
}

fn delete_index(v: &mut Value, index: i64) -> Result<()> {
    match v {
        Value::Array(items) => {
            let len = items.len() as i64;
            let at = if index < 0 { len + index } else { index };
            if (0..len).contains(&at) {
                items.remove(at as usize);
            }
            Ok(())
        }
        Value::Object(_) => Err(invalid("cannot delete from object using integer index")),
        _ => Err(invalid("cannot delete from scalar")),
    }
}

fn delete_path(v: &mut Value, path: &[String]) -> Result<()> {
    if !matches!(v, Value::Object(_) | Value::Array(_)) {
        return Err(invalid("cannot delete path in scalar"));
    }
    let Some((last, inner)) = path.split_last() else { return Ok(()) };
    let mut at = v;
    for (k, step) in inner.iter().enumerate() {
        let next = match at {
            Value::Object(map) => map.get_mut(step),
            Value::Array(items) => {
                let i = array_index(step, k + 1)?;
                let len = items.len() as i64;
                let i = if i < 0 { len + i } else { i };
                if (0..len).contains(&i) { items.get_mut(i as usize) } else { None }
            }
            _ => None,
        };
        match next {
            Some(n) => at = n,
            None => return Ok(()),
        }
    }
    match at {
        Value::Object(map) => {
            map.remove(last);
        }
        Value::Array(_) => delete_index(at, array_index(last, path.len())?)?,
        _ => {}
    }
    Ok(())
}

/// A path element used on an array: an integer (22P02 otherwise).
fn array_index(step: &str, position: usize) -> Result<i64> {
    step.trim().parse::<i64>().map_err(|_| {
        refuse(SqlError::new("22P02", format!("path element at position {position} is not an integer: \"{step}\"")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn deletes_as_postgres_does() {
        let mut a = v(r#"{"a": 1, "b": 2, "c": 3}"#);
        delete_keys(&mut a, &["a".into(), "c".into()]).unwrap();
        assert_eq!(a, v(r#"{"b": 2}"#));
        let mut b = v(r#"["a", "b", "a", 1]"#);
        delete_keys(&mut b, &["a".into()]).unwrap();
        assert_eq!(b, v(r#"["b", 1]"#));
        let mut c = v("[1, 2, 3]");
        delete_index(&mut c, -1).unwrap();
        assert_eq!(c, v("[1, 2]"));
        assert!(delete_index(&mut v("{}"), 1).is_err());
        assert!(delete_keys(&mut v(r#""a""#), &["a".into()]).is_err());
        let mut d = v(r#"{"n": null, "a": 1, "b": [1, 2], "c": {"1": 2}}"#);
        delete_path(&mut d, &["b".into(), "-1".into()]).unwrap();
        delete_path(&mut d, &["c".into(), "1".into()]).unwrap();
        assert_eq!(d, v(r#"{"n": null, "a": 1, "b": [1], "c": {}}"#));
        assert!(delete_path(&mut v("[1]"), &["a".into()]).is_err());
    }
}
