//! Array columns and values: `int[]`, `text[]`, … as Arrow lists.
//!
//! A column declared `elem[]` is an Arrow `List` of the element's type
//! (`SqlType::Array`); DataFusion's list functions give the operators and
//! functions (`ANY`, `unnest`, `array_agg`, subscripts, `||`, `@>`). What
//! DataFusion lacks is PostgreSQL's text form of an array as input:
//! `'{1,2,NULL}'`, quoted elements with backslash escapes. This module
//! reads it (for INSERT and COPY into an array column, parameters sent as
//! text, and `'{…}'::int[]` through `tessera_to_array`) and converts lists
//! between element types with the element's own assignment rules.
//!
//! Arrays have one dimension in Tessera: a multi-dimensional literal
//! (`'{{1,2},{3,4}}'`) and explicit bounds (`'[0:1]={1,2}'`) are refused
//! (0A000) rather than flattened.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListArray, StringArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl};
use datafusion::logical_expr::{Signature, Volatility};

use crate::error::{Result, SqlError, code};
use crate::values::types::SqlType;

fn malformed(text: &str, detail: &str) -> SqlError {
    SqlError::new(code::INVALID_TEXT, format!("malformed array literal: \"{text}\"")).with_detail(detail.to_string())
}

/// The elements of PostgreSQL's text form of a one-dimensional array
/// (None for an unquoted NULL).
pub fn parse_literal(text: &str) -> Result<Vec<Option<String>>> {
    let t = text.trim();
    if t.starts_with('[') {
        return Err(SqlError::unsupported("array literals with explicit bounds"));
    }
    let inner = t
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .ok_or_else(|| malformed(text, "Array value must start with \"{\" or dimension information."))?;
    let mut out = Vec::new();
    let mut chars = inner.chars().peekable();
    if inner.trim().is_empty() {
        return Ok(out);
    }
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        let mut quoted = false;
        match chars.peek() {
            Some('{') => return Err(SqlError::unsupported("multi-dimensional arrays (Tessera's arrays have one)")),
            Some('"') => {
                quoted = true;
                chars.next();
                loop {
                    match chars.next() {
                        Some('\\') => {
                            value.push(chars.next().ok_or_else(|| malformed(text, "Unexpected end of input."))?)
                        }
                        Some('"') => break,
                        Some(c) => value.push(c),
                        None => return Err(malformed(text, "Unexpected end of input.")),
                    }
                }
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
            }
            _ => {
                while let Some(&c) = chars.peek() {
                    match c {
                        ',' => break,
                        '"' | '{' | '}' => return Err(malformed(text, &format!("Unexpected \"{c}\" character."))),
                        '\\' => {
                            chars.next();
                            value.push(chars.next().ok_or_else(|| malformed(text, "Unexpected end of input."))?);
                            continue;
                        }
                        c => value.push(c),
                    }
                    chars.next();
                }
                let trimmed = value.trim_end().len();
                value.truncate(trimmed);
                if value.is_empty() {
                    return Err(malformed(text, "Unexpected \",\" character."));
                }
            }
        }
        out.push(if !quoted && value.eq_ignore_ascii_case("null") { None } else { Some(value) });
        match chars.next() {
            None => return Ok(out),
            Some(',') => {}
            Some(c) => return Err(malformed(text, &format!("Unexpected \"{c}\" character."))),
        }
    }
}

/// A list array of `values` (the elements, in order) split by `lengths`,
/// None where the whole array is NULL.
fn list_of(ty: SqlType, values: ArrayRef, lengths: Vec<Option<usize>>) -> Result<ArrayRef> {
    let DataType::List(field) = ty.arrow_type() else {
        return Err(SqlError::internal(format!("{ty} is not an array type")));
    };
    let nulls = datafusion::arrow::buffer::NullBuffer::from(lengths.iter().map(Option::is_some).collect::<Vec<_>>());
    let offsets = OffsetBuffer::from_lengths(lengths.into_iter().map(|l| l.unwrap_or(0)));
    Ok(Arc::new(ListArray::try_new(field, offsets, values, Some(nulls))?))
}

/// Converts `array` (text in PostgreSQL's array form, or a list) to the
/// array type `ty`, each element as a value assigned to a column of the
/// element type.
pub fn to_array_type(array: &ArrayRef, ty: SqlType, column: &str, zone: crate::values::tz::Zone) -> Result<ArrayRef> {
    let elem = ty.element().ok_or_else(|| SqlError::internal(format!("{ty} is not an array type")))?;
    match array.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let texts = datafusion::arrow::compute::cast(array, &DataType::Utf8)?;
            let texts = texts.as_string::<i32>();
            let (mut elements, mut lengths) = (Vec::new(), Vec::with_capacity(texts.len()));
            for t in texts.iter() {
                match t {
                    None => lengths.push(None),
                    Some(t) => {
                        let items = parse_literal(t)?;
                        lengths.push(Some(items.len()));
                        elements.extend(items);
                    }
                }
            }
            let strings: ArrayRef = Arc::new(StringArray::from(elements.clone()));
            let values = crate::values::assign::cast_to(&strings, elem, column, zone).map_err(|e| {
                if e.code != code::DATATYPE_MISMATCH {
                    return e;
                }
                // Text that is not an element: name it as PostgreSQL does.
                let bad = elements.iter().flatten().find(|v| {
                    let one: ArrayRef = Arc::new(StringArray::from(vec![Some(v.as_str())]));
                    crate::values::assign::cast_to(&one, elem, column, zone).is_err()
                });
                SqlError::new(
                    code::INVALID_TEXT,
                    format!("invalid input syntax for type {elem}: \"{}\"", bad.map_or("", |v| v.as_str())),
                )
            })?;
            list_of(ty, values, lengths)
        }
        DataType::List(_) => {
            let lists = array.as_list::<i32>();
            if matches!(lists.values().data_type(), DataType::List(_)) {
                // Cast element by element, this would make each inner
                // array a string.
                return Err(SqlError::unsupported(format!(
                    "a multi-dimensional array for column \"{column}\" of type {ty} (Tessera stores arrays of one \
                     dimension)"
                )));
            }
            let values = crate::values::assign::cast_to(lists.values(), elem, column, zone)?;
            let DataType::List(field) = ty.arrow_type() else { unreachable!("an array type is a List") };
            Ok(Arc::new(ListArray::try_new(field, lists.offsets().clone(), values, lists.nulls().cloned())?))
        }
        DataType::Null => Ok(datafusion::arrow::array::new_null_array(&ty.arrow_type(), array.len())),
        other => Err(SqlError::new(
            code::DATATYPE_MISMATCH,
            format!("column \"{column}\" is of type {ty} but expression is of type {other}"),
        )),
    }
}

/// `tessera_to_array(x, 'elem[]')`: `x::elem[]` (see the module's text).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ToArray {
    signature: Signature,
}

/// Registers `tessera_to_array` and `tessera_array_like`.
pub fn register(ctx: &datafusion::execution::context::SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(ToArray { signature: Signature::any(2, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::new_from_impl(ArrayLike { signature: Signature::any(2, Volatility::Immutable) }));
}

/// `tessera_array_like(x, 'text')`: the text read as an array of `x`'s
/// type, as PostgreSQL types the quoted array of `x = ANY ('{1,2,3}')`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayLike {
    signature: Signature,
}

impl ArrayLike {
    fn array_type(x: &DataType) -> datafusion::common::Result<SqlType> {
        let elem = match x {
            DataType::Null => SqlType::Text,
            other => SqlType::from_arrow(other)
                .ok_or_else(|| DataFusionError::Plan(format!("no array type of {other} for ANY")))?,
        };
        Ok(SqlType::array_of(elem))
    }
}

impl ScalarUDFImpl for ArrayLike {
    fn name(&self) -> &str {
        "tessera_array_like"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> datafusion::common::Result<DataType> {
        Ok(Self::array_type(&args[0])?.arrow_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> datafusion::common::Result<ColumnarValue> {
        let ty = Self::array_type(args.arg_fields[0].data_type())?;
        let scalar = matches!(args.args[1], ColumnarValue::Scalar(_));
        let texts = args.args[1].to_array(if scalar { 1 } else { args.number_rows })?;
        let out = to_array_type(&texts, ty, "?column?", crate::values::tz::Zone::Utc)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        crate::values::udf_values::columnar(out, scalar)
    }
}

fn target(scalar: Option<&ScalarValue>) -> datafusion::common::Result<SqlType> {
    match scalar {
        Some(ScalarValue::Utf8(Some(name))) => SqlType::parse(name).map_err(|e| DataFusionError::External(Box::new(e))),
        _ => Err(DataFusionError::Plan("tessera_to_array takes a constant type name".into())),
    }
}

impl ScalarUDFImpl for ToArray {
    fn name(&self) -> &str {
        "tessera_to_array"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> datafusion::common::Result<DataType> {
        Err(DataFusionError::Internal("return_field_from_args is used".into()))
    }

    fn return_field_from_args(
        &self,
        args: ReturnFieldArgs,
    ) -> datafusion::common::Result<datafusion::arrow::datatypes::FieldRef> {
        let ty = target(args.scalar_arguments.get(1).copied().flatten())?;
        let levels = args.arg_fields.first().map_or(1, |f| depth(f.data_type()).max(1));
        let field = ty.field(self.name(), true);
        // An array of several dimensions keeps them (see [`cast_nested`]).
        Ok(Arc::new(match (levels, ty.element()) {
            (1, _) | (_, None) => field,
            (_, Some(elem)) => field.with_data_type(nest(elem.arrow_type(), levels)),
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> datafusion::common::Result<ColumnarValue> {
        let ty = match &args.args[1] {
            ColumnarValue::Scalar(s) => target(Some(s))?,
            ColumnarValue::Array(_) => target(None)?,
        };
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let out = cast_nested(&values, ty).map_err(|e| DataFusionError::External(Box::new(e)))?;
        crate::values::udf_values::columnar(out, scalar)
    }
}

/// How many list levels (array dimensions) a type has.
fn depth(t: &DataType) -> usize {
    match t {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => 1 + depth(f.data_type()),
        _ => 0,
    }
}

/// `leaf` inside `levels` lists.
fn nest(leaf: DataType, levels: usize) -> DataType {
    (0..levels).fold(leaf, |t, _| DataType::List(Arc::new(datafusion::arrow::datatypes::Field::new("item", t, true))))
}

/// `x::elem[]` of an array of any number of dimensions: PostgreSQL's array
/// types have none fixed, so `ARRAY[['a','bc'],['def','hijk']]::varchar[]`
/// casts the elements and keeps the shape (cast level by level, each inner
/// array would have become a string, `{"[a, bc]","[def, hijk]"}`).
fn cast_nested(values: &ArrayRef, ty: SqlType) -> Result<ArrayRef> {
    let DataType::List(_) = values.data_type() else {
        return to_array_type(values, ty, "?column?", crate::values::tz::Zone::Utc);
    };
    let lists = values.as_list::<i32>();
    if !matches!(lists.values().data_type(), DataType::List(_)) {
        return to_array_type(values, ty, "?column?", crate::values::tz::Zone::Utc);
    }
    let inner = cast_nested(lists.values(), ty)?;
    let field = Arc::new(datafusion::arrow::datatypes::Field::new("item", inner.data_type().clone(), true));
    Ok(Arc::new(ListArray::try_new(field, lists.offsets().clone(), inner, lists.nulls().cloned())?))
}

/// An array value sent as text (a parameter) as a scalar of list type `want`.
pub fn scalar_from_text(text: &str, want: &DataType, zone: crate::values::tz::Zone) -> Result<ScalarValue> {
    let ty = SqlType::from_arrow(want).ok_or_else(|| SqlError::internal(format!("no SQL type for {want}")))?;
    let strings: ArrayRef = Arc::new(StringArray::from(vec![Some(text)]));
    let array = to_array_type(&strings, ty, "parameter", zone)?;
    Ok(ScalarValue::try_from_array(&array, 0)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(t: &str) -> Vec<Option<String>> {
        parse_literal(t).unwrap()
    }

    #[test]
    fn reads_postgresqls_array_text() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(parsed("{1,2,3}"), vec![s("1"), s("2"), s("3")]);
        assert_eq!(parsed(" { 1 , NULL , null } "), vec![s("1"), None, None]);
        assert_eq!(parsed("{}"), Vec::<Option<String>>::new());
        assert_eq!(
            parsed(r#"{"a b","c,d","NULL","x\"y",e\,f}"#),
            vec![s("a b"), s("c,d"), s("NULL"), s("x\"y"), s("e,f")]
        );
        assert_eq!(parsed(r#"{"",  hello world  }"#), vec![s(""), s("hello world")]);
        assert_eq!(parse_literal("{{1,2},{3,4}}").unwrap_err().code, code::FEATURE_NOT_SUPPORTED);
        assert_eq!(parse_literal("[0:1]={1,2}").unwrap_err().code, code::FEATURE_NOT_SUPPORTED);
        for bad in ["1,2", "{1,2", "{1,,2}", "{\"a}", "{a\"b}", "{1}x"] {
            assert_eq!(parse_literal(bad).map_err(|e| e.code), Err(code::INVALID_TEXT), "{bad}");
        }
    }
}
