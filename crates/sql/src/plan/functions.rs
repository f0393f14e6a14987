//! PostgreSQL functions DataFusion lacks: session information, sequences,
//! and the catalog helpers psql and drivers call (`catalog_helpers`).

mod catalog_helpers;

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{ColumnarValue, Volatility, create_udf};

use crate::error::{SqlError, code};
use crate::scope::Resolver;
use crate::scope::settings::SERVER_VERSION;
use crate::values::types::SqlType;

fn text(v: impl Into<String>) -> DfResult<ColumnarValue> {
    Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(v.into()))))
}

/// Applies `f` to each string argument value (scalar or array).
fn map_text(
    arg: &ColumnarValue,
    ret: DataType,
    mut f: impl FnMut(&str) -> DfResult<Option<ScalarValue>>,
) -> DfResult<ColumnarValue> {
    let null = ScalarValue::try_from(&ret)?;
    match arg {
        ColumnarValue::Scalar(s) => {
            let v = match s {
                ScalarValue::Utf8(Some(v)) | ScalarValue::LargeUtf8(Some(v)) | ScalarValue::Utf8View(Some(v)) => f(v)?,
                _ => None,
            };
            Ok(ColumnarValue::Scalar(v.unwrap_or(null)))
        }
        ColumnarValue::Array(a) => {
            if a.is_empty() {
                return Ok(ColumnarValue::Array(datafusion::arrow::array::new_empty_array(&ret)));
            }
            let a = datafusion::arrow::compute::cast(a, &DataType::Utf8)?;
            let strings = a.as_string::<i32>();
            let mut out = Vec::with_capacity(strings.len());
            for v in strings.iter() {
                out.push(match v {
                    Some(v) => f(v)?.unwrap_or_else(|| null.clone()),
                    None => null.clone(),
                });
            }
            Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
        }
    }
}

pub(crate) fn sql_err(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The sequence a nextval/currval/setval argument names.
pub(crate) fn find_sequence(
    catalog: &crate::storage::catalog::Catalog,
    db: &str,
    arg: &str,
) -> DfResult<(String, Arc<crate::storage::catalog::SequenceDef>)> {
    let name = seq_name(arg);
    match catalog.sequence(db, &name) {
        Some(seq) => Ok((name, seq)),
        None => Err(sql_err(SqlError::new(code::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist")))),
    }
}

fn seq_name(s: &str) -> String {
    let s = s.trim().trim_start_matches("public.");
    if s.starts_with('"') { s.trim_matches('"').to_string() } else { s.to_lowercase() }
}

/// Normalizes PostgreSQL spellings DataFusion does not accept, as psql's and
/// drivers' catalog queries use them: `pg_catalog.f(...)` → `f(...)`,
/// `OPERATOR(pg_catalog.~)` → `~`, and `COLLATE pg_catalog.default` → nothing.
pub fn normalize_pg(stmt: &mut datafusion::sql::sqlparser::ast::Statement, catalog_query: bool) {
    use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, ObjectName, visit_expressions_mut};
    let _ = visit_expressions_mut(stmt, |e| {
        // encode('\x…', 'hex'): PostgreSQL reads the untyped literal as
        // bytea (its hex or escape input), not as the text's bytes.
        if let Expr::Function(f) = e
            && f.name.0.len() == 1
            && f.name.0[0].as_ident().is_some_and(|i| i.value.eq_ignore_ascii_case("encode"))
            && let datafusion::sql::sqlparser::ast::FunctionArguments::List(list) = &mut f.args
            && let Some(datafusion::sql::sqlparser::ast::FunctionArg::Unnamed(
                datafusion::sql::sqlparser::ast::FunctionArgExpr::Expr(first),
            )) = list.args.first_mut()
            && matches!(first, Expr::Value(v) if matches!(v.value, datafusion::sql::sqlparser::ast::Value::SingleQuotedString(_)))
            && let Ok(cast) = crate::parser::parse_expr(&format!("CAST({first} AS bytea)"))
        {
            *first = cast;
        }
        match e {
            Expr::Function(f)
                if f.name.0.len() == 1
                    && f.name.0[0].as_ident().is_some_and(|i| i.value.eq_ignore_ascii_case("array"))
                    && matches!(f.args, datafusion::sql::sqlparser::ast::FunctionArguments::Subquery(_)) =>
            {
                // ARRAY(SELECT x FROM … ORDER BY o) ->
                // coalesce((SELECT array_agg(x ORDER BY o) FROM …), make_array()):
                // the rows' order kept, and no rows an empty array, as in
                // PostgreSQL. With LIMIT, OFFSET, DISTINCT or grouping the
                // ARRAY stays, and an ORDER BY in it is refused
                // (`query_checks`).
                if let datafusion::sql::sqlparser::ast::FunctionArguments::Subquery(q) = &f.args {
                    let mut q = q.as_ref().clone();
                    let order = q.order_by.take();
                    let order = match order.as_ref().map(|o| &o.kind) {
                        Some(datafusion::sql::sqlparser::ast::OrderByKind::Expressions(list)) => {
                            let list: Vec<String> = list.iter().map(|o| o.to_string()).collect();
                            format!(" ORDER BY {}", list.join(", "))
                        }
                        Some(_) => return std::ops::ControlFlow::Continue(()),
                        None => String::new(),
                    };
                    if let datafusion::sql::sqlparser::ast::SetExpr::Select(sel) = q.body.as_mut()
                        && sel.projection.len() == 1
                        && q.limit_clause.is_none()
                        && q.fetch.is_none()
                        && sel.distinct.is_none()
                        && sel.having.is_none()
                        && sel.group_by == datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(vec![], vec![])
                        && let datafusion::sql::sqlparser::ast::SelectItem::UnnamedExpr(x)
                        | datafusion::sql::sqlparser::ast::SelectItem::ExprWithAlias { expr: x, .. } =
                            &sel.projection[0]
                        && let Ok(agg) = crate::parser::parse_expr(&format!("array_agg({x}{order})"))
                    {
                        sel.projection = vec![datafusion::sql::sqlparser::ast::SelectItem::UnnamedExpr(agg)];
                        if let Ok(Expr::Function(mut nonempty)) =
                            crate::parser::parse_expr("coalesce(NULL, make_array())")
                            && let datafusion::sql::sqlparser::ast::FunctionArguments::List(list) = &mut nonempty.args
                        {
                            list.args[0] = datafusion::sql::sqlparser::ast::FunctionArg::Unnamed(
                                datafusion::sql::sqlparser::ast::FunctionArgExpr::Expr(Expr::Subquery(Box::new(q))),
                            );
                            *e = Expr::Function(nonempty);
                        }
                    }
                }
            }
            // Catalog queries use correlated scalar subqueries that return at
            // most one row by construction; DataFusion needs them aggregated.
            Expr::Subquery(q) if catalog_query => {
                let outer_only = split_outer_conditions(q);
                if let datafusion::sql::sqlparser::ast::SetExpr::Select(sel) = q.body.as_mut()
                    && sel.projection.len() == 1
                    && sel.group_by == datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(vec![], vec![])
                {
                    let (x, alias) = match &sel.projection[0] {
                        datafusion::sql::sqlparser::ast::SelectItem::UnnamedExpr(x) => (x.clone(), None),
                        datafusion::sql::sqlparser::ast::SelectItem::ExprWithAlias { expr, alias } => {
                            (expr.clone(), Some(alias.clone()))
                        }
                        _ => return std::ops::ControlFlow::Continue(()),
                    };
                    let is_agg = matches!(&x, Expr::Function(f) if f.name.to_string().to_lowercase().contains("agg")
                        || ["max", "min", "count", "sum"].contains(&f.name.to_string().to_lowercase().as_str()));
                    if !is_agg && let Ok(agg) = crate::parser::parse_expr(&format!("max({x})")) {
                        sel.projection = vec![match alias {
                            Some(alias) => {
                                datafusion::sql::sqlparser::ast::SelectItem::ExprWithAlias { expr: agg, alias }
                            }
                            None => datafusion::sql::sqlparser::ast::SelectItem::UnnamedExpr(agg),
                        }];
                    }
                }
                if let Some(cond) = outer_only
                    && let Ok(case) = crate::parser::parse_expr(&format!("CASE WHEN {cond} THEN ({q}) END"))
                {
                    *e = case;
                }
            }
            Expr::Function(f) => {
                if f.name.0.len() == 2 {
                    let schema = f.name.0[0].as_ident().map(|i| i.value.to_lowercase());
                    if schema.as_deref() == Some("pg_catalog") {
                        f.name = ObjectName(vec![f.name.0[1].clone()]);
                    }
                }
                // pg_get_expr(expr, rel, pretty): the pretty flag changes nothing here.
                let name = f.name.0.last().and_then(|p| p.as_ident()).map(|i| i.value.to_lowercase());
                if matches!(
                    name.as_deref(),
                    Some("pg_get_expr" | "pg_get_constraintdef" | "pg_get_indexdef" | "pg_get_viewdef")
                ) && let datafusion::sql::sqlparser::ast::FunctionArguments::List(list) = &mut f.args
                {
                    let keep = if name.as_deref() == Some("pg_get_expr") { 2 } else { 1 };
                    list.args.truncate(keep);
                }
            }
            Expr::BinaryOp { op, .. } => {
                if let BinaryOperator::PGCustomBinaryOperator(parts) = op
                    && parts.len() == 2
                    && parts[0].eq_ignore_ascii_case("pg_catalog")
                {
                    let new = match parts[1].as_str() {
                        "~" => Some(BinaryOperator::PGRegexMatch),
                        "~*" => Some(BinaryOperator::PGRegexIMatch),
                        "!~" => Some(BinaryOperator::PGRegexNotMatch),
                        "=" => Some(BinaryOperator::Eq),
                        "<>" => Some(BinaryOperator::NotEq),
                        _ => None,
                    };
                    if let Some(n) = new {
                        *op = n;
                    }
                }
            }
            Expr::Collate { expr, .. } => {
                let inner = std::mem::replace(expr.as_mut(), Expr::value(datafusion::sql::sqlparser::ast::Value::Null));
                *e = inner;
            }
            _ => {}
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

/// In a catalog query's scalar subquery, DataFusion cannot decorrelate a
/// condition on the outer row alone (`AND a.atthasdef`) or a non-equality
/// between outer and inner columns. The first moves out of the subquery
/// (returned, to become `CASE WHEN cond THEN (subquery) END`); the second
/// is dropped: over Tessera's synthetic catalog it only ever compares with
/// tables that are empty (collations).
fn split_outer_conditions(q: &mut datafusion::sql::sqlparser::ast::Query) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, SetExpr, TableFactor, visit_expressions};
    let SetExpr::Select(sel) = q.body.as_mut() else { return None };
    let mut inner: Vec<String> = Vec::new();
    for t in &sel.from {
        for f in std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)) {
            if let TableFactor::Table { name, alias, .. } = f {
                inner.push(match alias {
                    Some(a) => a.name.value.to_lowercase(),
                    None => name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default(),
                });
            }
        }
    }
    let selection = sel.selection.take()?;
    fn split(e: Expr, out: &mut Vec<Expr>) {
        match e {
            Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
                split(*left, out);
                split(*right, out);
            }
            Expr::Nested(inner) => split(*inner, out),
            other => out.push(other),
        }
    }
    let mut conjuncts = Vec::new();
    split(selection, &mut conjuncts);
    let refs = |e: &Expr| {
        let (mut inner_ref, mut outer_ref) = (false, false);
        let _ = visit_expressions(e, |x| {
            if let Expr::CompoundIdentifier(parts) = x
                && parts.len() >= 2
            {
                if inner.contains(&parts[0].value.to_lowercase()) {
                    inner_ref = true;
                } else {
                    outer_ref = true;
                }
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        (inner_ref, outer_ref)
    };
    let mut keep = Vec::new();
    let mut outer = Vec::new();
    for c in conjuncts {
        match refs(&c) {
            (false, true) => outer.push(c.to_string()),
            (true, true) if !matches!(&c, Expr::BinaryOp { op: BinaryOperator::Eq, .. }) => {}
            _ => keep.push(c.to_string()),
        }
    }
    if !keep.is_empty() {
        sel.selection = crate::parser::parse_expr(&keep.join(" AND ")).ok();
    }
    (!outer.is_empty()).then(|| outer.join(" AND "))
}

/// Catalog tables that are always empty in Tessera (row security policies,
/// extended statistics, publications, inheritance).
const EMPTY_CATALOG_TABLES: &[&str] = &[
    "pg_policy",
    "pg_statistic_ext",
    "pg_publication",
    "pg_publication_rel",
    "pg_publication_namespace",
    "pg_inherits",
];

/// A catalog query whose FROM starts with an always-empty table returns no
/// rows; answering it as `SELECT NULL AS …, … WHERE false` spares DataFusion
/// expressions it cannot plan (array comparisons in psql's policy query).
pub fn short_circuit_empty_catalog(stmt: &mut datafusion::sql::sqlparser::ast::Statement) {
    use datafusion::sql::sqlparser::ast::{SelectItem, SetExpr, Statement, TableFactor};
    fn starts_empty(body: &SetExpr) -> bool {
        match body {
            SetExpr::Select(sel) => sel.from.first().is_some_and(|first| match &first.relation {
                TableFactor::Table { name, .. } => {
                    let table = name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default();
                    EMPTY_CATALOG_TABLES.contains(&table.as_str())
                }
                _ => false,
            }),
            SetExpr::SetOperation { left, right, .. } => starts_empty(left) && starts_empty(right),
            SetExpr::Query(q) => starts_empty(&q.body),
            _ => false,
        }
    }
    fn leftmost(body: &SetExpr) -> Option<&datafusion::sql::sqlparser::ast::Select> {
        match body {
            SetExpr::Select(sel) => Some(sel),
            SetExpr::SetOperation { left, .. } => leftmost(left),
            SetExpr::Query(q) => leftmost(&q.body),
            _ => None,
        }
    }
    let Statement::Query(q) = stmt else { return };
    if !starts_empty(&q.body) {
        return;
    }
    let Some(sel) = leftmost(&q.body) else { return };
    let names: Vec<String> = sel
        .projection
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
            SelectItem::UnnamedExpr(e) => crate::rewrite::naming::pg_name(e),
            _ => format!("column{i}"),
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    let list: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let n = if seen.insert(n.clone()) { n.clone() } else { format!("{n}_{i}") };
            format!("NULL AS \"{}\"", n.replace('"', "\"\""))
        })
        .collect();
    if let Ok(mut parsed) = crate::plan::parse_sql(&format!("SELECT {} WHERE false", list.join(", ")))
        && let Some(new) = parsed.pop()
    {
        *stmt = new;
    }
}

/// The text of a string constant.
fn string_literal(e: &datafusion::sql::sqlparser::ast::Expr) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{Expr, Value};
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(t) | Value::EscapedStringLiteral(t) => Some(t.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Rewrites casts to types DataFusion lacks (`::uuid`, `::json`,
/// `::jsonb`, `::regclass`, `::oid`) into Tessera's conversion functions.
pub fn rewrite_casts(stmt: &mut datafusion::sql::sqlparser::ast::Statement) {
    use datafusion::sql::sqlparser::ast::{DataType as AstType, Expr, visit_expressions_mut};
    // A regtype shown as text is the type's name (`t.oid::regtype::text`),
    // before the pass below makes the regtype an OID.
    let _ = visit_expressions_mut(stmt, |e| {
        if let Expr::Cast { expr: inner, data_type, .. } = e
            && matches!(data_type, AstType::Text | AstType::Varchar(_))
            && let Expr::Cast { data_type: inner_type, .. } = inner.as_ref()
            && inner_type.to_string().eq_ignore_ascii_case("regtype")
            && let Ok(name) = crate::parser::parse_expr(&format!("format_type({inner}, NULL)"))
        {
            *e = name;
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    let _ = visit_expressions_mut(stmt, |e| {
        if let Expr::Cast { expr, data_type, .. } = e {
            let t = data_type.to_string().to_lowercase();
            if let Some(plain) = t.strip_prefix("pg_catalog.")
                && let Ok(Expr::Cast { data_type: d, .. }) =
                    crate::parser::parse_expr(&format!("CAST(NULL AS {plain})"))
            {
                *data_type = d;
            }
            let t = t.trim_start_matches("pg_catalog.");
            let mut literal = None;
            let f = match t {
                "uuid" => Some("tessera_to_uuid"),
                "json" => Some("tessera_to_json"),
                "jsonb" => Some("tessera_to_jsonb"),
                "regclass" => Some("tessera_to_regclass"),
                // A type's name read as its OID (`'mood'::regtype`).
                "regtype" if string_literal(expr).is_some() => Some("tessera_to_regtype"),
                "oid" | "regtype" | "regproc" | "regnamespace" | "regrole" | "xid" => {
                    *data_type = AstType::BigInt(None);
                    None
                }
                "name" => {
                    *data_type = AstType::Text;
                    None
                }
                // `x::numeric` keeps a decimal's scale and reads text
                // exactly (DataFusion would cast to Decimal128(38, 10)).
                "numeric" | "decimal" | "dec" => {
                    literal = string_literal(expr).and_then(|t| crate::values::numeric_ops::numeric_literal(&t));
                    Some("tessera_to_numeric")
                }
                _ if t.ends_with("[]")
                    && !matches!(expr.as_ref(), Expr::Value(_) if string_literal(expr).is_none()) =>
                {
                    // `'{1,2}'::int[]` reads PostgreSQL's array text; a
                    // parameter keeps DataFusion's cast, which types it.
                    if !matches!(expr.as_ref(), Expr::Value(v) if matches!(v.value, datafusion::sql::sqlparser::ast::Value::Placeholder(_)))
                        && let Ok(ty) = crate::values::types::SqlType::parse(t)
                        && let Ok(new) =
                            crate::parser::parse_expr(&format!("tessera_to_array({expr}, '{}')", ty.name()))
                    {
                        *e = new;
                    }
                    return std::ops::ControlFlow::Continue(());
                }
                _ if crate::values::numeric_ops::wide_declared(t).is_some() => {
                    if let Some((p, sc)) = crate::values::numeric_ops::wide_declared(t)
                        && let Ok(new) = crate::parser::parse_expr(&format!("tessera_numeric_as({expr}, {p}, {sc})"))
                    {
                        *e = new;
                    }
                    return std::ops::ControlFlow::Continue(());
                }
                // PostgreSQL's text output of any value (and char(n) loses its padding).
                "text" | "character varying" | "varchar" => Some("tessera_to_text"),
                // '\x0001ff'::bytea is three bytes, not the string's eight:
                // a literal that reads as bytea becomes those bytes, any
                // other text is read (or refused) as it is cast.
                "bytea" => {
                    if let Expr::Value(v) = expr.as_ref()
                        && let datafusion::sql::sqlparser::ast::Value::SingleQuotedString(text)
                        | datafusion::sql::sqlparser::ast::Value::EscapedStringLiteral(text) = &v.value
                        && let Ok(bytes) = crate::values::text::parse_bytea(text)
                        && let Ok(lit) = crate::parser::parse_expr(&format!(
                            "X'{}'",
                            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
                        ))
                    {
                        literal = Some(lit);
                        None
                    } else {
                        Some("tessera_text_to_bytea")
                    }
                }
                _ => None,
            };
            if let Some(lit) = literal {
                *e = lit;
            } else if let Some(f) = f
                && let Ok(new) = crate::parser::parse_expr(&format!("{f}({expr})"))
            {
                *e = new;
            }
        } else if let Expr::TypedString(ts) = e
            && matches!(ts.data_type.to_string().to_lowercase().as_str(), "numeric" | "decimal" | "dec")
            && let datafusion::sql::sqlparser::ast::Value::SingleQuotedString(text) = &ts.value.value
        {
            let text = text.clone();
            let new = match crate::values::numeric_ops::numeric_literal(&text) {
                Some(lit) => Some(lit),
                None => crate::parser::parse_expr(&format!("tessera_to_numeric('{}')", text.replace('\'', "''"))).ok(),
            };
            if let Some(new) = new {
                *e = new;
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

/// `x::text`: the value's PostgreSQL text form, as a plain text column
/// (DataFusion's own cast would keep the source column's type metadata and
/// print values its own way).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ToText {
    signature: datafusion::logical_expr::Signature,
}

impl datafusion::logical_expr::ScalarUDFImpl for ToText {
    fn name(&self) -> &str {
        "tessera_to_text"
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: datafusion::logical_expr::ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let padded = args
            .arg_fields
            .first()
            .and_then(|f| f.metadata().get(crate::values::types::PG_TYPE_KEY))
            .is_some_and(|t| t.starts_with("character("));
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let array = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        // A boolean's text is `true`/`false` (PostgreSQL's cast to text),
        // where its output form is `t`/`f`.
        let out: StringArray = match array.as_any().downcast_ref::<datafusion::arrow::array::BooleanArray>() {
            Some(b) => b.iter().map(|v| v.map(|v| if v { "true" } else { "false" })).collect(),
            None => (0..array.len())
                .map(|i| {
                    crate::values::text::format_cell(&array, i)
                        .map(|v| if padded { v.trim_end_matches(' ').to_string() } else { v })
                })
                .collect(),
        };
        let out: ArrayRef = Arc::new(out);
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(out)
        })
    }
}

pub fn register(ctx: &SessionContext, r: &Resolver) {
    register_casts(ctx, r);
    register_session_information(ctx, r);
    register_sequence_functions(ctx, r);
    crate::plan::volatile::register(ctx, r);
    register_quote_literal(ctx);
    register_advisory_lock_functions(ctx);
    // Catalog helpers for psql and drivers.
    catalog_helpers::register(ctx, r);
}

/// The casts Tessera plans as functions: `::text`, `::uuid`, `::json`,
/// `::jsonb` and `::regclass`.
fn register_casts(ctx: &SessionContext, r: &Resolver) {
    ctx.register_udf(datafusion::logical_expr::ScalarUDF::new_from_impl(ToText {
        signature: datafusion::logical_expr::Signature::any(1, Volatility::Immutable),
    }));
    for (name, ty) in
        [("tessera_to_uuid", SqlType::Uuid), ("tessera_to_json", SqlType::Json), ("tessera_to_jsonb", SqlType::Jsonb)]
    {
        ctx.register_udf(create_udf(
            name,
            vec![DataType::Utf8],
            DataType::Utf8,
            Volatility::Immutable,
            Arc::new(move |args| {
                let array = args[0].to_array(1)?;
                let array = datafusion::arrow::compute::cast(&array, &DataType::Utf8)?;
                let fixed = crate::values::text::enforce_text_type(ty, &array).map_err(sql_err)?.unwrap_or(array);
                Ok(match &args[0] {
                    ColumnarValue::Scalar(_) => ColumnarValue::Scalar(ScalarValue::try_from_array(&fixed, 0)?),
                    ColumnarValue::Array(_) => ColumnarValue::Array(fixed),
                })
            }),
        ));
    }
    let (c, d) = (r.catalog.clone(), r.db.clone());
    ctx.register_udf(create_udf(
        "tessera_to_regclass",
        vec![DataType::Utf8],
        DataType::Int64,
        Volatility::Stable,
        Arc::new(move |args| {
            map_text(&args[0], DataType::Int64, |n| {
                if let Ok(oid) = n.parse::<i64>() {
                    return Ok(Some(ScalarValue::Int64(Some(oid))));
                }
                let name = seq_name(n);
                let name = name.trim_start_matches("pg_catalog.").to_string();
                if let Some(oid) = system_relation_oid(&name) {
                    return Ok(Some(ScalarValue::Int64(Some(oid))));
                }
                if let Some(oid) = c.relation_oid(&d, &name) {
                    return Ok(Some(ScalarValue::Int64(Some(oid as i64))));
                }
                if let Some(s) = c.sequence(&d, &name) {
                    return Ok(Some(ScalarValue::Int64(Some(s.oid as i64))));
                }
                if let Some((_, ix)) = c.index(&d, &name) {
                    return Ok(Some(ScalarValue::Int64(Some(ix.oid as i64))));
                }
                Err(sql_err(SqlError::new(code::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist"))))
            })
        }),
    ));
}

/// The server's version, the session's database, schema, user and
/// process, its settings, and whether it runs on a hot standby.
fn register_session_information(ctx: &SessionContext, r: &Resolver) {
    let info = r.info.clone();
    let db = r.db.clone();
    ctx.register_udf(create_udf(
        "version",
        vec![],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(|_| text(format!("PostgreSQL {SERVER_VERSION} on x86_64-linux, compiled by rustc, 64-bit"))),
    ));
    let d = db.clone();
    ctx.register_udf(create_udf(
        "current_database",
        vec![],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(move |_| text(d.clone())),
    ));
    ctx.register_udf(create_udf(
        "current_schema",
        vec![],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(|_| text("public")),
    ));
    for name in ["current_user", "session_user", "user", "current_role"] {
        let i = info.clone();
        ctx.register_udf(create_udf(
            name,
            vec![],
            DataType::Utf8,
            Volatility::Stable,
            Arc::new(move |_| text(i.user.clone())),
        ));
    }
    let i = info.clone();
    ctx.register_udf(create_udf(
        "pg_is_in_recovery",
        vec![],
        DataType::Boolean,
        Volatility::Stable,
        Arc::new(move |_| {
            let standby = i.settings.lock().get("in_hot_standby") == "on";
            Ok(ColumnarValue::Scalar(ScalarValue::Boolean(Some(standby))))
        }),
    ));
    let i = info.clone();
    ctx.register_udf(create_udf(
        "pg_backend_pid",
        vec![],
        DataType::Int32,
        Volatility::Stable,
        Arc::new(move |_| Ok(ColumnarValue::Scalar(ScalarValue::Int32(Some(i.pid))))),
    ));
    let i = info.clone();
    ctx.register_udf(create_udf(
        "current_setting",
        vec![DataType::Utf8],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(move |args| {
            let i = i.clone();
            map_text(&args[0], DataType::Utf8, move |n| Ok(Some(ScalarValue::Utf8(Some(i.settings.lock().get(n))))))
        }),
    ));
}

/// `currval` and `setval` (`nextval` is `volatile`'s).
fn register_sequence_functions(ctx: &SessionContext, r: &Resolver) {
    let (c, d) = (r.catalog.clone(), r.db.clone());
    ctx.register_udf(create_udf(
        "currval",
        vec![DataType::Utf8],
        DataType::Int64,
        Volatility::Volatile,
        Arc::new(move |args| {
            map_text(&args[0], DataType::Int64, |n| {
                let (name, seq) = find_sequence(&c, &d, n)?;
                match c.last_value(&seq) {
                    Some(v) => Ok(Some(ScalarValue::Int64(Some(v)))),
                    None => Err(sql_err(SqlError::new(
                        "55000",
                        format!("currval of sequence \"{name}\" is not yet defined in this session"),
                    ))),
                }
            })
        }),
    ));
    let (c, d) = (r.catalog.clone(), r.db.clone());
    ctx.register_udf(create_udf(
        "setval",
        vec![DataType::Utf8, DataType::Int64],
        DataType::Int64,
        Volatility::Volatile,
        Arc::new(move |args| {
            let value = match &args[1] {
                ColumnarValue::Scalar(ScalarValue::Int64(Some(v))) => *v,
                ColumnarValue::Array(a) if !a.is_empty() => {
                    a.as_any().downcast_ref::<Int64Array>().map(|a| a.value(0)).unwrap_or(1)
                }
                _ => return Err(sql_err(SqlError::new(code::INVALID_PARAMETER_VALUE, "setval needs a value"))),
            };
            map_text(&args[0], DataType::Int64, |n| {
                let (_, seq) = find_sequence(&c, &d, n)?;
                c.setval(&seq, value, true).map_err(sql_err)?;
                Ok(Some(ScalarValue::Int64(Some(value))))
            })
        }),
    ));
}

fn register_quote_literal(ctx: &SessionContext) {
    ctx.register_udf(create_udf(
        "quote_literal",
        vec![DataType::Utf8],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(|args| {
            map_text(&args[0], DataType::Utf8, |s| {
                let q = s.replace('\'', "''");
                Ok(Some(ScalarValue::Utf8(Some(if q.contains('\\') {
                    format!("E'{}'", q.replace('\\', "\\\\"))
                } else {
                    format!("'{q}'")
                }))))
            })
        }),
    ));
}

fn register_advisory_lock_functions(ctx: &SessionContext) {
    // Tessera has no advisory locks; a session never holds one to release.
    ctx.register_udf(create_udf(
        "pg_advisory_unlock_all",
        vec![],
        DataType::Utf8,
        Volatility::Volatile,
        Arc::new(|_| Ok(ColumnarValue::Scalar(ScalarValue::Utf8(None)))),
    ));
}

/// PostgreSQL's fixed OIDs of the system catalogs drivers name with `::regclass`.
fn system_relation_oid(name: &str) -> Option<i64> {
    Some(match name {
        "pg_type" => 1247,
        "pg_attribute" => 1249,
        "pg_proc" => 1255,
        "pg_class" => 1259,
        "pg_database" => 1262,
        "pg_namespace" => 2615,
        "pg_constraint" => 2606,
        "pg_index" => 2610,
        "pg_attrdef" => 2604,
        "pg_description" => 2609,
        "pg_am" => 2601,
        "pg_authid" | "pg_roles" => 1260,
        _ => return None,
    })
}

pub(crate) fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    h.finish()
}

fn scalar_i64(s: &ScalarValue) -> Option<i64> {
    s.cast_to(&DataType::Int64).ok().and_then(|v| match v {
        ScalarValue::Int64(v) => v,
        _ => None,
    })
}

fn map_int(arg: &ColumnarValue, mut f: impl FnMut(i64) -> Option<String>) -> DfResult<ColumnarValue> {
    match arg {
        ColumnarValue::Scalar(s) => Ok(ColumnarValue::Scalar(ScalarValue::Utf8(scalar_i64(s).and_then(f)))),
        ColumnarValue::Array(a) => {
            let a = datafusion::arrow::compute::cast(a, &DataType::Int64)?;
            let ints = a.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
            let out: StringArray = ints.iter().map(|v| v.and_then(&mut f)).collect();
            Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
        }
    }
}

fn map_int_i64(arg: &ColumnarValue, mut f: impl FnMut(i64) -> Option<i64>) -> DfResult<ColumnarValue> {
    match arg {
        ColumnarValue::Scalar(s) => Ok(ColumnarValue::Scalar(ScalarValue::Int64(scalar_i64(s).and_then(f)))),
        ColumnarValue::Array(a) => {
            let a = datafusion::arrow::compute::cast(a, &DataType::Int64)?;
            let ints = a.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
            let out: Int64Array = ints.iter().map(|v| v.and_then(&mut f)).collect();
            Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
        }
    }
}

/// `format_type(oid, typmod)`.
pub fn format_type(oid: u32, typmod: i32) -> String {
    let Some(t) = SqlType::from_oid(oid) else {
        return crate::values::enum_registry::type_name(oid).unwrap_or_else(|| "???".into());
    };
    if let Some(elem) = t.element() {
        return format!("{}[]", format_type(elem.oid(), typmod));
    }
    match (t, typmod) {
        (SqlType::Varchar(_), m) if m > 4 => format!("character varying({})", m - 4),
        (SqlType::Char(_), m) if m > 4 => format!("character({})", m - 4),
        (SqlType::Numeric { .. }, m) if m > 4 => {
            let m = m - 4;
            format!("numeric({},{})", (m >> 16) & 0xffff, m & 0xffff)
        }
        (SqlType::Char(_), _) => "character".into(),
        (t, _) => t.name(),
    }
}
