//! PostgreSQL 15's forms of `regexp_replace`, `regexp_count`,
//! `regexp_instr` and `regexp_like`, in place of DataFusion's (which take
//! fewer arguments, other flags and Rust's replacement syntax):
//!
//! - `regexp_replace(s, p, r [, flags])` and `regexp_replace(s, p, r,
//!   start [, n [, flags]])`: the n-th match (0: all; without n, all with
//!   `g`, else the first) from character `start` on is replaced by `r`, in
//!   which `\1` … `\9` are groups, `\&` the match and `\\` a backslash;
//! - `regexp_count(s, p [, start [, flags]])`: the number of matches;
//! - `regexp_instr(s, p [, start [, n [, endoption [, flags [, subexpr]]]]])`:
//!   where (in characters, from 1) the n-th match or its group begins (or
//!   ends, with endoption 1); 0 when there is none;
//! - `regexp_like(s, p [, flags])`.
//!
//! Flags are `regexps::compile`'s (PostgreSQL's); a bad one, a start below
//! 1 or a negative n is 22023, as in PostgreSQL.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int32Array, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use regex::Regex;

use crate::error::{SqlError, code};
use crate::values::regexps::compile;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Replace,
    Count,
    Instr,
    Like,
}

/// Registers the functions (over DataFusion's of the same names).
pub fn register(ctx: &SessionContext) {
    for (name, op) in [
        ("regexp_replace", Op::Replace),
        ("regexp_count", Op::Count),
        ("regexp_instr", Op::Instr),
        ("regexp_like", Op::Like),
    ] {
        ctx.register_udf(ScalarUDF::new_from_impl(PgRegexp {
            name,
            op,
            signature: Signature::user_defined(Volatility::Immutable),
        }));
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PgRegexp {
    name: &'static str,
    op: Op,
    signature: Signature,
}

fn error(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

fn bad(what: &str, v: i64) -> DataFusionError {
    error(SqlError::new(code::INVALID_PARAMETER, format!("invalid value for parameter \"{what}\": {v}")))
}

/// What each argument of a call is, by position.
#[derive(Clone, Copy, PartialEq)]
enum Arg {
    Text,
    Int,
}

impl PgRegexp {
    /// The arguments' kinds for `n` arguments, the 4th of regexp_replace
    /// being flags when it is text and a start when it is a number.
    fn shape(&self, types: &[DataType]) -> Option<Vec<Arg>> {
        use Arg::{Int, Text};
        let n = types.len();
        let fourth_is_text = types
            .get(3)
            .is_some_and(|t| matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null));
        let shape: &[Arg] = match (self.op, n) {
            (Op::Replace, 3) => &[Text, Text, Text],
            (Op::Replace, 4) if fourth_is_text => &[Text, Text, Text, Text],
            (Op::Replace, 4) => &[Text, Text, Text, Int],
            (Op::Replace, 5) => &[Text, Text, Text, Int, Int],
            (Op::Replace, 6) => &[Text, Text, Text, Int, Int, Text],
            (Op::Count, 2..=4) => &[Text, Text, Int, Text][..n],
            (Op::Instr, 2..=7) => &[Text, Text, Int, Int, Int, Text, Int][..n],
            (Op::Like, 2..=3) => &[Text, Text, Text][..n],
            _ => return None,
        };
        Some(shape.to_vec())
    }
}

impl ScalarUDFImpl for PgRegexp {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, types: &[DataType]) -> Result<Vec<DataType>> {
        let shape = self.shape(types).ok_or_else(|| {
            DataFusionError::Plan(format!("function {}() does not take {} arguments", self.name, types.len()))
        })?;
        Ok(shape.iter().map(|a| if *a == Arg::Int { DataType::Int64 } else { DataType::Utf8 }).collect())
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.op {
            Op::Replace => DataType::Utf8,
            Op::Count | Op::Instr => DataType::Int32,
            Op::Like => DataType::Boolean,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let arrays: Vec<ArrayRef> = args.args.iter().map(|a| a.to_array(n)).collect::<Result<_>>()?;
        let types: Vec<DataType> = arrays.iter().map(|a| a.data_type().clone()).collect();
        let shape = self.shape(&types).ok_or_else(|| DataFusionError::Internal(format!("{}: arguments", self.name)))?;
        let mut cache: Option<(String, String, Regex, bool)> = None;
        let mut out_text = Vec::new();
        let mut out_int = Vec::new();
        let mut out_bool = Vec::new();
        for i in 0..n {
            // NULL in any argument: NULL.
            if arrays.iter().any(|a| a.is_null(i)) {
                out_text.push(None);
                out_int.push(None);
                out_bool.push(None);
                continue;
            }
            let text = |k: usize| arrays[k].as_string::<i32>().value(i);
            let int = |k: usize| arrays[k].as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(i);
            let at = |k: usize, kind: Arg| shape.get(k).filter(|a| **a == kind).map(|_| k);
            let flags = match self.op {
                Op::Replace => at(3, Arg::Text).or(at(5, Arg::Text)).map(text),
                Op::Count => at(3, Arg::Text).map(text),
                Op::Instr => at(5, Arg::Text).map(text),
                Op::Like => at(2, Arg::Text).map(text),
            }
            .unwrap_or("");
            let (s, p) = (text(0), text(1));
            let (re, global) = match &cache {
                Some((cp, cf, re, g)) if cp == p && cf == flags => (re.clone(), *g),
                _ => {
                    let (re, g) = compile(p, flags, true).map_err(error)?;
                    cache = Some((p.to_string(), flags.to_string(), re.clone(), g));
                    (re, g)
                }
            };
            if self.op != Op::Replace && global {
                return Err(error(SqlError::new(
                    code::INVALID_PARAMETER,
                    format!("{}() does not support the \"global\" option", self.name),
                )));
            }
            let start = match self.op {
                Op::Replace => at(3, Arg::Int).map(int),
                Op::Count | Op::Instr => at(2, Arg::Int).map(int),
                Op::Like => None,
            }
            .unwrap_or(1);
            if start < 1 {
                return Err(bad("start", start));
            }
            let offset = s.char_indices().nth(start as usize - 1).map_or(s.len(), |(b, _)| b);
            match self.op {
                Op::Replace => {
                    let nth = match at(4, Arg::Int).map(int) {
                        Some(v) if v < 0 => return Err(bad("n", v)),
                        Some(v) => v as usize,
                        None if global => 0,
                        None => 1,
                    };
                    out_text.push(Some(replace(s, offset, &re, text(2), nth)));
                }
                Op::Count => out_int.push(Some(re.find_iter(&s[offset..]).count() as i32)),
                Op::Instr => {
                    let nth = at(3, Arg::Int).map(int).unwrap_or(1);
                    let end = at(4, Arg::Int).map(int).unwrap_or(0);
                    let sub = at(6, Arg::Int).map(int).unwrap_or(0);
                    if nth < 1 {
                        return Err(bad("n", nth));
                    }
                    if !(0..=1).contains(&end) {
                        return Err(bad("endoption", end));
                    }
                    if sub < 0 {
                        return Err(bad("subexpr", sub));
                    }
                    let found = re
                        .captures_iter(&s[offset..])
                        .nth(nth as usize - 1)
                        .and_then(|c| c.get(sub as usize))
                        .map(|m| offset + if end == 0 { m.start() } else { m.end() });
                    // Characters before the byte position, counted from 1.
                    out_int.push(Some(found.map_or(0, |b| s[..b].chars().count() as i32 + 1)));
                }
                Op::Like => out_bool.push(Some(re.is_match(s))),
            }
        }
        let out: ArrayRef = match self.op {
            Op::Replace => Arc::new(StringArray::from(out_text)),
            Op::Count | Op::Instr => Arc::new(Int32Array::from(out_int)),
            Op::Like => Arc::new(BooleanArray::from(out_bool)),
        };
        crate::values::udf_values::columnar(out, scalar)
    }
}

/// `s` with the `nth` match (0: every match) from byte `offset` on replaced
/// by `replacement` read as PostgreSQL reads it.
fn replace(s: &str, offset: usize, re: &Regex, replacement: &str, nth: usize) -> String {
    let mut out = String::with_capacity(s.len());
    out.push_str(&s[..offset]);
    let mut last = offset;
    for (k, caps) in re.captures_iter(&s[offset..]).enumerate() {
        if nth != 0 && k + 1 != nth {
            continue;
        }
        let m = caps.get(0).expect("the whole match");
        out.push_str(&s[last..offset + m.start()]);
        expand(&mut out, replacement, &caps);
        last = offset + m.end();
        if nth != 0 {
            break;
        }
    }
    out.push_str(&s[last..]);
    out
}

/// PostgreSQL's replacement text: `\1` … `\9` a group, `\&` the match,
/// `\\` a backslash; any other backslash is kept.
fn expand(out: &mut String, replacement: &str, caps: &regex::Captures<'_>) {
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            Some(d @ '1'..='9') => {
                chars.next();
                if let Some(g) = caps.get(d as usize - '0' as usize) {
                    out.push_str(g.as_str());
                }
            }
            Some('&') => {
                chars.next();
                out.push_str(caps.get(0).map_or("", |m| m.as_str()));
            }
            Some('\\') => {
                chars.next();
                out.push('\\');
            }
            _ => out.push('\\'),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_as_postgres_does() {
        let (re, _) = compile("a|e|i|o|u", "i", false).unwrap();
        let s = "A PostgreSQL function";
        assert_eq!(replace(s, 0, &re, "X", 0), "X PXstgrXSQL fXnctXXn");
        assert_eq!(replace(s, 0, &re, "X", 2), "A PXstgreSQL function");
        assert_eq!(replace(s, 6, &re, "X", 0), "A PostgrXSQL fXnctXXn");
        let (re, _) = compile("(b)(a)", "", false).unwrap();
        assert_eq!(replace("xbay", 0, &re, r"[\2\1\&\\]", 0), r"x[abba\]y");
    }
}
