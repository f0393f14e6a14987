//! Expressions on the fast path, compiled once per statement from the
//! parsed SQL into a small typed tree and evaluated on decoded values.
//!
//! The compiler accepts what it can evaluate exactly as the general path
//! would (column references, parameters, literals, integer and float
//! arithmetic, comparisons, boolean logic, IS NULL, a few functions and
//! casts) and refuses the rest, so the statement runs on the general path.
//! Evaluation never raises SQL errors itself: a value that would be an error
//! (overflow, a malformed number, division by zero) *declines*, and the
//! general path then runs the statement and raises PostgreSQL's error with
//! the same wording as everywhere else.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CastKind, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, UnaryOperator, Value as Lit,
};
use tessera_engine::tuple::Tuple;

use super::value::{Decline, Eval, Value, decode, from_text, int_range, is_float, is_int, is_text, supported};
use crate::parser::normalize;
use crate::storage::catalog::TableDef;
use crate::values::types::SqlType;

/// How a `$n` gets its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// From where it is used (`col = $1` makes `$1` the column's type), as a
    /// bound parameter or a quoted literal is in PostgreSQL.
    Context,
    /// An integer literal lifted out of a simple-protocol query: `bigint`,
    /// as the general path types integer literals.
    Int,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A compiled expression.
#[derive(Debug, Clone)]
pub enum FExpr {
    Column {
        field: u16,
        ty: SqlType,
    },
    Param(usize),
    Const(Value),
    /// The statement's start time (`now()`, `CURRENT_TIMESTAMP`).
    Now,
    Arith {
        op: Arith,
        ty: SqlType,
        l: Box<FExpr>,
        r: Box<FExpr>,
    },
    Neg {
        ty: SqlType,
        e: Box<FExpr>,
    },
    Cmp {
        op: Cmp,
        l: Box<FExpr>,
        r: Box<FExpr>,
    },
    And(Box<FExpr>, Box<FExpr>),
    Or(Box<FExpr>, Box<FExpr>),
    Not(Box<FExpr>),
    IsNull {
        e: Box<FExpr>,
        negated: bool,
    },
    /// Integer to integer of another width, integer to float.
    Cast {
        ty: SqlType,
        e: Box<FExpr>,
    },
    Coalesce(Vec<FExpr>),
}

/// What an expression may refer to while it is compiled.
pub struct Scope<'a> {
    pub def: &'a TableDef,
    /// Names that may qualify a column (the table name or its alias).
    pub qualifiers: &'a [String],
    /// Whether the expression sees a row (false in INSERT … VALUES).
    pub row: bool,
    pub kinds: &'a [ParamKind],
    /// The type each `$n` was given by its first use (index n-1).
    pub params: &'a mut Vec<Option<SqlType>>,
}

/// The values an expression is evaluated with.
pub struct Cx<'a> {
    pub row: Option<Tuple<'a>>,
    pub params: &'a [Value],
    pub now: i64,
}

impl Scope<'_> {
    fn param(&mut self, n: usize, hint: Option<SqlType>) -> Option<(FExpr, SqlType)> {
        let kind = if self.kinds.is_empty() { ParamKind::Context } else { *self.kinds.get(n - 1)? };
        if self.params.len() < n {
            self.params.resize(n, None);
        }
        let ty = match (kind, self.params[n - 1], hint) {
            (ParamKind::Int, _, _) => SqlType::Int8,
            (ParamKind::Context, Some(t), _) => t,
            (ParamKind::Context, None, Some(h)) if supported(h) => h,
            _ => return None,
        };
        self.params[n - 1] = Some(ty);
        Some((FExpr::Param(n - 1), ty))
    }

    fn column(&self, parts: &[datafusion::sql::sqlparser::ast::Ident]) -> Option<(FExpr, SqlType)> {
        if !self.row {
            return None;
        }
        let (qual, name) = match parts {
            [c] => (None, c),
            [t, c] => (Some(normalize(&t.value, t.quote_style)), c),
            _ => return None,
        };
        if qual.is_some_and(|q| !self.qualifiers.contains(&q)) {
            return None;
        }
        let col = self.def.column(&normalize(&name.value, name.quote_style))?;
        supported(col.ty).then_some((FExpr::Column { field: col.field, ty: col.ty }, col.ty))
    }
}

/// Compiles `e`; `hint` is the type the context expects (it types
/// parameters and quoted literals). None: not a fast-path expression.
pub fn compile(e: &Expr, hint: Option<SqlType>, s: &mut Scope<'_>) -> Option<(FExpr, SqlType)> {
    match e {
        Expr::Nested(inner) => compile(inner, hint, s),
        Expr::Identifier(i) => s.column(std::slice::from_ref(i)),
        Expr::CompoundIdentifier(parts) => s.column(parts),
        Expr::Value(v) => match &v.value {
            Lit::Placeholder(p) => s.param(p.strip_prefix('$')?.parse().ok().filter(|n| *n > 0)?, hint),
            Lit::Number(n, false) => Some((FExpr::Const(Value::Int(n.parse().ok()?)), SqlType::Int8)),
            Lit::SingleQuotedString(text) => {
                let ty = hint.filter(|t| supported(*t))?;
                Some((FExpr::Const(from_text(ty, text).ok()?), ty))
            }
            Lit::Boolean(b) => Some((FExpr::Const(Value::Bool(*b)), SqlType::Bool)),
            Lit::Null => Some((FExpr::Const(Value::Null), hint.filter(|t| supported(*t))?)),
            _ => None,
        },
        Expr::UnaryOp { op: UnaryOperator::Minus, expr } => {
            let (e, ty) = compile(expr, hint, s)?;
            (is_int(ty) || is_float(ty)).then(|| (FExpr::Neg { ty, e: Box::new(e) }, ty))
        }
        Expr::UnaryOp { op: UnaryOperator::Plus, expr } => {
            let (e, ty) = compile(expr, hint, s)?;
            (is_int(ty) || is_float(ty)).then_some((e, ty))
        }
        Expr::UnaryOp { op: UnaryOperator::Not, expr } => {
            let (e, ty) = compile(expr, Some(SqlType::Bool), s)?;
            (ty == SqlType::Bool).then(|| (FExpr::Not(Box::new(e)), SqlType::Bool))
        }
        Expr::IsNull(inner) | Expr::IsNotNull(inner) => {
            let negated = matches!(e, Expr::IsNotNull(_));
            let (e, _) = compile(inner, None, s)?;
            Some((FExpr::IsNull { e: Box::new(e), negated }, SqlType::Bool))
        }
        Expr::BinaryOp { left, op, right } => binary(left, op, right, hint, s),
        Expr::Cast { kind: CastKind::Cast | CastKind::DoubleColon, expr, data_type, format: None, .. } => {
            let to = SqlType::parse(&data_type.to_string()).ok()?;
            let (e, from) = compile(expr, Some(to), s)?;
            if from == to {
                return Some((e, to));
            }
            if (is_int(from) && (is_int(to) || is_float(to))) || (is_float(from) && is_float(to)) {
                return Some((FExpr::Cast { ty: to, e: Box::new(e) }, to));
            }
            None
        }
        Expr::Function(f) => {
            let name = f.name.to_string().to_lowercase();
            let args: Vec<&Expr> = match &f.args {
                FunctionArguments::None => vec![],
                FunctionArguments::List(l) if l.duplicate_treatment.is_none() && l.clauses.is_empty() => l
                    .args
                    .iter()
                    .map(|a| match a {
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                        _ => None,
                    })
                    .collect::<Option<_>>()?,
                _ => return None,
            };
            if f.filter.is_some() || f.over.is_some() || !f.within_group.is_empty() {
                return None;
            }
            match (name.as_str(), args.as_slice()) {
                ("current_timestamp" | "now", []) => Some((FExpr::Now, SqlType::TimestampTz)),
                ("coalesce", [first, rest @ ..]) => {
                    let (a, ty) = compile(first, hint, s)?;
                    let mut items = vec![a];
                    for e in rest {
                        let (b, t) = compile(e, Some(ty), s)?;
                        if t != ty {
                            return None;
                        }
                        items.push(b);
                    }
                    Some((FExpr::Coalesce(items), ty))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

fn wider(a: SqlType, b: SqlType) -> SqlType {
    let rank = |t: SqlType| match t {
        SqlType::Int2 => 0,
        SqlType::Int4 => 1,
        SqlType::Int8 => 2,
        SqlType::Float4 => 3,
        _ => 4,
    };
    if rank(a) >= rank(b) { a } else { b }
}

fn binary(
    left: &Expr,
    op: &BinaryOperator,
    right: &Expr,
    hint: Option<SqlType>,
    s: &mut Scope<'_>,
) -> Option<(FExpr, SqlType)> {
    match op {
        BinaryOperator::And | BinaryOperator::Or => {
            let (l, lt) = compile(left, Some(SqlType::Bool), s)?;
            let (r, rt) = compile(right, Some(SqlType::Bool), s)?;
            if lt != SqlType::Bool || rt != SqlType::Bool {
                return None;
            }
            let e = if *op == BinaryOperator::And {
                FExpr::And(Box::new(l), Box::new(r))
            } else {
                FExpr::Or(Box::new(l), Box::new(r))
            };
            return Some((e, SqlType::Bool));
        }
        _ => {}
    }
    // The side that has a type of its own types the other (`col = $1`).
    let context_typed = |e: &Expr| matches!(e, Expr::Value(v) if matches!(v.value, Lit::Placeholder(_) | Lit::SingleQuotedString(_) | Lit::Null));
    let arith = match op {
        BinaryOperator::Plus => Some(Arith::Add),
        BinaryOperator::Minus => Some(Arith::Sub),
        BinaryOperator::Multiply => Some(Arith::Mul),
        BinaryOperator::Divide => Some(Arith::Div),
        BinaryOperator::Modulo => Some(Arith::Rem),
        _ => None,
    };
    let cmp = match op {
        BinaryOperator::Eq => Some(Cmp::Eq),
        BinaryOperator::NotEq => Some(Cmp::Ne),
        BinaryOperator::Lt => Some(Cmp::Lt),
        BinaryOperator::LtEq => Some(Cmp::Le),
        BinaryOperator::Gt => Some(Cmp::Gt),
        BinaryOperator::GtEq => Some(Cmp::Ge),
        _ => None,
    };
    if arith.is_none() && cmp.is_none() {
        return None;
    }
    let side_hint = if arith.is_some() { hint } else { None };
    let ((l, lt), (r, rt)) = if context_typed(left) && !context_typed(right) {
        let r = compile(right, side_hint, s)?;
        (compile(left, Some(r.1), s)?, r)
    } else {
        let l = compile(left, side_hint, s)?;
        let r = compile(right, Some(l.1), s)?;
        (l, r)
    };
    let numeric = |t: SqlType| is_int(t) || is_float(t);
    if let Some(op) = arith {
        if !numeric(lt) || !numeric(rt) {
            return None;
        }
        let ty = wider(lt, rt);
        return Some((FExpr::Arith { op, ty, l: Box::new(l), r: Box::new(r) }, ty));
    }
    let comparable = (numeric(lt) && numeric(rt))
        || (is_text(lt) && is_text(rt))
        || (lt == rt && matches!(lt, SqlType::Bool | SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz));
    comparable.then(|| (FExpr::Cmp { op: cmp.expect("comparison"), l: Box::new(l), r: Box::new(r) }, SqlType::Bool))
}

fn int_op(op: Arith, a: i64, b: i64, ty: SqlType) -> Eval<i64> {
    let v = match op {
        Arith::Add => a.checked_add(b),
        Arith::Sub => a.checked_sub(b),
        Arith::Mul => a.checked_mul(b),
        Arith::Div => a.checked_div(b),
        Arith::Rem => a.checked_rem(b),
    }
    .ok_or(Decline)?;
    let (lo, hi) = int_range(ty);
    if v < lo || v > hi {
        return Err(Decline);
    }
    Ok(v)
}

fn float_op(op: Arith, a: f64, b: f64) -> Eval<f64> {
    if matches!(op, Arith::Div | Arith::Rem) && b == 0.0 {
        return Err(Decline);
    }
    Ok(match op {
        Arith::Add => a + b,
        Arith::Sub => a - b,
        Arith::Mul => a * b,
        Arith::Div => a / b,
        Arith::Rem => a % b,
    })
}

fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

fn compare(op: Cmp, a: &Value, b: &Value) -> Eval<Value> {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match (a, b) {
        (Value::Null, _) | (_, Value::Null) => return Ok(Value::Null),
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Text(x), Value::Text(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Date(x), Value::Date(y)) => Some(x.cmp(y)),
        (Value::Timestamp(x), Value::Timestamp(y)) => Some(x.cmp(y)),
        _ => match (as_f64(a), as_f64(b)) {
            // NaN sorts above everything and equals itself, as in PostgreSQL.
            (Some(x), Some(y)) => Some(x.total_cmp(&y)),
            _ => return Err(Decline),
        },
    };
    let ord = ord.ok_or(Decline)?;
    Ok(Value::Bool(match op {
        Cmp::Eq => ord == Ordering::Equal,
        Cmp::Ne => ord != Ordering::Equal,
        Cmp::Lt => ord == Ordering::Less,
        Cmp::Le => ord != Ordering::Greater,
        Cmp::Gt => ord == Ordering::Greater,
        Cmp::Ge => ord != Ordering::Less,
    }))
}

impl FExpr {
    pub fn eval(&self, cx: &Cx<'_>) -> Eval<Value> {
        Ok(match self {
            FExpr::Column { field, ty } => decode(*ty, cx.row.as_ref().ok_or(Decline)?.field(*field as usize))?,
            FExpr::Param(i) => cx.params.get(*i).cloned().ok_or(Decline)?,
            FExpr::Const(v) => v.clone(),
            FExpr::Now => Value::Timestamp(cx.now),
            FExpr::Arith { op, ty, l, r } => {
                let (a, b) = (l.eval(cx)?, r.eval(cx)?);
                match (&a, &b) {
                    (Value::Null, _) | (_, Value::Null) => Value::Null,
                    (Value::Int(x), Value::Int(y)) if is_int(*ty) => Value::Int(int_op(*op, *x, *y, *ty)?),
                    _ => {
                        let (x, y) = (as_f64(&a).ok_or(Decline)?, as_f64(&b).ok_or(Decline)?);
                        let v = float_op(*op, x, y)?;
                        Value::Float(if *ty == SqlType::Float4 { v as f32 as f64 } else { v })
                    }
                }
            }
            FExpr::Neg { ty, e } => match e.eval(cx)? {
                Value::Null => Value::Null,
                Value::Int(i) => Value::Int(int_op(Arith::Sub, 0, i, *ty)?),
                Value::Float(f) => Value::Float(-f),
                _ => return Err(Decline),
            },
            FExpr::Cmp { op, l, r } => compare(*op, &l.eval(cx)?, &r.eval(cx)?)?,
            FExpr::And(l, r) => match (l.eval(cx)?, r.eval(cx)?) {
                (Value::Bool(false), _) | (_, Value::Bool(false)) => Value::Bool(false),
                (Value::Bool(true), Value::Bool(true)) => Value::Bool(true),
                _ => Value::Null,
            },
            FExpr::Or(l, r) => match (l.eval(cx)?, r.eval(cx)?) {
                (Value::Bool(true), _) | (_, Value::Bool(true)) => Value::Bool(true),
                (Value::Bool(false), Value::Bool(false)) => Value::Bool(false),
                _ => Value::Null,
            },
            FExpr::Not(e) => match e.eval(cx)? {
                Value::Bool(b) => Value::Bool(!b),
                _ => Value::Null,
            },
            FExpr::IsNull { e, negated } => Value::Bool((e.eval(cx)? == Value::Null) != *negated),
            FExpr::Cast { ty, e } => match e.eval(cx)? {
                Value::Null => Value::Null,
                Value::Int(i) if is_int(*ty) => {
                    let (lo, hi) = int_range(*ty);
                    if i < lo || i > hi {
                        return Err(Decline);
                    }
                    Value::Int(i)
                }
                Value::Int(i) if *ty == SqlType::Float4 => Value::Float(i as f32 as f64),
                Value::Int(i) => Value::Float(i as f64),
                Value::Float(f) if *ty == SqlType::Float4 => Value::Float(f as f32 as f64),
                Value::Float(f) => Value::Float(f),
                _ => return Err(Decline),
            },
            FExpr::Coalesce(items) => {
                for e in items {
                    let v = e.eval(cx)?;
                    if v != Value::Null {
                        return Ok(v);
                    }
                }
                Value::Null
            }
        })
    }

    /// Whether the expression reads the row (WHERE conjuncts that do not
    /// can be evaluated before the lookup: they are the key).
    pub fn reads_row(&self) -> bool {
        match self {
            FExpr::Column { .. } => true,
            FExpr::Param(_) | FExpr::Const(_) | FExpr::Now => false,
            FExpr::Arith { l, r, .. } | FExpr::Cmp { l, r, .. } | FExpr::And(l, r) | FExpr::Or(l, r) => {
                l.reads_row() || r.reads_row()
            }
            FExpr::Neg { e, .. } | FExpr::Not(e) | FExpr::IsNull { e, .. } | FExpr::Cast { e, .. } => e.reads_row(),
            FExpr::Coalesce(items) => items.iter().any(|e| e.reads_row()),
        }
    }
}
