//! A query's filters as tests of stored field bytes, applied where rows
//! are read.
//!
//! A scan hands DataFusion only the rows its filters may keep when it can
//! check the filters on the stored bytes: `column op constant` (and `IS
//! [NOT] NULL`, `BETWEEN`, a boolean column by itself), where the column's
//! type stores its values so that byte order is SQL order and byte
//! equality SQL equality (see `rowcodec`), and the constant converts to the
//! column's type exactly. The engine then tests each row as the scan meets
//! it (`tessera_engine::row_filter`); a partition led by another node does
//! so on its primary, so the rows the filter drops never cross the network.
//!
//! The tests only ever narrow what DataFusion would see: every filter
//! stays in the plan (`Inexact`) and is applied again above the scan. What
//! the tests cannot express exactly they leave out: floating point (where
//! `-0 = 0`), `char(n)` (whose trailing blanks do not count), intervals,
//! JSON, and comparisons through a cast that could change the order or
//! merge two values (a number cast to text, a bigint to a double).

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};
use tessera_engine::row_filter::{Cmp, FieldTest};

use crate::storage::catalog::{ColumnDef, TableDef};
use crate::storage::provider::key_field;
use crate::values::types::SqlType;

/// The tests of the stored rows that `filters` (a conjunction) imply.
pub fn field_tests(def: &TableDef, filters: &[Expr]) -> Vec<FieldTest> {
    let mut out = Vec::new();
    for f in filters {
        collect(def, f, &mut out);
    }
    out
}

fn collect(def: &TableDef, expr: &Expr, out: &mut Vec<FieldTest>) {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op: Operator::And, right }) => {
            collect(def, left, out);
            collect(def, right, out);
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (col, value, op) = match (compared_column(def, left), compared_column(def, right)) {
                (Some(c), None) => match right.as_ref() {
                    Expr::Literal(v, _) => (c, v, *op),
                    _ => return,
                },
                (None, Some(c)) => match (left.as_ref(), op.swap()) {
                    (Expr::Literal(v, _), Some(op)) => (c, v, op),
                    _ => return,
                },
                _ => return,
            };
            let cmp = match op {
                Operator::Eq => Cmp::Eq,
                Operator::NotEq => Cmp::NotEq,
                Operator::Lt => Cmp::Lt,
                Operator::LtEq => Cmp::LtEq,
                Operator::Gt => Cmp::Gt,
                Operator::GtEq => Cmp::GtEq,
                _ => return,
            };
            push(col, cmp, value, out);
        }
        Expr::Between(b) if !b.negated => {
            if let (Some(c), Expr::Literal(lo, _), Expr::Literal(hi, _)) =
                (compared_column(def, &b.expr), b.low.as_ref(), b.high.as_ref())
            {
                push(c, Cmp::GtEq, lo, out);
                push(c, Cmp::LtEq, hi, out);
            }
        }
        Expr::IsNull(e) | Expr::IsNotNull(e) => {
            // Only through a cast that cannot fail (one keeping order
            // widens): a failing cast is an error PostgreSQL reports, which
            // a row dropped here would hide.
            if let Some(name) = crate::storage::provider::key_column(def, e)
                && let Some(col) = def.column(name)
            {
                let cmp = if matches!(expr, Expr::IsNull(_)) { Cmp::IsNull } else { Cmp::IsNotNull };
                out.push(FieldTest { field: col.field as u32, cmp, value: Vec::new() });
            }
        }
        // `WHERE flag` and `WHERE NOT flag` on a boolean column.
        Expr::Column(c) => {
            if let Some(col) = def.column(&c.name).filter(|c| c.ty == SqlType::Bool) {
                out.push(FieldTest { field: col.field as u32, cmp: Cmp::Eq, value: vec![1] });
            }
        }
        Expr::Not(e) => {
            if let Expr::Column(c) = e.as_ref()
                && let Some(col) = def.column(&c.name).filter(|c| c.ty == SqlType::Bool)
            {
                out.push(FieldTest { field: col.field as u32, cmp: Cmp::Eq, value: vec![0] });
            }
        }
        _ => {}
    }
}

/// `col cmp value`, when `value` converts to the column's type exactly
/// (a NULL constant compares as nothing: no test).
fn push(col: &ColumnDef, cmp: Cmp, value: &ScalarValue, out: &mut Vec<FieldTest>) {
    if let Some(bytes) = key_field(col.ty, value) {
        out.push(FieldTest { field: col.field as u32, cmp, value: bytes });
    }
}

/// The column `e` compares, when comparing `e` is comparing the column's
/// stored bytes: the column itself or through a cast that keeps its
/// values distinct and in order (`provider::key_column`), of a type whose
/// bytes are in SQL order.
fn compared_column<'a>(def: &'a TableDef, e: &Expr) -> Option<&'a ColumnDef> {
    let col = def.column(crate::storage::provider::key_column(def, e)?)?;
    bytes_in_sql_order(col.ty).then_some(col)
}

fn bytes_in_sql_order(ty: SqlType) -> bool {
    matches!(
        ty,
        SqlType::Bool
            | SqlType::Int2
            | SqlType::Int4
            | SqlType::Int8
            | SqlType::Numeric { .. }
            | SqlType::Text
            | SqlType::Varchar(_)
            | SqlType::Bytea
            | SqlType::Date
            | SqlType::Time
            | SqlType::Timestamp
            | SqlType::TimestampTz
    )
}

/// Whether casting values of `ty` to `to` keeps them distinct and in
/// order (an integer widened, a decimal given room, text as text), for the
/// column types whose stored bytes the tests and key ranges compare.
pub(crate) fn keeps_order(ty: SqlType, to: &DataType) -> bool {
    matches!(
        ty,
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Numeric { .. } | SqlType::Text | SqlType::Varchar(_)
    ) && !to.is_floating()
        && crate::values::exact_casts::keeps_values_apart(&ty.arrow_type(), to)
}

#[cfg(test)]
mod tests {
    use datafusion::common::Column;
    use datafusion::logical_expr::{cast, col, lit};

    use super::*;
    use crate::storage::catalog::ColumnDef;

    fn table() -> TableDef {
        let column = |name: &str, ty: SqlType, field: u16| ColumnDef {
            name: name.into(),
            ty,
            not_null: false,
            default: None,
            identity: None,
            field,
            domain: None,
        };
        TableDef {
            oid: 1,
            db: "d".into(),
            name: "t".into(),
            columns: vec![
                column("id", SqlType::Int4, 0),
                column("name", SqlType::Text, 1),
                column("score", SqlType::Float8, 2),
                column("flag", SqlType::Bool, 3),
                column("code", SqlType::Char(3), 4),
            ],
            primary_key: vec!["id".into()],
            indexes: Vec::new(),
            checks: Vec::new(),
            next_field: 5,
            rowid_field: None,
            engine_name: "t".into(),
        }
    }

    fn fields(tests: &[FieldTest]) -> Vec<(u32, Cmp)> {
        tests.iter().map(|t| (t.field, t.cmp)).collect()
    }

    #[test]
    fn comparisons_with_constants_become_tests() {
        let def = table();
        let filters = [
            col("id").gt_eq(lit(5i32)).and(lit(9i32).gt(col("id"))),
            col("name").not_eq(lit("x")),
            cast(col("id"), DataType::Int64).lt_eq(lit(7i64)),
            col("flag"),
            Expr::IsNull(Box::new(col("score"))),
            // A widening cannot fail.
            Expr::IsNotNull(Box::new(cast(col("id"), DataType::Int64))),
        ];
        let tests = field_tests(&def, &filters);
        assert_eq!(
            fields(&tests),
            [
                (0, Cmp::GtEq),
                (0, Cmp::Lt),
                (1, Cmp::NotEq),
                (0, Cmp::LtEq),
                (3, Cmp::Eq),
                (2, Cmp::IsNull),
                (0, Cmp::IsNotNull)
            ]
        );
        assert_eq!(
            tests[1].value,
            crate::values::rowcodec::enc_i32(9).to_vec(),
            "the constant as the column stores it"
        );
    }

    #[test]
    fn what_bytes_cannot_decide_is_left_to_the_plan() {
        let def = table();
        let filters = [
            // -0 = 0 for floats, but not byte for byte.
            col("score").eq(lit(0.0f64)),
            // char(n) ignores trailing blanks.
            col("code").eq(lit("ab")),
            // As text, 10 sorts before 5.
            cast(col("id"), DataType::Utf8).lt(lit("5")),
            // 2.5 is no int4.
            cast(col("id"), DataType::Float64).lt(lit(2.5f64)),
            // A bigint constant out of int4's range.
            cast(col("id"), DataType::Int64).lt(lit(1i64 << 40)),
            // Not a constant, or not a conjunction.
            col("id").eq(col("id")),
            col("id").eq(lit(1i32)).or(col("id").eq(lit(2i32))),
            Expr::Column(Column::from_name("nosuch")).eq(lit(1i32)),
            col("id").eq(lit(ScalarValue::Int32(None))),
            // A cast that can fail ('abc'::int, 70000::int2) is an error
            // PostgreSQL reports; a test would drop the row instead.
            Expr::IsNull(Box::new(cast(col("name"), DataType::Int32))),
            Expr::IsNotNull(Box::new(cast(col("id"), DataType::Int16))),
        ];
        assert_eq!(field_tests(&def, &filters), vec![]);
    }
}
