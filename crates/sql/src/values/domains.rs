//! Domains' constraints, where values meet them: rows written to a column
//! declared with a domain (INSERT, UPDATE, COPY) and casts to a domain.
//!
//! A domain's CHECK is SQL over `VALUE`; it is evaluated by substituting
//! the value's expression for `VALUE` (a column of the new rows, or the
//! cast's operand) and planning it like a table's CHECK, with PostgreSQL's
//! errors: `domain d does not allow null values` (23502) and `value for
//! domain d violates check constraint "c"` (23514).

use datafusion::sql::sqlparser::ast::{Expr, visit_expressions_mut};

use crate::error::{Result, SqlError, code};
use crate::values::user_types::{DomainDef, TypeDef};

/// `check` with every unquoted `VALUE` replaced by `value` (SQL text).
pub fn substitute_value(check: &str, value: &Expr) -> Result<Expr> {
    let mut e = crate::parser::parse_expr(check)?;
    let _ = visit_expressions_mut(&mut e, |x| {
        if let Expr::Identifier(i) = x
            && i.quote_style.is_none()
            && i.value.eq_ignore_ascii_case("value")
        {
            *x = Expr::Nested(Box::new(value.clone()));
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    Ok(e)
}

pub fn null_error(t: &TypeDef) -> SqlError {
    SqlError::new(code::NOT_NULL, format!("domain {} does not allow null values", t.name))
}

pub fn check_error(t: &TypeDef, constraint: &str) -> SqlError {
    SqlError::new(code::CHECK, format!("value for domain {} violates check constraint \"{constraint}\"", t.name))
}

/// `x::domain` in a query: the cast to the base type, checked against the
/// domain's constraints by `tessera_domain_check(value, ok, …)` calls
/// that pass the value through or raise the domain's error.
pub fn cast_expr(t: &TypeDef, d: &DomainDef, operand: &Expr) -> Result<Expr> {
    let base = crate::parser::parse_expr(&format!("CAST(({operand}) AS {})", d.base.cast_name()))?;
    let mut out = base.clone();
    if d.not_null {
        out = crate::parser::parse_expr(&format!(
            "tessera_domain_check({out}, ({base}) IS NOT NULL, '{}', '')",
            t.name.replace('\'', "''")
        ))?;
    }
    for c in &d.checks {
        let ok = substitute_value(&c.expr, &base)?;
        out = crate::parser::parse_expr(&format!(
            "tessera_domain_check({out}, {ok}, '{}', '{}')",
            t.name.replace('\'', "''"),
            c.name.replace('\'', "''")
        ))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_is_substituted() {
        let v = crate::parser::parse_expr("\"n\"").unwrap();
        let e = substitute_value("VALUE > 0 AND value < 10 AND \"value\" = 1", &v).unwrap();
        assert_eq!(e.to_string(), "(\"n\") > 0 AND (\"n\") < 10 AND \"value\" = 1");
    }
}
