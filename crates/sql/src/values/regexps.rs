//! PostgreSQL's regular-expression functions that DataFusion lacks:
//! `regexp_split_to_array`, `regexp_split_to_table`, `regexp_matches`,
//! `regexp_substr`, and `string_to_table`; and set-returning functions
//! in FROM.
//!
//! A pattern is PostgreSQL's with its flags: `i` (case-insensitive), `c`
//! (case-sensitive), `n` (newline-sensitive: `.` stops at newlines, `^`
//! and `$` match at them), `s`, `x` (expanded), `q` (the pattern is a
//! literal), and `g` where a function takes it. Without `n`, `.` matches
//! a newline, as in PostgreSQL. Any other flag is 22023.
//!
//! The set-returning forms are `unnest` of their array forms: in a select
//! list (`SELECT regexp_split_to_table(s, ',')`) through [`rewrite`], and
//! in FROM through [`rewrite_from`], which also serves `jsonb_array_elements`
//! and the other set-returning functions `json_sets.rs` lists, naming
//! the column as PostgreSQL does.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListBuilder, StringArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use regex::Regex;

use crate::error::{SqlError, code};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    SplitToArray,
    Matches,
    Substr,
}

/// Registers this module's functions.
pub fn register(ctx: &SessionContext) {
    for (name, op) in [
        ("regexp_split_to_array", Op::SplitToArray),
        ("tessera_regexp_matches", Op::Matches),
        ("regexp_substr", Op::Substr),
    ] {
        ctx.register_udf(ScalarUDF::new_from_impl(RegexpFn {
            name,
            op,
            signature: Signature::variadic_any(Volatility::Immutable),
        }));
    }
}

fn error(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// `pattern` with PostgreSQL's `flags`; whether `g` was given.
pub fn compile(pattern: &str, flags: &str, allow_global: bool) -> std::result::Result<(Regex, bool), SqlError> {
    let (mut prefix, mut global, mut literal, mut newline) = (String::new(), false, false, false);
    let mut insensitive = false;
    for f in flags.chars() {
        match f {
            'i' => insensitive = true,
            'c' => insensitive = false,
            'n' | 'w' => newline = true,
            'p' | 's' => newline = false,
            'x' => prefix.push('x'),
            'q' => literal = true,
            'g' if allow_global => global = true,
            other => {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER,
                    format!("invalid regular expression option: \"{other}\""),
                ));
            }
        }
    }
    if insensitive {
        prefix.push('i');
    }
    // PostgreSQL's `.` matches a newline unless newline-sensitive.
    prefix.push_str(if newline { "m" } else { "s" });
    let body = if literal { regex::escape(pattern) } else { pattern.to_string() };
    let re = Regex::new(&format!("(?{prefix}){body}")).map_err(|e| {
        SqlError::new("2201B", format!("invalid regular expression: {}", e.to_string().lines().last().unwrap_or("")))
    })?;
    Ok((re, global))
}

/// PostgreSQL's split: a zero-length match at the start or end of the
/// text, or right after the previous match, does not split.
pub fn split(s: &str, re: &Regex) -> Vec<String> {
    let (mut out, mut start, mut previous_end) = (Vec::new(), 0usize, None::<usize>);
    for m in re.find_iter(s) {
        if m.start() == m.end() && (m.start() == 0 || m.start() == s.len() || previous_end == Some(m.start())) {
            continue;
        }
        out.push(s[start..m.start()].to_string());
        start = m.end();
        previous_end = Some(m.end());
    }
    out.push(s[start..].to_string());
    out
}

/// Each match's captures (or the whole match, without groups).
fn matches(s: &str, re: &Regex, global: bool) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    for caps in re.captures_iter(s) {
        let row: Vec<Option<String>> = if caps.len() == 1 {
            vec![caps.get(0).map(|m| m.as_str().to_string())]
        } else {
            (1..caps.len()).map(|g| caps.get(g).map(|m| m.as_str().to_string())).collect()
        };
        out.push(row);
        if !global {
            break;
        }
    }
    out
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct RegexpFn {
    name: &'static str,
    op: Op,
    signature: Signature,
}

fn text_list() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
}

impl ScalarUDFImpl for RegexpFn {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.op {
            Op::SplitToArray => text_list(),
            Op::Matches => DataType::List(Arc::new(Field::new("item", text_list(), true))),
            Op::Substr => DataType::Utf8,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let arrays: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| a.to_array(n).and_then(|a| Ok(datafusion::arrow::compute::cast(&a, &DataType::Utf8)?)))
            .collect::<Result<_>>()?;
        if arrays.len() < 2 {
            return Err(DataFusionError::Plan(format!("{} takes a string and a pattern", self.name)));
        }
        let text = |k: usize, i: usize| arrays.get(k).filter(|a| !a.is_null(i)).map(|a| a.as_string::<i32>().value(i));
        let mut cache: Option<(String, String, Regex, bool)> = None;
        let mut regex_for = |p: &str, f: &str| -> Result<(Regex, bool)> {
            if let Some((cp, cf, re, g)) = &cache
                && cp == p
                && cf == f
            {
                return Ok((re.clone(), *g));
            }
            let (re, g) = compile(p, f, self.op == Op::Matches).map_err(error)?;
            cache = Some((p.to_string(), f.to_string(), re.clone(), g));
            Ok((re, g))
        };
        let out: ArrayRef = match self.op {
            Op::SplitToArray => {
                let mut b = ListBuilder::new(StringBuilder::new());
                for i in 0..n {
                    let (Some(s), Some(p)) = (text(0, i), text(1, i)) else {
                        b.append_null();
                        continue;
                    };
                    let (re, _) = regex_for(p, text(2, i).unwrap_or(""))?;
                    for piece in split(s, &re) {
                        b.values().append_value(piece);
                    }
                    b.append(true);
                }
                Arc::new(b.finish())
            }
            Op::Matches => {
                let mut b = ListBuilder::new(ListBuilder::new(StringBuilder::new()));
                for i in 0..n {
                    let (Some(s), Some(p)) = (text(0, i), text(1, i)) else {
                        b.append_null();
                        continue;
                    };
                    let (re, global) = regex_for(p, text(2, i).unwrap_or(""))?;
                    for row in matches(s, &re, global) {
                        for cell in row {
                            b.values().values().append_option(cell);
                        }
                        b.values().append(true);
                    }
                    b.append(true);
                }
                Arc::new(b.finish())
            }
            Op::Substr => {
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    out.push(substr(&arrays, &mut regex_for, i)?);
                }
                Arc::new(StringArray::from(out))
            }
        };
        crate::values::udf_values::columnar(out, scalar)
    }
}

/// `regexp_substr(s, p [, start [, n [, flags [, subexpr]]]])` of row `i`.
fn substr(
    arrays: &[ArrayRef],
    regex_for: &mut impl FnMut(&str, &str) -> Result<(Regex, bool)>,
    i: usize,
) -> Result<Option<String>> {
    let text = |k: usize| arrays.get(k).map(|a| (!a.is_null(i)).then(|| a.as_string::<i32>().value(i).to_string()));
    let number = |k: usize, default: i64| -> Result<Option<i64>> {
        match text(k) {
            None => Ok(Some(default)),
            Some(None) => Ok(None),
            Some(Some(t)) => t.trim().parse().map(Some).map_err(|_| {
                error(SqlError::new(code::INVALID_TEXT, format!("invalid input syntax for type integer: \"{t}\"")))
            }),
        }
    };
    let (Some(Some(s)), Some(Some(p))) = (text(0), text(1)) else { return Ok(None) };
    let (Some(start), Some(nth), Some(sub)) = (number(2, 1)?, number(3, 1)?, number(5, 0)?) else { return Ok(None) };
    let flags = match text(4) {
        None => String::new(),
        Some(None) => return Ok(None),
        Some(Some(f)) => f,
    };
    let bad = |what: &str, v: i64| {
        error(SqlError::new(code::INVALID_PARAMETER, format!("invalid value for parameter \"{what}\": {v}")))
    };
    if start < 1 {
        return Err(bad("start", start));
    }
    if nth < 1 {
        return Err(bad("n", nth));
    }
    if sub < 0 {
        return Err(bad("subexpr", sub));
    }
    let (re, _) = regex_for(&p, &flags)?;
    let offset = s.char_indices().nth(start as usize - 1).map_or(s.len(), |(b, _)| b);
    let Some(caps) = re.captures_iter(&s[offset..]).nth(nth as usize - 1) else { return Ok(None) };
    Ok(caps.get(sub as usize).map(|m| m.as_str().to_string()))
}

/// PostgreSQL's `.` matches a newline unless a pattern asks otherwise;
/// Rust's regex (behind DataFusion's `~`, `regexp_match`, and SIMILAR TO,
/// which `strict.rs` makes a `~`) does not: their patterns get the `s`
/// flag in front (`'(?s)' || pattern`). (`regexp_pg`'s functions read
/// PostgreSQL's flags themselves.)
pub fn dot_matches_newline(e: &mut datafusion::sql::sqlparser::ast::Expr) {
    use datafusion::sql::sqlparser::ast::{
        BinaryOperator as B, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Value,
    };
    let prefix = |p: &mut Expr| {
        if let Expr::Value(v) = p
            && let Value::SingleQuotedString(text) | Value::EscapedStringLiteral(text) = &mut v.value
        {
            if !text.starts_with("(?s)") {
                text.insert_str(0, "(?s)");
            }
            return;
        }
        if let Ok(new) = crate::parser::parse_expr(&format!("'(?s)' || ({p})")) {
            *p = new;
        }
    };
    match e {
        Expr::BinaryOp {
            op: B::PGRegexMatch | B::PGRegexIMatch | B::PGRegexNotMatch | B::PGRegexNotIMatch,
            right,
            ..
        } => prefix(right),
        Expr::Function(f) => {
            let name = f.name.to_string().to_lowercase();
            let name = name.trim_start_matches("pg_catalog.");
            if name != "regexp_match" {
                return;
            }
            if let FunctionArguments::List(list) = &mut f.args
                && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(pattern))) = list.args.get_mut(1)
            {
                prefix(pattern);
            }
        }
        _ => {}
    }
}

/// The set-returning functions written as `unnest` of an array form, and
/// the column name PostgreSQL gives each.
const SETS: &[(&str, &str, &str)] = &[
    ("regexp_split_to_table", "regexp_split_to_array", "regexp_split_to_table"),
    ("string_to_table", "string_to_array", "string_to_table"),
    ("regexp_matches", "tessera_regexp_matches", "regexp_matches"),
];

/// `regexp_split_to_table(…)` and the others in [`SETS`] as `unnest(…)`
/// of their array forms, in expressions (see the module's text).
pub fn rewrite(e: &mut datafusion::sql::sqlparser::ast::Expr) {
    use datafusion::sql::sqlparser::ast::{Expr, FunctionArguments};
    let Expr::Function(f) = e else { return };
    let name = f.name.to_string().to_lowercase();
    let Some((_, array_form, _)) = SETS.iter().find(|(n, _, _)| *n == name.trim_start_matches("pg_catalog.")) else {
        return;
    };
    let FunctionArguments::List(list) = &f.args else { return };
    let args: Vec<String> = list.args.iter().map(|a| a.to_string()).collect();
    if let Ok(new) = crate::parser::parse_expr(&format!("unnest({array_form}({}))", args.join(", "))) {
        *e = new;
    }
}

/// Set-returning functions in FROM (`FROM regexp_split_to_table(…) AS
/// t(x)`, `FROM jsonb_array_elements(…)`): a derived table selecting the
/// function's expression form, with PostgreSQL's column name.
pub fn rewrite_from(stmt: &mut datafusion::sql::sqlparser::ast::Statement) {
    use datafusion::sql::sqlparser::ast::{
        Expr, Function, FunctionArguments, Ident, ObjectName, TableAlias, TableFactor, VisitMut, VisitorMut,
    };
    struct Sets;
    impl VisitorMut for Sets {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> std::ops::ControlFlow<()> {
            let TableFactor::Table { name, args: Some(args), alias, .. } = factor else {
                return std::ops::ControlFlow::Continue(());
            };
            let fname = name.to_string().to_lowercase();
            let fname = fname.trim_start_matches("pg_catalog.").to_string();
            // `pg_catalog.unnest(…)` (as psql writes it) is `unnest(…)`.
            if fname == "unnest" && name.0.len() == 2 {
                let array_exprs = args
                    .args
                    .iter()
                    .filter_map(|a| match a {
                        datafusion::sql::sqlparser::ast::FunctionArg::Unnamed(
                            datafusion::sql::sqlparser::ast::FunctionArgExpr::Expr(e),
                        ) => Some(e.clone()),
                        _ => None,
                    })
                    .collect();
                *factor = TableFactor::UNNEST {
                    alias: alias.take(),
                    array_exprs,
                    with_offset: false,
                    with_offset_alias: None,
                    with_ordinality: false,
                };
                return std::ops::ControlFlow::Continue(());
            }
            // PostgreSQL's column: the function's name, or `value` for the
            // json element sets (`key` never: object_keys is a name).
            let column = match fname.as_str() {
                "jsonb_array_elements"
                | "json_array_elements"
                | "jsonb_array_elements_text"
                | "json_array_elements_text" => "value".to_string(),
                "jsonb_object_keys" | "json_object_keys" => fname.clone(),
                f if SETS.iter().any(|(n, _, _)| *n == f) => fname.clone(),
                _ => return std::ops::ControlFlow::Continue(()),
            };
            let mut call = Expr::Function(Function {
                name: ObjectName::from(vec![Ident::new(fname.clone())]),
                uses_odbc_syntax: false,
                parameters: FunctionArguments::None,
                args: FunctionArguments::List(datafusion::sql::sqlparser::ast::FunctionArgumentList {
                    duplicate_treatment: None,
                    args: args.args.clone(),
                    clauses: vec![],
                }),
                filter: None,
                null_treatment: None,
                over: None,
                within_group: vec![],
            });
            crate::values::json_sets::rewrite(&mut call);
            rewrite(&mut call);
            // The alias, if any, names the column of a function declared
            // to return a scalar (`regexp_split_to_table`), not of one
            // with an OUT parameter (`jsonb_array_elements`: `value`).
            let mut alias = alias.clone().unwrap_or(TableAlias {
                explicit: true,
                name: Ident::new(fname.clone()),
                columns: vec![],
                at: None,
            });
            let column = match alias.columns.first() {
                Some(c) => c.name.value.clone(),
                None if alias.name.value != fname && column != "value" => alias.name.value.clone(),
                None => column,
            };
            alias.columns = vec![];
            let sql = format!("SELECT {call} AS {}", Ident::with_quote('"', column));
            let Ok(query) = crate::parser::parse_statement(&sql) else {
                return std::ops::ControlFlow::Continue(());
            };
            let datafusion::sql::sqlparser::ast::Statement::Query(subquery) = query else {
                return std::ops::ControlFlow::Continue(());
            };
            *factor = TableFactor::Derived { lateral: false, subquery, alias: Some(alias), sample: None };
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Sets);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_as_postgres() {
        let (re, _) = compile(r"\s*", "", false).unwrap();
        assert_eq!(split("hello world", &re).join(","), "h,e,l,l,o,w,o,r,l,d");
        let (re, _) = compile(",", "", false).unwrap();
        assert_eq!(split("a,,b,", &re), vec!["a", "", "b", ""]);
        let (re, _) = compile("X", "i", false).unwrap();
        assert_eq!(split("axbXc", &re), vec!["a", "b", "c"]);
        assert!(compile("a", "z", false).is_err());
        assert!(compile("a", "g", false).is_err());
    }

    #[test]
    fn matches_as_postgres() {
        let (re, g) = compile("(b)(.)", "g", true).unwrap();
        let m = matches("abcabd", &re, g);
        assert_eq!(m, vec![vec![Some("b".into()), Some("c".into())], vec![Some("b".into()), Some("d".into())]]);
        let (re, g) = compile("x+", "", true).unwrap();
        assert_eq!(matches("axxbx", &re, g), vec![vec![Some("xx".into())]]);
    }
}
