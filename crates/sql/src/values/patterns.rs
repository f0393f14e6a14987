//! LIKE and SIMILAR TO patterns as PostgreSQL reads them, rewritten into the
//! forms DataFusion evaluates: a SIMILAR TO pattern becomes the anchored
//! regular expression PostgreSQL makes of it, and a LIKE pattern with an
//! escape character other than the backslash (`ESCAPE '#'`, or `ESCAPE ''`
//! for none) is rewritten to use the backslash, the only escape DataFusion's
//! LIKE knows. Both need the pattern as a literal; any other pattern is
//! refused (0A000) rather than matched another way.

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr as Ast, Value};

use crate::error::{SqlError, code};

/// Rewrites `x SIMILAR TO 'pattern'` into the regular-expression match
/// PostgreSQL makes of it; returns an error for a pattern that is not a
/// literal.
pub fn rewrite_similar_to(e: &mut Ast) -> std::result::Result<(), SqlError> {
    let Ast::SimilarTo { negated, expr, pattern, escape_char } = e else { return Ok(()) };
    let escape = match escape_char.as_ref().map(|v| &v.value) {
        None => Some('\\'),
        Some(Value::SingleQuotedString(s)) if s.is_empty() => None,
        Some(Value::SingleQuotedString(s)) if s.chars().count() == 1 => s.chars().next(),
        Some(_) => return Err(SqlError::new("22019", "invalid escape string")),
    };
    let text = match pattern.as_ref() {
        Ast::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => s.clone(),
            _ => return Err(not_literal()),
        },
        _ => return Err(not_literal()),
    };
    let regex = similar_to_regex(&text, escape)?;
    let op = if *negated { BinaryOperator::PGRegexNotMatch } else { BinaryOperator::PGRegexMatch };
    let right = Ast::Value(Value::SingleQuotedString(regex).into());
    *e = Ast::BinaryOp { left: expr.clone(), op, right: Box::new(right) };
    Ok(())
}

/// `c` matched literally in a regular expression.
fn escaped(c: char) -> String {
    if "\\.+*?()|[]{}^$#&-~".contains(c) { format!("\\{c}") } else { c.to_string() }
}

/// Rewrites `x LIKE 'pattern' ESCAPE 'c'` (and ILIKE) with `c` other than
/// the backslash into the same match written with the backslash escape.
pub fn rewrite_like_escape(e: &mut Ast) -> std::result::Result<(), SqlError> {
    let (pattern, escape_char) = match e {
        Ast::Like { pattern, escape_char, any: false, .. } | Ast::ILike { pattern, escape_char, any: false, .. } => {
            (pattern, escape_char)
        }
        _ => return Ok(()),
    };
    let escape = match escape_char.as_ref().map(|v| &v.value) {
        None => return Ok(()),
        Some(Value::SingleQuotedString(s)) if s == "\\" => return Ok(()),
        Some(Value::SingleQuotedString(s)) if s.is_empty() => None,
        Some(Value::SingleQuotedString(s)) if s.chars().count() == 1 => s.chars().next(),
        Some(_) => {
            return Err(SqlError::new("22025", "invalid escape string")
                .with_hint("Escape string must be empty or one character."));
        }
    };
    let Ast::Value(v) = pattern.as_mut() else {
        return Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            "LIKE with an ESCAPE other than the backslash and a pattern that is not a literal is not supported yet",
        ));
    };
    let Value::SingleQuotedString(text) = &mut v.value else { return Ok(()) };
    *text = like_with_backslash(text, escape)?;
    *escape_char = None;
    Ok(())
}

/// A LIKE pattern whose escape character is `escape` (or none) written
/// with the backslash as its escape character.
pub fn like_with_backslash(pattern: &str, escape: Option<char>) -> std::result::Result<String, SqlError> {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            let Some(next) = chars.next() else {
                return Err(SqlError::new("22025", "LIKE pattern must not end with escape character"));
            };
            if matches!(next, '%' | '_' | '\\') {
                out.push('\\');
            }
            out.push(next);
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

fn not_literal() -> SqlError {
    SqlError::new(code::FEATURE_NOT_SUPPORTED, "SIMILAR TO with a pattern that is not a literal is not supported yet")
}

/// PostgreSQL's translation of a SIMILAR TO pattern into a regular
/// expression matching the whole string.
pub fn similar_to_regex(pattern: &str, escape: Option<char>) -> std::result::Result<String, SqlError> {
    Ok(format!("^(?:{})$", similar_body(pattern, escape, false)?))
}

/// `substring(s SIMILAR pattern ESCAPE e)` (or `FROM … FOR …`) as a regular
/// expression whose first group is the part returned: the pattern's
/// middle, between its two `e"` separators (after the first when there is
/// one, the whole pattern when there is none). As in PostgreSQL, the part
/// before it matches as little as it can.
pub fn similar_substring_regex(pattern: &str, escape: Option<char>) -> std::result::Result<String, SqlError> {
    let parts: Vec<&str> = match escape {
        Some(e) => pattern.split(&format!("{e}\"")).collect(),
        None => vec![pattern],
    };
    let (before, middle, after) = match parts.as_slice() {
        [whole] => ("", *whole, ""),
        [a, b] => (*a, *b, ""),
        [a, b, c] => (*a, *b, *c),
        _ => {
            return Err(SqlError::new(
                "2200C",
                "SQL regular expression may not contain more than two escape-double-quote separators",
            ));
        }
    };
    Ok(format!(
        "^(?:{})({})(?:{})$",
        similar_body(before, escape, true)?,
        similar_body(middle, escape, false)?,
        similar_body(after, escape, false)?
    ))
}

/// A SIMILAR TO pattern's regular expression, unanchored; `lazy` makes
/// its quantifiers match as little as they can.
fn similar_body(pattern: &str, escape: Option<char>, lazy: bool) -> std::result::Result<String, SqlError> {
    let lazily = |q: &str| if lazy { format!("{q}?") } else { q.to_string() };
    let mut out = String::new();
    let mut chars = pattern.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            let Some(next) = chars.next() else {
                return Err(SqlError::new("2201B", "invalid regular expression: trailing escape character"));
            };
            out.push_str(&escaped(next));
            continue;
        }
        if in_class {
            if c == ']' {
                in_class = false;
            }
            out.push(c);
            continue;
        }
        match c {
            '%' => out.push_str(&lazily(".*")),
            '_' => out.push('.'),
            '[' => {
                in_class = true;
                out.push(c);
            }
            '*' | '+' | '?' | '}' => out.push_str(&lazily(&c.to_string())),
            // Literal in SIMILAR TO, special in a regular expression.
            '.' | '^' | '$' | '\\' => out.push_str(&escaped(c)),
            _ => out.push(c),
        }
    }
    Ok(out)
}

/// `SUBSTRING(s FROM 'pattern' FOR 'escape')`: the SQL regular expression
/// substring (a pattern that is a string constant), as `regexp_match`'s
/// first group (NULL when the string does not match); and `SUBSTRING(s
/// FROM 'pattern')`, the POSIX one.
pub fn rewrite_similar_substring(e: &mut Ast) -> std::result::Result<(), SqlError> {
    let text = |x: &Ast| match x {
        Ast::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => Some(Some(s.clone())),
            Value::Null => Some(None),
            _ => None,
        },
        _ => None,
    };
    // `SUBSTRING(s FROM 'pattern')`: a POSIX regular expression's first
    // group, or its whole match when it has none.
    if let Ast::Substring { expr, substring_from: Some(from), substring_for: None, .. } = e
        && let Some(Some(pattern)) = text(from)
    {
        let grouped = regex::Regex::new(&pattern).map(|r| r.captures_len() > 1).map_err(|err| {
            SqlError::new(
                "2201B",
                format!("invalid regular expression: {}", err.to_string().lines().last().unwrap_or("")),
            )
        })?;
        let regex = if grouped { format!("(?s){pattern}") } else { format!("(?s)({pattern})") };
        if let Ok(parsed) =
            crate::parser::parse_expr(&format!("(regexp_match({expr}, '{}'))[1]", regex.replace('\'', "''")))
        {
            *e = parsed;
        }
        return Ok(());
    }
    let Ast::Substring { expr, substring_from: Some(from), substring_for: Some(escape), .. } = e else {
        return Ok(());
    };
    let (Some(pattern), Some(escape)) = (text(from), text(escape)) else { return Ok(()) };
    let call = match (pattern, escape) {
        (Some(pattern), Some(escape)) => {
            let mut esc = escape.chars();
            let escape = match (esc.next(), esc.next()) {
                (c, None) => c,
                _ => return Err(SqlError::new("22025", "invalid escape string")),
            };
            // `%` and `_` match a newline too.
            let regex = format!("(?s){}", similar_substring_regex(&pattern, escape)?);
            format!("(regexp_match({expr}, '{}'))[1]", regex.replace('\'', "''"))
        }
        _ => "CAST(NULL AS text)".to_string(),
    };
    if let Ok(parsed) = crate::parser::parse_expr(&call) {
        *e = parsed;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similar_to_patterns_become_anchored_regular_expressions() {
        assert_eq!(similar_to_regex("_bcd%", Some('\\')).unwrap(), "^(?:.bcd.*)$");
        assert_eq!(similar_to_regex("a.b|c", Some('\\')).unwrap(), "^(?:a\\.b|c)$");
        assert_eq!(similar_to_regex("100\\%", Some('\\')).unwrap(), "^(?:100%)$");
        assert_eq!(similar_to_regex("[a_%]x", None).unwrap(), "^(?:[a_%]x)$");
        assert!(similar_to_regex("a\\", Some('\\')).is_err());
    }

    #[test]
    fn similar_substrings_return_the_middle_part() {
        let re = |p: &str| regex::Regex::new(&similar_substring_regex(p, Some('#')).unwrap()).unwrap();
        let middle = |p: &str, s: &str| re(p).captures(s).map(|c| c[1].to_string());
        assert_eq!(middle("a#\"(b_d)#\"%", "abcdefg").as_deref(), Some("bcd"));
        assert_eq!(middle("a*#\"%#\"g*", "abcdefg").as_deref(), Some("abcdefg"));
        assert_eq!(middle("a|b#\"%#\"g", "abcdefg").as_deref(), Some("bcdef"));
        assert_eq!(middle("a#\"%g", "abcdefg").as_deref(), Some("bcdefg"));
        assert_eq!(middle("#\"(b_d)#\"%", "abcdefg"), None);
        assert!(similar_substring_regex("a*#\"%#\"g*#\"x", Some('#')).is_err());
    }

    #[test]
    fn like_patterns_are_rewritten_to_the_backslash_escape() {
        assert_eq!(like_with_backslash("h#%", Some('#')).unwrap(), "h\\%");
        assert_eq!(like_with_backslash("m%aca", Some('%')).unwrap(), "maca");
        assert_eq!(like_with_backslash("m%a%%a", Some('%')).unwrap(), "ma\\%a");
        assert_eq!(like_with_backslash("b_e__r", Some('_')).unwrap(), "be\\_r");
        assert_eq!(like_with_backslash("a\\b%", None).unwrap(), "a\\\\b%");
        assert_eq!(like_with_backslash("a\\b", Some('#')).unwrap(), "a\\\\b");
        assert!(like_with_backslash("ab#", Some('#')).is_err());
    }
}
